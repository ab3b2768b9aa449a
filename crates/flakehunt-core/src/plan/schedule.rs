//! The static plan: every cell `runs` times, interleaved in seeded shuffled rounds; a
//! `copies=N` cell's attempts run N at once, alone on the machine. Main type: [`Schedule`].

use std::collections::VecDeque;

use super::{AttemptSpec, CellSpec, Next, Plan, Rng, Shard};
use crate::record::Attempt;

/// Cells x runs, in rounds: each round runs every cell once, in an order shuffled per round from
/// the seed. Compared with one shuffle of all attempts, rounds keep the cells balanced over time
/// (blocked randomisation), so a machine that drifts (a neighbour starts a build, the CPU
/// throttles) hits every cell alike instead of biasing whichever cell happened to cluster late.
///
/// With [`Schedule::copies`], a cell whose profile asks for `copies = N` runs as batches: where
/// the rounds reach its slot in round 1, N + 1, 2N + 1, ..., the plan issues the cell's slots of
/// that round and the next N - 1 together (their own ids and iterations, so `--runs` still counts
/// attempts and ids stay where an unbatched plan puts them), once nothing else runs, and starts
/// nothing else until they have all ended: the copies meet only each other, as in the adaptive
/// hunt. A batch belongs to the shard that owns its first id, so a shard never splits one.
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
    /// Attempts of other cells at once (the user's `--jobs`); the runner may be wider, for the
    /// copies.
    width: usize,
    /// Each cell's batch size: its `copies` N when batching, else 1.
    copies: Vec<u64>,
    /// Ids issued and not yet observed.
    flying: Vec<u64>,
    /// A batch waiting for the machine to empty, or being started.
    batch: VecDeque<AttemptSpec>,
    /// A batch has started: nothing else starts until its attempts have ended.
    alone: bool,
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
            width: usize::MAX,
            copies: vec![1; n],
            flying: Vec::new(),
            batch: VecDeque::new(),
            alone: false,
        }
    }

    /// Runs at most `jobs` attempts at once, besides a batch of copies (which runs alone).
    pub fn width(mut self, jobs: u32) -> Self {
        self.width = (jobs as usize).max(1);
        self
    }

    /// Runs the attempts of a cell whose profile asks for `copies = N` (N > 1) N at once, alone
    /// on the machine (see the type's documentation); without, each attempt is one of the rest.
    pub fn copies(mut self, on: bool) -> Self {
        self.copies = self.cells.iter().map(|c| if on { copies_of(c) } else { 1 }).collect();
        self
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
        let Some(shard) = self.shard else { return total };
        if self.copies.iter().all(|&k| k == 1) {
            return (0..total).filter(|&id| shard.owns(id)).count() as u64;
        }
        // A batch counts whole for the shard that owns its first id.
        let mut planned = 0;
        for round in 1..=self.runs {
            for (pos, &cell) in self.order_of(round).iter().enumerate() {
                let id = (round - 1) * self.cells.len() as u64 + pos as u64;
                let k = self.copies[cell];
                if (round - 1) % k == 0 && shard.owns(id) {
                    planned += k.min(self.runs - round + 1);
                }
            }
        }
        planned
    }

    /// The cells in the order round `round` runs them.
    fn order_of(&self, round: u64) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.cells.len()).collect();
        Rng::stream(self.seed, round).shuffle(&mut order);
        order
    }

    /// The batch of `cell` that starts with `first` in this round: the cell's slots of this
    /// round and the next `copies - 1`, those not run yet.
    fn batch_of(&self, cell: usize, first: u64) -> VecDeque<AttemptSpec> {
        let n = self.cells.len() as u64;
        let last = (self.round + self.copies[cell] - 1).min(self.runs);
        (self.round..=last)
            .map(|round| {
                let id = if round == self.round {
                    first
                } else {
                    let pos = self.order_of(round).iter().position(|&c| c == cell).unwrap_or_default();
                    (round - 1) * n + pos as u64
                };
                AttemptSpec { id, cell, iteration: round, phase: None, cold: false }
            })
            .filter(|a| !self.is_done(a.id))
            .collect()
    }

    fn stopped(&self, cell: usize) -> bool {
        self.until_fails.is_some_and(|k| self.failures[cell] >= k)
    }

    fn issue(&mut self, spec: AttemptSpec) -> Next {
        self.flying.push(spec.id);
        Next::Run(spec)
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
        if self.alone {
            if let Some(spec) = self.batch.pop_front() {
                return self.issue(spec);
            }
            if !self.flying.is_empty() {
                return Next::Wait;
            }
            self.alone = false;
        }
        if let Some(cell) = self.batch.front().map(|a| a.cell) {
            // Failures seen while the machine emptied may have stopped the cell.
            if self.stopped(cell) {
                self.batch.clear();
            } else if !self.flying.is_empty() {
                return Next::Wait;
            } else {
                self.alone = true;
                return self.next();
            }
        }
        if self.flying.len() >= self.width {
            return Next::Wait;
        }
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
            let copies = self.copies[cell];
            // A batch's later slots ran with its first.
            if (self.round - 1) % copies != 0 {
                continue;
            }
            if self.shard.is_some_and(|s| !s.owns(id)) || self.stopped(cell) {
                continue;
            }
            if copies > 1 {
                self.batch = self.batch_of(cell, id);
                if self.batch.is_empty() {
                    continue;
                }
                return self.next();
            }
            if self.is_done(id) {
                continue;
            }
            return self.issue(AttemptSpec { id, cell, iteration: self.round, phase: None, cold: false });
        }
    }

    fn observe(&mut self, attempt: &Attempt) {
        if let Some(i) = self.flying.iter().position(|&id| id == attempt.id) {
            self.flying.swap_remove(i);
        }
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

/// The batch size of `cell`: its profile's `copies`, at least 1.
fn copies_of(cell: &CellSpec) -> u64 {
    cell.profile.as_ref().and_then(|p| p.knobs.copies).map_or(1, |n| u64::from(n.max(1)))
}

/// The most attempts any cell of `cells` runs at once when copies are batched (1 without any).
pub fn widest_copies(cells: &[CellSpec]) -> u32 {
    cells.iter().map(copies_of).max().map_or(1, |n| u32::try_from(n).unwrap_or(u32::MAX))
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

/// The static plan of `manifest` (a sweep's, a suite's, fire's): its cells interleaved in a seeded
/// order, with its stop rules. Each kind's plan is [`crate::kind::Hunt::plan`].
pub fn schedule(manifest: &crate::record::Manifest) -> Schedule {
    Schedule::new(manifest.cells.clone(), manifest.plan.runs, manifest.seed)
        .until_fails(manifest.plan.until_fails)
        .majority(manifest.oracle.as_ref().is_some_and(|o| o.majority))
        .shard(manifest.shard)
        .width(manifest.plan.jobs)
        .copies(schedules_copies(manifest.kind))
}

/// Whether the plan of a hunt of `kind` runs a `copies=N` cell's N attempts together (the
/// adaptive hunt's and the sweep's); elsewhere such a cell is inert.
pub fn schedules_copies(kind: crate::record::Kind) -> bool {
    matches!(kind, crate::record::Kind::Adaptive | crate::record::Kind::Sweep | crate::record::Kind::Verify)
}

/// Attempts the runner must be able to run at once for `manifest`'s plan: `--jobs`, or a sweep's
/// largest `copies=N`, whichever is more. The record keeps `--jobs`, the width the plan gives every
/// other cell, so a resumed sweep widens its runner again from its cells.
pub fn runner_jobs(manifest: &crate::record::Manifest) -> usize {
    let copies = if schedules_copies(manifest.kind) && manifest.kind != crate::record::Kind::Adaptive {
        widest_copies(&manifest.cells)
    } else {
        1
    };
    manifest.plan.jobs.max(copies) as usize
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::profile::{BuiltinProfiles, Profile};

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

    /// `default`, `noisy`, `copies=3`, `one-core`: one cell whose attempts run three at once.
    fn with_copies() -> Vec<CellSpec> {
        let mut cells = cells(4);
        cells[2] = CellSpec::for_profile(Profile::copies(3));
        cells
    }

    fn attempt_of(spec: &AttemptSpec, cells: &[CellSpec], fail: bool) -> Attempt {
        let attempt = serde_json::json!({
            "id": spec.id, "cell": cells[spec.cell].name, "iteration": spec.iteration, "started_at": "",
            "seconds": 0.0, "outcome": if fail { "fail" } else { "pass" }, "exit_code": i32::from(fail),
            "signal": null, "stdout_tail": "", "stderr_tail": "",
        });
        serde_json::from_value(attempt).unwrap()
    }

    /// One attempt started by [`drive`]: its spec and the specs running when it started.
    struct Started {
        spec: AttemptSpec,
        beside: Vec<AttemptSpec>,
    }

    /// Runs `plan` as a runner with `workers` workers would: starts what it is given while a
    /// worker is free, and on `Wait` (or `Done`, or no free worker) ends a running attempt, the
    /// oldest or the newest; `fail` says which attempts fail.
    fn drive(
        plan: &mut Schedule,
        workers: usize,
        newest_first: bool,
        fail: impl Fn(&AttemptSpec) -> bool,
    ) -> Vec<Started> {
        let cells = plan.cells().to_vec();
        let (mut running, mut started): (Vec<AttemptSpec>, Vec<Started>) = (Vec::new(), Vec::new());
        loop {
            let next = if running.len() < workers { plan.next() } else { Next::Wait };
            match next {
                Next::Run(spec) => {
                    started.push(Started { spec: spec.clone(), beside: running.clone() });
                    running.push(spec);
                }
                Next::Wait | Next::Done if !running.is_empty() => {
                    let spec = running.remove(if newest_first { running.len() - 1 } else { 0 });
                    plan.observe(&attempt_of(&spec, &cells, fail(&spec)));
                }
                Next::Wait => panic!("the plan waits with nothing running"),
                Next::Done => return started,
            }
        }
    }

    /// Checks what every batched plan promises: a copies cell's attempts start three at once
    /// with nothing else beside them, and nothing starts beside them until they have ended;
    /// other cells never run more than `width` at once.
    fn check_batches(started: &[Started], width: usize) {
        let copies = |a: &AttemptSpec| a.cell == 2;
        for (i, s) in started.iter().enumerate() {
            if copies(&s.spec) {
                assert!(s.beside.iter().all(copies), "a copy started beside another cell: {:?}", s.beside);
            } else {
                assert!(s.beside.iter().all(|a| !copies(a)), "{:?} started beside copies", s.spec);
                assert!(s.beside.len() < width, "{} attempts at once with --jobs {width}", s.beside.len() + 1);
            }
            // The first of a batch starts alone and the batch's others follow it at once.
            if copies(&s.spec) && s.beside.is_empty() {
                let batch = started[i..].iter().take_while(|t| copies(&t.spec) && t.beside.len() < 3).count();
                let expected = ((s.spec.iteration - 1) / 3 * 3 + 3).min(10) - (s.spec.iteration - 1) / 3 * 3;
                assert!(batch as u64 <= expected);
                for (k, t) in started[i..i + batch].iter().enumerate() {
                    assert_eq!(t.beside.len(), k, "a batch's attempts start together");
                }
            }
        }
    }

    #[test]
    fn a_copies_cell_runs_its_attempts_together_and_alone() {
        for (width, workers, newest_first) in [(1, 3, false), (2, 3, true), (4, 4, false), (1, 3, true)] {
            let mut plan = Schedule::new(with_copies(), 10, 7).width(width).copies(true);
            let started = drive(&mut plan, workers, newest_first, |_| false);
            check_batches(&started, width as usize);
            // Every cell gets its ten attempts, iterations 1 to 10; ids are those of the plan
            // without copies.
            for cell in 0..4 {
                let mut its: Vec<u64> =
                    started.iter().filter(|s| s.spec.cell == cell).map(|s| s.spec.iteration).collect();
                its.sort_unstable();
                assert_eq!(its, (1..=10).collect::<Vec<_>>(), "cell {cell}");
            }
            let mut ids: Vec<u64> = started.iter().map(|s| s.spec.id).collect();
            let mut plain: Vec<u64> = drain(&mut Schedule::new(with_copies(), 10, 7)).iter().map(|a| a.id).collect();
            ids.sort_unstable();
            plain.sort_unstable();
            assert_eq!(ids, plain);
            // Batches of iterations 1-3, 4-6, 7-9, then 10 alone.
            let firsts: Vec<u64> =
                started.iter().filter(|s| s.spec.cell == 2 && s.beside.is_empty()).map(|s| s.spec.iteration).collect();
            assert_eq!(firsts, [1, 4, 7, 10]);
            // The copies' ids are the cell's slots of each round, as without batching.
            let copies_ids: HashSet<(u64, u64)> =
                started.iter().filter(|s| s.spec.cell == 2).map(|s| (s.spec.id, s.spec.iteration)).collect();
            let plain_ids: HashSet<(u64, u64)> = drain(&mut Schedule::new(with_copies(), 10, 7))
                .into_iter()
                .filter(|a| a.cell == 2)
                .map(|a| (a.id, a.iteration))
                .collect();
            assert_eq!(copies_ids, plain_ids);
        }
        // Other cells do run side by side, up to the width.
        let mut plan = Schedule::new(with_copies(), 10, 7).width(2).copies(true);
        assert!(drive(&mut plan, 3, false, |_| false).iter().any(|s| s.beside.len() == 1 && s.spec.cell != 2));
        // Without batching a copies cell is one attempt among the others.
        let mut plain = Schedule::new(with_copies(), 10, 7).width(1);
        assert!(drive(&mut plain, 3, false, |_| false).iter().all(|s| s.beside.is_empty()));
    }

    #[test]
    fn shards_own_whole_batches_and_partition_the_plan() {
        let plain: Vec<u64> = drain(&mut Schedule::new(with_copies(), 10, 5)).iter().map(|a| a.id).collect();
        let mut joined = Vec::new();
        for index in 1..=3 {
            let shard = Some(Shard { index, count: 3 });
            let mut plan = Schedule::new(with_copies(), 10, 5).width(2).copies(true).shard(shard);
            let planned = plan.planned();
            let started = drive(&mut plan, 3, false, |_| false);
            assert_eq!(planned, started.len() as u64, "shard {index}");
            check_batches(&started, 2);
            // Each batch a shard runs is whole: three attempts (the last one alone).
            let copies: Vec<&Started> = started.iter().filter(|s| s.spec.cell == 2).collect();
            for batch in copies.split(|s| s.beside.is_empty()).skip(1) {
                assert!(batch.len() == 2 || batch.is_empty(), "a batch split between shards");
            }
            joined.extend(started.iter().map(|s| s.spec.id));
        }
        joined.sort_unstable();
        let mut plain = plain;
        plain.sort_unstable();
        assert_eq!(joined, plain);
    }

    #[test]
    fn a_resumed_batched_plan_runs_what_is_left_and_keeps_copies_together() {
        let whole = drive(&mut Schedule::new(with_copies(), 10, 9).width(2).copies(true), 3, false, |_| false);
        // Interrupted after some attempts, in the middle of the second batch of copies.
        let cut = whole.iter().position(|s| s.spec.cell == 2 && s.spec.iteration == 5).unwrap();
        let mut plan = Schedule::new(with_copies(), 10, 9).width(2).copies(true);
        for s in &whole[..cut] {
            plan.observe(&attempt_of(&s.spec, plan.cells(), false));
        }
        let rest = drive(&mut plan, 3, false, |_| false);
        let mut ids: Vec<u64> = whole[..cut].iter().chain(&rest).map(|s| s.spec.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 40, "every id once");
        assert_eq!(rest.len(), 40 - cut);
        // The rest of the second batch (iterations 4 and 6) still starts together and alone.
        let second: Vec<&Started> =
            rest.iter().filter(|s| s.spec.cell == 2 && (4..=6).contains(&s.spec.iteration)).collect();
        assert_eq!(second.len(), 2);
        assert!(second[0].beside.is_empty() && second[1].beside.len() == 1);
    }

    #[test]
    fn until_fails_stops_a_copies_cell_after_the_batch_that_failed() {
        // The first copy of each batch fails: two failures come from the first two batches.
        let mut plan = Schedule::new(with_copies(), 10, 3).width(2).copies(true).until_fails(Some(2));
        let started = drive(&mut plan, 3, false, |a| a.cell == 2 && a.iteration % 3 == 1);
        let copies: Vec<u64> = started.iter().filter(|s| s.spec.cell == 2).map(|s| s.spec.iteration).collect();
        assert_eq!(copies, [1, 2, 3, 4, 5, 6]);
        assert_eq!(started.iter().filter(|s| s.spec.cell == 0).count(), 10);
    }

    #[test]
    fn shard_syntax_is_checked() {
        assert_eq!("2/8".parse::<Shard>().unwrap(), Shard { index: 2, count: 8 });
        assert!("0/8".parse::<Shard>().is_err());
        assert!("9/8".parse::<Shard>().is_err());
        assert!("x".parse::<Shard>().is_err());
    }
}
