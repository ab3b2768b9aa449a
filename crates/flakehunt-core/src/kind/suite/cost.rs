//! What a suite's classification cost against the suite's own plain run, and whether its runs
//! went side by side (the summary's `cost`, a type of the schema): its note. Computed from the
//! record by [`super::side_by_side::cost_of`]. Main type: [`ClassificationCost`].

pub use crate::schema::suite::{ClassificationCost, SideBySide};

impl ClassificationCost {
    /// With the state search's `runs` (each once, though several findings name it).
    pub fn with_state_search(mut self, runs: &[&crate::schema::suite::SearchRun]) -> Self {
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
