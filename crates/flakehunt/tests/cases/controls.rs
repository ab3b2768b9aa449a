//! Negative controls end to end: the clean targets of `fixtures/controls/` (pytest threads, a
//! pytest test behind a slow import and session fixture, a 2 s test, the same threads as a
//! script, Go goroutines, Rust threads, C pthreads) hunted with the default settings and a small
//! budget. None of them ever fails, so every attempt passes or ends `slow` (flakehunt's own limit
//! while the target was still at work: no evidence), and the verdict is `not-reproduced`, exit 0,
//! whatever the machine's load. `scripts/bench-false-alarms.sh` runs the same controls with
//! budgets of a minute and more, under several seeds, through `hunt`, `sweep` and `suite`.

use std::path::PathBuf;
use std::process::Output;

use serde_json::Value;

use crate::harness::{attempts_in, fixture, flakehunt, go_env, stderr_of, summary_of};

/// A copy of `fixtures/controls/` in a fresh directory: building the Go and Rust tests, and
/// pytest's caches, write beside them.
struct Controls {
    tmp: tempfile::TempDir,
}

impl Controls {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let status =
            std::process::Command::new("cp").arg("-r").arg(fixture("controls")).arg(tmp.path()).status().unwrap();
        assert!(status.success());
        Self { tmp }
    }

    fn dir(&self, sub: &str) -> PathBuf {
        self.tmp.path().join("controls").join(sub)
    }

    /// `flakehunt TOOL ARGS...` run in `controls/SUB` with `env`, recording into `rec` there.
    fn run(&self, sub: &str, env: &[(&str, PathBuf)], args: &[&str]) -> Hunted {
        let dir = self.dir(sub);
        let (tool, args) = args.split_first().unwrap();
        let out = flakehunt()
            .current_dir(&dir)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .args([tool, "--json", "-q", "--record", "rec"])
            .args(args)
            .output();
        let mut attempts = attempts_in(&dir.join("rec"));
        attempts.sort_by_key(|a| a["id"].as_u64());
        let summary = summary_of(&out);
        Hunted { out, summary, attempts }
    }
}

struct Hunted {
    out: Output,
    summary: Value,
    attempts: Vec<Value>,
}

impl Hunted {
    /// What each attempt was, for failure messages: cell, mode, outcome, seconds, hang limit.
    fn table(&self) -> String {
        let mut t = stderr_of(&self.out);
        for a in &self.attempts {
            t.push_str(&format!(
                "\n#{} {} {} {} {:.3}s limit {}",
                a["id"],
                a["cell"],
                a["mode"],
                a["outcome"],
                a["seconds"].as_f64().unwrap_or(0.0),
                a["hang"]["limit"]
            ));
        }
        t
    }

    /// No alarm: exit 0, `not-reproduced`, no reproduction, and no attempt that failed in any
    /// way (a clean target never fails; a `timeout` of one would be flakehunt's own limit).
    fn expect_no_false_alarm(&self) -> &Self {
        assert_eq!(self.out.status.code(), Some(0), "{}", self.table());
        assert_eq!(self.summary["verdict"], "not-reproduced", "{:#}\n{}", self.summary, self.table());
        assert!(self.summary["reproduction"].is_null(), "{:#}", self.summary);
        assert_eq!(self.summary["failures"], 0, "{}", self.table());
        assert!(!self.attempts.is_empty(), "{}", self.table());
        for a in &self.attempts {
            assert!(a["outcome"] == "pass" || a["outcome"] == "slow", "{a:#}\n{}", self.table());
        }
        // The table never counts a timeout or failure under a mechanism it calls inert.
        for c in self.summary["cells"].as_array().unwrap() {
            assert_eq!(c["failures"], 0, "{c:#}");
            assert_eq!(c["outcomes"]["timeout"], 0, "{c:#}");
        }
        self
    }

    /// Each cold attempt judged by a hang limit in a hunt that also ran warm got one at least as
    /// long as a cold start, as calibration measured it: never a limit from warm attempts.
    fn expect_cold_limits_above_a_cold_start(&self) {
        let Some(cold_start) = self.summary["details"]["calibration"]["cold_start"]["seconds"].as_f64() else {
            return;
        };
        for a in self.attempts.iter().filter(|a| a["mode"] == "cold" && a["phase"] != "calibrate") {
            if let Some(limit) = a["hang"]["limit"].as_f64() {
                assert!(limit >= cold_start, "cold start {cold_start} s\n{a:#}\n{}", self.table());
            }
        }
    }
}

fn python() -> String {
    let out = std::process::Command::new("python3").args(["-c", "import sys; print(sys.executable)"]).output();
    let out = out.expect("python3 is installed (CI installs it)");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[test]
fn a_clean_pytest_test_with_threads_is_not_reproduced_though_its_jitter_arms_run_cold() {
    // Warm attempts are forks of a parent that imported pytest; the jitter arms run cold and
    // pay the interpreter's and pytest's start-up, far longer than any warm attempt.
    let c = Controls::new();
    let py = python();
    let h = c.run(
        "pytest",
        &[],
        &[
            "hunt",
            "--budget",
            "30s",
            "--seed",
            "11",
            "--python",
            &py,
            "--pytest",
            "test_clean_threads.py::test_threads_sum",
        ],
    );
    h.expect_no_false_alarm().expect_cold_limits_above_a_cold_start();
    assert!(h.attempts.iter().any(|a| a["mode"] == "warm"), "{}", h.table());
}

#[test]
fn a_clean_pytest_test_behind_a_slow_import_and_session_fixture_is_not_reproduced() {
    // 1.5 s of CPU to import a module, 0.5 s for a session fixture: seconds per cold start,
    // milliseconds per warm attempt.
    let c = Controls::new();
    let py = python();
    let h = c.run(
        "pytest",
        &[],
        &[
            "hunt",
            "--budget",
            "40s",
            "--seed",
            "12",
            "--python",
            &py,
            "--pytest",
            "test_slow_start.py::test_after_slow_start",
        ],
    );
    h.expect_no_false_alarm().expect_cold_limits_above_a_cold_start();
    let cold_start = h.summary["details"]["calibration"]["cold_start"]["seconds"].as_f64();
    assert!(cold_start.is_some_and(|s| s >= 1.5), "{:#}", h.summary["details"]["calibration"]);
}

#[test]
fn a_clean_pytest_test_that_runs_for_two_seconds_is_not_reproduced() {
    let c = Controls::new();
    let py = python();
    let h = c.run(
        "pytest",
        &[],
        &[
            "hunt",
            "--budget",
            "30s",
            "--seed",
            "13",
            "--python",
            &py,
            "--pytest",
            "test_two_seconds.py::test_two_seconds",
        ],
    );
    h.expect_no_false_alarm().expect_cold_limits_above_a_cold_start();
}

#[test]
fn a_clean_threaded_script_is_not_reproduced() {
    let c = Controls::new();
    let py = python();
    let script = c.dir("clean_threads.py");
    let h = c.run("", &[], &["hunt", "--budget", "20s", "--seed", "14", "--", &py, script.to_str().unwrap()]);
    h.expect_no_false_alarm().expect_cold_limits_above_a_cold_start();
}

#[test]
fn a_clean_c_program_with_pthreads_is_not_reproduced_under_jitter() {
    // 80,000 lock/unlock pairs, each intercepted under jitter: the program runs many times
    // longer there, and is still correct.
    let c = Controls::new();
    let program = c.dir("c/mutex_counter");
    let status = std::process::Command::new("cc")
        .args(["-O2", "-pthread", "-o"])
        .arg(&program)
        .arg(c.dir("c/mutex_counter.c"))
        .status()
        .expect("cc is installed (CI installs gcc)");
    assert!(status.success());
    let h = c.run("c", &[], &["hunt", "--budget", "30s", "--seed", "15", "--", program.to_str().unwrap()]);
    h.expect_no_false_alarm();
    // Every jitter attempt that ran to its end says how many delays it injected; one ended
    // by flakehunt's limit says nothing, and never makes its arm inert.
    for a in h.attempts.iter().filter(|a| a["cell"].as_str().is_some_and(|c| c.starts_with("jitter"))) {
        if a["outcome"] == "pass" {
            assert!(a["effect"]["jitter_delays"].as_u64().is_some_and(|n| n > 0), "{a:#}");
        }
        assert!(a["effect"]["inert"].is_null(), "{a:#}");
    }
}

#[test]
fn a_clean_go_test_with_goroutines_is_not_reproduced() {
    let c = Controls::new();
    let env = go_env(c.tmp.path());
    let h = c.run(
        "go",
        &env,
        &["hunt", "--budget", "20s", "--seed", "16", "--go-test", ".", "-run", "TestCleanGoroutines"],
    );
    h.expect_no_false_alarm();
}

#[test]
fn a_clean_rust_test_with_threads_is_not_reproduced() {
    let c = Controls::new();
    let env = [("CARGO_TARGET_DIR", c.tmp.path().join("target"))];
    let h = c.run("cargo-clean", &env, &["hunt", "--budget", "20s", "--seed", "17", "--cargo-test", "threads_sum"]);
    h.expect_no_false_alarm();
}

#[test]
fn a_suite_of_clean_pytest_tests_finds_no_failing_test() {
    let c = Controls::new();
    let py = python();
    let h = c.run(
        "pytest",
        &[],
        &[
            "suite",
            "--budget",
            "30s",
            "--seed",
            "18",
            "--python",
            &py,
            "--pytest",
            "test_clean_threads.py",
            "test_slow_start.py",
        ],
    );
    h.expect_no_false_alarm();
}

#[test]
fn a_script_that_handles_its_threads_exception_with_its_own_excepthook_is_not_flagged() {
    let c = Controls::new();
    let py = python();
    let script = c.dir("own_excepthook.py");
    let h = c.run("", &[], &["hunt", "--budget", "15s", "--seed", "19", "--", &py, script.to_str().unwrap()]);
    h.expect_no_false_alarm();
    assert!(h.attempts.iter().all(|a| a["hidden"].is_null()), "{}", h.table());
}

#[test]
fn a_pytest_test_that_handles_its_threads_exception_with_its_own_excepthook_is_not_flagged() {
    let c = Controls::new();
    let py = python();
    let node = "test_own_excepthook.py::test_worker_error_is_handled";
    let h = c.run("pytest", &[], &["hunt", "--budget", "15s", "--seed", "20", "--python", &py, "--pytest", node]);
    h.expect_no_false_alarm();
}
