//! Errors that stop a hunt before or while it runs. Each keeps the typed error it comes from
//! (and so its source), and each has its class by one match ([`Classify`]), which the binary
//! maps to an exit code. Main type: [`HuntError`].

use std::path::{Path, PathBuf};

use crate::cleanroom::CleanRoomError;
use crate::error_class::{Classify, ErrorClass};
use crate::exec::ProgramError;
use crate::oracle::OracleError;
use crate::record::{MergeError, RecordError};
use crate::state::{NormalizerError, SandboxError};

/// Why a hunt could not run or finish. Failing attempts are data, never one of these.
#[derive(Debug, thiserror::Error)]
pub enum HuntError {
    /// A user mistake, with what to change.
    #[error("{0}")]
    Usage(String),
    /// The machine or a scheduler refused what was asked.
    #[error("{0}")]
    Refused(String),
    /// A resumed record holds what no hunt writes; the message says what and where.
    #[error("{0}")]
    Damaged(String),
    /// The record cannot be created, written or read.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The shards of a Slurm job cannot be merged.
    #[error(transparent)]
    Merge(#[from] MergeError),
    /// Another operation on a file or a process failed.
    #[error("{what}")]
    Io {
        /// What was being done ("cannot create DIR").
        what: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A count or a duration beyond what this machine or flakehunt can take.
    #[error(transparent)]
    Bound(#[from] crate::bounds::BoundError),
    /// The target's program cannot be started as given.
    #[error(transparent)]
    Program(#[from] ProgramError),
    /// The target could not be started when an attempt ran.
    #[error("{}", crate::exec::spawn_failure(.program, .cause, .dir.as_deref()))]
    Spawn {
        /// The program.
        program: String,
        /// Why (the message says it in the user's terms, so it is not a source to repeat).
        cause: std::io::Error,
        /// The directory it was started in, when not the current one.
        dir: Option<PathBuf>,
    },
    /// A tool the hunt needs before its first attempt (the interpreter of `--pytest`, `go`)
    /// cannot be started.
    #[error("{what}: {cause} ({advice})")]
    Tool {
        /// What could not be run ("cannot run python3").
        what: String,
        /// Why (in the message, so not a source to repeat).
        cause: std::io::Error,
        /// What to do.
        advice: &'static str,
    },
    /// `--python` names no interpreter.
    #[error(transparent)]
    Python(#[from] crate::exec::python::PythonError),
    /// A clean room cannot be made or set up.
    #[error(transparent)]
    CleanRoom(#[from] CleanRoomError),
    /// `matrix --against`'s snapshot cannot be read.
    #[error("--against")]
    Against(#[source] crate::drift::ReadError),
    /// An oracle option is refused.
    #[error(transparent)]
    Oracle(#[from] OracleError),
    /// An `--ignore` or `--ignore-column` of fire is refused.
    #[error("{}", normalizer_line(.0))]
    Normalizer(NormalizerError),
    /// `--state` cannot be copied.
    #[error("--state")]
    StateOption(#[source] SandboxError),
    /// The state a resumed fire hunt works on cannot be copied any more.
    #[error("the hunt's --state {} cannot be copied any more", .state.display())]
    StateGone {
        /// The state directory.
        state: PathBuf,
        /// Why.
        #[source]
        error: Box<SandboxError>,
    },
    /// An attempt's build tool replayed a cached test result instead of running the tests.
    #[error(transparent)]
    Replayed(#[from] crate::runner::replay::Replayed),
    /// An error of one kind of hunt's own (fire's ladder and state, a suite's collection).
    #[error(transparent)]
    Kind(KindFailure),
    /// A Slurm script cannot carry what the hunt needs.
    #[error(transparent)]
    SlurmScript(#[from] crate::dispatch::slurm::SlurmScriptError),
    /// A recorded plan value that no hunt writes.
    #[error(
        "the record's manifest.json holds plan.{0}: it was edited or damaged (fix the value, or start a new hunt)"
    )]
    DamagedPlan(crate::bounds::BoundError),
    /// An error about the record in `dir`, which the message names first.
    #[error("{}", .dir.display())]
    InRecord {
        /// The record.
        dir: PathBuf,
        /// What is wrong with it.
        #[source]
        error: Box<HuntError>,
    },
}

impl Classify for HuntError {
    fn class(&self) -> ErrorClass {
        match self {
            Self::Usage(_) => ErrorClass::Usage,
            Self::Refused(_) => ErrorClass::Refused,
            Self::Damaged(_) | Self::DamagedPlan(_) => ErrorClass::Damaged,
            Self::Io { .. } => ErrorClass::Io,
            // A target that cannot start will not start the next time either.
            Self::Spawn { .. } | Self::Tool { .. } => ErrorClass::Usage,
            // The command's cache would replay the next attempt too.
            Self::Replayed(_) => ErrorClass::Usage,
            Self::Record(e) => e.class(),
            Self::Merge(e) => e.class(),
            Self::Bound(e) => e.class(),
            Self::Program(e) => e.class(),
            Self::Python(e) => e.class(),
            Self::CleanRoom(e) => e.class(),
            Self::Against(e) => e.class(),
            Self::Oracle(e) => e.class(),
            Self::Normalizer(e) => e.class(),
            Self::StateOption(e) => e.class(),
            Self::StateGone { error, .. } => error.class(),
            Self::Kind(e) => e.0.class(),
            Self::SlurmScript(e) => e.class(),
            Self::InRecord { error, .. } => error.class(),
        }
    }
}

impl HuntError {
    /// A usage error.
    pub fn usage(msg: impl Into<String>) -> Self {
        Self::Usage(msg.into())
    }

    /// An I/O failure while doing `what`.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io { what: what.into(), source }
    }

    /// `self`, said of the record in `dir`.
    pub fn in_record(self, dir: &Path) -> Self {
        Self::InRecord { dir: dir.to_owned(), error: Box::new(self) }
    }

    /// An error of one kind of hunt's own.
    pub fn of_kind(error: impl KindError) -> Self {
        Self::Kind(KindFailure(Box::new(error)))
    }

    /// The record error this one comes from, if any: what to do about a record that cannot be
    /// written is said of the record only.
    pub fn record_error(&self) -> Option<&RecordError> {
        match self {
            Self::Record(e) | Self::Merge(MergeError::Record(e)) => Some(e),
            Self::Kind(k) => k.0.record_error(),
            Self::InRecord { error, .. } => error.record_error(),
            _ => None,
        }
    }
}

/// An error that one kind of hunt defines in its home (`kind/NAME`), with its own class (an
/// exhaustive match of its variants, as every error here has). Held boxed in
/// [`HuntError::Kind`], so that the errors of a hunt do not depend on each kind's code: a new
/// kind adds its errors without touching this file.
pub trait KindError: std::error::Error + Classify + Send + Sync + 'static {
    /// The record error it comes from, if any (see [`HuntError::record_error`]).
    fn record_error(&self) -> Option<&RecordError> {
        None
    }
}

/// A kind's error, as [`HuntError::Kind`] holds it: its message and its sources are the error's.
pub struct KindFailure(Box<dyn KindError>);

impl KindFailure {
    /// The kind's error itself, to tell which it is.
    pub fn get(&self) -> &dyn KindError {
        self.0.as_ref()
    }
}

impl std::fmt::Debug for KindFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.0, f)
    }
}

impl std::fmt::Display for KindFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for KindFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// One line for a bad `--ignore` or `--ignore-column`: the regex parser's message spans
/// several lines, of which the last says what is wrong.
fn normalizer_line(e: &NormalizerError) -> String {
    match e {
        NormalizerError::InvalidRegex { source, .. } => {
            let why = source.to_string();
            let last = why.lines().map(str::trim).rfind(|l| !l.is_empty()).unwrap_or("").to_owned();
            format!("{e}: {}", last.trim_start_matches("error: "))
        }
        NormalizerError::InvalidColumn { .. } => format!("--ignore-column: {e}"),
    }
}

/// An error and its causes on one line, joined by ": ".
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}
