//! Why a fire hunt could not run, beyond what every hunt can meet: its ladder refused (as given,
//! or as a record holds it), its state refused when it starts, its levels stopped. Main type:
//! [`FireFailure`].

use std::path::{Path, PathBuf};

use super::{FireError, LadderError};
use crate::error_class::{Classify, ErrorClass};
use crate::record::RecordError;
use crate::spec::{HuntError, KindError};
use crate::state::{FingerprintError, SandboxError};

/// A fire hunt's own errors.
#[derive(Debug, thiserror::Error)]
pub enum FireFailure {
    /// `--ladder` is refused.
    #[error("--ladder")]
    Ladder(#[source] LadderError),
    /// A recorded ladder that no hunt writes.
    #[error("the manifest's ladder")]
    DamagedLadder(#[source] LadderError),
    /// The state cannot be copied or fingerprinted when the hunt starts.
    #[error("{}", state_error(.error, .sandboxes, .state.as_ref()))]
    State {
        /// What failed.
        error: Box<FireError>,
        /// Where the sandboxes go (their paths are shown as the user's).
        sandboxes: PathBuf,
        /// The user's state directory.
        state: Option<PathBuf>,
    },
    /// The levels could not run.
    #[error(transparent)]
    Run(#[from] FireError),
}

impl Classify for FireFailure {
    fn class(&self) -> ErrorClass {
        match self {
            Self::Ladder(e) => e.class(),
            Self::DamagedLadder(_) => ErrorClass::Damaged,
            Self::State { error, .. } => error.class(),
            Self::Run(e) => e.class(),
        }
    }
}

impl KindError for FireFailure {
    fn record_error(&self) -> Option<&RecordError> {
        match self {
            Self::Run(FireError::Record(e)) => Some(e),
            _ => None,
        }
    }
}

impl From<FireFailure> for HuntError {
    fn from(e: FireFailure) -> Self {
        HuntError::of_kind(e)
    }
}

/// One line for a state that cannot be copied or fingerprinted, naming the user's path rather
/// than the copy's (`sandboxes` holds the copy, `state` is the user's).
fn state_error(e: &FireError, sandboxes: &Path, state: Option<&PathBuf>) -> String {
    let original = |p: &Path| -> String {
        let check = sandboxes.join("check");
        match (p.strip_prefix(&check), state) {
            (Ok(rel), Some(state)) => state.join(rel).display().to_string(),
            _ => p.display().to_string(),
        }
    };
    match e {
        FireError::Fingerprint(FingerprintError::NotSqlite { path }) => format!(
            "--state: {} is named like an SQLite database but is not one (rename it, or fix the state)",
            original(path)
        ),
        FireError::Fingerprint(FingerprintError::Sqlite { path, source }) => {
            format!("--state: cannot open SQLite database {}: {source}", original(path))
        }
        FireError::Sandbox(e @ SandboxError::TooLarge { .. }) => format!("--state: {e}: nothing was copied"),
        other => format!("--state: {}", crate::spec::error_chain(other)),
    }
}
