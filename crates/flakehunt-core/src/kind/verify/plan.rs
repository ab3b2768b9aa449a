//! A verification's plan: the static schedule of its conditions, with the adaptive hunt's hang
//! rule, so that an attempt that hangs after the fix is judged at a limit derived from the
//! attempts of its cell that passed, started the same way, and not at the full `--timeout`;
//! and an attempt a limit of flakehunt's own ended while still at work (`slow`, no evidence) is
//! run again, so that it neither shortens the proof nor counts in it. Main type: [`VerifyPlan`].

use std::collections::BTreeSet;
use std::time::Duration;

use crate::exec::HangLimit;
use crate::kind::adaptive::{confirm_limit, hang_timeout, p99_rank, MIN_PASSED, SLOW_GROWTH};
use crate::plan::{AttemptLimits, AttemptSpec, CellSpec, Next, Plan, Schedule};
use crate::record::{Attempt, Mode, Outcome};

/// What the hang rule knows of one cell in one mode.
#[derive(Debug, Clone, Default)]
struct Timing {
    /// Wall seconds of its passed attempts (a verification's cells run a few hundred at most).
    passed: Vec<f64>,
    /// The longest attempt of it ended as slow.
    slowest: f64,
}

impl Timing {
    /// The limit an attempt of this cell and mode is judged at, once [`MIN_PASSED`] of its
    /// attempts passed: [`hang_timeout`] of their 99th percentile, at least [`SLOW_GROWTH`]
    /// times its slowest attempt ended as slow.
    fn limit(&self) -> Option<Duration> {
        if self.passed.len() < MIN_PASSED {
            return None;
        }
        let mut sorted = self.passed.clone();
        sorted.sort_by(f64::total_cmp);
        let limit = hang_timeout(sorted[p99_rank(sorted.len())]);
        Some(limit.max(Duration::from_secs_f64((SLOW_GROWTH * self.slowest).min(1e9))))
    }
}

/// The plan of a verification: [`Schedule`] plus the hang rule and the re-run of slow attempts.
pub struct VerifyPlan {
    inner: Schedule,
    /// The hang rule applies: the user gave no `--timeout` (theirs is a failure they defined).
    judge: bool,
    /// Per cell, warm then cold.
    timing: Vec<[Timing; 2]>,
    /// Per cell: a hang of it stayed idle until the longer limit, so later ones count at the limit.
    hang_confirmed: Vec<bool>,
    /// Per cell: runs `copies = N` attempts together, which one attempt run again alone would not.
    batched: Vec<bool>,
    /// The schedule's attempts: ids from it on are re-runs of slow ones.
    total: u64,
    /// Per cell: the most re-runs it may get (as many as its planned attempts).
    reruns_left: Vec<u64>,
    /// Re-runs to issue (an id, the cell).
    pending: BTreeSet<(u64, usize)>,
    /// Ids recorded or issued, so that a resumed verification does not run one twice.
    seen: BTreeSet<u64>,
    /// Ids issued and not yet observed.
    flying: BTreeSet<u64>,
}

impl VerifyPlan {
    /// The plan of `manifest`, a verify record's.
    pub fn new(manifest: &crate::record::Manifest) -> Self {
        let n = manifest.cells.len();
        let batched = manifest.cells.iter().map(|c| crate::plan::widest_copies(std::slice::from_ref(c)) > 1).collect();
        Self {
            inner: crate::plan::schedule(manifest),
            judge: !manifest.plan.user_timeout(),
            timing: vec![Default::default(); n],
            hang_confirmed: vec![false; n],
            batched,
            total: manifest.plan.runs.saturating_mul(n as u64),
            reruns_left: vec![manifest.plan.runs; n],
            pending: BTreeSet::new(),
            seen: BTreeSet::new(),
            flying: BTreeSet::new(),
        }
    }

    /// The re-run of attempt `id`: `id + total`, unique whichever shard runs it (the schedule's
    /// ids are below `total`, a re-run's re-run is `id + 2 total`), and owned by the shard that
    /// ran the slow attempt.
    fn rerun_of(&self, id: u64) -> u64 {
        id.saturating_add(self.total)
    }

    fn hang_limit(&self, cell: usize, mode: usize) -> Option<HangLimit> {
        let limit = self.timing.get(cell)?[mode].limit()?;
        Some(HangLimit { limit, confirm: (!self.hang_confirmed[cell]).then(|| confirm_limit(limit)) })
    }
}

fn mode_index(mode: Mode) -> usize {
    match mode {
        Mode::Warm => 0,
        Mode::Cold => 1,
    }
}

impl Plan for VerifyPlan {
    fn cells(&self) -> &[CellSpec] {
        self.inner.cells()
    }

    fn next(&mut self) -> Next {
        // A re-run starts when nothing else runs, as the attempt it replaces did (one at a time).
        if self.flying.is_empty() {
            if let Some((id, cell)) = self.pending.pop_first() {
                self.flying.insert(id);
                self.seen.insert(id);
                let n = self.inner.cells().len().max(1) as u64;
                return Next::Run(AttemptSpec { id, cell, iteration: id / n + 1, phase: None, cold: false });
            }
        }
        match self.inner.next() {
            Next::Run(spec) => {
                self.flying.insert(spec.id);
                self.seen.insert(spec.id);
                Next::Run(spec)
            }
            Next::Done if !self.pending.is_empty() || !self.flying.is_empty() => Next::Wait,
            other => other,
        }
    }

    fn observe(&mut self, attempt: &Attempt) {
        self.inner.observe(attempt);
        self.flying.remove(&attempt.id);
        self.seen.insert(attempt.id);
        self.pending.retain(|&(id, _)| id != attempt.id);
        let Some(cell) = self.inner.cells().iter().position(|c| c.name == attempt.cell) else { return };
        let timing = &mut self.timing[cell][mode_index(attempt.mode)];
        match attempt.outcome {
            Outcome::Pass => timing.passed.push(attempt.seconds),
            Outcome::Slow => {
                timing.slowest = timing.slowest.max(attempt.seconds);
                let rerun = self.rerun_of(attempt.id);
                if !self.batched[cell] && self.reruns_left[cell] > 0 && !self.seen.contains(&rerun) {
                    self.reruns_left[cell] -= 1;
                    self.pending.insert((rerun, cell));
                }
            }
            o if o.is_failure() && attempt.hang.and_then(|h| h.idle) == Some(true) => self.hang_confirmed[cell] = true,
            _ => {}
        }
    }

    fn planned(&self) -> u64 {
        self.inner.planned()
            + self.seen.iter().filter(|&&id| id >= self.total).count() as u64
            + self.pending.len() as u64
    }

    fn limits(&self, cell: usize) -> AttemptLimits {
        if !self.judge {
            return AttemptLimits::default();
        }
        AttemptLimits { warm: self.hang_limit(cell, 0), cold: self.hang_limit(cell, 1), end_with_budget: false }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(runs: u64) -> crate::record::Manifest {
        let settings = crate::plan::Settings { runs, jobs: 1, ..Default::default() };
        serde_json::from_value(serde_json::json!({
            "format_version": 1, "tool_version": "t", "kind": "verify", "run_id": "r",
            "target": crate::plan::Target::argv(vec!["true".into()]), "plan": settings,
            "cells": [crate::kind::adaptive::record::baseline_cell()], "seed": 1, "host": "h", "started_at": "2026-12-01T12:00:00.000Z",
            "shard": null, "oracle": null, "extra": {}, "redacted": false, "withheld": false,
        }))
        .unwrap()
    }

    fn ended(spec: &AttemptSpec, outcome: &str, seconds: f64) -> Attempt {
        serde_json::from_value(serde_json::json!({
            "id": spec.id, "cell": "default", "iteration": spec.iteration, "started_at": "",
            "seconds": seconds, "outcome": outcome, "exit_code": 0,
            "signal": null, "stdout_tail": "", "stderr_tail": "",
        }))
        .unwrap()
    }

    #[test]
    fn a_slow_attempt_is_run_again_once_and_the_hang_rule_follows_the_passes() {
        let mut plan = VerifyPlan::new(&manifest(4));
        assert_eq!(plan.limits(0).cold, None, "no pass yet: only --timeout bounds an attempt");
        let mut ran = Vec::new();
        while let Next::Run(spec) = plan.next() {
            // The second attempt is cut while at work, and so is its re-run; the rest pass.
            let outcome = if spec.iteration == 2 || spec.iteration == 6 { "slow" } else { "pass" };
            plan.observe(&ended(&spec, outcome, 0.5));
            ran.push((spec.id, spec.iteration, outcome));
        }
        assert_eq!(
            ran,
            [(0, 1, "pass"), (1, 2, "slow"), (5, 6, "slow"), (9, 10, "pass"), (2, 3, "pass"), (3, 4, "pass")],
            "each slow attempt is run again, with an iteration and an id of its own"
        );
        let limit = plan.limits(0).cold.unwrap();
        assert_eq!(limit.limit, Duration::from_secs(10), "twenty times the passes' 99th percentile");
        assert!(limit.confirm.is_some(), "a first hang runs longer before it counts");
        // A resumed plan that saw the same attempts runs nothing again.
        let mut resumed = VerifyPlan::new(&manifest(4));
        for (id, iteration, outcome) in &ran {
            let spec = AttemptSpec { id: *id, cell: 0, iteration: *iteration, phase: None, cold: false };
            resumed.observe(&ended(&spec, outcome, 0.5));
        }
        assert_eq!(resumed.next(), Next::Done);
    }

    #[test]
    fn the_limit_waits_for_enough_passes_and_grows_past_a_slow_attempt() {
        let mut t = Timing { passed: vec![0.1, 0.1], ..Timing::default() };
        assert_eq!(t.limit(), None, "two passes say little about the tail");
        t.passed.push(0.2);
        assert_eq!(t.limit(), Some(Duration::from_secs(4)), "twenty times the slowest pass");
        t.slowest = 3.0;
        assert_eq!(t.limit(), Some(Duration::from_secs(12)), "four times the slow attempt");
    }
}
