//! Errors that stop a hunt before or while it runs, each of a kind the binary maps to its own
//! exit code. Main type: [`HuntError`].

use crate::record::RecordError;

/// Why a hunt could not run or finish. Failing attempts are data, never one of these.
#[derive(Debug, thiserror::Error)]
pub enum HuntError {
    /// A user mistake, with what to change (exit code 2).
    #[error("{0}")]
    Usage(String),
    /// The machine or a scheduler refused what was asked (exit code 3).
    #[error("{0}")]
    Refused(String),
    /// The record cannot be written or read.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// Another operation on a file or a process failed.
    #[error("{what}")]
    Io {
        /// What was being done ("cannot create DIR").
        what: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl HuntError {
    /// A usage error.
    pub fn usage(msg: impl Into<String>) -> Self {
        Self::Usage(msg.into())
    }

    /// Whether the environment, not the user, refused (exit code 3).
    pub fn is_refusal(&self) -> bool {
        matches!(self, Self::Refused(_))
    }

    /// A record error as a hunt reports it: a file system failure keeps its cause (an I/O
    /// failure); anything else is the user's mistake (a directory that holds no record, or one
    /// of another kind).
    pub fn record(e: RecordError) -> Self {
        if e.is_io() {
            Self::Record(e)
        } else {
            Self::Usage(e.to_string())
        }
    }

    /// An I/O failure while doing `what`.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io { what: what.into(), source }
    }
}

/// An error and its causes on one line.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}
