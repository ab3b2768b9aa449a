//! What a suite hunt records about its runner once (the interpreter or the test binary, the
//! collected selection, where its files go) and how every run of it is built from that and read
//! back: the shuffled attempts, and each confirmation, repetition, bisection and reproducer
//! run. Main types: [`SuiteSetup`], [`Request`].

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::order::{attempt_order, go_shuffle_seed, libtest_run, GoTest, Invocation, Pytest};
use super::record::{AttemptTests, Role};
use super::{gotest, junit, libtest, Framework, TestId, TestOutcome, TestResult};

/// The runner of a suite, as collected and built once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "framework", rename_all = "kebab-case")]
pub enum SuiteRunner {
    /// `--pytest [PATH...]`.
    Pytest {
        /// The interpreter and its pytest.
        pytest: Pytest,
        /// The paths collected (none: pytest's own default).
        paths: Vec<String>,
    },
    /// `--go-test PKG`: the package's test binary, built into the record.
    Go {
        /// The binary and how to read it.
        go: GoTest,
        /// `-run NAME` narrowed the selection: attempts name their tests.
        narrowed: bool,
    },
    /// `--cargo-test [-p PKG]`: the one test binary with tests.
    Libtest {
        /// The test binary.
        binary: PathBuf,
    },
}

/// A suite hunt's setup, in the manifest (`extra.suite`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteSetup {
    /// The runner.
    pub runner: SuiteRunner,
    /// The collected test ids, in collection order.
    pub selection: Vec<TestId>,
    /// Where each attempt's scratch directory and the repeat plugin go (the record, absolute),
    /// so that a printed reproducer that loads the plugin keeps working.
    pub files: PathBuf,
    /// `PYTHONPATH` when the hunt started, kept after the plugin's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python_path: Option<String>,
    /// Seconds the collection took (and the Go build, for `--go-test`).
    pub collect_seconds: f64,
}

/// The directory inside the record that holds the repeat plugin.
pub const PLUGIN_DIR: &str = "suite";
/// The directory inside the record that holds the attempts' scratch directories while they run.
pub const SCRATCH_DIR: &str = "scratch";
/// The file a Go or libtest run's stdout is written to in its scratch directory.
const OUTPUT_FILE: &str = "stdout";
/// The junit xml file of a pytest run in its scratch directory.
const JUNIT_FILE: &str = "junit.xml";

/// One run of the runner the hunt asks for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
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
}

impl Request {
    /// A run about `subject` of `tests` (ending with it).
    pub fn about(role: Role, subject: &TestId, tests: Vec<TestId>, shuffle: Option<u64>) -> Self {
        Self { role, subject: Some(subject.clone()), tests, shuffle, argv: Vec::new() }
    }

    /// A reproducer's check run.
    pub fn reproducer(subject: &TestId, argv: Vec<String>) -> Self {
        Self { role: Role::Reproducer, subject: Some(subject.clone()), tests: Vec::new(), shuffle: None, argv }
    }

    /// The key a recorded run of this request is found by (see [`Self::of_record`]).
    pub fn of_record(t: &AttemptTests) -> Self {
        let tests = if t.role == Role::Reproducer { Vec::new() } else { t.order.clone() };
        Self { role: t.role, subject: t.subject.clone(), tests, shuffle: t.shuffle, argv: t.reproducer.clone() }
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

impl SuiteSetup {
    /// The runner's framework.
    pub fn framework(&self) -> Framework {
        match self.runner {
            SuiteRunner::Pytest { .. } => Framework::Pytest,
            SuiteRunner::Go { .. } => Framework::Go,
            SuiteRunner::Libtest { .. } => Framework::Libtest,
        }
    }

    /// The setup without what each machine of a sharded hunt finds for itself: where its files
    /// and its test binary went, how long the collection took, its `PYTHONPATH`.
    pub fn comparable(&self) -> Self {
        let mut s = self.clone();
        s.files = PathBuf::new();
        s.collect_seconds = 0.0;
        s.python_path = None;
        match &mut s.runner {
            SuiteRunner::Go { go, .. } => {
                go.binary = PathBuf::new();
                go.test2json = None;
            }
            SuiteRunner::Libtest { binary } => *binary = PathBuf::new(),
            SuiteRunner::Pytest { .. } => {}
        }
        s
    }

    /// What a suite's warm parents run: pytest's fixed options and the whole selection, of
    /// which each shuffled attempt and confirmation run gives a part (none for Go and libtest).
    pub fn warm_target(&self) -> Option<crate::warm::WarmTarget> {
        let SuiteRunner::Pytest { pytest, .. } = &self.runner else { return None };
        let options = pytest.reproducer(&[]).split_off(3);
        Some(crate::warm::WarmTarget::Suite { options, ids: self.selection.iter().cloned().collect() })
    }

    /// The directory of the repeat plugin.
    pub fn plugin_dir(&self) -> PathBuf {
        self.files.join(PLUGIN_DIR)
    }

    /// The shuffled attempt with plan position `id`: pytest gets the order, Go the seed it
    /// shuffles with, libtest its own name order.
    pub fn shuffled(&self, seed: u64, id: u64) -> Request {
        let (tests, shuffle) = match &self.runner {
            SuiteRunner::Pytest { .. } => (attempt_order(&self.selection, seed, id), None),
            SuiteRunner::Go { .. } => (self.selection.clone(), Some(go_shuffle_seed(seed, id))),
            SuiteRunner::Libtest { .. } => (self.selection.clone(), None),
        };
        Request { role: Role::Shuffled, subject: None, tests, shuffle, argv: Vec::new() }
    }

    /// The run of every test twice in one process; none for libtest, which cannot.
    pub fn repeat_all(&self) -> Option<Request> {
        (self.framework() != Framework::Libtest).then(|| Request {
            role: Role::RepeatAll,
            subject: None,
            tests: self.selection.clone(),
            shuffle: None,
            argv: Vec::new(),
        })
    }

    /// The argv a user pastes to see `tests` (the culprits, then the test) fail in one process;
    /// Go needs the failing order's shuffle seed to keep their order.
    pub fn order_reproducer(&self, tests: &[TestId], shuffle: Option<u64>) -> Vec<String> {
        match &self.runner {
            SuiteRunner::Pytest { pytest, .. } => pytest.reproducer(tests),
            SuiteRunner::Go { go, .. } => go.reproducer(shuffle, tests),
            SuiteRunner::Libtest { binary } => libtest_run(binary, Some(tests)).argv,
        }
    }

    /// The argv a user pastes to run `test` twice in one process; none for libtest.
    pub fn repeat_reproducer(&self, test: &TestId) -> Option<Vec<String>> {
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

    /// The invocation of `req` as attempt `id`, with its scratch directory created.
    pub fn prepare(&self, req: &Request, id: u64) -> std::io::Result<PreparedRun> {
        let scratch = self.files.join(SCRATCH_DIR).join(id.to_string());
        std::fs::create_dir_all(&scratch)?;
        let junit = scratch.join(JUNIT_FILE);
        let subject = || req.subject.clone().into_iter().collect::<Vec<_>>();
        let invocation = match (&self.runner, req.role) {
            (_, Role::Reproducer) => {
                return Ok(PreparedRun { invocation: Invocation { argv: req.argv.clone(), env: Vec::new() }, scratch })
            }
            (SuiteRunner::Pytest { pytest, .. }, Role::Repeat) => {
                pytest.repeat(&subject(), &self.plugin_dir(), self.python_path.as_deref(), Some(&junit))
            }
            (SuiteRunner::Pytest { pytest, .. }, Role::RepeatAll) => {
                pytest.repeat_all(&req.tests, &self.plugin_dir(), self.python_path.as_deref(), &junit)
            }
            (SuiteRunner::Pytest { pytest, .. }, _) => pytest.run(&req.tests, &junit),
            (SuiteRunner::Go { go, narrowed }, role) => {
                let tests = (role != Role::Shuffled || *narrowed).then_some(req.tests.as_slice());
                let inv = match role {
                    Role::Repeat => go.repeat(&req.tests[0]),
                    Role::RepeatAll => go.repeat_all(tests),
                    _ => go.run(req.shuffle.unwrap_or(0), tests),
                };
                to_file(inv, &scratch)
            }
            (SuiteRunner::Libtest { binary }, role) => {
                let tests = (role != Role::Shuffled).then_some(req.tests.as_slice());
                to_file(libtest_run(binary, tests), &scratch)
            }
        };
        Ok(PreparedRun { invocation, scratch })
    }

    /// The suite part of the attempt `prepared` ran, from its structured output (removed with
    /// its scratch directory) or, for a reproducer, from what it printed (`output`: the head and
    /// tail of its stdout).
    pub fn results(&self, req: &Request, prepared: &PreparedRun, output: &str) -> AttemptTests {
        let read = |name: &str| std::fs::read_to_string(prepared.scratch.join(name)).unwrap_or_default();
        let mut order = req.tests.clone();
        let tests = match (&self.runner, req.role) {
            (_, Role::Reproducer) => {
                let subject = req.subject.clone().unwrap_or_default();
                let failed = reproducer_failed(self.framework(), &subject, output);
                let outcome = if failed { TestOutcome::Fail } else { TestOutcome::Pass };
                vec![TestResult { id: subject, outcome, message: None }]
            }
            (SuiteRunner::Pytest { .. }, _) => {
                junit::pytest_results(&read(JUNIT_FILE), &self.selection).map(|r| r.results).unwrap_or_default()
            }
            (SuiteRunner::Go { .. }, role) => {
                let run = gotest::go_results(&read(OUTPUT_FILE)).unwrap_or_default();
                if role == Role::Shuffled {
                    order = run.order;
                }
                run.results
            }
            (SuiteRunner::Libtest { .. }, _) => libtest::libtest_results(&read(OUTPUT_FILE)),
        };
        let _ = std::fs::remove_dir_all(&prepared.scratch);
        AttemptTests {
            role: req.role,
            subject: req.subject.clone(),
            order,
            shuffle: req.shuffle,
            tests,
            reproducer: req.argv.clone(),
        }
    }
}

/// `inv` with its stdout sent to a file of `scratch`: a passing attempt's output is not kept by
/// the runner, and Go's event stream and libtest's lines are its results. `sh` replaces itself
/// with the program (`exec`), so the attempt's process is the runner's.
fn to_file(inv: Invocation, scratch: &Path) -> Invocation {
    let mut argv = vec!["sh".to_owned(), "-c".to_owned(), "exec \"$@\" >\"$0\"".to_owned()];
    argv.push(scratch.join(OUTPUT_FILE).display().to_string());
    argv.extend(inv.argv);
    Invocation { argv, env: inv.env }
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
        let s = setup(SuiteRunner::Pytest { pytest: Pytest { python: "python3".into() }, paths: vec![] });
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
        let p = s.prepare(&s.shuffled(1, 0), 5).unwrap();
        assert_eq!(p.invocation.argv[..3], ["sh", "-c", "exec \"$@\" >\"$0\""]);
        assert!(p.invocation.argv[3].ends_with("scratch/5/stdout"));
        assert!(!p.invocation.argv.iter().any(|a| a.starts_with("-test.run")), "the whole binary");
        let alone = Request::about(Role::Alone, &"TestV".into(), vec!["TestV".into()], None);
        let p = s.prepare(&alone, 6).unwrap();
        assert!(p.invocation.argv.contains(&"-test.run=^TestV$".to_owned()));
        std::fs::write(
            dir.path().join("scratch/6/stdout"),
            "{\"Action\":\"run\",\"Test\":\"TestV\"}\n{\"Action\":\"fail\",\"Test\":\"TestV\"}\n",
        )
        .unwrap();
        let got = s.results(&alone, &p, "");
        assert_eq!(got.tests[0].outcome, TestOutcome::Fail);
        assert!(!dir.path().join("scratch/6").exists(), "the scratch directory is removed");
    }
}

/// The written form of each id of a selection, and back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WrittenIds {
    pub(super) written: HashMap<TestId, TestId>,
    pub(super) raw: HashMap<TestId, TestId>,
}

impl WrittenIds {
    /// The written ids of `selection`, in its order (the first of two ids made equal keeps the
    /// plain form). Empty when redaction is off or no id holds a secret.
    pub fn new(selection: &[TestId]) -> Self {
        let mut ids = Self::default();
        if !crate::redact::enabled() {
            return ids;
        }
        let mut seen: HashMap<String, u32> = HashMap::new();
        for id in selection {
            let Cow::Owned(mut written) = crate::redact::test_id(id) else { continue };
            let n = seen.entry(written.clone()).or_default();
            *n += 1;
            if *n > 1 {
                written = numbered(&written, *n);
            }
            ids.raw.insert(written.clone(), id.clone());
            ids.written.insert(id.clone(), written);
        }
        ids
    }

    /// How `id` is written: its entry, else redacted without a number (an id the selection did
    /// not hold, such as a Go subtest), else itself.
    pub fn written<'a>(&self, id: &'a str) -> Cow<'a, str> {
        match self.written.get(id) {
            Some(w) => Cow::Owned(w.clone()),
            None if crate::redact::enabled() => crate::redact::test_id(id),
            None => Cow::Borrowed(id),
        }
    }

    /// The real id a written one stands for (an id that was not redacted stands for itself).
    pub fn raw<'a>(&'a self, written: &'a str) -> &'a str {
        self.raw.get(written).map_or(written, String::as_str)
    }

    /// Whether an id of the selection was redacted.
    pub fn is_empty(&self) -> bool {
        self.written.is_empty()
    }

    /// `setup` as the manifest holds it: its selection written, every other string redacted.
    pub fn setup(&self, setup: &SuiteSetup) -> SuiteSetup {
        if !crate::redact::enabled() {
            return setup.clone();
        }
        let mut written = match serde_json::to_value(setup) {
            Ok(mut v) => {
                crate::redact::json(&mut v);
                serde_json::from_value(v).unwrap_or_else(|_| setup.clone())
            }
            Err(_) => setup.clone(),
        };
        written.selection = setup.selection.iter().map(|id| self.written(id).into_owned()).collect();
        written
    }
}

/// `id` with `#n` before its closing bracket (or at its end): the `n`th id of the selection
/// that redaction wrote the same way.
fn numbered(id: &str, n: u32) -> String {
    match id.strip_suffix(']') {
        Some(open) => format!("{open}#{n}]"),
        None => format!("{id}#{n}"),
    }
}
