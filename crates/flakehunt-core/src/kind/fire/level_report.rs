//! One line of `levels.jsonl`: what flakehunt learnt about the state after a level (or a
//! reference) finished, written as it completes. The attempts themselves are in
//! `attempts.jsonl`; the summary joins both. Main type: [`LevelReport`].

use serde::{Deserialize, Serialize};

use crate::copy::CopyStats;
use crate::state::Finding;

/// Side file of a fire record holding one [`LevelReport`] per finished level or reference.
pub const LEVELS: &str = "levels.jsonl";

/// The state-side results of one finished level or reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelReport {
    /// Position on the ladder from 1; 0 for a sequential reference.
    pub level: u32,
    /// The cell name of its attempts (`8x40`, `reference-40`).
    pub cell: String,
    /// Workers (1 for a reference).
    pub workers: u32,
    /// Runs planned.
    pub runs: u64,
    /// The reference cell the state was compared with (levels only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// Differences of the final state from the reference's, and token problems: what only a
    /// fingerprint of the sandbox could tell, which the record does not otherwise keep.
    #[serde(default)]
    pub findings: Vec<Finding>,
    /// The `--check` invariants, in the order given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckResult>,
    /// Whether tokens were traced in this state.
    #[serde(default)]
    pub tokens_traced: bool,
    /// Wall-clock seconds of the runs.
    pub seconds: f64,
    /// Where the sandbox was kept (`--keep`), relative to the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// What copying `--state` into the sandbox made and wrote (bytes written stay small for
    /// sparse files and reflinks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copied: Option<CopyStats>,
}

/// One `--check` run on a final state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckResult {
    /// The command, as given.
    pub command: String,
    /// Exited 0.
    pub passed: bool,
    /// Its exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signature-style summary of why it failed (`exit 1: ledger off by 3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}
