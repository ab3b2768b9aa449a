//! `flakehunt suite --pytest` with warm attempts (its default) against `--no-warm`, on the fixture
//! suite of `fixtures/suite/pytest`: the same conclusions, the same per-test results attempt by
//! attempt (each fork writes its own junit xml), the record's `mode` per attempt, and the runs
//! that must start a new interpreter said once and run cold.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::harness::{attempts_in, fixture};

/// Runs `flakehunt suite --pytest --runs 6 --seed 1 ARGS` in `project`, recording into
/// `record`; its exit code, JSON summary and stderr.
fn suite(project: &Path, record: &Path, args: &[&str]) -> (i32, Value, String) {
    let record = record.to_str().unwrap();
    let fixed = ["--pytest", "--runs", "6", "--seed", "1", "--json", "--quiet", "--record", record];
    super::suite::suite(project, &[&fixed[..], args].concat(), &[])
}

/// The summary's tests, with the record's own directory (in the repeat reproducer's
/// `PYTHONPATH`) written as `RECORD` and only the first line of each failure's message (pytest's
/// explanation of an assertion can quote an object's address).
fn tests_of(summary: &Value, record: &Path) -> String {
    let mut tests = summary["tests"].clone();
    for t in tests.as_array_mut().unwrap() {
        let first = t["message"].as_str().unwrap_or_default().lines().next().unwrap_or_default().to_owned();
        t["message"] = first.into();
    }
    tests.to_string().replace(record.to_str().unwrap(), "RECORD")
}

/// An attempt's id, role, the order it ran and each test's id and outcome, as recorded.
type Results = (u64, String, Vec<String>, Vec<(String, String)>);

/// Per attempt, its [`Results`].
fn results(attempts: &[Value]) -> Vec<Results> {
    attempts
        .iter()
        .map(|a| {
            let s = &a["suite"];
            let order = s["order"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_owned()).collect();
            let tests = s["tests"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| (t["id"].as_str().unwrap().to_owned(), t["outcome"].as_str().unwrap().to_owned()))
                .collect();
            (a["id"].as_u64().unwrap(), s["role"].as_str().unwrap().to_owned(), order, tests)
        })
        .collect()
}

#[test]
fn a_warm_suite_concludes_as_a_cold_one_and_each_fork_reports_its_own_results() {
    let dir = tempfile::tempdir().unwrap();
    let project: PathBuf = dir.path().join("pytest");
    let copied = std::process::Command::new("cp").arg("-r").arg(fixture("suite/pytest")).arg(&project).status();
    assert!(copied.unwrap().success());
    let (warm_rec, cold_rec) = (dir.path().join("warm"), dir.path().join("cold"));
    let (code, warm, warm_err) = suite(&project, &warm_rec, &[]);
    assert_eq!(code, 1, "flaky tests were found: {warm_err}");
    let (code, cold, cold_err) = suite(&project, &cold_rec, &["--no-warm"]);
    assert_eq!(code, 1, "flaky tests were found: {cold_err}");

    // The same categories, polluter, state-setter and reproducers.
    assert_eq!(warm["tests"].as_array().unwrap().len(), 4, "{warm_err}");
    assert_eq!(tests_of(&warm, &warm_rec), tests_of(&cold, &cold_rec));

    // In id order: the classification's runs had side by side are written as they end.
    let (mut warm_attempts, mut cold_attempts) = (attempts_in(&warm_rec), attempts_in(&cold_rec));
    warm_attempts.sort_by_key(|a| a["id"].as_u64());
    cold_attempts.sort_by_key(|a| a["id"].as_u64());
    // Each warm attempt's junit xml is its own: its results come in the order it ran, the orders
    // differ from one attempt to the next, and every attempt has the results of the same cold one.
    let warm_results = results(&warm_attempts);
    for (id, role, order, tests) in &warm_results {
        // (A repeat run has each test twice; a reproducer's result is read from its output.)
        if matches!(role.as_str(), "shuffled" | "alone" | "bisect") {
            let ran: Vec<&String> = tests.iter().map(|(t, _)| t).collect();
            assert_eq!(ran, order.iter().collect::<Vec<_>>(), "attempt {id} ({role}): results in its order");
        }
    }
    let shuffled: Vec<&Vec<String>> = warm_results.iter().filter(|r| r.1 == "shuffled").map(|r| &r.2).collect();
    assert_eq!(shuffled.len(), 6);
    assert!(shuffled.windows(2).all(|w| w[0] != w[1]), "each attempt its own order: {shuffled:?}");
    assert_eq!(warm_results, results(&cold_attempts), "the same results, attempt by attempt");

    // The record's mode: the shuffled attempts, the side-by-side copies and the alone and
    // bisection runs are forks; the repeat runs (the plugin) and the reproducer checks (the
    // command as printed) run cold.
    for a in &warm_attempts {
        let role = a["suite"]["role"].as_str().unwrap();
        let expected = if matches!(role, "repeat" | "repeat-all" | "reproducer") { "cold" } else { "warm" };
        assert_eq!(a["mode"], expected, "attempt {} ({role})", a["id"]);
    }
    assert!(cold_attempts.iter().all(|a| a["mode"] == "cold"), "--no-warm: every attempt cold");
    assert_eq!(warm_err.matches("the repeat runs").count(), 1, "said once: {warm_err}");
    assert!(!cold_err.contains("the repeat runs"), "{cold_err}");
    assert!(!warm_err.contains("other pytest"), "no attempt of the plan was refused: {warm_err}");
}

// A suite whose rootdir is a directory below where the hunt was started (its pytest.ini there:
// pandas ships a pyproject.toml inside its package) ran its warm parent in that directory, and
// each fork looked for the relative directory again from there: every attempt failed to start,
// said as "its interpreter was not found".
#[test]
fn a_warm_suite_whose_rootdir_is_below_the_hunts_directory_runs() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join("sub/tests")).unwrap();
    std::fs::write(project.join("sub/pytest.ini"), "[pytest]\n").unwrap();
    std::fs::write(
        project.join("sub/tests/test_a.py"),
        "import os\n\ndef test_a():\n    assert os.path.exists('pytest.ini')\n",
    )
    .unwrap();
    let out = crate::harness::flakehunt()
        .args(["suite", "--runs", "2", "--json", "--quiet", "--record"])
        .arg(dir.path().join("rec"))
        .args(["--pytest", "sub/tests"])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(&project)
        .output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["attempts"], 2, "{summary}");
    let attempts = attempts_in(&dir.path().join("rec"));
    let shuffled: Vec<&Value> = attempts.iter().filter(|a| a["suite"]["role"] == "shuffled").collect();
    assert_eq!(shuffled.len(), 2);
    assert!(shuffled.iter().all(|a| a["mode"] == "warm" && a["outcome"] == "pass"), "{shuffled:?}");
}
