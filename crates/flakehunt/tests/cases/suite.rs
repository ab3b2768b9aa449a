//! `flakehunt suite` end to end on the fixture suites of `fixtures/suite/` (pytest and Go): each
//! failing test's category, its polluter or state-setter, and a reproducer that fails when run;
//! the record's per-attempt orders and results; `report`, `--resume` and `merge` reaching the
//! same conclusions from the record; and the usage errors.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::harness::{attempts_in, fixture, flakehunt, go_env, read_json};

const POLLUTER: &str = "tests/test_alpha.py::test_polluter";
const SETTER: &str = "tests/test_alpha.py::test_state_setter";
const VICTIM: &str = "tests/test_beta.py::test_victim";
const BRITTLE: &str = "tests/test_beta.py::test_brittle";
const NON_IDEMPOTENT: &str = "tests/test_gamma.py::test_non_idempotent";
const EVERY_THIRD: &str = "tests/test_gamma.py::test_every_third";

/// A copy of a fixture suite in a fresh directory (caches and bytecode stay out of the tree).
fn copy_suite(name: &str, into: &Path) -> PathBuf {
    let to = into.join(name);
    let status = std::process::Command::new("cp").arg("-r").arg(fixture(&format!("suite/{name}"))).arg(&to).status();
    assert!(status.unwrap().success());
    to
}

/// Runs `flakehunt suite ARGS` in `project` with `env`; its exit code, JSON summary and stderr.
pub(super) fn suite(project: &Path, args: &[&str], env: &[(&str, PathBuf)]) -> (i32, Value, String) {
    let out = flakehunt()
        .arg("suite")
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(project)
        .output();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let summary = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("no JSON summary ({e}): {stderr}"));
    (out.status.code().unwrap(), summary, stderr)
}

fn by_id(summary: &Value) -> BTreeMap<String, Value> {
    summary["tests"].as_array().unwrap().iter().map(|t| (t["id"].as_str().unwrap().to_owned(), t.clone())).collect()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_owned()).collect()
}

/// Runs a printed reproducer (no shell, as printed) in `dir`; its exit code and stdout.
fn run_reproducer(argv: &[String], dir: &Path, env: &[(&str, PathBuf)]) -> (i32, String) {
    let out = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("FLAKEHUNT_ITERATION")
        .current_dir(dir)
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn pytest_suite_names_each_category_its_culprit_and_a_reproducer_that_fails() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_suite("pytest", dir.path());
    let record = dir.path().join("rec");
    let args = ["--pytest", "--runs", "6", "--seed", "1", "--json", "--quiet", "--record", record.to_str().unwrap()];
    let (code, summary, stderr) = suite(&project, &args, &[]);
    assert_eq!(code, 1, "a flaky test was found: {stderr}");
    assert_eq!(summary["kind"], "suite");
    assert_eq!(summary["framework"], "pytest");
    assert_eq!(summary["collected"], 13);
    let tests = by_id(&summary);
    assert_eq!(tests.len(), 4, "the clean tests, the polluter and the state-setter never failed: {:?}", tests.keys());
    let victim = &tests[VICTIM];
    assert_eq!(victim["category"], "order-dependent-victim");
    assert_eq!(strings(&victim["polluters"]), [POLLUTER]);
    assert_eq!(victim["bisection"]["status"], "confirmed");
    let brittle = &tests[BRITTLE];
    assert_eq!(brittle["category"], "order-dependent-brittle");
    assert_eq!(strings(&brittle["state_setters"]), [SETTER]);
    assert_eq!(tests[NON_IDEMPOTENT]["category"], "non-idempotent");
    assert_eq!(tests[EVERY_THIRD]["category"], "flaky");
    assert!(tests[EVERY_THIRD]["reproducer"].as_array().unwrap().is_empty(), "no reliable reproducer");
    for t in tests.values() {
        for field in ["id", "attempts", "failures", "category", "polluters", "state_setters", "reproducer"] {
            assert!(t.get(field).is_some(), "{field} missing from {t}");
        }
        assert_eq!(t["attempts"], 6);
    }

    // Each printed reproducer names the interpreter and fails when run, naming its test.
    let victim_repro = strings(&victim["reproducer"]);
    assert_eq!(victim_repro[0], "python3");
    assert_eq!(victim_repro[victim_repro.len() - 2..], [POLLUTER, VICTIM]);
    for id in [VICTIM, BRITTLE, NON_IDEMPOTENT] {
        let argv = strings(&tests[id]["reproducer"]);
        let (code, out) = run_reproducer(&argv, &project, &[]);
        assert_eq!(code, 1, "{id}: {argv:?}: {out}");
        assert!(out.lines().any(|l| l.starts_with(&format!("FAILED {id}"))), "{id}: {out}");
    }
    // And the victim passes without its polluter.
    let alone: Vec<String> = victim_repro.iter().filter(|a| *a != POLLUTER).cloned().collect();
    assert_eq!(run_reproducer(&alone, &project, &[]).0, 0);

    // The record: each attempt's order and per-test results; the confirmation runs as phases.
    let attempts = attempts_in(&record);
    let shuffled: Vec<&Value> = attempts.iter().filter(|a| a["suite"]["role"] == "shuffled").collect();
    assert_eq!(shuffled.len(), 6);
    let orders: Vec<Vec<String>> = shuffled.iter().map(|a| strings(&a["suite"]["order"])).collect();
    assert!(orders.iter().all(|o| o.len() == 13) && orders[0] != orders[1], "seeded orders of the whole selection");
    for a in &shuffled {
        let ran: Vec<&str> =
            a["suite"]["tests"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
        let order = strings(&a["suite"]["order"]);
        assert_eq!(ran, order.iter().map(String::as_str).collect::<Vec<_>>(), "tests ran in the recorded order");
        assert!(a.get("phase").is_none());
    }
    let phases: Vec<&str> = attempts.iter().filter_map(|a| a["phase"].as_str()).collect();
    for phase in ["repeat-all", "alone", "bisect", "reproducer"] {
        assert!(phases.contains(&phase), "no {phase} run recorded: {phases:?}");
    }
    // The non-idempotent test is confirmed by its reproducer's checks (the test twice, as
    // printed), not by runs of flakehunt's own besides them.
    assert!(!phases.contains(&"repeat"), "{phases:?}");
    assert_eq!(tests[NON_IDEMPOTENT]["repeated"], serde_json::json!([2, 2]));
    assert!(!record.join("scratch").read_dir().unwrap().any(|_| true), "scratch directories are removed");

    // Every report reads the same conclusions back from the record.
    let report = |format: &str| {
        let out = flakehunt().args(["report", "-f", format]).arg(&record).output();
        assert!(out.status.success(), "{format}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let again: Value = serde_json::from_str(&report("json")).unwrap();
    assert_eq!(again["tests"], summary["tests"], "report recomputes the classification from the record");
    let term = report("term");
    let row = term.lines().find(|l| l.contains(VICTIM)).unwrap();
    for part in ["order-dependent-victim", &format!("after {POLLUTER}"), POLLUTER] {
        assert!(row.contains(part), "{part}: {row}");
    }
    let junit = report("junit");
    assert!(junit.contains(&format!("<testcase name=\"{VICTIM}\"")), "{junit}");
    assert!(junit.contains("<property name=\"category\" value=\"order-dependent-victim\"/>"));
    assert!(junit.contains(&format!("<property name=\"polluter\" value=\"{POLLUTER}\"/>")));
    let victim_case = &junit[junit.find(&format!("<testcase name=\"{VICTIM}\"")).unwrap()..];
    let victim_case = &victim_case[..victim_case.find("</testcase>").unwrap()];
    assert_eq!(victim_case.matches("<flakyFailure").count(), victim["failures"].as_u64().unwrap() as usize);
    let md = report("md");
    assert!(md.contains("| `tests/test_beta.py::test_victim` | order-dependent-victim |"), "{md}");
    assert!(report("html").contains("Tests that failed"));
}

#[test]
fn go_suite_names_each_category_its_culprit_and_a_reproducer_that_fails() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_suite("go", dir.path());
    let record = dir.path().join("rec");
    let env = go_env(dir.path());
    // --go-test last: it takes the values after it.
    let args =
        ["--runs", "6", "--seed", "2", "--json", "--quiet", "--record", record.to_str().unwrap(), "--go-test", "."];
    let (code, summary, stderr) = suite(&project, &args, &env);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(summary["framework"], "go");
    assert_eq!(summary["collected"], 10);
    let tests = by_id(&summary);
    assert_eq!(tests.len(), 4, "{:?}", tests.keys());
    assert_eq!(tests["TestVictim"]["category"], "order-dependent-victim");
    assert_eq!(strings(&tests["TestVictim"]["polluters"]), ["TestPolluter"]);
    assert_eq!(tests["TestBrittle"]["category"], "order-dependent-brittle");
    assert_eq!(strings(&tests["TestBrittle"]["state_setters"]), ["TestStateSetter"]);
    assert_eq!(tests["TestNonIdempotent"]["category"], "non-idempotent");
    assert_eq!(tests["TestEveryThird"]["category"], "flaky");
    let victim = strings(&tests["TestVictim"]["reproducer"]);
    assert!(victim[0].ends_with(".test") && victim.iter().any(|a| a.starts_with("-test.shuffle=")), "{victim:?}");
    assert!(victim.contains(&"-test.run=^(TestPolluter|TestVictim)$".to_owned()), "{victim:?}");
    let repeat = strings(&tests["TestNonIdempotent"]["reproducer"]);
    assert!(repeat.contains(&"-test.count=2".to_owned()), "{repeat:?}");
    // Confirmed by its reproducer's two checks, each read run by run from its test2json events:
    // the first run passed, the second failed.
    assert_eq!(tests["TestNonIdempotent"]["repeated"], serde_json::json!([2, 2]));
    for id in ["TestVictim", "TestBrittle", "TestNonIdempotent"] {
        let argv = strings(&tests[id]["reproducer"]);
        let (code, out) = run_reproducer(&argv, &project, &env);
        assert_eq!(code, 1, "{id}: {argv:?}: {out}");
        assert!(out.contains(&format!("--- FAIL: {id} ")), "{id}: {out}");
    }
    // Go shuffles itself: the order each attempt ran is read back into the record.
    let shuffled: Vec<Value> = attempts_in(&record).into_iter().filter(|a| a["suite"]["role"] == "shuffled").collect();
    assert!(shuffled.iter().all(|a| a["suite"]["shuffle"].is_u64() && strings(&a["suite"]["order"]).len() == 10));
    let manifest = read_json(&record.join("manifest.json"));
    assert_eq!(manifest["extra"]["suite"]["runner"]["framework"], "go");
}

#[test]
fn a_resumed_suite_runs_only_the_confirmation_runs_it_lacks_and_concludes_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_suite("go", dir.path());
    let env = go_env(dir.path());
    let record = dir.path().join("rec");
    let args =
        ["--runs", "6", "--seed", "2", "--json", "--quiet", "--record", record.to_str().unwrap(), "--go-test", "."];
    let (_, whole, stderr) = suite(&project, &args, &env);
    let attempts = std::fs::read_to_string(record.join("attempts.jsonl")).unwrap();
    let lines: Vec<&str> = attempts.lines().collect();
    // Cut inside the classification: the shuffled attempts, the repeat-all pass and a few runs.
    let kept = 10;
    assert!(lines.len() > kept + 5, "{stderr}");
    std::fs::write(record.join("attempts.jsonl"), lines[..kept].join("\n") + "\n").unwrap();
    let (code, resumed, stderr) = suite(&project, &["--json", "--quiet", "--resume", record.to_str().unwrap()], &env);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(resumed["tests"], whole["tests"], "the same classification");
    assert_eq!(attempts_in(&record).len(), lines.len(), "only the missing runs ran again");
}

#[test]
fn shards_of_a_suite_merge_into_one_classification() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_suite("go", dir.path());
    let env = go_env(dir.path());
    let mut shards = Vec::new();
    for i in 1..=2 {
        let record = dir.path().join(format!("shard-{i}"));
        let shard = format!("{i}/2");
        let args = [
            "--runs",
            "6",
            "--seed",
            "2",
            "--shard",
            &shard,
            "--json",
            "--quiet",
            "--record",
            record.to_str().unwrap(),
            "--go-test",
            ".",
        ];
        suite(&project, &args, &env);
        shards.push(record);
    }
    let merged = dir.path().join("merged");
    let out = flakehunt().arg("merge").args(&shards).arg("--into").arg(&merged).output();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let summary = read_json(&merged.join("summary.json"));
    let tests = by_id(&summary);
    assert_eq!(tests["TestVictim"]["attempts"], 6, "the shards' shuffled attempts together");
    assert_eq!(strings(&tests["TestVictim"]["polluters"]), ["TestPolluter"]);
    assert_eq!(tests["TestNonIdempotent"]["category"], "non-idempotent");
}

#[test]
fn suite_refuses_what_it_does_not_take_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let refuse = |args: &[&str], expected: &str| {
        let out = flakehunt().arg("suite").args(args).current_dir(dir.path()).output();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    };
    refuse(&["--", "true"], "suite runs the test runner itself");
    refuse(&[], "suite needs a test runner");
    refuse(&["--fail-if", "x", "--pytest"], "drop the oracle options");
    refuse(&["--until-fails", "2", "--pytest"], "--until-fails");
    refuse(&["--python", "/no/such/python", "--pytest"], "--python /no/such/python: no such file");
    refuse(&["--runs", "1", "--go-test", ".", "--runs", "2"], "give the other options before --go-test");
    assert!(!dir.path().join(".flakehunt").exists(), "a refused hunt leaves no record");
}

/// `--python`, else `$VIRTUAL_ENV`'s python, is the interpreter of `--pytest` in sweep too.
#[test]
fn sweep_runs_pytest_with_the_interpreter_the_user_means() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_suite("pytest", dir.path());
    let venv = dir.path().join("venv");
    std::fs::create_dir_all(venv.join("bin")).unwrap();
    let python3 = which("python3");
    std::os::unix::fs::symlink(&python3, venv.join("bin/python")).unwrap();
    let record = dir.path().join("rec");
    let out = flakehunt()
        .args(["sweep", "--profiles", "default", "--runs", "1", "--quiet", "--record"])
        .arg(&record)
        .args(["--pytest", "tests/test_alpha.py::test_clean_alpha_one"])
        .env("VIRTUAL_ENV", &venv)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(&project)
        .output();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let manifest = read_json(&record.join("manifest.json"));
    assert_eq!(manifest["target"]["argv"][0], venv.join("bin/python").display().to_string());
}

fn which(program: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).map(|d| d.join(program)).find(|p| p.is_file()).expect("on PATH")
}

/// A test that fails only under one profile (its `env` reaches the test) is condition-sensitive,
/// and the condition is named; the cells count the whole selection's attempts per profile.
#[test]
fn a_test_failing_under_one_profile_is_condition_sensitive() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("cond");
    std::fs::create_dir_all(project.join("tests")).unwrap();
    std::fs::write(
        project.join("tests/test_cond.py"),
        "import os\n\ndef test_env():\n    assert os.environ.get('SUITE_COND') != 'on'\n\ndef test_clean():\n    pass\n",
    )
    .unwrap();
    std::fs::write(project.join("flakehunt.toml"), "[profiles.cond]\nenv = { SUITE_COND = \"on\" }\n").unwrap();
    let record = dir.path().join("rec");
    let args = [
        "--profiles",
        "default,cond",
        "--runs",
        "6",
        "--seed",
        "1",
        "--json",
        "--quiet",
        "--record",
        record.to_str().unwrap(),
        "--pytest",
    ];
    let (code, summary, stderr) = suite(&project, &args, &[]);
    assert_eq!(code, 1, "{stderr}");
    let tests = by_id(&summary);
    let t = &tests["tests/test_cond.py::test_env"];
    assert_eq!(t["category"], "condition-sensitive", "{t}");
    assert_eq!(t["condition"], "cond");
    assert_eq!((t["attempts"].as_u64(), t["failures"].as_u64()), (Some(12), Some(6)));
    let conditions = t["conditions"].as_array().unwrap();
    assert_eq!(conditions[1]["name"], "cond");
    assert!(conditions[1]["p_value"].as_f64().unwrap() < 0.01, "{conditions:?}");
    assert_eq!(tests.len(), 1);
}

/// libtest cannot order tests on stable Rust: a Rust suite gets per-test tallies, said so.
#[test]
fn a_rust_suite_gets_per_test_tallies_without_order_analysis() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("cargo-flaky");
    let status =
        std::process::Command::new("cp").arg("-r").arg(fixture("adapters/cargo-flaky")).arg(&project).status().unwrap();
    assert!(status.success());
    let record = dir.path().join("rec");
    let env = [("CARGO_TARGET_DIR", dir.path().join("target"))];
    let args =
        ["--runs", "8", "--seed", "1", "--json", "--quiet", "--record", record.to_str().unwrap(), "--cargo-test"];
    let (code, summary, stderr) = suite(&project, &args, &env);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!((summary["framework"].as_str(), summary["shuffled"].as_bool()), (Some("libtest"), Some(false)));
    let tests = by_id(&summary);
    let t = &tests["ledger::transfer_keeps_the_total"];
    // The fixture fails on iterations 4 and 8.
    assert_eq!((t["attempts"].as_u64(), t["failures"].as_u64()), (Some(8), Some(2)));
    assert_eq!(t["category"], "flaky");
    assert!(summary["notes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n.as_str().unwrap().contains("libtest cannot run tests in a given order")));
}

/// A suite in which no test fails exits 0, with no test in the summary.
#[test]
fn a_clean_suite_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("clean");
    std::fs::create_dir_all(project.join("tests")).unwrap();
    std::fs::write(project.join("tests/test_ok.py"), "def test_a():\n    pass\n\ndef test_b():\n    pass\n").unwrap();
    let record = dir.path().join("rec");
    let (code, summary, stderr) =
        suite(&project, &["--runs", "3", "--json", "--quiet", "--record", record.to_str().unwrap(), "--pytest"], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(summary["verdict"], "not-reproduced");
    assert_eq!(summary["tests"], serde_json::json!([]));
    assert_eq!(summary["collected"], 2);
    // Nothing failed, so only the repeat-all pass ran besides the three attempts.
    assert_eq!(attempts_in(&record).len(), 4);
}

/// `fixtures/suite/pytest-items`: a non-idempotent test of each kind of pytest item, a polluter
/// and its victim, a test whose second run in a process fails twice in the whole hunt (noise,
/// not a broken state), under a conftest that makes every run exit non-zero (as
/// `--cov-fail-under` does) and `addopts = -rN` (no `FAILED id` lines).
const ITEMS_NON_IDEMPOTENT: [&str; 7] = [
    "tests/counts.py::counts.once",
    "tests/test_kinds.py::test_function",
    "tests/test_kinds.py::TestCaseKind::test_method",
    "tests/test_kinds.py::TestPlainKind::test_method",
    "tests/test_kinds.py::test_param[a b]",
    "tests/test_kinds.py::test_param[x-1.5/y]",
    "tests/test_kinds.py::test_param[\\xe9]",
];
const NOISY: &str = "tests/test_kinds.py::test_noisy_but_idempotent";

#[test]
fn every_kind_of_pytest_item_gets_a_checked_reproducer_judged_by_its_own_result() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_suite("pytest-items", dir.path());
    let noise = dir.path().join("noise");
    std::fs::create_dir(&noise).unwrap();
    let env = [("SUITE_NOISE_DIR", noise.clone())];
    let record = dir.path().join("rec");
    let args = ["--pytest", "--runs", "3", "--seed", "1", "--json", "--quiet", "--record", record.to_str().unwrap()];
    let (code, summary, stderr) = suite(&project, &args, &env);
    assert_eq!(code, 1, "{stderr}");
    let tests = by_id(&summary);
    let mut expected: Vec<&str> = ITEMS_NON_IDEMPOTENT.to_vec();
    expected.push("tests/test_order.py::test_victim");
    expected.sort_unstable();
    assert_eq!(tests.keys().map(String::as_str).collect::<Vec<_>>(), expected, "{stderr}");
    assert_eq!(std::fs::read_dir(&noise).unwrap().count(), 2, "the noisy test's second run failed twice");
    for id in ITEMS_NON_IDEMPOTENT {
        let t = &tests[id];
        assert_eq!(t["category"], "non-idempotent", "{id}");
        assert_eq!(t["repeated"], serde_json::json!([2, 2]), "{id}");
        // The reproducer runs the test twice: its first run passes, its second fails (the
        // process exits non-zero whatever happens: the conftest).
        let argv = strings(&t["reproducer"]);
        assert!(!argv.is_empty(), "{id}: no checked reproducer");
        let (_, out) = run_reproducer(&argv, &project, &env);
        assert!(out.contains("1 failed, 1 passed"), "{id}: {argv:?}: {out}");
    }
    let victim = &tests["tests/test_order.py::test_victim"];
    assert_eq!(victim["category"], "order-dependent-victim");
    assert_eq!(strings(&victim["polluters"]), ["tests/test_order.py::test_polluter"]);
    assert!(!strings(&victim["reproducer"]).is_empty());
    let notes = summary["notes"].to_string();
    assert!(
        notes.contains("failed for another reason than a test")
            && notes.contains("FAIL Required test coverage of 100% not reached"),
        "{notes}"
    );

    // The same from the record.
    let out = flakehunt().args(["report", "-f", "json"]).arg(&record).output();
    let again: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(again["tests"], summary["tests"]);

    // Negative control: the noisy test with clean ones, every run exiting non-zero.
    std::fs::remove_dir_all(&noise).unwrap();
    std::fs::create_dir(&noise).unwrap();
    let clean = ["tests/test_kinds.py::test_clean", NOISY, "tests/test_order.py::test_clean_order"];
    let mut args = vec!["--pytest"];
    args.extend(clean);
    let clean_record = dir.path().join("clean");
    args.extend(["--runs", "3", "--seed", "1", "--json", "--quiet", "--record", clean_record.to_str().unwrap()]);
    let (code, summary, stderr) = suite(&project, &args, &env);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(summary["verdict"], "not-reproduced", "{stderr}");
    assert!(summary["tests"].as_array().unwrap().is_empty(), "{summary}");
    // Every run exited 2 (the conftest), no test failed: the per-cell counts follow the tests.
    assert_eq!(
        (summary["cells"][0]["attempts"].as_u64(), summary["cells"][0]["failures"].as_u64()),
        (Some(3), Some(0))
    );
    let shuffled: Vec<Value> =
        attempts_in(&clean_record).into_iter().filter(|a| a["suite"]["role"] == "shuffled").collect();
    assert!(shuffled.iter().all(|a| a["exit_code"] == 2 && a["outcome"] == "pass"), "{shuffled:?}");
    assert_eq!(std::fs::read_dir(&noise).unwrap().count(), 2, "the noise happened");
}

#[test]
fn the_collected_order_runs_first_and_scoped_shuffles_keep_a_class_together() {
    // `fixtures/suite/pytest-scoped`: test_b passes after test_a in their class (a class
    // fixture's registry), fails alone, and fails whenever a global shuffle splits the class.
    let dir = tempfile::tempdir().unwrap();
    let project = copy_suite("pytest-scoped", dir.path());
    let record = dir.path().join("rec");
    let args = ["--pytest", "--runs", "4", "--seed", "1", "--json", "--quiet", "--record", record.to_str().unwrap()];
    let (code, summary, stderr) = suite(&project, &args, &[]);
    assert_eq!(code, 1, "{stderr}");
    let tests = by_id(&summary);
    let brittle = "tests/test_scoped.py::TestRegistry::test_b_needs_the_flag";
    assert_eq!(tests.keys().collect::<Vec<_>>(), [brittle], "the clean tests never failed: {stderr}");
    assert_eq!(tests[brittle]["category"], "order-dependent-brittle", "passes as collected: not deterministic");
    assert_eq!(strings(&tests[brittle]["state_setters"]), ["tests/test_scoped.py::TestRegistry::test_a_sets_the_flag"]);
    let shuffled: Vec<Value> = attempts_in(&record).into_iter().filter(|a| a["suite"]["role"] == "shuffled").collect();
    let strategies: Vec<&str> = shuffled.iter().map(|a| a["suite"]["strategy"].as_str().unwrap()).collect();
    assert_eq!(strategies, ["collected", "by-scope", "global", "by-scope"]);
    let collected = strings(&shuffled[0]["suite"]["order"]);
    assert_eq!(collected[..2], ["tests/test_scoped.py::TestRegistry::test_a_sets_the_flag", brittle]);
    for a in shuffled.iter().filter(|a| a["suite"]["strategy"] == "by-scope") {
        let order = strings(&a["suite"]["order"]);
        let at: Vec<usize> = (0..order.len()).filter(|&i| order[i].contains("::TestRegistry::")).collect();
        assert_eq!(at[1], at[0] + 1, "the class stays together: {order:?}");
    }
}

const SHARED_POLLUTER: &str = "tests/test_a_config.py::test_strict_mode_refuses_blank_space";

/// Whether this machine lets flakehunt run the classification's runs side by side.
fn side_by_side_here() -> bool {
    std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2)
}

/// `fixtures/suite/pytest-shared`: eight victims of one polluter. One is bisected; the others
/// try its polluter first (one run, then their reproducer's two checks, which are not run
/// again); the classification's cost against the suite's plain run is in the summary and its
/// notes; on two CPUs or more its runs go side by side once the suite ran clean beside itself;
/// one state search run names the state for all eight; the record concludes the same.
#[test]
fn victims_of_one_polluter_cost_one_bisection_and_run_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_suite("pytest-shared", dir.path());
    let record = dir.path().join("rec");
    let env = [("MARKUP_WORK", PathBuf::from("0"))];
    let args = ["--pytest", "--runs", "3", "--seed", "1", "--json", "--quiet", "--record", record.to_str().unwrap()];
    let (code, summary, stderr) = suite(&project, &args, &env);
    assert_eq!(code, 1, "{stderr}");
    let tests = by_id(&summary);
    assert_eq!(tests.len(), 8, "{:?}", tests.keys());
    let mut known = 0;
    for (id, t) in &tests {
        assert_eq!(t["category"], "order-dependent-victim", "{id}");
        assert_eq!(strings(&t["polluters"]), [SHARED_POLLUTER], "{id}");
        let reproducer = strings(&t["reproducer"]);
        assert_eq!(reproducer[reproducer.len() - 2..], [SHARED_POLLUTER, id.as_str()], "{id}");
        let b = &t["bisection"];
        assert_eq!((b["status"].as_str(), b["strategy"].as_str()), (Some("confirmed"), Some("collected")), "{id}: {b}");
        known += usize::from(b["known"] == true);
        assert_eq!(t["state"]["state"][0]["path"], "markup.STRICT", "{id}");
    }
    assert_eq!(known, 7, "one bisection, seven tries of the polluter it found");
    let attempts = attempts_in(&record);
    let phase = |p: &str| attempts.iter().filter(|a| a["phase"] == p).collect::<Vec<_>>();
    assert_eq!(phase("reproducer").len(), 16, "two checks per victim, each run once");
    assert!(
        phase("bisect").iter().all(|a| a["suite"]["strategy"] == "collected"),
        "bisections record their order's strategy"
    );
    let cost = &summary["cost"];
    assert!(cost["plain_run"].as_f64().unwrap() > 0.0 && cost["ratio"].as_f64().unwrap() > 0.0, "{cost}");
    assert_eq!(cost["runs"].as_u64().unwrap() as usize, attempts.iter().filter(|a| a.get("phase").is_some()).count());
    assert!(cost["state_search"].as_f64().unwrap() > 0.0, "{cost}");
    let notes = summary["notes"].to_string();
    assert!(notes.contains("classification: ") && notes.contains("x the suite's plain run"), "{notes}");
    let state_runs: std::collections::BTreeSet<u64> = read_json(&record.join("state.json"))
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["run"]["id"].as_u64().unwrap())
        .collect();
    assert_eq!(state_runs.len(), 1, "one state search run for the eight victims of one polluter");
    if side_by_side_here() {
        assert_eq!(cost["side_by_side"]["failed"], serde_json::json!([]), "{cost}");
        assert!(cost["at_once"].as_u64().unwrap() >= 2, "{cost}");
        assert!(!phase("side-by-side").is_empty());
        assert_eq!(phase("repeat-all").len(), 1, "the run of every test twice ran beside the copies, and counts");
        assert_eq!(phase("alone").len(), 24, "so did the runs alone");
    }
    let out = flakehunt().args(["report", "-f", "json"]).arg(&record).output();
    let again: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((&again["tests"], &again["cost"]), (&summary["tests"], &summary["cost"]));
}

/// A suite with a test that fails in a copy of the suite run beside itself (standing for one
/// that writes a fixed path or binds a fixed port: here, any run after the hunt's shuffled
/// attempts fails it) runs its classification one at a time, says why, and does not count the
/// runs made beside the copies (every test twice, the failing tests alone): they are made again;
/// the classification is the same.
#[test]
fn a_suite_that_fails_beside_itself_is_classified_one_run_at_a_time() {
    if !side_by_side_here() {
        eprintln!("skipped: one CPU, no runs side by side");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let project = copy_suite("pytest-shared", dir.path());
    let beside = "tests/test_z_scratch.py::test_fixed_scratch_path";
    std::fs::write(
        project.join("tests/test_z_scratch.py"),
        "import os\n\n\ndef test_fixed_scratch_path():\n    assert int(os.environ['FLAKEHUNT_ATTEMPT'].rsplit('.', 1)[1]) < 3\n",
    )
    .unwrap();
    let record = dir.path().join("rec");
    let env = [("MARKUP_WORK", PathBuf::from("0"))];
    let args = ["--pytest", "--runs", "3", "--seed", "1", "--json", "--quiet", "--record", record.to_str().unwrap()];
    let (code, summary, stderr) = suite(&project, &args, &env);
    assert_eq!(code, 1, "{stderr}");
    let tests = by_id(&summary);
    assert_eq!(tests.len(), 8, "{:?}", tests.keys());
    assert!(tests.values().all(|t| t["category"] == "order-dependent-victim"));
    let cost = &summary["cost"];
    assert_eq!(strings(&cost["side_by_side"]["failed"]), [beside], "{cost}");
    let notes = summary["notes"].to_string();
    assert!(notes.contains(&format!("one at a time: beside itself (a copy of attempt 0 beside the run of every test twice) the suite failed {beside}")), "{notes}");
    let attempts = attempts_in(&record);
    assert_eq!(attempts.iter().filter(|a| a["phase"] == "repeat-all").count(), 2, "run again alone");
    assert_eq!(attempts.iter().filter(|a| a["phase"] == "alone").count(), 48, "run again one at a time");
    // After the check, whose runs went side by side, one at a time: each run's id follows the
    // one before it in time, with no two at once.
    let mut after: Vec<&Value> = attempts.iter().filter(|a| a["phase"].is_string()).collect();
    after.sort_by_key(|a| a["id"].as_u64());
    let again = after.iter().rposition(|a| a["phase"] == "repeat-all").unwrap();
    let spans: Vec<(f64, f64)> = after[again..]
        .iter()
        .map(|a| {
            let start = crate::harness::unix_seconds(a["started_at"].as_str().unwrap());
            (start, start + a["seconds"].as_f64().unwrap())
        })
        .collect();
    assert!(spans.windows(2).all(|w| w[1].0 >= w[0].1 - 1e-3), "one at a time after the check: {spans:?}");
    let out = flakehunt().args(["report", "-f", "json"]).arg(&record).output();
    let again: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&again["tests"], &again["cost"], again["complete"].as_bool()),
        (&summary["tests"], &summary["cost"], Some(true))
    );
}
