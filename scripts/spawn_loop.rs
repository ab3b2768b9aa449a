//! The baselines for `scripts/bench-overhead.sh`, which compiles it with `rustc -O` (std only):
//! the least a harness can do per attempt, N times on J threads.
//! - `plain`: start the program and wait for it (its output goes where ours goes).
//! - `capture`: what any harness that keeps the output must add: the program leads its own
//!   process group, reads /dev/null, and its stdout and stderr are piped and read to the end.
//!
//! Usage: `spawn_loop N J [PROGRAM] [plain|capture]`; prints the elapsed seconds.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: spawn_loop N J [PROGRAM] [plain|capture]";
    let runs: u64 = args.next().and_then(|a| a.parse().ok()).expect(usage);
    let jobs: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1).max(1);
    let program = args.next().unwrap_or_else(|| "true".into());
    let capture = match args.next().as_deref() {
        None | Some("plain") => false,
        Some("capture") => true,
        Some(_) => panic!("{usage}"),
    };
    let next = AtomicU64::new(0);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                let mut buf = vec![0u8; 64 * 1024];
                while next.fetch_add(1, Ordering::Relaxed) < runs {
                    if !capture {
                        Command::new(&program).status().expect("the program starts");
                        continue;
                    }
                    let mut child = Command::new(&program)
                        .process_group(0)
                        .stdin(Stdio::null())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped())
                        .spawn()
                        .expect("the program starts");
                    // Reading stdout to its end, then stderr, is enough for a quiet program.
                    for stream in [
                        child.stdout.take().map(|s| Box::new(s) as Box<dyn Read>),
                        child.stderr.take().map(|s| Box::new(s) as Box<dyn Read>),
                    ]
                    .into_iter()
                    .flatten()
                    {
                        let mut stream = stream;
                        while stream.read(&mut buf).map(|n| n > 0).unwrap_or(false) {}
                    }
                    child.wait().expect("the program is waited for");
                }
            });
        }
    });
    println!("{:.6}", started.elapsed().as_secs_f64());
}
