//! A suite's part of the record: each attempt's tests and their results (`suite` in
//! `attempts.jsonl`), and the suite's part of the summary.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A test's id as its runner names it: a pytest node id (`tests/test_a.py::test_x`), a Go
/// test name (`TestX`, `TestX/sub` for a subtest) or a libtest path (`tests::x`).
pub type TestId = String;

/// The test runner of a suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Framework {
    /// `--pytest`.
    Pytest,
    /// `--go-test`.
    Go,
    /// `--cargo-test` (libtest).
    Libtest,
}

impl Framework {
    /// The name used in the record and the reports (`pytest`, `go`, `libtest`).
    pub fn name(self) -> &'static str {
        match self {
            Framework::Pytest => "pytest",
            Framework::Go => "go",
            Framework::Libtest => "libtest",
        }
    }

    /// Whether an attempt can run the selection in an order flakehunt chooses. libtest cannot on
    /// stable Rust: it runs tests in name order (with `--test-threads=1`) or concurrently, and
    /// its `--shuffle` needs `-Z unstable-options`; Rust suites get per-test tallies and
    /// conditions without order analysis.
    pub fn orders(self) -> bool {
        !matches!(self, Framework::Libtest)
    }
}

/// How one run of one test ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TestOutcome {
    /// Passed.
    Pass,
    /// Its assertions failed (pytest `failure`, Go `fail`, libtest `FAILED`).
    Fail,
    /// It could not run properly: a fixture's setup or teardown raised (pytest `error`), or the
    /// process died while it ran (Go: `run` with no end).
    Error,
    /// Skipped or ignored.
    Skip,
}

impl TestOutcome {
    /// Whether this run counts as a failure of the test.
    pub fn is_failure(self) -> bool {
        matches!(self, TestOutcome::Fail | TestOutcome::Error)
    }
}

/// One run of one test, as an attempt's structured output reported it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestResult {
    /// The test.
    pub id: TestId,
    /// How it ended.
    pub outcome: TestOutcome,
    /// The failure's message (pytest's `message`, the first lines of Go's or libtest's output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl TestResult {
    pub fn new(id: impl Into<TestId>, outcome: TestOutcome, message: Option<String>) -> Self {
        Self { id: id.into(), outcome, message }
    }
}

/// Why an attempt ran what it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// The hunt's attempt: the selection (or a shard of it) in a shuffled order.
    Shuffled,
    /// A confirmation run of `subject` alone.
    Alone,
    /// `subject` twice in a row in one process.
    Repeat,
    /// Every test twice in a row in one process (the pass that looks for non-idempotent tests).
    RepeatAll,
    /// A bisection's candidate run: some of the tests that preceded `subject`, then it.
    Bisect,
    /// A reproducer's check run.
    Reproducer,
    /// A copy of a shuffled attempt run beside other copies of it: whether the suite's tests
    /// tolerate running beside themselves, which the classification's runs side by side need.
    SideBySide,
}

impl Role {
    /// Whether a run of this role runs the whole selection as a shuffled attempt does (a Go or
    /// Rust binary then runs without naming its tests).
    pub fn runs_the_selection(self) -> bool {
        matches!(self, Role::Shuffled | Role::SideBySide)
    }
}

/// The suite part of one attempt: the attempt line's `suite` object (`"role"`, `"order"`,
/// `"tests"`, ...), so that a failing order can be replayed from the record alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptTests {
    /// Why it ran.
    pub role: Role,
    /// The test a confirmation, repeat, bisection or reproducer run is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<TestId>,
    /// The top-level tests in the order they ran (pytest: the order given; Go: read back from
    /// the event stream, since Go shuffles itself).
    pub order: Vec<TestId>,
    /// pytest's shuffled attempts: how the order was made (`collected`, `by-scope`, `global`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<OrderStrategy>,
    /// Go: the `-test.shuffle` seed, which with `-test.run` replays any subset of the order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shuffle: Option<u64>,
    /// Every result, in the order the tests ended (a repeated test appears twice).
    pub tests: Vec<TestResult>,
    /// A reproducer's check run: the exact argv it ran, as printed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reproducer: Vec<String>,
    /// The tests it was to run that reported no result (the process died, hung, exited early,
    /// or ran none): no evidence either way, never a pass.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreported: Vec<TestId>,
    /// Why not every test it was to run reported, in one line (how the process ended, the test
    /// it ended in, pytest's error): set whenever `unreported` is not empty or a test did not
    /// finish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
    /// How the process ended when it failed though every test reported and none failed (a
    /// coverage threshold, a plugin, a session fixture's error): each test is judged by its own
    /// result, and this says why the process's status was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_otherwise: Option<String>,
}

impl AttemptTests {
    /// Whether `test` reported a result here (a subtest's result counts for its parent).
    pub fn reported(&self, test: &str) -> bool {
        !self.unreported.iter().any(|t| t == test)
    }
}

/// Where a test's outcome can be replayed from: the attempt and the tests that ran before it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prefix {
    /// The attempt's id.
    pub attempt: u64,
    /// The tests that ran before the test, in order.
    pub before: Vec<TestId>,
    /// Go's shuffle seed of that attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shuffle: Option<u64>,
    /// How that attempt's order was made (pytest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<OrderStrategy>,
}

/// How an attempt's order was made from the collected selection, recorded with each pytest
/// attempt (`suite.strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OrderStrategy {
    /// The order pytest collected, unchanged: the baseline every order-dependence study starts
    /// from (a test that passes there and fails alone is not deterministic).
    Collected,
    /// Shuffled by scope, as pytest-randomly and pytest-random-order's buckets do: the modules,
    /// then the classes and lone tests within each module, then the tests within each class,
    /// so that a class's tests stay together under their class fixture.
    ByScope,
    /// The whole selection shuffled: any test may meet any other.
    Global,
}

impl OrderStrategy {
    /// The name in the record (`collected`, `by-scope`, `global`).
    pub fn name(self) -> &'static str {
        match self {
            OrderStrategy::Collected => "collected",
            OrderStrategy::ByScope => "by-scope",
            OrderStrategy::Global => "global",
        }
    }

    /// The strategy of plan position `attempt`: the collected order first, then by scope and
    /// globally by turns.
    pub fn of_attempt(attempt: u64) -> Self {
        match attempt {
            0 => OrderStrategy::Collected,
            n if n % 2 == 1 => OrderStrategy::ByScope,
            _ => OrderStrategy::Global,
        }
    }
}

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
        /// Runs print each passing test's output (`--show-output`), where the thread check
        /// reads the panics of its threads (see `checks::rust`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        show_output: bool,
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
    /// and its test binary went, how long the collection took, its `PYTHONPATH`, the absolute
    /// paths pytest was given.
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
            SuiteRunner::Libtest { binary, .. } => *binary = PathBuf::new(),
            SuiteRunner::Pytest { pytest, .. } => pytest.initial_paths.clear(),
        }
        s
    }

    /// Why the classification's runs cannot go side by side whatever the suite's tests do, if
    /// they cannot: pytest-cov's data files, which every run writes into the project's directory
    /// and combines from there.
    pub fn one_at_a_time(&self) -> Option<&'static str> {
        match &self.runner {
            SuiteRunner::Pytest { pytest, .. } if pytest.coverage => Some(
                "pytest-cov measures the runs: each writes its data files into the project's directory and combines the ones it finds there, so runs side by side would take each other's",
            ),
            _ => None,
        }
    }
}

/// pytest, run as `PYTHON -m pytest` from the suite's root directory (pytest's rootdir: node ids
/// are relative to it).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Pytest {
    /// The interpreter the user means (`--python`, `$VIRTUAL_ENV`, `./.venv`, `python3`).
    pub python: String,
    /// Options every run whose results flakehunt reads adds to the project's own: `-n0` when
    /// the project's options have pytest-xdist distribute the tests (each attempt must run its
    /// tests in its order, in one process).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    /// pytest's rootdir, where every run starts, when it is not the directory the hunt was
    /// started in: printed reproducers then start with `env -C ROOT`, so that they run from
    /// anywhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    /// The paths the collection was given, as pytest took them (absolute): every run flakehunt
    /// reads takes only these as given, whatever node ids it names, as the project's own run
    /// does (the results plugin's `FLAKEHUNT_SUITE_INITPATHS`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub initial_paths: Vec<String>,
    /// pytest-cov measures the runs: each writes its data files into the project's directory
    /// and combines the ones it finds there, so runs side by side would take each other's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub coverage: bool,
}

impl Pytest {
    /// The interpreter alone, with pytest's own options.
    pub fn new(python: impl Into<String>) -> Self {
        Self { python: python.into(), ..Self::default() }
    }
}

/// A Go package's test binary, built once (`go test -c`), run in the package's directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoTest {
    /// The `go` command (for `go tool test2json`).
    pub go: String,
    /// The package's import path (test2json's `-p`).
    pub package: String,
    /// The test binary.
    pub binary: PathBuf,
    /// Go 1.20 or later: `-test.v=test2json`, whose framing keeps a test's output that looks
    /// like `--- FAIL` from being read as a result; older binaries reject the value and get
    /// plain `-test.v`.
    pub framing: bool,
    /// The test2json tool itself (`go tool -n test2json`), run directly: `go tool` costs a
    /// start of the go command per attempt, more than a small package's tests take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test2json: Option<String>,
}

impl GoTest {
    /// `BIN -test.list .`: the top-level tests, benchmarks, examples and fuzz targets.
    pub fn collect_argv(&self) -> Vec<String> {
        vec![self.binary.display().to_string(), "-test.list".into(), ".".into()]
    }
}

/// What a suite hunt found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteSummary {
    /// The runner.
    pub framework: Framework,
    /// Tests collected.
    pub collected: u64,
    /// Whether attempts ran the selection in shuffled orders (not for libtest: see
    /// [`super::order::LIBTEST_ORDER_NOTE`]).
    pub shuffled: bool,
    /// Every test that failed at least once, most failures first.
    pub tests: Vec<TestSummary>,
    /// Every confirmation run the classification needs is in the record (false: the hunt was
    /// interrupted before they all ran; `--resume` runs the rest).
    #[serde(default = "yes")]
    pub classified: bool,
    /// The attempts whose tests did not all report (a crash, a hang, an early exit, a runner
    /// that ran none), grouped by why: what they did not report is no evidence of a pass.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incomplete: Vec<IncompleteRuns>,
    /// The tests that reported nothing in some shuffled attempt they were to run in, with how
    /// many, most first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreported: Vec<UnreportedTest>,
    /// The runs whose process failed though none of their tests did (a coverage threshold, a
    /// plugin, a session fixture), grouped by why: each run was judged by its tests' own
    /// results, not by the process's status.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_otherwise: Vec<IncompleteRuns>,
    /// What the classification's runs cost against the suite's plain run, and whether they went
    /// side by side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<ClassificationCost>,
}

impl SuiteSummary {
    /// The attempts whose tests did not all report.
    pub fn incomplete_attempts(&self) -> usize {
        self.incomplete.iter().map(|g| g.attempts.len()).sum()
    }

    /// The verdict's machine name: `flaky-tests` when any test failed; else `unreported-tests`
    /// when some attempt ended before all its tests reported (that is no evidence that they
    /// pass); else `not-reproduced`. The hunt exits 1 on the first two, as other hunts do when a
    /// failure was reproduced.
    pub fn verdict(&self) -> &'static str {
        if !self.tests.is_empty() {
            "flaky-tests"
        } else if !self.incomplete.is_empty() {
            "unreported-tests"
        } else {
            "not-reproduced"
        }
    }
}

/// Attempts that ended before all their tests reported, for one reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IncompleteRuns {
    /// Why (how the process ended, the test it ended in, the runner's error).
    pub why: String,
    /// Their role (`shuffled`, `repeat-all`, `alone`, ...).
    pub phase: String,
    /// Their ids.
    pub attempts: Vec<u64>,
}

/// A test that reported nothing in some shuffled attempts it was to run in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnreportedTest {
    /// The test.
    pub id: TestId,
    /// The shuffled attempts it reported nothing in.
    pub attempts: u64,
}

fn yes() -> bool {
    true
}

/// One test that failed at least once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestSummary {
    /// The test's id (node id, Go or libtest name).
    pub id: TestId,
    /// Attempts that ran it.
    pub attempts: u64,
    /// Attempts it failed in.
    pub failures: u64,
    /// failures / attempts.
    pub rate: f64,
    /// Wilson 95 % interval of the rate.
    pub ci95: [f64; 2],
    /// Per cell (the baseline first): its runs and failures there, and for the other cells the
    /// two-sided Fisher exact p against the baseline, as `sweep` compares its cells.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ConditionSummary>,
    /// Why it fails.
    pub category: Category,
    /// The condition it fails more under (`condition-sensitive`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// The tests after which it fails (`order-dependent-victim`), in the order they ran.
    pub polluters: Vec<TestId>,
    /// The tests after which it passes (`order-dependent-brittle`), in the order they ran.
    pub state_setters: Vec<TestId>,
    /// An argv that makes it fail, checked to fail twice before it was recorded; empty when
    /// none was found (a `flaky` test has no reliable one).
    pub reproducer: Vec<String>,
    /// The first failure's message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The bisection for its polluters or state-setters, when one ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bisection: Option<BisectionSummary>,
    /// Runs alone, and how many failed.
    pub alone: [u64; 2],
    /// Confirmation runs twice in one process in which it reported, and how many of them
    /// failed its second run after its first passed.
    pub repeated: [u64; 2],
    /// Shuffled attempts it was to run in that ended before it reported.
    #[serde(default, skip_serializing_if = "super::is_zero")]
    pub unreported: u64,
    /// The state its polluters (or state-setters) leave that it trips over (pytest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<StateFinding>,
}

/// One test's runs in one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConditionSummary {
    /// The cell.
    pub name: String,
    /// Attempts of the cell that ran the test.
    pub runs: u64,
    /// Of those, the ones it failed in.
    pub failures: u64,
    /// Two-sided Fisher exact p against the baseline (none for the baseline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
}

/// The category of a test that failed at least once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Category {
    /// Passes alone, fails when run twice in one process: it pollutes its own state.
    NonIdempotent,
    /// Passes alone, fails after some tests (its polluters).
    OrderDependentVictim,
    /// Fails alone, passes after some tests (its state-setters).
    OrderDependentBrittle,
    /// Fails more under some condition (a profile, an overlay) than in the baseline.
    ConditionSensitive,
    /// Fails at some rate with no condition or order found.
    Flaky,
    /// Fails every time, alone and in every order.
    Deterministic,
}

impl Category {
    /// The name used in the summary and the tables.
    pub fn name(self) -> &'static str {
        match self {
            Category::NonIdempotent => "non-idempotent",
            Category::OrderDependentVictim => "order-dependent-victim",
            Category::OrderDependentBrittle => "order-dependent-brittle",
            Category::ConditionSensitive => "condition-sensitive",
            Category::Flaky => "flaky",
            Category::Deterministic => "deterministic",
        }
    }
}

/// How a bisection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BisectStatus {
    /// The culprits were found, and the result reproduced twice more.
    Confirmed,
    /// The whole prefix did not reproduce: the test's outcome does not follow this order.
    NotReproduced,
    /// A smallest set was found but did not reproduce twice more (the test is also flaky
    /// on its own); `culprits` is that set.
    Unconfirmed,
    /// The run budget ran out; `culprits` is the smallest set seen to reproduce.
    BudgetSpent,
}

/// A bisection's account, for the summary and the measurements.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BisectionSummary {
    /// `polluters` or `state-setters`.
    pub searched: String,
    /// The tests that preceded the test in the order bisected.
    pub prefix: usize,
    /// Runs it needed, its two confirmations included.
    pub runs: u32,
    /// How it ended.
    pub status: BisectStatus,
    /// How the order bisected was made (pytest: `collected`, `by-scope`, `global`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<OrderStrategy>,
    /// The culprits are ones already found for another test, shown by one run of them then this
    /// test and confirmed by two more (a victim's: its reproducer's two checks): no bisection
    /// ran.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub known: bool,
}

/// One piece of state that differs after the polluters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateDiff {
    /// Where it is, as Python names it: `mod.Class.attr`, `os.environ['X']`, `os.getcwd()`,
    /// `sys.modules['m']`, `random.getstate()`, `file PATH`.
    pub path: String,
    /// Its kind: `module global`, `class attribute`, `object attribute`, `environment
    /// variable`, `working directory`, `sys.modules`, `random state`, `file ...`, ...
    pub kind: String,
    /// Its value before the polluters (a short repr); none when it did not exist.
    pub before: Option<String>,
    /// Its value after them; none when they removed it.
    pub after: Option<String>,
}

/// What a fingerprint cost, in the fork that took two.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FingerprintCost {
    /// Seconds of the fingerprint before the polluters and of the one after.
    pub seconds: [f64; 2],
    /// Pieces of state in the first one.
    pub entries: u64,
    /// KiB the fork's resident memory grew by while it took the first one.
    pub kib: u64,
}

/// The state one order-dependent test trips over, or why none was named.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateFinding {
    /// The test (its id as written in the record).
    pub test: TestId,
    /// Its polluters or state-setters.
    pub polluters: Vec<TestId>,
    /// A brittle test (the state is what makes it pass).
    #[serde(default)]
    pub brittle: bool,
    /// The smallest set of differences whose restoration (brittle: whose setting) makes it
    /// pass; empty when none was found.
    #[serde(default)]
    pub state: Vec<StateDiff>,
    /// Runs with that state restored that passed, of the runs made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed: Option<[u32; 2]>,
    /// Why no state is named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// Differences the fingerprints found.
    #[serde(default)]
    pub different: u64,
    /// Runs of the test the search took (forks), confirmations included.
    #[serde(default)]
    pub trials: u32,
    /// What a fingerprint cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<FingerprintCost>,
    /// The run that searched it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<SearchRun>,
    /// A non-idempotent test: its polluter is its own first run (`polluters` holds the test).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repeated: bool,
    /// What was examined: `process` for a Go test, whose process-level state alone is
    /// fingerprinted (its environment, working directory and files) and never restored, so its
    /// `state` is what differs, not what is shown to matter; absent for pytest's whole search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub examined: Option<String>,
    /// A fixture that puts the state back (brittle: sets it), and its check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup: Option<Cleanup>,
}

impl StateFinding {
    /// A cleanup that cannot be checked, and why.
    pub fn unchecked(&mut self, why: String) {
        if let Some(c) = self.cleanup.as_mut().filter(|c| !c.code.is_empty()) {
            c.verdict = Some(why);
        }
    }

    /// The proved cleanup's code; none when it is not proved (it is printed only then).
    pub fn cleanup_code(&self) -> Option<&str> {
        self.cleanup.as_ref().filter(|c| c.proved).map(|c| c.code.as_str())
    }
}

/// A pytest fixture that puts back the state a finding names after the tests that leave it (a
/// victim's polluters, a non-idempotent test), or sets it for a brittle test; proved when the
/// failing order passed with it in place as many times as rule out the failure's recorded rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cleanup {
    /// The fixture's name; empty when no code could be written.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub fixture: String,
    /// The `conftest.py` fragment: its imports and the fixture.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub code: String,
    /// The `conftest.py` it goes in, relative to the rootdir: beside the first test it is
    /// applied to.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub conftest: String,
    /// The tests that get `@pytest.mark.usefixtures(fixture)`: a victim's polluters, a brittle
    /// or non-idempotent test itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub apply_to: Vec<TestId>,
    /// The test's reproducer checks the runs needed come from: failures, runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_from: Option<[u64; 2]>,
    /// Runs with it in place that must all pass: enough to rule out the lower end of the
    /// reproducer's 95 % interval at 99 %, as `verify` counts.
    #[serde(default, skip_serializing_if = "super::is_zero")]
    pub needed: u64,
    /// Runs with it in place that passed, of the runs made (the check stops at the first
    /// failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked: Option<[u64; 2]>,
    /// Every run the proof needs passed: the only case in which the code is printed.
    pub proved: bool,
    /// Why it is not proved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// Seconds the check's runs took (the record's `state.json` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// The pytest run that checked it (the record's `state.json` only; the summary's `cost`
    /// counts it with the state search).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<SearchRun>,
}

/// The run of the state plugin that searched a test's state: its id (of the hunt's attempt ids;
/// the tests of one set of polluters share one run) and how long it took (a Go test's: its two
/// runs, the id of the second).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchRun {
    /// Its id.
    pub id: u64,
    /// Its wall seconds.
    pub seconds: f64,
}

/// What the classification cost (`cost` in the summary).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassificationCost {
    /// Seconds of the suite's plain run: the median shuffled attempt of the baseline cell, plus,
    /// when those ran warm, the collection (a cold run's interpreter start, imports and
    /// collection, which a fork skips).
    pub plain_run: f64,
    /// Wall seconds of the classification's runs, from the first one's start to the last one's end.
    pub seconds: f64,
    /// Its runs (the side-by-side check's included).
    pub runs: u64,
    /// `seconds / plain_run`.
    pub ratio: f64,
    /// The most of its runs seen running at once (the side-by-side check's included, which runs
    /// its copies beside the first runs to decide whether the rest may go side by side).
    pub at_once: u64,
    /// The check that the suite's tests tolerate running beside themselves, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side_by_side: Option<SideBySide>,
    /// Why its runs went one at a time whatever the suite's tests do (no side-by-side check ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_at_a_time: Option<String>,
    /// Wall seconds of the state search's runs (pytest), when it ran: after the classification,
    /// one run per set of polluters or state-setters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_search: Option<f64>,
}

impl ClassificationCost {
    /// The note the summary carries: `classification: 46 runs in 9.8 s, 6.4x the suite's plain
    /// run (1.53 s), up to 2 at once (the suite ran beside itself clean)`.
    pub fn note(&self) -> String {
        let runs = if self.runs == 1 { "1 run".to_owned() } else { format!("{} runs", self.runs) };
        let mut text = format!(
            "classification: {runs} in {:.1} s, {:.1}x the suite's plain run ({:.2} s)",
            self.seconds, self.ratio, self.plain_run
        );
        let beside = |s: &SideBySide| {
            let copies = if s.copies == 1 { "a copy".to_owned() } else { format!("{} copies", s.copies) };
            match s.repeat_all {
                true => format!("{copies} of attempt {} beside the run of every test twice", s.attempt),
                false => format!("{copies} of attempt {} at once", s.attempt),
            }
        };
        match &self.side_by_side {
            Some(s) if s.failed.is_empty() => text.push_str(&format!(
                ", up to {} at once (the suite ran clean beside itself: {})",
                self.at_once,
                beside(s)
            )),
            Some(s) => {
                let mut names: Vec<&str> = s.failed.iter().take(3).map(String::as_str).collect();
                let more = s.failed.len().saturating_sub(names.len());
                let more = if more > 0 { format!(" and {more} more") } else { String::new() };
                names.sort_unstable();
                text.push_str(&format!(
                    ", one at a time: beside itself ({}) the suite failed {}{more}, which passed alone (a shared file or port, or a flaky test)",
                    beside(s),
                    names.join(", ")
                ));
            }
            None => {}
        }
        if let Some(why) = &self.one_at_a_time {
            text.push_str(&format!(", one at a time: {why}"));
        }
        if let Some(seconds) = self.state_search {
            text.push_str(&format!("; then the state search {seconds:.1} s"));
        }
        text
    }
}

/// The suite run beside itself: copies of one of its shuffled attempts at once, beside the run
/// of every test twice in one process when the runner has one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SideBySide {
    /// Copies of the attempt run at once.
    pub copies: u64,
    /// The run of every test twice in one process ran beside them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repeat_all: bool,
    /// The shuffled attempt they copied.
    pub attempt: u64,
    /// The tests that passed in that attempt and failed, or did not report, in a copy: empty
    /// when the suite tolerates running beside itself (the classification's runs then went side
    /// by side).
    pub failed: Vec<TestId>,
}
