//! What a suite's classification cost against the suite's own plain run, and whether its runs
//! went side by side (the summary's `cost`); computed from the record by
//! [`super::side_by_side::cost_of`]. Main type: [`ClassificationCost`].

use serde::{Deserialize, Serialize};

use super::TestId;

/// What the classification cost (`cost` in the summary).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassificationCost {
    /// Seconds of the suite's plain run: the median shuffled attempt of the baseline cell, plus,
    /// when those ran warm, the collection (a cold run's interpreter start, imports and
    /// collection, which a fork skips).
    pub plain_run: f64,
    /// Wall seconds of the classification's runs, from the first one's start to the last one's end.
    pub seconds: f64,
    /// Its runs (the side-by-side check's included).
    pub runs: u64,
    /// `seconds / plain_run`.
    pub ratio: f64,
    /// The most of its runs seen running at once, the side-by-side check's apart (its copies
    /// and the run of every test twice, which run at once to make the check).
    pub at_once: u64,
    /// The check that the suite's tests tolerate running beside themselves, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side_by_side: Option<SideBySide>,
    /// Why its runs went one at a time whatever the suite's tests do (no side-by-side check ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_at_a_time: Option<String>,
    /// Wall seconds of the state search's runs (pytest), when it ran: after the classification,
    /// one run per set of polluters or state-setters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_search: Option<f64>,
}

/// The suite run beside itself: copies of one of its shuffled attempts at once, beside the run
/// of every test twice in one process when the runner has one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SideBySide {
    /// Copies of the attempt run at once.
    pub copies: u64,
    /// The run of every test twice in one process ran beside them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repeat_all: bool,
    /// The shuffled attempt they copied.
    pub attempt: u64,
    /// The tests that passed in that attempt and failed, or did not report, in a copy: empty
    /// when the suite tolerates running beside itself (the classification's runs then went side
    /// by side).
    pub failed: Vec<TestId>,
}

impl ClassificationCost {
    /// With the state search's `runs` (each once, though several findings name it).
    pub fn with_state_search(mut self, runs: &[&super::state::SearchRun]) -> Self {
        let mut seen = Vec::new();
        let mut seconds = 0.0;
        for run in runs {
            if !seen.contains(&run.id) {
                seen.push(run.id);
                seconds += run.seconds;
            }
        }
        self.state_search = (!seen.is_empty()).then(|| round(seconds));
        self
    }

    /// The note the summary carries: `classification: 46 runs in 9.8 s, 6.4x the suite's plain
    /// run (1.53 s), up to 2 at once (the suite ran beside itself clean)`.
    pub fn note(&self) -> String {
        let runs = if self.runs == 1 { "1 run".to_owned() } else { format!("{} runs", self.runs) };
        let mut text = format!(
            "classification: {runs} in {:.1} s, {:.1}x the suite's plain run ({:.2} s)",
            self.seconds, self.ratio, self.plain_run
        );
        let beside = |s: &SideBySide| {
            let copies = if s.copies == 1 { "a copy".to_owned() } else { format!("{} copies", s.copies) };
            match s.repeat_all {
                true => format!("{copies} of attempt {} beside the run of every test twice", s.attempt),
                false => format!("{copies} of attempt {} at once", s.attempt),
            }
        };
        match &self.side_by_side {
            Some(s) if s.failed.is_empty() => text.push_str(&format!(
                ", up to {} at once (the suite ran clean beside itself: {})",
                self.at_once,
                beside(s)
            )),
            Some(s) => {
                let mut names: Vec<&str> = s.failed.iter().take(3).map(String::as_str).collect();
                let more = s.failed.len().saturating_sub(names.len());
                let more = if more > 0 { format!(" and {more} more") } else { String::new() };
                names.sort_unstable();
                text.push_str(&format!(
                    ", one at a time: beside itself ({}) the suite failed {}{more}, which passed alone (a shared file or port, or a flaky test)",
                    beside(s),
                    names.join(", ")
                ));
            }
            None => {}
        }
        if let Some(why) = &self.one_at_a_time {
            text.push_str(&format!(", one at a time: {why}"));
        }
        if let Some(seconds) = self.state_search {
            text.push_str(&format!("; then the state search {seconds:.1} s"));
        }
        text
    }
}

pub(crate) fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}
