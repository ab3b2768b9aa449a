//! End-to-end tests of the checks of failures the exit status hides, against the fixtures in
//! `fixtures/checks/`: each fixture misbehaves on chosen iterations (`FLAKEHUNT_ITERATION % N`),
//! so the counts are exact; clean fixtures are run long enough to show no false alarm.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

use crate::harness::{attempts_in, bin, fixture, go_env, read_json};

/// Copies `fixtures/checks/NAME` into a fresh directory, so builds and caches stay out of the tree.
fn copy_fixture(name: &str, into: &Path) -> PathBuf {
    let to = into.join(name.replace('/', "-"));
    let status = std::process::Command::new("cp").arg("-r").arg(fixture(name)).arg(&to).status().unwrap();
    assert!(status.success());
    to
}

/// What one hunt left: its exit code, summary, manifest, attempts and stderr.
struct Ran {
    code: i32,
    summary: Value,
    manifest: Value,
    attempts: Vec<Value>,
    stderr: String,
}

/// `flakehunt SUBCOMMAND ARGS --json --record DIR/rec-N` run in `dir`.
fn hunt(dir: &Path, subcommand: &str, args: &[&str], env: &[(&str, PathBuf)]) -> Ran {
    let record = (0..).map(|i| dir.join(format!("rec-{i}"))).find(|r| !r.exists()).unwrap();
    let mut cmd = Command::new(bin());
    cmd.arg(subcommand).args(["--json", "--seed", "3", "--record"]).arg(&record).args(args).current_dir(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let summary: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("no JSON summary ({e}); stderr: {stderr}"));
    Ran {
        code: out.status.code().unwrap(),
        summary,
        manifest: read_json(&record.join("manifest.json")),
        attempts: attempts_in(&record),
        stderr,
    }
}

fn signatures(summary: &Value) -> Vec<(String, u64)> {
    summary["signatures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["signature"].as_str().unwrap().to_owned(), s["count"].as_u64().unwrap()))
        .collect()
}

/// Attempts whose checks found something.
fn flagged(attempts: &[Value]) -> Vec<&Value> {
    attempts.iter().filter(|a| a["hidden"].as_array().is_some_and(|h| !h.is_empty())).collect()
}

#[test]
fn a_goroutine_leaked_on_a_channel_fails_the_attempt_and_is_named_where_it_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_fixture("checks/go", dir.path());
    let env = go_env(dir.path());
    let args =
        ["--profiles", "default", "--runs", "6", "--leak-check", "--go-test", "./leaky", "-run", "TestChannelLeak"];
    let on = hunt(&project, "sweep", &args, &env);
    assert_eq!(on.code, 1, "{}", on.stderr);
    // Iterations 3 and 6 leave the goroutine blocked on its send; the test itself passes.
    assert_eq!(on.summary["failures"], 2, "{}", on.summary);
    assert_eq!(
        signatures(&on.summary),
        [("exit 1: leaked goroutines blocked at leaky.go:25 (chan send)".to_owned(), 2)]
    );
    let failed: Vec<u64> =
        on.attempts.iter().filter(|a| a["outcome"] == "fail").map(|a| a["iteration"].as_u64().unwrap()).collect();
    assert_eq!(failed, [3, 6]);
    let found = &flagged(&on.attempts)[0]["hidden"][0];
    assert_eq!(found["check"], "goroutine-leak");
    assert_eq!(found["test"], "TestChannelLeak");
    assert_eq!(found["summary"], "leaked goroutines: 1, blocked at leaky.go:25 (chan send)");
    let stack = found["report"].as_str().unwrap();
    assert!(stack.contains("[chan send]") && stack.contains("leaky.Send.func1"), "{stack}");
    assert_eq!(on.manifest["plan"]["checks"]["goroutine_leaks"], true);
    assert_eq!(on.summary["checks"]["failed"], 2);
    assert!(on.summary["notes"].to_string().contains("goroutine leaks (2 of 6 attempts"), "{}", on.summary["notes"]);

    // Off (a sweep's default): the old behaviour, every attempt passes, nothing recorded.
    let off_args = ["--profiles", "default", "--runs", "6", "--go-test", "./leaky", "-run", "TestChannelLeak"];
    let off = hunt(&project, "sweep", &off_args, &env);
    assert_eq!(off.code, 0, "{}", off.stderr);
    assert_eq!(off.summary["failures"], 0);
    assert!(off.manifest["plan"].get("checks").is_none(), "{}", off.manifest["plan"]);
    assert!(off.summary.get("checks").is_none());
    assert!(flagged(&off.attempts).is_empty());
}

#[test]
fn a_goroutine_leaked_in_a_subtest_is_named_with_the_lock_it_waits_for() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_fixture("checks/go", dir.path());
    let env = go_env(dir.path());
    let args =
        ["--profiles", "default", "--runs", "6", "--leak-check", "--go-test", "./leaky", "-run", "TestSubtestLeak"];
    let ran = hunt(&project, "sweep", &args, &env);
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert_eq!(ran.summary["failures"], 3, "iterations 2, 4 and 6: {}", ran.summary);
    assert_eq!(
        signatures(&ran.summary),
        [("exit 1: leaked goroutines blocked at leaky.go:51 (semacquire in sync.(*Mutex).Lock)".to_owned(), 3)]
    );
    let found = &flagged(&ran.attempts)[0]["hidden"][0];
    assert_eq!(found["test"], "TestSubtestLeak", "attributed to the top-level test after which it appeared");
    assert!(found["report"].as_str().unwrap().contains("TestSubtestLeak.func1"), "{found}");
}

#[test]
fn a_package_with_its_own_test_main_gets_one_line_and_runs_without_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_fixture("checks/go", dir.path());
    let env = go_env(dir.path());
    let ran = hunt(
        &project,
        "sweep",
        &["--profiles", "default", "--runs", "3", "--leak-check", "--go-test", "./ownmain"],
        &env,
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let lines: Vec<&str> = ran.stderr.lines().filter(|l| l.contains("TestMain")).collect();
    assert_eq!(lines.len(), 1, "{}", ran.stderr);
    assert!(lines[0].contains("ownmain_test.go:9") && lines[0].contains("goleak.VerifyTestMain(m)"), "{}", lines[0]);
    assert!(ran.manifest["plan"].get("checks").is_none(), "the record says the check was not on");
    assert_eq!(ran.summary["failures"], 0);
}

#[test]
fn a_suite_attributes_each_leak_to_the_test_after_which_it_appeared() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_fixture("checks/go", dir.path());
    let env = go_env(dir.path());
    // On by default in a suite.
    let ran = hunt(&project, "suite", &["--runs", "6", "--quiet", "--go-test", "./leaky"], &env);
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    let tests: Vec<(String, u64)> = ran.summary["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["id"].as_str().unwrap().to_owned(), t["failures"].as_u64().unwrap()))
        .collect();
    assert!(tests.contains(&("TestChannelLeak".to_owned(), 2)), "{tests:?}");
    assert!(tests.contains(&("TestSubtestLeak".to_owned(), 3)), "{tests:?}");
    assert!(!tests.iter().any(|(id, _)| id == "TestJoined"), "{tests:?}");
    let shuffled: Vec<&Value> = ran.attempts.iter().filter(|a| a["suite"]["role"] == "shuffled").collect();
    for a in shuffled {
        let iteration = a["iteration"].as_u64().unwrap();
        let mut found: Vec<&str> =
            a["hidden"].as_array().map(|h| h.iter().map(|f| f["test"].as_str().unwrap()).collect()).unwrap_or_default();
        found.sort_unstable();
        let mut expected = Vec::new();
        if iteration % 3 == 0 {
            expected.push("TestChannelLeak");
        }
        if iteration % 2 == 0 {
            expected.push("TestSubtestLeak");
        }
        assert_eq!(found, expected, "iteration {iteration}");
    }
}

#[test]
fn the_adaptive_hunt_checks_by_default_and_no_leak_check_turns_it_off() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_fixture("checks/go", dir.path());
    let env = go_env(dir.path());
    let target = ["--go-test", "./leaky", "-run", "TestChannelLeak"];
    let on = hunt(&project, "hunt", &[&["--budget", "60s", "--quiet"][..], &target].concat(), &env);
    assert_eq!(on.code, 1, "{}", on.stderr);
    assert_eq!(on.summary["checks"]["on"][0], "goroutine leaks");
    assert!(signatures(&on.summary)[0].0.contains("leaky.go:25 (chan send)"), "{}", on.summary);
    let off = hunt(&project, "hunt", &[&["--budget", "5s", "--quiet", "--no-leak-check"][..], &target].concat(), &env);
    assert_eq!(off.code, 0, "{}", off.stderr);
    assert_eq!(off.summary["failures"], 0);
}

#[test]
fn no_go_fixture_leaks_under_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let env = go_env(dir.path());
    // 200 attempts of the clean package: goroutines joined, ending, parked in os/signal, timers,
    // parallel tests and parallel subtests. None is a leak.
    let clean = copy_fixture("checks/go", dir.path());
    let ran = hunt(
        &clean,
        "sweep",
        &["--profiles", "default", "--runs", "200", "--leak-check", "--go-test", "./clean"],
        &env,
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert_eq!(ran.summary["attempts"], 200);
    assert_eq!(ran.summary["failures"], 0, "{}", ran.summary);
    // The other Go fixtures fail on their own iterations, never by the check.
    let ledger = copy_fixture("adapters/go-flaky", dir.path());
    let ran = hunt(
        &ledger,
        "sweep",
        &["--profiles", "default", "--runs", "8", "--leak-check", "--go-test", "./ledger"],
        &env,
    );
    assert_eq!(ran.summary["failures"], 2, "{}", ran.stderr);
    assert_eq!(ran.manifest["plan"]["checks"]["goroutine_leaks"], true);
    assert!(flagged(&ran.attempts).is_empty());
    let suite = copy_fixture("suite/go", dir.path());
    let ran = hunt(&suite, "suite", &["--runs", "6", "--quiet", "--go-test", "."], &env);
    assert_eq!(ran.manifest["plan"]["checks"]["goroutine_leaks"], true);
    assert!(flagged(&ran.attempts).is_empty(), "{:?}", flagged(&ran.attempts));
    let leaky = clean.join("leaky");
    let ran = hunt(
        &leaky,
        "sweep",
        &["--profiles", "default", "--runs", "5", "--leak-check", "--go-test", ".", "-run", "TestJoined"],
        &env,
    );
    assert_eq!(ran.summary["failures"], 0, "{}", ran.stderr);
}

#[test]
fn race_builds_with_the_race_detector_and_names_both_places_of_a_race() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_fixture("checks/go", dir.path());
    let env = go_env(dir.path());
    let ran = hunt(&project, "sweep", &["--profiles", "default", "--runs", "4", "--race", "--go-test", "./racy"], &env);
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    // Iterations 2 and 4 bump the counter from two goroutines.
    assert_eq!(ran.summary["failures"], 2, "{}", ran.summary);
    assert_eq!(
        signatures(&ran.summary),
        [("exit 1: data race between racy_test.go:15 (read) and racy_test.go:15 (write)".to_owned(), 2)]
    );
    assert_eq!(ran.manifest["plan"]["checks"]["race"], true);
    let found = &flagged(&ran.attempts)[0]["hidden"][0];
    assert_eq!(found["check"], "race");
    assert!(found["report"].as_str().unwrap().starts_with("WARNING: DATA RACE"), "{found}");
    // Without --race the same test passes every time: the race is invisible to its exit status.
    let plain = hunt(&project, "sweep", &["--profiles", "default", "--runs", "4", "--go-test", "./racy"], &env);
    assert_eq!(plain.summary["failures"], 0, "{}", plain.stderr);
}

#[test]
fn a_go_check_asked_for_another_target_is_refused_in_one_line() {
    for (option, words) in [("--race", "give --go-test PKG"), ("--leak-check", "give --go-test PKG")] {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(bin())
            .args(["sweep", "--runs", "1", option, "--record"])
            .arg(dir.path().join("rec"))
            .args(["--", "true"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{option}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(option) && stderr.contains(words), "{stderr}");
        assert!(!dir.path().join("rec").exists(), "nothing is written");
    }
}

/// The first attempt whose checks found something, and what.
fn first_found(attempts: &[Value]) -> &Value {
    &flagged(attempts).first().unwrap_or_else(|| panic!("no attempt flagged: {attempts:#?}"))["hidden"][0]
}

#[test]
fn an_exception_that_ends_a_scripts_thread_fails_the_attempt_cold_and_warm_named_where_raised() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_fixture("checks/python", dir.path());
    for mode in ["--no-warm", "--warm"] {
        let args = ["--profiles", "default,tight-gil", "--runs", "6", "--thread-check", mode, "--", "python3"];
        let ran = hunt(&project, "sweep", &[&args[..], &["thread_raises.py", "3"]].concat(), &[]);
        assert_eq!(ran.code, 1, "{}", ran.stderr);
        // Iterations 3 and 6 of each cell: the worker dies, the script exits 0.
        assert_eq!(ran.summary["failures"], 4, "{mode}: {}", ran.summary);
        assert_eq!(
            signatures(&ran.summary),
            [("exit 0: exception in a thread: ValueError at thread_raises.py:17 in work".to_owned(), 4)],
            "{mode}"
        );
        let failed: Vec<u64> =
            ran.attempts.iter().filter(|a| a["outcome"] == "fail").map(|a| a["iteration"].as_u64().unwrap()).collect();
        assert_eq!(failed.iter().filter(|i| *i % 3 == 0).count(), 4, "{failed:?}");
        let recorded = if mode == "--warm" { "warm" } else { "cold" };
        assert!(ran.attempts.iter().all(|a| a["mode"] == recorded), "{mode}");
        let found = first_found(&ran.attempts);
        assert_eq!(found["check"], "thread-exception");
        assert!(found["summary"]
            .as_str()
            .unwrap()
            .starts_with("exception in thread worker: ValueError: lost update in iteration"));
        let report = found["report"].as_str().unwrap();
        assert!(report.contains("Traceback") && report.contains("lost update"), "{report}");
        assert_eq!(ran.manifest["plan"]["checks"]["thread_exceptions"], true);
        assert_eq!(ran.summary["checks"]["failed"], 4);
        assert!(
            ran.stderr.contains("checks: exceptions in threads (--no-thread-check turns it off)"),
            "{}",
            ran.stderr
        );
        // tight-gil's own hook chains with the check's: its switch interval still applied.
        assert!(ran.stderr.contains("switch 1e-6s"), "{}", ran.stderr);
    }
    // Off (a sweep's default, or said): the exit status alone, as before.
    for off in [&[][..], &["--no-thread-check"][..]] {
        let args = [&["--profiles", "default", "--runs", "6"][..], off, &["--", "python3", "thread_raises.py", "3"]];
        let ran = hunt(&project, "sweep", &args.concat(), &[]);
        assert_eq!(ran.summary["failures"], 0, "{}", ran.stderr);
        assert!(ran.manifest["plan"]["checks"].get("thread_exceptions").is_none());
    }
}

#[test]
fn an_unraisable_exception_fails_the_attempt_named_where_raised() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_fixture("checks/python", dir.path());
    let args = ["--profiles", "default", "--runs", "4", "--thread-check", "--", "python3", "thread_raises.py", "2"];
    let ran = hunt(&project, "sweep", &[&args[..], &["unraisable"]].concat(), &[]);
    assert_eq!(ran.summary["failures"], 2, "{}", ran.stderr);
    assert_eq!(
        signatures(&ran.summary),
        [("exit 0: unraisable exception: RuntimeError at thread_raises.py:24 in __del__".to_owned(), 2)]
    );
    assert_eq!(first_found(&ran.attempts)["check"], "unraisable");
}

#[test]
fn a_pytest_tests_worker_exception_fails_its_attempt_cold_and_warm_and_a_clean_one_never() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_fixture("checks/python", dir.path());
    for mode in ["--no-warm", "--warm"] {
        let args = ["--profiles", "default", "--thread-check", mode];
        let ran = hunt(
            &project,
            "sweep",
            &[&args[..], &["--runs", "6", "--pytest", "test_worker.py::test_raises"]].concat(),
            &[],
        );
        assert_eq!(ran.summary["failures"], 2, "{mode}: {}", ran.stderr);
        // pytest fails the test with its warning made an error; the signature names the
        // exception behind it and where it was raised, as for a script.
        assert_eq!(
            signatures(&ran.summary),
            [("exit 1: exception in a thread: ValueError at test_worker.py:16 in work".to_owned(), 2)],
            "{mode}"
        );
        let found = first_found(&ran.attempts);
        assert_eq!(found["check"], "thread-exception");
        assert_eq!(found["test"], "test_worker.py::test_raises");
        assert_eq!(found["runner_failed"], true);
        let summary = found["summary"].as_str().unwrap();
        assert!(summary.starts_with("exception in thread Thread-"), "{summary}");
        assert!(
            summary.ends_with("ValueError: lost update in iteration 3, raised at test_worker.py:16 in work"),
            "{summary}"
        );
        assert!(found["report"].as_str().unwrap().contains("Traceback"), "{found}");
        assert_eq!(ran.summary["checks"]["failed"], 2, "{mode}: the note counts them");
        let argv = ran.manifest["target"]["argv"].as_array().unwrap();
        assert!(argv.iter().any(|a| a == "-Werror::pytest.PytestUnhandledThreadExceptionWarning"), "{argv:?}");
        let unraisable = hunt(
            &project,
            "sweep",
            &[&args[..], &["--runs", "4", "--pytest", "test_worker.py::test_unraisable"]].concat(),
            &[],
        );
        assert_eq!(
            signatures(&unraisable.summary),
            [("exit 1: unraisable exception: RuntimeError at test_worker.py:29 in __del__".to_owned(), 2)],
            "{mode}: {}",
            unraisable.stderr
        );
        assert_eq!(first_found(&unraisable.attempts)["check"], "unraisable");
        let clean = hunt(
            &project,
            "sweep",
            &[&args[..], &["--runs", "12", "--pytest", "test_worker.py::test_clean"]].concat(),
            &[],
        );
        assert_eq!(clean.summary["failures"], 0, "{mode}: {}", clean.stderr);
    }
    for test in ["test_worker.py::test_raises", "test_worker.py::test_unraisable"] {
        let off = hunt(&project, "sweep", &["--profiles", "default", "--runs", "3", "--pytest", test], &[]);
        assert_eq!(off.summary["failures"], 0, "{test}: {}", off.stderr);
    }
}

#[test]
fn the_suite_checks_pytest_threads_by_default_and_no_thread_check_turns_it_off() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_fixture("checks/python", dir.path());
    let on = hunt(&project, "suite", &["--runs", "3", "--quiet", "--pytest", "test_worker.py"], &[]);
    assert_eq!(on.manifest["plan"]["checks"]["thread_exceptions"], true, "{}", on.stderr);
    let options = on.manifest["extra"]["suite"]["runner"]["pytest"]["options"].to_string();
    assert!(options.contains("PytestUnhandledThreadExceptionWarning"), "{:#}", on.manifest["extra"]);
    // Iteration 2 fails test_unraisable, iteration 3 test_raises: each test's message names the
    // exception behind pytest's warning, and where it was raised.
    let tests: Vec<(String, u64, String)> = on.summary["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let id = t["id"].as_str().unwrap().to_owned();
            (id, t["failures"].as_u64().unwrap(), t["message"].as_str().unwrap_or_default().to_owned())
        })
        .collect();
    assert_eq!(tests.len(), 2, "{tests:?}");
    for (id, failures, message) in &tests {
        assert_eq!(*failures, 1, "{id}");
        match id.as_str() {
            "test_worker.py::test_raises" => {
                assert!(message.ends_with("ValueError: lost update in iteration 3, raised at test_worker.py:16 in work"))
            }
            "test_worker.py::test_unraisable" => assert!(
                message.starts_with("unraisable exception (Exception ignored in: <function Connection.__del__")
                    && message.ends_with(
                        "RuntimeError: connection closed twice in iteration 2, raised at test_worker.py:29 in __del__"
                    ),
                "{message}"
            ),
            other => panic!("{other} failed: {tests:?}"),
        }
    }
    assert_eq!(on.summary["checks"]["failed"], 2, "{}", on.summary);
    let off =
        hunt(&project, "suite", &["--runs", "3", "--quiet", "--no-thread-check", "--pytest", "test_worker.py"], &[]);
    assert!(off.manifest["plan"]["checks"].get("thread_exceptions").is_none());
    assert_eq!(off.summary["tests"], serde_json::json!([]), "{}", off.stderr);
}

#[test]
fn no_clean_python_fixture_is_flagged_by_the_thread_check() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_fixture("checks/python", dir.path());
    // 200 attempts of a script whose four workers never raise.
    let ran = hunt(
        &project,
        "sweep",
        &["--profiles", "default", "--runs", "200", "--thread-check", "--warm", "--", "python3", "clean.py"],
        &[],
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert_eq!(ran.summary["attempts"], 200);
    assert_eq!(ran.summary["failures"], 0, "{}", ran.summary);
    // A script that fails on its own is named by its own failure, not by the check.
    let fails = hunt(
        &project,
        "sweep",
        &["--profiles", "default", "--runs", "2", "--thread-check", "--", "python3", "-c", "raise SystemExit(3)"],
        &[],
    );
    assert_eq!(fails.summary["failures"], 2);
    assert!(flagged(&fails.attempts).is_empty());
}

/// `CARGO_TARGET_DIR` for a copy of a Rust fixture in `dir`, so its build stays out of the tree.
fn cargo_env(dir: &Path) -> [(&'static str, PathBuf); 1] {
    [("CARGO_TARGET_DIR", dir.join("target"))]
}

#[test]
fn a_rust_tests_thread_that_panics_fails_the_attempt_named_by_its_message_and_place() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_fixture("checks/rust", dir.path());
    let env = cargo_env(dir.path());
    let args = ["--profiles", "default", "--runs", "6", "--thread-check", "--cargo-test", "worker_panics"];
    let on = hunt(&project, "sweep", &args, &env);
    assert_eq!(on.code, 1, "{}", on.stderr);
    // Iterations 3 and 6: the worker panics, the test passes (exit 0).
    let failed: Vec<u64> =
        on.attempts.iter().filter(|a| a["outcome"] == "fail").map(|a| a["iteration"].as_u64().unwrap()).collect();
    assert_eq!(failed, [3, 6], "{}", on.stderr);
    assert_eq!(
        signatures(&on.summary),
        [("exit 0: panic in a thread: lost update in iteration <n> at src/lib.rs:17:13".to_owned(), 2)]
    );
    let found = first_found(&on.attempts);
    assert_eq!(found["check"], "thread-panic");
    assert_eq!(found["test"], "tests::worker_panics");
    assert_eq!(found["summary"], "thread '<unnamed>' panicked at src/lib.rs:17:13: lost update in iteration 3");
    assert!(found["report"].as_str().unwrap().contains("lost update in iteration 3"), "{found}");
    assert_eq!(on.manifest["plan"]["checks"]["thread_panics"], true);
    assert!(on.manifest["plan"]["checks"].get("thread_exceptions").is_none(), "a Rust target has no Python hook");
    assert!(on.manifest["target"]["argv"].as_array().unwrap().iter().any(|a| a == "--show-output"));
    assert_eq!(on.summary["checks"]["failed"], 2);
    assert!(on.stderr.contains("checks: panics in threads (--no-thread-check turns it off)"), "{}", on.stderr);
    assert!(
        on.stderr.contains("thread check, after tests::worker_panics: thread '<unnamed>' panicked"),
        "{}",
        on.stderr
    );

    // A named thread, which the test waits for through a channel it never asks about.
    let args =
        ["--profiles", "default", "--runs", "4", "--thread-check", "--cargo-test", "named_writer_dies_unnoticed"];
    let named = hunt(&project, "sweep", &args, &env);
    assert_eq!(
        signatures(&named.summary),
        [("exit 0: panic in a thread: ledger writer gave up at entry <n> at src/lib.rs:45:17".to_owned(), 2)]
    );
    assert!(first_found(&named.attempts)["summary"].as_str().unwrap().starts_with("thread 'ledger-writer' panicked"));

    // Off (a sweep's default, or said): the exit status alone, as before, and libtest as before.
    for off in [&[][..], &["--no-thread-check"][..]] {
        let args = [&["--profiles", "default", "--runs", "6"][..], off, &["--cargo-test", "worker_panics"]].concat();
        let ran = hunt(&project, "sweep", &args, &env);
        assert_eq!((ran.code, ran.summary["failures"].as_u64()), (0, Some(0)), "{}", ran.stderr);
        assert!(ran.manifest["plan"].get("checks").is_none());
        assert!(!ran.manifest["target"]["argv"].as_array().unwrap().iter().any(|a| a == "--show-output"));
    }
}

#[test]
fn a_panic_a_rust_test_means_is_never_flagged_and_a_propagated_one_names_its_thread() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_fixture("checks/rust", dir.path());
    let env = cargo_env(dir.path());
    // The test's own thread panics by design (#[should_panic]), or catches its panic on
    // purpose; a spawned thread panics on purpose (a `panic!` in the test's code) to poison a
    // lock; joined workers print and never panic.
    for test in ["panics_by_design", "poisons_a_lock_on_purpose", "catches_its_own_panic", "joined_workers"] {
        let args = ["--profiles", "default", "--runs", "12", "--thread-check", "--cargo-test", test];
        let ran = hunt(&project, "sweep", &args, &env);
        assert_eq!((ran.code, ran.summary["failures"].as_u64()), (0, Some(0)), "{test}: {}", ran.stderr);
        assert_eq!(ran.manifest["plan"]["checks"]["thread_panics"], true);
        assert!(flagged(&ran.attempts).is_empty(), "{test}");
    }
    // A scoped thread's panic reaches its test, which fails by itself (iterations 4 and 8):
    // named by the worker's panic, not by "a scoped thread panicked", and not the check's doing.
    let args = ["--profiles", "default", "--runs", "8", "--thread-check", "--cargo-test", "scoped_worker"];
    let ran = hunt(&project, "sweep", &args, &env);
    assert_eq!(
        signatures(&ran.summary),
        [("exit 101: tests::scoped_worker: scoped worker failed in iteration <n>".to_owned(), 2)],
        "{}",
        ran.stderr
    );
    assert!(flagged(&ran.attempts).is_empty());
    assert_eq!(ran.summary["checks"]["failed"], 0);
}

#[test]
fn a_rust_suite_fails_the_test_whose_thread_panicked_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_fixture("checks/rust", dir.path());
    let env = cargo_env(dir.path());
    let tests_of = |ran: &Ran| -> Vec<(String, u64)> {
        let mut tests: Vec<(String, u64)> = ran.summary["tests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t["id"].as_str().unwrap().to_owned(), t["failures"].as_u64().unwrap()))
            .collect();
        tests.sort();
        tests
    };
    let on = hunt(&project, "suite", &["--runs", "6", "--quiet", "--cargo-test"], &env);
    assert_eq!(on.code, 1, "{}", on.stderr);
    assert_eq!(on.manifest["plan"]["checks"]["thread_panics"], true);
    assert_eq!(on.manifest["extra"]["suite"]["runner"]["show_output"], true);
    assert_eq!(
        tests_of(&on),
        [
            ("tests::named_writer_dies_unnoticed".to_owned(), 3),
            ("tests::scoped_worker".to_owned(), 1),
            ("tests::worker_panics".to_owned(), 2)
        ],
        "{}",
        on.stderr
    );
    // Each shuffled attempt's findings name the tests whose threads panicked in it, and those
    // tests failed in it with the panic as their message.
    for a in on.attempts.iter().filter(|a| a["suite"]["role"] == "shuffled") {
        let iteration = a["iteration"].as_u64().unwrap();
        let mut found: Vec<&str> =
            a["hidden"].as_array().map(|h| h.iter().map(|f| f["test"].as_str().unwrap()).collect()).unwrap_or_default();
        found.sort_unstable();
        let mut expected = Vec::new();
        if iteration % 2 == 0 {
            expected.push("tests::named_writer_dies_unnoticed");
        }
        if iteration % 3 == 0 {
            expected.push("tests::worker_panics");
        }
        assert_eq!(found, expected, "iteration {iteration}");
        if iteration == 3 {
            assert_eq!(a["exit_code"], 0);
            assert_eq!(a["outcome"], "fail");
            let result = a["suite"]["tests"].as_array().unwrap().iter().find(|t| t["id"] == "tests::worker_panics");
            let message = result.unwrap()["message"].as_str().unwrap();
            assert!(message.starts_with("thread '<unnamed>' panicked at src/lib.rs:17:13"), "{message}");
        }
    }
    // Off: only the test that fails by itself.
    let off = hunt(&project, "suite", &["--runs", "6", "--quiet", "--no-thread-check", "--cargo-test"], &env);
    assert!(off.manifest["plan"].get("checks").is_none());
    assert!(off.manifest["extra"]["suite"]["runner"].get("show_output").is_none());
    assert_eq!(tests_of(&off), [("tests::scoped_worker".to_owned(), 1)], "{}", off.stderr);
}

#[test]
fn the_adaptive_hunt_checks_rust_threads_by_default_and_no_clean_rust_test_is_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_fixture("checks/rust", dir.path());
    let env = cargo_env(dir.path());
    let on = hunt(&project, "hunt", &["--budget", "60s", "--quiet", "--cargo-test", "worker_panics"], &env);
    assert_eq!(on.code, 1, "{}", on.stderr);
    assert_eq!(on.summary["checks"]["on"], serde_json::json!(["panics in threads"]));
    assert!(
        signatures(&on.summary)[0].0.contains("lost update in iteration <n> at src/lib.rs:17:13"),
        "{}",
        on.summary
    );
    let off = hunt(
        &project,
        "hunt",
        &["--budget", "5s", "--quiet", "--no-thread-check", "--cargo-test", "worker_panics"],
        &env,
    );
    assert_eq!((off.code, off.summary["failures"].as_u64()), (0, Some(0)), "{}", off.stderr);
    // The negative control's clean threads, 200 attempts under the check.
    let clean = dir.path().join("cargo-clean");
    let status = std::process::Command::new("cp").arg("-r").arg(fixture("controls/cargo-clean")).arg(&clean).status();
    assert!(status.unwrap().success());
    for test in ["threads_sum", "channel_sum"] {
        let args = ["--profiles", "default", "--runs", "200", "--thread-check", "--cargo-test", test];
        let ran = hunt(&clean, "sweep", &args, &env);
        assert_eq!(ran.code, 0, "{}", ran.stderr);
        assert_eq!((ran.summary["attempts"].as_u64(), ran.summary["failures"].as_u64()), (Some(200), Some(0)));
        assert_eq!(ran.manifest["plan"]["checks"]["thread_panics"], true);
    }
}
