//! The adaptive hunt's (`flakehunt hunt`) part of the record: the options its plan is rebuilt
//! from, and its part of the summary.

use std::time::Duration;

use serde::{Deserialize, Serialize};

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
            alpha: 0.01,
            majority: false,
            timeout: None,
            warm: false,
        }
    }
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
