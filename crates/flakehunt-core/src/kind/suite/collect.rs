//! Collection: the test ids a runner lists, once per hunt. Go's and libtest's are read from
//! their output by pure functions ([`go_test_names`], [`libtest_names`]); pytest's is run by
//! [`collect_pytest`] and read from what flakehunt's plugin wrote
//! ([`super::pytestlog::Collected`]), not from pytest's output, which a project's options change.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::order::Pytest;
use super::setup::error_line;
use super::{pytestlog, TestId};
use crate::kind::suite::order::PytestInvocations;
use crate::snapshot::commands::{self, Probe, Ran};
use crate::spec::{HuntError, HuntSpec};

/// The top-level tests `BIN -test.list .` printed: one a line. Examples, benchmarks and fuzz
/// targets are listed too; only `Test...` names are tests an attempt runs (`-test.run` does
/// not run benchmarks, and fuzz targets run only their seed corpus, which is left out here).
pub fn go_test_names(output: &str) -> Vec<TestId> {
    output
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("Test") && !l.contains(char::is_whitespace))
        .map(str::to_owned)
        .collect()
}

/// The tests `TEST_BINARY --list` printed (the default `pretty` and the `terse` format both
/// write `name: test`); benchmarks (`name: benchmark`) are left out.
pub fn libtest_names(output: &str) -> Vec<TestId> {
    output.lines().filter_map(|l| l.strip_suffix(": test")).map(str::to_owned).collect()
}

/// The shortest time a collection is given, whatever `--timeout` says: an attempt's limit fits
/// a warm attempt of milliseconds, and a collection is a cold start (an interpreter, its
/// plugins, every test module).
const COLLECTION_FLOOR: Duration = Duration::from_secs(60);

/// How long the collection of the hunt `spec` may take: `--timeout` (default 10 minutes), and
/// at least [`COLLECTION_FLOOR`].
pub(crate) fn collection_limit(spec: &HuntSpec) -> Duration {
    spec.settings.timeout.max(COLLECTION_FLOOR)
}

/// One collection run: `python -m pytest -p flakehunt_suite --flakehunt-collect FILE
/// --collect-only [PATHS]` in the current directory, its process group ended at `timeout`.
/// What pytest could not collect is an error quoting pytest's own message.
pub(crate) fn collect_pytest(
    program: &Path,
    pytest: &Pytest,
    paths: &[String],
    dir: &Path,
    timeout: Duration,
) -> Result<pytestlog::Collected, HuntError> {
    let file = dir.join("collected.json");
    let _ = std::fs::remove_file(&file);
    let argv = pytest.collect_argv(paths, &file);
    let python_path = match std::env::var("PYTHONPATH") {
        Ok(p) if !p.is_empty() => format!("{}:{p}", dir.display()),
        _ => dir.display().to_string(),
    };
    let mut command = Command::new(program);
    command.args(&argv[1..]).env("PYTHONDONTWRITEBYTECODE", "1").env("PYTHONPATH", python_path);
    let probe = Probe { command, cap: 1 << 20, timeout };
    let ran = commands::run_all(vec![probe], None, None).pop().expect("one probe, one result");
    let collected = std::fs::read_to_string(&file).ok().and_then(|t| pytestlog::Collected::parse(&t).ok());
    let program = program.display().to_string();
    if let Some(l) = collected.as_ref().and_then(|c| c.symlink_loop.as_ref()) {
        return Err(collection(format!(
            "{} is a symlink to {}, a directory that contains it: pytest would collect through it again and again (remove the link, or add it to norecursedirs)",
            l.path, l.target
        )));
    }
    let (status, stdout, stderr) = match ran {
        Ran::NotStarted(cause) => {
            return Err(HuntError::Tool {
                what: format!("cannot run {program}"),
                cause,
                advice: "give the interpreter with --python PATH",
            })
        }
        Ran::TimedOut(after) => {
            return Err(collection(format!(
                "pytest's collection did not finish within {} s (--timeout, and at least 60 s): look for a conftest or a test module that hangs at import",
                after.as_secs_f64()
            )))
        }
        Ran::Exited { status, stdout, stderr } => (status, stdout, stderr),
    };
    let stderr = String::from_utf8_lossy(&stderr);
    if !status.success() && stderr.contains("No module named pytest") {
        return Err(HuntError::usage(format!(
            "{program} has no pytest: `{program} -m pip install pytest`, or give another interpreter with --python PATH"
        )));
    }
    match collected {
        Some(c) if c.items.is_some() => match c.errors.first() {
            Some(e) => {
                let more = match c.errors.len() {
                    1 => String::new(),
                    n => format!(" (and {} more files)", n - 1),
                };
                Err(collection(format!("pytest could not collect {}: {}{more}", e.nodeid, e.message)))
            }
            None => Ok(c),
        },
        _ => {
            let stdout = String::from_utf8_lossy(&stdout);
            let why = error_line(&stderr)
                .or_else(|| error_line(&stdout))
                .or_else(|| last_line(&stderr))
                .or_else(|| last_line(&stdout))
                .unwrap_or_else(|| "no output".to_owned());
            let hint = if why.contains("unrecognized arguments") {
                " (flakehunt disables the pytest plugins that reorder or re-run tests: randomly, cacheprovider, rerunfailures and flaky; an option of theirs in the project's addopts must go)"
            } else {
                ""
            };
            let code = status.code().map_or_else(|| status.to_string(), |c| format!("exit code {c}"));
            Err(collection(format!("pytest stopped before it collected ({code}): {why}{hint}")))
        }
    }
}

/// A collection that gave no test ids (shown after `--pytest: `).
fn collection(why: String) -> HuntError {
    HuntError::from(crate::kind::suite::SuiteFailure::Collection(crate::kind::suite::ParseError::Collection(why)))
}

/// The last non-empty line of `text`, cut to a message's length.
fn last_line(text: &str) -> Option<String> {
    text.lines().map(str::trim).rfind(|l| !l.is_empty()).and_then(crate::kind::suite::short_message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_list_keeps_tests_only() {
        let out = "TestPolluter\nTestVictim\nBenchmarkSum\nExampleHello\nFuzzParse\nok  \texample.com/x\t0.003s\n";
        assert_eq!(go_test_names(out), ["TestPolluter", "TestVictim"]);
    }

    #[test]
    fn libtest_list_keeps_tests_in_both_formats() {
        let pretty = "tests::a: test\ntests::b: test\nbench_x: benchmark\n\n2 tests, 1 benchmark\n";
        assert_eq!(libtest_names(pretty), ["tests::a", "tests::b"]);
        let doc = "src/lib.rs - add (line 3): test\n";
        assert_eq!(libtest_names(doc), ["src/lib.rs - add (line 3)"]);
    }
}
