//! `matrix --against SNAPSHOT` in the record: the other machine's differences it searches, how
//! each is applied here, and those it could not try.

use serde::{Deserialize, Serialize};

/// How flakehunt makes this machine look like the other in one difference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Change {
    /// Set an environment variable (`None`: unset it).
    Env {
        /// The variable.
        name: String,
        /// Its value there.
        value: Option<String>,
    },
    /// Set a soft resource limit (`None`: unlimited).
    Rlimit {
        /// The resource (`nofile`).
        name: String,
        /// The soft limit there.
        value: Option<u64>,
    },
    /// Pin to this many CPUs (runtimes size their thread pools from it, as they do there).
    Cpus {
        /// CPUs there.
        count: u32,
    },
}

/// One applicable difference: a dimension of the search.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dimension {
    /// Its group (`environment`, `limits`, `locale-time`, ...): groups are searched first.
    pub group: String,
    /// What differs (`TZ`, `nofile`, `CPUs`).
    pub name: String,
    /// This machine's value (`None`: unset here).
    pub here: Option<String>,
    /// The other machine's.
    pub there: Option<String>,
    /// How it is applied.
    pub change: Change,
}

/// A difference that could not be tried here, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Untried {
    /// Its group.
    pub group: String,
    /// What differs.
    pub name: String,
    /// This machine's value.
    pub here: Option<String>,
    /// The other machine's.
    pub there: Option<String>,
    /// Why it cannot be applied here, and what to do instead.
    pub why: Option<String>,
}

/// What a `matrix --against` records in its manifest: the other machine, the differences it
/// searches (its dimensions) and those it could not try.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Against {
    /// The snapshot, as given.
    pub snapshot: String,
    /// The other machine's host name.
    #[serde(default)]
    pub host: Option<String>,
    /// When its snapshot was taken.
    #[serde(default)]
    pub captured_at: Option<String>,
    /// The applicable differences, in their groups' order.
    pub dimensions: Vec<Dimension>,
    /// The differences that could not be tried here.
    #[serde(default)]
    pub untried: Vec<Untried>,
    /// What to do about groups that could not be tried (a scratch virtualenv's pip line).
    #[serde(default)]
    pub remedies: Vec<String>,
}
