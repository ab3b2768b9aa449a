//! Warm against cold attempts: the failure rate of each mode, over the hunt and per cell where
//! both ran, and whether failures were met only cold (a start-up race: warm attempts skip the
//! interpreter's start-up and the imports, so they cannot meet it). Main type: [`ModeSummary`].

use std::collections::BTreeMap;

use super::stats::{fisher_exact_two_sided, format_p, format_rate};
use crate::record::{Attempt, Mode};
pub use crate::schema::summary::{CellModes, ModeRate, ModeSummary};

/// A mode's failures as the sentence writes them (`3/40 (7.5%)`).
fn rate_text(r: &ModeRate) -> String {
    format!("{}/{} ({})", r.failures, r.attempts, format_rate(r.rate))
}

/// Attempts by cell and mode, as the record is read.
#[derive(Debug, Default)]
pub struct ModeTally {
    by_cell: BTreeMap<String, (ModeRate, ModeRate)>,
    rerun: u64,
}

impl ModeTally {
    /// Counts one attempt (a slow one is no evidence, and is not counted).
    pub fn add(&mut self, attempt: &Attempt) {
        if !attempt.outcome.is_evidence() {
            return;
        }
        let (warm, cold) = self.by_cell.entry(attempt.cell.clone()).or_default();
        let failed = u64::from(attempt.outcome.is_failure());
        self.rerun += u64::from(attempt.rerun.is_some());
        match attempt.mode {
            Mode::Warm => warm.add(1, failed),
            Mode::Cold => cold.add(1, failed),
        }
    }

    /// The comparison, when any attempt ran warm (a hunt of cold attempts only has none), and
    /// the sentence the reports show.
    pub fn summary(&self) -> Option<(ModeSummary, String)> {
        let mut s = ModeSummary::default();
        for (cell, (warm, cold)) in &self.by_cell {
            for (total, part) in [(&mut s.warm, warm), (&mut s.cold, cold)] {
                total.add(part.attempts, part.failures);
            }
            if warm.attempts > 0 && cold.attempts > 0 {
                let only_cold = cold.failures > 0 && warm.failures == 0;
                s.cells.push(CellModes { cell: cell.clone(), warm: *warm, cold: *cold, only_cold });
            }
        }
        if s.warm.attempts == 0 && self.rerun == 0 {
            return None;
        }
        s.rerun = self.rerun;
        let rerun = match self.rerun {
            0 => String::new(),
            n => format!(
                "; {n} attempt{} ran again cold because the warm parent died while {} ran (flakehunt's helper, not the target)",
                if n == 1 { "" } else { "s" },
                if n == 1 { "it" } else { "they" }
            ),
        };
        if s.cold.attempts == 0 {
            let note = format!(
                "all {} attempts ran warm (forks of an interpreter that had imported the target): a failure at start-up cannot show in them; --no-warm runs them cold",
                s.warm.attempts
            );
            return Some((s, note));
        }
        let (w, c) = (s.warm, s.cold);
        let p = fisher_exact_two_sided(w.failures, w.attempts - w.failures, c.failures, c.attempts - c.failures);
        s.p_value = Some(p);
        s.only_cold = c.failures > 0 && w.failures == 0;
        let mut note =
            format!("warm attempts failed {}, cold attempts {} ({}){rerun}", rate_text(&w), rate_text(&c), format_p(p));
        if s.only_cold {
            note.push_str(
                ": failures appear only in cold attempts, a start-up race (interpreter start, imports) that warm attempts skip; hunt it with --no-warm",
            );
        }
        Some((s, note))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Outcome;

    fn attempt(cell: &str, mode: Mode, outcome: Outcome) -> Attempt {
        let line = serde_json::json!({
            "id": 0, "cell": cell, "iteration": 1, "started_at": "2024-01-01T00:00:00Z", "seconds": 0.1,
            "outcome": outcome, "exit_code": 0, "signal": null, "stdout_tail": "", "stderr_tail": "",
            "signature": null, "mode": mode,
        });
        serde_json::from_value(line).unwrap()
    }

    #[test]
    fn cold_only_records_have_no_comparison() {
        let mut t = ModeTally::default();
        t.add(&attempt("a", Mode::Cold, Outcome::Fail));
        assert!(t.summary().is_none());
    }

    #[test]
    fn a_failure_met_only_cold_is_called_a_start_up_race() {
        let mut t = ModeTally::default();
        for i in 0..20 {
            t.add(&attempt("a", Mode::Warm, Outcome::Pass));
            t.add(&attempt("b", Mode::Warm, Outcome::Pass));
            if i % 4 == 0 {
                t.add(&attempt("a", Mode::Cold, if i % 8 == 0 { Outcome::Fail } else { Outcome::Pass }));
            }
        }
        let (s, note) = t.summary().unwrap();
        assert_eq!((s.warm.attempts, s.warm.failures, s.cold.attempts, s.cold.failures), (40, 0, 5, 3));
        assert!(s.only_cold);
        assert_eq!(s.cells.len(), 1, "only cell a ran both modes");
        assert_eq!((s.cells[0].cold.failures, s.cells[0].warm.attempts, s.cells[0].only_cold), (3, 20, true));
        assert!(note.contains("only in cold attempts") && note.contains("3/5 (60.0%)"), "{note}");
    }

    #[test]
    fn attempts_run_again_after_the_warm_parent_died_are_counted_and_said() {
        let mut t = ModeTally::default();
        t.add(&attempt("a", Mode::Warm, Outcome::Pass));
        let mut again = attempt("a", Mode::Cold, Outcome::Pass);
        again.rerun = Some("the warm parent died (killed by SIGKILL)".into());
        t.add(&again);
        let (s, note) = t.summary().unwrap();
        assert_eq!((s.rerun, s.cold.attempts, s.cold.failures), (1, 1, 0));
        assert!(note.ends_with("1 attempt ran again cold because the warm parent died while it ran (flakehunt's helper, not the target)"), "{note}");
    }

    #[test]
    fn failures_in_both_modes_are_compared_without_the_race() {
        let mut t = ModeTally::default();
        t.add(&attempt("a", Mode::Warm, Outcome::Fail));
        t.add(&attempt("a", Mode::Cold, Outcome::Fail));
        let (s, note) = t.summary().unwrap();
        assert!(!s.only_cold && s.p_value.is_some());
        assert!(note.starts_with("warm attempts failed 1/1"), "{note}");
        // An older record's attempt (no `mode`) reads as cold.
        let old: Attempt = serde_json::from_str(
            r#"{"id":0,"cell":"a","iteration":1,"started_at":"x","seconds":0,"outcome":"pass","exit_code":0,"signal":null,"stdout_tail":"","stderr_tail":"","signature":null}"#,
        )
        .unwrap();
        assert_eq!(old.mode, Mode::Cold);
    }
}
