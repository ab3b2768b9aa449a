//! A suite hunt's runs through the normal attempt runner: [`SuiteExecution`] gives each attempt
//! its own argv (the seeded order, or a confirmation run's tests) and reads its per-test results
//! into the attempt record; [`Live`] runs the classification's requests as recorded attempts of
//! the baseline cell, answering first from those a resumed record already holds.

use std::path::Path;

use super::analyse::{Replay, Runs};
use super::record::{role_name, AttemptTests, Role};
use super::setup::{Request, SuiteSetup};
use super::written::WrittenIds;
use super::TestId;
use crate::events::{Event, EventSink};
use crate::exec::{Cancel, Watchdog};
use crate::plan::{AttemptSpec, CellSpec, Shard, Target};
use crate::record::{Outcome, RecordError};
use crate::runner::{AttemptRunner, Execute, Finished, Slot};

/// Runs suite attempts: a plan's attempt runs the selection in the order its id and the seed
/// give; [`Self::run_request`] runs anything else the classification asks for.
#[derive(Debug, Clone)]
pub struct SuiteExecution<'a> {
    /// The hunt's attempt runner (its target only gives the working directory).
    pub inner: AttemptRunner<'a>,
    /// The runner and the selection.
    pub setup: &'a SuiteSetup,
    /// The hunt's seed, which with an attempt's id gives its order.
    pub seed: u64,
    /// How the selection's ids are written: requests come, and results go, as written.
    pub ids: &'a WrittenIds,
    /// [`RUNS_COLD`] has been said.
    pub said_cold: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Where pytest runs load flakehunt's plugins from ([`super::setup::write_plugins`]).
    pub plugins: std::path::PathBuf,
}

/// Said once, when a warm suite runs its first attempt that starts a new interpreter.
const RUNS_COLD: &str =
    "the repeat runs (flakehunt's plugin, loaded at pytest's start) and the reproducer checks run cold";

impl SuiteExecution<'_> {
    /// Runs `req` (its ids as written) as the attempt `spec`, with its per-test results in
    /// `attempt.suite`: the run gets the real ids, its output is read as the runner wrote it,
    /// then the record is sealed and its ids written.
    pub fn run_request(
        &self,
        spec: &AttemptSpec,
        cell: &CellSpec,
        worker: usize,
        slot: Slot,
        req: &Request,
    ) -> Result<Finished, std::io::Error> {
        let req = &self.ids.raw_request(req);
        let prepared = self.setup.prepare(req, spec.id, &self.plugins)?;
        let target =
            Target { argv: prepared.invocation.argv.clone(), shell: false, dir: self.inner.target.dir.clone() };
        let mut runner = AttemptRunner { target, ..self.inner.clone() };
        // A repeat run loads flakehunt's plugin at pytest's start, and a reproducer is checked
        // as the user will paste it: both start a new interpreter.
        let cold = matches!(req.role, Role::Repeat | Role::RepeatAll | Role::Reproducer) && runner.warm.is_some();
        if cold {
            runner.warm = None;
        }
        let plain;
        let cell = if req.role == Role::Reproducer {
            plain = as_pasted(&mut runner, cell, self.setup);
            &plain
        } else {
            cell
        };
        let mut finished = match runner.run_unsealed(spec, cell, worker, slot, &prepared.invocation.env) {
            Ok(f) => f,
            Err(e) => {
                prepared.discard();
                return Err(e);
            }
        };
        if cold && !self.said_cold.swap(true, std::sync::atomic::Ordering::Relaxed) {
            finished.runs_cold = Some(RUNS_COLD.to_owned());
        }
        let mut output = String::from_utf8_lossy(&finished.stdout).into_owned();
        output.push('\n');
        output.push_str(&finished.attempt.stdout_tail);
        // Read before anything is redacted: a marker in a test's id would hide its result.
        let source = self.inner.target.dir.as_deref().unwrap_or(Path::new("."));
        let (mut tests, hidden) = self.setup.results(req, &prepared, &finished.attempt, &output, source);
        drop(output);
        // A test pytest failed with the thread check's warning is named by the exception behind
        // it (pytest's own line names only the warning).
        for f in finished.attempt.hidden.iter().filter(|f| f.runner_failed) {
            let failed = tests.tests.iter_mut().find(|r| Some(&r.id) == f.test.as_ref() && r.outcome.is_failure());
            if let Some(r) = failed {
                r.message = Some(f.summary.clone());
            }
        }
        finished.attempt.suite = Some(Box::new(tests));
        if !hidden.is_empty() {
            // A Rust test whose threads panicked passed: the check fails it, and the attempt.
            if matches!(finished.attempt.outcome, Outcome::Pass | Outcome::Leak) {
                finished.attempt.outcome = Outcome::Fail;
            }
            finished.attempt.hidden.extend(hidden.into_iter().map(crate::checks::Finding::from));
        }
        finished.seal();
        seal_suite_part(&mut finished.attempt, self.ids);
        Ok(finished)
    }
}

/// Makes the suite part of a [sealed](Finished::seal) attempt what may be written: its
/// failures' messages redacted (they are output too) and its ids written; then the signature
/// named by the tests that failed (the attempt's own output may be in a file, and the display
/// shows each new signature).
pub(crate) fn seal_suite_part(attempt: &mut crate::record::Attempt, ids: &WrittenIds) {
    let Some(tests) = attempt.suite.as_deref_mut() else { return };
    if crate::redact::enabled() {
        tests.tests.iter_mut().filter_map(|r| r.message.as_mut()).for_each(crate::redact::in_place);
    }
    ids.write_tests(tests);
    if let Some(signature) = attempt.signature.as_mut() {
        let failed = failed_tests(tests);
        if !failed.is_empty() {
            let status = signature.split(':').next().unwrap_or_default().to_owned();
            *signature = format!("{status}: failed: {failed}");
        }
    }
}

/// What sealing an attempt of a suite record written with `--no-redact` adds, to read it as a
/// redacted one holds it: its suite part as the live run seals it (see
/// [`seal_suite_part`]), with the ids its selection is written as. None for a record of
/// another kind.
pub fn seal_part(manifest: &crate::record::Manifest) -> Option<crate::record::SealPart> {
    let selection = manifest.extra.suite.as_ref()?.selection.as_slice();
    let ids = WrittenIds::new(selection);
    Some(std::sync::Arc::new(move |a: &mut crate::record::Attempt| seal_suite_part(a, &ids)))
}

/// The variables flakehunt gives every attempt, which a user's shell does not have.
const ATTEMPT_VARIABLES: [&str; 5] =
    ["FLAKEHUNT_RUN_ID", "FLAKEHUNT_CELL", "FLAKEHUNT_ITERATION", "FLAKEHUNT_ATTEMPT", "FLAKEHUNT_WORKER"];

/// Makes `runner` run a reproducer as a user who pastes it into their shell would: in the
/// directory the hunt was started in (a pytest reproducer starts with `env -C ROOT` when the
/// rootdir is elsewhere; a Go one runs in the package's directory, as documented), with the
/// hunt's own environment, no profile or overlay (the returned cell keeps only the baseline's
/// name), and without the `FLAKEHUNT_*` variables. Those are unset by a shell that stays the
/// attempt's main process, so that flakehunt's watchdog still finds the attempt's process group
/// by them if flakehunt is killed.
fn as_pasted(runner: &mut AttemptRunner<'_>, cell: &CellSpec, setup: &SuiteSetup) -> CellSpec {
    if setup.framework() == super::Framework::Pytest {
        runner.target.dir = None;
    }
    runner.env.clear();
    let script = format!("unset {}; \"$@\"", ATTEMPT_VARIABLES.join(" "));
    let mut argv = vec!["sh".to_owned(), "-c".to_owned(), script, "flakehunt-reproducer".to_owned()];
    argv.append(&mut runner.target.argv);
    runner.target.argv = argv;
    CellSpec { name: cell.name.clone(), profile: None, overlay: Vec::new() }
}

impl Execute for SuiteExecution<'_> {
    fn run(
        &self,
        spec: &AttemptSpec,
        cell: &CellSpec,
        worker: usize,
        slot: Slot,
        _extra_env: &[(String, String)],
    ) -> Result<Finished, std::io::Error> {
        let req = self.ids.written_request(&self.setup.shuffled(self.seed, spec.id));
        let mut finished = self.run_request(spec, cell, worker, slot, &req)?;
        if let (Some(t), super::setup::SuiteRunner::Pytest { .. }) =
            (finished.attempt.suite.as_deref_mut(), &self.setup.runner)
        {
            t.strategy = Some(super::order::OrderStrategy::of_attempt(spec.id));
        }
        Ok(finished)
    }

    fn cancel(&self) -> &Cancel {
        self.inner.cancel
    }

    fn program(&self) -> &str {
        match &self.setup.runner {
            super::setup::SuiteRunner::Pytest { pytest, .. } => &pytest.python,
            _ => self.inner.target.program(),
        }
    }

    fn watchdog(&self) -> Option<&Watchdog> {
        self.inner.watchdog
    }

    fn in_dir(&self, dir: &Path, env: Vec<(String, String)>) -> Self {
        Self { inner: self.inner.in_dir(dir, env), ..self.clone() }
    }

    fn with_shell(&self, script: &str) -> Self {
        Self { inner: self.inner.with_shell(script), ..self.clone() }
    }
}

/// The ids and iterations of the classification's attempts: after the plan's, and in a sharded
/// hunt on this shard's residue, so that the shards' records merge without clashing. Their
/// `FLAKEHUNT_ITERATION` continues the plan's (the plan's runs, then 1, 2, ...).
#[derive(Debug, Clone, Copy)]
pub struct Ids {
    base: u64,
    runs: u64,
    stride: u64,
    next: u64,
}

impl Ids {
    /// The ids after a plan of `planned` attempts (all shards) of `runs` per cell; `last` is the
    /// largest id the record holds.
    pub fn new(planned: u64, runs: u64, shard: Option<Shard>, last: Option<u64>) -> Self {
        let (stride, offset) = shard.map_or((1, 0), |s| (u64::from(s.count), u64::from(s.index - 1)));
        // The first id at or after the plan's that this shard owns.
        let base = planned + (offset + stride - planned % stride) % stride;
        let next = match last {
            Some(id) if id >= base => (id - base) / stride + 1,
            _ => 0,
        };
        Self { base, runs, stride, next }
    }

    /// Ids taken so far (a resumed hunt's included).
    pub fn taken(&self) -> u64 {
        self.next
    }

    /// The next id and its iteration.
    pub fn take(&mut self) -> (u64, u64) {
        let k = self.next;
        self.next += 1;
        (self.base + k * self.stride, self.runs + 1 + k)
    }
}

/// The classification's runs in a live hunt.
pub struct Live<'a> {
    /// How attempts run.
    pub exec: &'a SuiteExecution<'a>,
    /// The baseline cell, where every classification run goes.
    pub cell: CellSpec,
    /// The recorder and the display.
    pub sink: &'a mut dyn EventSink,
    /// The runs a resumed record already holds.
    pub replay: Replay,
    /// The next attempt's id.
    pub ids: Ids,
    /// The record could not be written: nothing more runs.
    pub error: Option<RecordError>,
    /// The runner could not be started at all.
    pub fatal: Option<std::io::Error>,
}

/// Runs a failing test's classification takes, about: three alone, a bisection of a few, two
/// reproducer checks. Only the progress bar's length depends on it.
const RUNS_PER_TEST: u64 = 12;

impl Runs for Live<'_> {
    fn classifying(&mut self, tests: &[TestId]) {
        let done = self.ids.taken();
        let planned = done + tests.len() as u64 * RUNS_PER_TEST;
        for event in [Event::Classifying { tests: tests.len() }, Event::Started { planned, done }] {
            if let Err(e) = self.sink.event(&event) {
                self.error.get_or_insert(e);
            }
        }
    }

    fn run(&mut self, req: &Request) -> Option<AttemptTests> {
        if let Some(t) = self.replay.take(req) {
            return Some(t);
        }
        if self.error.is_some() || self.fatal.is_some() || self.exec.cancel().is_stopping() {
            return None;
        }
        let (id, iteration) = self.ids.take();
        let spec = AttemptSpec { id, cell: 0, iteration, phase: Some(role_name(req.role).to_owned()), cold: false };
        match self.exec.run_request(&spec, &self.cell, 0, Slot::default(), req) {
            Ok(f) if f.cancelled => None,
            Ok(f) => {
                let event =
                    Event::AttemptFinished { attempt: &f.attempt, stdout: &f.stdout, stderr: &f.stderr, token: None };
                let said = f.runs_cold.as_deref().map_or(Ok(()), |why| self.sink.event(&Event::RunsCold(why)));
                if let Err(e) = said.and_then(|()| self.sink.event(&event)) {
                    self.error = Some(e);
                    return None;
                }
                f.attempt.suite.map(|t| *t)
            }
            Err(e) => {
                self.fatal = Some(e);
                None
            }
        }
    }
}

/// The tests of `t` that failed, the first three by id, then how many more.
fn failed_tests(t: &AttemptTests) -> String {
    let mut ids: Vec<&str> = t.tests.iter().filter(|r| r.outcome.is_failure()).map(|r| r.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    let more = ids.len().saturating_sub(3);
    ids.truncate(3);
    let mut text = ids.join(", ");
    if more > 0 {
        text.push_str(&format!(" and {more} more"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_ids_follow_the_plan_on_the_shards_residue() {
        let mut ids = Ids::new(20, 10, None, Some(19));
        assert_eq!(ids.take(), (20, 11));
        assert_eq!(ids.take(), (21, 12));
        let shard = Shard { index: 2, count: 3 };
        let mut ids = Ids::new(20, 10, Some(shard), Some(19));
        assert_eq!(ids.take(), (22, 11));
        assert_eq!(ids.take(), (25, 12));
        assert!(shard.owns(22) && shard.owns(25));
        let mut resumed = Ids::new(20, 10, Some(shard), Some(25));
        assert_eq!(resumed.take(), (28, 13), "a resumed hunt continues after its last");
    }
}
