//! `flakehunt verify RECORD`: a fix proved against the condition that reproduced the failure.
//! The verified record says which cells reproduced it and at what rate ([`source`]); that rate
//! says how many clean attempts rule it out ([`attempts`]); the cells run that many times through
//! the one driver, and the summary judges `fixed`, `not-fixed` or `inconclusive` ([`summary`]).
//! A fire record's rejected level is run again on its ladder, a level run the attempt ([`fire`]).
//! Main type: [`VerifyOptions`], what the verify record's manifest keeps.

pub mod attempts;
pub mod code;
pub mod fire;
mod hunt;
pub mod options;
pub mod plan;
pub mod prepare;
pub mod rebuild;
pub mod reproducers;
pub mod source;
pub mod still_runs;
pub mod summary;

pub use hunt::Verify;
pub use options::{Condition, Role, VerifyOptions, DEFAULT_LEVEL};
pub use plan::VerifyPlan;
pub use summary::{VerifyDetails, Words};
