//! The concurrency ladder: `WxR,...`, levels of W workers sharing R runs, climbed in order.
//! Main type: [`Ladder`].

pub use crate::schema::fire::{Ladder, Level};

/// The ladder `flakehunt fire` climbs when none is given.
pub const DEFAULT_LADDER: &str = "2x10,8x40,20x100";

/// Why a ladder does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LadderError {
    /// A level is not `WxR` with two positive integers.
    #[error("invalid ladder level '{0}': write WxR with W workers and R runs, e.g. 2x10,8x40,20x100")]
    Syntax(String),
    /// A level has more workers than runs: the extra workers would never run.
    #[error("invalid ladder level '{0}': more workers than runs (each worker needs at least one run)")]
    MoreWorkersThanRuns(String),
    /// A level is listed twice: it would only repeat the same question.
    #[error("ladder level '{0}' is listed twice")]
    Repeated(String),
    /// Nothing given.
    #[error("the ladder is empty: give levels like 2x10,8x40")]
    Empty,
    /// Nothing between two commas, or after the last: a level was left out or mistyped.
    #[error("invalid ladder '{0}': a level is empty (a stray comma?): give levels like 2x10,8x40")]
    EmptyLevel(String),
    /// More workers or runs than this machine or flakehunt can take.
    #[error("invalid ladder level: {0}")]
    TooLarge(crate::bounds::BoundError),
}

// Not `#[from]`, which would make the bound a source as well as part of the message.
impl From<crate::bounds::BoundError> for LadderError {
    fn from(e: crate::bounds::BoundError) -> Self {
        Self::TooLarge(e)
    }
}

impl crate::error_class::Classify for LadderError {
    fn class(&self) -> crate::error_class::ErrorClass {
        match self {
            Self::Syntax(_)
            | Self::MoreWorkersThanRuns(_)
            | Self::Repeated(_)
            | Self::Empty
            | Self::EmptyLevel(_)
            | Self::TooLarge(_) => crate::error_class::ErrorClass::Usage,
        }
    }
}

/// A ladder read from its text (`2x10,8x40`), and its bounds, which its syntax alone does not
/// check.
pub trait ParseLadder: Sized {
    /// Parses `WxR,...` (case-insensitive `x`, spaces around levels allowed), then checks it.
    fn parse(s: &str) -> Result<Self, LadderError>;

    /// Checks what parsing checks beyond syntax, for a ladder read back from a record too: at
    /// least one level, and no level with more workers than this machine runs at once or more
    /// runs than flakehunt counts.
    fn check(&self) -> Result<(), LadderError>;
}

impl ParseLadder for Ladder {
    fn parse(s: &str) -> Result<Self, LadderError> {
        let mut levels: Vec<Level> = Vec::new();
        if s.trim().is_empty() {
            return Err(LadderError::Empty);
        }
        for part in s.split(',').map(str::trim) {
            if part.is_empty() {
                return Err(LadderError::EmptyLevel(s.to_owned()));
            }
            let bad = || LadderError::Syntax(part.to_owned());
            let (w, r) = part.split_once(['x', 'X']).ok_or_else(bad)?;
            let workers: u32 = w.trim().parse().map_err(|_| bad())?;
            let runs: u64 = r.trim().parse().map_err(|_| bad())?;
            if workers == 0 || runs == 0 {
                return Err(bad());
            }
            if u64::from(workers) > runs {
                return Err(LadderError::MoreWorkersThanRuns(part.to_owned()));
            }
            let level = Level { workers, runs };
            if levels.contains(&level) {
                return Err(LadderError::Repeated(part.to_owned()));
            }
            levels.push(level);
        }
        let ladder = Ladder(levels);
        ladder.check()?;
        Ok(ladder)
    }

    fn check(&self) -> Result<(), LadderError> {
        if self.0.is_empty() {
            return Err(LadderError::Empty);
        }
        for level in &self.0 {
            crate::bounds::Machine::get().check_workers(&format!("workers of {level}"), u64::from(level.workers))?;
            crate::bounds::check_runs(&format!("runs of {level}"), level.runs)?;
        }
        // The whole hunt too: every level's runs and one reference per distinct run count (as
        // the manifest counts them), or a fresh hunt is refused as if its record were damaged.
        let mut counts: Vec<u64> = self.0.iter().map(|l| l.runs).collect();
        counts.sort_unstable();
        counts.dedup();
        let total = self.0.iter().map(|l| l.runs).chain(counts).fold(0u64, u64::saturating_add);
        crate::bounds::check_runs(&format!("runs of {self} with its references"), total)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_default_and_round_trips() {
        let ladder: Ladder = Ladder::parse(DEFAULT_LADDER).unwrap();
        assert_eq!(
            ladder.0,
            [Level { workers: 2, runs: 10 }, Level { workers: 8, runs: 40 }, Level { workers: 20, runs: 100 }]
        );
        assert_eq!(ladder.to_string(), DEFAULT_LADDER);
        assert_eq!(Ladder::parse(" 4X12 , 1x1 ").unwrap().to_string(), "4x12,1x1");
    }

    #[test]
    fn rejects_malformed_levels() {
        for bad in ["2x", "x10", "2x10x3", "ax10", "0x10", "2x0", "-1x4", "2*10"] {
            assert_eq!(Ladder::parse(&format!("2x4,{bad}")), Err(LadderError::Syntax(bad.to_owned())), "{bad}");
        }
        assert_eq!(Ladder::parse(""), Err(LadderError::Empty));
        assert_eq!(Ladder::parse("8x4"), Err(LadderError::MoreWorkersThanRuns("8x4".into())));
        assert_eq!(Ladder::parse("2x4,2x4"), Err(LadderError::Repeated("2x4".into())));
        assert_eq!(Ladder::parse("   "), Err(LadderError::Empty));
    }

    #[test]
    fn a_stray_comma_is_an_error_not_a_level_left_out() {
        for bad in ["2x10,,", "2x10,", ",2x10", "2x10,,8x40", "2x10, ,8x40", ","] {
            assert_eq!(Ladder::parse(bad), Err(LadderError::EmptyLevel(bad.to_owned())), "{bad}");
        }
    }

    #[test]
    fn levels_beyond_the_machine_are_refused() {
        let e = Ladder::parse("4000000000x4000000000").unwrap_err().to_string();
        assert!(
            e.starts_with(
                "invalid ladder level: workers of 4000000000x4000000000 = 4000000000: this machine runs at most"
            ),
            "{e}"
        );
        let e = Ladder::parse("2x18446744073709551615").unwrap_err().to_string();
        assert!(e.contains("runs of 2x18446744073709551615 = 18446744073709551615: more than 1000000000"), "{e}");
        // Read back from a record, the same bounds apply.
        let ladder = Ladder(vec![Level { workers: u32::MAX, runs: u64::MAX }]);
        assert!(matches!(ladder.check(), Err(LadderError::TooLarge(_))));
        assert_eq!(Ladder(vec![]).check(), Err(LadderError::Empty));
    }
}
