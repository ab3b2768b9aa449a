//! The suite parts against real runners: the fixture suites under `fixtures/suite/` run with
//! the real pytest and the real Go toolchain, through the argvs and parsers of this module.
//! A missing runner skips with its reason printed, except in CI (`CI=true`), where it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::bisect::{BisectStatus, Bisector};
use super::order::{attempt_order, GoTest, Invocation, Pytest};
use super::{collect, gotest, pytestlog, repeat, TestId, TestOutcome, TestResult};

use crate::kind::suite::order::{GoTestInvocations, PytestInvocations};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/suite").join(name)
}

/// Skips (returns false, with the reason printed) when a tool is missing; fails in CI.
fn available(tool: &str, works: bool, install: &str) -> bool {
    if !works {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{tool} is missing in CI: {install}");
        eprintln!("skipped: {tool} is not available ({install})");
    }
    works
}

fn pytest() -> Option<Pytest> {
    let ok = Command::new("python3").args(["-m", "pytest", "--version"]).output().is_ok_and(|o| o.status.success());
    available("python3 with pytest", ok, "python3 -m pip install pytest").then(|| Pytest::new("python3"))
}

/// Runs an invocation in `dir` with `FLAKEHUNT_ITERATION` set; the exit code and stdout.
fn run(inv: &Invocation, dir: &Path, iteration: u64) -> (i32, String) {
    let out = Command::new(&inv.argv[0])
        .args(&inv.argv[1..])
        .envs(inv.env.iter().map(|(k, v)| (k, v)))
        .env("FLAKEHUNT_ITERATION", iteration.to_string())
        // Keeps the fixture directory free of __pycache__.
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(dir)
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A directory holding flakehunt's pytest plugins, as a hunt's record does.
fn plugins() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    pytestlog::write_plugin(dir.path()).unwrap();
    repeat::write_plugin(dir.path()).unwrap();
    dir
}

fn pytest_collect(py: &Pytest) -> Vec<TestId> {
    let dir = plugins();
    let file = dir.path().join("collected.json");
    let env = vec![("PYTHONPATH".to_owned(), dir.path().display().to_string())];
    let inv = Invocation { argv: py.collect_argv(&[], &file), env, dir: None };
    let (code, out) = run(&inv, &fixture("pytest"), 1);
    assert_eq!(code, 0, "{out}");
    let collected = pytestlog::Collected::parse(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(collected.errors.is_empty(), "{:?}", collected.errors);
    collected.items.unwrap()
}

/// Runs `inv` (whose results file is `results`) and reads its events back.
fn pytest_events(inv: &Invocation, results: &Path, iteration: u64) -> (i32, Vec<TestResult>) {
    let (code, out) = run(inv, &fixture("pytest"), iteration);
    let text = std::fs::read_to_string(results).unwrap_or_else(|e| panic!("no results file ({e}): {out}"));
    (code, pytestlog::pytest_results(&text).results)
}

/// Runs `order` with pytest and reads the plugin's events back.
fn pytest_run(py: &Pytest, order: &[TestId], iteration: u64) -> Vec<TestResult> {
    let dir = plugins();
    let results = dir.path().join("results.jsonl");
    pytest_events(&py.run(order, dir.path(), None, &results), &results, iteration).1
}

fn outcome_of(results: &[TestResult], id: &str) -> TestOutcome {
    results.iter().find(|r| r.id == id).unwrap_or_else(|| panic!("{id} did not run: {results:?}")).outcome
}

const POLLUTER: &str = "tests/test_alpha.py::test_polluter";
const SETTER: &str = "tests/test_alpha.py::test_state_setter";
const VICTIM: &str = "tests/test_beta.py::test_victim";
const BRITTLE: &str = "tests/test_beta.py::test_brittle";
const NON_IDEMPOTENT: &str = "tests/test_gamma.py::test_non_idempotent";
const EVERY_THIRD: &str = "tests/test_gamma.py::test_every_third";

#[test]
fn pytest_collects_the_fixture_suite() {
    let Some(py) = pytest() else { return };
    let ids = pytest_collect(&py);
    assert_eq!(ids.len(), 13, "{ids:?}");
    for id in
        [POLLUTER, SETTER, VICTIM, BRITTLE, NON_IDEMPOTENT, EVERY_THIRD, "tests/test_gamma.py::test_clean_param[2]"]
    {
        assert!(ids.iter().any(|i| i == id), "{id} not collected: {ids:?}");
    }
}

#[test]
fn pytest_runs_node_ids_in_the_order_given() {
    let Some(py) = pytest() else { return };
    let collected = pytest_collect(&py);
    for attempt in 1..=3 {
        let order = attempt_order(&collected, 11, attempt);
        let results = pytest_run(&py, &order, 1);
        let ran: Vec<&str> = results.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ran, order.iter().map(String::as_str).collect::<Vec<_>>(), "attempt {attempt}");
        // The victim fails exactly when the polluter ran before it; the brittle test passes
        // exactly when the state-setter did.
        let before = |a: &str, b: &str| order.iter().position(|t| t == a) < order.iter().position(|t| t == b);
        assert_eq!(outcome_of(&results, VICTIM).is_failure(), before(POLLUTER, VICTIM), "attempt {attempt}: {order:?}");
        assert_eq!(
            outcome_of(&results, BRITTLE).is_failure(),
            !before(SETTER, BRITTLE),
            "attempt {attempt}: {order:?}"
        );
        assert_eq!(outcome_of(&results, "tests/test_gamma.py::test_skipped"), TestOutcome::Skip);
    }
}

#[test]
fn pytest_fixture_behaves_as_its_categories_say() {
    let Some(py) = pytest() else { return };
    let one = |tests: &[&str], iteration| {
        let order: Vec<TestId> = tests.iter().map(|t| t.to_string()).collect();
        pytest_run(&py, &order, iteration)
    };
    assert_eq!(outcome_of(&one(&[VICTIM], 1), VICTIM), TestOutcome::Pass, "the victim passes alone");
    assert_eq!(outcome_of(&one(&[POLLUTER, VICTIM], 1), VICTIM), TestOutcome::Fail);
    assert_eq!(
        outcome_of(&one(&[VICTIM, POLLUTER], 1), VICTIM),
        TestOutcome::Pass,
        "the polluter after it is harmless"
    );
    assert_eq!(outcome_of(&one(&[BRITTLE], 1), BRITTLE), TestOutcome::Fail, "the brittle test fails alone");
    assert_eq!(outcome_of(&one(&[SETTER, BRITTLE], 1), BRITTLE), TestOutcome::Pass);
    assert_eq!(outcome_of(&one(&[NON_IDEMPOTENT], 1), NON_IDEMPOTENT), TestOutcome::Pass);
    for (iteration, fails) in [(1, false), (2, false), (3, true), (6, true), (7, false)] {
        assert_eq!(
            outcome_of(&one(&[EVERY_THIRD], iteration), EVERY_THIRD).is_failure(),
            fails,
            "iteration {iteration}"
        );
    }
    let messages = one(&[POLLUTER, VICTIM], 1);
    let message = messages.iter().find(|r| r.id == VICTIM).unwrap().message.as_deref().unwrap();
    assert!(message.starts_with("AssertionError: handlers left registered: ['audit']"), "{message}");
}

#[test]
fn pytest_runs_a_node_id_given_twice_once_even_with_keep_duplicates() {
    let Some(py) = pytest() else { return };
    let dir = plugins();
    let results = dir.path().join("results.jsonl");
    let mut inv = py.run(&[NON_IDEMPOTENT.to_owned(), NON_IDEMPOTENT.to_owned()], dir.path(), None, &results);
    inv.argv.insert(3, "--keep-duplicates".into());
    let (code, results) = pytest_events(&inv, &results, 1);
    assert_eq!(code, 0);
    assert_eq!(results.len(), 1, "pytest ran it {} times", results.len());
}

#[test]
fn the_repeat_plugin_runs_a_test_twice_in_one_session() {
    let Some(py) = pytest() else { return };
    let collected = pytest_collect(&py);
    let dir = plugins();
    let results_file = dir.path().join("results.jsonl");
    let param = "tests/test_gamma.py::test_clean_param[1]".to_owned();
    let method = "tests/test_beta.py::TestBetaClass::test_clean_method".to_owned();
    let tests = [NON_IDEMPOTENT.to_owned(), param.clone(), method.clone()];
    let (code, results) = pytest_events(&py.repeat(&tests, dir.path(), None, Some(&results_file)), &results_file, 1);
    assert_eq!(code, 1);
    let got: Vec<(&str, TestOutcome)> = results.iter().map(|r| (r.id.as_str(), r.outcome)).collect();
    assert_eq!(
        got,
        [
            (NON_IDEMPOTENT, TestOutcome::Pass),
            (NON_IDEMPOTENT, TestOutcome::Fail),
            (param.as_str(), TestOutcome::Pass),
            (param.as_str(), TestOutcome::Pass),
            (method.as_str(), TestOutcome::Pass),
            (method.as_str(), TestOutcome::Pass),
        ],
        "a parametrized test and a method get their fixtures again on the second run"
    );
    assert!(results[1].message.as_deref().unwrap().contains("ran 2 times in this process"));

    // The whole suite twice each: only the non-idempotent test fails on its second run
    // after passing its first (the victim fails both times, after the polluter).
    std::fs::remove_file(&results_file).unwrap();
    let inv = py.repeat_all(&collected, dir.path(), None, &results_file);
    let (_, results) = pytest_events(&inv, &results_file, 1);
    assert_eq!(results.len(), 2 * collected.len());
    let second_run_failed: Vec<&str> = results
        .chunks(2)
        .filter(|pair| pair[0].outcome == TestOutcome::Pass && pair[1].outcome.is_failure())
        .map(|pair| pair[0].id.as_str())
        .collect();
    assert_eq!(second_run_failed, [NON_IDEMPOTENT]);

    // A node id that was not collected is a usage error (exit 4), not silently not repeated.
    let missing = ["tests/test_gamma.py::test_nope".to_owned()];
    let mut inv = py.repeat(&missing, dir.path(), None, None);
    inv.argv.pop();
    inv.argv.push(NON_IDEMPOTENT.into());
    let (code, _) = run(&inv, &fixture("pytest"), 1);
    assert_eq!(code, 4);
}

/// A doctest run twice: the runner empties the doctest's namespace when it ends, so the second
/// run must start from the module's names again, or every doctest would read as non-idempotent
/// (`NameError`); one that changes its module's state still fails its second run.
#[test]
fn the_repeat_plugin_runs_a_doctest_twice_with_its_modules_names() {
    let Some(py) = pytest() else { return };
    let project = tempfile::tempdir().unwrap();
    let module = "SEEN = []\n\n\ndef double(x):\n    \"\"\"\n    >>> double(2)\n    4\n    \"\"\"\n    return 2 * x\n\n\n\
                  def remember(x):\n    \"\"\"\n    >>> remember(1)\n    >>> SEEN\n    [1]\n    \"\"\"\n    SEEN.append(x)\n";
    std::fs::write(project.path().join("mod_doc.py"), module).unwrap();
    let dir = plugins();
    let results_file = dir.path().join("results.jsonl");
    let tests = ["mod_doc.py::mod_doc.double".to_owned(), "mod_doc.py::mod_doc.remember".to_owned()];
    let mut inv = py.repeat(&tests, dir.path(), None, Some(&results_file));
    inv.argv.insert(3, "--doctest-modules".into());
    let (code, out) = run(&inv, project.path(), 1);
    let text = std::fs::read_to_string(&results_file).unwrap_or_else(|e| panic!("no results file ({e}): {out}"));
    let results = pytestlog::pytest_results(&text).results;
    assert_eq!(code, 1, "{out}");
    let got: Vec<(&str, TestOutcome)> = results.iter().map(|r| (r.id.as_str(), r.outcome)).collect();
    assert_eq!(
        got,
        [
            (tests[0].as_str(), TestOutcome::Pass),
            (tests[0].as_str(), TestOutcome::Pass),
            (tests[1].as_str(), TestOutcome::Pass),
            (tests[1].as_str(), TestOutcome::Fail),
        ],
        "{out}"
    );
}

/// The events of a process that dies in a test (a segfault) end with that test, an error; the
/// tests after it reported nothing.
#[test]
fn a_pytest_process_that_dies_leaves_the_results_before_its_death() {
    let Some(py) = pytest() else { return };
    let project = tempfile::tempdir().unwrap();
    std::fs::write(
        project.path().join("test_die.py"),
        "import ctypes\n\ndef test_before():\n    pass\n\ndef test_dies():\n    ctypes.string_at(0)\n\ndef test_after():\n    pass\n",
    )
    .unwrap();
    let dir = plugins();
    let results = dir.path().join("results.jsonl");
    let order = ["test_die.py::test_before", "test_die.py::test_dies", "test_die.py::test_after"].map(String::from);
    let inv = py.run(&order, dir.path(), None, &results);
    let out = Command::new(&inv.argv[0])
        .args(&inv.argv[1..])
        .envs(inv.env.iter().map(|(k, v)| (k, v)))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(project.path())
        .output()
        .unwrap();
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&out.status), Some(libc::SIGSEGV));
    let run = pytestlog::pytest_results(&std::fs::read_to_string(&results).unwrap());
    let got: Vec<(&str, TestOutcome)> = run.results.iter().map(|r| (r.id.as_str(), r.outcome)).collect();
    assert_eq!(got, [(order[0].as_str(), TestOutcome::Pass), (order[1].as_str(), TestOutcome::Error)]);
    assert_eq!(run.running.as_deref(), Some(order[1].as_str()));
}

#[test]
fn bisection_finds_the_pytest_polluter_and_state_setter() {
    let Some(py) = pytest() else { return };
    let collected = pytest_collect(&py);
    // An order in which the victim failed: everything else, polluter included, before it.
    let prefix_of = |last: &str| -> Vec<TestId> { collected.iter().filter(|t| *t != last).cloned().collect() };
    let fails_after = |test: &'static str| {
        let py = py.clone();
        move |before: &[TestId]| {
            let mut order = before.to_vec();
            order.push(test.to_owned());
            outcome_of(&pytest_run(&py, &order, 1), test).is_failure()
        }
    };
    let victim = Bisector::default().polluters(&prefix_of(VICTIM), fails_after(VICTIM));
    assert_eq!((victim.status, victim.culprits.clone()), (BisectStatus::Confirmed, vec![POLLUTER.to_owned()]));
    let brittle = Bisector::default().state_setters(&prefix_of(BRITTLE), fails_after(BRITTLE));
    assert_eq!((brittle.status, brittle.culprits.clone()), (BisectStatus::Confirmed, vec![SETTER.to_owned()]));
    eprintln!(
        "pytest fixture, prefix of {}: polluter in {} runs, state-setter in {} runs",
        collected.len() - 1,
        victim.runs,
        brittle.runs
    );
    // 1 + ceil(log2 12) + 1 + 2.
    assert!(victim.runs <= 8 && brittle.runs <= 8, "{} {}", victim.runs, brittle.runs);
    // The reproducer fails when run.
    let mut reproducer = victim.culprits.clone();
    reproducer.push(VICTIM.into());
    let argv = py.reproducer(&reproducer);
    let (code, out) = run(&Invocation { argv, ..Invocation::default() }, &fixture("pytest"), 1);
    assert_eq!(code, 1, "{out}");
}

/// The fixture Go suite's test binary, built once per test into `dir` with a private cache
/// and no network.
fn go_binary(dir: &Path) -> Option<GoTest> {
    let ok = Command::new("go").arg("version").output().is_ok_and(|o| o.status.success());
    if !available("go", ok, "apt-get install golang-go") {
        return None;
    }
    let binary = dir.join("suite.test");
    let out = Command::new("go")
        .args(["test", "-c", "-o"])
        .arg(&binary)
        .arg(".")
        .current_dir(fixture("go"))
        .env("GOCACHE", dir.join("cache"))
        .env("GOPATH", dir.join("gopath"))
        .env("GOFLAGS", "-mod=mod")
        .env("GOPROXY", "off")
        .env("GOTOOLCHAIN", "local")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // -test.v=test2json is Go 1.20's; older binaries reject it.
    let framing = Command::new(&binary).args(["-test.v=test2json", "-test.run=^$"]).output().unwrap().status.success();
    Some(GoTest { go: "go".into(), package: "example.com/flakehunt/suite".into(), binary, framing, test2json: None })
}

/// The fixture Go suite's top-level tests.
const GO_TESTS: [&str; 10] = [
    "TestPolluter",
    "TestVictim",
    "TestStateSetter",
    "TestBrittle",
    "TestNonIdempotent",
    "TestEveryThird",
    "TestCleanAlphaOne",
    "TestCleanAlphaTwo",
    "TestCleanSubtests",
    "TestSkipped",
];

fn go_run(go: &GoTest, inv: &Invocation, dir: &Path, iteration: u64) -> gotest::GoRun {
    let out = Command::new(&inv.argv[0])
        .args(&inv.argv[1..])
        .env("FLAKEHUNT_ITERATION", iteration.to_string())
        .env("GOCACHE", dir.join("cache"))
        .current_dir(fixture("go"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let count = if inv.argv.iter().any(|a| a == "-test.count=2") { 2 } else { 1 };
    let run = gotest::go_results(&stdout, &GO_TESTS.map(String::from), count).unwrap();
    assert!(!run.results.is_empty(), "{} {stdout}", go.binary.display());
    run
}

#[test]
fn go_fixture_orders_repeats_and_bisection() {
    let dir = tempfile::tempdir().unwrap();
    let Some(go) = go_binary(dir.path()) else { return };
    let list = Command::new(&go.binary).args(&go.collect_argv()[1..]).output().unwrap();
    let names = collect::go_test_names(&String::from_utf8_lossy(&list.stdout));
    assert_eq!(names.len(), 10, "{names:?}");
    let outcome = |run: &gotest::GoRun, id: &str| outcome_of(&run.results, id);
    let t = |s: &str| s.to_owned();

    // Alone and after: victim and polluter, brittle and state-setter, every third iteration.
    let alone = |name: &str, iteration| go_run(&go, &go.run(0, Some(&[t(name)])), dir.path(), iteration);
    assert_eq!(outcome(&alone("TestVictim", 1), "TestVictim"), TestOutcome::Pass);
    assert_eq!(outcome(&alone("TestBrittle", 1), "TestBrittle"), TestOutcome::Fail);
    assert_eq!(outcome(&alone("TestEveryThird", 3), "TestEveryThird"), TestOutcome::Fail);
    assert_eq!(outcome(&alone("TestEveryThird", 4), "TestEveryThird"), TestOutcome::Pass);
    let repeated = go_run(&go, &go.repeat(&t("TestNonIdempotent")), dir.path(), 1);
    let got: Vec<TestOutcome> = repeated.results.iter().map(|r| r.outcome).collect();
    assert_eq!(got, [TestOutcome::Pass, TestOutcome::Fail], "-test.count=2 runs it twice in one process");

    // Shuffled attempts: the order is read back, the victim fails iff the polluter preceded
    // it, and a subset run with the same seed keeps the subset's relative order.
    let mut failing_seed = None;
    for seed in 1..=8u64 {
        let run = go_run(&go, &go.run(seed, None), dir.path(), 1);
        assert_eq!(run.order.len(), names.len(), "seed {seed}");
        let pos = |n: &str| run.order.iter().position(|t| t == n).unwrap();
        assert_eq!(outcome(&run, "TestVictim").is_failure(), pos("TestPolluter") < pos("TestVictim"), "seed {seed}");
        assert_eq!(
            outcome(&run, "TestBrittle").is_failure(),
            pos("TestStateSetter") > pos("TestBrittle"),
            "seed {seed}"
        );
        let subset: Vec<TestId> = run.order.iter().step_by(2).cloned().collect();
        let sub = go_run(&go, &go.subset(seed, &subset), dir.path(), 1);
        assert_eq!(sub.order, subset, "seed {seed}");
        if pos("TestPolluter") < pos("TestVictim") && failing_seed.is_none() {
            failing_seed = Some((seed, run.order[..pos("TestVictim")].to_vec()));
        }
    }
    let (seed, prefix) = failing_seed.expect("no seed of 1..=8 put the polluter first");
    let victim = Bisector::default().polluters(&prefix, |before| {
        let mut tests = before.to_vec();
        tests.push(t("TestVictim"));
        outcome(&go_run(&go, &go.subset(seed, &tests), dir.path(), 1), "TestVictim").is_failure()
    });
    assert_eq!((victim.status, victim.culprits.clone()), (BisectStatus::Confirmed, vec![t("TestPolluter")]));
    eprintln!("go fixture, seed {seed}, prefix of {}: polluter in {} runs", prefix.len(), victim.runs);
    let mut tests = victim.culprits.clone();
    tests.push(t("TestVictim"));
    let status = Command::new(&go.binary).args(&go.reproducer(Some(seed), &tests)[1..]).output().unwrap().status;
    assert_eq!(status.code(), Some(1), "the reproducer fails");
}
