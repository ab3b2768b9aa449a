//! Attempts per second of one Python target, cold (the spawn path every attempt takes today)
//! against warm (forks of a [`WarmParent`]), one attempt at a time, in one run. Driven by
//! scripts/bench-warm.sh; until the runner starts warm attempts itself, this is how they are
//! measured.
//!
//! Usage: warm_bench N DIR -- PROGRAM ARGS...   (run in DIR; prints one line of figures)

use std::time::Instant;

use flakehunt_core::exec::{Cancel, Launch, Limits, ProcessTree, Running, Status};
use flakehunt_core::warm::{WarmOptions, WarmParent};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(n), Some(dir), Some("--")) = (args.first(), args.get(1), args.get(2).map(String::as_str)) else {
        eprintln!("usage: warm_bench N DIR -- PROGRAM ARGS...");
        std::process::exit(2);
    };
    let n: u64 = n.parse().expect("N is a number");
    let (program, rest) = args[3..].split_first().expect("a program");
    ProcessTree::become_subreaper();
    let tree = ProcessTree::default();
    let cancel = Cancel::new().expect("a cancel token");
    let limits = Limits::default();
    let launch = |i: u64| Launch {
        program: program.into(),
        args: rest.iter().map(Into::into).collect(),
        env: vec![
            ("FLAKEHUNT_RUN_ID".into(), Some("bench".into())),
            ("FLAKEHUNT_ITERATION".into(), Some(i.to_string().into())),
            ("FLAKEHUNT_ATTEMPT".into(), Some(format!("bench.{i}").into())),
        ],
        cwd: Some(dir.into()),
        ..Default::default()
    };
    let marker = |i: u64| format!("FLAKEHUNT_ATTEMPT=bench.{i}");
    let failed = |status: Status| status != Status::Exited(0);

    // WARM_ONLY=1 skips the cold attempts (for profiling the warm ones alone).
    let cold_n = if std::env::var_os("WARM_ONLY").is_some_and(|v| v == "1") { 0 } else { n };
    let t = Instant::now();
    let mut cold_failures = 0;
    for i in 0..cold_n {
        let ex = Running::spawn(&launch(i), &tree, marker(i)).expect("spawn").wait(&limits, &cancel);
        cold_failures += u64::from(failed(ex.status));
    }
    let cold = t.elapsed().as_secs_f64() * n as f64 / cold_n.max(1) as f64;

    // Warm-up is counted: it is what a cell pays once.
    let t = Instant::now();
    let options = WarmOptions { recycle_after: None, ..Default::default() };
    let parent = WarmParent::start(&launch(0), &tree, &options).unwrap_or_else(|e| panic!("warm parent: {e}"));
    let warmup = t.elapsed().as_secs_f64();
    let mut warm_failures = 0;
    let mut test_seconds = 0.0;
    let mut start_seconds = 0.0;
    for i in 0..n {
        let asked = Instant::now();
        let running = parent.start_attempt(&launch(i), marker(i)).expect("warm start");
        start_seconds += asked.elapsed().as_secs_f64();
        let ex = running.wait(&limits, &cancel);
        warm_failures += u64::from(failed(ex.status));
        test_seconds += ex.seconds;
    }
    let warm = t.elapsed().as_secs_f64();
    let rate = |k: u64| 100.0 * k as f64 / n as f64;
    println!(
        "cold {:.1}/s  warm {:.1}/s  ratio {:.1}x  warm-up {:.0} ms  warm attempt {:.2} ms (request to set-up child {:.2} ms, \
         request to exit {:.2} ms)  \
         failures cold {:.1}% warm {:.1}%",
        n as f64 / cold,
        n as f64 / warm,
        cold / warm,
        warmup * 1e3,
        (warm - warmup) / n as f64 * 1e3,
        start_seconds / n as f64 * 1e3,
        test_seconds / n as f64 * 1e3,
        rate(cold_failures),
        rate(warm_failures),
    );
}
