//! The adaptive hunt's (`flakehunt hunt`) part of the record: the options its plan is rebuilt
//! from, and its part of the summary.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

/// What the hunt is given besides its target. Serialisable, so a record can hold it and a
/// resumed hunt rebuilds the same plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
pub struct BanditOptions {
    /// Seed of every decision.
    pub seed: u64,
    /// CPUs flakehunt may use.
    pub cpus: usize,
    /// What runs the target.
    pub runtime: RuntimeKind,
    /// Plain attempts measured before any arm runs.
    pub calibration_attempts: u64,
    /// Least share of attempts that go to the baseline, so the comparison stays possible.
    pub baseline_share: f64,
    /// Confirmation attempts per side (arm, baseline) at most.
    pub confirm_max: u64,
    /// Pairs after which confirmation gives up when the arm has failed no more often than the
    /// baseline (a failure no condition explains need not spend the whole confirmation budget).
    pub confirm_futile_after: u64,
    /// Confirmation is patient with a rare failure: one that has seen no failure on either
    /// side goes on while the budget lasts (a failure seen twice is hunted as long as a single
    /// one would be), and one that has gives up as futile only after as many pairs as the arm,
    /// failing at the rate its exploration showed, would need to fail again very likely (at
    /// least `confirm_futile_after`, at most `confirm_max`). Records written before lack it and
    /// replay as they ran (false).
    #[serde(default = "impatient")]
    pub patient: bool,
    /// The p-value below which confirmation says the arm is the condition.
    pub alpha: f64,
    /// `--oracle majority`: an output unlike the majority formed so far counts as a failure.
    pub majority: bool,
    /// `--timeout`, when the user gave one (the hang rule then does not apply).
    pub timeout: Option<Duration>,
    /// The hunt's attempts run warm (a Python target's forks of a warm parent): one calibration
    /// attempt then starts cold, to measure what a cold start adds. From the manifest's plan,
    /// not kept with these options.
    #[serde(skip)]
    pub warm: bool,
}

impl Default for BanditOptions {
    fn default() -> Self {
        Self {
            seed: 0,
            cpus: 1,
            runtime: RuntimeKind::Unknown,
            calibration_attempts: 5,
            baseline_share: 0.1,
            confirm_max: 100,
            confirm_futile_after: 20,
            patient: true,
            alpha: 0.01,
            majority: false,
            timeout: None,
            warm: false,
        }
    }
}

/// The confirmation of a record that does not say: the one it was written with.
fn impatient() -> bool {
    false
}

/// What runs the target, as far as the conditions care.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuntimeKind {
    /// CPython: the GIL's switch interval applies.
    Python,
    /// A Go binary: its runtime uses futexes, not the C library's locks, so jitter cannot act.
    Go,
    /// A dynamically linked native program (the jitter library can be preloaded).
    Native,
    /// A statically linked program: `LD_PRELOAD` cannot reach it.
    Static,
    /// Not known (a script, a shell command line): nothing is skipped for it.
    Unknown,
}

/// An arm retired because its mechanism had no effect here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retired {
    /// The arm's cell.
    pub cell: String,
    /// Why.
    pub reason: String,
}

/// A hunt's `summary.json` `details`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdaptiveDetails {
    /// The one-line conclusion.
    pub conclusion: String,
    /// What the calibration measured, once its attempts were in.
    pub calibration: Option<Calibration>,
    /// Families left out, with the reason.
    pub skipped: Vec<Skipped>,
    /// Arms retired as inert.
    pub retired: Vec<Retired>,
    /// Every cell's attempts outside confirmation, in the order first tried.
    pub tried: Vec<Tried>,
    /// The confirmation attempts of the reproducing cell against the baseline.
    pub confirmation: ConfirmCounts,
    /// Two-sided Fisher p of the confirmation attempts alone, once both sides ran.
    pub p_value: Option<f64>,
    /// The hunt stopped with its plan unfinished (budget spent or interrupted).
    pub stopped_early: bool,
    /// The arms tried over time: runs of consecutive attempts of one cell and phase, for the
    /// HTML report's chart (at most [`TIMELINE_MAX`]; later ones are left out).
    #[serde(default)]
    pub timeline: Vec<Stretch>,
}

/// Stretches of the timeline kept at most: a chart cannot show more, and a summary of a long
/// hunt must stay small.
pub const TIMELINE_MAX: usize = 1500;

/// Consecutive attempts of one cell in one phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stretch {
    /// The cell (its name carries the level).
    pub cell: String,
    /// `calibrate`, `confirm`, or absent for exploration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Seconds from the hunt's start to the first attempt's start.
    pub from: f64,
    /// Seconds from the hunt's start to the latest attempt's end.
    pub to: f64,
    /// Attempts.
    pub attempts: u64,
    /// Failures among them.
    pub failures: u64,
}

/// The target as measured on this machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Median wall time of the attempts that ran to their end, in seconds.
    pub median_seconds: f64,
    /// CPU seconds per wall second (1.0: one CPU busy throughout), when measured.
    pub cpu_per_wall: Option<f64>,
    /// The most threads seen, when sampled.
    pub threads: Option<u32>,
    /// What runs the target.
    pub runtime: RuntimeKind,
    /// CPUs flakehunt may use.
    pub cpus: usize,
    /// Attempts measured.
    pub attempts: u64,
    /// Of which failed.
    pub failures: u64,
    /// What a cold start (a new process) adds to a warm attempt, measured by a calibration
    /// attempt started cold in a hunt whose attempts run warm: the hang limit of an arm that
    /// runs cold is the warm baseline's stretched by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold_start: Option<ColdStart>,
}

impl Calibration {
    /// Attempts a level must have run without a failure before the next level of its family
    /// opens: about a second of the target, at least 3 and at most 10 attempts. Opening a level
    /// does not close the one below (the bandit still weighs both), so this only has to say "the
    /// level below is no strong condition": ten failure-free attempts put its rate below 26 %
    /// (95 %, the zero-failure bound), where the conditions that bring a flaky failure out
    /// usually show it far more often. A slow target escalates after 3, because each attempt of a
    /// level that shows nothing costs its whole (stretched) length, and the strongest level is
    /// often the one that matters (a timing window that only a 3 % quota opens).
    pub fn unlock_after(&self) -> u64 {
        ((1.0 / self.median_seconds).ceil() as u64).clamp(3, 10)
    }
}

/// What a cold start adds to an attempt, over the median warm one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ColdStart {
    /// Wall seconds.
    pub seconds: f64,
    /// CPU seconds, when measured.
    pub cpu_seconds: Option<f64>,
}

/// A family that does not apply to this target on this machine, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// The family's name.
    pub family: String,
    /// Why it was left out.
    pub reason: String,
}

/// An adaptive hunt's (`flakehunt hunt`) part of the summary document, flattened into it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdaptivePart {
    /// The cell that first failed twice, when and after how many attempts; `null` when none
    /// did. Every hunt's summary has the field, which is how a summary read back tells that it
    /// holds this part: it must be present (`null` included), unlike other optional fields.
    #[serde(deserialize_with = "present")]
    pub reproduction: Option<Reproduction>,
}

/// Reads a field that must be present even when `null` (serde reads a missing `Option` field as
/// `None` unless the field has its own deserializer).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    Option::deserialize(d)
}

/// `"reproduction"` in a hunt's `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reproduction {
    /// The cell that first failed twice.
    pub cell: String,
    /// Seconds from the hunt's start to the end of that second failure.
    pub seconds: f64,
    /// Attempts recorded until then, that one included.
    pub attempts: u64,
}

/// One cell's attempts outside confirmation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tried {
    /// The cell.
    pub cell: String,
    /// Attempts that are evidence (slow ones are not among them).
    pub attempts: u64,
    /// Failures among them.
    pub failures: u64,
    /// Attempts ended as slow by the hang rule or the budget: no evidence either way.
    #[serde(default, skip_serializing_if = "super::is_zero")]
    pub slow: u64,
}

/// The confirmation attempts of the reproducing cell and of the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ConfirmCounts {
    /// The cell's confirmation attempts.
    pub cell_attempts: u64,
    /// Its failures among them.
    pub cell_failures: u64,
    /// The baseline's confirmation attempts.
    pub base_attempts: u64,
    /// Its failures among them.
    pub base_failures: u64,
}

#[cfg(test)]
mod tests {
    use crate::summary::Summary;

    /// A hunt's summary keeps `reproduction` (`null` included) through a round trip; another
    /// kind's summary has none and gains none.
    #[test]
    fn the_reproduction_field_is_a_hunts_alone_and_null_when_none() {
        let sweep: Summary =
            serde_json::from_str(include_str!("../../flakehunt-core/tests/records/matrix.summary.json")).unwrap();
        assert_eq!(sweep.adaptive, None);
        let text = serde_json::to_string(&sweep).unwrap();
        assert!(!text.contains("\"reproduction\""), "{text}");
        let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
        value["kind"] = "hunt".into();
        value["reproduction"] = serde_json::Value::Null;
        let hunt: Summary = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(hunt.adaptive.as_ref().map(|a| a.reproduction.is_none()), Some(true));
        assert_eq!(serde_json::to_value(&hunt).unwrap(), value, "null is written back");
        value["reproduction"] = serde_json::json!({"cell": "tight-gil", "seconds": 1.5, "attempts": 12});
        let hunt: Summary = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(hunt.adaptive.and_then(|a| a.reproduction).map(|r| r.cell), Some("tight-gil".to_owned()));
    }
}
