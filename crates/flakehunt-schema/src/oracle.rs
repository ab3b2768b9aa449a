//! The oracles of a hunt as the manifest records them, and the summary of the distinct outputs
//! the majority oracle saw.

use serde::{Deserialize, Serialize};

/// The oracles of a hunt, as recorded in the manifest so that `--resume`, `report` and `merge`
/// judge with the same ones.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OracleSpec {
    /// An attempt whose stdout or stderr matches one of these fails.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fail_if: Vec<String>,
    /// A failing attempt whose stdout or stderr matches one of these counts as a pass.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_if: Vec<String>,
    /// The stdout every attempt must print.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_stdout: Option<ExpectedStdout>,
    /// Volatile parts of stdout masked (line by line) before comparing or hashing it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore: Vec<String>,
    /// An attempt whose stdout differs from the most common one is `wrong-output`.
    #[serde(default)]
    pub majority: bool,
}

impl OracleSpec {
    /// Whether no oracle beyond the exit code is set.
    pub fn is_empty(&self) -> bool {
        self.fail_if.is_empty() && self.pass_if.is_empty() && self.expect_stdout.is_none() && !self.majority
    }
}

/// The expected stdout of `--expect-stdout`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExpectedStdout {
    /// The file, as given.
    pub path: String,
    /// The hash of its masked content, as `exec::Capture::hash` computes it for an attempt.
    pub hash: String,
}

/// One distinct stdout.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OutputSummary {
    /// Hash of the (masked) stdout.
    pub hash: String,
    /// Attempts that printed it.
    pub count: u64,
    /// Whether it is the majority output.
    pub majority: bool,
    /// Id of its first attempt (its logs are in `logs/` when the record kept them).
    pub first_attempt: u64,
    /// The stdout tail of its first attempt.
    pub example: String,
    /// Ids of the attempts that printed it (the first 50), for minority outputs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<u64>,
}
