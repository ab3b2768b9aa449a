//! Exit codes and the errors that carry them: one pure decision from how a command ended to
//! its exit code ([`code`]).

use flakehunt_core::driver::HuntEnd;

/// Nothing reproduced, or every fire level accepted.
pub const OK: i32 = 0;
/// A failure was reproduced, or a fire level rejected.
pub const REPRODUCED: i32 = 1;
/// Usage or configuration error.
pub const USAGE: i32 = 2;
/// The environment refused what was asked (e.g. `--strict` and an inert profile).
pub const REFUSED: i32 = 3;
/// Reading or writing a file failed (disk full, permission denied, a damaged record): not the
/// user's arguments, so scripts can tell it from a usage error.
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

/// A record error as the binary reports it: a file system failure keeps its cause (exit code
/// [`IO`]); anything else is the user's mistake (a directory that holds no record, or one of
/// another kind) and a usage error.
pub fn record(e: flakehunt_core::record::RecordError) -> anyhow::Error {
    if e.is_io() {
        e.into()
    } else {
        usage(e.to_string())
    }
}

/// The exit code for an error: a function of the error alone. An explicit [`Usage`] or
/// [`Refused`] anywhere in the chain decides; else an I/O failure anywhere in it (the record's
/// or the operating system's) is [`IO`]; anything else is a usage error.
pub fn code_of(err: &anyhow::Error) -> i32 {
    if err.downcast_ref::<Usage>().is_some() {
        return USAGE;
    }
    if err.downcast_ref::<Refused>().is_some() {
        return REFUSED;
    }
    let mut io = false;
    for cause in err.chain() {
        if cause.is::<Usage>() {
            return USAGE;
        }
        if cause.is::<Refused>()
            || cause.downcast_ref::<flakehunt_core::driver::HuntError>().is_some_and(|e| e.is_refusal())
        {
            return REFUSED;
        }
        io |= cause.is::<std::io::Error>()
            || cause.downcast_ref::<flakehunt_core::record::RecordError>().is_some_and(|e| e.is_io());
    }
    if io {
        IO
    } else {
        USAGE
    }
}

/// The error line for `err`, with what to do about an I/O failure when its cause says.
pub fn message_of(err: &anyhow::Error) -> String {
    let advice = err
        .chain()
        .find_map(|c| c.downcast_ref::<std::io::Error>())
        .and_then(|e| flakehunt_core::record::io_advice(e.kind()));
    match advice {
        Some(advice) => format!("{err:#} ({advice})"),
        None => format!("{err:#}"),
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
        let refused = flakehunt_core::driver::HuntError::Refused("--strict".into());
        assert_eq!(code(&Err(refused.into())), REFUSED);
        let usage = flakehunt_core::driver::HuntError::Usage("no command".into());
        assert_eq!(code(&Err(usage.into())), USAGE);
    }

    fn io_error() -> flakehunt_core::record::RecordError {
        flakehunt_core::record::RecordError::Io {
            path: "rec/attempts.jsonl".into(),
            source: std::io::Error::from_raw_os_error(libc::ENOSPC),
        }
    }

    #[test]
    fn io_failures_have_their_own_code_and_usage_stays_usage() {
        use flakehunt_core::record::RecordError;
        assert_eq!(code_of(&anyhow::Error::from(io_error())), IO);
        assert_eq!(code_of(&anyhow::Error::from(io_error()).context("cannot write the summary")), IO);
        assert_eq!(code_of(&anyhow::Error::from(std::io::Error::from(std::io::ErrorKind::PermissionDenied))), IO);
        assert_eq!(code_of(&usage("--runs must be at least 1")), USAGE);
        assert_eq!(code_of(&anyhow::Error::from(RecordError::Exists("rec".into()))), USAGE);
        assert_eq!(code_of(&anyhow::Error::from(Refused("inert".into()))), REFUSED);
        // An explicit classification wins over a cause it wraps.
        assert_eq!(code_of(&anyhow::Error::from(io_error()).context(Usage("bad --record".into()))), USAGE);
    }

    #[test]
    fn an_io_failure_says_its_cause_and_what_to_do() {
        let m = message_of(&anyhow::Error::from(io_error()));
        assert!(m.starts_with("cannot access rec/attempts.jsonl: No space left on device"), "{m}");
        assert!(m.ends_with("(free space on that file system, or give --record DIR on another)"), "{m}");
    }
}
