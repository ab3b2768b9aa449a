//! The static plan: every cell `runs` times, interleaved in seeded shuffled rounds. Main type:
//! [`Schedule`].

use super::{AttemptSpec, CellSpec, Next, Plan, Rng, Shard};
use crate::record::Attempt;

/// Cells x runs, in rounds: each round runs every cell once, in an order shuffled per round from
/// the seed. Compared with one shuffle of all attempts, rounds keep the cells balanced over time
/// (blocked randomisation), so a machine that drifts (a neighbour starts a build, the CPU
/// throttles) hits every cell alike instead of biasing whichever cell happened to cluster late.
#[derive(Debug)]
pub struct Schedule {
    cells: Vec<CellSpec>,
    runs: u64,
    seed: u64,
    until_fails: Option<u64>,
    shard: Option<Shard>,
    /// Ids already run, one bit per planned attempt: a set of ids would grow by ten bytes and
    /// more per attempt, and the hunt's memory must not grow with its length.
    done: Vec<u64>,
    failures: Vec<u64>,
    /// `--oracle majority` with `--until-fails`: the stdouts seen so far, to count a wrong
    /// output as a failure while the hunt runs (the final judgement is the analysis's).
    outputs: Option<RunningMajority>,
    round: u64,
    order: Vec<usize>,
    pos: usize,
}

impl Schedule {
    /// A plan of `runs` attempts of every cell.
    pub fn new(cells: Vec<CellSpec>, runs: u64, seed: u64) -> Self {
        let n = cells.len();
        Self {
            cells,
            runs,
            seed,
            until_fails: None,
            shard: None,
            done: Vec::new(),
            failures: vec![0; n],
            outputs: None,
            round: 0,
            order: Vec::new(),
            pos: 0,
        }
    }

    /// Stops issuing a cell's attempts once it failed `k` times.
    pub fn until_fails(mut self, k: Option<u64>) -> Self {
        self.until_fails = k;
        self
    }

    /// Counts an attempt whose stdout differs from the majority formed so far as a failure for
    /// `--until-fails` (`--oracle majority`).
    pub fn majority(mut self, on: bool) -> Self {
        self.outputs = on.then(RunningMajority::default);
        self
    }

    /// Keeps only this shard's attempts.
    pub fn shard(mut self, shard: Option<Shard>) -> Self {
        self.shard = shard;
        self
    }

    /// Number of attempts the plan holds for this shard (before stop rules).
    pub fn planned(&self) -> u64 {
        let total = self.runs * self.cells.len() as u64;
        match self.shard {
            None => total,
            Some(s) => (0..total).filter(|&id| s.owns(id)).count() as u64,
        }
    }

    fn is_done(&self, id: u64) -> bool {
        self.done.get((id / 64) as usize).is_some_and(|word| word & (1 << (id % 64)) != 0)
    }

    fn mark_done(&mut self, id: u64) {
        // The plan never issues ids past its size; ignoring them keeps a damaged record from
        // sizing the bitmap.
        if id >= self.runs.saturating_mul(self.cells.len() as u64) {
            return;
        }
        let word = (id / 64) as usize;
        if word >= self.done.len() {
            self.done.resize(word + 1, 0);
        }
        self.done[word] |= 1 << (id % 64);
    }

    fn start_round(&mut self) {
        self.round += 1;
        self.order = (0..self.cells.len()).collect();
        Rng::stream(self.seed, self.round).shuffle(&mut self.order);
        self.pos = 0;
    }
}

impl Plan for Schedule {
    fn cells(&self) -> &[CellSpec] {
        &self.cells
    }

    fn next(&mut self) -> Next {
        loop {
            if self.pos >= self.order.len() {
                if self.round >= self.runs || self.cells.is_empty() {
                    return Next::Done;
                }
                self.start_round();
            }
            let cell = self.order[self.pos];
            let id = (self.round - 1) * self.cells.len() as u64 + self.pos as u64;
            self.pos += 1;
            if self.shard.is_some_and(|s| !s.owns(id)) || self.is_done(id) {
                continue;
            }
            if self.until_fails.is_some_and(|k| self.failures[cell] >= k) {
                continue;
            }
            return Next::Run(AttemptSpec { id, cell, iteration: self.round, phase: None });
        }
    }

    fn observe(&mut self, attempt: &Attempt) {
        if let Some(cell) = self.cells.iter().position(|c| c.name == attempt.cell) {
            self.mark_done(attempt.id);
            let wrong_output = self.outputs.as_mut().is_some_and(|o| o.is_minority(attempt));
            if attempt.outcome.is_failure() || wrong_output {
                self.failures[cell] += 1;
            }
        }
    }

    fn planned(&self) -> u64 {
        Schedule::planned(self)
    }
}

/// The stdouts of the attempts that exited 0 so far, counted by hash.
#[derive(Debug, Default)]
pub(crate) struct RunningMajority {
    counts: std::collections::HashMap<String, u64>,
    total: u64,
}

impl RunningMajority {
    /// Distinct outputs remembered; more are counted in the total only.
    const MAX_OUTPUTS: usize = 256;
    /// Attempts the leading output needs before others count as wrong.
    const MIN_MAJORITY: u64 = 3;

    /// Counts `attempt`, and says whether its output differs from a majority already formed:
    /// the leading output printed by at least three attempts and by more than half of them.
    pub(crate) fn is_minority(&mut self, attempt: &Attempt) -> bool {
        let Some(hash) = attempt.stdout_hash.as_ref().filter(|_| crate::oracle::majority::Outputs::eligible(attempt))
        else {
            return false;
        };
        self.total += 1;
        if self.counts.len() < Self::MAX_OUTPUTS || self.counts.contains_key(hash) {
            *self.counts.entry(hash.clone()).or_default() += 1;
        }
        let Some((leader, &top)) = self.counts.iter().max_by_key(|(_, &n)| n) else { return false };
        top >= Self::MIN_MAJORITY && top * 2 > self.total && leader != hash
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::profile::Profile;

    fn cells(n: usize) -> Vec<CellSpec> {
        (0..n)
            .map(|i| CellSpec { name: format!("c{i}"), profile: Some(Profile::default_profile()), overlay: vec![] })
            .collect()
    }

    fn drain(plan: &mut Schedule) -> Vec<AttemptSpec> {
        let mut out = Vec::new();
        while let Next::Run(a) = plan.next() {
            out.push(a);
        }
        out
    }

    #[test]
    fn every_cell_once_per_round_with_iterations_in_order() {
        let mut plan = Schedule::new(cells(3), 4, 9);
        let all = drain(&mut plan);
        assert_eq!(all.len(), 12);
        for (r, round) in all.chunks(3).enumerate() {
            let mut seen: Vec<usize> = round.iter().map(|a| a.cell).collect();
            seen.sort_unstable();
            assert_eq!(seen, vec![0, 1, 2]);
            assert!(round.iter().all(|a| a.iteration == r as u64 + 1));
        }
        let ids: HashSet<u64> = all.iter().map(|a| a.id).collect();
        assert_eq!(ids.len(), 12);
    }

    #[test]
    fn observed_attempts_are_not_issued_again_and_odd_ids_are_ignored() {
        let whole = drain(&mut Schedule::new(cells(3), 40, 9));
        let mut plan = Schedule::new(cells(3), 40, 9);
        let recorded = [0u64, 5, 63, 64, 119, u64::MAX];
        for &id in &recorded {
            let attempt = serde_json::json!({
                "id": id, "cell": "c1", "iteration": 1, "started_at": "", "seconds": 0.0,
                "outcome": "pass", "exit_code": 0, "signal": null, "stdout_tail": "", "stderr_tail": "",
            });
            plan.observe(&serde_json::from_value(attempt).unwrap());
        }
        let rest: Vec<u64> = drain(&mut plan).iter().map(|a| a.id).collect();
        let expected: Vec<u64> = whole.iter().map(|a| a.id).filter(|id| !recorded.contains(id)).collect();
        assert_eq!(rest, expected);
        assert!(plan.done.len() <= 2, "one bit per planned attempt");
    }

    #[test]
    fn order_depends_on_seed_only() {
        let a: Vec<usize> = drain(&mut Schedule::new(cells(5), 6, 1)).iter().map(|a| a.cell).collect();
        let b: Vec<usize> = drain(&mut Schedule::new(cells(5), 6, 1)).iter().map(|a| a.cell).collect();
        let c: Vec<usize> = drain(&mut Schedule::new(cells(5), 6, 2)).iter().map(|a| a.cell).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn shards_partition_the_plan() {
        let whole: Vec<u64> = drain(&mut Schedule::new(cells(3), 7, 5)).iter().map(|a| a.id).collect();
        let mut joined: Vec<u64> = (1..=3)
            .flat_map(|i| {
                let mut p = Schedule::new(cells(3), 7, 5).shard(Some(Shard { index: i, count: 3 }));
                assert_eq!(
                    p.planned(),
                    drain(&mut Schedule::new(cells(3), 7, 5).shard(Some(Shard { index: i, count: 3 }))).len() as u64
                );
                drain(&mut p).into_iter().map(|a| a.id).collect::<Vec<_>>()
            })
            .collect();
        joined.sort_unstable();
        let mut whole_sorted = whole.clone();
        whole_sorted.sort_unstable();
        assert_eq!(joined, whole_sorted);
    }

    #[test]
    fn until_fails_counts_outputs_unlike_a_formed_majority() {
        // One cell, stop after 2 failures; every attempt exits 0, stdout differs in some.
        let mut plan = Schedule::new(cells(1), 20, 3).until_fails(Some(2)).majority(true);
        let outputs = ["a", "b", "a", "a", "b", "a", "b", "b"];
        let mut stopped_after = None;
        for (i, out) in outputs.iter().enumerate() {
            let Next::Run(spec) = plan.next() else {
                stopped_after = Some(i);
                break;
            };
            let attempt = serde_json::json!({
                "id": spec.id, "cell": "c0", "iteration": spec.iteration, "started_at": "", "seconds": 0.0,
                "outcome": "pass", "exit_code": 0, "signal": null, "stdout_tail": "", "stderr_tail": "",
                "stdout_hash": out,
            });
            plan.observe(&serde_json::from_value(attempt).unwrap());
        }
        // The first "b" comes before any majority; "a" leads with 3 of 4 when the second "b"
        // counts (1), and the third "b" is the second failure: no attempt after it.
        assert_eq!(stopped_after, Some(7));
        // Without the oracle nothing failed, so nothing stops.
        let mut plain = Schedule::new(cells(1), 20, 3).until_fails(Some(2));
        assert_eq!(drain(&mut plain).len(), 20);
    }

    #[test]
    fn shard_syntax_is_checked() {
        assert_eq!("2/8".parse::<Shard>().unwrap(), Shard { index: 2, count: 8 });
        assert!("0/8".parse::<Shard>().is_err());
        assert!("9/8".parse::<Shard>().is_err());
        assert!("x".parse::<Shard>().is_err());
    }
}
