//! One attempt as recorded in `attempts.jsonl`. Main type: [`Attempt`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::checks::Finding;
use super::process::{LeakedProcess, Termination};
use super::suite::AttemptTests;

/// How an attempt ended. A failing test is data, never an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Exited 0 and every oracle agreed.
    Pass,
    /// Exited non-zero, or an oracle said so.
    Fail,
    /// Killed by a signal it did not get from flakehunt.
    Crash,
    /// Ran past the user's `--timeout`, or hung: ended by a limit flakehunt set while none of its
    /// processes used CPU, printed or could run, and stayed so (see [`HangCheck`]).
    Timeout,
    /// Ended by a limit flakehunt set (the hang rule, the default timeout, the end of a hunt's
    /// budget) while it was still at work: its processes used CPU, printed or were runnable. No
    /// evidence either way: neither a pass nor a failure, and left out of every rate.
    Slow,
    /// Passed, but left processes behind (since killed).
    Leak,
    /// Could not be started.
    SpawnError,
    /// Exited 0, but its output was wrong: it differed from `--expect-stdout` or from the
    /// majority of attempts (`--oracle majority`).
    WrongOutput,
}

impl Outcome {
    /// Every outcome, in display order.
    pub const ALL: [Outcome; 8] = [
        Outcome::Pass,
        Outcome::Fail,
        Outcome::WrongOutput,
        Outcome::Crash,
        Outcome::Timeout,
        Outcome::Slow,
        Outcome::Leak,
        Outcome::SpawnError,
    ];

    /// Whether this outcome counts as a failure of the target (fail, wrong output, crash,
    /// timeout). Leaks and spawn errors are counted on their own; a slow attempt is no evidence.
    pub fn is_failure(self) -> bool {
        matches!(self, Outcome::Fail | Outcome::WrongOutput | Outcome::Crash | Outcome::Timeout)
    }

    /// Whether the attempt says anything about the target: every outcome but `slow` (ended by
    /// flakehunt's own limit while still at work), which no rate counts.
    pub fn is_evidence(self) -> bool {
        self != Outcome::Slow
    }

    /// The name used in the record and the tables.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Crash => "crash",
            Outcome::Timeout => "timeout",
            Outcome::Slow => "slow",
            Outcome::Leak => "leak",
            Outcome::SpawnError => "spawn-error",
            Outcome::WrongOutput => "wrong-output",
        }
    }
}

/// How an attempt's process started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// A new process: exec, interpreter start-up, imports (every attempt before `--warm` existed).
    #[default]
    Cold,
    /// A fork of a warm parent that had imported the target already (`--warm`).
    Warm,
}

impl Mode {
    /// The name used in the record and the tables.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Cold => "cold",
            Mode::Warm => "warm",
        }
    }
}

/// How a limit flakehunt derived (the adaptive hunt's hang rule) applied to one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HangCheck {
    /// The limit, in seconds from the attempt's start.
    pub limit: f64,
    /// Set when the attempt reached the limit: whether its processes were idle then (no CPU
    /// time and no output over the last part of the limit, none runnable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<bool>,
    /// When it was idle at the limit before any hang of its cell was confirmed: the much longer
    /// limit it was let run to, a hang counting only if it stayed idle until then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm_limit: Option<f64>,
}

/// What a profile measured on one attempt. Every field is optional: each mechanism fills its own.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Effect {
    /// The CPU list the child really had (`Cpus_allowed_list`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<String>,
    /// Which mechanism applied (e.g. `cgroup-v2`, `cgroup-v1`, `duty-cycle`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mechanism: Option<String>,
    /// Share of one CPU the attempt's processes got (1.0 = one full CPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_share: Option<f64>,
    /// CPU seconds the competing noise used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_cpu_seconds: Option<f64>,
    /// Periods in which a cgroup quota throttled the attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled: Option<u64>,
    /// Scheduling policy read back (`idle`, `other`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// Nice value read back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nice: Option<i32>,
    /// Pauses delivered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pauses: Option<u64>,
    /// Total length of the pauses, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_seconds: Option<f64>,
    /// The switch interval a Python child reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch_interval: Option<f64>,
    /// Delays the jitter library injected (processes that exited normally).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_delays: Option<u64>,
    /// Environment variables the profile set (runtime hints and its own `env`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub hints: BTreeMap<String, String>,
    /// Why the profile had no effect on this attempt, if it had none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inert: Option<String>,
}

impl Effect {
    /// Whether nothing was measured or set.
    pub fn is_empty(&self) -> bool {
        *self == Effect::default()
    }
}

/// One attempt, one line of `attempts.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    /// Position in the plan; unique within a hunt and stable across resume, shards and merge.
    pub id: u64,
    /// The cell's name.
    pub cell: String,
    /// The attempt's number within its cell, from 1 (`FLAKEHUNT_ITERATION`).
    pub iteration: u64,
    /// RFC 3339 start time.
    pub started_at: String,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// How it ended.
    pub outcome: Outcome,
    /// Exit code, when it exited.
    pub exit_code: Option<i32>,
    /// Signal that ended it, when one did.
    pub signal: Option<i32>,
    /// How flakehunt ended it on timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination: Option<Termination>,
    /// The last bytes of stdout (lossy UTF-8).
    pub stdout_tail: String,
    /// The last bytes of stderr (lossy UTF-8).
    pub stderr_tail: String,
    /// Bytes written to stdout in all.
    #[serde(default)]
    pub stdout_bytes: u64,
    /// Bytes written to stderr in all.
    #[serde(default)]
    pub stderr_bytes: u64,
    /// Hash of the whole stdout (past the capture cap), after `--ignore` masking: what
    /// `--oracle majority` compares in the analysis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout_hash: Option<String>,
    /// What an oracle beyond the exit code decided, e.g. `fail-if matched: WARNING: DATA RACE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oracle: Option<String>,
    /// Processes it left behind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leaked: Vec<LeakedProcess>,
    /// What the profile measured.
    #[serde(default, skip_serializing_if = "Effect::is_empty")]
    pub effect: Effect,
    /// The failure's signature, for failures.
    pub signature: Option<String>,
    /// Fire: the worker that ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<u32>,
    /// Fire: the ladder level (0 is the sequential reference).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<u32>,
    /// Matrix: why the attempt ran (`confirm`, `minimize`); absent for the plan's own attempts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Logs kept for this attempt, relative to the record directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
    /// One-minute load average when the attempt ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<f64>,
    /// Why it could not be started, for spawn errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// CPU seconds of the attempt's process and the descendants it waited for (wait4's
    /// rusage): how CPU-bound the target is, which the adaptive hunt's calibration sizes its
    /// CPU quota by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_seconds: Option<f64>,
    /// Suite: why the attempt ran, the tests in the order they ran and each test's result, so
    /// that any failing order can be replayed from the record alone. Records of other kinds,
    /// and those written before suites existed, have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite: Option<Box<AttemptTests>>,
    /// How its process started; records written before warm attempts existed read as cold.
    #[serde(default)]
    pub mode: Mode,
    /// What the checks of failures the exit status hides found (leaked goroutines and their
    /// stacks...): each made the attempt fail.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<Finding>,
    /// Set when this is the attempt's second run: its first, warm, lost flakehunt's own helper
    /// (the warm parent died while it ran, as said here), which is no result of the target's, so
    /// it was run again cold and only this run is recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun: Option<String>,
    /// The hang limit flakehunt derived for it, when one applied (absent under the user's
    /// `--timeout`, and in records written before the hang rule recorded it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hang: Option<HangCheck>,
}
