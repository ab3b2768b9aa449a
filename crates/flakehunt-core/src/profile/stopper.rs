//! SIGSTOP/SIGCONT of an attempt's process group on a schedule: random chaos pauses, or a duty
//! cycle that limits CPU where no cgroup quota is available (what cpulimit does). Main type:
//! [`Stopper`].

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};

use super::knobs::Pause;
use crate::rng::Rng;

/// What the stopper delivered.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stops {
    /// Number of stops.
    pub count: u64,
    /// Total time stopped.
    pub seconds: f64,
}

/// A thread stopping and continuing one process group until told to end. The group is always
/// left continued, also when the stopper is dropped during a panic.
#[derive(Debug)]
pub struct Stopper {
    done: Option<Sender<()>>,
    thread: Option<JoinHandle<Stops>>,
    pgid: u32,
}

/// The schedule.
#[derive(Debug, Clone, Copy)]
pub enum PauseSchedule {
    /// Random pauses, seeded.
    Chaos(Pause, u64),
    /// Run `share` of every 100 ms period, stopped for the rest.
    DutyCycle(f64),
}

impl Stopper {
    /// Starts stopping group `pgid` on `schedule`.
    pub fn start(pgid: u32, schedule: PauseSchedule) -> Self {
        let (tx, rx) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("flakehunt-stopper".into())
            .spawn(move || {
                let mut stops = Stops::default();
                // Waits for `d` unless the attempt ends first; true when it ended.
                let wait = |d: Duration| !matches!(rx.recv_timeout(d), Err(RecvTimeoutError::Timeout));
                let mut rng = match schedule {
                    PauseSchedule::Chaos(_, seed) => Rng::new(seed),
                    PauseSchedule::DutyCycle(_) => Rng::new(0),
                };
                loop {
                    let (gap, stop) = match schedule {
                        PauseSchedule::Chaos(p, _) => {
                            // Whole microseconds; the knobs are validated finite and ordered.
                            let us = |ms: f64| (ms * 1000.0).round() as u64;
                            let gap = Duration::from_micros(rng.below(us(p.every_max_ms) + 1));
                            let len = us(p.min_ms) + rng.below(us(p.max_ms).saturating_sub(us(p.min_ms)) + 1);
                            (gap, Duration::from_micros(len))
                        }
                        PauseSchedule::DutyCycle(share) => {
                            let run = Duration::from_secs_f64(0.1 * share.clamp(0.01, 1.0));
                            (run, Duration::from_millis(100).saturating_sub(run))
                        }
                    };
                    if wait(gap) || stop.is_zero() {
                        if stop.is_zero() && !wait(Duration::from_millis(100)) {
                            continue;
                        }
                        return stops;
                    }
                    if signal(pgid, Signal::STOP).is_err() {
                        return stops;
                    }
                    let began = Instant::now();
                    let ended = wait(stop);
                    let _ = signal(pgid, Signal::CONT);
                    stops.count += 1;
                    stops.seconds += began.elapsed().as_secs_f64();
                    if ended {
                        return stops;
                    }
                }
            })
            .ok();
        Self { done: Some(tx), thread, pgid }
    }

    /// Ends the schedule, continues the group, and returns what was delivered.
    pub fn finish(mut self) -> Stops {
        self.done.take();
        let stops = self.thread.take().and_then(|t| t.join().ok()).unwrap_or_default();
        let _ = signal(self.pgid, Signal::CONT);
        stops
    }
}

impl Drop for Stopper {
    fn drop(&mut self) {
        self.done.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = signal(self.pgid, Signal::CONT);
    }
}

fn signal(pgid: u32, sig: Signal) -> rustix::io::Result<()> {
    match Pid::from_raw(pgid as i32) {
        Some(p) => rustix::process::kill_process_group(p, sig),
        None => Ok(()),
    }
}
