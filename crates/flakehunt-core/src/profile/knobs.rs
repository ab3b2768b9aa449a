//! The primitive mechanisms a profile composes, as written in `flakehunt.toml`. Main type:
//! [`Knobs`].

use std::collections::BTreeMap;

use serde::{de::Error as _, Deserialize, Deserializer, Serialize};

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
    /// copies (see [`crate::profile::ProfileEnv::copies_scheduled`]).
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

/// The longest jitter sleep a profile may ask for (one second): longer would stall, not jitter.
pub const MAX_JITTER_SLEEP_US: u64 = 1_000_000;

/// The shortest pause a profile may ask for, in milliseconds (50 us): the stopper ends a pause
/// with a timed wait, which the kernel's default timer slack (50 us) may lengthen by as much, so a
/// shorter pause would be mostly slack. Delivered lengths are measured and recorded either way.
pub const MIN_PAUSE_MS: f64 = 0.05;

/// The most concurrent copies a profile may ask for.
pub const MAX_COPIES: u32 = 1024;

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

impl Knobs {
    /// Checks values that parse but make no sense; the message names the key and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        if self.cpus == Some(0) {
            return Err("cpus must be at least 1".into());
        }
        if let Some(q) = self.cpu_quota {
            if !(q > 0.0 && q <= 100.0 * 1024.0) {
                return Err(format!("cpu-quota = {q}: give a percentage of one CPU above 0, e.g. 15"));
            }
        }
        // 0 (one per CPU) and u32::MAX (one per two CPUs) are counts the profile derives itself.
        if let Some(n) = self.noise_threads.filter(|&n| n != 0 && n != u32::MAX) {
            crate::bounds::Machine::get().check_noise_threads(u64::from(n)).map_err(|e| e.to_string())?;
        }
        if let Some(n) = self.nice {
            if !(-20..=19).contains(&n) {
                return Err(format!("nice = {n}: allowed -20 to 19"));
            }
        }
        if let Some(p) = self.pause {
            if !(p.min_ms >= MIN_PAUSE_MS && p.min_ms <= p.max_ms && p.max_ms.is_finite()) {
                return Err(format!(
                    "pause: min-ms ({}) must be at least {MIN_PAUSE_MS} and at most max-ms ({})",
                    p.min_ms, p.max_ms
                ));
            }
            if !(p.every_max_ms >= 0.0 && p.every_max_ms.is_finite()) {
                return Err(format!("pause: every-max-ms ({}) must be 0 or more", p.every_max_ms));
            }
        }
        if let Some(n) = self.copies {
            if !(1..=MAX_COPIES).contains(&n) {
                return Err(format!("copies = {n}: give 1 to {MAX_COPIES} concurrent copies of the target"));
            }
        }
        if let Some(s) = self.python_switch_interval {
            if !(s > 0.0 && s <= 1.0) {
                return Err(format!("python-switch-interval = {s}: give seconds above 0, e.g. 1e-6"));
            }
        }
        if let Some(r) = self.jitter {
            if !(r > 0.0 && r <= 1.0) {
                return Err(format!(
                    "jitter = {r}: give the share of calls to delay, above 0 and at most 1, e.g. 0.05"
                ));
            }
        }
        if let Some([min, max]) = self.jitter_sleep_us {
            if self.jitter.is_none() {
                return Err(
                    "jitter-sleep-us needs jitter = RATE, the share of calls to delay (1 delays every call)".into()
                );
            }
            if !(min >= 1 && min <= max && max <= MAX_JITTER_SLEEP_US) {
                return Err(format!(
                    "jitter-sleep-us = [{min}, {max}]: give [MIN, MAX] microseconds, 1 <= MIN <= MAX <= {MAX_JITTER_SLEEP_US}, e.g. [20, 50]"
                ));
            }
        }
        for (name, value) in &self.env {
            if name.is_empty() || name.contains(['=', '\0']) {
                return Err(format!("env name {name:?}: a variable name cannot be empty or hold '=' or a NUL byte"));
            }
            if value.contains('\0') {
                return Err(format!("env {name} holds a NUL byte, which no program can be given: remove it"));
            }
        }
        for name in self.rlimits.keys() {
            if crate::exec::Resource::from_name(name).is_none() {
                let known: Vec<&str> = crate::exec::Resource::ALL.iter().map(|r| r.name()).collect();
                return Err(format!("unknown rlimit '{name}': allowed {}", known.join(", ")));
            }
        }
        Ok(())
    }
}
