//! `manifest.json`: what a hunt is, written before its first attempt. Main type: [`Manifest`].

use serde::{Deserialize, Serialize};

use super::extra::Extra;
use super::oracle::OracleSpec;
use super::plan::{CellSpec, Settings, Shard};
use super::target::Target;

/// The record format version. Bump it when a field of the record or the summary is renamed or
/// removed; adding fields does not need a bump.
pub const FORMAT_VERSION: u32 = 1;

/// Which hunt produced a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// `flakehunt sweep`.
    Sweep,
    /// `flakehunt matrix`.
    Matrix,
    /// `flakehunt fire`.
    Fire,
    /// `flakehunt hunt`: the adaptive hunt.
    #[serde(rename = "hunt")]
    Adaptive,
    /// `flakehunt suite`: a whole test selection per attempt, in seeded orders.
    Suite,
    /// `flakehunt verify`: the reproduction of another record run again after a fix.
    Verify,
}

impl Kind {
    /// The name used in paths and documents.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Sweep => "sweep",
            Kind::Matrix => "matrix",
            Kind::Fire => "fire",
            Kind::Adaptive => "hunt",
            Kind::Suite => "suite",
            Kind::Verify => "verify",
        }
    }
}

/// The head of a run record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`FORMAT_VERSION`] of the writer.
    pub format_version: u32,
    /// flakehunt's version.
    pub tool_version: String,
    /// Which hunt.
    pub kind: Kind,
    /// `FLAKEHUNT_RUN_ID` of the hunt.
    pub run_id: String,
    /// The command under test.
    pub target: Target,
    /// How many attempts, how, with which stop rules.
    pub plan: Settings,
    /// The cells, in plan order; the first is the baseline.
    pub cells: Vec<CellSpec>,
    /// Seed of the interleaving and of every seeded mechanism.
    pub seed: u64,
    /// The host name.
    pub host: String,
    /// RFC 3339 start time.
    pub started_at: String,
    /// Which part of the plan this record holds, when sharded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// Oracles beyond the exit code, when any is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oracle: Option<OracleSpec>,
    /// Hunt-specific parameters (matrix dimensions, fire ladder...).
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
    /// Whether the record's files are redacted (no `--no-redact`): secrets in the target's
    /// arguments, the matrix values, the environment, the snapshot, output and logs replaced by
    /// `<redacted>`. Records written before redaction existed read as `false`.
    #[serde(default)]
    pub redacted: bool,
    /// Whether redaction removed secrets from this manifest (arguments of the target, matrix
    /// values), so that the hunt cannot be resumed from it: it would run with `<redacted>`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub withheld: bool,
}
