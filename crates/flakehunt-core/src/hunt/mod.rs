//! One driver for every hunt (sweep, matrix, fire): a typed [`HuntSpec`] is prepared (PATH,
//! adapters, record, snapshot, process tree, watchdog, rooms) and run with an event sink, and
//! ends in a [`HuntEnd`] from which the binary decides its exit code.

mod error;

pub use error::{error_chain, HuntError};

/// How a hunt ended, as far as its exit code is concerned.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HuntEnd {
    /// A failure was reproduced, or a fire level rejected.
    pub reproduced: bool,
    /// The user interrupted; the record holds what ran.
    pub interrupted: bool,
    /// Shards are missing (Slurm): "nothing reproduced" cannot stand on part of the plan.
    pub incomplete: bool,
}

impl HuntEnd {
    /// The end of a hunt whose summary is `summary`.
    pub fn of(summary: &crate::analysis::Summary, interrupted: bool) -> Self {
        Self { reproduced: summary.exit_code() != 0, interrupted, incomplete: false }
    }
}
