//! What a suite's classification cost against the suite's own plain run, and whether its runs
//! went side by side (the summary's `cost`, a type of the schema): its note. Computed from the
//! record by [`super::side_by_side::cost_of`]. Main type: [`ClassificationCost`].

pub use crate::schema::suite::{ClassificationCost, SideBySide};

/// The classification's cost with the state search's time added.
pub trait StateSearchCost {
    /// With the state search's `runs` (each once, though several findings name it).
    fn with_state_search(self, runs: &[&crate::schema::suite::SearchRun]) -> Self;
}

impl StateSearchCost for ClassificationCost {
    fn with_state_search(mut self, runs: &[&crate::schema::suite::SearchRun]) -> Self {
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
}

pub(crate) fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}
