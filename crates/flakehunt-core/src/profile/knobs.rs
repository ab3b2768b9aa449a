//! The primitive mechanisms a profile composes, as written in `flakehunt.toml`. Main type:
//! [`Knobs`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Every mechanism a profile can use; unset means "leave as is".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Knobs {
    /// Pin the process tree to this many CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<u32>,
    /// With `cpus`: tell runtimes (Go, OpenMP, rayon, tokio, JVM) the unpinned CPU count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_hints: Option<bool>,
    /// Nice value for the process tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nice: Option<i32>,
    /// Environment variables to set.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Resource limits by name (`nofile = 256`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rlimits: BTreeMap<String, u64>,
}
