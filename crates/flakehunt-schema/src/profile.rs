//! Scheduling profiles as cells record them: a name and the mechanisms it composes.

use std::collections::BTreeMap;

use serde::{de::Error as _, Deserialize, Deserializer, Serialize};

/// A named profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// The name users select it by.
    pub name: String,
    /// One line on what it does.
    pub summary: String,
    /// The mechanisms it composes.
    pub knobs: Knobs,
}

impl Profile {
    /// Whether this profile is the baseline (changes nothing).
    pub fn is_default(&self) -> bool {
        Knobs { description: None, ..self.knobs.clone() } == Knobs::default()
    }

    /// Whether the profile only makes sense for Python targets.
    pub fn is_python_only(&self) -> bool {
        let k = &self.knobs;
        k.python_switch_interval.is_some()
            && Knobs { python_switch_interval: None, description: None, ..k.clone() } == Knobs::default()
    }

    /// The profile that changes nothing.
    pub fn default_profile() -> Self {
        Self { name: "default".into(), summary: "nothing changed: the baseline".into(), knobs: Knobs::default() }
    }
}

/// Every mechanism a profile can use; unset means "leave as is".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Knobs {
    /// What the profile is for, shown by `flakehunt profiles` (not a mechanism).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Pin the process tree to this many CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<u32>,
    /// With `cpus`: tell runtimes (Go, OpenMP, rayon, tokio, JVM) the unpinned CPU count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_hints: Option<bool>,
    /// CPU quota in percent of one CPU (cgroup, else a SIGSTOP/SIGCONT duty cycle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_quota: Option<f64>,
    /// Nice value for the process tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nice: Option<i32>,
    /// Scheduling policy for the process tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<Policy>,
    /// Busy competitor threads on the attempt's CPUs for its lifetime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_threads: Option<u32>,
    /// Random SIGSTOP/SIGCONT pauses of the process group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause: Option<Pause>,
    /// Environment variables to set.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Resource limits by name (`nofile = 256`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rlimits: BTreeMap<String, u64>,
    /// Python: `sys.setswitchinterval` value in seconds, through a generated `sitecustomize`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python_switch_interval: Option<f64>,
    /// Native code: preload the jitter library, delaying this share of intercepted calls
    /// (mutexes, condition variables, yield, read/write, nanosleep) by a yield or 1-20 us.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<f64>,
    /// With `jitter`: every delay sleeps `[MIN, MAX]` microseconds instead of a yield or 1-20 us.
    /// A yield may take no time; a sleep takes at least its length, so a window is surely widened.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "sleep_range")]
    pub jitter_sleep_us: Option<[u64; 2]>,
    /// Run this many attempts of the cell at once (concurrent copies of the target), as plain
    /// parallel re-running does. A matter of scheduling, not of the launch: the plan starts the
    /// copies (see `profile::ProfileEnv::copies_scheduled`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copies: Option<u32>,
}

/// `[MIN, MAX]`, with a message that says so for any other number of values.
fn sleep_range<'de, D: Deserializer<'de>>(d: D) -> Result<Option<[u64; 2]>, D::Error> {
    let values = Vec::<u64>::deserialize(d)?;
    let n = values.len();
    <[u64; 2]>::try_from(values).map(Some).map_err(|_| {
        D::Error::custom(format!("jitter-sleep-us takes [MIN, MAX] microseconds, e.g. [20, 50], not {n} value(s)"))
    })
}

/// Scheduling policies a profile can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// `SCHED_IDLE`: runs only when nothing else wants the CPU (falls back to nice 19).
    Idle,
    /// `SCHED_OTHER`, the default.
    Other,
}

/// Chaos pauses: after a random gap of 0..`every_max_ms`, stop the group for
/// `min_ms..=max_ms`, repeat until the attempt ends. Milliseconds with fractions (`0.2` is
/// 200 us): a 20 ms test needs pauses and gaps well under a millisecond to be paused inside its
/// life. The stopper draws them in whole microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct Pause {
    /// Shortest pause.
    pub min_ms: f64,
    /// Longest pause.
    pub max_ms: f64,
    /// Longest gap between pauses.
    pub every_max_ms: f64,
}

impl Default for Pause {
    fn default() -> Self {
        Self { min_ms: 1.0, max_ms: 50.0, every_max_ms: 100.0 }
    }
}
