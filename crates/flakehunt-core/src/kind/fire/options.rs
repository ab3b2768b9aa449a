//! What a fire hunt was asked to do, as recorded in the manifest's `extra`, so that `report`
//! can rebuild the ladder's summary from the record alone. Main type: [`FireOptions`].

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Ladder;

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

/// The cell name of the sequential reference for `runs` invocations.
pub fn reference_cell(runs: u64) -> String {
    format!("reference-{runs}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn planned_runs_count_one_reference_per_run_count() {
        let options = FireOptions {
            ladder: "2x10,4x10,8x40".parse().unwrap(),
            state: None,
            ignore: vec![],
            ignore_columns: vec![],
            checks: vec![],
            trace_tokens: false,
            all_levels: false,
            keep: false,
            follow_outside_links: false,
        };
        assert_eq!(options.planned_runs(1), 20);
        assert_eq!(options.planned_runs(2), 30);
        assert_eq!(options.planned_runs(3), 110);
        let json = serde_json::to_value(&options).unwrap();
        assert_eq!(
            json["ladder"],
            serde_json::json!([{"workers": 2, "runs": 10}, {"workers": 4, "runs": 10}, {"workers": 8, "runs": 40}])
        );
        assert_eq!(FireOptions::from_extra(&json), Some(options));
    }
}
