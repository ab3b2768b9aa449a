//! Exit codes and the errors that carry them: one pure decision from how a command ended to
//! its exit code ([`code`]).

use flakehunt_core::hunt::HuntEnd;

/// Nothing reproduced, or every fire level accepted.
pub const OK: i32 = 0;
/// A failure was reproduced, or a fire level rejected.
pub const REPRODUCED: i32 = 1;
/// Usage or configuration error.
pub const USAGE: i32 = 2;
/// The environment refused what was asked (e.g. `--strict` and an inert profile).
pub const REFUSED: i32 = 3;
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
}

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

/// The exit code of a command's result: the one place that decides it.
pub fn code(result: &anyhow::Result<Done>) -> i32 {
    match result {
        Ok(Done::Ok) => OK,
        Ok(Done::Refused) => REFUSED,
        Ok(Done::Hunt(end)) => match end {
            HuntEnd { interrupted: true, .. } => INTERRUPTED,
            HuntEnd { reproduced: true, .. } => REPRODUCED,
            // Missing shards: "nothing reproduced" is not established.
            HuntEnd { incomplete: true, .. } => REFUSED,
            _ => OK,
        },
        Err(err) => code_of(err),
    }
}

/// The exit code for an error.
fn code_of(err: &anyhow::Error) -> i32 {
    let refused = err.downcast_ref::<Refused>().is_some()
        || matches!(err.downcast_ref::<flakehunt_core::hunt::HuntError>(), Some(e) if e.is_refusal());
    if refused {
        REFUSED
    } else {
        USAGE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hunt(reproduced: bool, interrupted: bool, incomplete: bool) -> anyhow::Result<Done> {
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
        assert_eq!(code(&Err(Refused("sbatch refused the job".into()).into())), REFUSED);
        let refused = flakehunt_core::hunt::HuntError::Refused("--strict".into());
        assert_eq!(code(&Err(refused.into())), REFUSED);
        let usage = flakehunt_core::hunt::HuntError::Usage("no command".into());
        assert_eq!(code(&Err(usage.into())), USAGE);
    }
}
