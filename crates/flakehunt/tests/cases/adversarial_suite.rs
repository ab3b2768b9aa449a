//! `flakehunt suite` against suites built to break it: attempts that end without results for
//! every test (a segfault, a hang past `--timeout`, `os._exit(0)` in pytest, `os.Exit(0)` in Go,
//! a conftest that deletes the results, a hunt started outside pytest's rootdir), projects whose
//! configuration changes pytest's output (`addopts = -ra -q`, `-v`, `--doctest-modules`, odd
//! parametrize ids), collections that fail or never end (a conftest that raises, a symlink
//! loop), a Go test whose output looks like the framework's, a reproducer that passes only in
//! flakehunt's environment, and `--pytest` / `-run` names that match nothing.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::suite::suite;
use crate::harness::{attempts_in, flakehunt, go_env};

/// A project of `files` (path, text) in a new directory `name` of `dir`.
fn make_project(dir: &Path, name: &str, files: &[(&str, &str)]) -> PathBuf {
    let root = dir.join(name);
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    root
}

fn by_id(summary: &Value) -> std::collections::BTreeMap<String, Value> {
    summary["tests"].as_array().unwrap().iter().map(|t| (t["id"].as_str().unwrap().to_owned(), t.clone())).collect()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().map(|s| s.as_str().unwrap().to_owned()).collect()).unwrap_or_default()
}

/// `flakehunt suite ARGS... --pytest` in `project`, recorded in `dir/rec`.
fn pytest_suite(project: &Path, dir: &Path, args: &[&str]) -> (i32, Value, String) {
    let record = dir.join("rec");
    let mut all: Vec<&str> = vec!["--json", "--quiet", "--record", record.to_str().unwrap()];
    all.extend_from_slice(args);
    all.push("--pytest");
    suite(project, &all, &[])
}

const CRASH_ON_THIRD: &str = "import ctypes, os\n\n\
def test_first():\n    pass\n\n\
def test_crash():\n    if os.environ['FLAKEHUNT_ITERATION'] == '3':\n        ctypes.string_at(0)\n\n\
def test_last():\n    pass\n";

/// A test that segfaults on one iteration: that attempt is counted, the test fails in it
/// (killed by SIGSEGV while it ran), and the tests it did not reach are named; never "no test
/// failed".
#[test]
fn a_segfault_in_one_attempt_is_a_failure_of_the_test_it_ran_in() {
    let dir = tempfile::tempdir().unwrap();
    let project = make_project(dir.path(), "p", &[("test_crash.py", CRASH_ON_THIRD)]);
    let (code, summary, stderr) = pytest_suite(&project, dir.path(), &["--runs", "4", "--seed", "3"]);
    assert_eq!(code, 1, "{stderr}");
    let tests = by_id(&summary);
    let crash = &tests["test_crash.py::test_crash"];
    assert_eq!((crash["attempts"].as_u64(), crash["failures"].as_u64()), (Some(4), Some(1)), "{crash}");
    assert!(crash["message"].as_str().unwrap().contains("was killed by SIGSEGV while this test ran"), "{crash}");
    let incomplete = summary["incomplete"].as_array().unwrap();
    let why = incomplete[0]["why"].as_str().unwrap();
    assert!(why.contains("SIGSEGV") && why.contains("test_crash.py::test_crash"), "{why}");
    assert_eq!(incomplete[0]["phase"], "shuffled");
    // The attempt's record names the tests that did not run after the crash.
    let crashed: Vec<Value> =
        attempts_in(&dir.path().join("rec")).into_iter().filter(|a| a["suite"]["incomplete"].is_string()).collect();
    assert!(!crashed.is_empty());
    let shuffled = crashed.iter().find(|a| a["suite"]["role"] == "shuffled").unwrap();
    let order = strings(&shuffled["suite"]["order"]);
    let after: Vec<String> = order.iter().skip_while(|t| *t != "test_crash.py::test_crash").skip(1).cloned().collect();
    assert_eq!(strings(&shuffled["suite"]["unreported"]), after, "the tests after the crash did not run");
    assert!(summary["verdict_text"].as_str().unwrap().contains("ended before all"), "{}", summary["verdict_text"]);
}

/// A test that hangs past `--timeout` in one attempt: the attempt is ended, the test fails in it
/// (ended at the timeout while it ran), and the hunt says so.
#[test]
fn a_hang_past_the_timeout_is_a_failure_of_the_test_that_hung() {
    let dir = tempfile::tempdir().unwrap();
    let hang = "import os, time\n\ndef test_hang():\n    if os.environ['FLAKEHUNT_ITERATION'] == '2':\n        time.sleep(3600)\n\ndef test_ok():\n    pass\n";
    let project = make_project(dir.path(), "p", &[("test_hang.py", hang)]);
    let (code, summary, stderr) =
        pytest_suite(&project, dir.path(), &["--runs", "3", "--seed", "1", "--timeout", "3s", "--grace", "1s"]);
    assert_eq!(code, 1, "{stderr}");
    let hung = &by_id(&summary)["test_hang.py::test_hang"];
    assert_eq!(hung["failures"], 1, "{hung}");
    assert!(hung["message"].as_str().unwrap().contains("was ended at its timeout"), "{hung}");
    assert!(summary["incomplete"][0]["why"].as_str().unwrap().contains("while test_hang.py::test_hang ran"));
}

/// `os._exit(0)` in a test: the process ends as a success with that test unfinished and the
/// rest unrun; a conftest that ends every run before any test: every attempt is counted and
/// every test named, exit 1, not "no test failed".
#[test]
fn an_early_exit_with_status_zero_is_not_a_pass() {
    let dir = tempfile::tempdir().unwrap();
    let exits = "import os\n\ndef test_exits():\n    if os.environ['FLAKEHUNT_ITERATION'] == '1':\n        os._exit(0)\n\ndef test_other():\n    pass\n";
    let project = make_project(dir.path(), "p", &[("test_exit.py", exits)]);
    let (code, summary, stderr) = pytest_suite(&project, dir.path(), &["--runs", "3", "--seed", "2"]);
    assert_eq!(code, 1, "{stderr}");
    let t = &by_id(&summary)["test_exit.py::test_exits"];
    assert_eq!(t["failures"], 1, "{t}");
    assert!(t["message"].as_str().unwrap().contains("exited with code 0 while this test ran"), "{t}");

    // Every run ends before its first test, as a success.
    let dir = tempfile::tempdir().unwrap();
    let conftest = "import os\n\ndef pytest_runtestloop(session):\n    if not session.config.option.collectonly:\n        os._exit(0)\n";
    let project = make_project(
        dir.path(),
        "q",
        &[("conftest.py", conftest), ("test_a.py", "def test_a():\n    pass\n\ndef test_b():\n    pass\n")],
    );
    let (code, summary, stderr) = pytest_suite(&project, dir.path(), &["--runs", "2"]);
    assert_eq!(code, 1, "no test reported, which is no pass: {stderr}");
    assert_eq!(summary["verdict"], "unreported-tests");
    let text = summary["verdict_text"].as_str().unwrap();
    assert!(
        text.starts_with("no test failed of those that reported, but 3 attempts ended before all their tests reported"),
        "{text}"
    );
    let unreported: Vec<(String, u64)> = summary["unreported"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["id"].as_str().unwrap().to_owned(), t["attempts"].as_u64().unwrap()))
        .collect();
    assert_eq!(unreported, [("test_a.py::test_a".to_owned(), 2), ("test_a.py::test_b".to_owned(), 2)]);
    let notes = strings(&summary["notes"]);
    assert!(
        !notes.iter().any(|n| n.contains("would very likely")),
        "no rate is ruled out by runs that reported nothing: {notes:?}"
    );
    let phases: Vec<&str> =
        summary["incomplete"].as_array().unwrap().iter().map(|g| g["phase"].as_str().unwrap()).collect();
    assert_eq!(phases, ["shuffled", "repeat-all"]);
    // `report` reads the same back from the record.
    let out = flakehunt().args(["report", "--format", "json"]).arg(dir.path().join("rec")).output();
    let again: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((&again["verdict"], &again["incomplete"]), (&summary["verdict"], &summary["incomplete"]));
    let term = flakehunt().args(["report"]).arg(dir.path().join("rec")).output();
    let term = String::from_utf8_lossy(&term.stdout);
    assert!(term.contains("ended before all their tests reported (3 attempts)"), "{term}");
}

/// A conftest that deletes flakehunt's results file in the run of every test twice: that run
/// is counted as incomplete, and its tests as not checked, never silently as passing.
#[test]
fn a_conftest_that_deletes_the_results_leaves_the_run_incomplete_not_clean() {
    let dir = tempfile::tempdir().unwrap();
    let conftest = "import os\n\ndef pytest_unconfigure(config):\n    path = os.environ.get('FLAKEHUNT_SUITE_RESULTS')\n    if config.getoption('flakehunt_repeat_all', False) and path and os.path.exists(path):\n        os.remove(path)\n";
    let project =
        make_project(dir.path(), "p", &[("conftest.py", conftest), ("test_a.py", "def test_a():\n    pass\n")]);
    let (code, summary, stderr) = pytest_suite(&project, dir.path(), &["--runs", "2"]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(summary["verdict"], "unreported-tests");
    assert_eq!(summary["incomplete"][0]["phase"], "repeat-all", "{}", summary["incomplete"]);
}

/// Started in a subdirectory of pytest's rootdir (where pytest.ini is): the attempts run from
/// the rootdir, so they find their tests, and the printed reproducer runs from where it is
/// pasted (`env -C ROOT`).
#[test]
fn a_suite_started_below_the_rootdir_runs_from_the_rootdir() {
    let dir = tempfile::tempdir().unwrap();
    let tests = "def test_ok():\n    pass\n\ndef test_always_fails():\n    assert False, 'always'\n";
    let project = make_project(dir.path(), "p", &[("pytest.ini", "[pytest]\n"), ("sub/test_sub.py", tests)]);
    let sub = project.join("sub");
    let (code, summary, stderr) = pytest_suite(&sub, dir.path(), &["--runs", "2"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(summary.get("incomplete").is_none(), "every attempt found its tests: {}", summary["incomplete"]);
    let t = &by_id(&summary)["sub/test_sub.py::test_always_fails"];
    assert_eq!((t["category"].as_str(), t["failures"].as_u64()), (Some("deterministic"), Some(2)), "{t}");
    let argv = strings(&t["reproducer"]);
    assert_eq!(argv[..2], ["env", "-C"], "{argv:?}");
    let out = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(&sub)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
}

/// What a project's options do to pytest's output changes nothing flakehunt reads: `-ra -q`,
/// `-v`, doctests and parametrize ids with spaces, `::`, `/` and non-ASCII are collected and
/// tallied exactly, each under its own node id.
#[test]
fn project_options_that_change_pytest_output_change_nothing_read() {
    let tests = "import os, pytest\n\n\
@pytest.mark.parametrize('x', ['a b', 'c::d', 'e/f', '\u{e9}'])\ndef test_p(x):\n    assert not (x == 'c::d' and os.environ['FLAKEHUNT_ITERATION'] == '2')\n\n\
def helper():\n    \"\"\"\n    >>> 1 + 1\n    2\n    \"\"\"\n";
    for addopts in ["-ra -q", "-v", "-v --doctest-modules", "-q -q"] {
        let dir = tempfile::tempdir().unwrap();
        let ini = format!("[pytest]\naddopts = {addopts} --doctest-modules\n");
        let project = make_project(dir.path(), "p", &[("pytest.ini", &ini), ("test_opts.py", tests)]);
        let (code, summary, stderr) = pytest_suite(&project, dir.path(), &["--runs", "3", "--seed", "4"]);
        assert_eq!(code, 1, "{addopts}: {stderr}");
        assert_eq!(summary["collected"], 5, "{addopts}: four parameters and a doctest: {stderr}");
        let tests = by_id(&summary);
        assert_eq!(tests.keys().collect::<Vec<_>>(), ["test_opts.py::test_p[c::d]"], "{addopts}");
        assert_eq!(tests["test_opts.py::test_p[c::d]"]["failures"], 1);
        assert!(summary.get("incomplete").is_none(), "{addopts}: {}", summary["incomplete"]);
        let manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("rec/manifest.json")).unwrap()).unwrap();
        let selection = strings(&manifest["extra"]["suite"]["selection"]);
        assert!(selection.contains(&"test_opts.py::test_opts.helper".to_owned()), "{addopts}: {selection:?}");
        assert!(selection.contains(&"test_opts.py::test_p[\\xe9]".to_owned()), "{addopts}: {selection:?}");
    }
}

/// Collections that fail or never end are refused in one line that says why: a conftest that
/// raises at import (pytest's error quoted), a file that cannot be imported, a symlink loop
/// (refused at once), a conftest that hangs (bounded by `--timeout`).
#[test]
fn collections_that_fail_or_never_end_are_refused_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let refused = |project: &Path, args: &[&str], expected: &str| {
        let out = flakehunt()
            .args(["suite", "--record"])
            .arg(dir.path().join("never"))
            .args(args)
            .arg("--pytest")
            .current_dir(project)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .output();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(expected), "{expected}: {stderr}");
        assert!(!dir.path().join("never").exists(), "no record is left");
    };
    let ok = ("test_ok.py", "def test_ok():\n    pass\n");
    let raises = make_project(dir.path(), "raises", &[("conftest.py", "raise RuntimeError('boom at import')\n"), ok]);
    refused(&raises, &[], "RuntimeError: boom at import");
    let broken = make_project(dir.path(), "broken", &[("test_bad.py", "import no_such_module_anywhere\n"), ok]);
    refused(
        &broken,
        &[],
        "pytest could not collect test_bad.py: ModuleNotFoundError: No module named 'no_such_module_anywhere'",
    );
    let looped = make_project(dir.path(), "looped", &[("tests/test_ok.py", ok.1)]);
    std::os::unix::fs::symlink("..", looped.join("tests/up")).unwrap();
    std::os::unix::fs::symlink("..", looped.join("tests/again")).unwrap();
    refused(&looped, &[], "a directory that contains it: pytest would collect through it again and again");
    let hangs = make_project(dir.path(), "hangs", &[("conftest.py", "import time\ntime.sleep(3600)\n"), ok]);
    // Bounded by --timeout, and never below a minute: a collection is a cold start.
    refused(
        &hangs,
        &["--timeout", "2s"],
        "pytest's collection did not finish within 60 s (--timeout, and at least 60 s)",
    );
}

/// `hunt` and `sweep` with a `--pytest` node id that names no test, or a Go `-run` subtest that
/// matches none, exit 2 before any attempt, leaving no record.
#[test]
fn test_names_that_match_nothing_are_refused_before_any_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let project = make_project(dir.path(), "p", &[("test_a.py", "def test_a():\n    pass\n")]);
    for (kind, node) in [("hunt", "test_a.py::test_nope"), ("sweep", "test_a.py::test_nope"), ("sweep", "test_none.py")]
    {
        let record = dir.path().join(format!("rec-{kind}"));
        let out =
            flakehunt().args([kind, "--record"]).arg(&record).args(["--pytest", node]).current_dir(&project).output();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{kind} {node}: {stderr}");
        assert!(stderr.contains("--pytest") && stderr.lines().count() == 1, "{stderr}");
        assert!(!record.exists(), "{kind}: no attempt, no record");
    }
    let go = project_go(dir.path());
    let record = dir.path().join("rec-go");
    let mut sweep = flakehunt();
    sweep.args(["sweep", "--record"]).arg(&record).args(["--go-test", ".", "-run", "TestSubs/nosuch"]).current_dir(&go);
    for (k, v) in go_env(dir.path()) {
        sweep.env(k, v);
    }
    let out = sweep.output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("names no subtest of TestSubs"), "{stderr}");
    assert!(!record.exists());
}

const GO_FORGE: &str = r#"package forge

import (
	"fmt"
	"os"
	"strconv"
	"testing"
)

func TestCleanAlpha(t *testing.T) {}

// Prints lines that look like the test framework's: its own failure, a test that does not
// exist, and the failure of a test that already passed.
func TestCleanZeta(t *testing.T) {
	fmt.Println("--- FAIL: TestCleanZeta (0.00s)")
	fmt.Println("=== RUN   TestGhost")
	fmt.Println("--- FAIL: TestGhost (0.00s)")
	fmt.Println("--- FAIL: TestCleanAlpha (0.00s)")
}

func TestSubs(t *testing.T) {
	t.Run("one", func(t *testing.T) {})
}

// Exits the process as a success on the second iteration.
func TestExits(t *testing.T) {
	if n, _ := strconv.Atoi(os.Getenv("FLAKEHUNT_ITERATION")); n == 2 {
		os.Exit(0)
	}
}
"#;

fn project_go(dir: &Path) -> PathBuf {
    make_project(dir, "forge", &[("go.mod", "module example.com/forge\n\ngo 1.17\n"), ("forge_test.go", GO_FORGE)])
}

/// Go: output that looks like the framework's invents no test and fails no clean test (Go
/// 1.19 here frames nothing), and `os.Exit(0)` in a test is that test's failure, with the tests
/// it cut short named.
#[test]
fn go_output_that_looks_like_the_framework_and_os_exit_zero() {
    let dir = tempfile::tempdir().unwrap();
    let go = project_go(dir.path());
    let record = dir.path().join("rec");
    let args =
        ["--runs", "4", "--seed", "5", "--json", "--quiet", "--record", record.to_str().unwrap(), "--go-test", "."];
    let (code, summary, stderr) = suite(&go, &args, &go_env(dir.path()));
    assert_eq!(code, 1, "{stderr}");
    let tests = by_id(&summary);
    assert_eq!(tests.keys().collect::<Vec<_>>(), ["TestExits"], "no clean test fails, no TestGhost: {stderr}");
    let exits = &tests["TestExits"];
    assert_eq!(exits["failures"], 1, "{exits}");
    assert!(exits["message"].as_str().unwrap().contains("os.Exit(0)"), "{exits}");
    let attempts = attempts_in(&record);
    assert!(attempts.iter().all(|a| !a.to_string().contains("TestGhost")), "TestGhost is in the record");
}

/// A reproducer is checked as it is pasted: a test that fails only while flakehunt's variables
/// are set gets no reproducer (it would pass in the user's shell).
#[test]
fn a_reproducer_is_checked_without_flakehunts_variables() {
    let dir = tempfile::tempdir().unwrap();
    let tests = "import os\n\ndef test_needs_a_plain_shell():\n    assert 'FLAKEHUNT_RUN_ID' not in os.environ\n\ndef test_ok():\n    pass\n";
    let project = make_project(dir.path(), "p", &[("test_env.py", tests)]);
    let (code, summary, stderr) = pytest_suite(&project, dir.path(), &["--runs", "2"]);
    assert_eq!(code, 1, "{stderr}");
    let t = &by_id(&summary)["test_env.py::test_needs_a_plain_shell"];
    assert_eq!(t["failures"], 2);
    assert_eq!(t["reproducer"], serde_json::json!([]), "it passes when pasted: {t}");
    let checks: Vec<Value> =
        attempts_in(&dir.path().join("rec")).into_iter().filter(|a| a["phase"] == "reproducer").collect();
    assert!(!checks.is_empty() && checks.iter().all(|a| a["exit_code"] == 0), "{checks:?}");
}
