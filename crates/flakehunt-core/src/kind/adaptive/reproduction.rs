//! What an adaptive hunt's record says about reproduction: the cell that first failed twice,
//! how long that took from the hunt's start and how many attempts ran until then, the
//! confirmation against the baseline, and what was tried. Streaming, like the tally, so
//! `summary.json`'s `"reproduction"` comes from the record alone. Main type: [`AdaptiveTally`].

use std::collections::BTreeSet;

use crate::record::{Attempt, Outcome};
pub use crate::schema::adaptive::{ConfirmCounts, Reproduction, Tried};

/// One failure of the cell that failed twice, before it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// How it failed.
    pub outcome: Outcome,
    /// Its signature.
    pub signature: Option<String>,
    /// It hung at a limit flakehunt derived (no CPU, no output), rather than past `--timeout`.
    pub hung: bool,
}

/// What a hunt's record concludes, from its confirmation alone: exploration chose the arm
/// because it failed, so its two failures cannot show on their own that it is the condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finding {
    /// No cell failed twice, or the cell that did never failed that way again in confirmation
    /// nor under the baseline: nothing the target gives by itself was seen.
    NotReproduced,
    /// The failure is the target's own: the plain target failed twice, or the failure that
    /// failed twice under an arm appeared again (its signature) in confirmation or under the
    /// baseline, without confirmation singling the arm out.
    Flaky,
    /// Confirmation showed the arm fails more than the baseline (p < alpha on fresh attempts),
    /// and the arm's mechanism took effect.
    ConditionSensitive,
}

/// Distinct signatures kept per kind of attempt: a failure that prints a unique value every
/// time cannot grow memory without bound.
const MAX_SIGNATURES: usize = 256;

/// The test of a confirmation: whether the cell fails more often than the baseline.
pub trait ConfirmTest {
    /// Two-sided Fisher exact p on these attempts alone.
    fn p_value(&self) -> f64;

    /// Whether the cell fails more often than the baseline, at `alpha`.
    fn confirmed(&self, alpha: f64) -> bool;
}

impl ConfirmTest for ConfirmCounts {
    fn p_value(&self) -> f64 {
        crate::analysis::stats::fisher_exact_two_sided(
            self.cell_failures,
            self.cell_attempts - self.cell_failures,
            self.base_failures,
            self.base_attempts - self.base_failures,
        )
    }

    fn confirmed(&self, alpha: f64) -> bool {
        self.p_value() < alpha && self.cell_failures * self.base_attempts > self.base_failures * self.cell_attempts
    }
}

/// The baseline cell's name.
pub const BASELINE: &str = "default";

/// Attempts of a hunt, added in record order (already judged by the oracles, so a wrong output
/// counts as the failure it is).
#[derive(Debug, Clone, Default)]
pub struct AdaptiveTally {
    started: Option<f64>,
    recorded: u64,
    seconds: f64,
    tried: Vec<Tried>,
    reproduction: Option<Reproduction>,
    confirm: ConfirmCounts,
    /// Failures of each cell before it failed twice, kept for the cell that does.
    failures: Vec<(String, Vec<Failure>)>,
    /// The reproducing cell's failures.
    reproducing: Vec<Failure>,
    /// Signatures of the baseline's failures (every phase) and of confirmation's (either side).
    baseline_signatures: BTreeSet<String>,
    confirm_signatures: BTreeSet<String>,
    /// Confirmation attempts ended as slow.
    confirm_slow: u64,
}

impl AdaptiveTally {
    /// A tally for a hunt that started at `started_at` (RFC 3339, the manifest's).
    pub fn new(started_at: &str) -> Self {
        Self { started: crate::analysis::tally::unix_seconds(started_at), ..Self::default() }
    }

    /// Counts one attempt.
    pub fn add(&mut self, a: &Attempt) {
        self.recorded += 1;
        let end = match (self.started, crate::analysis::tally::unix_seconds(&a.started_at)) {
            (Some(start), Some(began)) => (began - start + a.seconds).max(0.0),
            // Without times, the attempts' own lengths (as if run one after another).
            _ => self.seconds + a.seconds,
        };
        self.seconds = self.seconds.max(end);
        let failed = a.outcome.is_failure();
        let signature = || a.signature.clone().unwrap_or_else(|| a.outcome.name().to_owned());
        if failed && a.cell == BASELINE && self.baseline_signatures.len() < MAX_SIGNATURES {
            self.baseline_signatures.insert(signature());
        }
        if a.phase.as_deref() == Some(crate::kind::adaptive::CONFIRM) {
            if !a.outcome.is_evidence() {
                self.confirm_slow += 1;
                return;
            }
            if failed && self.confirm_signatures.len() < MAX_SIGNATURES {
                self.confirm_signatures.insert(signature());
            }
            if let Some(r) = &self.reproduction {
                if a.cell == r.cell {
                    self.confirm.cell_attempts += 1;
                    self.confirm.cell_failures += u64::from(failed);
                } else if a.cell == BASELINE {
                    self.confirm.base_attempts += 1;
                    self.confirm.base_failures += u64::from(failed);
                }
            }
            return;
        }
        let i = match self.tried.iter().position(|t| t.cell == a.cell) {
            Some(i) => i,
            None => {
                self.tried.push(Tried { cell: a.cell.clone(), attempts: 0, failures: 0, slow: 0 });
                self.tried.len() - 1
            }
        };
        let t = &mut self.tried[i];
        if !a.outcome.is_evidence() {
            t.slow += 1;
            return;
        }
        t.attempts += 1;
        t.failures += u64::from(failed);
        if failed && self.reproduction.is_none() {
            let failure = Failure {
                outcome: a.outcome,
                signature: a.signature.clone(),
                hung: a.hang.is_some_and(|h| h.idle == Some(true)),
            };
            match self.failures.iter_mut().find(|(cell, _)| *cell == a.cell) {
                Some((_, v)) => v.push(failure),
                None => self.failures.push((a.cell.clone(), vec![failure])),
            }
        }
        if t.failures == 2 && self.reproduction.is_none() {
            self.reproduction = Some(Reproduction { cell: a.cell.clone(), seconds: end, attempts: self.recorded });
            let i = self.failures.iter().position(|(cell, _)| *cell == a.cell);
            self.reproducing = i.map(|i| self.failures.swap_remove(i).1).unwrap_or_default();
            self.failures = Vec::new();
        }
    }

    /// The reproducing cell's failures, before it failed twice.
    pub fn reproducing(&self) -> &[Failure] {
        &self.reproducing
    }

    /// Whether a failure of the reproducing cell's kind (its signature) appeared again in
    /// confirmation, on either side, or under the baseline at any time.
    pub fn echoed(&self) -> bool {
        self.reproducing.iter().any(|f| {
            let sig = f.signature.clone().unwrap_or_else(|| f.outcome.name().to_owned());
            self.confirm_signatures.contains(&sig) || self.baseline_signatures.contains(&sig)
        })
    }

    /// Whether a failure of the reproducing cell's kind appeared under the baseline (any phase).
    pub fn seen_under_baseline(&self) -> bool {
        self.reproducing.iter().any(|f| {
            self.baseline_signatures.contains(&f.signature.clone().unwrap_or_else(|| f.outcome.name().to_owned()))
        })
    }

    /// Confirmation attempts ended as slow (no evidence; each was run again).
    pub fn confirm_slow(&self) -> u64 {
        self.confirm_slow
    }

    /// What the record concludes: see [`Finding`]. `inert`: the reproducing cell's mechanism
    /// had no effect here, so it cannot be the condition.
    pub fn finding(&self, alpha: f64, inert: bool) -> Finding {
        let Some(r) = &self.reproduction else { return Finding::NotReproduced };
        if r.cell == BASELINE {
            return Finding::Flaky;
        }
        let c = self.confirm;
        let shown = c.cell_attempts > 0 && c.base_attempts > 0 && c.confirmed(alpha);
        if shown && !inert {
            Finding::ConditionSensitive
        } else if self.echoed() {
            Finding::Flaky
        } else {
            Finding::NotReproduced
        }
    }

    /// The reproduction, once a cell failed twice.
    pub fn reproduction(&self) -> Option<&Reproduction> {
        self.reproduction.as_ref()
    }

    /// The confirmation attempts so far (all zero before a reproduction).
    pub fn confirmation(&self) -> ConfirmCounts {
        self.confirm
    }

    /// Replaces the confirmation counts with the plan's, which stopped at its stop rule.
    pub fn set_confirmation(&mut self, counts: ConfirmCounts) {
        self.confirm = counts;
    }

    /// Every cell's attempts outside confirmation, in the order they first ran.
    pub fn tried(&self) -> &[Tried] {
        &self.tried
    }

    /// Attempts recorded.
    pub fn attempts(&self) -> u64 {
        self.recorded
    }

    /// Seconds from the hunt's start to the end of its latest attempt.
    pub fn seconds(&self) -> f64 {
        self.seconds
    }
}

impl AdaptiveTally {
    /// The tally of shards, each a hunt of its own (`--shard`), joined: what they tried summed;
    /// the shards that reproduced under the same cell pooled (their confirmations are fresh
    /// attempts of that cell against the baseline, independent of each other, so their counts
    /// add up to one test), the earliest of their reproductions kept; and among cells the
    /// shards reproduced under, the one whose pooled confirmation is strongest (the smallest p;
    /// then the most shards; then the first). Next to it, what the other shards reproduced
    /// under, as `(cell, shards)`: an interleaving of shards' attempts is no hunt, so joining
    /// them as one would find a cell failing twice across two hunts.
    pub fn join(shards: Vec<AdaptiveTally>) -> (AdaptiveTally, Vec<(String, usize)>) {
        let mut joined = AdaptiveTally::default();
        // Per cell reproduced under: the pooled part and how many shards.
        let mut by_cell: Vec<(AdaptiveTally, usize)> = Vec::new();
        for shard in shards {
            joined.started = match (joined.started, shard.started) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            joined.recorded += shard.recorded;
            joined.seconds = joined.seconds.max(shard.seconds);
            for t in &shard.tried {
                match joined.tried.iter_mut().find(|j| j.cell == t.cell) {
                    Some(j) => {
                        (j.attempts, j.failures, j.slow) =
                            (j.attempts + t.attempts, j.failures + t.failures, j.slow + t.slow)
                    }
                    None => joined.tried.push(t.clone()),
                }
            }
            for (cell, failures) in &shard.failures {
                match joined.failures.iter_mut().find(|(c, _)| c == cell) {
                    Some((_, f)) => f.extend(failures.iter().cloned()),
                    None => joined.failures.push((cell.clone(), failures.clone())),
                }
            }
            for (into, from) in [
                (&mut joined.baseline_signatures, &shard.baseline_signatures),
                (&mut joined.confirm_signatures, &shard.confirm_signatures),
            ] {
                into.extend(from.iter().take(MAX_SIGNATURES.saturating_sub(into.len())).cloned());
            }
            joined.confirm_slow += shard.confirm_slow;
            let Some(r) = shard.reproduction.clone() else { continue };
            match by_cell.iter_mut().find(|(t, _)| t.reproduction.as_ref().is_some_and(|p| p.cell == r.cell)) {
                Some((pooled, n)) => {
                    *n += 1;
                    let c = &mut pooled.confirm;
                    c.cell_attempts += shard.confirm.cell_attempts;
                    c.cell_failures += shard.confirm.cell_failures;
                    c.base_attempts += shard.confirm.base_attempts;
                    c.base_failures += shard.confirm.base_failures;
                    pooled.reproducing.extend(shard.reproducing.iter().cloned());
                    if pooled.reproduction.as_ref().is_some_and(|p| r.seconds < p.seconds) {
                        pooled.reproduction = Some(r);
                    }
                }
                None => by_cell.push((shard, 1)),
            }
        }
        let strength = |t: &AdaptiveTally| {
            let c = t.confirm;
            if c.cell_attempts > 0 && c.base_attempts > 0 {
                c.p_value()
            } else {
                1.0
            }
        };
        // The strongest first; `sort_by` is stable, so ties keep the shards' order.
        by_cell.sort_by(|(a, n), (b, m)| strength(a).total_cmp(&strength(b)).then(m.cmp(n)));
        let mut others = Vec::new();
        let mut cells = by_cell.into_iter();
        if let Some((lead, _)) = cells.next() {
            // Single failures elsewhere are rumours only while nothing reproduced.
            joined.failures = Vec::new();
            joined.reproduction = lead.reproduction;
            joined.confirm = lead.confirm;
            joined.reproducing = lead.reproducing;
        }
        for (t, n) in cells {
            if let Some(r) = t.reproduction {
                others.push((r.cell, n));
            }
        }
        (joined, others)
    }
}

/// The reproduction in `attempts` (record order) of a hunt started at `started_at`, or `None`.
pub fn reproduction(started_at: &str, attempts: &[Attempt]) -> Option<Reproduction> {
    let mut t = AdaptiveTally::new(started_at);
    attempts.iter().for_each(|a| t.add(a));
    t.reproduction
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An attempt record for tests: `cell`, started `at` seconds after 12:00:00, lasting
    /// `seconds`, failing or not, in `phase`.
    pub(crate) fn attempt(id: u64, cell: &str, at: f64, seconds: f64, fail: bool, phase: Option<&str>) -> Attempt {
        let millis = (at * 1000.0).round() as u64;
        let mut a: Attempt = serde_json::from_value(serde_json::json!({
            "id": id, "cell": cell, "iteration": id + 1,
            "started_at": format!("2026-12-01T12:{:02}:{:02}.{:03}Z", millis / 60_000, millis / 1000 % 60, millis % 1000),
            "seconds": seconds, "outcome": if fail { "fail" } else { "pass" }, "exit_code": i32::from(fail),
            "signal": null, "stdout_tail": "", "stderr_tail": "",
        }))
        .unwrap();
        a.phase = phase.map(str::to_owned);
        a
    }

    pub(crate) const START: &str = "2026-12-01T12:00:00.000Z";

    #[test]
    fn the_first_cell_to_fail_twice_is_the_reproduction() {
        let attempts = [
            attempt(0, "default", 0.0, 0.5, false, Some("calibrate")),
            attempt(1, "pause=2ms/10ms", 0.5, 0.5, true, None),
            attempt(2, "cpu-starved=10", 1.0, 2.0, true, None),
            attempt(3, "default", 3.0, 0.5, true, None),
            attempt(4, "cpu-starved=10", 3.5, 2.25, true, None),
            attempt(5, "pause=2ms/10ms", 5.75, 0.5, true, None),
        ];
        let r = reproduction(START, &attempts).unwrap();
        assert_eq!(r, Reproduction { cell: "cpu-starved=10".into(), seconds: 5.75, attempts: 5 });
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            serde_json::json!({"cell": "cpu-starved=10", "seconds": 5.75, "attempts": 5})
        );
        assert_eq!(reproduction(START, &attempts[..4]), None);
    }

    #[test]
    fn confirmation_counts_only_confirmation_attempts_of_the_cell_and_the_baseline() {
        let mut t = AdaptiveTally::new(START);
        let mut at = 0.0;
        let mut id = 0;
        let mut add = |t: &mut AdaptiveTally, cell: &str, fail: bool, phase: Option<&str>| {
            t.add(&attempt(id, cell, at, 0.1, fail, phase));
            id += 1;
            at += 0.1;
        };
        add(&mut t, "noisy=x2", true, None);
        add(&mut t, "noisy=x2", true, None);
        for i in 0..10 {
            add(&mut t, "noisy=x2", i % 2 == 0, Some("confirm"));
            add(&mut t, "default", false, Some("confirm"));
        }
        let c = t.confirmation();
        assert_eq!(c, ConfirmCounts { cell_attempts: 10, cell_failures: 5, base_attempts: 10, base_failures: 0 });
        // 5/10 against 0/10: p = 0.0325 (R: fisher.test(matrix(c(5,5,0,10),2))).
        assert!((c.p_value() - 0.0325).abs() < 1e-3, "{}", c.p_value());
        assert!(!c.confirmed(0.01) && c.confirmed(0.05));
        assert_eq!(t.tried(), [Tried { cell: "noisy=x2".into(), attempts: 2, failures: 2, slow: 0 }]);
        assert_eq!(t.attempts(), 22);
        assert!((t.seconds() - 2.2).abs() < 1e-6, "{}", t.seconds());
    }

    #[test]
    fn without_start_times_the_lengths_add_up() {
        let mut a = attempt(0, "default", 0.0, 1.5, true, None);
        a.started_at = String::new();
        let mut b = a.clone();
        b.id = 1;
        let r = reproduction("", &[a, b]).unwrap();
        assert_eq!((r.cell.as_str(), r.seconds, r.attempts), ("default", 3.0, 2));
    }
}
