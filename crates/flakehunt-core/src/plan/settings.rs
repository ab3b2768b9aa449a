//! How a hunt runs its attempts: counts, parallelism, limits and stop rules. Main type:
//! [`Settings`].

use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::bounds::{self, BoundError, Machine};

/// The plan's numbers, as recorded in the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Attempts per cell.
    pub runs: u64,
    /// Attempts at once.
    pub jobs: u32,
    /// Stop a cell after this many failures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_fails: Option<u64>,
    /// Stop starting attempts after this many seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_seconds: Option<f64>,
    /// Per-attempt timeout.
    pub timeout_seconds: f64,
    /// Whether the user gave the timeout (`--timeout`): an attempt at work when flakehunt's
    /// default one is reached is slow, at the user's it is a timeout. Records written before
    /// this was kept say nothing: their timeout was the user's when it is not the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_given: Option<bool>,
    /// Time between SIGTERM and SIGKILL.
    pub grace_seconds: f64,
    /// Bytes kept per stream for the logs.
    pub capture_bytes: u64,
    /// Warm attempts (Python targets), when on: a resumed hunt runs warm too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm: Option<WarmPlan>,
    /// The checks of failures the exit status hides that were on (none in records written
    /// before they existed): a resumed hunt runs them too, and shards of other checks do not merge.
    #[serde(default, skip_serializing_if = "crate::checks::Checks::is_none")]
    pub checks: crate::checks::Checks,
}

/// How a hunt's warm attempts run (`--warm`, `[warm]` in `flakehunt.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WarmPlan {
    /// A new warm parent, with a new `PYTHONHASHSEED`, after this many attempts (0: never).
    pub recycle_after: u64,
    /// Every Nth attempt of a cell runs cold, to compare the two modes (0: none).
    #[serde(default)]
    pub cold_every: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            runs: 100,
            jobs: 1,
            until_fails: None,
            budget_seconds: None,
            timeout_seconds: 600.0,
            timeout_given: None,
            grace_seconds: 2.0,
            capture_bytes: 1 << 20,
            warm: None,
            checks: crate::checks::Checks::default(),
        }
    }
}

/// The plan's durations, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Durations {
    /// Per-attempt timeout.
    pub timeout: Duration,
    /// Time between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Stop starting attempts after this long.
    pub budget: Option<Duration>,
}

impl Settings {
    /// Whether the timeout is one the user asked for (see [`Self::timeout_given`]).
    pub fn user_timeout(&self) -> bool {
        self.timeout_given.unwrap_or(self.timeout_seconds != Self::default().timeout_seconds)
    }

    /// Checks the numbers as a manifest holds them, which an edited or damaged record can make
    /// anything JSON allows (a negative or huge timeout, zero jobs, a billion workers), and
    /// returns its durations. Each error names the manifest's field.
    pub fn check(&self) -> Result<Durations, BoundError> {
        let field = |what: &str, value: String, why: &str| BoundError { what: what.into(), value, why: why.into() };
        if self.runs == 0 {
            return Err(field("runs", "0".into(), "at least 1"));
        }
        if self.jobs == 0 {
            return Err(field("jobs", "0".into(), "at least 1"));
        }
        Machine::get().check_workers("jobs", u64::from(self.jobs))?;
        bounds::check_runs("runs", self.runs)?;
        let timeout = bounds::seconds("timeout_seconds", self.timeout_seconds)?;
        if timeout.is_zero() {
            return Err(field("timeout_seconds", "0".into(), "must be longer than 0"));
        }
        let grace = bounds::seconds("grace_seconds", self.grace_seconds)?;
        let budget = self.budget_seconds.map(|b| bounds::seconds("budget_seconds", b)).transpose()?;
        Ok(Durations { timeout, grace, budget })
    }
}

/// Which part of a plan a machine runs: shard `index` of `count`, from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// This shard, 1..=count.
    pub index: u32,
    /// Number of shards.
    pub count: u32,
}

impl Shard {
    /// Whether the attempt with plan position `id` belongs to this shard.
    pub fn owns(self, id: u64) -> bool {
        id % u64::from(self.count) == u64::from(self.index - 1)
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("invalid shard '{s}': write I/N with 1 <= I <= N, e.g. 2/8");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (i.trim().parse::<u32>().map_err(|_| bad())?, n.trim().parse::<u32>().map_err(|_| bad())?);
        if index == 0 || count == 0 || index > count {
            return Err(bad());
        }
        Ok(Self { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}
/// Parses `1MiB`, `4096`, `64KiB`, `2MB`.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| format!("invalid size '{s}': write e.g. 4096, 64KiB, 1MiB"))?;
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1000,
        "kib" => 1 << 10,
        "m" | "mb" => 1_000_000,
        "mib" => 1 << 20,
        "g" | "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        _ => return Err(format!("invalid size unit in '{s}': use B, KiB, MiB or GiB")),
    };
    n.checked_mul(mult).ok_or_else(|| format!("size '{s}' is too large"))
}
