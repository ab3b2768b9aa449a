//! Runs a plan: pulls attempts, runs up to `jobs` at once on worker threads, feeds each result
//! back to the plan and to the event sinks. Main type: [`Runner`].

mod attempt;

pub use attempt::{rfc3339, AttemptRunner, Finished, Room, Slot};

use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::events::{Event, EventSink};
use crate::plan::{AttemptSpec, CellSpec, Next, Plan};
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

enum Done {
    Attempt(Box<Finished>),
    Fatal(std::io::Error),
}

impl Runner<'_> {
    /// Runs `plan` to its end (or the budget's, or an interruption), sending events to `sink`.
    pub fn run(&self, plan: &mut dyn Plan, sink: &mut dyn EventSink) -> Result<RunEnd, RunError> {
        let jobs = self.jobs.max(1);
        if jobs == 1 {
            return self.run_inline(plan, sink);
        }
        let started = Instant::now();
        let (job_tx, job_rx) = mpsc::channel::<(AttemptSpec, CellSpec)>();
        let job_rx = Mutex::new(job_rx);
        let (done_tx, done_rx) = mpsc::channel::<Done>();
        let mut end = RunEnd::default();
        let mut fatal: Option<std::io::Error> = None;
        let cancel = self.attempts.cancel;

        std::thread::scope(|scope| -> Result<(), RunError> {
            for worker in 0..jobs {
                let (job_rx, done_tx) = (&job_rx, done_tx.clone());
                let attempts = &self.attempts;
                scope.spawn(move || loop {
                    let job = job_rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    let Ok((spec, cell)) = job else { return };
                    let done = match attempts.run(&spec, &cell, worker, Slot::default(), &[]) {
                        Ok(f) => Done::Attempt(Box::new(f)),
                        Err(e) => Done::Fatal(e),
                    };
                    if done_tx.send(done).is_err() {
                        return;
                    }
                });
            }
            drop(done_tx);

            let mut in_flight = 0usize;
            let mut stopping = false;
            let result = (|| -> Result<(), RunError> {
                loop {
                    while !stopping && in_flight < jobs {
                        if cancel.is_stopping() {
                            stopping = true;
                            end.interrupted = true;
                            sink.event(&Event::Interrupted)?;
                            break;
                        }
                        if self.budget.is_some_and(|b| started.elapsed() >= b) {
                            stopping = true;
                            end.budget_spent = true;
                            sink.event(&Event::BudgetSpent)?;
                            break;
                        }
                        match plan.next() {
                            Next::Run(spec) => {
                                let cell = plan.cells()[spec.cell].clone();
                                // The workers outlive this loop only while the channel is open.
                                let _ = job_tx.send((spec, cell));
                                in_flight += 1;
                            }
                            Next::Wait => break,
                            Next::Done => {
                                if in_flight == 0 {
                                    return Ok(());
                                }
                                break;
                            }
                        }
                    }
                    if in_flight == 0 {
                        return Ok(());
                    }
                    let Ok(done) = done_rx.recv() else { return Ok(()) };
                    in_flight -= 1;
                    match done {
                        Done::Attempt(f) if f.cancelled => {
                            end.interrupted = true;
                        }
                        Done::Attempt(f) => {
                            record(plan, sink, &f)?;
                            end.recorded += 1;
                        }
                        Done::Fatal(e) => {
                            if fatal.is_none() {
                                fatal = Some(e);
                            }
                            stopping = true;
                        }
                    }
                    if cancel.is_stopping() && !stopping {
                        stopping = true;
                        end.interrupted = true;
                        sink.event(&Event::Interrupted)?;
                    }
                }
            })();
            drop(job_tx);
            if result.is_err() {
                // The record cannot be written: end what runs now rather than lose it silently.
                cancel.request_kill();
            }
            result
        })?;
        if let Some(source) = fatal {
            return Err(RunError::Spawn { program: self.attempts.target.program().to_owned(), source });
        }
        Ok(end)
    }

    /// One attempt at a time, on this thread: no hand-off to a worker and back, which costs two
    /// thread wake-ups per attempt and shows next to a test as short as `true`.
    fn run_inline(&self, plan: &mut dyn Plan, sink: &mut dyn EventSink) -> Result<RunEnd, RunError> {
        let started = Instant::now();
        let cancel = self.attempts.cancel;
        let mut end = RunEnd::default();
        loop {
            if cancel.is_stopping() {
                end.interrupted = true;
                sink.event(&Event::Interrupted)?;
                return Ok(end);
            }
            if self.budget.is_some_and(|b| started.elapsed() >= b) {
                end.budget_spent = true;
                sink.event(&Event::BudgetSpent)?;
                return Ok(end);
            }
            let spec = match plan.next() {
                Next::Run(spec) => spec,
                // Nothing is in flight here, so a plan that waits has nothing left to wait for.
                Next::Wait | Next::Done => return Ok(end),
            };
            let finished = match self.attempts.run(&spec, &plan.cells()[spec.cell], 0, Slot::default(), &[]) {
                Ok(f) => f,
                Err(source) => {
                    return Err(RunError::Spawn { program: self.attempts.target.program().to_owned(), source })
                }
            };
            if finished.cancelled {
                end.interrupted = true;
                continue;
            }
            record(plan, sink, &finished)?;
            end.recorded += 1;
        }
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
