//! The run record: a directory holding everything about one hunt, written as it goes so a
//! killed flakehunt leaves a readable prefix, and read back by `report`, `merge` and `--resume`.

mod attempt;
mod manifest;
mod merge;
mod new_dir;
mod reader;
mod writer;

pub use crate::schema::extra::{Adapter, CleanRoomSpec, Extra, MatrixExtra};
pub use attempt::{Attempt, Effect, HangCheck, Mode, Outcome, RedactAttempt};
pub use manifest::{Kind, Manifest, WrittenManifest, FORMAT_VERSION};
pub use merge::{ByKind, Merge, MergeError, MergedShard, LISTED_IDS};
pub use new_dir::{check_new, unused_dir, NewDir};
pub(crate) use reader::read_text;
pub use reader::{Record, SealPart};
pub use writer::{Recorder, Resumption};

use std::path::{Path, PathBuf};

/// The head of a record, written before its first attempt.
pub(crate) const MANIFEST: &str = "manifest.json";
/// One line per attempt, flushed as each ends.
pub(crate) const ATTEMPTS: &str = "attempts.jsonl";
/// The kept output of attempts.
pub(crate) const LOGS: &str = "logs";
/// Side file listing cells an adaptive plan added while running.
pub const CELLS: &str = "cells.jsonl";
/// Side document of a merged record naming the shards it was made from.
pub const MERGE_FILE: &str = "merge.json";
/// The summary document written at the end.
pub const SUMMARY_FILE: &str = "summary.json";
/// The environment snapshot.
pub const SNAPSHOT_FILE: &str = "snapshot.json";

/// Errors reading or writing a record.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// A file operation failed.
    #[error("cannot access {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The record directory cannot be created (an unwritable working directory, a file in the
    /// way).
    #[error("cannot create the record directory {path}")]
    Create {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Serialisation failed.
    #[error("cannot encode record data")]
    Json(#[source] serde_json::Error),
    /// The directory has no manifest.
    #[error("{0} is not a flakehunt record (no manifest.json)")]
    NotARecord(PathBuf),
    /// A file of the record is damaged: it does not parse, is not UTF-8 text, or is a
    /// directory or another non-regular file ([`crate::error_class::ErrorClass::Damaged`]).
    #[error("{0} is damaged: {1}")]
    Corrupt(PathBuf, String),
    /// Written by another format version.
    #[error("{dir} has record format {found}, this flakehunt reads format {supported}")]
    Version {
        /// The record.
        dir: PathBuf,
        /// Its version.
        found: u64,
        /// Ours.
        supported: u32,
    },
    /// `--record` points at an existing record.
    #[error("{0} already holds a record: choose another --record directory, or continue it with --resume")]
    Exists(PathBuf),
    /// `--record` points at a directory of the user's.
    #[error(
        "{0} is not empty and holds no flakehunt record: give --record a new or empty directory (nothing in it was changed)"
    )]
    NotEmpty(PathBuf),
    /// `--record` points at a file.
    #[error("{0} exists and is not a directory: give --record a new or empty directory")]
    NotADirectory(PathBuf),
}

impl RecordError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io { path: path.to_owned(), source }
    }

    /// The system's refusal, when the record could not be read, written or created.
    pub fn io_source(&self) -> Option<&std::io::Error> {
        match self {
            Self::Io { source, .. } | Self::Create { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl crate::error_class::Classify for RecordError {
    fn class(&self) -> crate::error_class::ErrorClass {
        use crate::error_class::ErrorClass;
        match self {
            // Encoding fails only when the record cannot be written as it is.
            Self::Io { .. } | Self::Create { .. } | Self::Json(_) => ErrorClass::Io,
            Self::Corrupt(..) => ErrorClass::Damaged,
            Self::NotARecord(_)
            | Self::Version { .. }
            | Self::Exists(_)
            | Self::NotEmpty(_)
            | Self::NotADirectory(_) => ErrorClass::Usage,
        }
    }
}

/// What to do about a file operation that failed with `kind`, where there is something to say.
pub fn io_advice(kind: std::io::ErrorKind) -> Option<&'static str> {
    use std::io::ErrorKind as K;
    Some(match kind {
        K::PermissionDenied => "check that directory's permissions, or give --record DIR on a writable path",
        K::StorageFull | K::QuotaExceeded => "free space on that file system, or give --record DIR on another",
        K::ReadOnlyFilesystem => "the file system is read-only: give --record DIR on a writable one",
        K::NotADirectory => "a file stands where a directory is needed: move it, or give another --record DIR",
        _ => return None,
    })
}
