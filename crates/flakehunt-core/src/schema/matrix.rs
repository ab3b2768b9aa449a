//! A matrix hunt's part of the record: its dimensions, and its part of the summary.

use serde::{Deserialize, Serialize};

/// What a dimension changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DimensionKind {
    /// An environment variable (`unset` removes it).
    Env,
    /// A resource limit (`unlimited` allowed).
    Rlimit,
    /// A `{name}` placeholder in the argv.
    Placeholder,
}

/// One dimension of the grid; its first value is the baseline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dimension {
    /// Variable, limit or placeholder name.
    pub name: String,
    /// What it changes.
    pub kind: DimensionKind,
    /// Its values as written (`unset`, `unlimited` included).
    pub values: Vec<String>,
}
