//! The Python thread check: a `sitecustomize.py` (`threadcheck.py`) put first on `PYTHONPATH`
//! installs `threading.excepthook` and `sys.unraisablehook` in a script's interpreter (a warm
//! parent's too, whose forks keep them); pytest's own warnings about the same exceptions
//! (`PytestUnhandledThreadExceptionWarning`, `PytestUnraisableExceptionWarning`) are made errors
//! for the run with `-W`, and a plugin the hook loads names the exception behind such a failure.
//! Main type: [`PytestSupport`].

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Stdio};

/// The hook's source.
pub const SITECUSTOMIZE: &str = include_str!("threadcheck.py");

/// The source of the hook's pytest plugin, which names the exception behind a test pytest
/// failed with its warning (see `threadcheck_pytest.py`).
const PYTEST_PLUGIN: &str = include_str!("threadcheck_pytest.py");

/// The plugin's module name, as the hook puts it on `PYTEST_PLUGINS`.
const PYTEST_PLUGIN_MODULE: &str = "flakehunt_threadcheck";

/// The variable that asks the hook to install itself; the hook removes it, so that only the
/// attempt's first interpreter is checked, not the Python programs it starts.
pub const MARKER: &str = "FLAKEHUNT_THREAD_CHECK";

/// Writes the hook and its pytest plugin into `dir` (created), as the directory to put first on
/// `PYTHONPATH`.
pub fn write_hook(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join(format!("{PYTEST_PLUGIN_MODULE}.py")), PYTEST_PLUGIN)?;
    std::fs::write(dir.join("sitecustomize.py"), SITECUSTOMIZE)
}

/// `PYTHONPATH` with `hook` first, keeping `existing` (the attempt's own value, if any).
pub fn pythonpath(hook: &Path, existing: Option<OsString>) -> OsString {
    let mut path = hook.as_os_str().to_owned();
    if let Some(existing) = existing.filter(|e| !e.is_empty()) {
        path.push(":");
        path.push(existing);
    }
    path
}

/// The warning classes pytest emits for an exception in a thread and an unraisable one.
const PYTEST_WARNINGS: [&str; 2] = ["PytestUnhandledThreadExceptionWarning", "PytestUnraisableExceptionWarning"];

/// What an interpreter's pytest can do of the thread check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PytestSupport {
    /// The `-W` options that make its warnings errors (those of the classes it has).
    pub options: Vec<String>,
    /// One line saying what of the check is missing there, when something is.
    pub note: Option<String>,
}

impl PytestSupport {
    /// Asks `python` which warning classes its pytest has, and which hooks its Python has
    /// (`threading.excepthook`, `sys.unraisablehook`: 3.8 and later; pytest emits its warnings
    /// from them). An interpreter that cannot say gets no options and a line that says so.
    pub fn of(python: &Path) -> Self {
        let probe = "import sys, threading, pytest\n\
                     print(sys.version_info[0], sys.version_info[1], pytest.__version__, \
                     int(hasattr(pytest, 'PytestUnhandledThreadExceptionWarning')), \
                     int(hasattr(pytest, 'PytestUnraisableExceptionWarning')))";
        let out = Command::new(python).args(["-c", probe]).stdin(Stdio::null()).stderr(Stdio::null()).output();
        let text = out.ok().filter(|o| o.status.success()).map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
        Self::from_probe(text.as_deref().unwrap_or(""))
    }

    /// Reads the probe's line: `MAJOR MINOR PYTEST_VERSION HAS_THREAD HAS_UNRAISABLE`.
    fn from_probe(line: &str) -> Self {
        let words: Vec<&str> = line.split_whitespace().collect();
        let [major, minor, version, thread, unraisable] = words.as_slice() else {
            return Self {
                options: Vec::new(),
                note: Some("the thread check could not ask pytest what it supports: pytest runs without it".into()),
            };
        };
        let options = PYTEST_WARNINGS
            .iter()
            .zip([thread, unraisable])
            .filter(|(_, has)| **has == "1")
            .map(|(class, _)| format!("-Werror::pytest.{class}"))
            .collect::<Vec<_>>();
        let old_python = (major.parse::<u32>().unwrap_or(3), minor.parse::<u32>().unwrap_or(0)) < (3, 8);
        let note = if options.len() < PYTEST_WARNINGS.len() {
            Some(format!(
                "pytest {version} has no PytestUnhandledThreadExceptionWarning (pytest 6.2 and later have it): \
                 an exception in a thread fails a test's attempt only through flakehunt's own hook, \
                 an unraisable exception not at all"
            ))
        } else if old_python {
            Some(format!(
                "Python {major}.{minor} has no threading.excepthook nor sys.unraisablehook (3.8 and later): \
                 an exception in a thread fails an attempt only through flakehunt's own hook, \
                 an unraisable exception not at all"
            ))
        } else {
            None
        };
        Self { options, note }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytest_support_follows_what_the_probe_found() {
        let full = PytestSupport::from_probe("3 11 9.2.0 1 1\n");
        assert_eq!(
            full.options,
            [
                "-Werror::pytest.PytestUnhandledThreadExceptionWarning",
                "-Werror::pytest.PytestUnraisableExceptionWarning"
            ]
        );
        assert_eq!(full.note, None);
        let old = PytestSupport::from_probe("3 9 6.1.2 0 0");
        assert!(old.options.is_empty());
        assert!(old.note.unwrap().starts_with("pytest 6.1.2 has no PytestUnhandledThreadExceptionWarning"));
        let py37 = PytestSupport::from_probe("3 7 7.4.4 1 1");
        assert_eq!(py37.options.len(), 2);
        assert!(py37.note.unwrap().starts_with("Python 3.7 has no threading.excepthook"));
        assert!(PytestSupport::from_probe("").note.is_some());
    }

    /// The message pytest 6.2 to 8.3 gave the warning, made an error: the traceback formatted
    /// into it (no cause kept).
    const OLD_PYTEST_WARNING: &str = "Exception in thread Thread-1\n\nTraceback (most recent call last):\n  \
        File \"/usr/lib/python3.9/threading.py\", line 980, in _bootstrap_inner\n    self.run()\n  \
        File \"/src/app/worker.py\", line 13, in work\n    raise ledger.LostUpdate(n)\n\
        ledger.LostUpdate: lost update in iteration 3\n\n\
        Enable tracemalloc to get traceback where the object was allocated.\n";

    #[test]
    fn a_test_pytest_failed_with_the_warning_is_named_by_the_exception_behind_it() {
        let dir = tempfile::tempdir().unwrap();
        let hook = dir.path().join("hook");
        write_hook(&hook).unwrap();
        let reports = dir.path().join("reports");
        std::fs::create_dir(&reports).unwrap();
        // pytest's warning classes, as the plugin hands them over: an old pytest's (the
        // traceback in the message) and a new one's (the exception as the cause).
        let script = format!(
            "import sitecustomize\n\
             class PytestUnhandledThreadExceptionWarning(Warning): pass\n\
             class PytestUnraisableExceptionWarning(Warning): pass\n\
             sitecustomize._flakehunt_pytest_failed(PytestUnhandledThreadExceptionWarning({OLD_PYTEST_WARNING:?}), 't.py::test_old')\n\
             def close():\n    raise RuntimeError('closed twice')\n\
             try:\n    close()\nexcept RuntimeError as e:\n    cause = e\n\
             w = PytestUnraisableExceptionWarning('Exception ignored in: <function C.__del__>')\n\
             w.__cause__ = cause\n\
             sitecustomize._flakehunt_pytest_failed(w, 't.py::test_new')\n\
             import os\nprint(os.environ['PYTEST_PLUGINS'])\n"
        );
        let out = Command::new("python3")
            .args(["-c", &script])
            .env("PYTHONPATH", &hook)
            .env(MARKER, "1")
            .env("PYTEST_PLUGINS", "mine")
            .env("FLAKEHUNT_CHECK_DIR", &reports)
            .env("FLAKEHUNT_ATTEMPT", "run.1")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "mine,flakehunt_threadcheck");
        let found = super::super::take_reports(&reports, "run.1");
        assert_eq!(found.len(), 2, "{found:#?}");
        assert_eq!(found[0].check, super::super::Check::ThreadException);
        assert_eq!(found[0].test.as_deref(), Some("t.py::test_old"));
        assert!(found[0].runner_failed);
        assert_eq!(found[0].places, ["ledger.LostUpdate at worker.py:13 in work"]);
        assert_eq!(
            found[0].summary,
            "exception in thread Thread-1: ledger.LostUpdate: lost update in iteration 3, raised at worker.py:13 in work"
        );
        assert_eq!(found[1].check, super::super::Check::Unraisable);
        assert_eq!(found[1].places, ["RuntimeError at <string>:6 in close"]);
        assert_eq!(
            found[1].summary,
            "unraisable exception (Exception ignored in: <function C.__del__>): RuntimeError: closed twice, raised at <string>:6 in close"
        );
    }

    #[test]
    fn the_hook_goes_first_on_the_path() {
        assert_eq!(pythonpath(Path::new("/h"), Some("/a:/b".into())), "/h:/a:/b");
        assert_eq!(pythonpath(Path::new("/h"), Some("".into())), "/h");
        assert_eq!(pythonpath(Path::new("/h"), None), "/h");
    }
}
