//! A verification's part of the record: the record it verifies and each condition with what
//! that record saw under it (`extra.verify`), and its part of the summary.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The default confidence of a verification, in percent.
pub const DEFAULT_LEVEL: f64 = 99.0;

/// A verification's plan, as its manifest records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerifyOptions {
    /// The verified record, as an absolute path.
    pub record: PathBuf,
    /// Its kind's name (`hunt`, `sweep`, `matrix`); a name, so that the manifest's types do not
    /// import the record's.
    pub kind: String,
    /// Its run id.
    pub run_id: String,
    /// Its content hash (see `kind::verify::source::content_hash`).
    pub hash: String,
    /// The confidence asked for, as a fraction (0.99).
    pub level: f64,
    /// What runs, in the verify record's cell order.
    pub conditions: Vec<Condition>,
    /// Attempts each cell runs: the most any condition needs.
    pub attempts: u64,
    /// The command was given (`-- COMMAND`) rather than taken from the verified record.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub command_given: bool,
    /// The code it verifies, when it runs in a git work tree: a digest of the commit checked
    /// out and of the uncommitted changes to tracked files, so that a resumed verification
    /// refuses to mix attempts of two versions of the code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// Why a cell of a verification runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// A condition the failure appeared under: the fix is proved against it.
    Condition,
    /// The baseline a hunt's arm alternates with: a failure there is the failure still here,
    /// but no bound is asked of it.
    Baseline,
}

/// One cell of a verification and what the verified hunt saw under it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Condition {
    /// The cell (the verified record's name for it).
    pub cell: String,
    /// Why it runs.
    pub role: Role,
    /// Which of the verified record's attempts the rate comes from (`the hunt's confirmation`,
    /// `the sweep`).
    pub source: String,
    /// Those attempts (slow ones left out).
    pub attempts: u64,
    /// Their failures.
    pub failures: u64,
    /// Wilson 95 % interval of that rate.
    pub ci95: [f64; 2],
    /// Attempts needed to rule the rate's lower end out at the level; none for a baseline or a
    /// cell that never failed.
    pub needed: Option<u64>,
    /// Mean seconds per attempt then, to say what a budget fits.
    pub mean_seconds: f64,
    /// The failure signatures seen then under this cell (a failure now is the same failure when
    /// its signature is among any condition's).
    pub signatures: Vec<String>,
    /// A suite's test whose reproducer the cell runs: a failure whose signature names it is that
    /// test's failure (the suite's own runs and a reproducer's output are signed apart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<String>,
    /// That test's reproducer, as the verification runs it (a test binary built again): its
    /// run is judged by the test's own result in the runner's structured output.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reproducer: Vec<String>,
    /// Why the cell's condition had no effect in the verified record, when it had none: its
    /// failures there were not the condition's, and no clean run under it proves a fix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inert_then: Option<String>,
}

impl Condition {
    /// The failure rate then.
    pub fn rate(&self) -> f64 {
        if self.attempts == 0 {
            0.0
        } else {
            self.failures as f64 / self.attempts as f64
        }
    }
}

/// `summary.json`'s `details` of a verification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerifyDetails {
    /// The verified record, as the manifest names it.
    pub verified: Verified,
    /// The confidence asked for, as a fraction.
    pub level: f64,
    /// Attempts each cell was to run.
    pub planned: u64,
    /// Per cell, in the record's order.
    pub conditions: Vec<ConditionResult>,
}

/// The verified record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verified {
    /// Its path.
    pub record: String,
    /// Its kind's name.
    pub kind: String,
    /// Its run id.
    pub run_id: String,
    /// Its content hash when verified.
    pub hash: String,
}

/// Failures in attempts, with the rate's Wilson 95 % interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    /// Attempts that are evidence (slow ones left out).
    pub attempts: u64,
    /// Failures among them.
    pub failures: u64,
    /// failures / attempts.
    pub rate: f64,
    /// Wilson 95 % interval.
    pub ci95: [f64; 2],
}

/// A failure signature seen in this verification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeenSignature {
    /// The signature.
    pub signature: String,
    /// Whether the verified record saw it under this cell.
    pub seen_before: bool,
}

/// One cell's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConditionResult {
    /// The cell.
    pub cell: String,
    /// Why it ran.
    pub role: Role,
    /// `fixed`, `not-fixed`, `inconclusive`, or `clean` (a baseline without failure).
    pub verdict: String,
    /// The verdict in words.
    pub text: String,
    /// What the verified record saw, and from which of its attempts.
    pub then: Rate,
    /// Which attempts `then` counts.
    pub then_source: String,
    /// What this verification saw.
    pub now: Rate,
    /// Clean attempts needed to rule the rate then out at the level.
    pub needed: Option<u64>,
    /// With no failure now: the rate it is below, at the level.
    pub bound: Option<f64>,
    /// With failures now: two-sided Fisher exact p of now against then.
    pub p_value: Option<f64>,
    /// The signatures of the failures now.
    pub signatures: Vec<SeenSignature>,
    /// Why the cell's condition had no effect here, when it had none.
    pub inert: Option<String>,
    /// Attempts that hung (no CPU, no output past flakehunt's hang limit) when the verified
    /// record saw no hang: neither its failure nor a pass, so left out of `now`.
    #[serde(default, skip_serializing_if = "super::is_zero")]
    pub hung: u64,
    /// A suite's reproducer runs that failed before the verified test reported a result (it
    /// was not collected, the process died before it ran): neither its failure nor a pass, so
    /// left out of `now`.
    #[serde(default, skip_serializing_if = "super::is_zero")]
    pub unreported: u64,
}
