//! The baseline for `scripts/bench-overhead.sh`, which compiles it with `rustc -O` (std only): the
//! least a harness can do per attempt, start a program and wait for it, N times on J threads.
//! Usage: `spawn_loop N J [PROGRAM]`; prints the elapsed seconds.

use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let runs: u64 = args.next().and_then(|a| a.parse().ok()).expect("usage: spawn_loop N J [PROGRAM]");
    let jobs: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1).max(1);
    let program = args.next().unwrap_or_else(|| "true".into());
    let next = AtomicU64::new(0);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                while next.fetch_add(1, Ordering::Relaxed) < runs {
                    Command::new(&program).status().expect("the program starts");
                }
            });
        }
    });
    println!("{:.6}", started.elapsed().as_secs_f64());
}
