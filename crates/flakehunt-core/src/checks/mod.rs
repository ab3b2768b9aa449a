//! Failures the exit status hides: goroutines a Go test leaves blocked, exceptions raised in a
//! Python thread or where Python cannot raise them, a panic in another thread of a passing Rust
//! test, and the data races Go's race detector reports. Each check, when on, turns such an
//! attempt into a failure whose signature names where it happened. Main types: [`Checks`] (which
//! were on, recorded in the plan), [`Finding`] (what one found, recorded with the attempt) and
//! [`CheckRun`] (a hunt's checks while its attempts run).
//!
//! The Go leak check and the Python hooks run inside the target and write what they find, one
//! JSON object a line, to `$FLAKEHUNT_CHECK_DIR/$FLAKEHUNT_ATTEMPT.PID`: a file, so that neither
//! a test runner's output capture nor the size of the output can hide it. The others are read
//! from the attempt's output: the race detector's reports from its stderr, the panics of a
//! Rust test's threads from libtest's stdout.

pub mod deliberate;
pub mod go;
pub mod python;
pub mod rust;

use std::path::Path;

pub use crate::schema::checks::{Check, Checks, ChecksSummary, Finding};

/// What a hunt asks of the checks, before the target says which apply: each `None` takes the
/// kind's default (on in `hunt` and `suite`, off in `sweep` and `matrix`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChecksRequest {
    /// `--leak-check` (`Some(true)`) or `--no-leak-check` (`Some(false)`).
    pub goroutine_leaks: Option<bool>,
    /// `--race`.
    pub race: bool,
    /// `--thread-check` (`Some(true)`) or `--no-thread-check` (`Some(false)`): exceptions in
    /// Python threads, panics in a Rust test's threads.
    pub threads: Option<bool>,
}

impl From<rust::TestPanics> for Finding {
    fn from(p: rust::TestPanics) -> Self {
        Finding {
            check: Check::ThreadPanic,
            test: Some(p.test),
            summary: p.summary,
            places: p.places,
            report: p.report,
            runner_failed: false,
        }
    }
}

/// The most of a finding's report kept in the record: the stacks of a few goroutines.
pub const REPORT_LIMIT: usize = 16 << 10;
/// The most findings kept per attempt (a test that leaks in a loop would write thousands).
const FINDINGS_LIMIT: usize = 20;

/// A hunt's checks while its attempts run: which are on, and the directory the target's own
/// checks write to, removed with it.
#[derive(Debug)]
pub struct CheckRun {
    /// The checks that are on.
    pub checks: Checks,
    dir: tempfile::TempDir,
    /// The Python thread check's hook directory, when the target is Python and the check is on.
    python_hook: Option<std::path::PathBuf>,
    /// Where the target runs, from which the Rust thread check finds the sources of panics.
    source: std::path::PathBuf,
}

impl CheckRun {
    /// The checks of a plan, with their directory; none when no check is on. A `python` target
    /// gets the thread check's hook; `source` is where the target runs (its sources are found
    /// from there).
    pub fn new(checks: Checks, python: bool, source: &Path) -> std::io::Result<Option<Self>> {
        if checks.is_none() {
            return Ok(None);
        }
        let dir = tempfile::Builder::new().prefix("flakehunt-checks-").tempdir()?;
        let python_hook = match checks.thread_exceptions && python {
            true => {
                let hook = dir.path().join("python");
                python::write_hook(&hook)?;
                Some(hook)
            }
            false => None,
        };
        Ok(Some(Self { checks, dir, python_hook, source: source.to_owned() }))
    }

    /// The directory the target's checks write to (`FLAKEHUNT_CHECK_DIR`).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The variables every attempt gets, after `pythonpath`, its own `PYTHONPATH` (if any):
    /// the Python hook goes first on it.
    pub fn env(&self, pythonpath: Option<std::ffi::OsString>) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
        let mut env = vec![("FLAKEHUNT_CHECK_DIR".into(), self.dir().as_os_str().to_owned())];
        if let Some(hook) = &self.python_hook {
            env.push((python::MARKER.into(), "1".into()));
            env.push(("PYTHONPATH".into(), python::pythonpath(hook, pythonpath)));
        }
        env
    }

    /// What the checks found in the attempt `tag` (its `FLAKEHUNT_ATTEMPT`), whose standard
    /// output and error `stdout` and `stderr` give (each read only when a check reads it: the
    /// Rust thread check libtest's output, the race detector's reports); the files its
    /// processes wrote are removed.
    pub fn findings(
        &self,
        tag: &str,
        stdout: impl FnOnce() -> String,
        stderr: impl FnOnce() -> String,
    ) -> Vec<Finding> {
        let mut found = take_reports(self.dir(), tag);
        if self.checks.thread_panics {
            let stdout = stdout();
            if stdout.contains("panicked at") {
                found.extend(rust::panics(&stdout, &self.source).into_iter().map(Finding::from));
            }
        }
        if self.checks.race {
            let stderr = stderr();
            if stderr.contains("WARNING: DATA RACE") {
                found.extend(go::races(&stderr));
            }
        }
        for f in &mut found {
            cut(&mut f.report, REPORT_LIMIT);
        }
        found.truncate(FINDINGS_LIMIT);
        found
    }
}

/// Reads and removes the files `tag.*` of `dir`: one finding per JSON line. A line that is not
/// a finding (a process killed while writing one) is skipped.
fn take_reports(dir: &Path, tag: &str) -> Vec<Finding> {
    let prefix = format!("{tag}.");
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<std::path::PathBuf> =
        entries.flatten().filter(|e| e.file_name().to_string_lossy().starts_with(&prefix)).map(|e| e.path()).collect();
    files.sort();
    let mut found = Vec::new();
    for path in files {
        let text = read_capped(&path);
        let _ = std::fs::remove_file(&path);
        for line in text.lines() {
            if let Ok(mut f) = serde_json::from_str::<Finding>(line) {
                cut(&mut f.report, REPORT_LIMIT);
                cut(&mut f.summary, 1000);
                if found.len() < FINDINGS_LIMIT {
                    found.push(f);
                }
            }
        }
    }
    found
}

/// The first megabyte of a file, as text.
fn read_capped(path: &Path) -> String {
    use std::io::Read;
    let mut bytes = Vec::new();
    if let Ok(f) = std::fs::File::open(path) {
        let _ = f.take(1 << 20).read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// `text` cut to at most `limit` bytes, at a character boundary, saying so.
fn cut(text: &mut String, limit: usize) {
    if text.len() <= limit {
        return;
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str("\n… (cut)");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::of_findings as signature;

    fn leak(places: &[&str]) -> Finding {
        Finding {
            check: Check::GoroutineLeak,
            test: Some("TestLeak".into()),
            summary: format!("leaked goroutines: {}, blocked at {}", places.len(), places.join(", ")),
            places: places.iter().map(|p| (*p).to_owned()).collect(),
            report: String::new(),
            runner_failed: false,
        }
    }

    #[test]
    fn signatures_name_the_places_with_their_lines() {
        let one = signature(Some(1), None, &[leak(&["ledger.go:41 (chan send)"])]);
        assert_eq!(one, "exit 1: leaked goroutines blocked at ledger.go:41 (chan send)");
        let other = signature(Some(1), None, &[leak(&["ledger.go:57 (chan send)"])]);
        assert_ne!(one, other, "another line is another signature");
        let same =
            signature(Some(1), None, &[leak(&["ledger.go:41 (chan send)"]), leak(&["ledger.go:41 (chan send)"])]);
        assert_eq!(one, same, "the count is not part of it");
        let two = signature(
            Some(1),
            None,
            &[leak(&["a.go:1 (chan send)"]), leak(&["b.go:2 (select)", "a.go:1 (chan send)"])],
        );
        assert_eq!(two, "exit 1: leaked goroutines blocked at a.go:1 (chan send), b.go:2 (select)");
    }

    #[test]
    fn reports_are_read_per_attempt_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let line = serde_json::to_string(&leak(&["a_test.go:7 (chan send)"])).unwrap();
        std::fs::write(dir.path().join("run.3.100"), format!("{line}\nnot json\n{line}\n")).unwrap();
        std::fs::write(dir.path().join("run.31.100"), format!("{line}\n")).unwrap();
        let got = take_reports(dir.path(), "run.3");
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].test.as_deref(), Some("TestLeak"));
        assert!(!dir.path().join("run.3.100").exists());
        assert!(dir.path().join("run.31.100").exists(), "another attempt's file stays");
        let empty_test = r#"{"check":"goroutine-leak","test":"","summary":"s","places":[]}"#;
        std::fs::write(dir.path().join("run.4.1"), empty_test).unwrap();
        assert_eq!(take_reports(dir.path(), "run.4")[0].test, None);
    }

    #[test]
    fn checks_round_trip_and_old_plans_read_as_none() {
        let on = Checks { goroutine_leaks: true, ..Checks::default() };
        let json = serde_json::to_string(&on).unwrap();
        assert_eq!(json, r#"{"goroutine_leaks":true}"#);
        assert_eq!(serde_json::from_str::<Checks>(&json).unwrap(), on);
        assert!(serde_json::from_str::<Checks>("{}").unwrap().is_none());
        assert_eq!(on.names(), ["goroutine leaks"]);
    }
}
