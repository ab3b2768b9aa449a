//! Runs a plan: pulls attempts, runs up to `jobs` at once on worker threads, feeds each result
//! back to the plan and to the event sinks. Main type: [`Runner`].

mod attempt;

pub use attempt::{rfc3339, AttemptRunner, Finished, Room, Slot};

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::events::{Event, EventSink};
use crate::exec::Cancel;
use crate::plan::{Next, Plan};
use crate::record::RecordError;

/// How a run ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunEnd {
    /// Attempts run and recorded.
    pub recorded: u64,
    /// The user interrupted.
    pub interrupted: bool,
    /// The budget ran out before the plan did.
    pub budget_spent: bool,
}

/// Errors that stop a hunt.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The target cannot be started at all.
    #[error("cannot start '{program}': {source}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The record cannot be written.
    #[error(transparent)]
    Record(#[from] RecordError),
}

/// The plan runner.
#[derive(Debug)]
pub struct Runner<'a> {
    /// Per-attempt execution.
    pub attempts: AttemptRunner<'a>,
    /// Attempts at once.
    pub jobs: usize,
    /// Stop starting attempts after this long.
    pub budget: Option<Duration>,
}

impl Runner<'_> {
    /// Runs `plan` to its end (or the budget's, or an interruption), sending events to `sink`.
    pub fn run(&self, plan: &mut dyn Plan, sink: &mut dyn EventSink) -> Result<RunEnd, RunError> {
        let jobs = self.jobs.max(1);
        let started = Instant::now();
        let shared = Mutex::new(Shared {
            plan,
            sink,
            end: RunEnd::default(),
            in_flight: 0,
            stopping: false,
            waiting: 0,
            fatal: None,
            error: None,
        });
        let finished = Condvar::new();
        if jobs == 1 {
            // One attempt at a time: on this thread, no other to start.
            self.work(0, &shared, &finished, started);
        } else {
            std::thread::scope(|scope| {
                for worker in 0..jobs {
                    // Ctrl-C while many workers start stops starting them.
                    if self.attempts.cancel.is_stopping() {
                        break;
                    }
                    let (shared, finished) = (&shared, &finished);
                    scope.spawn(move || self.work(worker, shared, finished, started));
                }
            });
        }
        let shared = shared.into_inner().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = shared.error {
            return Err(e);
        }
        if let Some(source) = shared.fatal {
            return Err(RunError::Spawn { program: self.attempts.target.program().to_owned(), source });
        }
        Ok(shared.end)
    }

    /// One worker of a run (the only one with one job). Each worker takes its next attempt from
    /// the plan and records its results itself, under the lock they share: no thread hands
    /// attempts out or collects results, which would cost two thread wake-ups per attempt, each
    /// one able to preempt a running test.
    fn work(&self, worker: usize, shared: &Mutex<Shared<'_>>, finished: &Condvar, started: Instant) {
        let cancel = self.attempts.cancel;
        let lock = || shared.lock().unwrap_or_else(|e| e.into_inner());
        let mut s = lock();
        loop {
            // A worker that panicked while holding the lock poisoned it: stop as it would have.
            if s.stopping || shared.is_poisoned() {
                break;
            }
            if cancel.is_stopping() {
                s.stop(&Event::Interrupted, cancel);
                break;
            }
            if self.budget.is_some_and(|b| started.elapsed() >= b) {
                s.stop(&Event::BudgetSpent, cancel);
                break;
            }
            let spec = match s.plan.next() {
                Next::Run(spec) => spec,
                Next::Wait if s.in_flight > 0 => {
                    s.waiting += 1;
                    s = finished.wait(s).unwrap_or_else(|e| e.into_inner());
                    s.waiting -= 1;
                    continue;
                }
                // With nothing in flight, a plan that waits has nothing left to wait for.
                Next::Wait | Next::Done => break,
            };
            let cell = s.plan.cells()[spec.cell].clone();
            // Asked under the lock, before another result can change what the plan knows.
            let timeout = s.plan.timeout(spec.cell);
            s.in_flight += 1;
            drop(s);
            let run = std::panic::AssertUnwindSafe(|| {
                self.attempts.run_within(&spec, &cell, worker, Slot::default(), &[], timeout)
            });
            let result = match std::panic::catch_unwind(run) {
                Ok(result) => result,
                Err(panic) => {
                    // Stop the others too, rather than leave them waiting for this attempt.
                    let mut s = lock();
                    s.in_flight -= 1;
                    s.stopping = true;
                    cancel.request_kill();
                    finished.notify_all();
                    drop(s);
                    std::panic::resume_unwind(panic);
                }
            };
            s = lock();
            s.in_flight -= 1;
            match result {
                Ok(f) if f.cancelled => s.end.interrupted = true,
                // The record failed: nothing more goes into it.
                Ok(_) if s.error.is_some() => {}
                Ok(f) => {
                    let Shared { plan, sink, .. } = &mut *s;
                    match record(&mut **plan, &mut **sink, &f) {
                        Ok(()) => s.end.recorded += 1,
                        Err(e) => s.fail(e, cancel),
                    }
                }
                Err(e) => {
                    s.fatal.get_or_insert(e);
                    s.stopping = true;
                }
            }
            if cancel.is_stopping() && !s.stopping {
                s.stop(&Event::Interrupted, cancel);
            }
            if s.waiting > 0 {
                finished.notify_all();
            }
        }
        if s.waiting > 0 {
            finished.notify_all();
        }
    }
}

/// What the workers of a run share, behind one lock.
struct Shared<'p> {
    plan: &'p mut dyn Plan,
    sink: &'p mut dyn EventSink,
    end: RunEnd,
    /// Attempts running now.
    in_flight: usize,
    /// No attempt starts any more: interrupted, out of budget, or failed.
    stopping: bool,
    /// Workers waiting for an attempt in flight to end, because the plan said `Wait`.
    waiting: usize,
    /// The target could not be started.
    fatal: Option<std::io::Error>,
    /// The record could not be written.
    error: Option<RunError>,
}

impl Shared<'_> {
    /// Stops starting attempts, saying why (an interruption or the budget).
    fn stop(&mut self, why: &Event<'_>, cancel: &Cancel) {
        self.stopping = true;
        match why {
            Event::Interrupted => self.end.interrupted = true,
            Event::BudgetSpent => self.end.budget_spent = true,
            _ => {}
        }
        if let Err(e) = self.sink.event(why) {
            self.fail(e.into(), cancel);
        }
    }

    /// The record cannot be written: ends what runs now rather than lose it silently.
    fn fail(&mut self, e: RunError, cancel: &Cancel) {
        self.error.get_or_insert(e);
        self.stopping = true;
        cancel.request_kill();
    }
}

/// Feeds a finished attempt back to the plan, then to the sinks (with any cells the plan added).
fn record(plan: &mut dyn Plan, sink: &mut dyn EventSink, f: &Finished) -> Result<(), RunError> {
    let cells_before = plan.cells().len();
    plan.observe(&f.attempt);
    for cell in &plan.cells()[cells_before..] {
        sink.event(&Event::CellAdded(cell))?;
    }
    sink.event(&Event::AttemptFinished { attempt: &f.attempt, stdout: &f.stdout, stderr: &f.stderr })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::{Limits, ProcessTree};
    use crate::plan::{AttemptSpec, CellSpec, Target};
    use crate::profile::{Profile, ProfileEnv};
    use crate::record::{Attempt, Outcome};

    /// A plan of `n` attempts of one cell that sets `timeout` on each, keeping what it observes.
    struct Timed {
        cells: Vec<CellSpec>,
        n: u64,
        issued: u64,
        timeout: Option<Duration>,
        seen: Vec<Attempt>,
    }

    impl Plan for Timed {
        fn cells(&self) -> &[CellSpec] {
            &self.cells
        }
        fn next(&mut self) -> Next {
            if self.issued == self.n {
                return Next::Done;
            }
            self.issued += 1;
            Next::Run(AttemptSpec { id: self.issued - 1, cell: 0, iteration: self.issued, phase: None })
        }
        fn observe(&mut self, attempt: &Attempt) {
            self.seen.push(attempt.clone());
        }
        fn planned(&self) -> u64 {
            self.n
        }
        fn timeout(&self, _cell: usize) -> Option<Duration> {
            self.timeout
        }
    }

    struct Nothing;
    impl EventSink for Nothing {
        fn event(&mut self, _: &Event<'_>) -> Result<(), RecordError> {
            Ok(())
        }
    }

    fn run(script: &str, plan_timeout: Option<Duration>, hunt_timeout: Duration) -> Vec<Attempt> {
        let tree = ProcessTree::default();
        let cancel = Cancel::new().unwrap();
        let profiles = ProfileEnv::new("runner-test", 0, false);
        let rooms = std::collections::BTreeMap::new();
        let attempts = AttemptRunner {
            run_id: "runner-test".into(),
            target: Target::shell(script.into()),
            limits: Limits { timeout: hunt_timeout, grace: Duration::from_secs(1), ..Limits::default() },
            env: Vec::new(),
            env_clear: false,
            cwd: None,
            tree: &tree,
            watchdog: None,
            cancel: &cancel,
            profiles: &profiles,
            rooms: &rooms,
            oracle: None,
        };
        let mut plan = Timed {
            cells: vec![CellSpec::for_profile(Profile::default_profile())],
            n: 2,
            issued: 0,
            timeout: plan_timeout,
            seen: Vec::new(),
        };
        let runner = Runner { attempts, jobs: 1, budget: None };
        let end = runner.run(&mut plan, &mut Nothing).unwrap();
        assert_eq!(end.recorded, 2);
        plan.seen
    }

    #[test]
    fn the_plans_timeout_ends_an_attempt_the_hunts_timeout_would_let_run() {
        // The hunt's timeout is an hour; the plan's is 300 ms: the hang is ended and recorded
        // as a timeout, with the output it wrote before.
        let seen = run("echo started; exec sleep 3600", Some(Duration::from_millis(300)), Duration::from_secs(3600));
        assert!(seen.iter().all(|a| a.outcome == Outcome::Timeout && a.termination.is_some()), "{seen:#?}");
        assert!(seen.iter().all(|a| a.stdout_tail == "started\n"));
    }

    #[test]
    fn without_a_plan_timeout_the_hunts_timeout_applies() {
        // The plan sets none: the hunt's 300 ms ends the attempts.
        let seen = run("exec sleep 3600", None, Duration::from_millis(300));
        assert!(seen.iter().all(|a| a.outcome == Outcome::Timeout), "{seen:#?}");
        // And a plan timeout longer than the attempt leaves it to pass, CPU time recorded.
        let seen = run("exit 0", Some(Duration::from_secs(3600)), Duration::from_millis(300));
        assert!(seen.iter().all(|a| a.outcome == Outcome::Pass && a.cpu_seconds.is_some()), "{seen:#?}");
    }
}
