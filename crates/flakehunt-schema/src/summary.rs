//! `summary.json`: per-cell statistics against the baseline, signatures and the verdict, with
//! each kind's part. Main type: [`Summary`]. Its fields are a contract (ARCHITECTURE.md): add
//! freely, never rename.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::adaptive::{AdaptiveDetails, AdaptivePart};
use super::checks::ChecksSummary;
use super::details::Details;
use super::fire::FireSummary;
use super::manifest::Kind;
use super::matrix::{Attribution, Dimension, MatrixCellDetails};
use super::oracle::OutputSummary;
use super::suite::SuiteSummary;
use super::verify::VerifyDetails;

/// The summary of a hunt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Record format version.
    pub format_version: u32,
    /// Which hunt.
    pub kind: Kind,
    /// `FLAKEHUNT_RUN_ID`.
    pub run_id: String,
    /// The command, as typed.
    pub target: String,
    /// The verdict's machine name.
    pub verdict: String,
    /// The verdict in words.
    pub verdict_text: String,
    /// The baseline cell's name.
    pub baseline: String,
    /// Attempts recorded.
    pub attempts: u64,
    /// Attempts the plan holds (for this shard); fewer recorded means an interrupted or budgeted run.
    pub planned: u64,
    /// Failures (fail + crash + timeout).
    pub failures: u64,
    /// Whether every planned attempt ran.
    pub complete: bool,
    /// Per cell.
    pub cells: Vec<CellSummary>,
    /// Failure signatures, most frequent first.
    pub signatures: Vec<SignatureSummary>,
    /// Sentences a reader should see (what zero failures rule out, load warnings...).
    pub notes: Vec<String>,
    /// `--oracle majority`: the distinct stdouts of the attempts that exited 0, most common
    /// first, the majority marked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<OutputSummary>,
    /// Matrix: the dimensions of the grid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dimensions: Option<Vec<Dimension>>,
    /// Matrix: failures per dimension value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution: Option<Vec<Attribution>>,
    /// A matrix's, an adaptive hunt's or a verification's part (see [`Details`]).
    #[serde(default, skip_serializing_if = "Details::is_none")]
    pub details: Details,
    /// Hunt: its part, flattened into the document (`reproduction`); absent from other kinds'
    /// summaries.
    #[serde(flatten)]
    pub adaptive: Option<AdaptivePart>,
    /// Warm attempts' failure rate against cold ones', when any attempt ran warm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modes: Option<ModeSummary>,
    /// The checks of failures the exit status hides that were on (`goroutine leaks`...), and
    /// how many attempts what they found failed; absent when none was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<ChecksSummary>,
    /// Fire: the reference and the ladder's levels, flattened into the document
    /// (`reference`, `levels`, ...).
    #[serde(flatten)]
    pub fire: Option<FireSummary>,
    /// Suite: the runner, the tests collected and every test that failed at least once,
    /// flattened into the document (`framework`, `collected`, `tests`, ...).
    #[serde(flatten)]
    pub suite: Option<SuiteSummary>,
}

/// One cell's statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellSummary {
    /// Name.
    pub name: String,
    /// Attempts.
    pub attempts: u64,
    /// Failures.
    pub failures: u64,
    /// Attempts ended as slow (by a limit flakehunt set, while still at work): among
    /// `attempts`, but no evidence, so left out of `rate`, `ci95`, `p_value` and
    /// `amplification`. Absent when none was.
    #[serde(default, skip_serializing_if = "super::is_zero")]
    pub slow: u64,
    /// Count per outcome (every outcome present, zeros included).
    pub outcomes: BTreeMap<String, u64>,
    /// failures / attempts.
    pub rate: f64,
    /// Wilson 95 % interval of the rate.
    pub ci95: [f64; 2],
    /// Exact one-sided 95 % upper bound when there were no failures.
    pub upper_bound: Option<f64>,
    /// Two-sided Fisher exact p against the baseline (none for the baseline itself).
    pub p_value: Option<f64>,
    /// Rate ratio against the baseline.
    pub amplification: Option<f64>,
    /// The ratio is a lower bound (the baseline never failed).
    pub amplification_at_least: bool,
    /// Differs from the baseline at p < 0.01.
    pub sensitive: bool,
    /// `amplifies` or `suppresses`, when sensitive.
    pub direction: Option<String>,
    /// What the difference suggests about the bug, when sensitive.
    pub meaning: Option<String>,
    /// The profile or overlay had no measurable effect.
    pub inert: bool,
    /// Why it is inert.
    pub inert_reason: Option<String>,
    /// What the profile measured, aggregated.
    pub effect: serde_json::Value,
    /// Mean wall-clock seconds per attempt.
    pub mean_seconds: f64,
    /// Mean one-minute load average during its attempts.
    pub mean_load: Option<f64>,
    /// Attempts that left processes behind.
    pub leaking: u64,
    /// Confirmation attempts among `attempts` (matrix).
    pub confirmations: u64,
    /// Duration histograms (see `DurationHistogram`), for renderers.
    pub durations: DurationHistogram,
    /// Matrix: the cell's overlay (dimension -> value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlay: Option<BTreeMap<String, String>>,
    /// Matrix: failed at least twice under its overlay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproduced: Option<bool>,
    /// Matrix: the smallest overlay that still reproduces, for reproduced cells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimal_overlay: Option<BTreeMap<String, String>>,
}

/// One failure signature.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignatureSummary {
    /// The normalised signature.
    pub signature: String,
    /// Attempts with it.
    pub count: u64,
    /// Cells it appeared in.
    pub cells: Vec<String>,
    /// The tail of its first attempt's stream that holds the failure.
    pub example: String,
    /// Which stream `example` is: `stderr` or `stdout` (pytest and Go's tests report on stdout).
    #[serde(default = "stderr_name")]
    pub stream: String,
    /// Id of its first attempt.
    pub first_attempt: u64,
}

impl CellSummary {
    /// Attempts that are evidence, which its rate counts: all but the slow ones.
    pub fn judged(&self) -> u64 {
        self.attempts - self.slow.min(self.attempts)
    }

    /// Its attempts as the tables show them: those its rate counts, and the slow ones beside
    /// (`97 +3 slow`).
    pub fn attempts_text(&self) -> String {
        match self.slow {
            0 => self.attempts.to_string(),
            slow => format!("{} +{slow} slow", self.judged()),
        }
    }
}

/// Log-scale duration histograms: 4 buckets per power of ten from 1 ms to 10,000 s, so the
/// distribution of any number of attempts fits in a few hundred counters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DurationHistogram {
    /// Counts of passing attempts per bucket.
    pub pass: Vec<u64>,
    /// Counts of failing attempts per bucket.
    pub fail: Vec<u64>,
}

impl DurationHistogram {
    /// Buckets per power of ten.
    pub const PER_DECADE: usize = 4;
    /// Number of buckets: 1 ms .. 10^4 s.
    pub const BUCKETS: usize = 7 * Self::PER_DECADE + 1;

    /// The bucket of a duration.
    pub fn bucket(seconds: f64) -> usize {
        let x = (seconds.max(1e-3) / 1e-3).log10() * Self::PER_DECADE as f64;
        (x.floor().max(0.0) as usize).min(Self::BUCKETS - 1)
    }

    /// Lower edge of a bucket, in seconds.
    pub fn lower_edge(bucket: usize) -> f64 {
        1e-3 * 10f64.powf(bucket as f64 / Self::PER_DECADE as f64)
    }
}

impl Default for DurationHistogram {
    fn default() -> Self {
        Self { pass: vec![0; Self::BUCKETS], fail: vec![0; Self::BUCKETS] }
    }
}

/// The failures of one mode's attempts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ModeRate {
    /// Attempts.
    pub attempts: u64,
    /// Failures among them.
    pub failures: u64,
    /// `failures / attempts` (0 without attempts).
    pub rate: f64,
}

impl ModeRate {
    /// Counts `attempts` more, `failures` of them failed.
    pub fn add(&mut self, attempts: u64, failures: u64) {
        self.attempts += attempts;
        self.failures += failures;
        self.rate = if self.attempts == 0 { 0.0 } else { self.failures as f64 / self.attempts as f64 };
    }
}

/// One cell in which both modes ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellModes {
    /// The cell.
    pub cell: String,
    /// Its warm attempts.
    pub warm: ModeRate,
    /// Its cold attempts.
    pub cold: ModeRate,
    /// Its failures were met in cold attempts and in no warm one.
    pub only_cold: bool,
}

/// `modes` in the summary of a hunt that ran warm attempts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModeSummary {
    /// The hunt's warm attempts.
    pub warm: ModeRate,
    /// The hunt's cold attempts.
    pub cold: ModeRate,
    /// Two-sided Fisher exact test of warm against cold, when both ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    /// The cells in which both modes ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cells: Vec<CellModes>,
    /// Failures were met in cold attempts and in no warm one: a start-up race.
    pub only_cold: bool,
    /// Attempts run again cold because the warm parent died while they ran (flakehunt's own
    /// helper, not the target: the first run is no result and is not recorded).
    #[serde(default, skip_serializing_if = "super::is_zero")]
    pub rerun: u64,
}

/// `stderr`: the stream a signature's example is from in records written before the choice.
pub fn stderr_name() -> String {
    "stderr".to_owned()
}

impl Summary {
    /// The cell summary by name.
    pub fn cell(&self, name: &str) -> Option<&CellSummary> {
        self.cells.iter().find(|c| c.name == name)
    }

    /// The exit code the hunt ends with: 1 when a failure was reproduced (a verification: is
    /// not fixed), 3 when a verification is inconclusive, else 0.
    pub fn exit_code(&self) -> i32 {
        match self.verdict.as_str() {
            "not-reproduced" | "accept" | "rumour" | "fixed" => 0,
            "inconclusive" => 3,
            _ => 1,
        }
    }
}

impl AdaptiveDetails {
    /// The details of `summary`, when it is a hunt's.
    pub fn of(summary: &Summary) -> Option<&Self> {
        summary.details.adaptive().filter(|_| summary.kind == Kind::Adaptive)
    }
}

impl VerifyDetails {
    /// The details of `summary`, when it is a verification's.
    pub fn of(summary: &Summary) -> Option<&Self> {
        summary.details.verify().filter(|_| summary.kind == Kind::Verify)
    }
}

impl MatrixCellDetails {
    /// The details of the summary's cell `c`.
    pub fn of(c: &CellSummary) -> Self {
        Self {
            name: c.name.clone(),
            overlay: c.overlay.clone(),
            attempts: c.attempts,
            failures: c.failures,
            reproduced: c.reproduced,
            confirmations: c.confirmations,
            minimal_overlay: c.minimal_overlay.clone(),
        }
    }
}
