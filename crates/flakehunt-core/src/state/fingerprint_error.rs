//! Why a state directory could not be fingerprinted, apart from the fingerprint so that the walk
//! over the directory, which the fingerprint uses, can name it. Main type: [`FingerprintError`].

use std::io;
use std::path::PathBuf;

/// Why a state directory could not be fingerprinted.
#[derive(Debug, thiserror::Error)]
pub enum FingerprintError {
    /// A file or directory cannot be read.
    #[error("cannot read state {}", .path.display())]
    Read {
        /// The path that failed.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A file named like a database (`.db`, `.sqlite`, `.sqlite3`) is not
    /// one; the CLI reports it as a usage error.
    #[error("{} is not an SQLite database", .path.display())]
    NotSqlite {
        /// The file.
        path: PathBuf,
    },
    /// SQLite cannot open a database at all.
    #[error("cannot open SQLite database {}", .path.display())]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: rusqlite::Error,
    },
}

impl crate::error_class::Classify for FingerprintError {
    fn class(&self) -> crate::error_class::ErrorClass {
        use crate::error_class::ErrorClass;
        match self {
            Self::Read { .. } => ErrorClass::Io,
            // The user's state holds a file that is not the database its name says.
            Self::NotSqlite { .. } | Self::Sqlite { .. } => ErrorClass::Usage,
        }
    }
}
