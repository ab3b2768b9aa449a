//! End-to-end tests of the `jitter` profile: the preload library injects delays into a
//! dynamically linked pthread program and says so in the effect, widens a check-then-act race
//! window by at least the sleeps it injects, and a statically linked one is reported inert. The
//! bounds cannot flake: thousands of intercepted calls at a 5 % rate, and lower bounds that a
//! sleep guarantees (it never ends early), not speeds.

use std::path::Path;

use serde_json::Value;

use crate::harness::{attempts_in, cell, flakehunt, summary_of};

fn compile(dir: &Path, name: &str, extra: &[&str]) -> Option<String> {
    compile_fixture(dir, "locker", name, extra)
}

fn compile_fixture(dir: &Path, fixture: &str, name: &str, extra: &[&str]) -> Option<String> {
    let exe = dir.join(name);
    let src = crate::harness::fixture(&format!("jitter/{fixture}.c"));
    let status = std::process::Command::new("cc")
        .args(["-O1", "-pthread"])
        .args(extra)
        .arg("-o")
        .arg(&exe)
        .arg(src)
        .status()
        .expect("a C compiler (cc) is needed for this test");
    status.success().then(|| exe.display().to_string())
}

fn sweep(dir: &Path, exe: &str) -> (Value, Vec<Value>) {
    let record = dir.join(format!("rec-{}", Path::new(exe).file_name().unwrap().to_string_lossy()));
    let out = flakehunt()
        .args(["sweep", "--profiles", "default,jitter", "--runs", "3", "--json", "--quiet", "--record"])
        .arg(&record)
        .arg("--")
        .arg(exe)
        .output();
    let summary = summary_of(&out);
    let attempts = attempts_in(&record);
    (summary, attempts)
}

#[test]
fn jitter_delays_a_dynamic_pthread_program_and_counts_the_delays() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), "locker", &[]).unwrap();
    let (summary, attempts) = sweep(dir.path(), &exe);
    let jitter = cell(&summary, "jitter");
    assert_eq!(jitter["inert"], false, "{jitter}");
    assert_eq!(jitter["failures"], 0);
    for a in attempts.iter().filter(|a| a["cell"] == "jitter") {
        // 40,000 intercepted lock/unlock calls at 5 %: about 2,000 delays.
        let delays = a["effect"]["jitter_delays"].as_u64().unwrap();
        assert!(delays > 100, "{a}");
        assert_eq!(a["stdout_tail"], "count=20000\n");
    }
    assert!(jitter["effect"]["jitter_delays"].as_u64().unwrap() > 300);
}

#[test]
fn jitter_is_inert_for_a_static_binary() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = compile(dir.path(), "locker-static", &["-static"]) else {
        crate::harness::skip(
            "jitter_is_inert_for_a_static_binary",
            "this toolchain cannot link statically (no libc.a)",
        );
        return;
    };
    let (summary, _) = sweep(dir.path(), &exe);
    let jitter = cell(&summary, "jitter");
    assert_eq!(jitter["inert"], true, "{jitter}");
    assert!(jitter["inert_reason"].as_str().unwrap().contains("statically linked"), "{jitter}");
}

/// The numbers `fixtures/jitter/window.c` prints: `windows=N wide=W min_ns=A ...`.
fn window_numbers(attempt: &Value) -> std::collections::BTreeMap<String, u64> {
    let line = attempt["stdout_tail"].as_str().unwrap_or_else(|| panic!("no stdout: {attempt}"));
    line.split_whitespace()
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or_else(|| panic!("not name=value: {line}"));
            (k.to_owned(), v.parse().unwrap_or_else(|_| panic!("not a number: {line}")))
        })
        .collect()
}

#[test]
fn jitter_sleeps_widen_a_check_then_act_window_by_at_least_their_length() {
    // Two threads, 300 check-then-act rounds each: read under the lock, unlock, lock again,
    // write the read value + 1. A user profile delays every call (rate 1) by a sleep of 20-40 us,
    // so each window holds at least the sleep after the first unlock and the sleep before the
    // second lock: 40 us, whatever the machine's load. Nothing is asserted of the default cell
    // (its windows are short only when the machine is idle) nor of the lost updates.
    const ROUNDS: u64 = 300;
    const SLEEP_MIN_US: u64 = 20;
    let threshold_ns = 2 * SLEEP_MIN_US * 1000;
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_fixture(dir.path(), "window", "window", &[]).unwrap();
    let config = dir.path().join("flakehunt.toml");
    std::fs::write(
        &config,
        format!("[profiles.wide-jitter]\njitter = 1.0\njitter-sleep-us = [{SLEEP_MIN_US}, {}]\n", 2 * SLEEP_MIN_US),
    )
    .unwrap();
    let record = dir.path().join("rec");
    let out = flakehunt()
        .args(["sweep", "--profiles", "default,wide-jitter", "--runs", "3", "--json", "--quiet", "--config"])
        .arg(&config)
        .arg("--record")
        .arg(&record)
        .arg("--")
        .arg(&exe)
        .args([ROUNDS.to_string(), threshold_ns.to_string()])
        .output();
    let summary = summary_of(&out);
    assert_eq!(summary["failures"], 0, "{summary}");
    let jitter = cell(&summary, "wide-jitter");
    assert_eq!(jitter["inert"], false, "{jitter}");
    let attempts = attempts_in(&record);
    for a in &attempts {
        let n = window_numbers(a);
        assert_eq!(n["windows"], 2 * ROUNDS, "{a}");
        eprintln!(
            "{}: windows {} of which >= {} ns: {}, min {} ns, mean {} ns, max {} ns, lost updates {}, delays {}",
            a["cell"],
            n["windows"],
            threshold_ns,
            n["wide"],
            n["min_ns"],
            n["total_ns"] / n["windows"],
            n["max_ns"],
            n["lost"],
            a["effect"]["jitter_delays"]
        );
        if a["cell"] == "wide-jitter" {
            // Every window holds two sleeps of at least SLEEP_MIN_US each.
            assert_eq!(n["wide"], n["windows"], "{a}");
            assert!(n["min_ns"] >= threshold_ns, "{a}");
            assert!(n["total_ns"] >= n["windows"] * threshold_ns, "{a}");
            // Every lock and unlock call was delayed: four per round and thread.
            assert!(a["effect"]["jitter_delays"].as_u64().unwrap() >= 4 * 2 * ROUNDS, "{a}");
        }
    }
    assert_eq!(attempts.iter().filter(|a| a["cell"] == "wide-jitter").count(), 3);
}
