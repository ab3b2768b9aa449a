//! A level's verdict: did the command survive running concurrently with itself? Main type:
//! [`Verdict`].

use serde::{Deserialize, Serialize};

/// The verdict of one level, from two facts: whether runs failed, and whether the final state
/// differs from the sequential reference (ARCHITECTURE.md, "Contracts").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// No run failed and the state matches the reference.
    Accept,
    /// Every run succeeded, yet the state is wrong: the most dangerous outcome, because
    /// nothing in production would notice.
    RejectSilentCorruption,
    /// Runs failed but the state is right: contention, timeouts, "database is locked".
    RejectLoad,
    /// Runs failed and the state is wrong.
    RejectRaceCrash,
}

impl Verdict {
    /// The verdict for a level.
    pub fn of(runs_failed: bool, state_differs: bool) -> Self {
        match (runs_failed, state_differs) {
            (false, false) => Verdict::Accept,
            (false, true) => Verdict::RejectSilentCorruption,
            (true, false) => Verdict::RejectLoad,
            (true, true) => Verdict::RejectRaceCrash,
        }
    }

    /// The machine name, as serialised.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Accept => "accept",
            Verdict::RejectSilentCorruption => "reject-silent-corruption",
            Verdict::RejectLoad => "reject-load",
            Verdict::RejectRaceCrash => "reject-race-crash",
        }
    }

    /// Whether the level was rejected.
    pub fn is_reject(self) -> bool {
        self != Verdict::Accept
    }

    /// What the verdict means, in words.
    pub fn meaning(self) -> &'static str {
        match self {
            Verdict::Accept => "every run succeeded and the state matches the sequential reference",
            Verdict::RejectSilentCorruption => {
                "SILENT CORRUPTION: every run exited successfully, yet the state differs from the sequential reference"
            }
            Verdict::RejectLoad => {
                "cannot handle load: runs failed (contention, timeouts, locks), though the state is right"
            }
            Verdict::RejectRaceCrash => {
                "race with crash: runs failed and the state differs from the sequential reference"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_of_the_design() {
        assert_eq!(Verdict::of(false, false), Verdict::Accept);
        assert_eq!(Verdict::of(false, true), Verdict::RejectSilentCorruption);
        assert_eq!(Verdict::of(true, false), Verdict::RejectLoad);
        assert_eq!(Verdict::of(true, true), Verdict::RejectRaceCrash);
        for v in [Verdict::Accept, Verdict::RejectSilentCorruption, Verdict::RejectLoad, Verdict::RejectRaceCrash] {
            assert_eq!(serde_json::to_value(v).unwrap(), v.name());
            assert_eq!(v.is_reject(), v != Verdict::Accept);
        }
    }
}
