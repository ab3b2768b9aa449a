//! Climbing the ladder: for each level, a fresh sandbox copy of the state, W workers released
//! together by a barrier to share R runs, then a fingerprint of the sandbox compared with a
//! sequential reference of R runs, tokens, checks and a verdict. Main type: [`FireRunner`].

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Barrier};
use std::time::Instant;

use super::options::{reference_cell, FireOptions};
use super::resume::Resumed;
use super::Level;
use crate::copy::{CopyOptions, CopyStats};
use crate::events::{Event, EventSink};
use crate::plan::{AttemptSpec, CellSpec, Setting};
use crate::record::{Outcome, Record, RecordError, Recorder};
use crate::runner::{Execute, Finished, Slot};
use crate::schema::fire::{CheckResult, LevelReport};
use crate::state::{
    compare, trace_tokens, Finding, FindingKind, Fingerprint, FingerprintError, Normalizer, Sandbox, SandboxError,
    TokenError,
};

/// Attempt ids of `--check` runs start here, far above any plan's, so that the marker by which
/// leaked processes are attributed never names a run.
const CHECK_IDS: u64 = 1 << 48;

/// Runs a fire hunt.
#[derive(Debug)]
pub struct FireRunner<E> {
    /// Template of every run: target, limits, process tree, watchdog and cancellation (or a
    /// fake, in tests). Each level runs a copy of it in its sandbox.
    pub attempts: E,
    /// What to climb and how to judge.
    pub options: FireOptions,
    /// Masks volatile content before states are compared.
    pub normalizer: Normalizer,
    /// Where sandboxes are created: `sandboxes/` in the record.
    pub sandboxes: PathBuf,
    /// Makes this hunt's `FLAKEHUNT_TOKEN`s unlike any other hunt's.
    pub token_salt: u32,
    /// No level starts once this long has passed since the climb started (a verification's
    /// `--budget`). Checked when a level ends, so that the first always runs whole: a level
    /// cut short is no evidence either way.
    pub budget: Option<std::time::Duration>,
}

/// Errors that stop a fire hunt. Failing runs and damaged states are findings, not errors.
#[derive(Debug, thiserror::Error)]
pub enum FireError {
    /// The record cannot be written or read back.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// A sandbox cannot be created or removed.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The original state or the reference cannot be fingerprinted.
    #[error(transparent)]
    Fingerprint(#[from] FingerprintError),
    /// Tokens cannot be traced.
    #[error(transparent)]
    Tokens(#[from] TokenError),
    /// The target (or a check's shell) cannot be started at all.
    #[error("cannot start '{program}'")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl crate::error_class::Classify for FireError {
    fn class(&self) -> crate::error_class::ErrorClass {
        match self {
            Self::Record(e) => crate::error_class::Classify::class(e),
            Self::Sandbox(e) => crate::error_class::Classify::class(e),
            Self::Fingerprint(e) => crate::error_class::Classify::class(e),
            Self::Tokens(e) => crate::error_class::Classify::class(e),
            // A target that cannot start will not start the next time either.
            Self::Spawn { .. } => crate::error_class::ErrorClass::Usage,
        }
    }
}

/// How a fire hunt ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FireEnd {
    /// Runs recorded.
    pub recorded: u64,
    /// The user interrupted.
    pub interrupted: bool,
    /// The budget ended before the ladder did.
    pub budget_spent: bool,
}

/// Where a fire hunt reports: the record (attempts, `levels.jsonl`, worker logs) and the live
/// display. The recorder comes first, so the display never shows an unrecorded run.
pub struct FireSinks<'s> {
    /// The record.
    pub recorder: &'s mut Recorder,
    /// The live display.
    pub display: &'s mut dyn EventSink,
}

impl FireSinks<'_> {
    fn event(&mut self, event: &Event<'_>) -> Result<(), RecordError> {
        self.recorder.event(event)?;
        self.display.event(event)
    }

    /// Records a finished run (and its line in `logs/worker-N.log`).
    fn run_finished(&mut self, f: &Finished, token: Option<&str>) -> Result<(), RecordError> {
        self.event(&Event::AttemptFinished { attempt: &f.attempt, stdout: &f.stdout, stderr: &f.stderr, token })
    }
}

/// A sequential reference: the state R runs leave when nothing runs concurrently.
struct Reference {
    cell: String,
    fingerprint: Fingerprint,
    /// Whether tokens are kept exactly once sequentially; if not, tracing them at the levels
    /// would only repeat the command's own habit.
    tokens_ok: bool,
}

/// What a group of runs (a reference or a level) left, besides its records.
#[derive(Default)]
struct Group {
    passed_tokens: Vec<String>,
    seconds: f64,
    interrupted: bool,
}

/// One finished run, sent from a worker to the thread that records.
struct Ran {
    token: Option<String>,
    result: Result<Finished, std::io::Error>,
}

impl<E: Execute> FireRunner<E> {
    /// Copies the state once and fingerprints the copy, so that a state that is too large for
    /// the free space, or a file named like a database that is not one, is refused before any
    /// run. The copy, not the original, is read: SQLite may create `-wal`/`-shm` files even
    /// for a read-only connection, and the original must stay byte-identical.
    /// Returns what the copy made and wrote, as every sandbox will.
    pub fn check_state(&self) -> Result<CopyStats, FireError> {
        let sandbox = self.sandbox("check", self.attempts.watchdog())?;
        Fingerprint::of(sandbox.path(), &self.normalizer)?;
        let copied = sandbox.copied();
        sandbox.remove()?;
        Ok(copied)
    }

    /// A fresh copy of the state named `name` in `sandboxes/`. A sandbox the user will not
    /// keep is the watchdog's to remove if flakehunt dies; a kept one belongs to the record.
    fn sandbox(&self, name: &str, watchdog: Option<&crate::exec::Watchdog>) -> Result<Sandbox, SandboxError> {
        let options = CopyOptions { follow_outside_links: self.options.follow_outside_links };
        Sandbox::create(self.options.state.as_deref(), &self.sandboxes, name, options, watchdog)
    }

    /// The watchdog a level's sandbox is told to, unless sandboxes are kept.
    fn level_watchdog(&self) -> Option<&crate::exec::Watchdog> {
        self.attempts.watchdog().filter(|_| !self.options.keep)
    }

    /// Climbs the ladder, recording into `sinks`. Stops at the first rejected level unless
    /// `all_levels`, and at an interruption. A `resumed` hunt (its record prepared by
    /// [`super::prepare_resume`]) skips the levels that finished.
    pub fn run(&self, sinks: &mut FireSinks<'_>, resumed: Option<&Resumed>) -> Result<FireEnd, FireError> {
        let ladder = &self.options.ladder.0;
        let mut end = FireEnd::default();
        let mut next_id = resumed.map_or(0, |r| r.next_id);
        let done = resumed.map_or(0, |r| r.kept);
        sinks.event(&Event::Started { planned: self.options.planned_runs(ladder.len()), done })?;
        let mut references: HashMap<u64, Reference> = HashMap::new();
        let started = Instant::now();
        for (i, &level) in ladder.iter().enumerate() {
            if self.attempts.cancel().is_stopping() {
                end.interrupted = true;
                break;
            }
            let index = i as u32 + 1;
            if resumed.is_some_and(|r| r.finished_levels.contains(&index)) {
                if self.judge(index, sinks)? && !self.options.all_levels {
                    break;
                }
                continue;
            }
            // The reference for R runs is made just before the first level of R runs needs it:
            // a hunt that stops at its first level never pays for the others.
            let reference = match references.entry(level.runs) {
                Entry::Occupied(known) => known.into_mut(),
                Entry::Vacant(slot) => match self.reference(level.runs, sinks, &mut next_id, &mut end)? {
                    Some(r) => slot.insert(r),
                    None => break,
                },
            };
            let Some(rejected) = self.level(index, level, reference, sinks, &mut next_id, &mut end)? else {
                break;
            };
            if rejected && !self.options.all_levels {
                break;
            }
            if self.budget.is_some_and(|b| started.elapsed() >= b) && i + 1 < ladder.len() {
                sinks.event(&Event::BudgetSpent)?;
                end.budget_spent = true;
                break;
            }
        }
        if let Ok(mut entries) = std::fs::read_dir(&self.sandboxes) {
            if entries.next().is_none() {
                let _ = std::fs::remove_dir(&self.sandboxes);
            }
        }
        Ok(end)
    }

    /// Runs the sequential reference of `runs` runs; `None` when interrupted.
    fn reference(
        &self,
        runs: u64,
        sinks: &mut FireSinks<'_>,
        next_id: &mut u64,
        end: &mut FireEnd,
    ) -> Result<Option<Reference>, FireError> {
        let cell = reference_cell(runs);
        sinks.event(&Event::ReferenceStarted { cell: &cell, runs })?;
        let mut sandbox = self.sandbox(&cell, self.level_watchdog())?;
        let group = self.run_group(&cell, 0, Level { workers: 1, runs }, sandbox.path(), sinks, next_id, end)?;
        if group.interrupted {
            end.interrupted = true;
            return Ok(None);
        }
        let fingerprint = Fingerprint::of(sandbox.path(), &self.normalizer)?;
        let findings = self.tokens(sandbox.path(), &group.passed_tokens)?;
        let Some(checks) = self.checks(sandbox.path(), runs)? else {
            end.interrupted = true;
            return Ok(None);
        };
        let report = LevelReport {
            level: 0,
            cell: cell.clone(),
            workers: 1,
            runs,
            reference: None,
            tokens_traced: self.options.trace_tokens,
            findings,
            checks,
            seconds: group.seconds,
            copied: self.options.state.is_some().then(|| sandbox.copied()),
            sandbox: self.keep(&mut sandbox, sinks.recorder.dir()),
        };
        sinks.event(&Event::LevelRecorded(&report))?;
        self.dispose(sandbox)?;
        Ok(Some(Reference { cell, fingerprint, tokens_ok: report.findings.is_empty() }))
    }

    /// Runs level `index` and judges it; `Some(rejected)`, or `None` when interrupted.
    fn level(
        &self,
        index: u32,
        level: Level,
        reference: &Reference,
        sinks: &mut FireSinks<'_>,
        next_id: &mut u64,
        end: &mut FireEnd,
    ) -> Result<Option<bool>, FireError> {
        let cell = level.name();
        let ladder = self.options.ladder.0.len();
        sinks.event(&Event::LevelStarted {
            index,
            of: ladder,
            cell: &cell,
            workers: level.workers,
            runs: level.runs,
        })?;
        let name = format!("level-{index}-{cell}");
        let mut sandbox = self.sandbox(&name, self.level_watchdog())?;
        let group = self.run_group(&cell, index, level, sandbox.path(), sinks, next_id, end)?;
        if group.interrupted {
            end.interrupted = true;
            return Ok(None);
        }
        let mut findings = match Fingerprint::of(sandbox.path(), &self.normalizer) {
            Ok(fingerprint) => compare(&reference.fingerprint, &fingerprint),
            // A state the runs damaged beyond reading is what fire looks for, not a reason to stop.
            Err(e) => vec![Finding::new(FindingKind::Integrity, ".", 1, e.to_string())],
        };
        let tokens_traced = self.options.trace_tokens && reference.tokens_ok;
        if tokens_traced {
            findings.extend(self.tokens(sandbox.path(), &group.passed_tokens)?);
        }
        let Some(checks) = self.checks(sandbox.path(), level.runs)? else {
            end.interrupted = true;
            return Ok(None);
        };
        let report = LevelReport {
            level: index,
            cell: cell.clone(),
            workers: level.workers,
            runs: level.runs,
            reference: Some(reference.cell.clone()),
            findings,
            checks,
            tokens_traced,
            seconds: group.seconds,
            copied: self.options.state.is_some().then(|| sandbox.copied()),
            sandbox: self.keep(&mut sandbox, sinks.recorder.dir()),
        };
        sinks.event(&Event::LevelRecorded(&report))?;
        self.dispose(sandbox)?;
        Ok(Some(self.judge(index, sinks)?))
    }

    /// Shows the verdict of finished level `index` and says whether it rejects. The verdict
    /// comes from the same analysis `report` runs on the record, so the live decision to stop
    /// and the summary cannot disagree.
    fn judge(&self, index: u32, sinks: &mut FireSinks<'_>) -> Result<bool, FireError> {
        let summary = crate::kind::summarize(&Record::open(sinks.recorder.dir())?)?;
        let judged = summary.fire.as_ref().and_then(|f| f.levels.iter().find(|l| l.level == index));
        let Some(judged) = judged else { return Ok(false) };
        sinks.event(&Event::LevelJudged(judged))?;
        Ok(judged.verdict.is_reject())
    }

    /// Runs `level.runs` runs of `cell` on `level.workers` workers in `dir`. Every worker's
    /// first run is released at the same moment (a barrier) to maximise collisions; then each
    /// worker pulls the next run from a shared counter as soon as its previous one ends.
    #[expect(clippy::too_many_arguments, reason = "one call site per kind of group, all private")]
    fn run_group(
        &self,
        cell_name: &str,
        index: u32,
        level: Level,
        dir: &Path,
        sinks: &mut FireSinks<'_>,
        next_id: &mut u64,
        end: &mut FireEnd,
    ) -> Result<Group, FireError> {
        let runner = self.runner_in(dir, &[]);
        let cell = CellSpec {
            name: cell_name.to_owned(),
            profile: None,
            overlay: vec![Setting::Placeholder { name: "state".into(), value: dir.to_string_lossy().into_owned() }],
        };
        let base = *next_id;
        *next_id += level.runs;
        let counter = AtomicU64::new(0);
        let barrier = Barrier::new(level.workers as usize);
        let abort = AtomicBool::new(false);
        let (tx, rx) = mpsc::channel::<Ran>();
        let started = Instant::now();
        let cancel = self.attempts.cancel();
        let mut group = Group::default();
        let mut failure: Option<FireError> = None;
        std::thread::scope(|scope| {
            for worker in 0..level.workers {
                let tx = tx.clone();
                let (runner, cell, counter, barrier, abort) = (&runner, &cell, &counter, &barrier, &abort);
                scope.spawn(move || {
                    barrier.wait();
                    loop {
                        if abort.load(Ordering::SeqCst) || cancel.is_stopping() {
                            return;
                        }
                        let n = counter.fetch_add(1, Ordering::SeqCst);
                        if n >= level.runs {
                            return;
                        }
                        let spec = AttemptSpec { id: base + n, cell: 0, iteration: n + 1, phase: None, cold: false };
                        let token = self.options.trace_tokens.then(|| self.token(spec.id));
                        let env: Vec<(String, String)> =
                            token.iter().map(|t| ("FLAKEHUNT_TOKEN".to_owned(), t.clone())).collect();
                        let slot = Slot { worker: Some(worker), level: Some(index), ..Slot::default() };
                        let result = runner.run(&spec, cell, worker as usize, slot, &env);
                        if tx.send(Ran { token, result }).is_err() {
                            return;
                        }
                    }
                });
            }
            drop(tx);
            for ran in rx {
                match ran.result {
                    Err(source) => {
                        abort.store(true, Ordering::SeqCst);
                        let program = self.attempts.program().to_owned();
                        failure.get_or_insert(FireError::Spawn { program, source });
                    }
                    Ok(f) if f.cancelled => group.interrupted = true,
                    Ok(_) if failure.is_some() => {}
                    Ok(f) => {
                        if let Err(e) = sinks.run_finished(&f, ran.token.as_deref()) {
                            // The record cannot be written: end what runs now rather than lose
                            // it silently.
                            abort.store(true, Ordering::SeqCst);
                            cancel.request_kill();
                            failure = Some(e.into());
                            continue;
                        }
                        end.recorded += 1;
                        if matches!(f.attempt.outcome, Outcome::Pass | Outcome::Leak) {
                            group.passed_tokens.extend(ran.token);
                        }
                    }
                }
            }
        });
        if let Some(e) = failure {
            return Err(e);
        }
        group.seconds = started.elapsed().as_secs_f64();
        group.interrupted |= cancel.is_stopping();
        Ok(group)
    }

    /// Runs the `--check` commands on a final state; `None` when interrupted.
    fn checks(&self, dir: &Path, runs: u64) -> Result<Option<Vec<CheckResult>>, FireError> {
        let mut results = Vec::new();
        for (n, command) in self.options.checks.iter().enumerate() {
            let runner = self.runner_in(dir, &[("FLAKEHUNT_RUNS", runs.to_string())]).with_shell(command);
            let spec = AttemptSpec {
                id: CHECK_IDS + n as u64,
                cell: 0,
                iteration: 1,
                phase: Some("check".into()),
                cold: false,
            };
            let cell = CellSpec { name: "check".into(), profile: None, overlay: Vec::new() };
            let f = runner
                .run(&spec, &cell, 0, Slot::default(), &[])
                .map_err(|source| FireError::Spawn { program: "sh".into(), source })?;
            if f.cancelled {
                return Ok(None);
            }
            let a = f.attempt;
            let passed = !a.outcome.is_failure() && a.outcome != Outcome::SpawnError;
            let why = (!passed).then(|| a.signature.or(a.error).unwrap_or_else(|| a.outcome.name().to_owned()));
            results.push(CheckResult { command: command.clone(), passed, exit_code: a.exit_code, why });
        }
        Ok(Some(results))
    }

    /// Token findings of a final state, when tokens are traced.
    fn tokens(&self, dir: &Path, tokens: &[String]) -> Result<Vec<Finding>, FireError> {
        if !self.options.trace_tokens {
            return Ok(Vec::new());
        }
        Ok(trace_tokens(dir, tokens)?)
    }

    /// The template runner, working in `dir` with `FLAKEHUNT_STATE` and `env` set.
    fn runner_in(&self, dir: &Path, env: &[(&str, String)]) -> E {
        let mut all = vec![("FLAKEHUNT_STATE".to_owned(), dir.to_string_lossy().into_owned())];
        all.extend(env.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
        self.attempts.in_dir(dir, all)
    }

    /// The token of run `id`: a shared prefix ending in a separator, as tracing requires, then
    /// 20 hex digits, long enough that the default mask of long hex strings hides it from the
    /// state comparison (each sandbox holds other tokens than the reference).
    fn token(&self, id: u64) -> String {
        format!("fht-{:08x}{:012x}", self.token_salt, id)
    }

    /// Marks a sandbox to be kept with `--keep`, returning where it is relative to the record.
    fn keep(&self, sandbox: &mut Sandbox, record: &Path) -> Option<String> {
        if !self.options.keep {
            return None;
        }
        sandbox.keep();
        let path = sandbox.path();
        // The sandbox's path is absolute; the record's may not be.
        let record = std::path::absolute(record).unwrap_or_else(|_| record.to_owned());
        Some(path.strip_prefix(&record).unwrap_or(path).to_string_lossy().into_owned())
    }

    /// Removes a sandbox now unless it is kept.
    fn dispose(&self, sandbox: Sandbox) -> Result<(), FireError> {
        if !self.options.keep {
            sandbox.remove()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::kind::fire::SANDBOXES;
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;
    use crate::events::Discard;
    use crate::exec::Cancel;
    use crate::kind::fire::{FireOptions, Ladder, ParseLadder, Verdict};
    use crate::record::Manifest;
    use crate::runner::FakeExecution;

    /// Climbs `ladder` with a fake execution that fails every run of level `failing`; returns
    /// the verdicts of the levels that ran and the runs started.
    fn climb(ladder: &str, failing: u32, all_levels: bool) -> (Vec<Verdict>, u64) {
        let dir = tempfile::tempdir().unwrap();
        let options = FireOptions {
            ladder: Ladder::parse(ladder).unwrap(),
            state: None,
            ignore: vec![],
            ignore_columns: vec![],
            checks: vec!["true".into()],
            trace_tokens: false,
            all_levels,
            keep: false,
            follow_outside_links: false,
        };
        let mut cells: Vec<CellSpec> = Vec::new();
        for level in &options.ladder.0 {
            for name in [reference_cell(level.runs), level.name()] {
                if !cells.iter().any(|c| c.name == name) {
                    cells.push(CellSpec { name, profile: None, overlay: vec![] });
                }
            }
        }
        let manifest: Manifest = serde_json::from_value(serde_json::json!({
            "format_version": 1, "tool_version": "0", "kind": "fire", "run_id": "r",
            "target": {"argv": ["t"]}, "plan": {"runs": 1, "jobs": 1, "timeout_seconds": 1.0,
            "grace_seconds": 1.0, "capture_bytes": 1}, "cells": cells, "seed": 1, "host": "h",
            "started_at": "2024-01-01T00:00:00Z", "extra": options
        }))
        .unwrap();
        let record = dir.path().join("record");
        let mut recorder = Recorder::create(&record, &manifest).unwrap();
        std::fs::create_dir(record.join(SANDBOXES)).unwrap();
        let decide = move |_: &AttemptSpec, _: &CellSpec, slot: Slot| {
            if slot.level == Some(failing) {
                Outcome::Fail
            } else {
                Outcome::Pass
            }
        };
        let (cancel, runs) = (Cancel::new().unwrap(), AtomicU64::new(0));
        let fire = FireRunner {
            attempts: FakeExecution::new(&decide, &cancel, &runs),
            options,
            normalizer: Normalizer::new::<&str>(&[], &[]).unwrap(),
            sandboxes: record.join(SANDBOXES),
            token_salt: 0,
            budget: None,
        };
        let end = fire.run(&mut FireSinks { recorder: &mut recorder, display: &mut Discard }, None).unwrap();
        assert!(!end.interrupted);
        let summary = crate::kind::summarize(&Record::open(&record).unwrap()).unwrap();
        let verdicts = summary.fire.unwrap().levels.iter().filter(|l| l.runs > 0).map(|l| l.verdict).collect();
        (verdicts, runs.load(Ordering::SeqCst))
    }

    #[test]
    fn the_ladder_stops_at_the_first_rejected_level() {
        let (verdicts, runs) = climb("2x4,3x4,4x4", 2, false);
        assert_eq!(verdicts, [Verdict::Accept, Verdict::RejectLoad]);
        // One reference of 4 runs (shared by every level of 4 runs), then two levels.
        assert_eq!(runs, 12);
    }

    #[test]
    fn all_levels_keeps_climbing_after_a_rejection() {
        let (verdicts, runs) = climb("2x4,3x4,4x4", 2, true);
        assert_eq!(verdicts, [Verdict::Accept, Verdict::RejectLoad, Verdict::Accept]);
        assert_eq!(runs, 16);
    }

    #[test]
    fn a_ladder_that_never_fails_is_accepted_with_a_reference_per_run_count() {
        let (verdicts, runs) = climb("2x2,2x6", 0, false);
        assert_eq!(verdicts, [Verdict::Accept, Verdict::Accept]);
        assert_eq!(runs, 2 + 2 + 6 + 6);
    }
}
