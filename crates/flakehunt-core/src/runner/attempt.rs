//! Running one attempt of a cell: building the launch from target, cell and profile, starting
//! it, waiting, and turning the result into an [`Attempt`] record. Main type: [`AttemptRunner`].

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::SystemTime;

use crate::exec::{Cancel, Cutoff, Execution, Launch, Limit, Limits, ProcessTree, Running, Status, Watchdog};
use crate::oracle::Oracle;
use crate::plan::{AttemptSpec, CellSpec, Setting, Target};
use crate::profile::{ApplyProfile, Profile, ProfileEnv};
use crate::record::{Attempt, Effect, HangCheck, Mode, Outcome, RedactAttempt};
use crate::signature::AttemptSignature;
use crate::warm::{Start, WarmStart};

/// Everything needed to run attempts of one hunt, shared by its workers. Cloned to run in
/// another directory or environment (fire runs each level in its own sandbox).
#[derive(Debug, Clone)]
pub struct AttemptRunner<'a> {
    /// `FLAKEHUNT_RUN_ID`.
    pub run_id: String,
    /// The command under test.
    pub target: Target,
    /// Per-attempt limits.
    pub limits: Limits,
    /// Variables every attempt gets besides the `FLAKEHUNT_*` ones (e.g. `FLAKEHUNT_STATE`).
    pub env: Vec<(String, String)>,
    /// Start from an empty environment (clean room) before `env`.
    pub env_clear: bool,
    /// Working directory of the attempts.
    pub cwd: Option<PathBuf>,
    /// The process tree bookkeeping.
    pub tree: &'a ProcessTree,
    /// The watchdog, told about every live process group.
    pub watchdog: Option<&'a Watchdog>,
    /// Cancellation.
    pub cancel: &'a Cancel,
    /// What the hunt's profiles share.
    pub profiles: &'a ProfileEnv,
    /// Per-cell working directory and scrubbed environment (matrix clean rooms), by cell name.
    pub rooms: &'a std::collections::BTreeMap<String, Room>,
    /// Oracles beyond the exit code; none keeps the attempt path free of regex work.
    pub oracle: Option<&'a Oracle>,
    /// Warm attempts' parents, when the hunt runs warm; none keeps the attempt path as it is.
    pub warm: Option<&'a dyn WarmStart>,
    /// The checks of failures the exit status hides, when any is on.
    pub checks: Option<&'a crate::checks::CheckRun>,
    /// Whether a passing attempt whose test runner says it ran no test stops the hunt (see
    /// [`super::replay::ran_no_test`]): a hunt or sweep of a command, which nothing else
    /// judges; not an adapter's (checked up front), a suite's or a verification's (they judge a
    /// test that did not run themselves), nor a matrix's (a cell may make a test skip itself).
    pub stops_on_no_test: bool,
}

/// Where a cell's attempts run when it has a room of its own.
#[derive(Debug, Clone)]
pub struct Room {
    /// Working directory.
    pub cwd: PathBuf,
    /// The whole environment (the attempt starts from an empty one).
    pub env: Vec<(String, String)>,
}

/// A finished attempt with its captured output, before it is recorded.
#[derive(Debug)]
pub struct Finished {
    /// The record.
    pub attempt: Attempt,
    /// Captured stdout head.
    pub stdout: Vec<u8>,
    /// Captured stderr head.
    pub stderr: Vec<u8>,
    /// Ended by a cancellation: not a result, not recorded.
    pub cancelled: bool,
    /// Why this and further attempts run cold though the hunt runs warm, the first time.
    pub runs_cold: Option<String>,
}

/// What an attempt carries besides its spec: fire's worker and level, and the plan's timeout.
#[derive(Debug, Clone, Copy, Default)]
pub struct Slot {
    /// Worker index (`FLAKEHUNT_WORKER`), when the hunt has workers.
    pub worker: Option<u32>,
    /// Ladder level.
    pub level: Option<u32>,
    /// The plan's hang limits for this attempt (the adaptive hunt's hang rule), before the
    /// hunt's `--timeout`.
    pub limits: crate::plan::AttemptLimits,
    /// When the hunt's budget ends, for a plan whose attempts end with it.
    pub budget_end: Option<std::time::Instant>,
}

impl AttemptRunner<'_> {
    /// Runs one attempt, its record [sealed](Finished::seal) (redacted, its signature taken).
    /// `Err` only when the program cannot be started at all (not found, not executable): that
    /// stops a hunt instead of filling it with spawn errors.
    pub fn run(
        &self,
        spec: &AttemptSpec,
        cell: &CellSpec,
        worker: usize,
        slot: Slot,
        extra_env: &[(String, String)],
    ) -> Result<Finished, std::io::Error> {
        let mut finished = self.run_unsealed(spec, cell, worker, slot, extra_env)?;
        finished.seal();
        Ok(finished)
    }

    /// Runs one attempt and leaves its record as the target wrote it: output tails and logs
    /// not redacted, no signature yet. For a caller that reads the output first (a suite's
    /// per-test results), then [seals](Finished::seal) the record before anything writes it.
    pub fn run_unsealed(
        &self,
        spec: &AttemptSpec,
        cell: &CellSpec,
        worker: usize,
        slot: Slot,
        extra_env: &[(String, String)],
    ) -> Result<Finished, std::io::Error> {
        let placeholders: Vec<(String, String)> = cell
            .overlay
            .iter()
            .filter_map(|s| match s {
                Setting::Placeholder { name, value } => Some((name.clone(), value.clone())),
                _ => None,
            })
            .collect();
        let (program, args) = self.target.program_and_args(&placeholders);
        let attempt_tag = format!("{}.{}", self.run_id, spec.id);
        let room = self.rooms.get(&cell.name);
        let mut env: Vec<(OsString, Option<OsString>)> = Vec::with_capacity(self.env.len() + extra_env.len() + 8);
        let room_env = room.map(|r| r.env.as_slice()).unwrap_or_default();
        for (k, v) in room_env.iter().chain(&self.env).chain(extra_env) {
            env.push((k.into(), Some(v.into())));
        }
        env.push(("FLAKEHUNT_RUN_ID".into(), Some(self.run_id.clone().into())));
        env.push(("FLAKEHUNT_CELL".into(), Some(cell.name.clone().into())));
        env.push(("FLAKEHUNT_ITERATION".into(), Some(spec.iteration.to_string().into())));
        env.push(("FLAKEHUNT_ATTEMPT".into(), Some(attempt_tag.clone().into())));
        if let Some(w) = slot.worker {
            env.push(("FLAKEHUNT_WORKER".into(), Some(w.to_string().into())));
        }
        if let Some(c) = self.checks {
            // The attempt's own PYTHONPATH (a room's, a suite run's plugins), else flakehunt's.
            let given = env.iter().rev().find(|(k, _)| k == "PYTHONPATH").map(|(_, v)| v.clone());
            let pythonpath = given.unwrap_or_else(|| std::env::var_os("PYTHONPATH"));
            env.extend(c.env(pythonpath).into_iter().map(|(k, v)| (k, Some(v))));
        }
        let mut launch = Launch {
            program,
            args,
            env_clear: self.env_clear || room.is_some(),
            env,
            cwd: self.target.working_dir(room.map(|r| r.cwd.as_path()).or(self.cwd.as_deref())),
            setup: Default::default(),
        };
        for setting in &cell.overlay {
            match setting {
                Setting::Env { name, value } => launch.env.push((name.into(), value.as_ref().map(Into::into))),
                Setting::Rlimit { name, value } => launch.setup.rlimits.extend(Limit::named(name, *value)),
                Setting::Placeholder { .. } => {}
            }
        }
        launch.uncache_go_tests();
        // Built once: matrix and fire cells have no profile of their own.
        static DEFAULT_PROFILE: std::sync::LazyLock<Profile> = std::sync::LazyLock::new(Profile::default_profile);
        let profile = cell.profile.as_ref().unwrap_or(&DEFAULT_PROFILE);
        let prepared = profile.prepare(&mut launch, self.profiles, worker, spec.id);
        let cgroups = prepared.cgroups();

        let marker = format!("FLAKEHUNT_ATTEMPT={attempt_tag}");
        let (mut mode, mut runs_cold) = (Mode::Cold, None);
        let mut lost_at_start: Option<String> = None;
        // An attempt the plan wants cold (a calibration of what a cold start adds) skips the warm
        // parents.
        let warm = self.warm.filter(|_| !spec.cold);
        let started = match warm.map(|w| w.start(&cell.name, &launch, &marker)) {
            None => Running::spawn(&launch, self.tree, marker),
            Some(Ok(Start::Warm(running))) => {
                mode = Mode::Warm;
                Ok(running)
            }
            Some(Ok(Start::Cold { say, lost })) => {
                runs_cold = say;
                lost_at_start = lost;
                Running::spawn(&launch, self.tree, marker)
            }
            Some(Err(e)) => {
                mode = Mode::Warm;
                Err(e)
            }
        };
        let running = match started {
            Ok(r) => r,
            // It will fail the same way every time: not evidence, the end of the hunt.
            Err(e) if crate::exec::error_repeats(&e) => return Err(e),
            Err(e) => return Ok(Finished { runs_cold, ..self.spawn_error(spec, cell, slot, &e, mode) }),
        };
        // The watchdog is not told about each attempt: it finds the hunt's processes (and their
        // groups) by FLAKEHUNT_RUN_ID if flakehunt dies, which spares two messages and two
        // wake-ups per attempt. Only cgroups, which it cannot find that way, are announced.
        if let Some(w) = self.watchdog {
            cgroups.iter().for_each(|c| w.track_cgroup(c));
        }
        let active = prepared.start(running.pid(), self.cancel);
        running.settled();
        // Cloned only when the plan sets a limit: the sweep path keeps its limits as they are.
        let hang = slot.limits.hang(mode);
        let stop_at = slot.budget_end.filter(|_| slot.limits.end_with_budget);
        let execution = if hang.is_some() || stop_at.is_some() {
            running.wait(&Limits { hang, stop_at, ..self.limits.clone() }, self.cancel)
        } else {
            running.wait(&self.limits, self.cancel)
        };
        let limit = hang.filter(|h| h.limit < self.limits.timeout);
        let effect = active.finish(self.profiles, execution.seconds, execution.cpu_seconds);
        if let Some(w) = self.watchdog {
            cgroups.iter().for_each(|c| w.untrack_cgroup(c));
        }
        if let Some(why) = execution.lost.as_ref().filter(|_| !execution.cancelled) {
            // flakehunt's own helper died, not the target: this run is no evidence. The attempt
            // runs again, cold (the cell's warm parent is off now), and only that run is
            // recorded, saying why.
            let mut again = self.run(spec, cell, worker, slot, extra_env)?;
            again.runs_cold = Some(Self::run_again_line(why, spec.id));
            again.attempt.rerun = Some(why.clone());
            return Ok(again);
        }
        let hang = limit.map(|h| HangCheck {
            limit: h.limit.as_secs_f64(),
            idle: execution.idle_at_limit,
            confirm_limit: execution.confirm_limit.map(|d| d.as_secs_f64()),
        });
        let mut finished = self.finish(spec, cell, slot, execution, effect, &attempt_tag);
        finished.attempt.mode = mode;
        finished.attempt.hang = hang;
        finished.runs_cold = runs_cold;
        if let Some(why) = lost_at_start {
            // The warm parent died while its fork was starting this attempt: what ran there is
            // no evidence, and this cold run is the attempt run again.
            finished.runs_cold = Some(Self::run_again_line(&why, spec.id));
            finished.attempt.rerun = Some(why);
        }
        Ok(finished)
    }

    /// The line said once when the warm parent died while attempt `id` ran in it.
    fn run_again_line(why: &str, id: u64) -> String {
        format!(
            "{why} while attempt {id} ran: that is flakehunt's helper, not the target, so the attempt was run again cold, and the cell's later attempts run cold"
        )
    }

    fn finish(
        &self,
        spec: &AttemptSpec,
        cell: &CellSpec,
        slot: Slot,
        ex: Execution,
        effect: Effect,
        tag: &str,
    ) -> Finished {
        let (exit_code, signal) = match ex.status {
            Status::Exited(c) => (Some(c), None),
            Status::Signaled(s) => (None, Some(s)),
        };
        let mut outcome = if ex.timed_out.is_some() {
            match ex.cutoff {
                // Ended by flakehunt's own limit while still at work, or by the budget: the
                // attempt says nothing either way.
                Some(Cutoff::Busy | Cutoff::Budget) => Outcome::Slow,
                Some(Cutoff::Timeout | Cutoff::Hung) | None => Outcome::Timeout,
            }
        } else if signal.is_some() {
            Outcome::Crash
        } else if exit_code != Some(0) {
            Outcome::Fail
        } else if !ex.leaked.is_empty() {
            Outcome::Leak
        } else {
            Outcome::Pass
        };
        let mut oracle = None;
        let mut keep_distinct = false;
        if let Some(o) = self.oracle {
            let judged = o.judge(outcome, &ex);
            (outcome, oracle, keep_distinct) = (judged.outcome, judged.reason, judged.keep_logs);
        }
        // What the checks found (read from the output as the target wrote it): a passing
        // attempt fails; a failure they caused (or that exited 0) is named by them when sealed.
        let hidden = match self.checks {
            Some(c) if ex.timed_out.is_none() => c.findings(tag, || texts_of(&ex.stdout), || texts_of(&ex.stderr)),
            _ => Vec::new(),
        };
        if !hidden.is_empty() && matches!(outcome, Outcome::Pass | Outcome::Leak) {
            outcome = Outcome::Fail;
        }
        let keep_logs = outcome != Outcome::Pass || keep_distinct;
        let attempt = Attempt {
            id: spec.id,
            cell: cell.name.clone(),
            iteration: spec.iteration,
            started_at: rfc3339(ex.started_at),
            seconds: ex.seconds,
            outcome,
            exit_code,
            signal,
            termination: ex.timed_out,
            stdout_hash: ex.stdout.hash(),
            stdout_tail: ex.stdout.tail_text(),
            stderr_tail: ex.stderr.tail_text(),
            stdout_bytes: ex.stdout.total(),
            stderr_bytes: ex.stderr.total(),
            oracle,
            leaked: ex.leaked,
            effect,
            signature: None,
            worker: slot.worker,
            level: slot.level,
            phase: spec.phase.clone(),
            log: keep_logs.then(|| format!("logs/{}", spec.id)),
            load: crate::host::load_average_1m(),
            error: None,
            cpu_seconds: ex.cpu_seconds,
            suite: None,
            mode: Mode::Cold,
            hidden,
            rerun: None,
            hang: None,
        };
        let (stdout, stderr) = match keep_logs {
            false => (Vec::new(), Vec::new()),
            true => (ex.stdout.into_head(), ex.stderr.into_head()),
        };
        Finished { attempt, stdout, stderr, cancelled: ex.cancelled, runs_cold: None }
    }

    fn spawn_error(&self, spec: &AttemptSpec, cell: &CellSpec, slot: Slot, e: &std::io::Error, mode: Mode) -> Finished {
        let attempt = Attempt {
            id: spec.id,
            cell: cell.name.clone(),
            iteration: spec.iteration,
            started_at: rfc3339(SystemTime::now()),
            seconds: 0.0,
            outcome: Outcome::SpawnError,
            exit_code: None,
            signal: None,
            termination: None,
            stdout_tail: String::new(),
            stderr_tail: String::new(),
            stdout_bytes: 0,
            stderr_bytes: 0,
            stdout_hash: None,
            oracle: None,
            leaked: Vec::new(),
            effect: Effect::default(),
            signature: None,
            worker: slot.worker,
            level: slot.level,
            phase: spec.phase.clone(),
            log: None,
            load: None,
            error: Some(e.to_string()),
            cpu_seconds: None,
            suite: None,
            mode,
            hidden: Vec::new(),
            rerun: None,
            hang: None,
        };
        Finished { attempt, stdout: Vec::new(), stderr: Vec::new(), cancelled: false, runs_cold: None }
    }
}

impl Finished {
    /// Makes the record what may be written: unless `--no-redact`, the secrets in its output
    /// tails, logs, oracle reason, leaked commands, the variables its profile set and its start
    /// error redacted; then its signature taken from the redacted tails. Once per attempt, after
    /// whatever reads the output has read it (so parsing never sees a marker) and before
    /// anything writes or shows it (so the record, the logs, the live display and every report
    /// get the same text).
    pub fn seal(&mut self) {
        if crate::redact::enabled() {
            self.attempt.redact();
            self.stdout = redacted_log(std::mem::take(&mut self.stdout));
            self.stderr = redacted_log(std::mem::take(&mut self.stderr));
        }
        self.attempt.signature = self.attempt.signature_of();
    }
}

/// A stream's captured text: its head, and its tail when the head did not hold it all.
fn texts_of(c: &crate::exec::Capture) -> String {
    let mut text = String::from_utf8_lossy(c.head()).into_owned();
    if c.dropped() > 0 {
        text.push('\n');
        text.push_str(&c.tail_text());
    }
    text
}

/// A log with its secrets redacted (the common case, none, does not copy it).
fn redacted_log(log: Vec<u8>) -> Vec<u8> {
    match crate::redact::bytes(&log) {
        std::borrow::Cow::Borrowed(_) => log,
        std::borrow::Cow::Owned(redacted) => redacted,
    }
}

/// RFC 3339 with milliseconds, UTC.
pub fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}
