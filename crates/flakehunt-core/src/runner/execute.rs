//! The execution seam: "start an attempt, wait for it" as a trait, so that the runner, its stop
//! rules and fire's ladder run the same against real processes ([`AttemptRunner`]) and against
//! [`FakeExecution`], which decides outcomes without starting anything (for unit tests of the
//! logic above it). Runners are generic over it: one static call per attempt, no virtual call.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use super::{rfc3339, AttemptRunner, Finished, Slot};
use crate::exec::{Cancel, Watchdog};
use crate::plan::{AttemptSpec, CellSpec, Target};
use crate::record::{Attempt, Effect, Mode, Outcome};

/// Runs attempts of one hunt.
pub trait Execute: Sync + Sized {
    /// Runs one attempt to its end. `Err` only when the program cannot be started at all.
    fn run(
        &self,
        spec: &AttemptSpec,
        cell: &CellSpec,
        worker: usize,
        slot: Slot,
        extra_env: &[(String, String)],
    ) -> Result<Finished, std::io::Error>;
    /// The hunt's cancellation.
    fn cancel(&self) -> &Cancel;
    /// The program under test, for messages.
    fn program(&self) -> &str;
    /// The watchdog that removes what the hunt leaves if flakehunt dies (sandboxes), if any.
    fn watchdog(&self) -> Option<&Watchdog>;
    /// The same execution in `dir` with variables added (fire runs each level in a sandbox).
    fn in_dir(&self, dir: &Path, env: Vec<(String, String)>) -> Self;
    /// The same execution of a shell command instead of the target (fire's `--check`).
    fn with_shell(&self, script: &str) -> Self;
    /// Whether a passing attempt that ran no test stops the run (see
    /// [`AttemptRunner::stops_on_no_test`]).
    fn stops_on_no_test(&self) -> bool {
        false
    }
}

impl Execute for AttemptRunner<'_> {
    fn run(
        &self,
        spec: &AttemptSpec,
        cell: &CellSpec,
        worker: usize,
        slot: Slot,
        extra_env: &[(String, String)],
    ) -> Result<Finished, std::io::Error> {
        AttemptRunner::run(self, spec, cell, worker, slot, extra_env)
    }

    fn cancel(&self) -> &Cancel {
        self.cancel
    }

    fn program(&self) -> &str {
        self.target.program()
    }

    fn watchdog(&self) -> Option<&Watchdog> {
        self.watchdog
    }

    fn stops_on_no_test(&self) -> bool {
        self.stops_on_no_test
    }

    fn in_dir(&self, dir: &Path, env: Vec<(String, String)>) -> Self {
        let mut all = self.env.clone();
        all.extend(env);
        AttemptRunner { cwd: Some(dir.to_owned()), env: all, ..self.clone() }
    }

    fn with_shell(&self, script: &str) -> Self {
        AttemptRunner { target: Target::shell(script.to_owned()), ..self.clone() }
    }
}

/// Decides an attempt's outcome from what it is, without a process.
pub type Decide = dyn Fn(&AttemptSpec, &CellSpec, Slot) -> Outcome + Sync + Send;

/// An execution that starts nothing: each attempt's outcome is what `decide` says, at once.
/// Attempts of a shell command (fire's checks) pass.
pub struct FakeExecution<'a> {
    decide: &'a Decide,
    cancel: &'a Cancel,
    /// Whether this is a `--check` command rather than the target.
    check: bool,
    /// Attempts of the target run (not checks), over every copy `in_dir` makes.
    runs: &'a AtomicU64,
    /// Fail to start, as a missing program would.
    unstartable: bool,
}

impl<'a> FakeExecution<'a> {
    /// A fake execution whose outcomes `decide` gives; `runs` counts the attempts run.
    pub fn new(decide: &'a Decide, cancel: &'a Cancel, runs: &'a AtomicU64) -> Self {
        Self { decide, cancel, check: false, runs, unstartable: false }
    }

    /// A fake whose program cannot be started.
    pub fn unstartable(mut self) -> Self {
        self.unstartable = true;
        self
    }
}

impl Execute for FakeExecution<'_> {
    fn run(
        &self,
        spec: &AttemptSpec,
        cell: &CellSpec,
        _worker: usize,
        slot: Slot,
        _extra_env: &[(String, String)],
    ) -> Result<Finished, std::io::Error> {
        if self.unstartable {
            return Err(std::io::Error::from(std::io::ErrorKind::NotFound));
        }
        let outcome = if self.check {
            Outcome::Pass
        } else {
            self.runs.fetch_add(1, Ordering::SeqCst);
            (self.decide)(spec, cell, slot)
        };
        let exit_code = match outcome {
            Outcome::Pass | Outcome::Leak => Some(0),
            Outcome::Crash | Outcome::Timeout | Outcome::Slow | Outcome::SpawnError => None,
            _ => Some(1),
        };
        let attempt = Attempt {
            id: spec.id,
            cell: cell.name.clone(),
            iteration: spec.iteration,
            started_at: rfc3339(SystemTime::UNIX_EPOCH),
            seconds: 0.0,
            cpu_seconds: None,
            suite: None,
            outcome,
            exit_code,
            signal: (outcome == Outcome::Crash).then_some(9),
            termination: None,
            stdout_hash: None,
            stdout_tail: String::new(),
            stderr_tail: String::new(),
            stdout_bytes: 0,
            stderr_bytes: 0,
            oracle: None,
            leaked: Vec::new(),
            effect: Effect::default(),
            signature: outcome.is_failure().then(|| format!("{} (fake)", outcome.name())),
            worker: slot.worker,
            level: slot.level,
            phase: spec.phase.clone(),
            log: None,
            load: None,
            error: None,
            mode: Mode::Cold,
            hidden: Vec::new(),
            rerun: None,
            hang: None,
        };
        Ok(Finished { attempt, stdout: Vec::new(), stderr: Vec::new(), cancelled: false, runs_cold: None })
    }

    fn cancel(&self) -> &Cancel {
        self.cancel
    }

    fn program(&self) -> &str {
        "fake"
    }

    fn watchdog(&self) -> Option<&Watchdog> {
        None
    }

    fn in_dir(&self, _dir: &Path, _env: Vec<(String, String)>) -> Self {
        Self { ..*self }
    }

    fn with_shell(&self, _script: &str) -> Self {
        Self { check: true, ..*self }
    }
}
