//! The outcome of an attempt for each kind of target: pass, fail, crash, leak, and odd output.

use crate::harness::{fixture, grandchild_pid, is_dead, processes_running, Hunt};

#[test]
fn fails_exactly_on_the_iterations_the_fixture_fails() {
    let run = Hunt::sweep().default_only().args(["--runs", "6"]).fixture("flaky-every.sh", &["3"]).run();
    run.expect_code(1);
    assert_eq!(run.outcomes("default"), ["fail=2", "pass=4"]);
    let failed: Vec<u64> =
        run.attempts().iter().filter(|a| a["outcome"] == "fail").map(|a| a["iteration"].as_u64().unwrap()).collect();
    assert_eq!(failed, [3, 6]);
    run.expect_nothing_left();
}

#[test]
fn a_target_that_never_fails_is_not_reproduced() {
    let run = Hunt::sweep().default_only().args(["--runs", "3"]).fixture("flaky-every.sh", &["1000"]).run();
    run.expect_code(0);
    assert_eq!(run.json()["verdict"], "not-reproduced");
    assert_eq!(run.outcomes("default"), ["pass=3"]);
}

#[test]
fn a_segfault_is_a_crash_with_its_signal() {
    let run = Hunt::sweep().default_only().args(["--runs", "2"]).fixture("crash.sh", &["SEGV"]).run();
    run.expect_code(1);
    assert_eq!(run.outcomes("default"), ["crash=2"]);
    for attempt in run.attempts() {
        assert_eq!(attempt["signal"], libc::SIGSEGV);
        assert_eq!(attempt["exit_code"], serde_json::Value::Null);
    }
}

#[test]
fn an_abort_is_a_crash_with_its_signal() {
    let run = Hunt::sweep().default_only().args(["--runs", "1"]).fixture("crash.sh", &["ABRT"]).run();
    run.expect_code(1);
    assert_eq!(run.outcomes("default"), ["crash=1"]);
    assert_eq!(run.attempts()[0]["signal"], libc::SIGABRT);
    assert!(run.json()["signatures"][0]["signature"].as_str().unwrap().contains("SIGABRT"));
}

#[test]
fn invalid_utf8_output_is_recorded_lossily_in_tails_and_exactly_in_logs() {
    let run = Hunt::sweep().default_only().args(["--runs", "1"]).fixture("non-utf8.sh", &[]).run();
    run.expect_code(1);
    let attempt = &run.attempts()[0];
    assert_eq!(attempt["outcome"], "fail");
    assert_eq!(attempt["exit_code"], 3);
    assert_eq!(attempt["stdout_tail"], "out \u{fffd}\u{fffd} bytes\n");
    assert!(attempt["stderr_tail"].as_str().unwrap().starts_with("err \u{fffd}\u{fffd} bytes\n"));
    let log = run.dir.join(attempt["log"].as_str().unwrap());
    assert_eq!(std::fs::read(log.with_extension("stdout")).unwrap(), b"out \xff\xfe bytes\n");
    assert!(std::fs::read(log.with_extension("stderr")).unwrap().starts_with(b"err \xc0\xc1 bytes\n"));
}

#[test]
fn a_flood_of_output_is_counted_in_full_and_kept_only_up_to_the_cap() {
    const FLOOD: u64 = 50 * 1024 * 1024 + "flood done\n".len() as u64;
    let run = Hunt::sweep().default_only().args(["--runs", "1"]).fixture("flood.sh", &[]).run();
    run.expect_code(0);
    let attempt = &run.attempts()[0];
    assert_eq!(attempt["outcome"], "pass");
    assert_eq!(attempt["stdout_bytes"], FLOOD);
    let tail = attempt["stdout_tail"].as_str().unwrap();
    assert_eq!(tail.len(), 4096);
    assert!(tail.ends_with("xxxflood done\n"));
}

#[test]
fn the_log_of_a_failing_flood_is_capped() {
    let run =
        Hunt::sweep().default_only().args(["--runs", "1", "--capture", "64KiB"]).fixture("flood.sh", &["1"]).run();
    run.expect_code(1);
    let attempt = &run.attempts()[0];
    assert_eq!(attempt["outcome"], "fail");
    assert_eq!(attempt["stdout_bytes"], 50 * 1024 * 1024 + 11);
    let log = run.dir.join(attempt["log"].as_str().unwrap()).with_extension("stdout");
    assert_eq!(std::fs::metadata(log).unwrap().len(), 64 * 1024);
}

#[test]
fn python_failures_with_varying_values_share_one_signature() {
    let run = Hunt::sweep().default_only().args(["--runs", "4"]).fixture("python-failure.py", &["2"]).run();
    run.expect_code(1);
    assert_eq!(run.outcomes("default"), ["fail=2", "pass=2"]);
    let summary = run.json();
    let signatures = summary["signatures"].as_array().unwrap();
    assert_eq!(signatures.len(), 1, "{signatures:#?}");
    assert_eq!(signatures[0]["count"], 2);
    assert_eq!(signatures[0]["cells"], serde_json::json!(["default"]));
    let signature = signatures[0]["signature"].as_str().unwrap();
    assert!(signature.starts_with("exit 1: AssertionError: balance"), "{signature}");
    assert!(!signature.contains("0x7f"), "addresses are normalised: {signature}");
}

#[test]
fn a_setsid_grandchild_is_a_leak_and_is_killed() {
    let run = Hunt::sweep().default_only().args(["--runs", "2"]).fixture("setsid-grandchild.sh", &[]).run();
    run.expect_code(0);
    assert_eq!(run.outcomes("default"), ["leak=2"]);
    assert_eq!(run.cell("default")["leaking"], 2);
    let run_id = run.run_id();
    for attempt in run.attempts() {
        let pid = grandchild_pid(&attempt);
        assert!(attempt["leaked"].as_array().unwrap().iter().any(|l| l["pid"] == pid), "{attempt:#}");
        assert!(is_dead(pid, &run_id), "the setsid grandchild {pid} survived");
    }
    run.expect_nothing_left();
}

#[test]
fn a_double_forked_daemon_is_a_leak_and_is_killed() {
    let run = Hunt::sweep().default_only().args(["--runs", "2"]).fixture("double-fork.sh", &[]).run();
    run.expect_code(0);
    assert_eq!(run.outcomes("default"), ["leak=2"]);
    let run_id = run.run_id();
    for attempt in run.attempts() {
        let pid = grandchild_pid(&attempt);
        assert!(is_dead(pid, &run_id), "the daemon {pid} survived");
    }
    run.expect_nothing_left();
}

#[test]
fn a_grandchild_that_escapes_the_group_and_clears_its_environment_is_a_leak_and_is_killed() {
    let run = Hunt::sweep().default_only().args(["--runs", "3"]).fixture("escape-clean-env.sh", &[]).run();
    run.expect_code(0);
    assert_eq!(run.outcomes("default"), ["leak=3"]);
    for attempt in run.attempts() {
        let pid = grandchild_pid(&attempt);
        assert!(attempt["leaked"].as_array().unwrap().iter().any(|l| l["pid"] == pid), "{attempt:#}");
    }
    // Its environment no longer names the hunt: look for it by command line.
    assert_eq!(processes_running("sleep 1000123"), Vec::<i32>::new());
}

#[test]
fn a_snapshot_tool_still_running_when_the_attempts_end_is_waited_for() {
    // The snapshot's tool commands are flakehunt's own children, alive while attempts end and
    // are swept, and here still running when the hunt's last attempt ended: they must be
    // neither killed as leftovers nor lost from the snapshot.
    let hunt = Hunt::sweep().default_only();
    let config = hunt.scratch("flakehunt.toml");
    let tool = fixture("slow-version.sh");
    std::fs::write(&config, format!("[snapshot]\ntools = [\"{}\"]\n", tool.display())).unwrap();
    let run = hunt.args(["--config".as_ref(), config.as_os_str()]).args(["--runs", "3"]).command(["true"]).run();
    run.expect_code(0);
    assert_eq!(run.outcomes("default"), ["pass=3"]);
    let snapshot = crate::harness::read_json(&run.dir.join("snapshot.json"));
    assert_eq!(snapshot["tools"][tool.to_str().unwrap()], "slow-tool 1.0", "{:#}", snapshot["tools"]);
    run.expect_nothing_left();
}

#[test]
fn attempts_read_dev_null_on_stdin() {
    // A target that reads stdin must see end-of-file at once, never the terminal or a pipe.
    let run = Hunt::sweep().default_only().args(["--runs", "2", "--shell", "cat; readlink /proc/self/fd/0"]).run();
    run.expect_code(0);
    for attempt in run.attempts() {
        assert_eq!(attempt["stdout_tail"], "/dev/null\n", "{attempt:#}");
    }
}
