//! What a suite hunt records about its runner once (the interpreter or the test binary, the
//! collected selection, where its files go) and how every run of it is built from that and read
//! back: the shuffled attempts, and each confirmation, repetition, bisection and reproducer
//! run. Main types: [`SuiteSetup`], [`Request`].

use std::path::{Path, PathBuf};

use super::order::{attempt_order, go_shuffle_seed, libtest_run, Invocation, OrderStrategy};
use super::record::{AttemptTests, Role};
use super::{gotest, libtest, pytestlog, Framework, TestId, TestOutcome, TestResult};
use crate::checks::rust::TestPanics;
use crate::kind::suite::order::{GoTestInvocations, PytestInvocations};
use crate::record::Attempt;
pub use crate::schema::suite::{SuiteRunner, SuiteSetup};

/// The directory inside the record that holds the repeat plugin.
pub const PLUGIN_DIR: &str = "suite";
/// The directory inside the record that holds the attempts' scratch directories while they run.
pub const SCRATCH_DIR: &str = "scratch";
/// The file a Go or libtest run's stdout is written to in its scratch directory.
const OUTPUT_FILE: &str = "stdout";
/// The events file of a pytest run in its scratch directory (see [`super::pytestlog`]).
const RESULTS_FILE: &str = "results.jsonl";

/// One run of the runner the hunt asks for. Two requests are the same run when they run the
/// same tests the same way: how their order was made ([`Self::strategy`]) is recorded with the
/// run but is no part of what it is.
#[derive(Debug, Clone)]
pub struct Request {
    /// Why.
    pub role: Role,
    /// The test it is about (all but shuffled and repeat-all runs).
    pub subject: Option<TestId>,
    /// The tests to run, in order (shuffled: the attempt's order; Go shuffles itself).
    pub tests: Vec<TestId>,
    /// Go's `-test.shuffle` seed.
    pub shuffle: Option<u64>,
    /// A reproducer run's exact argv.
    pub argv: Vec<String>,
    /// How the order its tests keep was made: a shuffled attempt's strategy, and the strategy of
    /// the attempt a bisection's runs take their tests from (pytest).
    pub strategy: Option<super::order::OrderStrategy>,
}

impl PartialEq for Request {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Request {}

impl std::hash::Hash for Request {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

impl Request {
    /// A run about `subject` of `tests` (ending with it).
    pub fn about(role: Role, subject: &TestId, tests: Vec<TestId>, shuffle: Option<u64>) -> Self {
        Self { role, subject: Some(subject.clone()), tests, shuffle, argv: Vec::new(), strategy: None }
    }

    /// A reproducer's check run.
    pub fn reproducer(subject: &TestId, argv: Vec<String>) -> Self {
        Self {
            role: Role::Reproducer,
            subject: Some(subject.clone()),
            tests: Vec::new(),
            shuffle: None,
            argv,
            strategy: None,
        }
    }

    /// This request, its order made by `strategy`.
    pub fn made_by(self, strategy: Option<super::order::OrderStrategy>) -> Self {
        Self { strategy, ..self }
    }

    /// The key a recorded run of this request is found by (see [`Self::of_record`]).
    pub fn of_record(t: &AttemptTests) -> Self {
        let tests = if t.role == Role::Reproducer { Vec::new() } else { t.order.clone() };
        Self {
            role: t.role,
            subject: t.subject.clone(),
            tests,
            shuffle: t.shuffle,
            argv: t.reproducer.clone(),
            strategy: t.strategy,
        }
    }

    /// What makes two requests the same run.
    #[allow(clippy::type_complexity)]
    fn key(&self) -> (Role, &Option<TestId>, &Vec<TestId>, Option<u64>, &Vec<String>) {
        (self.role, &self.subject, &self.tests, self.shuffle, &self.argv)
    }
}

/// A run ready to start: its argv and environment, and where its results will be.
#[derive(Debug, Clone)]
pub struct PreparedRun {
    /// What to start (through a shell that sends stdout to a file, for Go and libtest).
    pub invocation: Invocation,
    scratch: PathBuf,
}

impl PreparedRun {
    /// Removes the scratch directory of a run that could not start, with its parent when that
    /// is left empty, so that a refused hunt leaves nothing of it in the record.
    pub fn discard(&self) {
        let _ = std::fs::remove_dir_all(&self.scratch);
        if let Some(parent) = self.scratch.parent() {
            let _ = std::fs::remove_dir(parent);
        }
    }
}

/// The runs of a suite's setup: its requests prepared, run and read back.
pub trait SetupRuns {
    /// What a suite's warm parents run: pytest's fixed options and the whole selection, of
    /// which each shuffled attempt and confirmation run gives a part (none for Go and libtest).
    fn warm_target(&self) -> Option<crate::warm::WarmTarget>;

    /// The directory of flakehunt's pytest plugins (the results plugin and the repeat plugin).
    fn plugin_dir(&self) -> PathBuf;

    /// The shuffled attempt with plan position `id`: pytest gets the order, Go the seed it
    /// shuffles with, libtest its own name order.
    fn shuffled(&self, seed: u64, id: u64) -> Request;

    /// The run of every test twice in one process; none for libtest, which cannot.
    fn repeat_all(&self) -> Option<Request>;

    /// The argv a user pastes to see `tests` (the culprits, then the test) fail in one process;
    /// Go needs the failing order's shuffle seed to keep their order.
    fn order_reproducer(&self, tests: &[TestId], shuffle: Option<u64>) -> Vec<String>;

    /// The argv a user pastes to run `test` twice in one process; none for libtest.
    fn repeat_reproducer(&self, test: &TestId) -> Option<Vec<String>>;

    /// The invocation of `req` as attempt `id`, with its scratch directory created; a pytest
    /// run loads flakehunt's plugins from `plugins` (see [`write_plugins`]).
    fn prepare(&self, req: &Request, id: u64, plugins: &Path) -> std::io::Result<PreparedRun>;

    /// The suite part of the attempt `prepared` ran, from its structured output (removed with
    /// its scratch directory: pytest's results plugin, Go's test2json events, a reproducer's
    /// too) or, for a libtest reproducer, from what it printed (`output`: the head and tail of
    /// its stdout). `attempt` says how its process ended. The tests it was to run and
    /// that reported nothing are `unreported`, with why in `incomplete`. With it come what the
    /// checks read in that output found: a passing Rust test whose other threads panicked, which
    /// fails that test (unless its own code meant it: its sources are found from `source`,
    /// where the run started).
    fn results(
        &self,
        req: &Request,
        prepared: &PreparedRun,
        attempt: &Attempt,
        output: &str,
        source: &Path,
    ) -> (AttemptTests, Vec<TestPanics>);
}

impl SetupRuns for SuiteSetup {
    fn warm_target(&self) -> Option<crate::warm::WarmTarget> {
        let SuiteRunner::Pytest { pytest, .. } = &self.runner else { return None };
        Some(crate::warm::WarmTarget::Suite {
            options: pytest.run_options(),
            ids: self.selection.iter().cloned().collect(),
        })
    }

    fn plugin_dir(&self) -> PathBuf {
        self.files.join(PLUGIN_DIR)
    }

    fn shuffled(&self, seed: u64, id: u64) -> Request {
        let (tests, shuffle, strategy) = match &self.runner {
            SuiteRunner::Pytest { .. } => {
                (attempt_order(&self.selection, seed, id), None, Some(OrderStrategy::of_attempt(id)))
            }
            SuiteRunner::Go { .. } => (self.selection.clone(), Some(go_shuffle_seed(seed, id)), None),
            SuiteRunner::Libtest { .. } => (self.selection.clone(), None, None),
        };
        Request { role: Role::Shuffled, subject: None, tests, shuffle, argv: Vec::new(), strategy }
    }

    fn repeat_all(&self) -> Option<Request> {
        (self.framework() != Framework::Libtest).then(|| Request {
            role: Role::RepeatAll,
            subject: None,
            tests: self.selection.clone(),
            shuffle: None,
            argv: Vec::new(),
            strategy: None,
        })
    }

    fn order_reproducer(&self, tests: &[TestId], shuffle: Option<u64>) -> Vec<String> {
        match &self.runner {
            SuiteRunner::Pytest { pytest, .. } => pytest.reproducer(tests),
            SuiteRunner::Go { go, .. } => go.reproducer(shuffle, tests),
            SuiteRunner::Libtest { binary, show_output } => libtest_run(binary, Some(tests), *show_output).argv,
        }
    }

    fn repeat_reproducer(&self, test: &TestId) -> Option<Vec<String>> {
        match &self.runner {
            SuiteRunner::Pytest { pytest, .. } => Some(
                pytest
                    .repeat(std::slice::from_ref(test), &self.plugin_dir(), self.python_path.as_deref(), None)
                    .reproducer(),
            ),
            SuiteRunner::Go { go, .. } => Some(go.repeat_reproducer(test)),
            SuiteRunner::Libtest { .. } => None,
        }
    }

    fn prepare(&self, req: &Request, id: u64, plugins: &Path) -> std::io::Result<PreparedRun> {
        let scratch = self.files.join(SCRATCH_DIR).join(id.to_string());
        std::fs::create_dir_all(&scratch)?;
        let results = scratch.join(RESULTS_FILE);
        let subject = || req.subject.clone().into_iter().collect::<Vec<_>>();
        let python_path = self.python_path.as_deref();
        let invocation = match (&self.runner, req.role) {
            // The printed argv as it is, with flakehunt's results plugin loaded by pytest's
            // `PYTEST_PLUGINS` (its directory on the `PYTHONPATH` the argv may set itself), so
            // that the check is judged by the test's own result, not by the process's status
            // or by what a project's options let pytest print.
            (SuiteRunner::Pytest { .. }, Role::Reproducer) => {
                let plugin_dir = plugins.display().to_string();
                let in_path = |p: Option<&str>| match p {
                    Some(p) if !p.is_empty() => format!("{plugin_dir}:{p}"),
                    _ => plugin_dir.clone(),
                };
                let loaded = match std::env::var("PYTEST_PLUGINS") {
                    Ok(p) if !p.is_empty() => format!("{p},{}", pytestlog::PLUGIN_MODULE),
                    _ => pytestlog::PLUGIN_MODULE.to_owned(),
                };
                let env = vec![
                    ("PYTHONPATH".to_owned(), in_path(python_path)),
                    ("PYTEST_PLUGINS".to_owned(), loaded),
                    (pytestlog::RESULTS_VAR.to_owned(), results.display().to_string()),
                ];
                let mut argv = req.argv.clone();
                // `env [-C DIR] K=V ... PROGRAM`: the variables end at the program.
                let mut i = usize::from(argv.first().is_some_and(|a| a == "env"));
                while i > 0 && i < argv.len() {
                    if argv[i] == "-C" {
                        i += 2;
                        continue;
                    }
                    let Some((key, value)) = argv[i].split_once('=') else { break };
                    if key == "PYTHONPATH" {
                        argv[i] = format!("PYTHONPATH={}", in_path(Some(value)));
                    }
                    i += 1;
                }
                Invocation { argv, env, dir: None }
            }
            // Go's too, its argv verbose and through test2json, so that a test's own output that
            // reads like `--- FAIL` cannot decide it (see [`gotest::go_results`]).
            (SuiteRunner::Go { go, .. }, Role::Reproducer) => to_file(go.structured(&req.argv), &scratch),
            (_, Role::Reproducer) => {
                return Ok(PreparedRun {
                    invocation: Invocation { argv: req.argv.clone(), ..Invocation::default() },
                    scratch,
                })
            }
            (SuiteRunner::Pytest { pytest, .. }, Role::Repeat) => {
                pytest.repeat(&subject(), plugins, python_path, Some(&results))
            }
            (SuiteRunner::Pytest { pytest, .. }, Role::RepeatAll) => {
                pytest.repeat_all(&req.tests, plugins, python_path, &results)
            }
            (SuiteRunner::Pytest { pytest, .. }, _) => pytest.run(&req.tests, plugins, python_path, &results),
            (SuiteRunner::Go { go, narrowed }, role) => {
                let tests = (!role.runs_the_selection() || *narrowed).then_some(req.tests.as_slice());
                let inv = match role {
                    Role::Repeat => go.repeat(&req.tests[0]),
                    Role::RepeatAll => go.repeat_all(tests),
                    _ => go.run(req.shuffle.unwrap_or(0), tests),
                };
                to_file(inv, &scratch)
            }
            (SuiteRunner::Libtest { binary, show_output }, role) => {
                let tests = (!role.runs_the_selection()).then_some(req.tests.as_slice());
                to_file(libtest_run(binary, tests, *show_output), &scratch)
            }
        };
        Ok(PreparedRun { invocation, scratch })
    }

    fn results(
        &self,
        req: &Request,
        prepared: &PreparedRun,
        attempt: &Attempt,
        output: &str,
        source: &Path,
    ) -> (AttemptTests, Vec<TestPanics>) {
        let read = |name: &str| std::fs::read_to_string(prepared.scratch.join(name)).unwrap_or_default();
        let panics_shown = matches!(self.runner, SuiteRunner::Libtest { show_output: true, .. });
        let mut hidden = Vec::new();
        let mut order = req.tests.clone();
        let count = match req.role {
            Role::Repeat | Role::RepeatAll => 2,
            // A reproducer runs its tests as often as its argv says (`-test.count=2`).
            Role::Reproducer => {
                req.argv.iter().find_map(|a| a.strip_prefix("-test.count=").and_then(|n| n.parse().ok())).unwrap_or(1)
            }
            _ => 1,
        };
        // Why the results may be short beyond how the process ended: the test it ended in, a
        // file pytest could not collect, a stream that cannot be trusted.
        let mut detail: Option<String> = None;
        let mut doubtful: Vec<TestId> = Vec::new();
        let mut tests = match (&self.runner, req.role) {
            (SuiteRunner::Pytest { .. }, Role::Reproducer) => pytestlog::pytest_results(&read(RESULTS_FILE)).results,
            (SuiteRunner::Libtest { .. }, Role::Reproducer) => {
                let subject = req.subject.clone().unwrap_or_default();
                let failed = reproducer_failed(self.framework(), &subject, output);
                let outcome = if failed { TestOutcome::Fail } else { TestOutcome::Pass };
                let mut results = vec![TestResult { id: subject, outcome, message: None }];
                if panics_shown {
                    hidden = fail_by_panics(&mut results, output, source);
                }
                results
            }
            (SuiteRunner::Pytest { .. }, _) => {
                let run = pytestlog::pytest_results(&read(RESULTS_FILE));
                if let Some(test) = &run.running {
                    detail = Some(format!("while {test} ran"));
                } else if let Some((file, error)) = run.collect_errors.first() {
                    detail = Some(format!("pytest could not collect {file}: {error}"));
                }
                run.results
            }
            (SuiteRunner::Go { go, .. }, role) => {
                let mut run = gotest::go_results(&read(OUTPUT_FILE), &self.selection, count).unwrap_or_default();
                if role.runs_the_selection() {
                    order = run.order;
                }
                // Before Go 1.20 a test's own output can read as the framework's: a binary that
                // exited 0 failed no test, so failures read from such output are doubtful.
                if !go.framing && attempt.exit_code == Some(0) {
                    // With -test.paniconexit0 a test cannot end the process as a success, so
                    // one that never ended is doubtful too.
                    doubtful = failed_top_level(&run.results, &[TestOutcome::Fail, TestOutcome::Error], go_top);
                    run.results.retain(|r| !doubtful.iter().any(|d| d == go_top(&r.id)));
                }
                run.results
            }
            (SuiteRunner::Libtest { .. }, _) => {
                let text = read(OUTPUT_FILE);
                let mut results = libtest::libtest_results(&text, &self.selection);
                // libtest exits 101 when a test failed: a failure read from a run that exited 0
                // was printed by a test itself.
                if attempt.exit_code == Some(0) {
                    // A status that never came is `std::process::exit(0)` in the test, no line
                    // it printed.
                    doubtful = failed_top_level(&results, &[TestOutcome::Fail], |id| id);
                    results.retain(|r| !doubtful.contains(&r.id));
                }
                if panics_shown {
                    hidden = fail_by_panics(&mut results, &text, source);
                }
                results
            }
        };
        let _ = std::fs::remove_dir_all(&prepared.scratch);
        let mut unreported = Vec::new();
        let mut incomplete = None;
        if req.role != Role::Reproducer {
            let reported: std::collections::HashSet<&str> = tests.iter().map(|r| self.top_level(&r.id)).collect();
            unreported = self.due(req).into_iter().filter(|t| !reported.contains(t.as_str())).collect();
            let ended = how_it_ended(attempt);
            // A test that started and never finished carries how the process ended.
            for r in tests.iter_mut().filter(|r| {
                r.message.as_deref().is_some_and(|m| {
                    m == pytestlog::DIED_WHILE_RUNNING
                        || m == gotest::EXITED_WHILE_RUNNING
                        || m == libtest::EXITED_WHILE_RUNNING
                })
            }) {
                detail.get_or_insert_with(|| format!("while {} ran", r.id));
                r.message = Some(format!("the process {ended} while this test ran"));
            }
            if !doubtful.is_empty() {
                detail = Some(format!(
                    "yet its output reads as failures of {}: before Go 1.20 a test's own output can look like the framework's lines, so these are not counted (run Go 1.20 or later)",
                    doubtful.join(", ")
                ));
                if self.framework() == Framework::Libtest {
                    detail = Some(format!(
                        "yet its output reads as failures of {}: a test printed lines like libtest's own, so these are not counted",
                        doubtful.join(", ")
                    ));
                }
            }
            let cut_short = detail.as_deref().is_some_and(|d| d.starts_with("while "));
            if !unreported.is_empty() || cut_short || !doubtful.is_empty() {
                let detail =
                    detail.or_else(|| error_line(&attempt.stderr_tail).or_else(|| error_line(&attempt.stdout_tail)));
                let mut why = format!("the process {ended}");
                match detail {
                    Some(d) if d.starts_with("while ") || d.starts_with("yet ") => why = format!("{why} {d}"),
                    Some(d) => why = format!("{why}: {d}"),
                    None if attempt.exit_code == Some(0) => why.push_str(" before every test it was to run reported"),
                    None => {}
                }
                if !unreported.is_empty() {
                    why.push_str(&format!(
                        " ({} of its {} tests did not report)",
                        unreported.len(),
                        self.due(req).len()
                    ));
                }
                incomplete = Some(why);
            }
        }
        // A process that failed with every test it was to run reported and none failing failed
        // for another reason (a coverage threshold, a plugin, a session fixture): the tests'
        // own results stand, and the summary says so.
        let ended_badly = attempt.exit_code != Some(0) || attempt.signal.is_some();
        let failed_otherwise =
            (ended_badly && incomplete.is_none() && !tests.is_empty() && !tests.iter().any(|r| r.outcome.is_failure()))
                .then(|| {
                    let why = format!("the process {} though none of its tests failed", how_it_ended(attempt));
                    match error_line(&attempt.stderr_tail).or_else(|| error_line(&attempt.stdout_tail)) {
                        Some(line) => format!("{why}: {line}"),
                        None => why,
                    }
                });
        let tests = AttemptTests {
            role: req.role,
            subject: req.subject.clone(),
            order,
            shuffle: req.shuffle,
            tests,
            reproducer: req.argv.clone(),
            unreported,
            incomplete,
            failed_otherwise,
            strategy: req.strategy,
        };
        (tests, hidden)
    }
}

/// The tests a run of the setup is due to report.
trait SetupSelection {
    /// The top-level tests a run of `req` must report: the selection for a shuffled attempt of
    /// the whole Go or Rust binary, else the tests it names.
    fn due(&self, req: &Request) -> Vec<TestId>;

    /// The top-level test of an id: a Go subtest's parent, any other id itself (a pytest node id
    /// holds `/` in its path).
    fn top_level<'i>(&self, id: &'i str) -> &'i str;
}

impl SetupSelection for SuiteSetup {
    fn due(&self, req: &Request) -> Vec<TestId> {
        let whole = req.role.runs_the_selection()
            && matches!(self.runner, SuiteRunner::Go { narrowed: false, .. } | SuiteRunner::Libtest { .. });
        let tests = if whole { &self.selection } else { &req.tests };
        let mut seen = std::collections::HashSet::new();
        tests.iter().map(|t| self.top_level(t).to_owned()).filter(|t| seen.insert(t.clone())).collect()
    }

    fn top_level<'i>(&self, id: &'i str) -> &'i str {
        match self.runner {
            SuiteRunner::Go { .. } => go_top(id),
            _ => id,
        }
    }
}

/// A Go subtest's top-level test (`TestA` of `TestA/sub`).
fn go_top(id: &str) -> &str {
    id.split('/').next().unwrap_or(id)
}

/// The tests with a result of `outcomes` among `results`, each once, by `top`.
fn failed_top_level(results: &[TestResult], outcomes: &[TestOutcome], top: fn(&str) -> &str) -> Vec<TestId> {
    let mut out: Vec<TestId> = Vec::new();
    for r in results.iter().filter(|r| outcomes.contains(&r.outcome)) {
        let t = top(&r.id).to_owned();
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// The panics of other threads that libtest's `output` shows of the passing tests of
/// `results`, each of which then fails with the panic as its message (as a Go test the leak
/// check fails): the failure the exit status hid is the test's.
fn fail_by_panics(results: &mut [TestResult], output: &str, source: &Path) -> Vec<TestPanics> {
    let mut found = crate::checks::rust::panics(output, source);
    found.retain(|f| {
        let Some(r) = results.iter_mut().find(|r| r.id == f.test) else { return false };
        if r.outcome != TestOutcome::Pass {
            return false;
        }
        r.outcome = TestOutcome::Fail;
        r.message = Some(f.summary.clone());
        true
    });
    found
}

/// How an attempt's process ended, in words after "the process": `was killed by SIGSEGV`,
/// `was ended at its timeout after 12.0 s`, `exited with code 4`.
pub fn how_it_ended(attempt: &Attempt) -> String {
    if attempt.termination.is_some() {
        format!("was ended at its timeout after {:.1} s", attempt.seconds)
    } else if let Some(sig) = attempt.signal {
        format!("was killed by {}", crate::schema::process::signal_name(sig))
    } else if let Some(code) = attempt.exit_code {
        format!("exited with code {code}")
    } else {
        "could not be started".to_owned()
    }
}

/// The line of a runner's output that says why it stopped, if one does: pytest's
/// `ERROR: ...`, its argument parser's `error: ...`, pytest-cov's `FAIL Required test
/// coverage ...`, a conftest that failed to import (with its
/// `E   ` line), an `INTERNALERROR>`, Go's `panic: ...`, a Rust panic.
pub fn error_line(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    if let Some(conftest) = lines.iter().find(|l| l.starts_with("ImportError while loading conftest")) {
        let last = lines.iter().rev().find(|l| l.starts_with("E ")).map(|l| l[1..].trim());
        let head = conftest.trim_end_matches('.');
        return Some(match last {
            Some(e) => format!("{head}: {e}"),
            None => head.to_owned(),
        });
    }
    let found = lines
        .iter()
        .find(|l| l.starts_with("ERROR: ") && !l.starts_with("ERROR: usage:"))
        // pytest-cov's threshold (`--cov-fail-under`).
        .or_else(|| lines.iter().find(|l| l.starts_with("FAIL Required test coverage")))
        .map(|l| l.to_string())
        .or_else(|| lines.iter().find_map(|l| l.split_once("pytest: error: ").map(|(_, e)| format!("error: {e}"))))
        .or_else(|| lines.iter().rev().find(|l| l.starts_with("INTERNALERROR>") && l.len() > 15).map(|l| l.to_string()))
        .or_else(|| {
            lines.iter().find(|l| l.starts_with("panic: ") || l.starts_with("fatal error: ")).map(|l| l.to_string())
        })
        .or_else(|| {
            lines.iter().find(|l| l.starts_with("thread '") && l.contains("panicked")).map(|l| l.to_string())
        })?;
    Some(super::short_message(&found).unwrap_or(found))
}

/// Writes flakehunt's pytest plugins (the results plugin and the repeat plugin) into `dir`,
/// where the runs of a hunt load them from: a directory of the hunt's own, not the record, which
/// a resumed hunt must not change before it is accepted (the record keeps the repeat plugin for
/// printed reproducers, written once the shuffled attempts are in).
pub fn write_plugins(dir: &Path) -> std::io::Result<()> {
    super::pytestlog::write_plugin(dir)?;
    super::repeat::write_plugin(dir)?;
    super::state::write_plugin(dir)?;
    Ok(())
}

/// `inv` with its stdout sent to a file of `scratch`: a passing attempt's output is not kept by
/// the runner, and Go's event stream and libtest's lines are its results. `sh` replaces itself
/// with the program (`exec`), so the attempt's process is the runner's.
fn to_file(inv: Invocation, scratch: &Path) -> Invocation {
    let mut argv = vec!["sh".to_owned(), "-c".to_owned(), "exec \"$@\" >\"$0\"".to_owned()];
    argv.push(scratch.join(OUTPUT_FILE).display().to_string());
    argv.extend(inv.argv);
    Invocation { argv, env: inv.env, dir: None }
}

/// Whether a reproducer's output names `test` as failed: pytest's short summary
/// (`FAILED id` or `ERROR id`), Go's `--- FAIL: TestX`, libtest's `test x ... FAILED`.
pub fn reproducer_failed(framework: Framework, test: &str, output: &str) -> bool {
    match framework {
        Framework::Pytest => output.lines().any(|l| {
            let rest = l.strip_prefix("FAILED ").or_else(|| l.strip_prefix("ERROR "));
            rest.is_some_and(|r| r == test || r.starts_with(&format!("{test} ")))
        }),
        Framework::Go => {
            let needle = format!("--- FAIL: {test} ");
            output.lines().any(|l| l.trim_start().starts_with(&needle))
        }
        Framework::Libtest => output.lines().any(|l| l == format!("test {test} ... FAILED")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::suite::{GoTest, Pytest};

    fn setup(runner: SuiteRunner) -> SuiteSetup {
        SuiteSetup {
            runner,
            selection: vec!["a.py::test_p".into(), "b.py::test_v".into()],
            files: "/rec".into(),
            python_path: None,
            collect_seconds: 0.1,
        }
    }

    #[test]
    fn reproducer_output_names_the_test() {
        let out = "F.\n=== short test summary info ===\nFAILED b.py::test_v - AssertionError: x\n1 failed, 1 passed\n";
        assert!(reproducer_failed(Framework::Pytest, "b.py::test_v", out));
        assert!(!reproducer_failed(Framework::Pytest, "b.py::test", out), "a prefix is another test");
        let go = "--- FAIL: TestVictim (0.00s)\n    beta_test.go:8: handlers left registered\nFAIL\n";
        assert!(reproducer_failed(Framework::Go, "TestVictim", go));
        assert!(!reproducer_failed(Framework::Go, "TestVic", go));
        assert!(reproducer_failed(Framework::Libtest, "t::a", "test t::a ... FAILED\n"));
    }

    #[test]
    fn requests_are_keyed_by_what_they_ran() {
        let s = setup(SuiteRunner::Pytest { pytest: Pytest::new("python3"), paths: vec![] });
        let shuffled = s.shuffled(7, 3);
        assert_eq!(shuffled, s.shuffled(7, 3));
        assert_eq!(shuffled.tests.len(), 2);
        let req = Request::about(
            Role::Bisect,
            &"b.py::test_v".into(),
            vec!["a.py::test_p".into(), "b.py::test_v".into()],
            None,
        );
        let recorded = AttemptTests {
            role: Role::Bisect,
            subject: req.subject.clone(),
            order: req.tests.clone(),
            shuffle: None,
            tests: vec![],
            reproducer: vec![],
            unreported: vec![],
            incomplete: None,
            failed_otherwise: None,
            strategy: None,
        };
        assert_eq!(Request::of_record(&recorded), req);
        assert_eq!(s.order_reproducer(&req.tests, None).last().unwrap(), "b.py::test_v");
        let rep = s.repeat_reproducer(&"b.py::test_v".into()).unwrap();
        assert_eq!(rep[..2], ["env".to_owned(), "PYTHONPATH=/rec/suite".to_owned()]);
    }

    #[test]
    fn go_and_libtest_runs_write_stdout_to_the_scratch_directory() {
        let dir = tempfile::tempdir().unwrap();
        let go =
            GoTest { go: "go".into(), package: "p".into(), binary: "/b/p.test".into(), framing: true, test2json: None };
        let mut s = setup(SuiteRunner::Go { go, narrowed: false });
        s.files = dir.path().to_owned();
        s.selection = vec!["TestV".into(), "TestW".into()];
        let p = s.prepare(&s.shuffled(1, 0), 5, Path::new("/plugins")).unwrap();
        assert_eq!(p.invocation.argv[..3], ["sh", "-c", "exec \"$@\" >\"$0\""]);
        assert!(p.invocation.argv[3].ends_with("scratch/5/stdout"));
        assert!(!p.invocation.argv.iter().any(|a| a.starts_with("-test.run")), "the whole binary");
        let alone = Request::about(Role::Alone, &"TestV".into(), vec!["TestV".into()], None);
        let p = s.prepare(&alone, 6, Path::new("/plugins")).unwrap();
        assert!(p.invocation.argv.contains(&"-test.run=^TestV$".to_owned()));
        std::fs::write(
            dir.path().join("scratch/6/stdout"),
            "{\"Action\":\"run\",\"Test\":\"TestV\"}\n{\"Action\":\"fail\",\"Test\":\"TestV\"}\n",
        )
        .unwrap();
        let (got, _) = s.results(&alone, &p, &ended(Some(1), None), "", Path::new("."));
        assert_eq!(got.tests[0].outcome, TestOutcome::Fail);
        assert!(got.unreported.is_empty() && got.incomplete.is_none());
        assert!(!dir.path().join("scratch/6").exists(), "the scratch directory is removed");
    }

    /// An attempt that ended with `exit_code` or `signal`.
    fn ended(exit_code: Option<i32>, signal: Option<i32>) -> Attempt {
        serde_json::from_value(serde_json::json!({
            "id": 0, "cell": "default", "iteration": 1, "started_at": "2026-12-01T00:00:00.000Z",
            "seconds": 0.5, "outcome": if exit_code == Some(0) { "pass" } else { "fail" },
            "exit_code": exit_code, "signal": signal, "stdout_tail": "", "stderr_tail": "", "signature": null
        }))
        .unwrap()
    }

    #[test]
    fn tests_that_did_not_report_are_named_with_how_the_process_ended() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = setup(SuiteRunner::Pytest { pytest: Pytest::new("python3"), paths: vec![] });
        s.files = dir.path().to_owned();
        s.selection = vec!["a.py::test_p".into(), "b.py::test_v".into(), "c.py::test_w".into()];
        let req = Request { tests: s.selection.clone(), ..s.shuffled(1, 0) };
        let p = s.prepare(&req, 3, Path::new("/plugins")).unwrap();
        let results = dir.path().join("scratch/3/results.jsonl");
        assert_eq!(p.invocation.env[1], ("FLAKEHUNT_SUITE_RESULTS".to_owned(), results.display().to_string()));
        std::fs::write(
            &results,
            "{\"start\": \"a.py::test_p\"}\n{\"finish\": \"a.py::test_p\"}\n{\"start\": \"b.py::test_v\"}\n",
        )
        .unwrap();
        let (got, _) = s.results(&req, &p, &ended(None, Some(libc::SIGSEGV)), "", Path::new("."));
        let outcomes: Vec<(&str, TestOutcome)> = got.tests.iter().map(|r| (r.id.as_str(), r.outcome)).collect();
        assert_eq!(outcomes, [("a.py::test_p", TestOutcome::Pass), ("b.py::test_v", TestOutcome::Error)]);
        assert_eq!(got.tests[1].message.as_deref(), Some("the process was killed by SIGSEGV while this test ran"));
        assert_eq!(got.unreported, ["c.py::test_w"]);
        assert_eq!(
            got.incomplete.as_deref(),
            Some("the process was killed by SIGSEGV while b.py::test_v ran (1 of its 3 tests did not report)")
        );

        // No results at all: pytest's own error, from the attempt's output, says why.
        let p = s.prepare(&req, 4, Path::new("/plugins")).unwrap();
        let mut usage = ended(Some(4), None);
        usage.stderr_tail = "ERROR: file or directory not found: a.py::test_p\n\n".into();
        let (got, _) = s.results(&req, &p, &usage, "", Path::new("."));
        assert_eq!(got.unreported.len(), 3);
        assert_eq!(
            got.incomplete.as_deref(),
            Some("the process exited with code 4: ERROR: file or directory not found: a.py::test_p (3 of its 3 tests did not report)")
        );

        // A run that exited 0 and reported everything is complete.
        let p = s
            .prepare(&Request { tests: vec!["a.py::test_p".into()], ..req.clone() }, 5, Path::new("/plugins"))
            .unwrap();
        std::fs::write(
            dir.path().join("scratch/5/results.jsonl"),
            "{\"start\": \"a.py::test_p\"}\n{\"finish\": \"a.py::test_p\"}\n",
        )
        .unwrap();
        let (got, _) = s.results(
            &Request { tests: vec!["a.py::test_p".into()], ..req },
            &p,
            &ended(Some(0), None),
            "",
            Path::new("."),
        );
        assert!(got.unreported.is_empty() && got.incomplete.is_none(), "{got:?}");
    }

    #[test]
    fn a_rust_run_that_exited_zero_midway_and_failures_it_could_not_have_had() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = setup(SuiteRunner::Libtest { binary: "/t/bin".into(), show_output: false });
        s.files = dir.path().to_owned();
        s.selection = vec!["t::a".into(), "t::b".into(), "t::c".into()];
        let req = s.shuffled(1, 0);
        let p = s.prepare(&req, 1, Path::new("/plugins")).unwrap();
        // `std::process::exit(0)` in t::b: its status never came, t::c never ran.
        std::fs::write(dir.path().join("scratch/1/stdout"), "running 3 tests\ntest t::a ... ok\ntest t::b ... ")
            .unwrap();
        let (got, _) = s.results(&req, &p, &ended(Some(0), None), "", Path::new("."));
        assert_eq!(got.tests[1].outcome, TestOutcome::Error);
        assert_eq!(got.unreported, ["t::c"]);
        assert!(got.incomplete.unwrap().starts_with("the process exited with code 0 while t::b ran"));
        // A run that exited 0 yet reads as a failure: a test printed libtest's line itself.
        let p = s.prepare(&req, 2, Path::new("/plugins")).unwrap();
        let forged = "test t::a ... FAILED\ntest t::a ... ok\ntest t::b ... FAILED\ntest t::c ... ok\n";
        std::fs::write(dir.path().join("scratch/2/stdout"), forged).unwrap();
        let (got, _) = s.results(&req, &p, &ended(Some(0), None), "", Path::new("."));
        assert_eq!(got.tests.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["t::a", "t::c"]);
        assert_eq!(got.unreported, ["t::b"]);
        assert!(got.incomplete.unwrap().contains("yet its output reads as failures of t::b"));
    }

    #[test]
    fn a_passing_rust_test_whose_thread_panicked_fails_when_its_output_is_shown() {
        let dir = tempfile::tempdir().unwrap();
        let output = "running 2 tests\ntest t::a ... ok\ntest t::b ... ok\n\nsuccesses:\n\n---- t::a stdout ----\n\
                      thread '<unnamed>' (9) panicked at src/lib.rs:4:9:\nlost update\n\n\nsuccesses:\n    t::a\n    t::b\n\n\
                      test result: ok. 2 passed; 0 failed\n";
        for show_output in [true, false] {
            let mut s = setup(SuiteRunner::Libtest { binary: "/t/bin".into(), show_output });
            s.files = dir.path().join(show_output.to_string());
            s.selection = vec!["t::a".into(), "t::b".into()];
            let req = s.shuffled(1, 0);
            let p = s.prepare(&req, 1, Path::new("/plugins")).unwrap();
            assert_eq!(p.invocation.argv.iter().any(|a| a == "--show-output"), show_output);
            std::fs::write(s.files.join("scratch/1/stdout"), output).unwrap();
            let (got, panics) = s.results(&req, &p, &ended(Some(0), None), "", Path::new("/nonexistent"));
            let outcomes: Vec<TestOutcome> = got.tests.iter().map(|r| r.outcome).collect();
            if show_output {
                assert_eq!(outcomes, [TestOutcome::Fail, TestOutcome::Pass]);
                assert_eq!(
                    got.tests[0].message.as_deref(),
                    Some("thread '<unnamed>' panicked at src/lib.rs:4:9: lost update")
                );
                assert_eq!(panics.len(), 1);
                assert_eq!(panics[0].test, "t::a");
                assert!(got.incomplete.is_none(), "{got:?}");
            } else {
                assert_eq!(outcomes, [TestOutcome::Pass, TestOutcome::Pass], "the check is off");
                assert!(panics.is_empty());
            }
        }
    }
}
