//! Adversarial tests of warm attempts: targets whose start-up leaves the warm parent unfit to
//! fork from (threads, processes, SIGCHLD, a switch interval of their own) and a parent that
//! dies under an attempt. The rule each test checks: warm mode never changes a verdict, so warm
//! and cold hunts of the same deterministic fixture conclude alike, and flakehunt's own helper
//! dying is never the target's failure. Needs python3 with pytest (as CI has).

use std::path::PathBuf;

use serde_json::Value;

use crate::harness::{poll_until, Hunt, POLL_LIMIT};

fn write(hunt: &Hunt, name: &str, text: &str) -> PathBuf {
    let path = hunt.scratch(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// (outcome, mode) of each attempt, in id order.
fn outcomes(attempts: &[Value]) -> Vec<(String, String)> {
    let mut sorted: Vec<&Value> = attempts.iter().collect();
    sorted.sort_by_key(|a| a["id"].as_u64());
    sorted.iter().map(|a| (a["outcome"].as_str().unwrap().to_owned(), a["mode"].as_str().unwrap().to_owned())).collect()
}

fn outcome_list(attempts: &[Value]) -> Vec<String> {
    outcomes(attempts).into_iter().map(|(o, _)| o).collect()
}

/// Runs the same sweep warm and with --no-warm, each in its own scratch directory with the
/// files `files` (the first is the script run); returns both runs.
fn warm_and_cold(sweep: &[&str], files: &[(&str, &str)]) -> [crate::harness::Run; 2] {
    ["--warm", "--no-warm"].map(|mode| {
        let hunt = Hunt::sweep().args(sweep).args([mode]);
        let paths: Vec<PathBuf> = files.iter().map(|(name, text)| write(&hunt, name, text)).collect();
        hunt.command(["python3", paths[0].to_str().unwrap()]).run()
    })
}

#[test]
fn a_lock_held_by_a_thread_of_the_thread_module_at_import_gives_the_same_verdict_warm_and_cold() {
    // The thread holds the lock for a moment at a time; a plain run always gets it. A fork made
    // while the thread held it would wait forever (the thread is not in the fork).
    let module = r#"
import _thread, threading
lock = _thread.allocate_lock()
def churn():
    while True:
        with lock:
            threading.Event().wait(0.001)
_thread.start_new_thread(churn, ())
"#;
    let script = "import sys, churns\nsys.exit(0 if churns.lock.acquire(timeout=10) else 1)\n";
    let [warm, cold] = warm_and_cold(
        &["--profiles", "default", "--runs", "4", "--timeout", "60s"],
        &[("takes.py", script), ("churns.py", module)],
    );
    for run in [&warm, &cold] {
        run.expect_code(0);
        assert_eq!(outcome_list(&run.attempts()), ["pass"; 4], "{}", run.stderr);
    }
    assert!(warm.stderr.contains("warm mode refused: a module started a thread at import: thread "), "{}", warm.stderr);
    warm.expect_nothing_left();
}

#[test]
fn sigchld_ignored_at_import_is_no_crash_warm_and_copies_stay_warm() {
    let module = "import signal\nsignal.signal(signal.SIGCHLD, signal.SIG_IGN)\n";
    let script =
        "import ignores, signal, sys\nsys.exit(0 if signal.getsignal(signal.SIGCHLD) == signal.SIG_IGN else 1)\n";
    let [warm, cold] = warm_and_cold(
        &["--profiles", "default,copies=2", "--runs", "3"],
        &[("serves.py", script), ("ignores.py", module)],
    );
    for run in [&warm, &cold] {
        run.expect_code(0);
        assert_eq!(outcome_list(&run.attempts()), ["pass"; 6], "{}", run.stderr);
    }
    assert!(outcomes(&warm.attempts()).iter().all(|(_, m)| m == "warm"), "{}", warm.stderr);
}

#[test]
fn a_multiprocessing_child_started_at_import_hangs_warm_as_cold() {
    // multiprocessing joins its children at exit: every plain run of this hangs. A fork of a
    // parent that started the child would not (the child is not the fork's).
    let module = "import multiprocessing, threading\ndef forever():\n    threading.Event().wait()\n\
                  child = multiprocessing.Process(target=forever)\nchild.start()\n";
    let [warm, cold] = warm_and_cold(
        &["--profiles", "default", "--runs", "1", "--timeout", "3s", "--grace", "1s"],
        &[("joins.py", "import starts\n"), ("starts.py", module)],
    );
    for run in [&warm, &cold] {
        run.expect_code(1);
        assert_eq!(outcome_list(&run.attempts()), ["timeout"], "{}", run.stderr);
        run.expect_nothing_left();
    }
    assert!(warm.stderr.contains("warm mode refused: the target's start-up left a process running"), "{}", warm.stderr);
}

#[test]
fn a_process_forked_at_import_is_a_leak_warm_as_cold() {
    let module = "import os, threading\nif os.fork() == 0:\n    threading.Event().wait()\n";
    let [warm, cold] = warm_and_cold(
        &["--profiles", "default", "--runs", "2"],
        &[("leaks.py", "import forks\n"), ("forks.py", module)],
    );
    for run in [&warm, &cold] {
        assert_eq!(outcome_list(&run.attempts()), ["leak"; 2], "{}", run.stderr);
        run.expect_nothing_left();
    }
}

#[test]
fn a_switch_interval_set_at_import_is_what_the_target_ran_with_and_tight_gil_is_inert_warm_and_cold() {
    let module = "import sys\nsys.setswitchinterval(0.005)\n";
    let script = "import sets, sys\nsys.exit(0 if sys.getswitchinterval() == 0.005 else 1)\n";
    let [warm, cold] =
        warm_and_cold(&["--profiles", "tight-gil", "--runs", "2"], &[("reads.py", script), ("sets.py", module)]);
    for run in [&warm, &cold] {
        run.expect_code(0);
        for a in run.attempts() {
            assert_eq!(a["outcome"], "pass", "{a:#}");
            assert_eq!(a["effect"]["switch_interval"], 0.005, "the interval it ran with: {a:#}");
            let inert = a["effect"]["inert"].as_str().unwrap_or_default();
            assert!(inert.starts_with("the program sets its own switch interval (5e-3 s)"), "{a:#}");
        }
    }
    assert!(outcomes(&warm.attempts()).iter().all(|(_, m)| m == "warm"), "{}", warm.stderr);
    // A program that leaves the interval alone runs with the profile's, and it is not inert.
    let hunt = Hunt::sweep().args(["--profiles", "tight-gil", "--runs", "1", "--warm"]);
    let plain = write(&hunt, "plain.py", "import sys\nsys.exit(0 if sys.getswitchinterval() < 1e-5 else 1)\n");
    let run = hunt.command(["python3", plain.to_str().unwrap()]).run();
    run.expect_code(0);
    let a = &run.attempts()[0];
    assert_eq!((a["effect"]["switch_interval"].as_f64(), a["effect"].get("inert")), (Some(1e-6), None), "{a:#}");
}

#[test]
fn an_attempt_whose_warm_parent_dies_is_run_again_cold_and_recorded_so() {
    // Iteration 2 kills the process that forked it when that is a warm parent (a plain run's
    // parent is flakehunt, which it leaves alone), then ends well: the attempt passed.
    let script = r#"
import os, signal
with open("/proc/%d/cmdline" % os.getppid(), "rb") as f:
    warm = f.read().split(b"\0")[1].endswith(b"/parent.py")
if os.environ["FLAKEHUNT_ITERATION"] == "2" and warm:
    os.kill(os.getppid(), signal.SIGKILL)
print("done")
"#;
    let hunt = Hunt::sweep().args(["--profiles", "default", "--runs", "4", "--warm"]);
    let path = write(&hunt, "kills.py", script);
    let run = hunt.command(["python3", path.to_str().unwrap()]).run();
    run.expect_code(0);
    let attempts = run.attempts();
    assert_eq!(outcome_list(&attempts), ["pass"; 4], "{}", run.stderr);
    let second = attempts.iter().find(|a| a["iteration"] == 2).unwrap();
    assert_eq!(
        (second["mode"].as_str(), second["rerun"].as_str()),
        (Some("cold"), Some("the warm parent died (killed by SIGKILL)"))
    );
    assert_eq!(
        run.stderr.matches("the warm parent died (killed by SIGKILL) while attempt 1 ran").count(),
        1,
        "{}",
        run.stderr
    );
    assert_eq!(run.summary()["modes"]["rerun"], 1, "{:#}", run.summary());
    run.expect_nothing_left();
}

#[test]
fn a_sigkilled_warm_hunt_leaves_no_warm_parent_directory() {
    let tmpdir = tempfile::tempdir().unwrap();
    let hunt = Hunt::sweep().default_only().args(["--runs", "3", "--warm"]).env("TMPDIR", tmpdir.path());
    let started = hunt.scratch("started");
    let script = write(
        &hunt,
        "waits.py",
        &format!("import threading\nopen({:?}, 'w').close()\nthreading.Event().wait()\n", started.to_str().unwrap()),
    );
    let mut flakehunt = hunt.command(["python3", script.to_str().unwrap()]).spawn();
    poll_until("the first attempt to start", POLL_LIMIT, || started.exists());
    let warm_dirs = || {
        std::fs::read_dir(tmpdir.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("flakehunt-warm-"))
            .count()
    };
    assert_eq!(warm_dirs(), 1, "the warm parent's directory is in TMPDIR");
    flakehunt.signal(libc::SIGKILL);
    let run = flakehunt.finish();
    poll_until("the watchdog to remove the warm parent's directory", POLL_LIMIT, || warm_dirs() == 0);
    run.expect_nothing_left();
}
