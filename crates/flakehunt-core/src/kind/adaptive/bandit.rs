//! The adaptive hunt's plan: calibrate, then a seeded bandit chooses each next attempt among
//! the arms, escalating a family when its lower levels show nothing, until one arm fails twice;
//! then fresh attempts of that arm against the baseline confirm it. Main type: [`BanditPlan`].

use std::collections::BTreeMap;
use std::time::Duration;

use super::beta::beta;
use super::calibration::{Calibration, Cost, Intensity, Measurement, Sharing, Skipped};
use super::hang::{confirm_limit, hang_timeout, p99_rank, MIN_PASSED, SLOW_GROWTH};
use crate::analysis::stats::fisher_exact_two_sided;
use crate::exec::HangLimit;
use crate::kind::adaptive::calibration::CalibrationArms;
use crate::plan::{AttemptLimits, AttemptSpec, CellSpec, Next, Plan, Rng, RunningMajority};
use crate::profile::Profile;
use crate::record::{Attempt, Mode, Outcome};
pub use crate::schema::adaptive::BanditOptions;

/// How many of the bandit's attempts run at once.
pub trait BanditWindow {
    /// Attempts that may run at once: twice the CPUs (the largest `copies=N` arm's N, and room
    /// for starved attempts, which keep little of a CPU busy, beside the others).
    fn window(&self) -> u64;
}

impl BanditWindow for BanditOptions {
    fn window(&self) -> u64 {
        u64::from(runner_jobs(self.cpus))
    }
}

/// The prior of every arm's failure probability, Beta(0.5, 2): mean 20 %. Flaky failures are
/// mostly rare, and this prior still lets an untried arm outbid one seen passing 20 times
/// (posterior mean 2 %), so every open arm gets tried, while an arm seen failing 1 in 5 is not
/// given up. Uniform Beta(1, 1) would spend a slow target's budget trying every arm repeatedly.
pub const PRIOR: (f64, f64) = (0.5, 2.0);

/// The phase names of the plan's attempts.
pub const CALIBRATE: &str = "calibrate";
/// See [`CALIBRATE`].
pub const CONFIRM: &str = "confirm";

/// An arm as the bandit sees it.
#[derive(Debug, Clone)]
struct Arm {
    family: usize,
    level: usize,
    copies: u32,
    expected_seconds: f64,
    /// CPUs one attempt keeps busy, and how it shares the machine (see [`Intensity`]).
    load: f64,
    sharing: Sharing,
    /// Attempts that are evidence (a slow one is not), and the failures among them.
    attempts: u64,
    failures: u64,
    /// Attempts ended as slow by a limit flakehunt set: no evidence, not among `attempts`.
    slow: u64,
    /// Wall seconds of its attempts that did not fail, slow ones included (what it costs).
    ok_seconds: f64,
    inert: u64,
    retired: Option<String>,
    /// What an attempt of the arm costs, for the hang limit before it has passes of its own.
    cost: Cost,
    /// Its latest passed attempts per mode ([`WARM`], [`COLD`]), for the hang rule.
    passed: [Passed; 2],
    /// Its longest slow attempt per mode, in seconds (0: none): the next limit is longer.
    slowest: [f64; 2],
    /// One of its attempts was idle at its hang limit and stayed so, or then failed by itself:
    /// its later hangs count at the limit, without running longer first.
    hang_confirmed: bool,
}

/// Index of warm attempts in an arm's per-mode data; see [`COLD`].
const WARM: usize = 0;
/// Index of cold attempts (new processes) in an arm's per-mode data.
const COLD: usize = 1;

fn mode_index(mode: Mode) -> usize {
    match mode {
        Mode::Warm => WARM,
        Mode::Cold => COLD,
    }
}

/// The latest passed attempts of one arm in one mode: wall and CPU seconds, a ring of
/// [`PASSED_KEPT`] (a percentile does not care about their order).
#[derive(Debug, Clone, Default)]
struct Passed {
    ring: Vec<(f64, Option<f64>)>,
    next: usize,
}

impl Passed {
    fn push(&mut self, seconds: f64, cpu: Option<f64>) {
        if !seconds.is_finite() || seconds < 0.0 {
            return;
        }
        if self.ring.len() < PASSED_KEPT {
            self.ring.push((seconds, cpu));
        } else {
            self.ring[self.next] = (seconds, cpu);
            self.next = (self.next + 1) % PASSED_KEPT;
        }
    }

    fn len(&self) -> usize {
        self.ring.len()
    }

    /// The attempt at the 99th percentile of wall time (nearest rank): its wall and CPU seconds.
    fn p99(&self) -> Option<(f64, Option<f64>)> {
        let mut v = self.ring.clone();
        if v.is_empty() {
            return None;
        }
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        Some(v[p99_rank(v.len())])
    }
}

impl Arm {
    fn new(family: usize, level: usize, l: &Intensity) -> Self {
        Self {
            family,
            level,
            copies: l.copies,
            expected_seconds: l.expected_seconds,
            load: l.load,
            sharing: l.sharing,
            attempts: 0,
            failures: 0,
            slow: 0,
            ok_seconds: 0.0,
            inert: 0,
            retired: None,
            cost: l.cost,
            passed: Default::default(),
            slowest: [0.0; 2],
            hang_confirmed: false,
        }
    }

    /// Attempts per second of the whole machine: its copies over the mean length of its
    /// attempts that did not fail (the calibration's estimate until one ran), divided by the
    /// share of the machine an attempt holds (all of it for an arm that runs alone, else its
    /// load's share of the CPUs, at least one of the `at_once` attempts that may run at once).
    /// A starved attempt that keeps 3 % of a CPU busy for a second thus costs what a quarter
    /// second of a plain one does on two CPUs, since four of them run side by side.
    /// Failures are left out of the mean: a failure that hangs (ended only by a timeout) would
    /// otherwise make the one arm that brings the failure out look too slow to try again, when
    /// the hunt needs exactly one more of them.
    fn rate(&self, cpus: f64, at_once: usize) -> f64 {
        let ok = self.attempts - self.failures + self.slow;
        let mean = if ok > 0 { self.ok_seconds / ok as f64 } else { self.expected_seconds };
        let share = match self.sharing {
            Sharing::Alone => 1.0,
            Sharing::Shared | Sharing::Pinned => (self.load / cpus).clamp(1.0 / at_once.max(1) as f64, 1.0),
        };
        f64::from(self.copies) / (mean.max(1e-3) * share)
    }
}

/// Passed attempts kept per arm for the hang rule: the 99th percentile of the latest 200.
const PASSED_KEPT: usize = 200;
/// Inert attempts (the mechanism measured no effect) after which an arm is retired.
const INERT_RETIRES: u64 = 2;

/// The failures an arm would show, at the rate its exploration saw, in the confirmation pairs
/// after which a confirmation that saw none gives up (e^-3: about 5 % of a real rate's
/// confirmations would see none by then).
const FUTILE_EXPECTED: f64 = 3.0;

/// The confirmation of the arm that failed twice, on fresh attempts only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Confirmation {
    /// The arm's index among the cells.
    pub arm: usize,
    /// Confirmation attempts of the arm, and its failures among them.
    pub arm_attempts: u64,
    /// See `arm_attempts`.
    pub arm_failures: u64,
    /// Confirmation attempts of the baseline, and its failures among them.
    pub base_attempts: u64,
    /// See `base_attempts`.
    pub base_failures: u64,
}

impl Confirmation {
    /// Two-sided Fisher exact p of the confirmation attempts alone: the exploration chose this
    /// arm because it failed, so counting those attempts would bias the test.
    pub fn p_value(&self) -> f64 {
        fisher_exact_two_sided(
            self.arm_failures,
            self.arm_attempts - self.arm_failures,
            self.base_failures,
            self.base_attempts - self.base_failures,
        )
    }

    /// Whether the arm fails more often than the baseline, at `alpha`.
    pub fn confirmed(&self, alpha: f64) -> bool {
        self.p_value() < alpha && self.arm_failures * self.base_attempts > self.base_failures * self.arm_attempts
    }
}

/// Where the hunt is.
#[derive(Debug, Clone, PartialEq)]
pub enum Stage {
    /// Running the plain attempts that size the arms.
    Calibrating,
    /// Choosing among the arms.
    Exploring,
    /// The arm at this cell index failed twice; fresh attempts compare it with the baseline.
    Confirming,
    /// Finished: reproduced (and confirmed or not), or nothing is left to try.
    Done,
}

/// The adaptive plan. Cell 0 is `default`, the baseline; the arms' cells are added once the
/// calibration attempts are in.
///
/// Calibration attempts run one at a time. After them, once the `copies=N` arm has shown that
/// running the target beside itself changes nothing, attempts run side by side (up to N) while
/// their arms' loads fit on the CPUs together (a starved attempt keeps a few percent of one busy, so
/// several run beside a plain one), up to `window` at once, except that an arm whose condition
/// is the whole machine (noise on every CPU, `copies=N`, whose N attempts start together) runs
/// alone, and two pinned arms never run together: no arm takes CPU time another's measurement
/// needs, and the copies arm is the only one whose condition is concurrency itself.
///
/// Decisions stay a function of the seed and the outcomes, whatever order attempts end in: the
/// choice for attempt `k` is made from the outcomes of exactly the attempts before
/// `k + 1 - lag`, folded in id order (it waits for them), never from whichever others happened
/// to end first. `lag` is the most attempts allowed at once by the outcomes folded so far (1
/// until the copies arm has shown that running side by side changes nothing): one at a time,
/// that is every attempt before it.
#[derive(Debug)]
pub struct BanditPlan {
    options: BanditOptions,
    /// The most attempts that may ever run at once (the runner's width).
    window: u64,
    /// The most attempts allowed at once so far (never less than before), which decisions lag.
    lag: u64,
    cells: Vec<CellSpec>,
    arms: Vec<Arm>,
    calibration: Option<Calibration>,
    skipped: Vec<Skipped>,
    unlock_after: u64,
    stage: Stage,
    measurements: Vec<Measurement>,
    calibrated: bool,
    next_id: u64,
    iterations: Vec<u64>,
    /// Attempts issued and not yet observed: id and cell.
    flying: BTreeMap<u64, usize>,
    /// Observed attempts not yet folded into the arms (those at or after `folded`).
    observed: BTreeMap<u64, Attempt>,
    /// Every attempt before this id is folded into the arms (or was lost: issued before a
    /// resume and never recorded).
    folded: u64,
    /// The choice for attempt `next_id`, made and waiting for room on the machine.
    decided: Option<Decision>,
    /// The arm whose copies are being started, how many are left to start, and whether they
    /// are confirmation attempts.
    batch: Option<(usize, u32, bool)>,
    confirmation: Option<Confirmation>,
    /// Confirmation attempts issued (or, after a resume, recorded) of the arm and the baseline,
    /// less the slow ones: the baseline's turn while it has fewer.
    confirm_issued: (u64, u64),
    /// Slow confirmation attempts of the arm and of the baseline.
    confirm_slow: (u64, u64),
    outputs: Option<RunningMajority>,
}

/// What the plan chose for its next attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Decision {
    Run { cell: usize, confirm: bool },
    Done,
}

impl BanditPlan {
    /// A hunt with these options; it starts by calibrating.
    pub fn new(options: BanditOptions) -> Self {
        let outputs = options.majority.then(RunningMajority::default);
        let baseline = Intensity {
            cell: CellSpec::for_profile(Profile::default_profile()),
            expected_seconds: 1.0,
            copies: 1,
            load: options.cpus.max(1) as f64,
            sharing: Sharing::Alone,
            cost: Cost::Factor(1.0),
        };
        Self {
            window: options.window(),
            lag: 1,
            cells: vec![baseline.cell.clone()],
            arms: vec![Arm::new(0, 0, &baseline)],
            calibration: None,
            skipped: Vec::new(),
            unlock_after: 3,
            stage: Stage::Calibrating,
            measurements: Vec::new(),
            calibrated: false,
            next_id: 0,
            iterations: vec![0],
            flying: BTreeMap::new(),
            observed: BTreeMap::new(),
            folded: 0,
            decided: None,
            batch: None,
            confirmation: None,
            confirm_issued: (0, 0),
            confirm_slow: (0, 0),
            outputs,
            options,
        }
    }

    /// Where the hunt is.
    pub fn stage(&self) -> &Stage {
        &self.stage
    }

    /// The calibration, once its attempts are in.
    pub fn calibration(&self) -> Option<&Calibration> {
        self.calibration.as_ref()
    }

    /// Families left out, with the reason.
    pub fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    /// Attempts a level runs without a failure before the next level of its family opens.
    pub fn unlock_after(&self) -> u64 {
        self.unlock_after
    }

    /// The confirmation, once an arm failed twice.
    pub fn confirmation(&self) -> Option<&Confirmation> {
        self.confirmation.as_ref()
    }

    /// Arms retired because their mechanism had no effect here, with the reason.
    pub fn retired(&self) -> Vec<(&str, &str)> {
        self.arms
            .iter()
            .zip(&self.cells)
            .filter_map(|(a, c)| a.retired.as_deref().map(|r| (c.name.as_str(), r)))
            .collect()
    }

    /// The limits of the next attempt of `cell` (the hang rule), one per way it may start: see
    /// [`Self::hang_limit`]. Every attempt ends when the hunt's budget does.
    pub fn limits_for(&self, cell: usize) -> AttemptLimits {
        AttemptLimits { warm: self.hang_limit(cell, WARM), cold: self.hang_limit(cell, COLD), end_with_budget: true }
    }

    /// The hang limit of an attempt of `cell` started in `mode`, always from attempts started
    /// the same way: the cell's own passed attempts in that mode once it has [`MIN_PASSED`] (an
    /// arm whose cost is unknown: once it has one), else the baseline's in that mode (for a cold
    /// attempt of a warm hunt, the warm baseline's plus the cold start calibration measured)
    /// stretched by what the cell costs. None until then, or with the user's `--timeout`: the
    /// attempt is bounded by `--timeout` and the budget only. An arm whose attempt was slow gets
    /// at least [`SLOW_GROWTH`] times that attempt's length; until one of its hangs is confirmed,
    /// a hang at the limit runs to [`confirm_limit`] before it counts.
    pub fn hang_limit(&self, cell: usize, mode: usize) -> Option<HangLimit> {
        if self.options.timeout.is_some() {
            return None;
        }
        let arm = self.arms.get(cell)?;
        let own = &arm.passed[mode];
        let expected = if own.len() >= MIN_PASSED || (arm.cost == Cost::Unknown && own.len() > 0) {
            own.p99()?.0
        } else {
            let (seconds, cpu) = self.baseline_p99(mode)?;
            arm.cost.expected(seconds, cpu)?
        };
        let mut limit = hang_timeout(expected);
        if arm.slowest[mode] > 0.0 {
            limit = limit.max(Duration::from_secs_f64((SLOW_GROWTH * arm.slowest[mode]).min(1e9)));
        }
        Some(HangLimit { limit, confirm: (!arm.hang_confirmed).then(|| confirm_limit(limit)) })
    }

    /// The baseline's passed attempt at the 99th percentile in `mode` (wall and CPU seconds),
    /// once it has [`MIN_PASSED`]; for cold attempts of a warm hunt without enough cold passes,
    /// the warm one plus the cold start calibration measured.
    fn baseline_p99(&self, mode: usize) -> Option<(f64, Option<f64>)> {
        let base = &self.arms[0].passed;
        if base[mode].len() >= MIN_PASSED {
            return base[mode].p99();
        }
        let cold_start = self.calibration.as_ref().and_then(|c| c.cold_start).filter(|_| mode == COLD)?;
        if base[WARM].len() < MIN_PASSED {
            return None;
        }
        let (seconds, cpu) = base[WARM].p99()?;
        Some((seconds + cold_start.seconds, cpu.zip(cold_start.cpu_seconds).map(|(a, b)| a + b)))
    }

    fn issue(&mut self, cell: usize, phase: Option<&str>) -> Next {
        let id = self.next_id;
        self.next_id += 1;
        self.iterations[cell] += 1;
        self.flying.insert(id, cell);
        // In a warm hunt the last calibration attempt starts cold: what a cold start adds is
        // what the hang limit of an arm that runs cold (jitter, a lost warm parent) needs.
        let cold = self.options.warm && phase == Some(CALIBRATE) && id + 1 == self.options.calibration_attempts;
        Next::Run(AttemptSpec { id, cell, iteration: self.iterations[cell], phase: phase.map(str::to_owned), cold })
    }

    /// Builds the arms from the calibration attempts (once).
    fn calibrate(&mut self) {
        if std::mem::replace(&mut self.calibrated, true) {
            return;
        }
        let calibration = match Calibration::measure(&self.measurements, self.options.runtime, self.options.cpus) {
            Ok(c) => c,
            Err(e) => {
                // Nothing ran to its end: every attempt hung. The baseline alone goes on (the
                // hang is the finding).
                self.skipped.push(Skipped { family: "all".into(), reason: e.to_string() });
                if self.stage == Stage::Calibrating {
                    self.stage = Stage::Exploring;
                }
                return;
            }
        };
        let arms = calibration.arms();
        let baseline = &arms.families[0].levels[0];
        self.arms[0].expected_seconds = calibration.median_seconds;
        (self.arms[0].load, self.arms[0].sharing) = (baseline.load, baseline.sharing);
        for (f, family) in arms.families.iter().enumerate().skip(1) {
            for (l, level) in family.levels.iter().enumerate() {
                self.cells.push(level.cell.clone());
                self.iterations.push(0);
                self.arms.push(Arm::new(f, l, level));
            }
        }
        self.unlock_after = calibration.unlock_after();
        self.skipped.extend(arms.skipped);
        self.calibration = Some(calibration);
        if self.stage == Stage::Calibrating {
            self.stage = Stage::Exploring;
        }
    }

    /// Whether an arm may be chosen: not retired, and the first level of its family, or the
    /// level below ran `unlock_after` attempts without a failure (or was retired).
    fn open(&self, i: usize) -> bool {
        let arm = &self.arms[i];
        if arm.retired.is_some() {
            return false;
        }
        if arm.level == 0 {
            return true;
        }
        let below = &self.arms[i - 1];
        debug_assert_eq!((below.family, below.level + 1), (arm.family, arm.level));
        below.failures == 0 && (below.retired.is_some() || below.attempts >= self.unlock_after)
    }

    /// Thompson sampling: each open arm's failure probability drawn from its Beta posterior,
    /// times its attempts per second, is the failures per second it would give if that draw
    /// were true; the largest wins. Draws come from a stream keyed by the next attempt's id, so
    /// the same seed and the same outcomes give the same choice, also after `--resume`. The
    /// baseline is chosen outright while it has less than its share of the attempts.
    fn choose(&self) -> usize {
        let total: u64 = self.arms.iter().map(|a| a.attempts).sum();
        if (self.arms[0].attempts as f64) < self.options.baseline_share * (total + 1) as f64 {
            return 0;
        }
        let mut rng = Rng::stream(self.options.seed ^ 0x6875_6e74, self.next_id);
        let at_once = self.side_by_side();
        let mut best = (0, f64::NEG_INFINITY);
        for (i, arm) in self.arms.iter().enumerate() {
            if !self.open(i) {
                continue;
            }
            let p = beta(&mut rng, PRIOR.0 + arm.failures as f64, PRIOR.1 + (arm.attempts - arm.failures) as f64);
            let score = p * arm.rate(self.options.cpus.max(1) as f64, at_once);
            if score > best.1 {
                best = (i, score);
            }
        }
        best.0
    }

    /// Folds the observed attempts before `boundary` into the arms, in id order; an attempt
    /// issued before this plan existed (by the run a resume continues) and never recorded is
    /// passed over. False while one before it is still running.
    fn fold_to(&mut self, boundary: u64) -> bool {
        while self.folded < boundary {
            if !self.fold_one() {
                return false;
            }
        }
        true
    }

    /// Folds what the choice for attempt `k` is made from: the calibration, then each attempt
    /// `b` with `b + lag <= k`, `lag` as it stood before `b` was folded. So how far the fold
    /// goes is itself a function of the outcomes, and a resumed plan, folding the same
    /// outcomes, stops where the whole run did.
    fn fold_for(&mut self, k: u64) -> bool {
        if !self.fold_to(self.options.calibration_attempts) {
            return false;
        }
        while self.folded + self.lag <= k {
            if !self.fold_one() {
                return false;
            }
        }
        true
    }

    /// Folds attempt `folded`, or passes over it when it was lost; false while it runs.
    fn fold_one(&mut self) -> bool {
        let id = self.folded;
        if let Some(attempt) = self.observed.remove(&id) {
            self.apply(&attempt);
        } else if self.flying.contains_key(&id) || id >= self.next_id {
            return false;
        }
        self.folded += 1;
        if self.folded == self.options.calibration_attempts {
            self.calibrate();
        }
        self.lag = self.lag.max(self.side_by_side() as u64).min(self.window);
        true
    }

    /// What to run next, from the folded outcomes.
    fn decide(&mut self) -> Decision {
        match self.stage {
            Stage::Done => Decision::Done,
            Stage::Calibrating | Stage::Exploring => {
                // A calibration that lost its attempts (a resume) still builds the arms.
                self.calibrate();
                Decision::Run { cell: self.choose(), confirm: false }
            }
            Stage::Confirming => {
                // Rounds alternate: the arm's attempts (its copies at once), then as many of the
                // baseline, so a paired count compares like with like.
                let Some(arm) = self.confirmation.map(|c| c.arm) else { return Decision::Done };
                if self.confirm_issued.1 < self.confirm_issued.0 {
                    self.confirm_issued.1 += 1;
                    return Decision::Run { cell: 0, confirm: true };
                }
                self.confirm_issued.0 += u64::from(self.arms[arm].copies);
                Decision::Run { cell: arm, confirm: true }
            }
        }
    }

    /// Attempts that may run side by side: as many as the largest `copies=N` arm that has run
    /// `unlock_after` attempts without a failure, else one. Running two attempts at once is
    /// itself a condition (a scratch file at a fixed path, a fixed port, a shared database): until
    /// the copies arm has shown that it does not matter, attempts of other arms side by side
    /// would bring such a failure out and pin it on whichever arm they belonged to.
    fn side_by_side(&self) -> usize {
        self.arms
            .iter()
            .filter(|a| a.copies > 1 && a.failures == 0 && a.attempts >= self.unlock_after.max(u64::from(a.copies)))
            .map(|a| a.copies as usize)
            .max()
            .unwrap_or(1)
    }

    /// Folds every observed attempt, for a summary of a hunt that makes no more decisions (the
    /// arms retired by its last attempts, its calibration).
    pub fn settle(&mut self) {
        let end = self.observed.keys().next_back().map_or(self.folded, |&id| id + 1);
        let flying = std::mem::take(&mut self.flying);
        self.fold_to(end);
        self.flying = flying;
    }

    /// Whether an attempt of `cell` may start beside the attempts running now.
    fn fits(&self, cell: usize) -> bool {
        if self.flying.is_empty() {
            return true;
        }
        let arm = &self.arms[cell];
        let at_once = self.side_by_side().min(self.lag as usize);
        if arm.sharing == Sharing::Alone || self.flying.len() >= at_once {
            return false;
        }
        let mut load = arm.load;
        for &other in self.flying.values() {
            let other = &self.arms[other];
            match other.sharing {
                Sharing::Alone => return false,
                Sharing::Pinned if arm.sharing == Sharing::Pinned => return false,
                _ => load += other.load,
            }
        }
        load <= self.options.cpus.max(1) as f64 + 1e-9
    }

    /// What an attempt says of how long its arm's attempts take, in any phase: a pass is a
    /// length the hang rule may trust, a slow attempt a length its arm needs more than, and a
    /// hang that stayed hung (or was idle at its limit and then failed) confirms its arm hangs.
    fn time(&mut self, cell: usize, attempt: &Attempt) {
        let arm = &mut self.arms[cell];
        let mode = mode_index(attempt.mode);
        match attempt.outcome {
            Outcome::Pass => arm.passed[mode].push(attempt.seconds, attempt.cpu_seconds),
            Outcome::Slow => arm.slowest[mode] = arm.slowest[mode].max(attempt.seconds),
            o if o.is_failure() && attempt.hang.and_then(|h| h.idle) == Some(true) => arm.hang_confirmed = true,
            _ => {}
        }
    }

    /// Folds one observed attempt into its arm: the reproduction and confirmation rules. A slow
    /// attempt is no evidence: it counts only in what the arm costs, and in confirmation its
    /// side runs one more.
    fn apply(&mut self, attempt: &Attempt) {
        let Some(cell) = self.cells.iter().position(|c| c.name == attempt.cell) else { return };
        self.time(cell, attempt);
        let slow = attempt.outcome == Outcome::Slow;
        let failed = !slow && self.failed(attempt);
        let phase = attempt.phase.as_deref();

        if phase == Some(CONFIRM) {
            // Attempts chosen before the stop was known still ran: the stop rule's counts are
            // the confirmation's.
            if self.stage == Stage::Done {
                return;
            }
            let alpha = self.options.alpha;
            let max = self.options.confirm_max;
            let futile_after =
                self.confirmation.map_or(self.options.confirm_futile_after, |c| self.futile_after(c.arm));
            if let Some(c) = self.confirmation.as_mut() {
                let arm_side = cell == c.arm;
                if slow {
                    // Its side gets another attempt, so that the counts pair again.
                    let (issued, ran) = if arm_side {
                        (&mut self.confirm_issued.0, &mut self.confirm_slow.0)
                    } else {
                        (&mut self.confirm_issued.1, &mut self.confirm_slow.1)
                    };
                    *issued = issued.saturating_sub(1);
                    *ran += 1;
                } else if arm_side {
                    c.arm_attempts += 1;
                    c.arm_failures += u64::from(failed);
                } else if cell == 0 {
                    c.base_attempts += 1;
                    c.base_failures += u64::from(failed);
                }
                let paired = c.arm_attempts == c.base_attempts && c.arm_attempts > 0;
                let futile = paired && c.arm_attempts >= futile_after && c.arm_failures <= c.base_failures;
                // Slow attempts count towards the most confirmation runs, so that an arm whose
                // attempts never end in time cannot hold the hunt in confirmation.
                let spent = |n: u64, slow: u64| n + slow >= max;
                // A patient confirmation that has seen no failure on either side, its attempts
                // mostly evidence (not slow), goes on while the budget lasts: stopping there
                // would hunt a failure seen twice for less long than one seen once.
                let waiting = self.options.patient
                    && c.arm_failures + c.base_failures == 0
                    && self.confirm_slow.0 + self.confirm_slow.1 < c.arm_attempts;
                if !waiting
                    && ((paired && (c.confirmed(alpha) || futile))
                        || (spent(c.arm_attempts, self.confirm_slow.0) && spent(c.base_attempts, self.confirm_slow.1)))
                {
                    self.stage = Stage::Done;
                }
            }
            return;
        }

        let arm = &mut self.arms[cell];
        if slow {
            arm.slow += 1;
            arm.ok_seconds += attempt.seconds;
            return;
        }
        arm.attempts += 1;
        if failed {
            arm.failures += 1;
        } else {
            arm.ok_seconds += attempt.seconds;
        }
        // An attempt ended by a limit cannot report what its mechanism did (the jitter library
        // reports when its process exits): only attempts that ended by themselves say inert.
        let reported = attempt.termination.is_none();
        if let Some(reason) = attempt.effect.inert.as_ref().filter(|_| reported) {
            arm.inert += 1;
            if arm.inert >= INERT_RETIRES && arm.failures == 0 && cell != 0 {
                arm.retired = Some(reason.clone());
            }
        }
        if phase == Some(CALIBRATE) {
            self.measurements.push(Measurement::from_attempt(attempt));
        }
        // A single failure is a rumour; the first arm to fail twice is the reproduction.
        if self.arms[cell].failures >= 2 && matches!(self.stage, Stage::Exploring | Stage::Calibrating) {
            if cell == 0 {
                // The plain target fails twice: no condition is needed, none to confirm.
                self.stage = Stage::Done;
            } else {
                self.stage = Stage::Confirming;
                self.confirmation = Some(Confirmation { arm: cell, ..Confirmation::default() });
            }
        }
    }

    /// The pairs after which a confirmation in which `arm` failed no more than the baseline
    /// gives up: [`BanditOptions::confirm_futile_after`], or, for an arm whose exploration
    /// showed a lower rate, the pairs in which it would have failed [`FUTILE_EXPECTED`] times at
    /// that rate (no failure then has a chance of about 5 %), at most the confirmation's most.
    fn futile_after(&self, arm: usize) -> u64 {
        let least = self.options.confirm_futile_after;
        let a = &self.arms[arm];
        if !self.options.patient || a.failures == 0 {
            return least;
        }
        let pairs = (FUTILE_EXPECTED * a.attempts as f64 / a.failures as f64).ceil() as u64;
        pairs.clamp(least, self.options.confirm_max.max(least))
    }

    fn failed(&mut self, attempt: &Attempt) -> bool {
        let wrong_output = self.outputs.as_mut().is_some_and(|o| o.is_minority(attempt));
        attempt.outcome.is_failure() || wrong_output
    }
}

impl Plan for BanditPlan {
    fn cells(&self) -> &[CellSpec] {
        &self.cells
    }

    fn next(&mut self) -> Next {
        if let Some((arm, left, confirm)) = self.batch {
            self.batch = (left > 1).then_some((arm, left - 1, confirm));
            return self.issue(arm, confirm.then_some(CONFIRM));
        }
        let calibrating = self.next_id < self.options.calibration_attempts;
        if calibrating {
            // One at a time, each measured on a quiet machine.
            if !self.flying.is_empty() {
                return Next::Wait;
            }
            self.fold_to(self.next_id);
            if self.stage == Stage::Done {
                return Next::Done;
            }
            return self.issue(0, Some(CALIBRATE));
        }
        if self.decided.is_none() {
            if !self.fold_for(self.next_id) {
                return Next::Wait;
            }
            self.decided = Some(self.decide());
        }
        match self.decided {
            Some(Decision::Run { cell, confirm }) if self.fits(cell) => {
                self.decided = None;
                let copies = self.arms[cell].copies;
                self.batch = (copies > 1).then_some((cell, copies - 1, confirm));
                self.issue(cell, confirm.then_some(CONFIRM))
            }
            Some(Decision::Done) => Next::Done,
            _ => Next::Wait,
        }
    }

    fn observe(&mut self, attempt: &Attempt) {
        // Issued here, or recorded by the run a resume continues.
        let issued_here = self.flying.remove(&attempt.id).is_some();
        if attempt.id < self.folded || self.observed.contains_key(&attempt.id) {
            return;
        }
        self.next_id = self.next_id.max(attempt.id + 1);
        // Calibration attempts run one at a time, so the calibration is folded as soon as its
        // last attempt is in (or a later attempt shows it was lost), and the arms' cells exist
        // before any of their attempts is observed.
        self.observed.insert(attempt.id, attempt.clone());
        if !self.calibrated {
            self.fold_to((attempt.id + 1).min(self.options.calibration_attempts));
        }
        let Some(cell) = self.cells.iter().position(|c| c.name == attempt.cell) else {
            self.observed.remove(&attempt.id);
            return;
        };
        self.iterations[cell] = self.iterations[cell].max(attempt.iteration);
        if !issued_here && attempt.phase.as_deref() == Some(CONFIRM) {
            if cell == 0 {
                self.confirm_issued.1 += 1;
            } else {
                self.confirm_issued.0 += 1;
            }
        }
        // Keep what is waiting to be folded to the attempts that may still be deciding.
        self.fold_to(self.next_id.saturating_sub(self.window));
    }

    /// Attempts issued so far: an adaptive hunt plans as it goes, so the display shows how far
    /// it got, not a total.
    fn planned(&self) -> u64 {
        self.next_id.max(self.options.calibration_attempts)
    }

    fn limits(&self, cell: usize) -> AttemptLimits {
        self.limits_for(cell)
    }
}

/// Attempts the runner must be able to run at once for a hunt on `cpus` CPUs: the largest
/// `copies=N` arm's N (twice the CPUs); the plan itself keeps every other arm to one attempt.
pub fn runner_jobs(cpus: usize) -> u32 {
    u32::try_from(cpus.max(1) * 2).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Effect, Outcome};
    use crate::schema::adaptive::RuntimeKind;

    /// What the fake executor decides for an attempt: its outcome, its length, why its
    /// mechanism was inert (if it was), and its stdout hash.
    struct Result {
        outcome: Outcome,
        seconds: f64,
        /// CPU seconds, when measured.
        cpu: Option<f64>,
        inert: Option<&'static str>,
        stdout_hash: Option<String>,
        /// How it started (a spec that asks for cold starts cold whatever this says).
        mode: Mode,
        /// What the hang rule saw of it.
        hang: Option<crate::record::HangCheck>,
    }

    fn pass(seconds: f64) -> Result {
        Result {
            outcome: Outcome::Pass,
            seconds,
            cpu: None,
            inert: None,
            stdout_hash: None,
            mode: Mode::Cold,
            hang: None,
        }
    }

    fn fail(seconds: f64) -> Result {
        Result { outcome: Outcome::Fail, ..pass(seconds) }
    }

    fn record(spec: &AttemptSpec, cell: &str, r: &Result) -> Attempt {
        let mut a: Attempt = serde_json::from_value(serde_json::json!({
            "id": spec.id, "cell": cell, "iteration": spec.iteration, "started_at": "", "seconds": r.seconds,
            "outcome": r.outcome, "exit_code": 0, "signal": null, "stdout_tail": "", "stderr_tail": "",
        }))
        .unwrap();
        a.phase = spec.phase.clone();
        a.cpu_seconds = r.cpu;
        a.stdout_hash = r.stdout_hash.clone();
        a.effect = Effect { inert: r.inert.map(str::to_owned), ..Effect::default() };
        a.mode = if spec.cold { Mode::Cold } else { r.mode };
        a.hang = r.hang;
        if matches!(r.outcome, Outcome::Timeout | Outcome::Slow) {
            a.termination = Some(crate::exec::Termination::Sigterm);
        }
        a
    }

    /// One step of a run as the fake executor saw it.
    #[derive(Debug, Clone, PartialEq)]
    struct Step {
        cell: String,
        id: u64,
        phase: Option<String>,
        /// Attempts running when this one started (itself included).
        running: u32,
        /// Whether nothing else was running once it had been observed.
        idle_after: bool,
        /// The plan asked for it to start cold.
        cold: bool,
    }

    /// Runs `plan` like the runner does with enough jobs: every `Run` starts an attempt, and a
    /// `Wait` lets the oldest running attempt end. `outcome` sees the cell, the attempt's spec
    /// and how many attempts run beside it. Stops at `Done` or after `max` attempts.
    fn drive(
        plan: &mut BanditPlan,
        max: usize,
        outcome: impl FnMut(&str, &AttemptSpec, u32) -> Result,
    ) -> (Vec<Step>, Vec<Attempt>) {
        drive_ending(plan, max, outcome, false)
    }

    /// [`drive`], ending the newest running attempt first when `newest_first`.
    fn drive_ending(
        plan: &mut BanditPlan,
        max: usize,
        mut outcome: impl FnMut(&str, &AttemptSpec, u32) -> Result,
        newest_first: bool,
    ) -> (Vec<Step>, Vec<Attempt>) {
        let mut running: Vec<(AttemptSpec, Result)> = Vec::new();
        let mut steps = Vec::new();
        let mut attempts = Vec::new();
        loop {
            let next = if steps.len() >= max { Next::Done } else { plan.next() };
            match next {
                Next::Run(spec) => {
                    let cell = plan.cells()[spec.cell].name.clone();
                    let r = outcome(&cell, &spec, running.len() as u32 + 1);
                    steps.push(Step {
                        cell,
                        id: spec.id,
                        phase: spec.phase.clone(),
                        running: running.len() as u32 + 1,
                        idle_after: false,
                        cold: spec.cold,
                    });
                    running.push((spec, r));
                }
                Next::Wait | Next::Done if !running.is_empty() => {
                    let (spec, r) = running.remove(if newest_first { running.len() - 1 } else { 0 });
                    let a = record(&spec, &plan.cells()[spec.cell].name, &r);
                    plan.observe(&a);
                    attempts.push(a);
                    if let Some(step) = steps.iter_mut().find(|s| s.id == spec.id) {
                        step.idle_after = running.is_empty();
                    }
                }
                Next::Wait => panic!("the plan waits with nothing running"),
                Next::Done => return (steps, attempts),
            }
        }
    }

    fn options(seed: u64) -> BanditOptions {
        BanditOptions { seed, cpus: 2, runtime: RuntimeKind::Native, ..BanditOptions::default() }
    }

    #[test]
    fn calibration_runs_plain_attempts_alone_then_the_arms_appear() {
        let mut plan = BanditPlan::new(options(1));
        assert_eq!(plan.cells().len(), 1);
        let (steps, _) = drive(&mut plan, 6, |_, _, _| pass(0.02));
        assert!(steps[..5]
            .iter()
            .all(|s| s.cell == "default" && s.phase.as_deref() == Some(CALIBRATE) && s.running == 1));
        assert_eq!(steps[5].phase, None);
        let names: Vec<&str> = plan.cells().iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names[0], "default");
        assert!(names.contains(&"cpu-starved=2.9") && names.contains(&"pause=2ms/10ms") && names.contains(&"copies=4"));
        assert_eq!(plan.calibration().unwrap().median_seconds, 0.02);
        assert_eq!(plan.unlock_after(), 10);
        assert_eq!(plan.skipped()[0].family, "tight-gil");
    }

    #[test]
    fn the_same_seed_and_outcomes_give_the_same_decisions() {
        let run = |seed| {
            let mut plan = BanditPlan::new(options(seed));
            drive(&mut plan, 400, |_, spec, _| if spec.id % 97 == 96 { fail(0.02) } else { pass(0.02) }).0
        };
        let a = run(5);
        assert_eq!(a, run(5));
        assert_ne!(a, run(6));
    }

    #[test]
    fn a_level_opens_after_the_one_below_showed_nothing_for_n_attempts() {
        let mut plan = BanditPlan::new(options(2));
        let (steps, _) = drive(&mut plan, 3000, |_, _, _| pass(0.02));
        let n = plan.unlock_after() as usize;
        let families: Vec<Vec<String>> = vec![
            vec!["cpu-starved=13".into(), "cpu-starved=6.7".into(), "cpu-starved=2.9".into()],
            vec!["noisy=x1".into(), "noisy=x2".into(), "noisy=x4".into()],
            vec!["pause=2ms/10ms".into(), "pause=10ms/10ms".into(), "pause=50ms/20ms".into()],
        ];
        for levels in families {
            for pair in levels.windows(2) {
                let first_upper = steps.iter().position(|s| s.cell == pair[1]).expect("the higher level ran");
                let lower_before = steps[..first_upper].iter().filter(|s| s.cell == pair[0]).count();
                assert!(lower_before >= n, "{} opened after {lower_before} attempts of {}", pair[1], pair[0]);
            }
        }
    }

    #[test]
    fn a_level_that_fails_keeps_the_next_one_closed() {
        let mut plan = BanditPlan::new(options(3));
        let (steps, _) = drive(&mut plan, 600, |cell, spec, _| {
            if cell == "cpu-starved=13" && spec.iteration == 1 {
                fail(0.06)
            } else {
                pass(0.02)
            }
        });
        assert!(steps.iter().any(|s| s.cell == "cpu-starved=13"));
        assert!(steps.iter().all(|s| s.cell != "cpu-starved=6.7"));
    }

    #[test]
    fn the_baseline_keeps_its_share() {
        let mut plan = BanditPlan::new(options(4));
        let (steps, _) = drive(&mut plan, 2000, |_, _, _| pass(0.02));
        let mut base = 0;
        for (i, s) in steps.iter().enumerate() {
            base += usize::from(s.cell == "default");
            assert!(base as f64 >= 0.1 * (i + 1) as f64 - 1.0, "{base} baseline attempts of {}", i + 1);
        }
    }

    /// Every step with the cells that ran beside it when it started.
    fn beside(steps: &[Step]) -> Vec<(String, Vec<String>)> {
        // The fake executor ends the oldest attempt first, so attempt `i` runs beside the
        // `running - 1` attempts issued just before it.
        steps
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let others = steps[..i].iter().rev().take(s.running as usize - 1).map(|o| o.cell.clone()).collect();
                (s.cell.clone(), others)
            })
            .collect()
    }

    #[test]
    fn arms_share_the_machine_only_where_they_fit_and_copies_run_together() {
        let mut plan = BanditPlan::new(options(5));
        // A target busy on a tenth of a CPU: plain attempts fit side by side.
        let (steps, _) = drive(&mut plan, 1500, |_, _, _| Result { cpu: Some(0.002), ..pass(0.02) });
        let alone = |cell: &str| cell.starts_with("noisy") || cell.starts_with("copies");
        let pinned = |cell: &str| cell.starts_with("one-core");
        let mut side_by_side = 0;
        for (cell, others) in beside(&steps) {
            side_by_side += usize::from(!others.is_empty());
            if let Some(n) = cell.strip_prefix("copies=") {
                assert!(others.iter().all(|o| *o == cell) && others.len() < n.parse().unwrap(), "{cell} {others:?}");
            } else if alone(&cell) {
                assert!(others.is_empty(), "{cell} ran beside {others:?}");
            } else {
                assert!(others.iter().all(|o| !alone(o)), "{cell} ran beside {others:?}");
                assert!(!pinned(&cell) || others.iter().all(|o| !pinned(o)), "{cell} ran beside {others:?}");
            }
            assert!(others.len() < plan.window as usize);
        }
        assert!(side_by_side > 300, "only {side_by_side} attempts ran beside another");
        // Each batch of copies=4 starts its four attempts together.
        let copies: Vec<&Step> = steps.iter().filter(|s| s.cell == "copies=4").collect();
        assert!(!copies.is_empty());
        assert!(copies
            .chunks(4)
            .all(|c| c.len() < 4 || c.iter().map(|s| s.running).collect::<Vec<_>>() == [1, 2, 3, 4]));
        // A target that keeps a CPU busy runs one plain attempt per CPU at most.
        let mut busy = BanditPlan::new(options(5));
        let (steps, _) = drive(&mut busy, 600, |_, _, _| Result { cpu: Some(0.02), ..pass(0.02) });
        let whole_cpu = |cell: &str| cell == "default" || cell.starts_with("jitter") || cell.starts_with("one-core");
        let mut pairs = 0;
        for (cell, others) in beside(&steps).iter().filter(|(cell, _)| whole_cpu(cell)) {
            let busy_beside = others.iter().filter(|o| whole_cpu(o)).count();
            assert!(busy_beside <= 1, "{cell} ran beside {others:?}");
            pairs += busy_beside;
        }
        assert!(pairs > 0, "two busy attempts fit on two CPUs");
    }

    #[test]
    fn attempts_run_side_by_side_only_once_copies_showed_it_changes_nothing() {
        let outcome = |fail_copies: bool| {
            move |cell: &str, spec: &AttemptSpec, _: u32| {
                let r = if fail_copies && cell.starts_with("copies") && spec.iteration == 1 {
                    fail(0.02)
                } else {
                    pass(0.02)
                };
                Result { cpu: Some(0.002), ..r }
            }
        };
        let mut plan = BanditPlan::new(options(16));
        let (steps, _) = drive(&mut plan, 1500, outcome(false));
        let first = steps.iter().position(|s| s.running > 1 && !s.cell.starts_with("copies")).expect("side by side");
        let copies_before = steps[..first].iter().filter(|s| s.cell == "copies=2").count() as u64;
        assert!(copies_before >= plan.unlock_after(), "side by side after {copies_before} copies attempts");
        // One failure with copies (a rumour, not yet a reproduction) keeps every attempt alone.
        let mut plan = BanditPlan::new(options(16));
        let (steps, _) = drive(&mut plan, 1500, outcome(true));
        assert!(steps.iter().all(|s| s.running == 1 || s.cell.starts_with("copies")));
    }

    #[test]
    fn decisions_do_not_depend_on_the_order_attempts_end_in() {
        // The same outcomes, ended oldest first or newest first: the same cells for the same ids.
        let outcome = |_: &str, spec: &AttemptSpec, _: u32| {
            let r = if spec.id % 53 == 52 { fail(0.02) } else { pass(0.02) };
            Result { cpu: Some(0.002), ..r }
        };
        let mut a = BanditPlan::new(options(15));
        let (oldest, _) = drive(&mut a, 800, outcome);
        let mut b = BanditPlan::new(options(15));
        let (newest, _) = drive_ending(&mut b, 800, outcome, true);
        let cells = |steps: &[Step]| {
            let mut v: Vec<(u64, String)> = steps.iter().map(|s| (s.id, s.cell.clone())).collect();
            v.sort();
            v
        };
        assert!(newest.iter().any(|s| s.running > 1));
        assert_eq!(cells(&oldest), cells(&newest));
    }

    #[test]
    fn the_arm_that_fails_twice_is_confirmed_on_fresh_attempts_against_the_baseline() {
        // Only the x10 quota (6.7 % for a 20 ms test) brings the failure out, on every second attempt.
        let mut plan = BanditPlan::new(options(6));
        let (steps, attempts) = drive(&mut plan, 20_000, |cell, spec, _| {
            if cell == "cpu-starved=6.7" && spec.iteration % 2 == 0 {
                fail(0.2)
            } else {
                pass(0.02)
            }
        });
        assert_eq!(plan.stage(), &Stage::Done);
        let c = *plan.confirmation().unwrap();
        assert_eq!(plan.cells()[c.arm].name, "cpu-starved=6.7");
        assert_eq!(c.arm_attempts, c.base_attempts);
        assert_eq!(c.base_failures, 0);
        assert!(c.confirmed(0.01), "{c:?}: p = {}", c.p_value());
        // It stopped at the first paired count with p < 0.01, counting confirmation attempts only
        // (in id order; the attempts already chosen by then still ran, fewer than a window).
        let mut counts = Confirmation { arm: c.arm, ..Confirmation::default() };
        let mut confirm_attempts: Vec<&Attempt> =
            attempts.iter().filter(|a| a.phase.as_deref() == Some(CONFIRM)).collect();
        confirm_attempts.sort_by_key(|a| a.id);
        let counted = (c.arm_attempts + c.base_attempts) as usize;
        assert!(confirm_attempts.len() >= counted && confirm_attempts.len() < counted + 2 * plan.window as usize);
        for a in &confirm_attempts[..counted] {
            let failed = u64::from(a.outcome.is_failure());
            if a.cell == "default" {
                (counts.base_attempts, counts.base_failures) =
                    (counts.base_attempts + 1, counts.base_failures + failed);
            } else {
                (counts.arm_attempts, counts.arm_failures) = (counts.arm_attempts + 1, counts.arm_failures + failed);
            }
            let paired = counts.arm_attempts == counts.base_attempts;
            assert_eq!(paired && counts.confirmed(0.01), counts == c, "{counts:?}");
        }
        // Confirmation attempts alternate arm and baseline and come after the second failure.
        let confirm: Vec<&Step> = steps.iter().filter(|s| s.phase.as_deref() == Some(CONFIRM)).collect();
        assert!(confirm
            .chunks(2)
            .all(|p| p[0].cell == "cpu-starved=6.7" && p.get(1).is_none_or(|b| b.cell == "default")));
        let second_failure =
            attempts.iter().filter(|a| a.cell == "cpu-starved=6.7" && a.outcome == Outcome::Fail).nth(1).unwrap().id;
        assert!(confirm.iter().all(|s| s.id > second_failure));
    }

    #[test]
    fn a_failure_no_condition_explains_is_not_confirmed() {
        // Every cell fails on one attempt id in 15, whatever its condition.
        let mut plan = BanditPlan::new(BanditOptions { confirm_max: 30, confirm_futile_after: 1000, ..options(7) });
        let (_, _) = drive(&mut plan, 20_000, |_, spec, _| if spec.id % 15 == 7 { fail(0.02) } else { pass(0.02) });
        assert_eq!(plan.stage(), &Stage::Done);
        let c = *plan.confirmation().unwrap();
        // 30 a side at least; a copies arm's round adds its N at once.
        assert!(c.arm_attempts >= 30 && c.base_attempts >= 30 && c.arm_attempts.abs_diff(c.base_attempts) < 4, "{c:?}");
        assert!(!c.confirmed(0.01), "{c:?}");
        // With the futility rule, it gives up once the arm has failed no more than the baseline
        // after 20 pairs, or at the first pair past that where it has not.
        let mut plan = BanditPlan::new(BanditOptions { confirm_max: 30, ..options(7) });
        let (_, attempts) =
            drive(&mut plan, 20_000, |_, spec, _| if spec.id % 15 == 7 { fail(0.02) } else { pass(0.02) });
        let c = *plan.confirmation().unwrap();
        assert!(!c.confirmed(0.01), "{c:?}");
        assert!(c.arm_attempts >= 20 && (c.arm_failures <= c.base_failures || c.arm_attempts == 30), "{c:?}");
        let confirm = attempts.iter().filter(|a| a.phase.as_deref() == Some(CONFIRM)).count() as u64;
        let counted = c.arm_attempts + c.base_attempts;
        // The decisions made before the stop was folded still ran: fewer than a window of
        // rounds, each at most a copies arm's N.
        assert!(confirm >= counted && confirm < counted + 2 * plan.window, "{confirm} confirmation attempts, {c:?}");
    }

    #[test]
    fn a_rare_failure_is_not_given_up_before_its_rate_could_show_it_again() {
        // One arm fails on every 30th of its own attempts, in exploration and confirmation.
        let rare = |patient: bool| {
            let mut plan = BanditPlan::new(BanditOptions { patient, ..options(7) });
            let mut n = 0u64;
            drive(&mut plan, 50_000, |cell, _, _| {
                if cell != "cpu-starved=6.7" {
                    return pass(0.02);
                }
                n += 1;
                if n % 30 == 0 {
                    fail(0.02)
                } else {
                    pass(0.02)
                }
            });
            assert_eq!(plan.stage(), &Stage::Done);
            *plan.confirmation().unwrap()
        };
        // Twenty clean pairs refute nothing at 1 in 30: the rule of records written before
        // gave up there.
        let old = rare(false);
        assert!(old.arm_attempts < 30 && old.arm_failures == 0, "{old:?}");
        // Sized to the rate exploration saw (2 in about 60: 90 pairs), the confirmation goes on
        // long enough to see it fail again, and so it is not refuted.
        let new = rare(true);
        assert!(new.arm_attempts >= 90 && new.arm_failures >= 1, "{new:?}");
    }

    #[test]
    fn a_failure_seen_twice_and_never_again_is_hunted_while_the_budget_lasts() {
        // One arm fails on its 40th and 80th attempts, never again.
        let once = |patient: bool| {
            let mut plan = BanditPlan::new(BanditOptions { patient, ..options(7) });
            let mut n = 0u64;
            drive(&mut plan, 3000, |cell, _, _| {
                if cell != "cpu-starved=6.7" {
                    return pass(0.02);
                }
                n += 1;
                if n == 40 || n == 80 {
                    fail(0.02)
                } else {
                    pass(0.02)
                }
            });
            (plan.stage().clone(), *plan.confirmation().unwrap())
        };
        // Before: given up after 20 clean pairs, with the budget left.
        let (stage, c) = once(false);
        assert_eq!((stage, c.arm_attempts), (Stage::Done, 20), "{c:?}");
        // Patient: still confirming when the attempts run out, clean on both sides.
        let (stage, c) = once(true);
        assert_eq!(stage, Stage::Confirming);
        assert!(c.arm_attempts > 1000 && c.arm_failures + c.base_failures == 0, "{c:?}");
    }

    #[test]
    fn an_arm_whose_failure_hangs_is_not_given_up_for_its_length() {
        // The strongest pause level hangs (ended after 10 s) on its first attempt; the others
        // pass in 20 ms. Counting the hang in the arm's rate would make it 500 times too slow.
        let mut plan = BanditPlan::new(options(14));
        let (steps, _) = drive(&mut plan, 5000, |cell, _, _| {
            if cell == "pause=50ms/20ms" {
                Result { outcome: Outcome::Timeout, ..pass(10.0) }
            } else {
                pass(0.02)
            }
        });
        let first = steps.iter().position(|s| s.cell == "pause=50ms/20ms").unwrap();
        let second = steps.iter().skip(first + 1).position(|s| s.cell == "pause=50ms/20ms").unwrap();
        assert!(second < 40, "retried only {second} attempts later");
        assert_eq!(plan.cells()[plan.confirmation().unwrap().arm].name, "pause=50ms/20ms");
    }

    #[test]
    fn two_baseline_failures_end_the_hunt_without_a_condition() {
        let mut plan = BanditPlan::new(options(8));
        let (steps, _) = drive(&mut plan, 100, |_, spec, _| if spec.id < 2 { fail(0.02) } else { pass(0.02) });
        assert_eq!(steps.len(), 2);
        assert_eq!(plan.stage(), &Stage::Done);
        assert_eq!(plan.confirmation(), None);
    }

    #[test]
    fn an_arm_whose_mechanism_is_inert_is_retired() {
        let mut plan = BanditPlan::new(options(9));
        let (steps, _) = drive(&mut plan, 3000, |cell, _, _| {
            if cell.starts_with("jitter") {
                Result { inert: Some("no process loaded the jitter library"), ..pass(0.02) }
            } else {
                pass(0.02)
            }
        });
        // Retired once two have reported it; the attempts already chosen by then still run.
        for level in ["jitter", "jitter=0.25", "jitter=1"] {
            let n = steps.iter().filter(|s| s.cell == level).count() as u64;
            assert!((INERT_RETIRES..INERT_RETIRES + plan.window).contains(&n), "{level}: {n}");
        }
        assert!(plan.retired().iter().any(|(cell, why)| *cell == "jitter=1" && why.contains("jitter library")));
    }

    #[test]
    fn wrong_output_counts_under_the_majority_oracle() {
        let outputs = |cell: &str, spec: &AttemptSpec| {
            let wrong = cell == "noisy=x1" && spec.iteration % 3 == 0;
            Result { stdout_hash: Some(if wrong { "bad".into() } else { "good".into() }), ..pass(0.02) }
        };
        let mut plain = BanditPlan::new(options(10));
        drive(&mut plain, 2000, |c, s, _| outputs(c, s));
        assert_eq!(plain.confirmation(), None, "exit 0 everywhere: nothing failed");
        let mut judged = BanditPlan::new(BanditOptions { majority: true, ..options(10) });
        drive(&mut judged, 20_000, |c, s, _| outputs(c, s));
        assert_eq!(judged.cells()[judged.confirmation().unwrap().arm].name, "noisy=x1");
    }

    #[test]
    fn a_resumed_plan_makes_the_decisions_the_whole_run_made() {
        let outcome = |_: &str, spec: &AttemptSpec, _: u32| if spec.id % 41 == 40 { fail(0.02) } else { pass(0.02) };
        let mut whole = BanditPlan::new(options(11));
        let (steps, attempts) = drive(&mut whole, 300, outcome);
        // Cut where nothing was running, as after an interruption that recorded all it ran.
        let cut = steps.iter().take(150).rposition(|s| s.idle_after).unwrap() + 1;
        let mut resumed = BanditPlan::new(options(11));
        let recorded: Vec<&Attempt> = attempts.iter().filter(|a| steps[..cut].iter().any(|s| s.id == a.id)).collect();
        for a in &recorded {
            resumed.observe(a);
        }
        let (rest, _) = drive(&mut resumed, 300 - cut, outcome);
        assert_eq!(rest, steps[cut..]);
    }

    #[test]
    fn options_round_trip_through_a_record() {
        let o = BanditOptions { timeout: Some(Duration::from_millis(2500)), majority: true, ..options(13) };
        let json = serde_json::to_value(&o).unwrap();
        assert_eq!(json["calibration-attempts"], 5);
        assert_eq!(serde_json::from_value::<BanditOptions>(json).unwrap(), o);
        // A record written before the futility rule sized to the rate replays with the old one.
        assert_eq!(
            serde_json::from_str::<BanditOptions>("{}").unwrap(),
            BanditOptions { patient: false, ..BanditOptions::default() }
        );
    }

    /// The limit of an attempt of `cell` started warm or cold, in seconds, and whether a hang at
    /// it runs longer first.
    fn limit(plan: &BanditPlan, cell: &str, mode: usize) -> Option<(f64, bool)> {
        let i = plan.cells().iter().position(|c| c.name == cell).unwrap();
        plan.hang_limit(i, mode).map(|h| (h.limit.as_secs_f64(), h.confirm.is_some()))
    }

    #[test]
    fn hangs_are_judged_from_attempts_started_the_same_way() {
        // A Python target whose warm attempts take 20 ms and whose cold start takes 1.5 s more
        // (a module slow to import); jitter runs cold (its library is preloaded at start-up)
        // and takes 3 s there.
        let mut plan = BanditPlan::new(BanditOptions { warm: true, runtime: RuntimeKind::Python, ..options(12) });
        assert_eq!(plan.hang_limit(0, WARM), None, "nothing passed yet");
        let outcome = |cell: &str, spec: &AttemptSpec, _: u32| {
            if spec.cold || cell.starts_with("jitter") {
                Result { cpu: Some(1.5), mode: Mode::Cold, ..pass(if spec.cold { 1.52 } else { 3.0 }) }
            } else {
                Result { cpu: Some(0.02), mode: Mode::Warm, ..pass(0.02) }
            }
        };
        let (steps, _) = drive(&mut plan, 5, outcome);
        assert!(steps.iter().take(4).all(|s| !s.cold) && steps[4].cold, "the last calibration attempt starts cold");
        let cold_start = plan.calibration().unwrap().cold_start.unwrap();
        assert!((cold_start.seconds - 1.5).abs() < 1e-9, "{cold_start:?}");
        // Warm attempts: 20 x 20 ms, at least a second. Cold ones: the warm baseline plus the
        // cold start, x20, never the warm limit.
        assert_eq!(limit(&plan, "default", WARM), Some((1.0, true)));
        let (cold, _) = limit(&plan, "default", COLD).unwrap();
        assert!((cold - 20.0 * 1.52).abs() < 1e-6, "{cold}");
        // A pause level stretches the baseline by what its pauses cost, in either mode.
        let pause = plan.cells().iter().find(|c| c.name.starts_with("pause=")).unwrap().name.clone();
        assert!(limit(&plan, &pause, COLD).unwrap().0 > cold);
        // Jitter's cost is known only from its own attempts: no limit at all until one passed.
        assert_eq!(limit(&plan, "jitter", COLD), None);
        assert_eq!(limit(&plan, "jitter", WARM), None);
        drive(&mut plan, 400, outcome);
        let jitter_ran = plan.arms.iter().zip(plan.cells()).any(|(a, c)| c.name == "jitter" && a.attempts > 0);
        assert!(jitter_ran);
        assert_eq!(limit(&plan, "jitter", COLD), Some((60.0, true)));
        // With the user's --timeout, the hang rule does not apply.
        let explicit = BanditPlan::new(BanditOptions { timeout: Some(Duration::from_secs(9)), ..options(12) });
        assert_eq!(explicit.limits_for(0), AttemptLimits { end_with_budget: true, ..AttemptLimits::default() });
        // The runner asks through the trait.
        let as_plan: &dyn Plan = &plan;
        assert_eq!(as_plan.limits(0).warm.map(|h| h.limit), Some(Duration::from_secs(1)));
    }

    #[test]
    fn a_quota_stretches_the_cold_start_by_its_cpu_seconds() {
        // A cold start of 1.5 CPU-seconds under a quota of a few percent takes far longer than
        // the warm attempts' stretch says: the limit follows the CPU seconds.
        let mut plan = BanditPlan::new(BanditOptions { warm: true, runtime: RuntimeKind::Python, ..options(3) });
        drive(&mut plan, 5, |_, spec, _| {
            if spec.cold {
                Result { cpu: Some(1.5), ..pass(1.6) }
            } else {
                Result { cpu: Some(0.02), mode: Mode::Warm, ..pass(0.02) }
            }
        });
        let quota = plan.cells().iter().find(|c| c.name.starts_with("cpu-starved=")).unwrap();
        let share = quota.profile.as_ref().unwrap().knobs.cpu_quota.unwrap() / 100.0;
        let (cold, _) = limit(&plan, &quota.name.clone(), COLD).unwrap();
        // The cold attempt: 1.6 s of which 1.5 CPU-seconds, which take 1.5 / share under it.
        assert!((cold - 20.0 * 1.5 / share).abs() < 1e-6, "{cold} under a {share} quota");
    }

    #[test]
    fn a_slow_attempt_is_no_evidence_and_lengthens_its_arms_limit() {
        // Every attempt of one pause level is ended as slow at its limit: it never fails, never
        // reproduces, and its next limit is four times the slow attempt's length.
        let mut plan = BanditPlan::new(options(21));
        let (_, attempts) = drive(&mut plan, 3000, |cell, _, _| {
            if cell == "pause=50ms/20ms" {
                Result { outcome: Outcome::Slow, ..pass(1.0) }
            } else {
                pass(0.02)
            }
        });
        assert!(attempts.iter().any(|a| a.outcome == Outcome::Slow));
        assert_eq!(plan.confirmation(), None);
        let i = plan.cells().iter().position(|c| c.name == "pause=50ms/20ms").unwrap();
        assert_eq!((plan.arms[i].attempts, plan.arms[i].failures), (0, 0));
        assert!(plan.arms[i].slow > 0);
        assert!(limit(&plan, "pause=50ms/20ms", COLD).unwrap().0 >= 4.0);
    }

    #[test]
    fn a_hang_runs_longer_until_one_of_its_arm_stayed_hung() {
        let mut plan = BanditPlan::new(options(22));
        let hung = crate::record::HangCheck { limit: 1.0, idle: Some(true), confirm_limit: Some(10.0) };
        drive(&mut plan, 300, |cell, spec, _| {
            if cell == "copies=2" && spec.iteration == 1 {
                Result { outcome: Outcome::Timeout, hang: Some(hung), ..pass(10.0) }
            } else {
                pass(0.02)
            }
        });
        assert_eq!(limit(&plan, "copies=2", COLD).map(|l| l.1), Some(false), "confirmed: counted at the limit");
        assert_eq!(limit(&plan, "default", COLD).map(|l| l.1), Some(true));
        assert_eq!(limit(&plan, "copies=4", COLD).map(|l| l.1), Some(true));
    }

    #[test]
    fn slow_confirmation_attempts_are_run_again_and_the_counts_pair() {
        // One arm fails every other attempt; in confirmation every third of its attempts is
        // slow. Confirmation still pairs its counts and confirms it on evidence alone.
        let mut plan = BanditPlan::new(options(6));
        let (_, attempts) = drive(&mut plan, 20_000, |cell, spec, _| {
            if cell == "cpu-starved=6.7" && spec.phase.as_deref() == Some(CONFIRM) && spec.iteration % 3 == 0 {
                Result { outcome: Outcome::Slow, ..pass(0.6) }
            } else if cell == "cpu-starved=6.7" && spec.iteration % 2 == 0 {
                fail(0.2)
            } else {
                pass(0.02)
            }
        });
        let c = *plan.confirmation().unwrap();
        assert_eq!(plan.cells()[c.arm].name, "cpu-starved=6.7");
        assert!(attempts.iter().any(|a| a.outcome == Outcome::Slow && a.phase.as_deref() == Some(CONFIRM)));
        assert_eq!(c.arm_attempts, c.base_attempts);
        assert!(c.confirmed(0.01), "{c:?}");
    }
}
