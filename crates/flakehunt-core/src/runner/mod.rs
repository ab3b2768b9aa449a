//! Runs a plan: pulls attempts, runs up to `jobs` at once on worker threads, feeds each result
//! back to the plan and to the event sinks. Main type: [`Runner`].

mod attempt;
mod execute;
pub mod replay;

pub use attempt::{rfc3339, AttemptRunner, Finished, Room, Slot};
pub use execute::{Decide, Execute, FakeExecution};

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
    #[error("cannot start '{program}'")]
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
    /// An attempt's build tool replayed a cached test result: it ran no test.
    #[error(transparent)]
    Replayed(#[from] replay::Replayed),
}

impl crate::error_class::Classify for RunError {
    fn class(&self) -> crate::error_class::ErrorClass {
        match self {
            Self::Spawn { .. } | Self::Replayed(_) => crate::error_class::ErrorClass::Usage,
            Self::Record(e) => crate::error_class::Classify::class(e),
        }
    }
}

/// The plan runner, generic over how attempts run (real processes, or a fake in tests).
#[derive(Debug)]
pub struct Runner<E> {
    /// Per-attempt execution.
    pub attempts: E,
    /// Attempts at once.
    pub jobs: usize,
    /// Stop starting attempts after this long.
    pub budget: Option<Duration>,
}

impl<E: Execute> Runner<E> {
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
                    if self.attempts.cancel().is_stopping() {
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
            return Err(RunError::Spawn { program: self.attempts.program().to_owned(), source });
        }
        Ok(shared.end)
    }

    /// One worker of a run (the only one with one job). Each worker takes its next attempt from
    /// the plan and records its results itself, under the lock they share: no thread hands
    /// attempts out or collects results, which would cost two thread wake-ups per attempt, each
    /// one able to preempt a running test.
    fn work(&self, worker: usize, shared: &Mutex<Shared<'_>>, finished: &Condvar, started: Instant) {
        let cancel = self.attempts.cancel();
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
            let limits = s.plan.limits(spec.cell);
            let budget_end = self.budget.map(|b| crate::bounds::deadline(started, b));
            s.in_flight += 1;
            drop(s);
            let run = std::panic::AssertUnwindSafe(|| {
                self.attempts.run(&spec, &cell, worker, Slot { limits, budget_end, ..Slot::default() }, &[])
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
            // Read before the lock, which the other workers wait on.
            let replay = result.as_ref().ok().and_then(|f| replayed(f, self.attempts.stops_on_no_test()));
            s = lock();
            s.in_flight -= 1;
            match (result, replay) {
                (Ok(f), _) if f.cancelled => s.end.interrupted = true,
                // The record failed: nothing more goes into it.
                (Ok(_), _) if s.error.is_some() => {}
                (Ok(_), Some(replay)) => s.fail(replay.into(), cancel),
                (Ok(f), None) => {
                    let Shared { plan, sink, .. } = &mut *s;
                    match record(&mut **plan, &mut **sink, &f) {
                        Ok(()) => s.end.recorded += 1,
                        Err(e) => s.fail(e, cancel),
                    }
                }
                (Err(e), _) => {
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
    if let Some(why) = &f.runs_cold {
        sink.event(&Event::RunsCold(why))?;
    }
    let cells_before = plan.cells().len();
    plan.observe(&f.attempt);
    for cell in &plan.cells()[cells_before..] {
        sink.event(&Event::CellAdded(cell))?;
    }
    sink.event(&Event::AttemptFinished { attempt: &f.attempt, stdout: &f.stdout, stderr: &f.stderr, token: None })?;
    Ok(())
}

/// A stream's whole text, when its captured head or its tail holds all of it.
fn whole<'a>(head: &'a [u8], tail: &'a str, total: u64) -> Option<std::borrow::Cow<'a, str>> {
    if head.len() as u64 >= total {
        Some(String::from_utf8_lossy(head))
    } else {
        (tail.len() as u64 >= total).then_some(std::borrow::Cow::Borrowed(tail))
    }
}

/// Whether `f` ran no test: its build tool replayed a cached result, or (`selection`) it passed
/// and its test runner says it ran none. Not a result, like a cancelled attempt, and not
/// recorded.
fn replayed(f: &Finished, selection: bool) -> Option<replay::Replayed> {
    let tails = [f.attempt.stdout_tail.as_bytes(), f.attempt.stderr_tail.as_bytes()];
    let replay =
        replay::replayed([f.stdout.as_slice(), f.stderr.as_slice()].into_iter().chain(tails)).or_else(|| {
            let passed = selection && f.attempt.outcome == crate::record::Outcome::Pass;
            if !passed {
                return None;
            }
            let out = whole(&f.stdout, &f.attempt.stdout_tail, f.attempt.stdout_bytes)?;
            let err = whole(&f.stderr, &f.attempt.stderr_tail, f.attempt.stderr_bytes)?;
            replay::ran_no_test(&out).or_else(|| replay::ran_no_test(&err))
        })?;
    Some(replay::Replayed { attempt: f.attempt.id, replay })
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod timeout_tests;
