//! Exit codes and the errors that carry them: one mapping from error to exit code.

/// Nothing reproduced, or every fire level accepted.
pub const OK: i32 = 0;
/// Usage or configuration error.
pub const USAGE: i32 = 2;
/// The environment refused what was asked (e.g. `--strict` and an inert profile).
pub const REFUSED: i32 = 3;
/// Interrupted by the user; the record holds what ran.
pub const INTERRUPTED: i32 = 130;

/// A user mistake: one line saying what to change. Exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// The machine cannot do what was asked. Exit code 3.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// Shorthand for a usage error.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    Usage(msg.into()).into()
}

/// The exit code for an error.
pub fn code_of(err: &anyhow::Error) -> i32 {
    if err.downcast_ref::<Refused>().is_some() {
        REFUSED
    } else {
        USAGE
    }
}
