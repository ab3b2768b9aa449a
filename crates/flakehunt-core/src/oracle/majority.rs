//! `--oracle majority`: an attempt that exited 0 but printed another stdout than the most common
//! one is `wrong-output`. The majority is only known once every attempt is in, so it is decided
//! here, in the analysis, from the stdout hashes in the record: the live summary, `report` and
//! merged shards all judge the same way. Main type: [`Outputs`].

use std::collections::BTreeMap;

use crate::record::{Attempt, Outcome};
pub use crate::schema::oracle::OutputSummary;

/// Distinct outputs beyond this many are counted, not listed.
const MAX_OUTPUTS: usize = 256;
/// Attempt ids listed per output.
const MAX_IDS: usize = 50;

/// The reason and signature of a minority output.
pub const REASON: &str = "stdout differs from the majority output";

/// The distinct outputs of the attempts that exited 0, counted.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    by_hash: BTreeMap<String, OutputSummary>,
    other: u64,
}

impl Outputs {
    /// Whether the majority oracle judges this attempt: it exited 0 and its stdout was hashed.
    pub fn eligible(a: &Attempt) -> bool {
        matches!(a.outcome, Outcome::Pass | Outcome::Leak) && a.stdout_hash.is_some()
    }

    /// Counts one attempt (first pass over the record).
    pub fn add(&mut self, a: &Attempt) {
        let Some(hash) = a.stdout_hash.as_ref().filter(|_| Self::eligible(a)) else { return };
        if self.by_hash.len() >= MAX_OUTPUTS && !self.by_hash.contains_key(hash) {
            self.other += 1;
            return;
        }
        let entry = self.by_hash.entry(hash.clone()).or_insert_with(|| OutputSummary {
            hash: hash.clone(),
            first_attempt: a.id,
            example: a.stdout_tail.clone(),
            ..Default::default()
        });
        entry.count += 1;
        if a.id < entry.first_attempt {
            entry.first_attempt = a.id;
            entry.example.clone_from(&a.stdout_tail);
        }
        if entry.attempts.len() < MAX_IDS {
            entry.attempts.push(a.id);
        }
    }

    /// The most common output's hash; a tie goes to the output seen first (lowest attempt id),
    /// so the choice does not depend on the order shards were merged in.
    /// When every attempt printed its own output there is no majority to judge by (volatile
    /// parts not masked, most likely): none then.
    pub fn majority(&self) -> Option<&str> {
        let top =
            self.by_hash.values().max_by(|a, b| a.count.cmp(&b.count).then(b.first_attempt.cmp(&a.first_attempt)))?;
        (top.count > 1 || self.by_hash.len() == 1).then_some(top.hash.as_str())
    }

    /// Sentences for the summary when the majority is weak or missing.
    pub fn notes(&self) -> Vec<String> {
        let total: u64 = self.by_hash.values().map(|o| o.count).sum::<u64>() + self.other;
        let top = self.by_hash.values().map(|o| o.count).max().unwrap_or(0);
        if total > 1 && self.majority().is_none() {
            return vec![format!(
                "--oracle majority: each of the {total} attempts that exited 0 printed a different stdout, so no attempt was judged: mask the volatile parts (pids, times, addresses) with --ignore REGEX"
            )];
        }
        if total > 0 && top * 2 <= total {
            return vec![format!(
                "--oracle majority: the most common stdout was printed by only {top} of {total} attempts: a weak majority; check the distinct outputs, or mask volatile parts with --ignore REGEX"
            )];
        }
        Vec::new()
    }

    /// Marks an attempt whose output is not the majority's as `wrong-output` (second pass).
    pub fn judge(&self, a: &mut Attempt) {
        Self::judge_by(self.majority(), a);
    }

    /// [`Self::judge`] against a majority found once for the whole record.
    pub fn judge_by(majority: Option<&str>, a: &mut Attempt) {
        let Some(majority) = majority else { return };
        if Self::eligible(a) && a.stdout_hash.as_deref() != Some(majority) {
            a.outcome = Outcome::WrongOutput;
            a.oracle = Some(REASON.to_owned());
            a.signature = Some(crate::signature::of_oracle(Outcome::WrongOutput, a.exit_code, REASON));
        }
    }

    /// The distinct outputs, most common first, the majority marked; ids listed only for the
    /// minority outputs.
    pub fn summary(&self) -> Vec<OutputSummary> {
        let majority = self.majority().map(str::to_owned);
        let mut out: Vec<OutputSummary> = self
            .by_hash
            .values()
            .map(|o| {
                let is_majority = majority.as_deref() == Some(o.hash.as_str());
                let mut o = o.clone();
                o.majority = is_majority;
                o.attempts.sort_unstable();
                if is_majority {
                    o.attempts.clear();
                }
                o
            })
            .collect();
        out.sort_by(|a, b| b.count.cmp(&a.count).then(a.first_attempt.cmp(&b.first_attempt)));
        if self.other > 0 {
            out.push(OutputSummary { hash: "(other outputs)".into(), count: self.other, ..Default::default() });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(id: u64, outcome: Outcome, hash: &str) -> Attempt {
        let line = format!(
            r#"{{"id":{id},"cell":"default","iteration":{id},"started_at":"","seconds":0.1,"outcome":"{}","exit_code":0,"signal":null,"stdout_tail":"{hash}","stderr_tail":"","signature":null,"stdout_hash":"{hash}"}}"#,
            outcome.name()
        );
        serde_json::from_str(&line).unwrap()
    }

    #[test]
    fn minority_outputs_become_wrong_output() {
        let attempts = [
            attempt(0, Outcome::Pass, "a"),
            attempt(1, Outcome::Pass, "b"),
            attempt(2, Outcome::Pass, "a"),
            attempt(3, Outcome::Fail, "c"),
        ];
        let mut outputs = Outputs::default();
        attempts.iter().for_each(|a| outputs.add(a));
        assert_eq!(outputs.majority(), Some("a"));
        let judged: Vec<Outcome> = attempts
            .iter()
            .map(|a| {
                let mut a = a.clone();
                outputs.judge(&mut a);
                a.outcome
            })
            .collect();
        assert_eq!(judged, [Outcome::Pass, Outcome::WrongOutput, Outcome::Pass, Outcome::Fail]);
        let s = outputs.summary();
        assert_eq!((s[0].hash.as_str(), s[0].count, s[0].majority), ("a", 2, true));
        assert_eq!((s[1].hash.as_str(), s[1].count, s[1].attempts.clone()), ("b", 1, vec![1]));
    }

    #[test]
    fn all_distinct_outputs_judge_nothing_and_say_why() {
        let mut outputs = Outputs::default();
        outputs.add(&attempt(0, Outcome::Pass, "x"));
        outputs.add(&attempt(1, Outcome::Pass, "y"));
        assert_eq!(outputs.majority(), None);
        let mut a = attempt(1, Outcome::Pass, "y");
        outputs.judge(&mut a);
        assert_eq!(a.outcome, Outcome::Pass);
        assert!(outputs.notes()[0].contains("--ignore"));
    }

    #[test]
    fn a_tie_goes_to_the_first_output() {
        let mut outputs = Outputs::default();
        outputs.add(&attempt(5, Outcome::Pass, "late"));
        outputs.add(&attempt(2, Outcome::Pass, "early"));
        outputs.add(&attempt(7, Outcome::Pass, "late"));
        outputs.add(&attempt(3, Outcome::Pass, "early"));
        assert_eq!(outputs.majority(), Some("early"));
        assert!(outputs.notes()[0].contains("weak majority"));
    }
}
