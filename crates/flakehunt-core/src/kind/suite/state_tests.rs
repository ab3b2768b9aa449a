//! The state search against the real pytest and Go: the fixture suite `fixtures/suite/state` has one
//! polluter per kind of state, each with a victim that trips over it; each search must name
//! exactly that state, and a test that no other test affects must be named none. Skipped (with
//! the reason printed) when pytest is missing, except in CI.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::state::{write_plugin, Against, StateFinding, StateRequest, StateVictim, CLEANUP_MODULE, PLUGIN_MODULE};
use super::TestId;

use crate::kind::suite::state::StateFindings;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/suite").join(name)
}

fn pytest_available() -> bool {
    let ok = Command::new("python3").args(["-m", "pytest", "--version"]).output().is_ok_and(|o| o.status.success());
    if !ok {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "python3 with pytest is missing in CI");
        eprintln!("skipped: python3 with pytest is not available (python3 -m pip install pytest)");
    }
    ok
}

/// The plugin's finding for `victim` after `polluters` in the fixture suite `suite`, with a
/// temporary directory of its own as TMPDIR, its cleanup checked.
fn search(suite: &str, victim: &str, polluters: &[&str], brittle: bool) -> StateFinding {
    let against = if brittle { Against::StateSetters } else { Against::Polluters };
    search_in(&fixture(suite), victim, polluters, against)
}

/// The plugin's run in `project` for `request`, with `plugins` loaded and `env` set; its answer.
fn ask(project: &Path, dir: &Path, request: &StateRequest, plugins: &[&str], env: &[(&str, &str)]) -> Option<String> {
    let request_file = dir.join("request.json");
    std::fs::write(&request_file, serde_json::to_vec(request).unwrap()).unwrap();
    let _ = std::fs::remove_file(&request.out);
    let mut argv: Vec<String> =
        ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"].iter().map(|s| s.to_string()).collect();
    for plugin in plugins {
        argv.extend(["-p".into(), plugin.to_string()]);
    }
    argv.extend(["--flakehunt-state".into(), request_file.display().to_string()]);
    argv.extend(request.order());
    let run = Command::new("python3")
        .args(&argv)
        .env("PYTHONPATH", dir)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("TMPDIR", dir.join("tmp"))
        .envs(env.iter().copied())
        .current_dir(project)
        .output()
        .unwrap();
    let answer = std::fs::read_to_string(&request.out).ok();
    assert!(answer.is_some(), "no answer: {}", String::from_utf8_lossy(&run.stdout));
    answer
}

/// [`search`] in the suite at `project`, then the check of its cleanup (as many runs as a
/// reproducer that failed twice in two checks needs), as `state_search` runs them.
fn search_in(project: &Path, victim: &str, polluters: &[&str], against: Against) -> StateFinding {
    let dir = tempfile::tempdir().unwrap();
    write_plugin(dir.path()).unwrap();
    std::fs::create_dir(dir.path().join("tmp")).unwrap();
    let ids = |s: &[&str]| s.iter().map(|p| p.to_string()).collect::<Vec<_>>();
    let victims = [StateVictim::new(victim.into(), ids(polluters), against)];
    let mut request = StateRequest::search(victims.to_vec(), dir.path().join("answer.json"));
    let whole = ask(project, dir.path(), &request, &[PLUGIN_MODULE], &[]);
    let answer = StateFinding::answers(&victims, whole.as_deref()).remove(0);
    let mut f = StateFinding::from_answer(victim.into(), ids(polluters), against, answer.as_deref(), "no answer");
    let Some(code) = answer.as_deref().and_then(StateFinding::written_code) else { return f };
    let needed = StateFinding::runs_needed(2, 2).unwrap();
    request.check = StateFinding::check_request(answer.as_deref().unwrap(), needed);
    std::fs::write(dir.path().join(format!("{CLEANUP_MODULE}.py")), code).unwrap();
    let checked = ask(project, dir.path(), &request, &[PLUGIN_MODULE, CLEANUP_MODULE], &[]);
    f.checked([2, 2], needed, checked.as_deref(), "no answer");
    f
}

/// The plugin's findings for `victims`, in one run (no cleanup checked), in the suite at
/// `project` with `env`.
fn search_all(project: &Path, victims: &[StateVictim], env: &[(&str, &str)]) -> Vec<StateFinding> {
    let dir = tempfile::tempdir().unwrap();
    write_plugin(dir.path()).unwrap();
    std::fs::create_dir(dir.path().join("tmp")).unwrap();
    let request = StateRequest::search(victims.to_vec(), dir.path().join("answer.json"));
    let answer = ask(project, dir.path(), &request, &[PLUGIN_MODULE], env);
    StateFinding::from_answers(victims, answer.as_deref(), "no answer")
}

#[test]
fn victims_of_one_polluter_share_its_survey_and_try_the_state_found_first() {
    if !pytest_available() {
        return;
    }
    let polluter = "tests/test_a_config.py::test_strict_mode_refuses_blank_space".to_owned();
    let victims: Vec<StateVictim> = [
        "tests/test_b_parse.py::test_parse_blank_space",
        "tests/test_c_render.py::TestRender::test_render_keeps_order",
        "tests/test_d_params.py::test_blank_around_a_pair[k=v ]",
    ]
    .iter()
    .map(|v| StateVictim::new(v.to_string(), vec![polluter.clone()], Against::Polluters))
    .collect();
    let found = search_all(&fixture("pytest-shared"), &victims, &[("MARKUP_WORK", "0")]);
    for (f, v) in found.iter().zip(&victims) {
        assert_eq!(f.test, v.victim);
        let named: Vec<&str> = f.state.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(named, ["markup.STRICT"], "{}", f.sentence());
        assert_eq!(f.confirmed, Some([2, 2]));
        assert!(f.cleanup.is_some(), "each gets its cleanup written: {f:?}");
    }
    // The first: the state before (fails), all of it put back, the search, two confirmations.
    // The others: the state before, the one found for the first, two confirmations.
    let trials: Vec<u32> = found.iter().map(|f| f.trials).collect();
    assert!(trials[0] > trials[1] && trials[1..] == [4, 4], "{trials:?}");
}

/// Asserts that the search for `victim` after `tests/test_polluters.py::polluter` names
/// exactly one piece of state, at `path`, of `kind`, confirmed twice, and that its cleanup is
/// proved and, applied as printed, makes the victim pass after the polluter.
fn names(polluter: &str, victim: &str, path: &str, kind: &str) -> StateFinding {
    let polluter = format!("tests/test_polluters.py::{polluter}");
    let victim = format!("tests/test_victims.py::{victim}");
    let f = search("state", &victim, &[&polluter], false);
    let named: Vec<(&str, &str)> = f.state.iter().map(|d| (d.path.as_str(), d.kind.as_str())).collect();
    assert_eq!(named, [(path, kind)], "{}", f.sentence());
    assert_eq!(f.confirmed, Some([2, 2]), "{f:?}");
    let cost = f.cost.as_ref().expect("a fingerprint's cost");
    assert!(cost.entries > 1000 && cost.seconds.iter().all(|s| *s > 0.0), "{cost:?}");
    eprintln!("{}: {} differences, {} trials, fingerprint {:?}", f.sentence(), f.different, f.trials, cost);
    applied_makes_it_pass("state", &f, &[&polluter, &victim], &victim);
    f
}

/// Asserts that `f`'s cleanup is proved, and that, put into a copy of the fixture suite `suite`
/// as its sentence says (the code into the conftest.py it names, the decorator on each test it
/// names), pytest running `order` passes `victim`, which fails there without it.
fn applied_makes_it_pass(suite: &str, f: &StateFinding, order: &[&str], victim: &str) {
    let c = f.cleanup.as_ref().expect("a cleanup");
    assert!(c.proved, "{:?}: {c:?}", f.cleanup_sentence());
    assert_eq!((c.checked, c.needed), (Some([11, 11]), 11), "{c:?}");
    let code = f.cleanup_code().expect("a proved cleanup's code");
    let dir = tempfile::tempdir().unwrap();
    let copied = Command::new("cp").arg("-r").arg(fixture(suite)).arg(dir.path()).status().unwrap();
    assert!(copied.success());
    let project = dir.path().join(suite);
    let pytest = |project: &Path| {
        let out = Command::new("python3")
            .args(["-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-rA"])
            .args(order)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("TMPDIR", dir.path())
            .current_dir(project)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(pytest(&project).contains(&format!("FAILED {victim}")), "the victim fails without the cleanup");
    apply(&project, c, code);
    let out = pytest(&project);
    assert!(out.contains(&format!("PASSED {victim}")) && !out.contains("FAILED"), "{code}\n{out}");
}

/// Applies a cleanup as a user would: its code appended to the `conftest.py` it names, and
/// `@pytest.mark.usefixtures(...)` put on each test it names.
fn apply(project: &Path, c: &super::state::Cleanup, code: &str) {
    let conftest = project.join(&c.conftest);
    let mut text = std::fs::read_to_string(&conftest).unwrap_or_default();
    text.push('\n');
    text.push_str(code);
    std::fs::write(&conftest, text).unwrap();
    for test in &c.apply_to {
        let mut parts = test.split("::");
        let file = project.join(parts.next().unwrap());
        let names: Vec<&str> = parts.map(|p| p.split('[').next().unwrap()).collect();
        let source = std::fs::read_to_string(&file).unwrap();
        let mut lines: Vec<String> = source.lines().map(str::to_owned).collect();
        // The test's `def` after the `class` lines of its classes.
        let mut at = 0;
        for (i, name) in names.iter().enumerate() {
            let keyword = if i + 1 == names.len() { "def " } else { "class " };
            at += lines[at..].iter().position(|l| l.trim_start().starts_with(&format!("{keyword}{name}"))).unwrap();
        }
        let indent: String = lines[at].chars().take_while(|c| c.is_whitespace()).collect();
        lines.insert(at, format!("{indent}@pytest.mark.usefixtures({:?})", c.fixture));
        lines.insert(0, "import pytest".into());
        std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    }
}

// The fingerprint read every file under the working directory through `open`, and kept each
// small one's bytes to put it back: a FIFO there blocked the search forever, a link to
// /dev/zero read without end, and a file the test replaced by a link was put back by writing
// through that link, outside the project.
#[test]
fn special_files_and_links_in_the_project_are_neither_read_through_nor_written_through() {
    if !pytest_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("state");
    let copied = Command::new("cp").arg("-r").arg(fixture("state")).arg(dir.path()).status().unwrap();
    assert!(copied.success());
    let outside = dir.path().join("outside.txt");
    std::fs::write(&outside, "outside\n").unwrap();
    assert!(Command::new("mkfifo").arg(project.join("fifo")).status().unwrap().success());
    std::os::unix::fs::symlink("/dev/zero", project.join("zero")).unwrap();
    std::os::unix::fs::symlink("fifo", project.join("to-fifo")).unwrap();
    std::os::unix::fs::symlink(&outside, project.join("to-outside")).unwrap();
    std::os::unix::fs::symlink("/no/such/file", project.join("dangling")).unwrap();
    let f = search_in(
        &project,
        "tests/test_victims.py::test_counter_victim",
        &["tests/test_polluters.py::test_counts"],
        Against::Polluters,
    );
    let named: Vec<&str> = f.state.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(named, ["statekit.COUNTER"], "{}", f.sentence());
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "outside\n");
    assert_eq!(std::fs::read_link(project.join("to-outside")).unwrap(), outside);
}

#[test]
fn a_module_counter_is_named() {
    if pytest_available() {
        let f = names("test_counts", "test_counter_victim", "statekit.COUNTER", "module global");
        assert_eq!((f.state[0].before.as_deref(), f.state[0].after.as_deref()), (Some("0"), Some("1")));
    }
}

#[test]
fn a_class_attribute_is_named_in_the_users_words() {
    if pytest_available() {
        let f = names("test_patches_class", "test_class_victim", "statekit.Parser.case_insensitive", "class attribute");
        assert_eq!(
            f.sentence(),
            "tests/test_victims.py::test_class_victim fails after tests/test_polluters.py::test_patches_class \
             because that test leaves statekit.Parser.case_insensitive = True (was False); restoring it makes \
             test_class_victim pass (2/2)"
        );
    }
}

#[test]
fn an_environment_variable_is_named() {
    if pytest_available() {
        let f = names("test_sets_env", "test_env_victim", "os.environ['STATEKIT_MODE']", "environment variable");
        assert_eq!((f.state[0].before.as_deref(), f.state[0].after.as_deref()), (None, Some("'fast'")));
    }
}

#[test]
fn the_random_state_is_named() {
    if pytest_available() {
        names("test_seeds", "test_random_victim", "random.getstate()", "random state");
    }
}

#[test]
fn a_mock_left_installed_is_named() {
    if pytest_available() {
        names("test_mocks", "test_mock_victim", "statekit.engine.send", "object attribute");
    }
}

#[test]
fn a_module_removed_from_sys_modules_is_named() {
    if pytest_available() {
        let f = names("test_removes_module", "test_module_victim", "sys.modules['singleton']", "sys.modules");
        assert_eq!(f.state[0].after, None);
    }
}

#[test]
fn the_working_directory_is_named() {
    if pytest_available() {
        let f = names("test_changes_directory", "test_directory_victim", "os.getcwd()", "working directory");
        assert!(f.state[0].after.as_deref().is_some_and(|a| a.ends_with("tests'")), "{f:?}");
    }
}

#[test]
fn a_file_in_the_temporary_directory_is_named() {
    if pytest_available() {
        let polluter = "tests/test_polluters.py::test_leaves_file";
        let victim = "tests/test_victims.py::test_file_victim";
        let f = search("state", victim, &[polluter], false);
        assert_eq!(f.state.len(), 1, "{f:?}");
        assert_eq!(f.state[0].kind, "file in the temporary directory");
        assert_eq!(f.state[0].path, "file $TMPDIR/flakehunt-state-fixture.lock", "{f:?}");
        // The cleanup names the file where the user's run puts it, not where the search's did.
        let code = f.cleanup_code().unwrap_or_default();
        assert!(code.contains("os.path.join(tempfile.gettempdir(), \"flakehunt-state-fixture.lock\")"), "{code}");
        applied_makes_it_pass("state", &f, &[polluter, victim], victim);
    }
}

#[test]
fn a_setting_changed_deep_in_a_dict_is_named_by_its_entry_and_put_back_in_place() {
    if pytest_available() {
        // The dict is reached through a wrapper too, whose __setattr__ refuses: it is named by
        // the module global that holds it, and put back without being set again.
        let f = names(
            "test_narrows_display",
            "test_display_victim",
            "statekit.CONFIG['display']['max_rows']",
            "module global",
        );
        assert_eq!((f.state[0].before.as_deref(), f.state[0].after.as_deref()), (Some("60"), Some("3")));
        let code = f.cleanup_code().unwrap();
        assert!(code.contains("saved_config = copy.deepcopy(statekit.CONFIG)"), "{code}");
    }
}

#[test]
fn of_several_changes_only_the_one_that_matters_is_named() {
    if pytest_available() {
        let f = names("test_changes_much", "test_class_victim", "statekit.Parser.case_insensitive", "class attribute");
        // The list, the variable and the logger's level differ too, and are left out.
        assert!(f.different >= 4, "{f:?}");
    }
}

#[test]
fn a_test_no_other_affects_is_named_no_state_and_no_cleanup() {
    if pytest_available() {
        let polluter = "tests/test_polluters.py::test_changes_nothing";
        let f = search("state", "tests/test_victims.py::test_clean_victim", &[polluter], false);
        assert!(f.state.is_empty(), "{f:?}");
        assert_eq!(f.verdict.as_deref(), Some("passes after its polluters in a fork: nothing to explain"));
        assert_eq!((&f.cleanup, f.cleanup_sentence()), (&None, None));
    }
}

#[test]
fn a_brittle_tests_state_setter_is_named_and_its_cleanup_sets_the_state() {
    if pytest_available() {
        // fixtures/suite/pytest: test_brittle fails unless test_state_setter set the encoding.
        let brittle = "tests/test_beta.py::test_brittle";
        let f = search("pytest", brittle, &["tests/test_alpha.py::test_state_setter"], true);
        let named: Vec<&str> = f.state.iter().map(|d| d.path.as_str()).collect();
        // The dict's one changed entry is named, not the whole dict.
        assert_eq!(named, ["registry.SETTINGS['encoding']"], "{}", f.sentence());
        assert!(
            f.sentence().contains("because that test sets registry.SETTINGS['encoding'] = 'utf-8' (was not there)"),
            "{}",
            f.sentence()
        );
        // The dict is changed in place (the test modules import it by name): so is the fixture's.
        let code = f.cleanup_code().unwrap_or_default();
        assert!(code.contains("registry.SETTINGS.update({'encoding': 'utf-8'})"), "{code}");
        assert_eq!(f.cleanup.as_ref().unwrap().apply_to, [brittle]);
        applied_makes_it_pass("pytest", &f, &[brittle], brittle);
    }
}

#[test]
fn a_brittle_tests_cleanup_sets_the_seed_or_the_variable_its_state_setter_left() {
    if pytest_available() {
        for (setter, brittle, path, set) in [
            ("test_seeds", "test_needs_seed", "random.getstate()", "random.seed(0)"),
            (
                "test_sets_env",
                "test_needs_mode",
                "os.environ['STATEKIT_MODE']",
                "os.environ[\"STATEKIT_MODE\"] = \"fast\"",
            ),
        ] {
            let setter = format!("tests/test_polluters.py::{setter}");
            let brittle = format!("tests/test_victims.py::{brittle}");
            let f = search("state", &brittle, &[&setter], true);
            assert_eq!(f.state.iter().map(|d| d.path.as_str()).collect::<Vec<_>>(), [path], "{}", f.sentence());
            let code = f.cleanup_code().unwrap_or_default();
            assert!(code.contains(set), "{code}");
            applied_makes_it_pass("state", &f, &[&brittle], &brittle);
        }
    }
}

#[test]
fn a_non_idempotent_tests_own_state_is_named_and_cleaned_up() {
    if pytest_available() {
        // fixtures/suite/pytest: test_non_idempotent appends to a module list every run.
        let test = "tests/test_gamma.py::test_non_idempotent";
        let f = search_in(&fixture("pytest"), test, &[], Against::FirstRun);
        let named: Vec<&str> = f.state.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(named, ["test_gamma._RUNS"], "{}", f.sentence());
        assert_eq!(f.polluters, [test]);
        assert_eq!(
            f.sentence(),
            "tests/test_gamma.py::test_non_idempotent fails when it runs again in the process because its first run \
             leaves test_gamma._RUNS = [1] (was []); restoring it makes its second run pass (2/2)"
        );
        let c = f.cleanup.as_ref().unwrap();
        assert!(c.proved, "{c:?}");
        assert!(f.cleanup_sentence().unwrap().contains("run twice in one process passed 11 of 11 runs"), "{c:?}");
        assert!(c.code.contains("test_gamma._RUNS[:] = saved_runs"), "{}", c.code);
    }
}

#[test]
fn a_non_idempotent_test_of_each_kind_of_item_gets_a_cleanup_or_says_why_not() {
    if !pytest_available() {
        return;
    }
    let project = fixture("pytest-items");
    for test in [
        "tests/test_kinds.py::TestCaseKind::test_method",
        "tests/test_kinds.py::TestPlainKind::test_method",
        "tests/test_kinds.py::test_param[x-1.5/y]",
    ] {
        let f = search_in(&project, test, &[], Against::FirstRun);
        assert_eq!(f.state.len(), 1, "{test}: {f:?}");
        assert!(f.state[0].path.starts_with("counts.CALLS["), "{test}: {f:?}");
        assert!(f.cleanup.as_ref().is_some_and(|c| c.proved), "{test}: {:?}", f.cleanup_sentence());
    }
    // A doctest takes no fixture: its state is named, its cleanup honestly not proved.
    let f = search_in(&project, "tests/counts.py::counts.once", &[], Against::FirstRun);
    assert_eq!(f.state.len(), 1, "{f:?}");
    assert_eq!(
        f.cleanup_sentence().as_deref(),
        Some(
            "no cleanup proved (restore_counts_CALLS): pytest gives tests/counts.py::counts.once no fixture, so the \
             cleanup cannot be applied to it"
        )
    );
    assert_eq!(f.cleanup_code(), None);
}

#[test]
fn a_state_no_fixture_on_the_polluter_can_put_back_gets_no_cleanup_proved() {
    if pytest_available() {
        // The polluter's module-scoped fixture leaves the flag in its teardown, after any
        // fixture of the polluter's own: restoring it before the victim (the search) works,
        // a fixture on the polluter cannot.
        let f = names_only("test_uses_module_fixture", "test_teardown_victim");
        assert_eq!(f.state.iter().map(|d| d.path.as_str()).collect::<Vec<_>>(), ["statekit.TORN_DOWN"]);
        let c = f.cleanup.as_ref().unwrap();
        assert!(!c.proved && c.checked == Some([0, 1]), "{c:?}");
        assert_eq!(
            f.cleanup_sentence().as_deref(),
            Some(
                "no cleanup proved (restore_statekit_TORN_DOWN): with it in place, \
                 tests/test_victims.py::test_teardown_victim still failed (run 1 of 11)"
            )
        );
        assert_eq!(f.cleanup_code(), None, "an unproved cleanup is not printed");
    }
}

/// The search for `victim` after `polluter` of the state fixture suite, asserting nothing.
fn names_only(polluter: &str, victim: &str) -> StateFinding {
    let polluter = format!("tests/test_polluters.py::{polluter}");
    search("state", &format!("tests/test_victims.py::{victim}"), &[&polluter], false)
}

// --- Go: the process-level state only --------------------------------------------------------

fn go_available() -> bool {
    let ok = Command::new("go").arg("version").output().is_ok_and(|o| o.status.success());
    if !ok {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "go is missing in CI");
        eprintln!("skipped: go is not available (apt-get install golang-go)");
    }
    ok
}

/// The Go state search of `test` after `polluters` in a copy of `fixtures/suite/go-state`, its
/// runs made as the suite makes them (in the package's directory); the finding and the copy.
fn go_search(test: &str, polluters: &[&str], against: Against) -> (StateFinding, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let copied = Command::new("cp").arg("-r").arg(fixture("go-state")).arg(dir.path()).status().unwrap();
    assert!(copied.success());
    let package = dir.path().join("go-state");
    let scratch = dir.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let mut run = |argv: Vec<String>, env: &[(String, String)]| {
        let out = Command::new(&argv[0]).args(&argv[1..]).envs(env.iter().cloned()).current_dir(&package).output()?;
        Ok(Some(super::go_state::Ran { stdout: out.stdout, how: format!("ended: {}", out.status) }))
    };
    let ids: Vec<TestId> = polluters.iter().map(|p| p.to_string()).collect();
    let mut built = super::go_state::Built::default();
    let f = built.search(&package, &scratch, &mut run, &test.to_owned(), &ids, against).unwrap().unwrap();
    (f, dir)
}

/// The (path, kind, before, after) of each piece of a finding's state.
fn pieces(f: &StateFinding) -> Vec<(&str, &str, Option<&str>, Option<&str>)> {
    f.state.iter().map(|d| (d.path.as_str(), d.kind.as_str(), d.before.as_deref(), d.after.as_deref())).collect()
}

#[test]
fn go_process_state_is_named_kind_by_kind_and_in_memory_state_is_said_to_be_unexamined() {
    if !go_available() {
        return;
    }
    let (f, _dir) = go_search("TestEnvVictim", &["TestSetsEnv"], Against::Polluters);
    assert_eq!(pieces(&f), [("os.Getenv(\"GOSTATE_MODE\")", "environment variable", None, Some("\"fast\""))], "{f:?}");
    assert_eq!(f.examined.as_deref(), Some("process"));
    assert_eq!(
        f.sentence(),
        "TestEnvVictim fails after TestSetsEnv, which leaves os.Getenv(\"GOSTATE_MODE\") = \"fast\" (was not there) in \
         the process; whether that is what it trips over is not checked (for Go tests only the process-level state is \
         compared, and none is put back), and in-memory state (package variables) is not examined for Go tests"
    );
    assert_eq!(f.cleanup_sentence(), None, "no cleanup is offered for Go");

    let (f, _dir) = go_search("TestDirVictim", &["TestChangesDir"], Against::Polluters);
    assert_eq!(f.state.len(), 1, "{f:?}");
    assert_eq!((f.state[0].path.as_str(), f.state[0].kind.as_str()), ("os.Getwd()", "working directory"));
    assert!(f.state[0].after.as_deref().unwrap().ends_with("go-state/testdata\""), "{f:?}");

    let (f, _dir) = go_search("TestTempFileVictim", &["TestLeavesTempFile"], Against::Polluters);
    assert_eq!(
        pieces(&f),
        [("file $TMPDIR/gostate.lock", "file in the temporary directory", None, Some("4 bytes"))],
        "{f:?}"
    );

    // A file in the package's directory is named, and put back as it was.
    let (f, dir) = go_search("TestPackageFileVictim", &["TestLeavesPackageFile"], Against::Polluters);
    assert_eq!(
        pieces(&f),
        [("file testdata/state.lock", "file in the package's directory", None, Some("4 bytes"))],
        "{f:?}"
    );
    assert!(!dir.path().join("go-state/testdata/state.lock").exists(), "the search leaves the package as it was");

    // A non-idempotent test against its own first run.
    let (f, _dir) = go_search("TestCountsInEnv", &[], Against::FirstRun);
    assert_eq!(pieces(&f), [("os.Getenv(\"GOSTATE_RUNS\")", "environment variable", None, Some("\"x\""))], "{f:?}");
    assert!(
        f.sentence().starts_with(
            "TestCountsInEnv fails when it runs again in the process; its first run leaves os.Getenv(\"GOSTATE_RUNS\") = \"x\""
        ),
        "{f:?}"
    );
}

#[test]
fn go_in_memory_and_restored_state_is_no_process_state() {
    if !go_available() {
        return;
    }
    // A package variable is in memory: nothing of the process differs, and the finding says what
    // was not looked at. t.Setenv puts its variable back: nothing differs either.
    for polluter in ["TestRegistersHandler", "TestSetsEnvProperly"] {
        let (f, _dir) = go_search("TestHandlerVictim", &[polluter], Against::Polluters);
        assert!(f.state.is_empty() && f.verdict.is_none(), "{f:?}");
        assert_eq!(
            f.sentence(),
            "TestHandlerVictim: no process-level state (environment, working directory, files in TMPDIR and the \
             package's directory) differs after TestRegistersHandler; in-memory state (package variables) is not \
             examined for Go tests"
                .replace("TestRegistersHandler", polluter)
        );
    }
}
