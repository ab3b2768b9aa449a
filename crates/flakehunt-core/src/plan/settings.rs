//! How a hunt runs its attempts: counts, parallelism, limits and stop rules. Main type:
//! [`Settings`].

use std::str::FromStr;

use serde::{Deserialize, Serialize};

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
    /// Time between SIGTERM and SIGKILL.
    pub grace_seconds: f64,
    /// Bytes kept per stream for the logs.
    pub capture_bytes: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            runs: 100,
            jobs: 1,
            until_fails: None,
            budget_seconds: None,
            timeout_seconds: 600.0,
            grace_seconds: 2.0,
            capture_bytes: 1 << 20,
        }
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
