//! Exit codes and the error every command returns: one exhaustive match from how a command
//! ended to its exit code ([`code`]). A command fails with a typed [`Error`], which keeps the
//! library's error and its sources; each library error knows its class ([`Classify`]), and
//! each class has its code ([`code_of_class`]), so a new kind of error is a compile error here
//! until it has one.

use std::path::PathBuf;

use flakehunt_core::driver::HuntEnd;
use flakehunt_core::error_class::{Classify, ErrorClass};
use flakehunt_core::record::RecordError;

/// Nothing reproduced, or every fire level accepted.
pub const OK: i32 = 0;
/// A failure was reproduced, or a fire level rejected.
pub const REPRODUCED: i32 = 1;
/// `diff`: the snapshots differ (as diff(1) says it).
pub const DIFFER: i32 = 1;
/// Usage or configuration error, or a damaged record.
pub const USAGE: i32 = 2;
/// The environment refused what was asked (e.g. `--strict` and an inert profile).
pub const REFUSED: i32 = 3;
/// The system refused to read or write a file (disk full, permission denied, an I/O error):
/// not the user's arguments, so scripts can tell it from a usage error.
pub const IO: i32 = 4;
/// Interrupted by the user; the record holds what ran.
pub const INTERRUPTED: i32 = 130;

/// How a command ended, when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Done {
    /// A command other than a hunt finished.
    Ok,
    /// The machine could not do all that was asked, though nothing went wrong (`probe` found
    /// a profile with no effect).
    Refused,
    /// A hunt ended.
    Hunt(HuntEnd),
    /// `diff` found differences.
    Differ,
}

/// Why a command failed: the library's errors as they are, and the binary's own.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A hunt could not run or finish.
    #[error(transparent)]
    Hunt(#[from] flakehunt_core::spec::HuntError),
    /// A snapshot cannot be read (`diff`).
    #[error(transparent)]
    Snapshot(#[from] flakehunt_core::drift::ReadError),
    /// A record cannot be read (`report`).
    #[error(transparent)]
    Record(#[from] flakehunt_core::record::RecordError),
    /// An error about the record in `dir`, which the message names first (`report`).
    #[error("{}", .dir.display())]
    InRecord {
        /// The record.
        dir: PathBuf,
        /// What is wrong with it.
        #[source]
        error: flakehunt_core::record::RecordError,
    },
    /// Shards cannot be merged.
    #[error(transparent)]
    Merge(#[from] flakehunt_core::record::MergeError),
    /// The configuration file cannot be loaded.
    #[error(transparent)]
    Config(#[from] flakehunt_core::config::LoadError),
    /// The hypotheses file cannot be read or written.
    #[error(transparent)]
    Hypo(#[from] flakehunt_core::hypo::HypoError),
    /// A GitHub workflow cannot carry what was asked.
    #[error(transparent)]
    Github(#[from] flakehunt_core::dispatch::github::GithubError),
    /// A Kubernetes manifest cannot carry what was asked.
    #[error(transparent)]
    K8s(#[from] flakehunt_core::dispatch::k8s::K8sError),
    /// A hypothesis's kill test cannot be started.
    #[error("cannot start the kill test '{program}'")]
    KillTest {
        /// Its program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A user mistake the binary finds itself: one line saying what to change.
    #[error("{0}")]
    Usage(String),
    /// Another operation on a file or a process failed.
    #[error("{what}")]
    Io {
        /// What was being done ("cannot write FILE").
        what: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// An I/O failure while doing `what`.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io { what: what.into(), source }
    }

    /// The class of this error.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::Hunt(e) => e.class(),
            Self::Snapshot(e) => e.class(),
            Self::Record(e) | Self::InRecord { error: e, .. } => e.class(),
            Self::Merge(e) => e.class(),
            Self::Config(e) => e.class(),
            Self::Hypo(e) => e.class(),
            Self::Github(e) => e.class(),
            Self::K8s(e) => e.class(),
            // A kill test that cannot start will not start the next time either.
            Self::KillTest { .. } | Self::Usage(_) => ErrorClass::Usage,
            Self::Io { .. } => ErrorClass::Io,
        }
    }
}

/// Shorthand for a usage error.
pub fn usage(msg: impl Into<String>) -> Error {
    Error::Usage(msg.into())
}

/// The exit code of a command's result: the one place that decides it.
pub fn code(result: &Result<Done, Error>) -> i32 {
    match result {
        Ok(Done::Ok) => OK,
        Ok(Done::Refused) => REFUSED,
        Ok(Done::Differ) => DIFFER,
        Ok(Done::Hunt(end)) => match end {
            HuntEnd { interrupted: true, .. } => INTERRUPTED,
            HuntEnd { reproduced: true, .. } => REPRODUCED,
            // Missing shards: "nothing reproduced" is not established.
            HuntEnd { incomplete: true, .. } => REFUSED,
            _ => OK,
        },
        Err(err) => code_of_class(err.class()),
    }
}

/// The exit code of each class of error.
pub fn code_of_class(class: ErrorClass) -> i32 {
    match class {
        // A damaged record is the user's data to replace, as a bad option is theirs to change.
        ErrorClass::Usage | ErrorClass::Damaged => USAGE,
        ErrorClass::Refused => REFUSED,
        ErrorClass::Io => IO,
    }
}

/// The error line for `err`: the error and its causes joined by ": ", with what to do about a
/// record that cannot be written when its cause says.
pub fn message_of(err: &Error) -> String {
    let mut line = err.to_string();
    let mut cause = std::error::Error::source(err);
    while let Some(c) = cause {
        line.push_str(&format!(": {c}"));
        cause = c.source();
    }
    match record_error(err).and_then(RecordError::io_source).and_then(|e| flakehunt_core::record::io_advice(e.kind())) {
        Some(advice) => format!("{line} ({advice})"),
        None => line,
    }
}

/// The record error `err` comes from, if any: advice about `--record` is for the record only.
fn record_error(err: &Error) -> Option<&RecordError> {
    use flakehunt_core::record::MergeError;
    match err {
        Error::Record(e) | Error::InRecord { error: e, .. } | Error::Merge(MergeError::Record(e)) => Some(e),
        Error::Hunt(e) => e.record_error(),
        _ => None,
    }
}

/// Writes bytes to stdout with `write`, flushed (see [`written`]).
pub fn to_stdout(write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    written(write(&mut out).and_then(|()| std::io::Write::flush(&mut out)))
}

/// Writes coloured text to stdout with `write`, flushed; the colour is dropped when stdout is
/// not a terminal (see [`written`]).
pub fn to_terminal(write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>) -> Result<(), Error> {
    let mut out = anstream::stdout().lock();
    written(write(&mut out).and_then(|()| std::io::Write::flush(&mut out)))
}

/// What writing to stdout came to: a reader that went away (`flakehunt report | head`) ends
/// the output quietly, as for any filter; any other failure is an I/O error.
fn written(result: std::io::Result<()>) -> Result<(), Error> {
    match result {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::io("cannot write to stdout", e)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flakehunt_core::spec::HuntError;

    fn hunt(reproduced: bool, interrupted: bool, incomplete: bool) -> Result<Done, Error> {
        Ok(Done::Hunt(HuntEnd { reproduced, interrupted, incomplete }))
    }

    #[test]
    fn hunts_exit_by_their_outcome() {
        assert_eq!(code(&hunt(false, false, false)), OK);
        assert_eq!(code(&hunt(true, false, false)), REPRODUCED);
        assert_eq!(code(&hunt(true, true, false)), INTERRUPTED, "an interruption wins over a finding");
        assert_eq!(code(&hunt(false, false, true)), REFUSED, "missing shards cannot say nothing reproduced");
        assert_eq!(code(&hunt(true, false, true)), REPRODUCED, "a reproduced failure stands with shards missing");
    }

    #[test]
    fn errors_exit_by_their_kind() {
        assert_eq!(code(&Ok(Done::Ok)), OK);
        assert_eq!(code(&Ok(Done::Refused)), REFUSED);
        assert_eq!(code(&Err(usage("--runs must be at least 1"))), USAGE);
        assert_eq!(code(&Err(HuntError::Refused("sbatch refused the job".into()).into())), REFUSED);
        assert_eq!(code(&Err(HuntError::Usage("no command".into()).into())), USAGE);
        let damaged = RecordError::Corrupt("rec/manifest.json".into(), "it is not UTF-8 text (byte 3)".into());
        assert_eq!(code(&Err(damaged.into())), USAGE);
    }

    fn io_error() -> RecordError {
        RecordError::Io { path: "rec/attempts.jsonl".into(), source: std::io::Error::from_raw_os_error(libc::ENOSPC) }
    }

    #[test]
    fn io_failures_have_their_own_code_and_usage_stays_usage() {
        assert_eq!(code(&Err(io_error().into())), IO);
        assert_eq!(code(&Err(HuntError::Record(io_error()).into())), IO);
        assert_eq!(code(&Err(Error::InRecord { dir: "rec".into(), error: io_error() })), IO);
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert_eq!(code(&Err(Error::io("cannot write out.html", denied))), IO);
        assert_eq!(code(&Err(RecordError::Exists("rec".into()).into())), USAGE);
        // A disk that fills while a clean room is copied is the system's refusal.
        let full = flakehunt_core::cleanroom::CleanRoomError::Copy {
            path: "repo/big".into(),
            cause: std::io::Error::from_raw_os_error(libc::ENOSPC),
        };
        assert_eq!(code(&Err(HuntError::CleanRoom(full).into())), IO);
    }

    /// A typed error turned into a usage message loses its class (a full disk would exit 2):
    /// errors go up as they are, and only their message is made at the top.
    #[test]
    fn no_typed_error_is_flattened_into_a_usage_message() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut stack = vec![root.join("flakehunt/src"), root.join("flakehunt-core/src")];
        let mut found = Vec::new();
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                for (i, line) in text.lines().enumerate() {
                    // Put together here, so that this file does not match itself.
                    let flat = ["sage(e.to_string())", "sage(other.to_string())", "sage(super::error_chain("]
                        .iter()
                        .any(|tail| line.contains(&format!("U{tail}")) || line.contains(&format!("u{tail}")));
                    if flat {
                        found.push(format!("{}:{}: {}", path.display(), i + 1, line.trim()));
                    }
                }
            }
        }
        assert!(found.is_empty(), "typed errors flattened into usage messages:\n{}", found.join("\n"));
    }

    #[test]
    fn an_io_failure_says_its_cause_and_what_to_do() {
        let m = message_of(&io_error().into());
        assert!(m.starts_with("cannot access rec/attempts.jsonl: No space left on device"), "{m}");
        assert!(m.ends_with("(free space on that file system, or give --record DIR on another)"), "{m}");
        let m = message_of(&HuntError::Record(io_error()).into());
        assert!(m.ends_with("(free space on that file system, or give --record DIR on another)"), "{m}");
        // Advice about --record is for the record only.
        let m = message_of(&Error::io("cannot write /dev/full", std::io::Error::from_raw_os_error(libc::ENOSPC)));
        assert_eq!(m, "cannot write /dev/full: No space left on device (os error 28)");
    }
}
