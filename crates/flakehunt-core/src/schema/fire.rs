//! A fire hunt's part of the record: its options (the ladder, the state, the checks), each
//! level's report, and its part of the summary.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// One rung: `workers` processes at once sharing `runs` invocations in total.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Level {
    /// Worker threads, each running one invocation at a time.
    pub workers: u32,
    /// Invocations in total, shared by the workers.
    pub runs: u64,
}

impl Level {
    /// The level's name as users write it, `8x40`; also its cell name in the record.
    pub fn name(self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.workers, self.runs)
    }
}

/// The levels in the order they run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ladder(pub Vec<Level>);

impl fmt::Display for Ladder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self.0.iter().map(|l| l.name()).collect();
        f.write_str(&names.join(","))
    }
}

/// The parameters of a fire hunt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FireOptions {
    /// The levels, in order.
    pub ladder: Ladder,
    /// The user's state directory (never modified); `None` runs in empty sandboxes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<PathBuf>,
    /// `--ignore` regexes masking volatile text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore: Vec<String>,
    /// `--ignore-column TABLE.COLUMN`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore_columns: Vec<String>,
    /// `--check` invariants, run with `sh -c` in the sandbox after each level and reference.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
    /// Give every run a `FLAKEHUNT_TOKEN` and check that each passing run's token is in the
    /// state exactly once.
    #[serde(default)]
    pub trace_tokens: bool,
    /// Keep climbing after a rejected level.
    #[serde(default)]
    pub all_levels: bool,
    /// Keep the sandboxes in the record (`sandboxes/`) instead of removing them.
    #[serde(default)]
    pub keep: bool,
    /// Copy what a symlink in the state that leads outside it points to, instead of refusing
    /// the state (`--follow-outside-links`).
    #[serde(default)]
    pub follow_outside_links: bool,
}

impl FireOptions {
    /// The options of a manifest's `extra`, or `None` when it holds none (not a fire record).
    pub fn from_extra(extra: &serde_json::Value) -> Option<Self> {
        serde_json::from_value(extra.clone()).ok()
    }

    /// Invocations the hunt plans when it climbs the first `levels` levels: theirs plus one
    /// sequential reference per distinct run count.
    pub fn planned_runs(&self, levels: usize) -> u64 {
        let mut seen = Vec::new();
        let mut total = 0;
        for level in self.ladder.0.iter().take(levels) {
            if !seen.contains(&level.runs) {
                seen.push(level.runs);
                total += level.runs;
            }
            total += level.runs;
        }
        total
    }
}
