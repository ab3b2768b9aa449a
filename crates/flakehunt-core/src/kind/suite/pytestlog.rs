//! What pytest reports through flakehunt's plugin (`flakehunt_suite.py`, embedded here and
//! written where a run can load it): the collection ([`Collected`]) and each run's per-test
//! events, written as they happened ([`pytest_results`]). Read from pytest's own hooks rather
//! than from its output or its junit xml, so that no option of a project changes what is read,
//! node ids are exact (doctests and parametrized ids included), and a process that dies leaves
//! the results it had, with the test that was running when it died.

use std::io;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{short_message, TestId, TestOutcome, TestResult};

/// The plugin's source.
pub const PLUGIN_SOURCE: &str = include_str!("flakehunt_suite.py");

/// The module name `-p` loads; its file is `<dir>/flakehunt_suite.py`, with `<dir>` on
/// `PYTHONPATH`.
pub const PLUGIN_MODULE: &str = "flakehunt_suite";

/// The variable naming the file a run's events are appended to.
pub const RESULTS_VAR: &str = "FLAKEHUNT_SUITE_RESULTS";
/// The variable that names the paths the collection was given (a JSON list): a run then meets
/// the files it names by node id as the project's own run does (see the plugin's docstring).
pub const INITPATHS_VAR: &str = "FLAKEHUNT_SUITE_INITPATHS";

/// The plugin's option naming the file the collection is written to.
pub const COLLECT_OPTION: &str = "--flakehunt-collect";

/// Writes the plugin into `dir` and returns the file's path.
pub fn write_plugin(dir: &Path) -> io::Result<PathBuf> {
    let path = dir.join(format!("{PLUGIN_MODULE}.py"));
    std::fs::write(&path, PLUGIN_SOURCE)?;
    Ok(path)
}

/// What the collection wrote: once configured, pytest's rootdir and whether pytest-xdist
/// distributes the tests; once collected, the items and the errors; or the symlink loop it
/// stopped at.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Collected {
    /// pytest's rootdir, which node ids are relative to.
    #[serde(default)]
    pub rootdir: Option<PathBuf>,
    /// pytest-xdist is loaded and the options ask it to distribute (`-n`).
    #[serde(default)]
    pub xdist: bool,
    /// pytest-cov measures the runs (`--cov`).
    #[serde(default)]
    pub coverage: bool,
    /// The node ids of `session.items`; none when collection did not finish.
    #[serde(default)]
    pub items: Option<Vec<TestId>>,
    /// The files that could not be collected, each with pytest's own error in one line.
    #[serde(default)]
    pub errors: Vec<CollectError>,
    /// A symlink to a directory that contains it, where the collection was stopped.
    #[serde(default, rename = "loop")]
    pub symlink_loop: Option<SymlinkLoop>,
    /// The paths pytest was given (absolute): the project's, or its `testpaths`.
    #[serde(default)]
    pub initialpaths: Vec<String>,
}

/// A file pytest could not collect.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CollectError {
    /// Its node id (a path).
    pub nodeid: String,
    /// pytest's error, in one line.
    pub message: String,
}

/// A symlink that leads to a directory containing it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SymlinkLoop {
    /// The link, relative to the rootdir.
    pub path: String,
    /// Where it leads.
    pub target: String,
}

impl Collected {
    /// Reads the collection file's text; an object that is not one is an error.
    pub fn parse(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }
}

/// One event line of a run's results file.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Line {
    Start {
        start: TestId,
    },
    Report {
        report: TestId,
        when: String,
        outcome: String,
        #[serde(default)]
        message: Option<String>,
    },
    Finish {
        finish: TestId,
    },
    CollectError {
        collect_error: String,
        message: String,
    },
}

/// What one pytest run's events said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PytestRun {
    /// One per run of a test (a test run twice by the repeat plugin appears twice), in the
    /// order they ran. A test that started and never finished (the process died, was killed or
    /// exited while it ran) is an [`TestOutcome::Error`], last.
    pub results: Vec<TestResult>,
    /// The test that started and never finished, if any.
    pub running: Option<TestId>,
    /// Files pytest could not collect in this run, with its error.
    pub collect_errors: Vec<(String, String)>,
}

/// A run being read: its test, outcome so far and message.
struct Open {
    id: TestId,
    outcome: TestOutcome,
    message: Option<String>,
}

impl Open {
    /// Takes in one phase's report: a failed call is a failure, a failed setup or teardown an
    /// error, a skip a skip; a failure outranks an error, which outranks a skip (the call failed
    /// and then the teardown raised: the test failed).
    fn report(&mut self, when: &str, outcome: &str, message: Option<String>) {
        let now = match (when, outcome) {
            (_, "passed") => return,
            ("call", "failed") => TestOutcome::Fail,
            (_, "failed") => TestOutcome::Error,
            (_, "skipped") => TestOutcome::Skip,
            _ => return,
        };
        let rank = |o: TestOutcome| match o {
            TestOutcome::Fail => 3,
            TestOutcome::Error => 2,
            TestOutcome::Skip => 1,
            TestOutcome::Pass => 0,
        };
        if rank(now) > rank(self.outcome) {
            self.outcome = now;
            self.message = message.as_deref().and_then(short_message);
        }
    }

    fn result(self) -> TestResult {
        TestResult { id: self.id, outcome: self.outcome, message: self.message }
    }
}

/// The message of a test that started and never finished, before the caller says how the
/// process ended.
pub const DIED_WHILE_RUNNING: &str = "the process ended while this test ran";

/// Reads a run's results file. A line that is not an event (the last one, cut by a kill in the
/// middle of a write) is skipped.
pub fn pytest_results(text: &str) -> PytestRun {
    let mut run = PytestRun::default();
    let mut open: Option<Open> = None;
    for line in text.lines() {
        let Ok(line) = serde_json::from_str::<Line>(line) else { continue };
        match line {
            Line::Start { start } => {
                // A start before the last run finished: that run's process state is unknown,
                // but its reports stand.
                if let Some(o) = open.take() {
                    run.results.push(o.result());
                }
                open = Some(Open { id: start, outcome: TestOutcome::Pass, message: None });
            }
            Line::Report { report, when, outcome, message } => match open.as_mut() {
                Some(o) if o.id == report => o.report(&when, &outcome, message),
                _ => {
                    let mut o = Open { id: report, outcome: TestOutcome::Pass, message: None };
                    o.report(&when, &outcome, message);
                    run.results.push(o.result());
                }
            },
            Line::Finish { finish } => {
                if let Some(o) = open.take_if(|o| o.id == finish) {
                    run.results.push(o.result());
                }
            }
            Line::CollectError { collect_error, message } => {
                if !run.collect_errors.iter().any(|(id, _)| *id == collect_error) {
                    run.collect_errors.push((collect_error, message));
                }
            }
        }
    }
    if let Some(o) = open {
        run.running = Some(o.id.clone());
        // What it reported before the process ended stands, a failure above all; else the
        // ending is its error.
        let outcome = if o.outcome == TestOutcome::Fail { TestOutcome::Fail } else { TestOutcome::Error };
        let message = o.message.clone().filter(|_| outcome == TestOutcome::Fail);
        run.results.push(TestResult {
            id: o.id,
            outcome,
            message: message.or_else(|| Some(DIED_WHILE_RUNNING.to_owned())),
        });
    }
    run
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The events pytest 9.2 wrote through the plugin for a doctest, a failing test, a skip, a
    /// test whose call failed and whose teardown raised, a setup error, a test run twice by the
    /// repeat plugin, and a test during which the process died (a segfault).
    const LOG: &str = r#"{"start": "tests/test_a.py::test_a.helper"}
{"report": "tests/test_a.py::test_a.helper", "when": "setup", "outcome": "passed"}
{"report": "tests/test_a.py::test_a.helper", "when": "call", "outcome": "passed"}
{"report": "tests/test_a.py::test_a.helper", "when": "teardown", "outcome": "passed"}
{"finish": "tests/test_a.py::test_a.helper"}
{"start": "tests/test_a.py::test_fail"}
{"report": "tests/test_a.py::test_fail", "when": "setup", "outcome": "passed"}
{"report": "tests/test_a.py::test_fail", "when": "call", "outcome": "failed", "message": "assert 1 == 2"}
{"report": "tests/test_a.py::test_fail", "when": "teardown", "outcome": "passed"}
{"finish": "tests/test_a.py::test_fail"}
{"start": "tests/test_a.py::test_skip"}
{"report": "tests/test_a.py::test_skip", "when": "setup", "outcome": "skipped", "message": "Skipped: later"}
{"report": "tests/test_a.py::test_skip", "when": "teardown", "outcome": "passed"}
{"finish": "tests/test_a.py::test_skip"}
{"start": "tests/test_a.py::test_p[c::d]"}
{"report": "tests/test_a.py::test_p[c::d]", "when": "call", "outcome": "failed", "message": "assert 0"}
{"report": "tests/test_a.py::test_p[c::d]", "when": "teardown", "outcome": "failed", "message": "RuntimeError: teardown broke"}
{"finish": "tests/test_a.py::test_p[c::d]"}
{"start": "tests/test_a.py::test_setup"}
{"report": "tests/test_a.py::test_setup", "when": "setup", "outcome": "failed", "message": "RuntimeError: no db"}
{"finish": "tests/test_a.py::test_setup"}
{"collect_error": "tests/test_bad.py", "message": "ModuleNotFoundError: No module named 'nope'"}
{"start": "tests/test_a.py::test_twice"}
{"report": "tests/test_a.py::test_twice", "when": "call", "outcome": "passed"}
{"finish": "tests/test_a.py::test_twice"}
{"start": "tests/test_a.py::test_twice"}
{"report": "tests/test_a.py::test_twice", "when": "call", "outcome": "failed", "message": "ran twice"}
{"finish": "tests/test_a.py::test_twice"}
{"start": "tests/test_a.py::test_crash"}
{"report": "tests/test_a.py::test_crash", "when": "setup", "outcome": "passed"}
{"report": "tests/test_a.py::test_cr"#;

    #[test]
    fn results_in_run_order_with_the_test_the_process_died_in_last() {
        let run = pytest_results(LOG);
        let got: Vec<(&str, TestOutcome, Option<&str>)> =
            run.results.iter().map(|r| (r.id.as_str(), r.outcome, r.message.as_deref())).collect();
        assert_eq!(
            got,
            [
                ("tests/test_a.py::test_a.helper", TestOutcome::Pass, None),
                ("tests/test_a.py::test_fail", TestOutcome::Fail, Some("assert 1 == 2")),
                ("tests/test_a.py::test_skip", TestOutcome::Skip, Some("Skipped: later")),
                ("tests/test_a.py::test_p[c::d]", TestOutcome::Fail, Some("assert 0")),
                ("tests/test_a.py::test_setup", TestOutcome::Error, Some("RuntimeError: no db")),
                ("tests/test_a.py::test_twice", TestOutcome::Pass, None),
                ("tests/test_a.py::test_twice", TestOutcome::Fail, Some("ran twice")),
                ("tests/test_a.py::test_crash", TestOutcome::Error, Some(DIED_WHILE_RUNNING)),
            ]
        );
        assert_eq!(run.running.as_deref(), Some("tests/test_a.py::test_crash"));
        assert_eq!(
            run.collect_errors,
            [("tests/test_bad.py".to_owned(), "ModuleNotFoundError: No module named 'nope'".to_owned())]
        );
        assert_eq!(pytest_results(""), PytestRun::default(), "no file: no result");
    }

    #[test]
    fn the_collection_file_in_its_two_stages() {
        let configured = Collected::parse(r#"{"errors": [], "rootdir": "/p", "xdist": true}"#).unwrap();
        assert_eq!((configured.rootdir.as_deref(), configured.xdist), (Some(Path::new("/p")), true));
        assert_eq!(configured.items, None, "collection did not finish");
        let done = Collected::parse(
            r#"{"errors": [{"nodeid": "t/test_bad.py", "message": "E"}], "rootdir": "/p", "xdist": false, "items": ["t/test_a.py::test_a.helper", "t/test_a.py::test_p[\\xe9]"]}"#,
        )
        .unwrap();
        assert_eq!(done.items.unwrap(), ["t/test_a.py::test_a.helper", "t/test_a.py::test_p[\\xe9]"]);
        assert_eq!(done.errors[0].nodeid, "t/test_bad.py");
        let looped =
            Collected::parse(r#"{"errors": [], "rootdir": "/p", "loop": {"path": "tests/up", "target": "/p"}}"#)
                .unwrap();
        assert_eq!(looped.symlink_loop.unwrap().path, "tests/up");
    }
}
