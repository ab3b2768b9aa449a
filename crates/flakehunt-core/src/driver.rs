//! The one driver every hunt goes through: a [`crate::spec::HuntSpec`] is prepared by its kind
//! (cells, the manifest's extra, the plan), recorded, run in a session with an event sink, and
//! summarised from its record alone ([`run`]); it ends in a [`HuntReport`] from which the binary
//! prints and decides its exit code. Also the hunt split into Slurm shards ([`slurm_script`]).

mod run;
mod slurm;

pub use run::{default_record_dir, random_seed, run, step_summary, HuntReport, Incomplete};
pub use slurm::script_of as slurm_script;

pub use crate::render::cell_header;

/// How a hunt ended, as far as its exit code is concerned.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HuntEnd {
    /// A failure was reproduced, or a fire level rejected.
    pub reproduced: bool,
    /// The user interrupted; the record holds what ran.
    pub interrupted: bool,
    /// Shards are missing (Slurm): "nothing reproduced" cannot stand on part of the plan; or
    /// a verification is inconclusive: "fixed" cannot stand on what ran.
    pub incomplete: bool,
}

impl HuntEnd {
    /// The end of a hunt whose summary is `summary`.
    pub fn of(summary: &crate::analysis::Summary, interrupted: bool) -> Self {
        let code = summary.exit_code();
        Self { reproduced: code == 1, interrupted, incomplete: code == 3 }
    }
}
