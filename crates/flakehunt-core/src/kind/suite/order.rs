//! What an attempt runs, and in which order: the seeded shuffle of the selection and the argv
//! of each runner's attempt, bisection run, repetition and reproducer. Main types:
//! [`Pytest`], [`GoTest`], [`Invocation`].

use std::path::Path;

use super::TestId;
use super::{pytestlog, repeat};
use crate::plan::Rng;
pub use crate::schema::suite::OrderStrategy;
pub use crate::schema::suite::{GoTest, Pytest};

/// Separates the order's random stream from the interleaving's and the profiles' streams of
/// the same seed.
const ORDER_SALT: u64 = 0x5017_e0de;

/// The order attempt `attempt` runs the selection in, by [`OrderStrategy::of_attempt`]: seeded
/// (the project's SplitMix64, Fisher–Yates), the same for the same seed and attempt on every
/// machine, so a shard, a resumed hunt and a replay run what the first run ran.
pub fn attempt_order(selection: &[TestId], seed: u64, attempt: u64) -> Vec<TestId> {
    let mut rng = Rng::stream(seed ^ ORDER_SALT, attempt);
    match OrderStrategy::of_attempt(attempt) {
        OrderStrategy::Collected => selection.to_vec(),
        OrderStrategy::Global => {
            let mut order = selection.to_vec();
            rng.shuffle(&mut order);
            order
        }
        OrderStrategy::ByScope => by_scope(selection, &mut rng),
    }
}

/// A pytest node id's module (`path`) and class (`path::Class`, none for a test outside a
/// class); a parametrized id's brackets may hold `::` and are left out.
fn scope(id: &str) -> (&str, Option<&str>) {
    let name = id.split_once('[').map_or(id, |(head, _)| head);
    let mut parts = name.match_indices("::").map(|(i, _)| i);
    let module_end = parts.next().unwrap_or(name.len());
    let class = parts.next().map(|end| &id[..end]);
    (&id[..module_end], class)
}

/// A class's tests (named by the class) or one lone test (no name).
type Unit<'a> = (Option<&'a str>, Vec<TestId>);

/// `selection` shuffled by scope (see [`OrderStrategy::ByScope`]).
fn by_scope(selection: &[TestId], rng: &mut Rng) -> Vec<TestId> {
    // Per module, in collection order: its units.
    let mut modules: Vec<(&str, Vec<Unit>)> = Vec::new();
    for id in selection {
        let (module, class) = scope(id);
        let at = match modules.iter().position(|(m, _)| *m == module) {
            Some(at) => at,
            None => {
                modules.push((module, Vec::new()));
                modules.len() - 1
            }
        };
        let units = &mut modules[at].1;
        match units.iter_mut().find(|(c, _)| class.is_some() && *c == class) {
            Some((_, tests)) => tests.push(id.clone()),
            None => units.push((class, vec![id.clone()])),
        }
    }
    rng.shuffle(&mut modules);
    let mut order = Vec::with_capacity(selection.len());
    for (_, units) in &mut modules {
        rng.shuffle(units);
        for (_, tests) in units.iter_mut() {
            rng.shuffle(tests);
            order.append(tests);
        }
    }
    order
}

/// The `-test.shuffle` seed of Go attempt `attempt`: Go shuffles the top-level tests itself
/// (`math/rand` seeded with this value), so the order is read back from the event stream.
/// Below 2^63: the flag is parsed as an int64.
pub fn go_shuffle_seed(seed: u64, attempt: u64) -> u64 {
    Rng::stream(seed ^ ORDER_SALT, attempt).next_u64() >> 1
}

/// Why Rust suites get no order analysis, for the summary's notes.
pub const LIBTEST_ORDER_NOTE: &str = "libtest cannot run tests in a given order on stable Rust (it runs them in name order, or concurrently; --shuffle needs -Z unstable-options): Rust tests get per-test tallies and conditions, without order analysis";

/// The pytest plugins that alter re-runs or order, disabled in every pytest run (a
/// `-p no:X` for a plugin that is not installed is accepted by pytest).
pub const PYTEST_NO_PLUGINS: [&str; 4] = ["randomly", "cacheprovider", "rerunfailures", "flaky"];

/// A process to start: its argv and the variables to set on top of the attempt's environment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Invocation {
    /// The program and its arguments.
    pub argv: Vec<String>,
    /// Variables to set, in order.
    pub env: Vec<(String, String)>,
    /// A printed reproducer's directory, when it must start elsewhere than where it is pasted.
    pub dir: Option<String>,
}

impl Invocation {
    fn argv(argv: Vec<String>) -> Self {
        Self { argv, ..Self::default() }
    }

    /// One argv a user can paste (no shell involved): `env -C DIR K=V ... PROGRAM ARGS` when
    /// it starts elsewhere or variables are set.
    pub fn reproducer(&self) -> Vec<String> {
        if self.env.is_empty() && self.dir.is_none() {
            return self.argv.clone();
        }
        let mut argv = vec!["env".to_owned()];
        if let Some(dir) = &self.dir {
            argv.extend(["-C".to_owned(), dir.clone()]);
        }
        argv.extend(self.env.iter().map(|(k, v)| format!("{k}={v}")));
        argv.extend(self.argv.iter().cloned());
        argv
    }
}

/// The pytest invocations a suite hunt runs, and their reproducers.
pub trait PytestInvocations {
    /// What follows `-m pytest` in every shuffled attempt and confirmation run, before its node
    /// ids: a suite's warm parents collect with it.
    fn run_options(&self) -> Vec<String>;

    /// The collection: the plugin writes `session.items`' node ids and pytest's rootdir into
    /// `file` ([`super::pytestlog::Collected`]). Run where the hunt was started, with the paths
    /// given there (the rootdir is not known yet).
    fn collect_argv(&self, paths: &[String], file: &Path) -> Vec<String>;

    /// An attempt, or a bisection run: pytest runs node ids given explicitly in the order given
    /// (each is collected on its own, files and all, and items keep the order of the
    /// arguments; checked against pytest 9.2 by `pytest_runs_node_ids_in_the_order_given`), and
    /// the plugin loaded from `plugin_dir` writes each test's events to `results` (a file in the
    /// attempt's scratch directory).
    fn run(&self, order: &[TestId], plugin_dir: &Path, python_path: Option<&str>, results: &Path) -> Invocation;

    /// `tests` run twice each, in a row, in one session: pytest would run a node id given
    /// twice only once, even with `--keep-duplicates`, so flakehunt's plugin (written into
    /// `plugin_dir` by [`repeat::write_plugin`]) repeats them. With `results`, a run flakehunt
    /// reads; without, the reproducer a user pastes.
    fn repeat(
        &self,
        tests: &[TestId],
        plugin_dir: &Path,
        python_path: Option<&str>,
        results: Option<&Path>,
    ) -> Invocation;

    /// Every test of `order` twice in a row, in one session: the pass that finds the
    /// non-idempotent tests among all of them (a test whose second run fails and whose first
    /// passed), each then confirmed with [`Self::repeat`] alone.
    fn repeat_all(&self, order: &[TestId], plugin_dir: &Path, python_path: Option<&str>, results: &Path) -> Invocation;

    /// The reproducer of an order-dependent failure: the culprits, then the test, in the order
    /// they ran (`python -m pytest -p no:randomly ... tests/a.py::test_p tests/b.py::test_v`),
    /// from the rootdir.
    fn reproducer(&self, tests: &[TestId]) -> Vec<String>;
}

impl PytestInvocations for Pytest {
    fn run_options(&self) -> Vec<String> {
        self.reading().split_off(3)
    }

    fn collect_argv(&self, paths: &[String], file: &Path) -> Vec<String> {
        let mut argv = self.base();
        argv.extend(["-p".into(), pytestlog::PLUGIN_MODULE.into()]);
        argv.extend(self.options.iter().cloned());
        argv.extend([pytestlog::COLLECT_OPTION.into(), file.display().to_string(), "--collect-only".into()]);
        argv.extend(paths.iter().cloned());
        argv
    }

    fn run(&self, order: &[TestId], plugin_dir: &Path, python_path: Option<&str>, results: &Path) -> Invocation {
        let mut argv = self.reading();
        argv.extend(order.iter().cloned());
        Invocation { argv, env: self.plugin_env(plugin_dir, python_path, Some(results)), dir: None }
    }

    fn repeat(
        &self,
        tests: &[TestId],
        plugin_dir: &Path,
        python_path: Option<&str>,
        results: Option<&Path>,
    ) -> Invocation {
        let mut argv = if results.is_some() { self.reading() } else { self.printed() };
        argv.extend(["-p".into(), repeat::PLUGIN_MODULE.into()]);
        for t in tests {
            argv.extend([repeat::REPEAT_OPTION.into(), t.clone()]);
        }
        argv.extend(tests.iter().cloned());
        let mut inv = Invocation { argv, env: self.plugin_env(plugin_dir, python_path, results), dir: None };
        if results.is_none() {
            inv.dir = self.root.clone();
        }
        inv
    }

    fn repeat_all(&self, order: &[TestId], plugin_dir: &Path, python_path: Option<&str>, results: &Path) -> Invocation {
        let mut inv = self.repeat(&[], plugin_dir, python_path, Some(results));
        inv.argv.push(repeat::REPEAT_ALL_OPTION.into());
        inv.argv.extend(order.iter().cloned());
        inv
    }

    fn reproducer(&self, tests: &[TestId]) -> Vec<String> {
        let mut argv = self.printed();
        argv.extend(tests.iter().cloned());
        Invocation { argv, env: Vec::new(), dir: self.root.clone() }.reproducer()
    }
}

/// The options and the environment the pytest invocations share.
trait PytestArgs {
    fn base(&self) -> Vec<String>;

    /// The argv of a run whose results flakehunt reads: the base, flakehunt's plugin (see
    /// [`super::pytestlog`]), `--maxfail=0` (a project's `-x` or `--maxfail` would stop an
    /// attempt at its first failure, and the tests after it would not run), `--rootdir=.` (the
    /// runs start in the rootdir: older pytest versions would otherwise take the common
    /// ancestor of the node ids given, and name the tests after it) and [`Self::options`].
    fn reading(&self) -> Vec<String>;

    /// The start of a printed reproducer: the base and [`Self::options`] (`-n0`: a project
    /// whose options distribute its tests would otherwise run the culprits and the test in
    /// different processes, and never see them meet).
    fn printed(&self) -> Vec<String>;

    /// The environment of a run that loads flakehunt's plugins from `plugin_dir` (on
    /// `PYTHONPATH` before `python_path`, the attempt's own value) and writes its events into
    /// `results`: a run flakehunt reads, which meets the files it names as the project's run does
    /// ([`Self::initial_paths`]).
    fn plugin_env(&self, plugin_dir: &Path, python_path: Option<&str>, results: Option<&Path>)
        -> Vec<(String, String)>;
}

impl PytestArgs for Pytest {
    fn base(&self) -> Vec<String> {
        let mut argv = vec![self.python.clone(), "-m".into(), "pytest".into()];
        for plugin in PYTEST_NO_PLUGINS {
            argv.extend(["-p".into(), format!("no:{plugin}")]);
        }
        argv.push("-q".into());
        argv
    }

    fn reading(&self) -> Vec<String> {
        let mut argv = self.base();
        argv.extend(["-p".into(), pytestlog::PLUGIN_MODULE.into(), "--maxfail=0".into(), "--rootdir=.".into()]);
        argv.extend(self.options.iter().cloned());
        argv
    }

    fn printed(&self) -> Vec<String> {
        let mut argv = self.base();
        argv.extend(self.options.iter().cloned());
        argv
    }

    fn plugin_env(
        &self,
        plugin_dir: &Path,
        python_path: Option<&str>,
        results: Option<&Path>,
    ) -> Vec<(String, String)> {
        let dir = plugin_dir.display().to_string();
        let path = match python_path {
            Some(p) if !p.is_empty() => format!("{dir}:{p}"),
            _ => dir,
        };
        let mut env = vec![("PYTHONPATH".to_owned(), path)];
        if let Some(results) = results {
            env.push((pytestlog::RESULTS_VAR.to_owned(), results.display().to_string()));
            if !self.initial_paths.is_empty() {
                let paths = serde_json::to_string(&self.initial_paths).unwrap_or_default();
                env.push((pytestlog::INITPATHS_VAR.to_owned(), paths));
            }
        }
        env
    }
}

/// The `go test` invocations a suite hunt runs, and their reproducers.
pub trait GoTestInvocations {
    /// An attempt: the whole binary, or `tests` only, shuffled by Go with `shuffle`
    /// ([`go_shuffle_seed`]); its stdout is the test2json event stream ([`super::gotest`]).
    fn run(&self, shuffle: u64, tests: Option<&[TestId]>) -> Invocation;

    /// A bisection run: `culprits` then the test, in the order a failing attempt ran them.
    /// Go shuffles the whole list of the binary's tests with the seed and then skips those
    /// `-test.run` does not match, so the same seed keeps any subset in its relative order.
    fn subset(&self, shuffle: u64, tests: &[TestId]) -> Invocation;

    /// The test twice in a row in one process (`-test.count=2`).
    fn repeat(&self, test: &TestId) -> Invocation;

    /// Every test of `tests` (or of the binary) twice, in one process (`-test.count=2`): Go runs
    /// the whole list, then the whole list again, so a test's second run is not next to its
    /// first; the tests whose second run failed after their first passed are then confirmed
    /// with [`Self::repeat`] alone.
    fn repeat_all(&self, tests: Option<&[TestId]>) -> Invocation;

    /// The reproducer of an order-dependent failure, without test2json:
    /// `BIN -test.shuffle=SEED -test.run=^(TestP|TestV)$`.
    fn reproducer(&self, shuffle: Option<u64>, tests: &[TestId]) -> Vec<String>;

    /// A reproducer's `argv` (as [`Self::reproducer`] or [`Self::repeat_reproducer`] print it,
    /// its binary perhaps built again) run so that its tests' results are read from events:
    /// verbose (framed since Go 1.20), through test2json.
    fn structured(&self, argv: &[String]) -> Invocation;

    /// The reproducer of a non-idempotent test: `BIN -test.run=^TestX$ -test.count=2`.
    fn repeat_reproducer(&self, test: &TestId) -> Vec<String>;
}

impl GoTestInvocations for GoTest {
    fn run(&self, shuffle: u64, tests: Option<&[TestId]>) -> Invocation {
        self.through_test2json(self.binary_args(Some(shuffle), tests, 1, true))
    }

    fn subset(&self, shuffle: u64, tests: &[TestId]) -> Invocation {
        self.run(shuffle, Some(tests))
    }

    fn repeat(&self, test: &TestId) -> Invocation {
        self.through_test2json(self.binary_args(None, Some(std::slice::from_ref(test)), 2, true))
    }

    fn repeat_all(&self, tests: Option<&[TestId]>) -> Invocation {
        self.through_test2json(self.binary_args(None, tests, 2, true))
    }

    fn reproducer(&self, shuffle: Option<u64>, tests: &[TestId]) -> Vec<String> {
        self.binary_args(shuffle, Some(tests), 1, false)
    }

    fn structured(&self, argv: &[String]) -> Invocation {
        let mut args = argv.to_vec();
        let verbose = if self.framing { "-test.v=test2json" } else { "-test.v" };
        args.insert(usize::from(!args.is_empty()), verbose.to_owned());
        self.through_test2json(args)
    }

    fn repeat_reproducer(&self, test: &TestId) -> Vec<String> {
        self.binary_args(None, Some(std::slice::from_ref(test)), 2, false)
    }
}

/// The arguments the `go test` invocations share.
trait GoTestArgs {
    /// The binary's argv. `-test.paniconexit0` as `go test` gives it: a test that calls
    /// `os.Exit(0)` then fails (a panic) instead of ending the process with a success before the
    /// tests after it ran.
    fn binary_args(&self, shuffle: Option<u64>, tests: Option<&[TestId]>, count: u32, verbose: bool) -> Vec<String>;

    fn through_test2json(&self, binary_args: Vec<String>) -> Invocation;
}

impl GoTestArgs for GoTest {
    fn binary_args(&self, shuffle: Option<u64>, tests: Option<&[TestId]>, count: u32, verbose: bool) -> Vec<String> {
        let mut argv = vec![self.binary.display().to_string(), "-test.paniconexit0".into()];
        if verbose {
            argv.push(if self.framing { "-test.v=test2json".into() } else { "-test.v".into() });
        }
        if let Some(s) = shuffle {
            argv.push(format!("-test.shuffle={s}"));
        }
        if let Some(tests) = tests {
            argv.push(format!("-test.run={}", run_pattern(tests)));
        }
        if count != 1 {
            argv.push(format!("-test.count={count}"));
        }
        argv
    }

    fn through_test2json(&self, binary_args: Vec<String>) -> Invocation {
        let mut argv = match &self.test2json {
            Some(tool) => vec![tool.clone()],
            None => vec![self.go.clone(), "tool".into(), "test2json".into()],
        };
        argv.extend(["-t".into(), "-p".into(), self.package.clone()]);
        argv.extend(binary_args);
        Invocation::argv(argv)
    }
}

/// A `-test.run` pattern matching exactly these top-level tests: `^(TestA|TestB)$`. Go splits
/// the pattern at `/` into levels, so a subtest (`TestA/sub`) runs as its parent.
pub fn run_pattern(tests: &[TestId]) -> String {
    let mut seen = std::collections::HashSet::new();
    let names: Vec<String> = tests
        .iter()
        .map(|t| regex::escape(t.split('/').next().unwrap_or(t)))
        .filter(|n| seen.insert(n.clone()))
        .collect();
    if names.len() == 1 {
        format!("^{}$", names[0])
    } else {
        format!("^({})$", names.join("|"))
    }
}

/// A libtest run of `tests` (or all): one thread, so that tests that share process state meet
/// in one order (name order); `--exact` so a name does not also select the tests it prefixes;
/// `--show-output` when the thread check reads what passing tests' threads printed.
pub fn libtest_run(binary: &Path, tests: Option<&[TestId]>, show_output: bool) -> Invocation {
    let mut argv = vec![binary.display().to_string(), "--test-threads=1".into()];
    if show_output {
        argv.push(crate::checks::rust::SHOW_OUTPUT.into());
    }
    if let Some(tests) = tests {
        argv.push("--exact".into());
        argv.extend(tests.iter().cloned());
    }
    Invocation::argv(argv)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<TestId> {
        (0..n).map(|i| format!("t.py::test_{i}")).collect()
    }

    #[test]
    fn the_first_order_is_the_collected_one_then_by_scope_and_global_by_turns() {
        let sel: Vec<TestId> = [
            "a.py::test_1",
            "a.py::TestK::test_x",
            "a.py::test_2",
            "a.py::TestK::test_y",
            "a.py::TestK::test_z",
            "b.py::test_p[x::y]",
            "b.py::test_p[z]",
            "b.py::TestL::test_w",
            "c.py::c.doc",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(attempt_order(&sel, 7, 0), sel);
        let names: Vec<&str> = (0..5).map(|a| OrderStrategy::of_attempt(a).name()).collect();
        assert_eq!(names, ["collected", "by-scope", "global", "by-scope", "global"]);
        assert_eq!(scope("b.py::test_p[x::y]"), ("b.py", None));
        assert_eq!(scope("a.py::TestK::test_x"), ("a.py", Some("a.py::TestK")));
        assert_eq!(scope("c.py::c.doc"), ("c.py", None));
        for attempt in [1, 3, 5, 7] {
            let order = attempt_order(&sel, 7, attempt);
            let mut sorted = order.clone();
            sorted.sort();
            let mut want = sel.clone();
            want.sort();
            assert_eq!(sorted, want);
            // Each module's tests, and each class's, are contiguous.
            for unit in ["a.py::", "b.py::", "a.py::TestK::"] {
                let at: Vec<usize> =
                    order.iter().enumerate().filter(|(_, t)| t.starts_with(unit)).map(|(i, _)| i).collect();
                assert_eq!(at.last().unwrap() - at[0] + 1, at.len(), "{unit} in {order:?}");
            }
        }
        let orders: std::collections::BTreeSet<Vec<TestId>> =
            [1, 3, 5, 7].iter().map(|&a| attempt_order(&sel, 7, a)).collect();
        assert!(orders.len() > 1, "seeded by attempt");
    }

    #[test]
    fn an_attempts_order_is_a_seeded_permutation() {
        let sel = ids(50);
        let a = attempt_order(&sel, 7, 4);
        assert_eq!(a, attempt_order(&sel, 7, 4), "same seed and attempt, same order");
        assert_ne!(a, attempt_order(&sel, 7, 6), "another attempt, another order");
        assert_ne!(a, sel);
        let mut sorted = a.clone();
        sorted.sort();
        let mut want = sel.clone();
        want.sort();
        assert_eq!(sorted, want);
        assert!(go_shuffle_seed(7, 3) < 1 << 63);
        assert_ne!(go_shuffle_seed(7, 3), go_shuffle_seed(7, 4));
    }

    #[test]
    fn pytest_argvs() {
        let py = Pytest::new("/venv/bin/python");
        let order = vec!["b.py::test_v".to_owned(), "a.py::test_p".to_owned()];
        let run = py.run(&order, Path::new("/rec/suite"), Some("/src"), Path::new("/rec/scratch/3/results.jsonl"));
        assert_eq!(
            run.argv.join(" "),
            "/venv/bin/python -m pytest -p no:randomly -p no:cacheprovider -p no:rerunfailures -p no:flaky -q -p flakehunt_suite --maxfail=0 --rootdir=. b.py::test_v a.py::test_p"
        );
        assert_eq!(
            run.env,
            [
                ("PYTHONPATH".to_owned(), "/rec/suite:/src".to_owned()),
                ("FLAKEHUNT_SUITE_RESULTS".to_owned(), "/rec/scratch/3/results.jsonl".to_owned())
            ]
        );
        assert_eq!(py.run_options(), run.argv[3..run.argv.len() - 2], "what a warm parent collects with");
        let rep = py.repeat(&order[..1], Path::new("/rec/plugin"), Some("/src"), None);
        assert_eq!(
            rep.reproducer().join(" "),
            "env PYTHONPATH=/rec/plugin:/src /venv/bin/python -m pytest -p no:randomly -p no:cacheprovider -p no:rerunfailures -p no:flaky -q -p flakehunt_repeat --flakehunt-repeat b.py::test_v b.py::test_v",
            "the reproducer a user pastes loads only the repeat plugin"
        );
        assert_eq!(
            py.repeat(&order[..1], Path::new("/p"), None, None).env,
            [("PYTHONPATH".to_owned(), "/p".to_owned())]
        );
        assert_eq!(py.reproducer(&order).last().unwrap(), "a.py::test_p");
        let collect = py.collect_argv(&["tests".into()], Path::new("/tmp/c.json"));
        assert_eq!(
            collect[12..],
            ["-p", "flakehunt_suite", "--flakehunt-collect", "/tmp/c.json", "--collect-only", "tests"]
        );

        // Elsewhere than the hunt's directory: reproducers start in the rootdir, and runs carry
        // the options the collection found necessary.
        let py = Pytest { options: vec!["-n0".into()], root: Some("/src/proj".into()), ..py };
        assert_eq!(py.reproducer(&order)[..4], ["env", "-C", "/src/proj", "/venv/bin/python"]);
        let rep = py.repeat(&order[..1], Path::new("/p"), None, None).reproducer();
        assert_eq!(rep[..5], ["env", "-C", "/src/proj", "PYTHONPATH=/p", "/venv/bin/python"]);
        assert!(py.run(&order, Path::new("/p"), None, Path::new("/r")).argv.contains(&"-n0".to_owned()));
    }

    #[test]
    fn go_argvs() {
        let go = GoTest {
            go: "go".into(),
            package: "example.com/s".into(),
            binary: "/rec/s.test".into(),
            framing: false,
            test2json: None,
        };
        let tests = vec!["TestPolluter".to_owned(), "TestVictim".to_owned()];
        assert_eq!(
            go.run(42, None).argv.join(" "),
            "go tool test2json -t -p example.com/s /rec/s.test -test.paniconexit0 -test.v -test.shuffle=42"
        );
        assert_eq!(
            go.subset(42, &tests).argv.join(" "),
            "go tool test2json -t -p example.com/s /rec/s.test -test.paniconexit0 -test.v -test.shuffle=42 -test.run=^(TestPolluter|TestVictim)$"
        );
        assert_eq!(
            go.repeat(&tests[1]).argv[6..].join(" "),
            "/rec/s.test -test.paniconexit0 -test.v -test.run=^TestVictim$ -test.count=2"
        );
        assert_eq!(
            go.reproducer(Some(42), &tests).join(" "),
            "/rec/s.test -test.paniconexit0 -test.shuffle=42 -test.run=^(TestPolluter|TestVictim)$"
        );
        assert_eq!(
            go.repeat_reproducer(&tests[0]).join(" "),
            "/rec/s.test -test.paniconexit0 -test.run=^TestPolluter$ -test.count=2"
        );
        let framed = GoTest { framing: true, ..go };
        assert!(framed.run(1, None).argv.contains(&"-test.v=test2json".to_owned()));
        assert_eq!(framed.collect_argv(), ["/rec/s.test", "-test.list", "."]);
    }

    #[test]
    fn run_patterns_name_top_level_tests_exactly() {
        assert_eq!(run_pattern(&["TestA".into()]), "^TestA$");
        assert_eq!(run_pattern(&["TestA/sub".into(), "TestA/other".into(), "TestB".into()]), "^(TestA|TestB)$");
        let re = regex::Regex::new(&run_pattern(&["TestA".into(), "TestB".into()])).unwrap();
        assert!(re.is_match("TestB") && !re.is_match("TestAB") && !re.is_match("TestA2"));
    }

    #[test]
    fn libtest_runs_one_thread_and_exact_names() {
        let inv = libtest_run(Path::new("/t/bin"), Some(&["tests::a".into()]), false);
        assert_eq!(inv.argv, ["/t/bin", "--test-threads=1", "--exact", "tests::a"]);
        assert_eq!(libtest_run(Path::new("/t/bin"), None, false).argv, ["/t/bin", "--test-threads=1"]);
        let checked = libtest_run(Path::new("/t/bin"), Some(&["tests::a".into()]), true);
        assert_eq!(checked.argv, ["/t/bin", "--test-threads=1", "--show-output", "--exact", "tests::a"]);
    }
}
