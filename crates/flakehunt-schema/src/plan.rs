//! What a plan is made of, as the manifest records it: its cells (the conditions to run the
//! target under) and its settings (counts, limits, shards, warm attempts, checks).

use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::checks::Checks;
use super::profile::Profile;

/// One setting of an overlay: what a matrix dimension (or the user) changes for a cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Setting {
    /// An environment variable set (`Some`) or removed (`None`).
    Env {
        /// Variable name.
        name: String,
        /// Its value, or `None` to unset it.
        value: Option<String>,
    },
    /// A resource limit (soft; the hard limit is raised only as far as allowed).
    Rlimit {
        /// Resource name (`nofile`).
        name: String,
        /// The limit; `None` is unlimited.
        value: Option<u64>,
    },
    /// A `{name}` placeholder in the argv.
    Placeholder {
        /// Placeholder name.
        name: String,
        /// Replacement.
        value: String,
    },
}

impl Setting {
    /// The dimension this setting belongs to.
    pub fn name(&self) -> &str {
        match self {
            Setting::Env { name, .. } | Setting::Rlimit { name, .. } | Setting::Placeholder { name, .. } => name,
        }
    }

    /// The value as users write it (`unset`, `unlimited` for the absent cases).
    pub fn value_text(&self) -> String {
        match self {
            Setting::Env { value: Some(v), .. } | Setting::Placeholder { value: v, .. } => v.clone(),
            Setting::Env { value: None, .. } => "unset".into(),
            Setting::Rlimit { value: Some(v), .. } => v.to_string(),
            Setting::Rlimit { value: None, .. } => "unlimited".into(),
        }
    }
}

/// A cell as recorded in the manifest: a profile (sweep), an overlay (matrix), or a level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellSpec {
    /// Unique name within the hunt.
    pub name: String,
    /// The scheduling profile, for sweep cells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<Profile>,
    /// The environment overlay, for matrix cells.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overlay: Vec<Setting>,
}

impl CellSpec {
    /// A sweep cell running `profile`.
    pub fn for_profile(profile: Profile) -> Self {
        Self { name: profile.name.clone(), profile: Some(profile), overlay: Vec::new() }
    }
}

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
    #[serde(default, skip_serializing_if = "Checks::is_none")]
    pub checks: Checks,
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

impl Settings {
    /// Whether the timeout is one the user asked for (see [`Self::timeout_given`]).
    pub fn user_timeout(&self) -> bool {
        self.timeout_given.unwrap_or(self.timeout_seconds != Self::default().timeout_seconds)
    }
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
            checks: Checks::default(),
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
