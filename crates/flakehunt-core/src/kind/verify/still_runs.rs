//! Whether the tests the verified record saw fail still run, when its target ran many tests at
//! once (`--go-test PKG`, all of its tests or one with its subtests, `--pytest` of a module, a
//! class or a parametrised test, a `go test` or `pytest` command, the record's or the one
//! verify is given): each attempt then reports on the whole run, and a failing test
//! quarantined after the hunt (`t.Skip`, a skip mark), renamed, deselected or left out of the
//! command would let every attempt pass without it, and a fix be proved that never ran. One
//! run of the target with each test's result shown (`-test.v`, `go test -v`, pytest's `-rA`)
//! tells, before any attempt. Main function: [`check`].

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::Duration;

use super::options::VerifyOptions;
use crate::plan::{CellSpec, Setting, Target};
use crate::record::{Adapter, Record};
use crate::snapshot::commands::{self, Probe, Ran};
use crate::spec::HuntError;

/// The most failing tests named in a refusal; the rest are counted.
const NAMED: usize = 5;

/// What one test did in the run that shows every test's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shown {
    /// It ran: it passed or failed.
    Ran,
    /// It was skipped (or, under pytest, xfail-marked: its failures read as `xfailed`).
    Skipped,
}

/// Refuses the verification, before any attempt (exit 3), when a test that failed in `record`
/// does not run in one run of `target`, the adapter's run of many tests with the code as it is
/// now, under the environment of the cell it failed in (`cells`: a profile's or an overlay's
/// variables and placeholders; a test may skip itself unless a variable is set): skipped, or
/// absent from the run's report (renamed, deleted, deselected, or its module no longer
/// imports). Nothing is judged of a run that did not reach its report's end (it crashed or
/// hung: the attempts will say), nor of an adapter's one test, whose every attempt is judged
/// already (see [`super::summary::unreported_by_cell`]).
pub fn check(
    record: &Record,
    options: &VerifyOptions,
    cells: &[CellSpec],
    target: &Target,
    command_given: bool,
    timeout: Duration,
) -> Result<(), HuntError> {
    // The adapter's runner, unless a command replaces it; a command's, when it is a test
    // runner's. An adapter's one test is judged by every attempt's report already, but not its
    // subtests or parameters (one removed or skipped, the test passes).
    let adapter = record.manifest.extra.adapter.as_ref().filter(|_| !command_given);
    let (runner, judged) = match adapter {
        Some(Adapter::GoTest { test, .. }) => (Runner::GoBinary, test.as_deref()),
        Some(Adapter::Pytest { node }) => (Runner::Pytest, Some(node.as_str())),
        Some(Adapter::CargoTest { .. }) => return Ok(()),
        None => match runner_of(target) {
            Some(runner) => (runner, None),
            None => return Ok(()),
        },
    };
    // The tests that failed, by the surroundings of the cells they failed in.
    // Each with the number of attempts it failed in: a name seen failing twice is no name made
    // at run time (see [`runs`]).
    let mut failed: BTreeMap<Surroundings, BTreeMap<String, u64>> = BTreeMap::new();
    let of_cell: BTreeMap<&str, Surroundings> = options
        .conditions
        .iter()
        .map(|c| (c.cell.as_str(), cells.iter().find(|s| s.name == c.cell).map(surroundings).unwrap_or_default()))
        .collect();
    for attempt in record.attempts()? {
        let attempt = attempt?;
        let Some(around) = of_cell.get(attempt.cell.as_str()).filter(|_| attempt.outcome.is_failure()) else {
            continue;
        };
        // A node id that is the failing test itself is judged by every attempt's report.
        let tests = failed.entry(around.clone()).or_default();
        let named: BTreeSet<String> = failures(runner, &attempt.stdout_tail).into_iter().collect();
        for test in named.into_iter().filter(|t| Some(t.as_str()) != judged) {
            *tests.entry(test).or_default() += 1;
        }
    }
    let timeout = timeout.clamp(Duration::from_secs(60), Duration::from_secs(86_400));
    // Each test that did not run, and whether it was skipped (else it was absent).
    let mut missing: BTreeMap<String, bool> = BTreeMap::new();
    for (around, tests) in failed.iter().filter(|(_, tests)| !tests.is_empty()) {
        let Some(shown) = shown_run(runner, target, around, timeout) else { continue };
        for (test, seen) in tests {
            match runs(runner, test, *seen, &shown) {
                Some(Shown::Ran) => {}
                Some(Shown::Skipped) => *missing.entry(test.clone()).or_default() = true,
                None => {
                    missing.entry(test.clone()).or_default();
                }
            }
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let said: Vec<String> = missing
        .iter()
        .map(|(test, skipped)| match (skipped, runner) {
            (true, _) => format!("{test} (skipped)"),
            // pytest's report names no skipped test (`SKIPPED [1] t.py:4: reason`).
            (false, Runner::Pytest) => format!("{test} (not in its report: skipped, deselected or gone)"),
            (false, _) => format!("{test} (not in its report)"),
        })
        .collect();
    let mut named = said.iter().take(NAMED).cloned().collect::<Vec<_>>().join(", ");
    if said.len() > NAMED {
        named.push_str(&format!(" and {} more", said.len() - NAMED));
    }
    let (tests, run, them) = match said.len() {
        1 => ("the test".to_owned(), "runs", "it"),
        n => (format!("{n} of the tests"), "run", "them"),
    };
    Err(HuntError::Refused(format!(
        "{}: {tests} it saw fail no longer {run}{}: {named}; every attempt would pass without {them}, and a test that does not run proves no fix: {}make {them} run again (undo the skip, the rename or the deselection), then verify; nothing was verified",
        options.record.display(),
        match runner {
            Runner::GoBinary => " in the package's tests (-test.v)",
            Runner::GoCommand => " in the packages' tests (go test -v)",
            Runner::Pytest => " in pytest's run (-rA)",
        },
        if command_given { format!("give a command that runs {them}, or ") } else { String::new() },
    )))
}

/// What a cell sets around its attempts that decides which tests run: variables set or
/// removed, and the argv's placeholders.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
struct Surroundings {
    env: BTreeMap<String, Option<String>>,
    placeholders: Vec<(String, String)>,
}

fn surroundings(cell: &CellSpec) -> Surroundings {
    let mut around = Surroundings::default();
    if let Some(profile) = &cell.profile {
        around.env.extend(profile.knobs.env.iter().map(|(k, v)| (k.clone(), Some(v.clone()))));
    }
    for setting in &cell.overlay {
        match setting {
            Setting::Env { name, value } => {
                around.env.insert(name.clone(), value.clone());
            }
            Setting::Placeholder { name, value } => around.placeholders.push((name.clone(), value.clone())),
            Setting::Rlimit { .. } => {}
        }
    }
    around
}

/// Every test's result in one run of `target` under `around`, with them shown; none when it
/// did not reach its report's end.
fn shown_run(
    runner: Runner,
    target: &Target,
    around: &Surroundings,
    timeout: Duration,
) -> Option<BTreeMap<String, Shown>> {
    let (program, args) = target.program_and_args(&around.placeholders);
    let mut command = Command::new(program);
    // A named Go test's verification already runs it verbose.
    let flags = shown_flags(runner).iter().filter(|f| !target.argv.iter().any(|a| a == *f));
    command.args(args).args(flags);
    if let Some(dir) = target.working_dir(None) {
        command.current_dir(dir);
    }
    for (name, value) in &around.env {
        match value {
            Some(v) => command.env(name, v),
            None => command.env_remove(name),
        };
    }
    let ran = commands::run_all(vec![Probe { command, cap: 16 << 20, timeout }], None, None).pop()?;
    let Ran::Exited { stdout, .. } = ran else { return None };
    results(runner, &String::from_utf8_lossy(&stdout))
}

/// The test runners whose run of many tests is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Runner {
    /// A Go test binary (`--go-test PKG`).
    GoBinary,
    /// `go test [PKG...]`.
    GoCommand,
    /// pytest, as an adapter or a command (`pytest ...`, `python -m pytest ...`).
    Pytest,
}

impl Runner {
    fn go(self) -> bool {
        matches!(self, Runner::GoBinary | Runner::GoCommand)
    }
}

/// The test runner a command is, when it is one whose options can be added at its end: `go
/// test` (not with `-args`, after which they would go to the test binary, nor `-json`), pytest
/// run as a program or a module. A shell script is none.
fn runner_of(target: &Target) -> Option<Runner> {
    if target.shell {
        return None;
    }
    let program = std::path::Path::new(target.argv.first()?).file_name()?.to_str()?;
    let args = &target.argv[1..];
    if program == "go" && args.first().is_some_and(|a| a == "test") {
        let plain =
            !args.iter().any(|a| a == "-args" || a == "--args" || a.starts_with("-json") || a.starts_with("--json"));
        return plain.then_some(Runner::GoCommand);
    }
    let module = program.starts_with("python") && args.windows(2).any(|w| w[0] == "-m" && w[1] == "pytest");
    (matches!(program, "pytest" | "py.test") || module).then_some(Runner::Pytest)
}

/// The options that make the runner report every test's result.
fn shown_flags(runner: Runner) -> &'static [&'static str] {
    match runner {
        Runner::GoBinary => &["-test.v"],
        Runner::GoCommand => &["-v"],
        Runner::Pytest => &["-rA"],
    }
}

/// The tests a run's report says failed: Go's `--- FAIL: NAME (`, pytest's short summary
/// `FAILED NODE`, `ERROR NODE` or, for a failing subtest (pytest 9), `SUBFAILED(PARAMS) NODE`
/// (` - MESSAGE` after it; a node id may hold spaces in its parameters).
fn failures(runner: Runner, output: &str) -> Vec<String> {
    output
        .lines()
        .map(str::trim)
        .filter_map(|l| match runner {
            Runner::GoBinary | Runner::GoCommand => l
                .strip_prefix("--- FAIL: ")
                .and_then(|r| r.split_once(" ("))
                .map(|(n, _)| n)
                .filter(|n| !n.contains(char::is_whitespace)),
            // A module's own error (`ERROR tests/test_x.py - ImportError`) is no test.
            Runner::Pytest => pytest_node(l, &["FAILED", "ERROR", "SUBFAILED"]).filter(|n| n.contains("::")),
        })
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The node id of a line of pytest's short summary that starts with one of `words`: `WORD NODE`,
/// `WORD NODE - MESSAGE`, or a subtest's `WORD(PARAMS) NODE ...`.
fn pytest_node<'a>(line: &'a str, words: &[&str]) -> Option<&'a str> {
    let word = words.iter().find(|w| line.starts_with(*w))?;
    let rest = &line[word.len()..];
    let rest = match rest.strip_prefix('(') {
        Some(params) => params.split_once(") ")?.1,
        None => rest.strip_prefix(' ')?,
    };
    Some(rest.split_once(" - ").map_or(rest, |(node, _)| node).trim())
}

/// Every test's result in a run with them shown, or none when the run did not reach the end of
/// its report, or broke before its tests could run: Go's last line `PASS` or `FAIL` (a test
/// binary's) or a package's `ok`/`FAIL`/`?` line (`go test`'s), with no panic, fatal error or
/// build failure before it; pytest's summary line (`3 passed, 1 skipped in 0.12s`), with no
/// interruption (a module that no longer imports, which the attempts will show as failures).
/// A name reported more than once (a test of the same name in two packages) ran if it ran once.
fn results(runner: Runner, output: &str) -> Option<BTreeMap<String, Shown>> {
    let lines = output.lines().map(str::trim).filter(|l| !l.is_empty());
    let last = lines.clone().next_back()?;
    let mut shown = BTreeMap::new();
    let mut add = |name: &str, status: Shown| {
        let entry = shown.entry(name.to_owned()).or_insert(status);
        if status == Shown::Ran {
            *entry = Shown::Ran;
        }
    };
    if runner.go() {
        let ended = matches!(last, "PASS" | "FAIL")
            || ["ok ", "ok\t", "FAIL\t", "FAIL ", "? ", "?\t"].iter().any(|p| last.starts_with(p));
        let broke = |l: &str| {
            l.starts_with("panic: ")
                || l.starts_with("fatal error: ")
                || l.ends_with("[build failed]")
                || l.ends_with("[setup failed]")
        };
        if !ended || lines.clone().any(broke) {
            return None;
        }
        for l in lines {
            let (status, rest) = if let Some(r) = l.strip_prefix("--- PASS: ").or(l.strip_prefix("--- FAIL: ")) {
                (Shown::Ran, r)
            } else if let Some(r) = l.strip_prefix("--- SKIP: ") {
                (Shown::Skipped, r)
            } else {
                continue;
            };
            if let Some((name, _)) = rest.split_once(" (") {
                add(name, status);
            }
        }
    } else {
        let summary = last.trim_matches('=').trim();
        let (_, time) = summary.rsplit_once(" in ")?;
        if !(time.ends_with('s') && time.starts_with(|c: char| c.is_ascii_digit())) {
            return None;
        }
        if lines.clone().any(|l| l.contains("Interrupted: ")) {
            return None;
        }
        for l in lines {
            if let Some(node) = pytest_node(l, &["PASSED", "FAILED", "ERROR"]) {
                add(node, Shown::Ran);
            } else if let Some(node) = pytest_node(l, &["XFAIL", "XPASS"]) {
                // An XPASS line's reason follows the node id without a dash.
                add(node.split_whitespace().next().unwrap_or(node), Shown::Skipped);
            }
        }
    }
    Some(shown)
}

/// What `test`, seen failing in `seen` attempts of the record, did in `shown`. A Go subtest or a
/// pytest parameter seen failing once, absent from the report while its test ran, is taken to
/// have run under a name made at run time (a subtest named after a time or a random value); one
/// seen failing under the same name twice has a name that stays, and its absence is its
/// removal. A skip of it by name is a skip.
fn runs(runner: Runner, test: &str, seen: u64, shown: &BTreeMap<String, Shown>) -> Option<Shown> {
    if let Some(status) = shown.get(test) {
        return Some(*status);
    }
    if seen > 1 {
        return None;
    }
    let separator = if runner.go() { '/' } else { '[' };
    let (parent, _) = test.split_once(separator)?;
    let of_parent = |name: &str| name == parent || name.starts_with(&format!("{parent}{separator}"));
    shown.iter().any(|(name, s)| of_parent(name) && *s == Shown::Ran).then_some(Shown::Ran)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failing_tests_are_read_from_each_runner_s_report() {
        let go = "--- FAIL: TestA (0.00s)\n    --- FAIL: TestA/one (0.00s)\n        a_test.go:9: bad\nFAIL\n";
        assert_eq!(failures(Runner::GoBinary, go), ["TestA", "TestA/one"]);
        let py = "F.\nFAILED t.py::test_a - assert 1 == 2\nERROR t.py::test_b\n1 failed, 1 error in 0.1s\n";
        assert_eq!(failures(Runner::Pytest, py), ["t.py::test_a", "t.py::test_b"]);
        // A parameter with a space, and a unittest subtest's failure as pytest 9 reports it.
        let spaced = "FAILED t.py::test_p[a b] - assert 0\nSUBFAILED(i=1, s='x y') t.py::T::test_s - AssertionError\n";
        assert_eq!(failures(Runner::Pytest, spaced), ["t.py::test_p[a b]", "t.py::T::test_s"]);
        assert!(failures(Runner::Pytest, "FAILEDX\nSUBFAILED(unclosed\nERROR t.py - ImportError\n").is_empty());
    }

    #[test]
    fn a_skipped_renamed_or_deselected_test_does_not_run() {
        let go = "=== RUN   TestA\n    a_test.go:3: quarantined\n--- SKIP: TestA (0.00s)\n=== RUN   TestB\n--- PASS: TestB (0.00s)\nPASS\n";
        let shown = results(Runner::GoBinary, go).unwrap();
        assert_eq!(runs(Runner::GoBinary, "TestA", 1, &shown), Some(Shown::Skipped));
        assert_eq!(runs(Runner::GoBinary, "TestB", 1, &shown), Some(Shown::Ran));
        assert_eq!(runs(Runner::GoBinary, "TestGone", 1, &shown), None);
        // A subtest of a test that ran, under a name made at run time, ran; one skipped did not.
        let sub = "=== RUN   TestC\n--- PASS: TestC (0.00s)\n    --- PASS: TestC/seed_2 (0.00s)\n    --- SKIP: TestC/slow (0.00s)\nPASS\n";
        let shown = results(Runner::GoBinary, sub).unwrap();
        assert_eq!(runs(Runner::GoBinary, "TestC/seed_1", 1, &shown), Some(Shown::Ran));
        // One seen failing under its name twice was removed.
        assert_eq!(runs(Runner::GoBinary, "TestC/seed_1", 2, &shown), None);
        assert_eq!(runs(Runner::GoBinary, "TestC/slow", 1, &shown), Some(Shown::Skipped));

        let py = ".s\n=== short test summary info ===\nPASSED t.py::test_b\nSKIPPED [1] t.py:4: quarantined\nXFAIL t.py::test_c - known\n1 passed, 1 skipped, 1 xfailed in 0.01s\n";
        let shown = results(Runner::Pytest, py).unwrap();
        assert_eq!(runs(Runner::Pytest, "t.py::test_b", 1, &shown), Some(Shown::Ran));
        assert_eq!(runs(Runner::Pytest, "t.py::test_a", 1, &shown), None, "a skip mark's line names no node");
        assert_eq!(runs(Runner::Pytest, "t.py::test_c", 1, &shown), Some(Shown::Skipped));
        let spaced =
            "..\nPASSED t.py::test_p[a b]\nSUBPASSED(i=1) t.py::T::test_s\nPASSED t.py::T::test_s\n2 passed in 0.01s\n";
        let shown = results(Runner::Pytest, spaced).unwrap();
        assert_eq!(runs(Runner::Pytest, "t.py::test_p[a b]", 3, &shown), Some(Shown::Ran));
        assert_eq!(runs(Runner::Pytest, "t.py::T::test_s", 3, &shown), Some(Shown::Ran));
        let params = "..\nPASSED t.py::test_p[1]\nPASSED t.py::test_p[2]\n2 passed in 0.01s\n";
        let shown = results(Runner::Pytest, params).unwrap();
        assert_eq!(runs(Runner::Pytest, "t.py::test_p[obj0]", 1, &shown), Some(Shown::Ran));
        assert_eq!(runs(Runner::Pytest, "t.py::test_p[3]", 4, &shown), None, "a parameter removed");
    }

    #[test]
    fn a_run_that_did_not_reach_its_report_s_end_says_nothing() {
        let panicked = "=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\npanic: boom\n\ngoroutine 7 [running]:\nmain.f()\n";
        assert_eq!(results(Runner::GoBinary, panicked), None);
        assert_eq!(results(Runner::Pytest, "PASSED t.py::test_a\nKeyboardInterrupt\n"), None);
        assert_eq!(results(Runner::GoBinary, ""), None);
    }

    #[test]
    fn go_test_s_report_of_packages_is_read_to_its_end() {
        let ok = "=== RUN   TestA\n--- SKIP: TestA (0.00s)\nPASS\nok  \texample.com/a\t0.01s\n?   \texample.com/b\t[no test files]\n";
        assert_eq!(results(Runner::GoCommand, ok).unwrap().get("TestA"), Some(&Shown::Skipped));
        // The same name in two packages: it ran if it ran in one.
        let two = "--- SKIP: TestA (0.00s)\nPASS\nok  \tx/a\t0.01s\n--- PASS: TestA (0.00s)\nPASS\nok  \tx/b\t0.01s\n";
        assert_eq!(results(Runner::GoCommand, two).unwrap().get("TestA"), Some(&Shown::Ran));
        let built = "FAIL\texample.com/a [build failed]\nFAIL\n";
        assert_eq!(results(Runner::GoCommand, built), None);
        let panicked = "=== RUN   TestA\npanic: boom\n\ngoroutine 1\nFAIL\texample.com/a\t0.01s\nFAIL\n";
        assert_eq!(results(Runner::GoCommand, panicked), None);
        let interrupted =
            "ERROR t.py - ImportError\n!!! Interrupted: 1 error during collection !!!\n1 error in 0.05s\n";
        assert_eq!(results(Runner::Pytest, interrupted), None);
    }

    #[test]
    fn a_command_is_checked_when_it_is_a_test_runner_s() {
        let of = |argv: &[&str]| runner_of(&Target::argv(argv.iter().map(|a| (*a).to_owned()).collect()));
        assert_eq!(of(&["go", "test", "./..."]), Some(Runner::GoCommand));
        assert_eq!(of(&["/usr/lib/go/bin/go", "test", "-run", "TestA", "."]), Some(Runner::GoCommand));
        assert_eq!(of(&["go", "test", ".", "-args", "-x"]), None, "-v would go to the test binary");
        assert_eq!(of(&["go", "test", "-json", "."]), None);
        assert_eq!(of(&["go", "run", "."]), None);
        assert_eq!(of(&["pytest", "tests"]), Some(Runner::Pytest));
        assert_eq!(of(&[".venv/bin/python3.12", "-m", "pytest", "-q"]), Some(Runner::Pytest));
        assert_eq!(of(&["python3", "-m", "unittest"]), None);
        assert_eq!(of(&["make", "test"]), None);
        assert_eq!(runner_of(&Target::shell("pytest tests".into())), None);
    }
}
