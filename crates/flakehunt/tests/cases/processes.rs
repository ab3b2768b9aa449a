//! Ending processes: timeouts with SIGTERM then SIGKILL, flakehunt killed with SIGKILL (the
//! watchdog), and Ctrl-C.

use crate::harness::{attempts_in, is_dead, poll_until, Hunt, POLL_LIMIT};

#[test]
fn a_hang_times_out_and_ends_on_sigterm() {
    let run = Hunt::sweep()
        .default_only()
        .args(["--runs", "1", "--timeout", "1s", "--grace", "500ms"])
        .fixture("hang.sh", &[])
        .run();
    run.expect_code(1);
    let attempt = &run.attempts()[0];
    assert_eq!(attempt["outcome"], "timeout");
    assert_eq!(attempt["termination"], "sigterm");
    assert_eq!(attempt["signal"], libc::SIGTERM);
    assert!(attempt["seconds"].as_f64().unwrap() >= 1.0, "{attempt:#}");
    run.expect_nothing_left();
}

#[test]
fn a_target_that_ignores_sigterm_is_killed_after_the_grace_period() {
    let run = Hunt::sweep()
        .default_only()
        .args(["--runs", "1", "--timeout", "1s", "--grace", "500ms"])
        .fixture("ignore-sigterm.sh", &[])
        .run();
    run.expect_code(1);
    let attempt = &run.attempts()[0];
    assert_eq!(attempt["outcome"], "timeout");
    assert_eq!(attempt["termination"], "sigkill");
    assert_eq!(attempt["signal"], libc::SIGKILL);
    assert!(attempt["seconds"].as_f64().unwrap() >= 1.5, "{attempt:#}");
    run.expect_nothing_left();
}

#[test]
fn the_watchdog_kills_the_attempt_when_flakehunt_is_killed() {
    let hunt = Hunt::sweep().default_only().args(["--runs", "5"]);
    let pid_file = hunt.scratch("pid");
    // Iterations 1 and 2 pass, so the record has a prefix; iteration 3 hangs.
    let mut flakehunt = hunt.fixture("hang.sh", &[pid_file.to_str().unwrap(), "3"]).spawn();
    let hanging = flakehunt.wait_for_pid_file("pid", "sleep");
    let run_id = flakehunt.run_id();
    assert!(!is_dead(hanging, &run_id), "the fixture's pid file names a live attempt");

    flakehunt.signal(libc::SIGKILL);
    let run = flakehunt.finish();
    assert_eq!(run.code, None, "SIGKILL ends flakehunt without an exit code");
    poll_until("the watchdog to kill the hanging attempt", POLL_LIMIT, || is_dead(hanging, &run_id));

    let attempts = attempts_in(&run.dir);
    let iterations: Vec<u64> = attempts.iter().map(|a| a["iteration"].as_u64().unwrap()).collect();
    assert_eq!(iterations, [1, 2]);
    assert!(attempts.iter().all(|a| a["outcome"] == "pass"));
    run.expect_nothing_left();
}

#[test]
fn ctrl_c_ends_the_running_attempt_and_writes_the_record() {
    let hunt = Hunt::sweep().default_only().args(["--runs", "5"]);
    let pid_file = hunt.scratch("pid");
    let mut flakehunt = hunt.fixture("hang.sh", &[pid_file.to_str().unwrap(), "3"]).spawn();
    let hanging = flakehunt.wait_for_pid_file("pid", "sleep");

    flakehunt.signal(libc::SIGINT);
    let run = flakehunt.finish();
    run.expect_code(130);
    assert!(run.stderr.contains("interrupted"), "{}", run.stderr);
    assert!(is_dead(hanging, &run.run_id()), "the hanging attempt {hanging} survived Ctrl-C");
    run.expect_nothing_left();

    // The interrupted attempt is not recorded: a resume runs it again.
    let attempts = run.attempts();
    assert_eq!(attempts.len(), 2);
    let summary = run.json();
    assert_eq!(summary, run.summary());
    assert_eq!(summary["attempts"], 2);
    assert_eq!(summary["planned"], 5);
    assert_eq!(summary["complete"], false);
}

#[test]
fn ctrl_c_kills_an_attempt_that_ignores_sigterm_after_the_grace_period() {
    let hunt = Hunt::sweep().default_only().args(["--runs", "1", "--grace", "500ms"]);
    let marker = hunt.scratch("started");
    let script = format!("trap '' TERM; echo $$ > {m}.tmp && mv {m}.tmp {m}; exec sleep 1000000", m = marker.display());
    let mut flakehunt = hunt.args(["--shell", &script]).spawn();
    let hanging = flakehunt.wait_for_pid_file("started", "sleep");

    flakehunt.signal(libc::SIGINT);
    let run = flakehunt.finish();
    run.expect_code(130);
    assert!(is_dead(hanging, &run.run_id()));
    assert!(run.attempts().is_empty());
    run.expect_nothing_left();
}

#[test]
fn leak_timeout_sets_how_long_output_is_read_after_the_main_process_exits() {
    // The background subshell writes after the main process exited; a long enough leak timeout
    // waits for it (and for end-of-file) instead of cutting the output after 100 ms.
    let run = Hunt::sweep()
        .default_only()
        .args(["--runs", "1", "--leak-timeout", "60s"])
        .args(["--shell", "(sleep 1; echo late line) & echo early line"])
        .run();
    let attempt = &run.attempts()[0];
    assert_eq!(attempt["stdout_tail"], "early line\nlate line\n", "{attempt:#}");
    run.expect_nothing_left();
}
