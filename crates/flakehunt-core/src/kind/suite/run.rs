//! A suite hunt's runs through the normal attempt runner: [`SuiteExecution`] gives each attempt
//! its own argv (the seeded order, or a confirmation run's tests) and reads its per-test results
//! into the attempt record; [`Live`] runs the classification's requests as recorded attempts of
//! the baseline cell, answering first from those a resumed record already holds.

use std::path::Path;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::analyse::{Replay, Runs};
use super::record::{role_name, AttemptTests, Role};
use super::setup::{Request, SuiteSetup};
use super::side_by_side::MAX_AT_ONCE;
use super::written::WrittenIds;
use super::TestId;
use crate::events::{Event, EventSink};
use crate::exec::{Cancel, Watchdog};
use crate::kind::suite::setup::SetupRuns;
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
        let output = whole_output(&finished.stdout, &finished.attempt.stdout_tail, finished.attempt.stdout_bytes);
        // Read before anything is redacted: a marker in a test's id would hide its result.
        let source = self.inner.target.dir.as_deref().unwrap_or(Path::new("."));
        let (mut tests, hidden) = self.setup.results(req, &prepared, &finished.attempt, &output, source);
        drop(output);
        // A suite's run is judged by its tests' own results: one whose process failed though
        // every test reported and none failed (a coverage threshold, a plugin) passed, as the
        // per-cell counts say; its exit status stays in the record, and `failed_otherwise` why.
        // What a check found (a leak, a thread's exception) still fails it.
        if finished.attempt.outcome == crate::record::Outcome::Fail
            && finished.attempt.hidden.is_empty()
            && tests.failed_otherwise.is_some()
        {
            finished.attempt.outcome = crate::record::Outcome::Pass;
        }
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

/// An attempt's stdout as far as it was kept: the head when it holds all of it, else the tail
/// when no head was kept (a passing attempt's), else both (each line once when they meet).
fn whole_output(head: &[u8], tail: &str, total: u64) -> String {
    let head = String::from_utf8_lossy(head);
    if head.len() as u64 >= total {
        return head.into_owned();
    }
    if head.is_empty() || tail.len() as u64 >= total {
        return tail.to_owned();
    }
    format!("{head}\n{tail}")
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
        // Its order's strategy comes with the request, and is recorded with its results.
        let req = self.ids.written_request(&self.setup.shuffled(self.seed, spec.id));
        self.run_request(spec, cell, worker, slot, &req)
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
    /// The runs a resumed record already holds, and the runs had ahead of their asking.
    pub replay: Replay,
    /// The next attempt's id.
    pub ids: Ids,
    /// The record could not be written: nothing more runs.
    pub error: Option<RecordError>,
    /// The runner could not be started at all.
    pub fatal: Option<std::io::Error>,
    /// Runs that may go at once on this machine (its CPUs, at most [`MAX_AT_ONCE`]; one when
    /// the setup says they cannot, [`SuiteSetup::one_at_a_time`]).
    pub width: usize,
    /// The shuffled attempt the side-by-side check copies, with its iteration (see
    /// [`super::side_by_side::reference`]).
    pub reference: Option<(u64, AttemptTests)>,
    /// Runs that go at once: 1 until the suite ran clean beside itself.
    pub at_once: usize,
}

impl<'a> Live<'a> {
    /// The classification's runs of a live hunt, one at a time until the side-by-side check.
    pub fn new(
        exec: &'a SuiteExecution<'a>,
        cell: CellSpec,
        sink: &'a mut dyn EventSink,
        replay: Replay,
        ids: Ids,
    ) -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        Self {
            exec,
            cell,
            sink,
            replay,
            ids,
            error: None,
            fatal: None,
            width: if exec.setup.one_at_a_time().is_some() { 1 } else { cpus.clamp(1, MAX_AT_ONCE) },
            reference: None,
            at_once: 1,
        }
    }

    /// Whether no more runs start.
    fn stopped(&self) -> bool {
        self.error.is_some() || self.fatal.is_some() || self.exec.cancel().is_stopping()
    }

    /// Records a finished run (the recorder, then the display); its suite part.
    fn record(&mut self, ran: Result<Finished, std::io::Error>) -> Option<AttemptTests> {
        match ran {
            Ok(f) if f.cancelled => None,
            Ok(f) => {
                if self.error.is_some() {
                    return None;
                }
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
                self.fatal.get_or_insert(e);
                None
            }
        }
    }

    /// Runs `runs` (each with its iteration, else the next one's) `width` at once, recording
    /// each as it ends; their suite parts in the order given, none for a run not had.
    fn run_together(&mut self, runs: &[(Request, Option<u64>)], width: usize) -> Vec<Option<AttemptTests>> {
        let mut out: Vec<Option<AttemptTests>> = vec![None; runs.len()];
        if self.stopped() {
            return out;
        }
        let specs: Vec<AttemptSpec> = runs
            .iter()
            .map(|(req, iteration)| {
                let (id, next) = self.ids.take();
                let phase = Some(role_name(req.role).to_owned());
                AttemptSpec { id, cell: 0, iteration: iteration.unwrap_or(next), phase, cold: false }
            })
            .collect();
        let exec = self.exec;
        let cell = self.cell.clone();
        let next = AtomicUsize::new(0);
        let halt = AtomicBool::new(false);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            for worker in 0..width.clamp(1, runs.len().max(1)) {
                let (tx, next, halt, specs, cell) = (tx.clone(), &next, &halt, &specs, &cell);
                scope.spawn(move || loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= runs.len() || halt.load(Ordering::Relaxed) || exec.cancel().is_stopping() {
                        break;
                    }
                    let ran = exec.run_request(&specs[i], cell, worker, Slot::default(), &runs[i].0);
                    let failed = ran.is_err();
                    if tx.send((i, ran)).is_err() || failed {
                        break;
                    }
                });
            }
            drop(tx);
            // Each recorded as it ends, on this thread: the recorder flushes it at once.
            for (i, ran) in rx {
                out[i] = self.record(ran);
                if self.stopped() {
                    halt.store(true, Ordering::Relaxed);
                }
            }
        });
        out
    }

    /// The side-by-side check: the suite run beside itself, `width` at once: copies of the
    /// reference attempt (its order, its iteration; one fewer than `width` when `first` holds a
    /// run of the whole suite, the run of every test twice, which runs beside them) and the runs
    /// `first` (kept for when the classification asks for them). The classification's runs go
    /// side by side when every test that passed in the reference passed in every copy (a test
    /// that writes a fixed file, binds a fixed port or shares a database fails here, as it would
    /// beside its own runs). Whether it did; none when no copy ran.
    fn check_side_by_side(&mut self, first: &[Request]) -> Option<bool> {
        let (iteration, reference) = self.reference.clone()?;
        let mut copy = Request::of_record(&reference);
        copy.role = Role::SideBySide;
        let whole = first.iter().any(|r| r.role == Role::RepeatAll);
        let wanted = self.width - usize::from(whole);
        let mut copies = Vec::new();
        let mut todo = Vec::new();
        for _ in 0..wanted {
            match self.replay.take(&copy) {
                Some(t) => copies.push(t),
                None => todo.push((copy.clone(), Some(iteration))),
            }
        }
        // The copies first: they start at once, the rest as workers come free.
        let mut held: HashMap<&Request, usize> = HashMap::new();
        for req in first {
            let h = held.entry(req).or_insert_with(|| self.replay.held(req));
            if *h > 0 {
                *h -= 1;
            } else {
                todo.push((req.clone(), None));
            }
        }
        let ran = self.run_together(&todo, self.width);
        for (t, (req, _)) in ran.into_iter().zip(&todo) {
            match t {
                Some(t) if req.role == Role::SideBySide => copies.push(t),
                // Answered when the classification asks for it.
                Some(t) => self.replay.add(t),
                None => {}
            }
        }
        if copies.is_empty() {
            // Stopped before any copy ran: no check, as a record without copies reads.
            return None;
        }
        // Judged as the record's copies will be (see `side_by_side::judged`).
        let clean = super::side_by_side::failed_beside_itself(&reference, &copies, copies.len()).is_empty();
        if clean {
            self.at_once = self.width;
        }
        Some(clean)
    }
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

    fn side_by_side(&mut self, _tests: usize, first: &[Request]) -> Option<bool> {
        if self.width > 1 {
            self.check_side_by_side(first)
        } else {
            None
        }
    }

    fn run(&mut self, req: &Request) -> Option<AttemptTests> {
        if let Some(t) = self.replay.take(req) {
            return Some(t);
        }
        if self.stopped() {
            return None;
        }
        let (id, iteration) = self.ids.take();
        let spec = AttemptSpec { id, cell: 0, iteration, phase: Some(role_name(req.role).to_owned()), cold: false };
        let ran = self.exec.run_request(&spec, &self.cell, 0, Slot::default(), req);
        self.record(ran)
    }

    fn prefetch(&mut self, reqs: &[Request]) {
        if self.at_once < 2 {
            return;
        }
        // Each request as often as listed, less the runs of it held already.
        let mut held: HashMap<&Request, usize> = HashMap::new();
        let todo: Vec<(Request, Option<u64>)> = reqs
            .iter()
            .filter(|r| {
                let h = held.entry(r).or_insert_with(|| self.replay.held(r));
                let had = *h > 0;
                *h = h.saturating_sub(1);
                !had
            })
            .map(|r| (r.clone(), None))
            .collect();
        if todo.len() < 2 {
            return;
        }
        // In id order, as a record's runs are answered.
        for t in self.run_together(&todo, self.at_once).into_iter().flatten() {
            self.replay.add(t);
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
