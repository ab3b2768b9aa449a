//! `flakehunt fire`: does a command survive running concurrently with itself? Each level of a
//! ladder runs W workers sharing R runs against a sandbox copy of the state; the final state is
//! compared with the state R sequential runs leave. Main type: [`FireRunner`].

mod failure;
mod hunt;
mod ladder;
mod options;
pub(crate) mod prepare;
mod resume;
mod runner;
mod summary;
mod verdict;

pub use crate::schema::fire::{CheckResult, LevelReport, LEVELS};
pub use failure::FireFailure;
pub use hunt::Fire;
pub use ladder::{Ladder, LadderError, Level, ParseLadder, DEFAULT_LADDER};
pub use options::{reference_cell, FireOptions, SANDBOXES};
pub use resume::{prepare as prepare_resume, Resumed};
pub use runner::{FireEnd, FireError, FireRunner, FireSinks};
pub use summary::{
    headline_text, position_key, summarize, summarize_ladder, FireSummary, LevelRuns, LevelSummary, ReferenceSummary,
};
pub use verdict::Verdict;
