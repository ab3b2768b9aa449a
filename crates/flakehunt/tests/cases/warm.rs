//! Warm attempts (`--warm`) through the binary: each attempt a fork of a Python parent that
//! imported the target once, with everything a cold attempt has (profile, overlay, rlimits,
//! timeout and tree kill, leak detection, the watchdog), recorded with its `mode`; the targets
//! it cannot serve run cold, said once. Needs python3 with pytest (as CI has).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::harness::{attempts_in, grandchild_pid, has_cpus, is_dead, poll_until, Hunt, POLL_LIMIT};

/// Writes `text` to `name` in the hunt's scratch directory; returns its path.
fn write(hunt: &Hunt, name: &str, text: &str) -> PathBuf {
    let path = hunt.scratch(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn modes(attempts: &[Value]) -> Vec<&str> {
    attempts.iter().map(|a| a["mode"].as_str().expect("every attempt has a mode")).collect()
}

fn all_warm(attempts: &[Value]) -> bool {
    !attempts.is_empty() && modes(attempts).iter().all(|m| *m == "warm")
}

/// (iteration, outcome) of each attempt, in iteration order.
fn results(attempts: &[Value]) -> Vec<(u64, String)> {
    let mut r: Vec<(u64, String)> = attempts
        .iter()
        .map(|a| (a["iteration"].as_u64().unwrap(), a["outcome"].as_str().unwrap().to_owned()))
        .collect();
    r.sort();
    r
}

const EVERY_THIRD: &str = r#"
import os

def test_every_third_iteration_fails():
    assert int(os.environ["FLAKEHUNT_ITERATION"]) % 3 != 0
"#;

/// A pytest hunt of `test_every_third.py` in the hunt's scratch directory, run from there.
fn pytest_hunt(mode: &str) -> Hunt {
    let hunt = Hunt::sweep().default_only().args(["--runs", "6", mode]);
    let test = write(&hunt, "test_every_third.py", EVERY_THIRD);
    let dir = test.parent().unwrap().to_owned();
    hunt.command([
        "python3",
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--rootdir",
        dir.to_str().unwrap(),
        test.to_str().unwrap(),
    ])
}

#[test]
fn warm_and_cold_attempts_give_the_same_results_on_a_deterministic_fixture() {
    let warm = pytest_hunt("--warm").run();
    warm.expect_code(1);
    let cold = pytest_hunt("--no-warm").run();
    cold.expect_code(1);
    let (w, c) = (warm.attempts(), cold.attempts());
    assert!(all_warm(&w), "{:?}\n{}", modes(&w), warm.stderr);
    assert!(modes(&c).iter().all(|m| *m == "cold"), "{:?}", modes(&c));
    assert_eq!(results(&w), results(&c));
    let failed: Vec<u64> = results(&w).into_iter().filter(|(_, o)| o == "fail").map(|(i, _)| i).collect();
    assert_eq!(failed, [3, 6]);
    // The same failure signature (the test's assertion), from the same capture code; each hunt
    // has a scratch directory of its own, whose random name is in the test's node id.
    let signature = |h: &Value| {
        let s = h["signatures"][0]["signature"].as_str().unwrap_or_default().to_owned();
        s.rsplit_once('/').map_or(s.clone(), |(_, test)| test.to_owned())
    };
    assert_eq!(signature(&warm.summary()), signature(&cold.summary()));
    // The plan records warm mode (so --resume runs warm); the summary compares nothing cold.
    assert!(warm.manifest()["plan"]["warm"].is_object(), "{:#}", warm.manifest());
    assert!(cold.manifest()["plan"].get("warm").is_none());
    assert_eq!(warm.summary()["modes"]["warm"]["failures"], 2);
    assert!(cold.summary().get("modes").is_none());
    warm.expect_nothing_left();
}

#[test]
fn the_profile_applies_to_the_forked_child() {
    if !has_cpus(2, "the_profile_applies_to_the_forked_child") {
        return;
    }
    let hunt = Hunt::sweep().args(["--profiles", "one-core", "--runs", "2", "--warm"]);
    let script = write(
        &hunt,
        "affinity.py",
        r#"
import json, sys
status = dict(l.split(":\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
print("cpus=%s" % status["Cpus_allowed_list"].strip())
sys.exit(0 if len(__import__("os").sched_getaffinity(0)) == 1 else 1)
"#,
    );
    let run = hunt.command(["python3", script.to_str().unwrap()]).run();
    run.expect_code(0);
    let attempts = run.attempts();
    assert!(all_warm(&attempts), "{:?}\n{}", modes(&attempts), run.stderr);
    for a in &attempts {
        let cpus = a["effect"]["cpus"].as_str().expect("the effect records the child's CPUs");
        assert!(!cpus.contains(',') && !cpus.contains('-'), "one CPU: {a:#}");
        assert!(a["stdout_tail"].as_str().unwrap().contains(&format!("cpus={cpus}")), "{a:#}");
    }
}

#[test]
fn the_overlay_and_rlimits_reach_the_forked_child() {
    let hunt = Hunt::of("matrix").without_json().args([
        "-D",
        "OVERLAY=a,b",
        "--rlimit",
        "nofile=1024,512",
        "--runs",
        "2",
        "--warm",
    ]);
    let script = write(
        &hunt,
        "overlay.py",
        r#"
import os, resource
print("OVERLAY=%s nofile=%d" % (os.environ.get("OVERLAY"), resource.getrlimit(resource.RLIMIT_NOFILE)[0]))
"#,
    );
    let run = hunt.command(["python3", script.to_str().unwrap()]).run();
    run.expect_code(0);
    let attempts = run.attempts();
    assert_eq!(attempts.len(), 8);
    assert!(all_warm(&attempts), "{:?}", modes(&attempts));
    for a in &attempts {
        // The script prints its environment's value and its soft limit as the cell is named.
        assert_eq!(a["stdout_tail"].as_str().unwrap().trim(), a["cell"].as_str().unwrap(), "{a:#}");
    }
}

#[test]
fn a_timeout_kills_the_forked_child_and_its_grandchild() {
    let hunt = Hunt::sweep().default_only().args(["--runs", "1", "--timeout", "2s", "--grace", "500ms", "--warm"]);
    let script = write(
        &hunt,
        "hang.py",
        r#"
import subprocess, sys, time
child = subprocess.Popen(["sleep", "300"])
print("grandchild %d" % child.pid, flush=True)
time.sleep(300)
"#,
    );
    let run = hunt.command(["python3", script.to_str().unwrap()]).run();
    run.expect_code(1);
    let attempt = &run.attempts()[0];
    assert_eq!((attempt["outcome"].as_str(), attempt["mode"].as_str()), (Some("timeout"), Some("warm")), "{attempt:#}");
    assert_eq!(attempt["termination"], "sigterm");
    let grandchild = grandchild_pid(attempt);
    assert!(is_dead(grandchild, &run.run_id()), "the grandchild {grandchild} outlived the timeout");
    run.expect_nothing_left();
}

#[test]
fn a_process_left_behind_by_a_forked_child_is_a_leak() {
    let hunt = Hunt::sweep().default_only().args(["--runs", "1", "--warm"]);
    let script = write(
        &hunt,
        "leak.py",
        r#"
import subprocess
child = subprocess.Popen(["sleep", "300"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print("grandchild %d" % child.pid, flush=True)
"#,
    );
    let run = hunt.command(["python3", script.to_str().unwrap()]).run();
    let attempt = &run.attempts()[0];
    assert_eq!((attempt["outcome"].as_str(), attempt["mode"].as_str()), (Some("leak"), Some("warm")), "{attempt:#}");
    let grandchild = grandchild_pid(attempt);
    assert_eq!(attempt["leaked"][0]["pid"], grandchild, "{attempt:#}");
    assert!(is_dead(grandchild, &run.run_id()), "the leaked {grandchild} was not ended");
    run.expect_nothing_left();
}

#[test]
fn a_target_warm_mode_cannot_serve_runs_cold_said_once() {
    // Not Python at all.
    let run = Hunt::sweep().args(["--runs", "2", "--warm"]).command(["true"]).run();
    run.expect_code(0);
    assert_eq!(run.stderr.matches("warm mode needs").count(), 1, "{}", run.stderr);
    assert!(modes(&run.attempts()).iter().all(|m| *m == "cold"));
    assert!(run.manifest()["plan"].get("warm").is_none());

    // A module that starts a thread at import: refused by each cell's parent, said once.
    let hunt = Hunt::sweep().args(["--runs", "2", "--warm"]);
    write(
        &hunt,
        "starts_a_thread.py",
        "import threading, time\nthreading.Thread(target=time.sleep, args=(30,), daemon=True, name='poller').start()\n",
    );
    let script = write(&hunt, "uses_it.py", "import starts_a_thread\nprint('ran')\n");
    let run = hunt.command(["python3", script.to_str().unwrap()]).run();
    run.expect_code(0);
    let line = "flakehunt: warm mode refused: a module started a thread at import: poller";
    assert_eq!(run.stderr.matches(line).count(), 1, "{}", run.stderr);
    let attempts = run.attempts();
    assert_eq!(attempts.len(), 4, "two cells");
    assert!(modes(&attempts).iter().all(|m| *m == "cold"), "{:?}", modes(&attempts));
    run.expect_nothing_left();
}

/// The hanging script of the SIGKILL test: iteration 3 writes its pid and its parent's (the
/// warm parent) and hangs, unless `done` exists (the resumed hunt's run of it).
const HANG_AT_3: &str = r#"
import os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
if os.environ["FLAKEHUNT_ITERATION"] == "3" and not os.path.exists(os.path.join(here, "done")):
    open(os.path.join(here, "done"), "w").close()
    with open(os.path.join(here, "pids.tmp"), "w") as f:
        f.write("%d %d\n" % (os.getpid(), os.getppid()))
    os.rename(os.path.join(here, "pids.tmp"), os.path.join(here, "pids"))
    time.sleep(300)
"#;

fn pids(path: &Path) -> Option<(i32, i32)> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut words = text.split_whitespace().map(|w| w.parse().unwrap());
    Some((words.next()?, words.next()?))
}

#[test]
fn the_watchdog_ends_the_warm_parent_and_its_fork_when_flakehunt_is_sigkilled_and_resume_runs_warm() {
    let hunt = Hunt::sweep().default_only().args(["--runs", "5", "--warm"]);
    let script = write(&hunt, "hang_at_3.py", HANG_AT_3);
    let pid_file = hunt.scratch("pids");
    let record = hunt.record_dir();
    let mut flakehunt = hunt.command(["python3", script.to_str().unwrap()]).spawn();
    poll_until("iteration 3 to write its pids", POLL_LIMIT, || pid_file.exists());
    let (fork, parent) = pids(&pid_file).expect("two pids");
    let run_id = flakehunt.run_id();
    assert!(!is_dead(fork, &run_id) && !is_dead(parent, &run_id), "the fork and its warm parent are alive");

    flakehunt.signal(libc::SIGKILL);
    let run = flakehunt.finish();
    assert_eq!(run.code, None);
    poll_until("the watchdog to end the hanging fork", POLL_LIMIT, || is_dead(fork, &run_id));
    poll_until("the watchdog to end the warm parent", POLL_LIMIT, || is_dead(parent, &run_id));
    run.expect_nothing_left();
    assert_eq!(results(&attempts_in(&record)), [(1, "pass".to_owned()), (2, "pass".to_owned())]);

    // Resumed at once: the killed hunt's watchdog may still be ending every process of the run
    // id the resumed hunt keeps; the resumed hunt waits for it before it starts anything.
    // --resume continues the hunt warm, from its record.
    let resumed = Hunt::sweep().without_record().without_json().args(["--resume"]).args([&record]).run();
    let attempts = attempts_in(&record);
    assert_eq!(resumed.code, Some(0), "{}\n{attempts:#?}", resumed.stderr);
    assert_eq!(results(&attempts).len(), 5);
    assert!(all_warm(&attempts), "{:?}", modes(&attempts));
}

#[test]
fn the_adaptive_hunt_runs_a_python_target_warm_by_default_and_cold_with_no_warm() {
    let hunt = Hunt::sweep();
    let script = write(
        &hunt,
        "every4.py",
        "import os, sys\nsys.exit(1 if int(os.environ['FLAKEHUNT_ITERATION']) % 4 == 0 else 0)\n",
    );
    for (flag, mode) in [(None, "warm"), (Some("--no-warm"), "cold")] {
        let run = Hunt::of("hunt")
            .args(["-q", "--seed", "7"])
            .args(flag)
            .command(["python3", script.to_str().unwrap()])
            .run();
        run.expect_code(1);
        let attempts = run.attempts();
        // Arms whose preloaded library a fork cannot carry (jitter) run cold in a warm hunt, and
        // so does its last calibration attempt (what a cold start adds sizes their hang limits).
        let cold_calibration = |a: &&Value| a["phase"] == "calibrate" && a["id"] == 4;
        let served: Vec<&Value> = attempts
            .iter()
            .filter(|a| !a["cell"].as_str().unwrap().starts_with("jitter"))
            .filter(|a| mode == "cold" || !cold_calibration(a))
            .collect();
        assert!(!served.is_empty());
        let cells: Vec<(&Value, &Value, &Value)> =
            attempts.iter().map(|a| (&a["id"], &a["cell"], &a["mode"])).collect();
        assert!(served.iter().all(|a| a["mode"] == mode), "{mode}: {cells:?}");
        assert!(attempts.iter().filter(cold_calibration).all(|a| a["mode"] == "cold"));
    }
}
