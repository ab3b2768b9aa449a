//! What kind of failure an error is, decided by the error's own type: every error the library
//! returns implements [`Classify`] with a match over its variants, so a new variant has no class
//! (and the binary no exit code for it) until someone writes one. Main type: [`ErrorClass`].

/// What kind of failure stopped a command; the binary maps each to its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The user's arguments or configuration: something to change on the command line or in a
    /// file they wrote, including a path they named that does not exist.
    Usage,
    /// A record (or the hypotheses file) that the system reads without complaint but that holds
    /// what flakehunt never writes: a file that does not parse, is not UTF-8 text, or is a
    /// directory or another non-regular file where a file belongs. The user's data is wrong, not
    /// the machine.
    Damaged,
    /// The machine or a scheduler refused what was asked (`--strict` and an inert profile, a
    /// failed Slurm submission).
    Refused,
    /// The system refused to read or write a file, or to create a directory or a process
    /// (permission denied, disk full, file too large, an I/O error): the message carries the
    /// system's reason.
    Io,
}

/// An error that knows its [`ErrorClass`].
pub trait Classify {
    /// The class of this error.
    fn class(&self) -> ErrorClass;
}

impl ErrorClass {
    /// The class of a failure to read a file the user named (`--config`, `--expect-stdout`):
    /// a path that does not exist, or names a directory, is the user's to fix; any other
    /// refusal is the system's.
    pub fn of_named_input(e: &std::io::Error) -> Self {
        use std::io::ErrorKind as K;
        match e.kind() {
            K::NotFound | K::IsADirectory | K::NotADirectory => Self::Usage,
            _ => Self::Io,
        }
    }
}
