//! Delay injection for native code: a small preload library (`jitter/jitter.c`, embedded and
//! compiled with the system's `cc` on first use) that yields or sleeps a few microseconds around
//! mutex, condition variable, yield, read/write and nanosleep calls. Main type: [`JitterLib`].
//!
//! Compiled at run time rather than by a build script: flakehunt then builds without a C
//! toolchain, and a machine without `cc` reports the profile as not applicable instead of failing.

use std::path::PathBuf;
use std::process::{Command, Stdio};

const SOURCE: &str = include_str!("../../jitter/jitter.c");

/// The compiled library, in a temporary directory removed with the hunt.
#[derive(Debug)]
pub struct JitterLib {
    dir: tempfile::TempDir,
}

/// What one attempt's processes reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JitterReport {
    /// Processes that loaded the library.
    pub loaded: u64,
    /// Delays injected by the processes that exited normally.
    pub delays: u64,
    /// Processes that exited normally and so reported their delays: none when every one was
    /// killed (a timeout, the hang rule), whose delays are then unknown, not zero.
    pub exited: u64,
}

impl JitterLib {
    /// Compiles the library with `cc`; an error says what to change (TMPDIR, `cc`).
    pub fn create() -> Result<Self, String> {
        let tmp = std::env::temp_dir();
        let in_tmp = |e: std::io::Error| {
            format!("cannot write it in {} ({e}): set TMPDIR to a writable directory", tmp.display())
        };
        let dir = tempfile::Builder::new().prefix("flakehunt-jitter-").tempdir().map_err(in_tmp)?;
        let src = dir.path().join("jitter.c");
        std::fs::write(&src, SOURCE).map_err(in_tmp)?;
        std::fs::create_dir(dir.path().join("reports")).map_err(in_tmp)?;
        let status = Command::new("cc")
            .args(["-shared", "-fPIC", "-O2", "-o"])
            .arg(dir.path().join("libflakehunt_jitter.so"))
            .arg(&src)
            .args(["-ldl", "-pthread"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map_err(|e| format!("cannot run `cc` ({e}): install a C compiler as `cc`"))?;
        if !status.success() {
            return Err(format!("`cc` failed ({status}): check that the C compiler `cc` works"));
        }
        Ok(Self { dir })
    }

    /// The temporary directory holding the library and the reports.
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// The shared object to preload.
    pub fn path(&self) -> PathBuf {
        self.dir.path().join("libflakehunt_jitter.so")
    }

    /// `LD_PRELOAD` with the library first, keeping what the attempt or the user had.
    pub fn ld_preload(&self, existing: Option<&str>) -> String {
        match existing.filter(|e| !e.is_empty()) {
            Some(e) => format!("{}:{e}", self.path().display()),
            None => self.path().display().to_string(),
        }
    }

    /// The report file of one attempt.
    pub fn report_path(&self, attempt: u64) -> PathBuf {
        self.dir.path().join("reports").join(attempt.to_string())
    }

    /// Reads and removes one attempt's report; none when no process loaded the library.
    pub fn take_report(&self, attempt: u64) -> Option<JitterReport> {
        let path = self.report_path(attempt);
        let text = std::fs::read_to_string(&path).ok();
        let _ = std::fs::remove_file(&path);
        parse_report(&text?)
    }
}

/// Parses `loaded PID` and `delays N` lines.
fn parse_report(text: &str) -> Option<JitterReport> {
    let mut r = JitterReport { loaded: 0, delays: 0, exited: 0 };
    for line in text.lines() {
        match line.split_once(' ') {
            Some(("loaded", _)) => r.loaded += 1,
            Some(("delays", n)) => {
                r.delays += n.trim().parse::<u64>().unwrap_or(0);
                r.exited += 1;
            }
            _ => {}
        }
    }
    (r.loaded > 0).then_some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_sum_processes_and_delays() {
        assert_eq!(
            parse_report("loaded 1\nloaded 2\ndelays 5\ndelays 7\n"),
            Some(JitterReport { loaded: 2, delays: 12, exited: 2 })
        );
        // Killed before exiting: loaded, delays unknown.
        assert_eq!(parse_report("loaded 1\n"), Some(JitterReport { loaded: 1, delays: 0, exited: 0 }));
        assert_eq!(parse_report(""), None);
    }
}
