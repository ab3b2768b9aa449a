//! One line of `levels.jsonl`: what flakehunt learnt about the state after a level (or a
//! reference) finished, written as it completes. The attempts themselves are in
//! `attempts.jsonl`; the summary joins both. Main type: [`LevelReport`].

pub use crate::schema::fire::{CheckResult, LevelReport};

/// Side file of a fire record holding one [`LevelReport`] per finished level or reference.
pub const LEVELS: &str = "levels.jsonl";
