//! The state search against the real pytest: the fixture suite `fixtures/suite/state` has one
//! polluter per kind of state, each with a victim that trips over it; each search must name
//! exactly that state, and a test that no other test affects must be named none. Skipped (with
//! the reason printed) when pytest is missing, except in CI.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::state::{write_plugin, StateFinding, StateRequest, StateVictim, PLUGIN_MODULE};

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
/// temporary directory of its own as TMPDIR.
fn search(suite: &str, victim: &str, polluters: &[&str], brittle: bool) -> StateFinding {
    search_in(&fixture(suite), victim, polluters, brittle)
}

/// [`search`] in the suite at `project`.
fn search_in(project: &Path, victim: &str, polluters: &[&str], brittle: bool) -> StateFinding {
    let victims =
        [StateVictim { victim: victim.into(), polluters: polluters.iter().map(|p| p.to_string()).collect(), brittle }];
    search_all(project, &victims, &[]).remove(0)
}

/// The plugin's findings for `victims`, in one run, in the suite at `project` with `env`.
fn search_all(project: &Path, victims: &[StateVictim], env: &[(&str, &str)]) -> Vec<StateFinding> {
    let dir = tempfile::tempdir().unwrap();
    write_plugin(dir.path()).unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let out = dir.path().join("answer.json");
    let request = StateRequest { victims: victims.to_vec(), runs: 2, max_trials: 64, out: out.clone() };
    let request_file = dir.path().join("request.json");
    std::fs::write(&request_file, serde_json::to_vec(&request).unwrap()).unwrap();
    let mut argv: Vec<String> =
        ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-p", PLUGIN_MODULE, "--flakehunt-state"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    argv.push(request_file.display().to_string());
    argv.extend(victims[0].polluters.iter().cloned());
    argv.extend(victims.iter().map(|v| v.victim.clone()));
    let run = Command::new("python3")
        .args(&argv)
        .env("PYTHONPATH", dir.path())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("TMPDIR", &tmp)
        .envs(env.iter().copied())
        .current_dir(project)
        .output()
        .unwrap();
    let answer = std::fs::read_to_string(&out).ok();
    assert!(answer.is_some(), "no answer: {}", String::from_utf8_lossy(&run.stdout));
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
    .map(|v| StateVictim { victim: v.to_string(), polluters: vec![polluter.clone()], brittle: false })
    .collect();
    let found = search_all(&fixture("pytest-shared"), &victims, &[("MARKUP_WORK", "0")]);
    for (f, v) in found.iter().zip(&victims) {
        assert_eq!(f.test, v.victim);
        let named: Vec<&str> = f.state.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(named, ["markup.STRICT"], "{}", f.sentence());
        assert_eq!(f.confirmed, Some([2, 2]));
    }
    // The first: the state before (fails), all of it put back, the search, two confirmations.
    // The others: the state before, the one found for the first, two confirmations.
    let trials: Vec<u32> = found.iter().map(|f| f.trials).collect();
    assert!(trials[0] > trials[1] && trials[1..] == [4, 4], "{trials:?}");
}

/// Asserts that the search for `victim` after `tests/test_polluters.py::polluter` names
/// exactly one piece of state, at `path`, of `kind`, confirmed twice.
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
    f
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
        false,
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
        let f = search("state", "tests/test_victims.py::test_file_victim", &[polluter], false);
        assert_eq!(f.state.len(), 1, "{f:?}");
        assert_eq!(f.state[0].kind, "file in the temporary directory");
        assert!(f.state[0].path.ends_with("/tmp/flakehunt-state-fixture.lock"), "{f:?}");
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
fn a_test_no_other_affects_is_named_no_state() {
    if pytest_available() {
        let polluter = "tests/test_polluters.py::test_changes_nothing";
        let f = search("state", "tests/test_victims.py::test_clean_victim", &[polluter], false);
        assert!(f.state.is_empty(), "{f:?}");
        assert_eq!(f.verdict.as_deref(), Some("passes after its polluters in a fork: nothing to explain"));
    }
}

#[test]
fn a_brittle_tests_state_setter_is_named() {
    if pytest_available() {
        // fixtures/suite/pytest: test_brittle fails unless test_state_setter set the encoding.
        let f = search("pytest", "tests/test_beta.py::test_brittle", &["tests/test_alpha.py::test_state_setter"], true);
        let named: Vec<&str> = f.state.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(named, ["registry.SETTINGS"], "{}", f.sentence());
        assert!(f.sentence().contains("because that test sets registry.SETTINGS = "), "{}", f.sentence());
    }
}
