//! The classification of a suite hunt's failing tests, with their own confirmation runs: every
//! test twice in one process, each failing test alone, twice in one process, its polluters or
//! state-setters (the ones already found for another test tried first, else a bisection), and
//! its reproducer checked. One procedure, [`analyse`], drives both the live hunt (its [`Runs`]
//! start real attempts and record them, side by side where the suite allows) and the analysis of
//! a record ([`Replay`] answers from the attempts recorded), so that `report`, `--resume` and
//! `merge` reach the same conclusions as the run did, without running anything.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use super::bisect::{BisectStatus, Bisection, Bisector};
use super::classify::{classify, Category};
use super::record::{AttemptTests, Prefix, Role, Tallies};
use super::setup::{Request, SuiteSetup};
use super::summary::SuiteSummary;
use super::{Framework, TestId};
use crate::kind::suite::setup::SetupRuns;
use crate::kind::suite::summary::SuiteSummaryOf;
pub use crate::schema::suite::BisectionSummary;

/// Confirmation runs of a failing test alone: "passes alone" needs several.
pub const ALONE_RUNS: usize = 3;
/// Runs of a test twice in one process, for one whose second run failed in the repeat-all pass:
/// all must confirm it ([`super::classify::CONFIRMING_REPEATS`]).
pub const REPEAT_RUNS: usize = super::classify::CONFIRMING_REPEATS as usize;
/// Runs a reproducer must fail in, one after the other, before it is printed.
pub const REPRODUCER_CHECKS: usize = 2;
/// Runs that confirm a set of culprits once found, as every bisection ends.
const CULPRIT_CONFIRMATIONS: usize = 2;
/// Sets of culprits found for other tests that a test tries before it is bisected.
const KNOWN_TRIES: usize = 3;

/// Runs (or finds) the runs the classification asks for.
pub trait Runs {
    /// The suite part of a run of `req` in the baseline cell; none when it cannot be had (the
    /// hunt was interrupted, or the record does not hold it).
    fn run(&mut self, req: &Request) -> Option<AttemptTests>;

    /// The tests about to be classified, once, before their runs (for the display).
    fn classifying(&mut self, _tests: &[TestId]) {}

    /// Once, when the runs of `tests` failing tests (three or more) are about to be asked for,
    /// `first` first (every test twice in one process and the failing tests alone, or, when the
    /// shuffled attempts had too few, the runs after that pass). A live hunt checks here whether
    /// they can go side by side: the suite run beside itself, as `first` beside copies of a
    /// shuffled attempt (see [`super::side_by_side`]). Whether the suite ran clean so, when it
    /// was checked: when not, `first`'s runs then are no evidence, and are asked for again.
    fn side_by_side(&mut self, _tests: usize, _first: &[Request]) -> Option<bool> {
        None
    }

    /// The runs about to be asked for, each as often as listed: a live hunt may run them ahead,
    /// side by side. What [`Self::run`] answers does not depend on it, only when it is had (a
    /// run had ahead and never asked for stays in the record, unused).
    fn prefetch(&mut self, _reqs: &[Request]) {}

    /// Whether `req` is known to have no answer: a record written before the classification
    /// asked for such runs, which then takes the way it took then.
    fn lacks(&self, _req: &Request) -> bool {
        false
    }
}

/// The recorded confirmation, repetition, bisection and reproducer runs, each found by what it
/// ran, in the order of their attempts' ids; a request asked for more often than recorded has
/// no answer.
#[derive(Debug, Default)]
pub struct Replay {
    memo: HashMap<Request, VecDeque<AttemptTests>>,
    /// A request found no recorded run.
    pub missing: bool,
    /// The record's side-by-side check: whether the suite ran clean beside itself, when it ran.
    pub beside: Option<bool>,
}

impl Replay {
    /// Adds a recorded run (shuffled attempts are not replayed: they are the hunt's input).
    /// Runs of one request are answered in the order added: add them in id order.
    pub fn add(&mut self, t: AttemptTests) {
        if t.role != Role::Shuffled {
            self.memo.entry(Request::of_record(&t)).or_default().push_back(t);
        }
    }

    /// The next recorded run of `req`, if one is left.
    pub fn take(&mut self, req: &Request) -> Option<AttemptTests> {
        self.memo.get_mut(req).and_then(VecDeque::pop_front)
    }

    /// Recorded runs of `req` not taken yet.
    pub fn held(&self, req: &Request) -> usize {
        self.memo.get(req).map_or(0, VecDeque::len)
    }
}

impl Runs for Replay {
    fn run(&mut self, req: &Request) -> Option<AttemptTests> {
        let found = self.take(req);
        self.missing |= found.is_none();
        found
    }

    fn lacks(&self, req: &Request) -> bool {
        self.held(req) == 0
    }

    fn side_by_side(&mut self, _tests: usize, _first: &[Request]) -> Option<bool> {
        self.beside
    }
}

/// What the classification found.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    /// The summary's suite part.
    pub summary: SuiteSummary,
    /// Every run it asked for was had.
    pub complete: bool,
}

/// Classifies every test that failed at least once in the shuffled attempts `tallies` hold (or
/// whose second run in one process failed), asking `runs` for each confirmation run. The runs
/// that do not depend on each other's answers are asked for together (see [`Runs::prefetch`]):
/// every test's runs alone and twice in one process, then each test's culprits (tried together
/// where one set of culprits already found may explain several tests), then every reproducer's
/// checks.
pub fn analyse(setup: &SuiteSetup, mut tallies: Tallies, cells: &[String], runs: &mut dyn Runs) -> Analysis {
    tallies.order_cells(cells);
    let mut c = Classifier { setup, runs, tallies, complete: true, known: Vec::new(), checked: BTreeMap::new() };
    let alone = |id: &TestId| std::iter::repeat_n(Request::about(Role::Alone, id, vec![id.clone()], None), ALONE_RUNS);
    let repeat =
        |id: &TestId| std::iter::repeat_n(Request::about(Role::Repeat, id, vec![id.clone()], None), REPEAT_RUNS);
    // The tests that failed in the shuffled attempts are run alone whatever the run of every
    // test twice in one process finds: all of it is asked for at once.
    let shuffled_failing: Vec<TestId> =
        c.tallies.tests.iter().filter(|(_, t)| t.failures > 0).map(|(id, _)| id.clone()).collect();
    let repeat_all = setup.repeat_all();
    let mut first: Vec<Request> = repeat_all.iter().cloned().collect();
    first.extend(shuffled_failing.iter().flat_map(alone));
    // The side-by-side check, once there are tests enough to classify: before the run of
    // every test twice when the shuffled attempts had them, else after it.
    let mut checked = false;
    let mut check = |c: &mut Classifier<'_>, tests: usize, runs: &[Request]| {
        if checked || tests < super::side_by_side::SIDE_BY_SIDE_MIN_TESTS {
            return;
        }
        checked = true;
        if c.runs.side_by_side(tests, runs) == Some(false) {
            // They ran beside copies of the suite, which failed there: not counted, asked again.
            for req in runs {
                c.runs.run(req);
            }
        }
    };
    check(&mut c, shuffled_failing.len(), &first);
    c.runs.prefetch(&first);
    // Every test twice in one process: the only way a non-idempotent test shows, since each
    // attempt runs each test once.
    let mut second_failed = BTreeSet::new();
    if let Some(req) = &repeat_all {
        if let Some(t) = c.run(req) {
            second_failed = second_run_failed(&t);
        }
    }
    let failing: Vec<TestId> = c
        .tallies
        .tests
        .iter()
        .filter(|(id, t)| t.failures > 0 || second_failed.contains(*id))
        .map(|(id, _)| id.clone())
        .collect();
    c.runs.classifying(&failing);
    let mut next = Vec::new();
    // A test whose second run failed there is confirmed by the two checks of its reproducer
    // (the test twice in one process, as printed, which then need not run again), each of
    // which must pass its first run and fail its second; a record written before such checks
    // were asked for holds runs twice in one process of flakehunt's own instead.
    let mut confirm = Vec::new();
    for id in &failing {
        if !shuffled_failing.contains(id) {
            next.extend(alone(id));
        }
        if second_failed.contains(id) {
            match setup.repeat_reproducer(id).map(|argv| Request::reproducer(id, argv)) {
                Some(check) if !c.runs.lacks(&check) => {
                    next.extend(std::iter::repeat_n(check.clone(), REPRODUCER_CHECKS));
                    confirm.push((id.clone(), check));
                }
                _ => next.extend(repeat(id)),
            }
        }
    }
    check(&mut c, failing.len(), &next);
    c.runs.prefetch(&next);
    let plain = first.iter().skip(usize::from(repeat_all.is_some())).chain(&next);
    for req in plain.filter(|r| r.role != Role::Reproducer) {
        c.run(req);
    }
    for (id, check) in confirm {
        if (0..REPRODUCER_CHECKS).all(|_| c.repeat_check(&check, &id)) {
            c.checked.insert(id, check.argv);
        }
    }
    let searches: Vec<Search> = failing.iter().filter_map(|id| c.search_of(id)).collect();
    let shuffles: BTreeMap<TestId, Option<u64>> =
        searches.iter().filter(|s| s.polluters).map(|s| (s.id.clone(), s.prefix.shuffle)).collect();
    let mut bisections = c.culprits(searches);
    let reproducers = c.reproducers(&failing, &shuffles);
    let mut entries = Vec::new();
    for id in failing {
        let tally = c.tallies.tests.get(&id).cloned().unwrap_or_default();
        let reproducer = reproducers.get(&id).cloned().unwrap_or_default();
        entries.push((id.clone(), tally, reproducer, c.tallies.messages.get(&id).cloned()));
    }
    let mut summary = SuiteSummary::build(setup.framework(), setup.selection.len() as u64, entries);
    for t in &mut summary.tests {
        t.bisection = bisections.remove(&t.id);
    }
    summary.add_incomplete(&c.tallies);
    Analysis { summary, complete: c.complete }
}

/// A test whose culprits are looked for: its polluters (it passes alone) in the order it first
/// failed in, or its state-setters (it fails alone) in the order it first passed in.
#[derive(Debug, Clone)]
struct Search {
    id: TestId,
    prefix: Prefix,
    polluters: bool,
    /// The known sets of culprits tried for it.
    tried: Vec<Vec<TestId>>,
}

impl Search {
    /// Whether a run of the culprits then the test, in which the test `failed`, shows them: a
    /// victim failed, a brittle test passed.
    fn shows(&self, failed: Option<bool>) -> bool {
        failed == Some(self.polluters)
    }

    /// A run of `culprits` (in the prefix's order) then the test.
    fn request(&self, culprits: &[TestId]) -> Request {
        let mut order = culprits.to_vec();
        order.push(self.id.clone());
        Request::about(Role::Bisect, &self.id, order, self.prefix.shuffle).made_by(self.prefix.strategy)
    }

    fn summary(&self, runs: u32, status: BisectStatus, known: bool) -> BisectionSummary {
        BisectionSummary {
            searched: if self.polluters { "polluters" } else { "state-setters" }.to_owned(),
            prefix: self.prefix.before.len(),
            runs,
            status,
            strategy: self.prefix.strategy,
            known,
        }
    }
}

/// A set of culprits confirmed for some tests.
#[derive(Debug, Clone)]
struct Known {
    culprits: Vec<TestId>,
    polluters: bool,
    /// The tests it was confirmed for.
    tests: usize,
}

struct Classifier<'a> {
    setup: &'a SuiteSetup,
    runs: &'a mut dyn Runs,
    tallies: Tallies,
    complete: bool,
    /// The culprits confirmed so far, in the order found.
    known: Vec<Known>,
    /// The reproducers already checked twice while their test's culprits were confirmed.
    checked: BTreeMap<TestId, Vec<String>>,
}

impl Classifier<'_> {
    /// Runs `req` and counts what it says.
    fn run(&mut self, req: &Request) -> Option<AttemptTests> {
        let got = self.runs.run(req);
        match &got {
            Some(t) => self.tallies.add(0, "", t),
            None => self.complete = false,
        }
        got
    }

    /// Whether `test` failed in a run of `req`; none when the run could not be had, or ended
    /// before the test reported (no evidence either way).
    fn failed(&mut self, req: &Request, test: &TestId) -> Option<bool> {
        let t = self.run(req)?;
        let failed = t.tests.iter().any(|r| r.id == *test && r.outcome.is_failure());
        (failed || t.reported(test)).then_some(failed)
    }

    /// Whether a reproducer's check run of `req` made `test` fail, by the test's own results:
    /// with `repeated`, its first run passed and its second failed.
    fn reproduced(&mut self, req: &Request, test: &TestId, repeated: bool) -> bool {
        let Some(t) = self.run(req) else { return false };
        if repeated {
            super::record::repeat_confirmed(&t.tests, test) == Some(true)
        } else {
            t.tests.iter().any(|r| r.id == *test && r.outcome.is_failure())
        }
    }

    /// Whether a check of `test`'s reproducer twice in one process (`check`) confirms that it
    /// breaks its own state (its first run passed, its second failed), counted as such a run
    /// when the test reported in it.
    fn repeat_check(&mut self, check: &Request, test: &TestId) -> bool {
        let Some(t) = self.run(check) else { return false };
        let Some(confirmed) = super::record::repeat_confirmed(&t.tests, test) else { return false };
        let tally = self.tallies.tests.entry(test.clone()).or_default();
        tally.repeat_runs += 1;
        tally.repeat_failures += u64::from(confirmed);
        confirmed
    }

    /// The search for `id`'s culprits its runs alone call for, if any: a victim's polluters
    /// (passes alone, not confirmed non-idempotent), a brittle test's state-setters (fails
    /// alone), from the order it first failed (passed) in.
    fn search_of(&self, id: &TestId) -> Option<Search> {
        if !self.setup.framework().orders() {
            return None;
        }
        let t = self.tallies.tests.get(id)?;
        let passes_alone = t.alone_runs > 0 && t.alone_failures == 0;
        let fails_alone = t.alone_runs > 0 && t.alone_failures == t.alone_runs;
        let (prefix, polluters) = if passes_alone && !t.repeat_confirmed() {
            (self.tallies.first_failure.get(id)?, true)
        } else if fails_alone {
            (self.tallies.first_pass.get(id)?, false)
        } else {
            return None;
        };
        Some(Search { id: id.clone(), prefix: prefix.clone(), polluters, tried: Vec::new() })
    }

    /// The culprits of every search: while some search's order holds a set of culprits already
    /// confirmed for another test (and not tried for it yet), those are tried, all such tests at
    /// once; else the first search left is bisected. Its bisection (or the known culprits' runs)
    /// per test.
    fn culprits(&mut self, mut pending: Vec<Search>) -> BTreeMap<TestId, BisectionSummary> {
        let mut done = BTreeMap::new();
        while !pending.is_empty() {
            let tries: Vec<(usize, Vec<TestId>)> =
                pending.iter().enumerate().filter_map(|(i, s)| self.candidate(s).map(|set| (i, set))).collect();
            if tries.is_empty() {
                let search = pending.remove(0);
                let (b, summary) = self.bisect(&search);
                if b.status == BisectStatus::Confirmed {
                    self.found(&search, b.culprits);
                }
                done.insert(search.id, summary);
                continue;
            }
            // Every try's run at once (a brittle test's two confirmations with it: its
            // reproducer, the test alone, cannot confirm its state-setters).
            let ahead: Vec<Request> = tries
                .iter()
                .flat_map(|(i, set)| {
                    let s = &pending[*i];
                    std::iter::repeat_n(s.request(set), if s.polluters { 1 } else { 1 + CULPRIT_CONFIRMATIONS })
                })
                .collect();
            self.runs.prefetch(&ahead);
            let mut shown = Vec::new();
            for (i, set) in tries {
                pending[i].tried.push(set.clone());
                if let Some(runs) = self.shows(&pending[i], &set) {
                    shown.push((i, set, runs));
                }
            }
            // Then every victim's confirmation at once: its reproducer's two checks.
            let checks: Vec<Request> = shown
                .iter()
                .filter(|(i, _, _)| pending[*i].polluters)
                .flat_map(|(i, set, _)| {
                    let check = Request::reproducer(&pending[*i].id, self.victim_reproducer(&pending[*i], set));
                    std::iter::repeat_n(check, REPRODUCER_CHECKS)
                })
                .collect();
            self.runs.prefetch(&checks);
            let mut resolved = Vec::new();
            for (i, set, runs) in shown {
                if let Some(summary) = self.confirm_known(&pending[i], &set, runs) {
                    self.found(&pending[i], set);
                    done.insert(pending[i].id.clone(), summary);
                    resolved.push(i);
                }
            }
            for i in resolved.into_iter().rev() {
                pending.remove(i);
            }
        }
        done
    }

    /// The known set of culprits `s` tries next: of its kind, all in its order before it, not
    /// tried for it; the one confirmed for the most tests first. None after [`KNOWN_TRIES`].
    fn candidate(&self, s: &Search) -> Option<Vec<TestId>> {
        if s.tried.len() >= KNOWN_TRIES {
            return None;
        }
        let mut sets: Vec<&Known> = self
            .known
            .iter()
            .filter(|k| k.polluters == s.polluters && !s.tried.contains(&k.culprits))
            .filter(|k| k.culprits.iter().all(|c| s.prefix.before.contains(c)))
            .collect();
        // Stable: among equals, the first found.
        sets.sort_by_key(|k| std::cmp::Reverse(k.tests));
        let set = sets.first()?;
        // In the order they ran before the test.
        Some(s.prefix.before.iter().filter(|t| set.culprits.contains(t)).cloned().collect())
    }

    /// Records `culprits` as `s`'s, confirmed, and as known.
    fn found(&mut self, s: &Search, culprits: Vec<TestId>) {
        let t = self.tallies.tests.entry(s.id.clone()).or_default();
        if s.polluters {
            t.polluters = culprits.clone();
        } else {
            t.state_setters = culprits.clone();
        }
        let mut sorted = culprits;
        sorted.sort();
        match self.known.iter_mut().find(|k| {
            k.polluters == s.polluters && {
                let mut theirs = k.culprits.clone();
                theirs.sort();
                theirs == sorted
            }
        }) {
            Some(k) => k.tests += 1,
            None => self.known.push(Known { culprits: sorted, polluters: s.polluters, tests: 1 }),
        }
    }

    /// Whether a run of the known `culprits` then `s`'s test shows them, and none of them can be
    /// left out (each left out in turn, it does not): the runs that took, or none when a run
    /// says otherwise or could not be had, or the record lacks the first run (it was written
    /// before known culprits were tried, and bisected instead).
    fn shows(&mut self, s: &Search, culprits: &[TestId]) -> Option<u32> {
        let req = s.request(culprits);
        if self.runs.lacks(&req) {
            return None;
        }
        let mut runs = 1;
        if !s.shows(self.failed(&req, &s.id)) {
            return None;
        }
        // A single culprit is minimal: the test was seen alone, where it did the opposite.
        if culprits.len() > 1 {
            for leave in 0..culprits.len() {
                let fewer: Vec<TestId> =
                    culprits.iter().enumerate().filter(|(i, _)| *i != leave).map(|(_, t)| t.clone()).collect();
                runs += 1;
                let got = self.failed(&s.request(&fewer), &s.id);
                if got.is_none() || s.shows(got) {
                    return None;
                }
            }
        }
        Some(runs)
    }

    /// The argv that runs `culprits` then the victim of `s`, as printed.
    fn victim_reproducer(&self, s: &Search, culprits: &[TestId]) -> Vec<String> {
        let mut tests = culprits.to_vec();
        tests.push(s.id.clone());
        self.setup.order_reproducer(&tests, s.prefix.shuffle)
    }

    /// Confirms known culprits that [`Self::shows`] showed after `runs` runs, as a bisection's
    /// result is confirmed, by two more: a victim's are its reproducer's two checks (its
    /// polluters then it, as printed), which then need not run again; a brittle test's are two
    /// more runs. Its account when confirmed.
    fn confirm_known(&mut self, s: &Search, culprits: &[TestId], runs: u32) -> Option<BisectionSummary> {
        let confirmations = if s.polluters {
            let argv = self.victim_reproducer(s, culprits);
            let check = Request::reproducer(&s.id, argv.clone());
            if !(0..REPRODUCER_CHECKS).all(|_| self.reproduced(&check, &s.id, false)) {
                return None;
            }
            self.checked.insert(s.id.clone(), argv);
            REPRODUCER_CHECKS
        } else {
            let req = s.request(culprits);
            if !(0..CULPRIT_CONFIRMATIONS).all(|_| s.shows(self.failed(&req, &s.id))) {
                return None;
            }
            CULPRIT_CONFIRMATIONS
        } as u32;
        Some(s.summary(runs + confirmations, BisectStatus::Confirmed, true))
    }

    /// Bisects the tests before the test in its prefix for its polluters or its state-setters.
    /// A run that could not be had voids the result.
    fn bisect(&mut self, s: &Search) -> (Bisection, BisectionSummary) {
        let mut missing = false;
        let mut fails_after = |tests: &[TestId]| match self.failed(&s.request(tests), &s.id) {
            Some(failed) => failed,
            None => {
                missing = true;
                // No more runs: the bisection's answer is void anyway.
                !s.polluters
            }
        };
        let bisector = Bisector::default();
        let mut b = if s.polluters {
            bisector.polluters(&s.prefix.before, &mut fails_after)
        } else {
            bisector.state_setters(&s.prefix.before, &mut fails_after)
        };
        if missing {
            b.culprits.clear();
            b.status = BisectStatus::BudgetSpent;
        }
        let summary = s.summary(b.runs, b.status, false);
        (b, summary)
    }

    /// Each failing test's reproducer by its category, checked: every check is asked for at
    /// once, then each test's are judged one after the other (the second counts only when the
    /// first failed). The tests whose reproducer failed every check, with it.
    fn reproducers(
        &mut self,
        failing: &[TestId],
        shuffles: &BTreeMap<TestId, Option<u64>>,
    ) -> BTreeMap<TestId, Vec<String>> {
        let mut checks = Vec::new();
        let mut out = BTreeMap::new();
        for id in failing {
            if let Some(argv) = self.checked.get(id) {
                out.insert(id.clone(), argv.clone());
                continue;
            }
            let t = self.tallies.tests.get(id).cloned().unwrap_or_default();
            let category = classify(&t).map(|c| c.category);
            let argv = match category {
                Some(Category::OrderDependentVictim) => {
                    let mut tests = t.polluters.clone();
                    tests.push(id.clone());
                    Some(self.setup.order_reproducer(&tests, shuffles.get(id).copied().flatten()))
                }
                Some(Category::OrderDependentBrittle | Category::Deterministic) => {
                    Some(self.setup.order_reproducer(std::slice::from_ref(id), None))
                }
                Some(Category::NonIdempotent) => self.setup.repeat_reproducer(id),
                _ => None,
            };
            // A non-idempotent test's reproducer must show what its category claims: its first
            // run passing and its second failing (pytest's results and Go's verbose output name
            // each run).
            let repeated = category == Some(Category::NonIdempotent) && self.setup.framework() != Framework::Libtest;
            if let Some(argv) = argv {
                checks.push((id, argv, repeated));
            }
        }
        let ahead: Vec<Request> = checks
            .iter()
            .flat_map(|(id, argv, _)| std::iter::repeat_n(Request::reproducer(id, argv.clone()), REPRODUCER_CHECKS))
            .collect();
        self.runs.prefetch(&ahead);
        for (id, argv, repeated) in checks {
            let check = Request::reproducer(id, argv.clone());
            // One after the other: the second is not asked for when the first did not fail.
            if (0..REPRODUCER_CHECKS).all(|_| self.reproduced(&check, id, repeated)) {
                out.insert(id.clone(), argv);
            }
        }
        out
    }
}

/// The tests whose second run in one process failed after their first passed.
fn second_run_failed(t: &AttemptTests) -> BTreeSet<TestId> {
    let mut runs: BTreeMap<&TestId, Vec<bool>> = BTreeMap::new();
    for r in t.tests.iter().filter(|r| r.outcome != super::TestOutcome::Skip) {
        runs.entry(&r.id).or_default().push(r.outcome.is_failure());
    }
    runs.into_iter().filter(|(_, f)| f.len() >= 2 && !f[0] && f[1]).map(|(id, _)| id.clone()).collect()
}

/// The per-test tallies of a record's shuffled attempts, in plan order (the first failing
/// order of a test is the one of its lowest attempt id, whichever shard or worker ran it).
pub fn shuffled_tallies(record: &crate::record::Record) -> Result<Tallies, crate::record::RecordError> {
    let mut shuffled = Vec::new();
    for attempt in record.attempts()? {
        let attempt = attempt?;
        if let Some(t) = attempt.suite.filter(|t| t.role == Role::Shuffled) {
            shuffled.push((attempt.id, attempt.cell, t));
        }
    }
    shuffled.sort_by_key(|(id, _, _)| *id);
    let mut tallies = Tallies::default();
    for (id, cell, t) in &shuffled {
        tallies.add(*id, cell, t);
    }
    Ok(tallies)
}

/// The suite parts of a record's attempts other than its shuffled ones, in id order (runs had
/// side by side are written as they end).
pub fn runs_by_id(record: &crate::record::Record) -> Result<Vec<(u64, AttemptTests)>, crate::record::RecordError> {
    let mut runs = Vec::new();
    for attempt in record.attempts()? {
        let attempt = attempt?;
        if let Some(t) = attempt.suite.filter(|t| t.role != Role::Shuffled) {
            runs.push((attempt.id, *t));
        }
    }
    runs.sort_by_key(|(id, _)| *id);
    Ok(runs)
}

/// The classification a record holds: its shuffled attempts' tallies, and every confirmation
/// run answered from the record (none is run), `beside` being its side-by-side check's verdict
/// ([`Replay::beside`]); `complete` is false when one was missing (an interrupted hunt).
pub fn of_record(
    record: &crate::record::Record,
    beside: Option<bool>,
) -> Result<Option<Analysis>, crate::record::RecordError> {
    let Some(setup) = record.manifest.extra.suite.as_ref() else { return Ok(None) };
    let tallies = shuffled_tallies(record)?;
    let mut replay = Replay { beside, ..Replay::default() };
    for (_, t) in runs_by_id(record)? {
        replay.add(t);
    }
    let cells: Vec<String> = record.manifest.cells.iter().map(|c| c.name.clone()).collect();
    let mut analysis = analyse(setup, tallies, &cells, &mut replay);
    analysis.complete &= !replay.missing;
    Ok(Some(analysis))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::suite::order::Pytest;
    use crate::kind::suite::setup::SuiteRunner;
    use crate::kind::suite::{TestOutcome, TestResult};

    /// A model of a suite: `v` fails after `p`, `b` fails unless `s` ran before it, `n` fails
    /// its second run in a process, `f` fails on every other run; `c` is clean.
    struct Model {
        runs: u32,
        f_runs: u32,
    }

    impl Runs for Model {
        fn run(&mut self, req: &Request) -> Option<AttemptTests> {
            self.runs += 1;
            let mut results = Vec::new();
            let mut seen: Vec<&str> = Vec::new();
            let argv_tests: Vec<TestId> = req.argv.iter().filter(|a| a.len() == 1).cloned().collect();
            let mut tests = if req.role == Role::Reproducer { argv_tests } else { req.tests.clone() };
            if matches!(req.role, Role::Repeat | Role::RepeatAll) {
                tests = tests.iter().flat_map(|t| [t.clone(), t.clone()]).collect();
            }
            for t in &tests {
                let fail = match t.as_str() {
                    "v" => seen.contains(&"p"),
                    "b" => !seen.contains(&"s"),
                    "n" => seen.contains(&"n"),
                    "d" => true,
                    "f" => {
                        self.f_runs += 1;
                        self.f_runs % 2 == 0
                    }
                    _ => false,
                };
                seen.push(t);
                let outcome = if fail { TestOutcome::Fail } else { TestOutcome::Pass };
                results.push(TestResult { id: t.clone(), outcome, message: None });
            }
            Some(AttemptTests {
                role: req.role,
                subject: req.subject.clone(),
                order: req.tests.clone(),
                shuffle: None,
                tests: results,
                reproducer: req.argv.clone(),
                unreported: vec![],
                incomplete: None,
                failed_otherwise: None,
                strategy: None,
            })
        }
    }

    /// A suite of named tests whose outcome `fails(test, tests run before it in the process)`
    /// says, run as `Live` runs it: what it is asked to prefetch runs at once, ahead (when
    /// `ahead`), into its memo; every run it makes is kept, in order, as a record would.
    struct Suite {
        selection: Vec<TestId>,
        fails: fn(&str, &[&str]) -> bool,
        ahead: bool,
        memo: Replay,
        recorded: Vec<AttemptTests>,
        /// Requests whose run the record lacks (as a record written before they were asked).
        lacking: Vec<Request>,
        /// What its side-by-side check says, when it makes one (its first runs then go ahead).
        beside: Option<bool>,
    }

    impl Suite {
        fn new(selection: &[&str], fails: fn(&str, &[&str]) -> bool, ahead: bool) -> Self {
            let selection = selection.iter().map(|t| t.to_string()).collect();
            let (memo, recorded, lacking) = (Replay::default(), Vec::new(), Vec::new());
            Self { selection, fails, ahead, memo, recorded, lacking, beside: None }
        }

        fn execute(&mut self, req: &Request) -> AttemptTests {
            let named: Vec<TestId> = req.argv.iter().filter(|a| self.selection.contains(a)).cloned().collect();
            let mut tests = if req.role == Role::Reproducer { named } else { req.tests.clone() };
            if matches!(req.role, Role::Repeat | Role::RepeatAll) {
                tests = tests.iter().flat_map(|t| [t.clone(), t.clone()]).collect();
            }
            let mut seen: Vec<&str> = Vec::new();
            let mut results = Vec::new();
            for t in &tests {
                let outcome = if (self.fails)(t, &seen) { TestOutcome::Fail } else { TestOutcome::Pass };
                results.push(TestResult { id: t.clone(), outcome, message: None });
                seen.push(t);
            }
            let t = AttemptTests {
                role: req.role,
                subject: req.subject.clone(),
                order: req.tests.clone(),
                shuffle: req.shuffle,
                tests: results,
                reproducer: req.argv.clone(),
                unreported: vec![],
                incomplete: None,
                failed_otherwise: None,
                strategy: req.strategy,
            };
            self.recorded.push(t.clone());
            t
        }

        fn shuffled(&mut self, orders: &[&[&str]]) -> Tallies {
            let mut tallies = Tallies::default();
            for (i, order) in orders.iter().enumerate() {
                let tests = order.iter().map(|t| t.to_string()).collect();
                let req = Request {
                    role: Role::Shuffled,
                    tests,
                    ..Request::about(Role::Shuffled, &"x".into(), vec![], None)
                };
                let req = Request { subject: None, ..req };
                let t = self.execute(&req);
                tallies.add(i as u64, "default", &t);
            }
            self.recorded.clear();
            tallies
        }

        fn setup(&self) -> SuiteSetup {
            SuiteSetup {
                runner: SuiteRunner::Pytest { pytest: Pytest::new("py"), paths: vec![] },
                selection: self.selection.clone(),
                files: "/rec".into(),
                python_path: None,
                collect_seconds: 0.0,
            }
        }

        /// The record's runs, replayed.
        fn replay(&self) -> Replay {
            let mut replay = Replay { beside: self.beside, ..Replay::default() };
            self.recorded.iter().cloned().for_each(|t| replay.add(t));
            replay
        }

        fn count(&self, role: Role) -> usize {
            self.recorded.iter().filter(|t| t.role == role).count()
        }
    }

    impl Runs for Suite {
        fn run(&mut self, req: &Request) -> Option<AttemptTests> {
            if let Some(t) = self.memo.take(req) {
                return Some(t);
            }
            Some(self.execute(req))
        }

        fn prefetch(&mut self, reqs: &[Request]) {
            if !self.ahead {
                return;
            }
            let mut held: HashMap<Request, usize> = HashMap::new();
            for req in reqs {
                let h = held.entry(req.clone()).or_insert_with(|| self.memo.held(req));
                if *h > 0 {
                    *h -= 1;
                    continue;
                }
                let t = self.execute(req);
                self.memo.add(t);
            }
        }

        fn lacks(&self, req: &Request) -> bool {
            self.lacking.contains(req)
        }

        fn side_by_side(&mut self, _tests: usize, first: &[Request]) -> Option<bool> {
            if self.beside.is_some() {
                for req in first {
                    let t = self.execute(req);
                    self.memo.add(t);
                }
            }
            self.beside
        }
    }

    /// Eight victims of one polluter `p` among clean tests `c1`..`c4`.
    const SHARED: [&str; 13] = ["p", "c1", "v1", "v2", "c2", "v3", "v4", "c3", "v5", "v6", "c4", "v7", "v8"];

    fn eight_victims(t: &str, before: &[&str]) -> bool {
        t.starts_with('v') && before.contains(&"p")
    }

    #[test]
    fn victims_of_one_polluter_are_bisected_once_and_the_others_try_it() {
        for ahead in [false, true] {
            let mut suite = Suite::new(&SHARED, eight_victims, ahead);
            let tallies = suite
                .shuffled(&[&SHARED, &["v1", "c1", "v2", "c2", "v3", "v4", "c3", "v5", "v6", "c4", "v7", "v8", "p"]]);
            let analysis = analyse(&suite.setup(), tallies.clone(), &["default".into()], &mut suite);
            assert!(analysis.complete);
            let tests = &analysis.summary.tests;
            assert_eq!(tests.len(), 8);
            for t in tests {
                assert_eq!(
                    (t.category, t.polluters.as_slice()),
                    (Category::OrderDependentVictim, &["p".to_owned()][..]),
                    "{}",
                    t.id
                );
                assert_eq!(t.reproducer[t.reproducer.len() - 2..], ["p", t.id.as_str()]);
                let b = t.bisection.as_ref().unwrap();
                assert_eq!((b.status, b.strategy), (BisectStatus::Confirmed, None));
            }
            let known = tests.iter().filter(|t| t.bisection.as_ref().unwrap().known).count();
            assert_eq!(known, 7, "one bisection, seven tries of its polluter");
            // Each try: one run, then the reproducer's two checks, which are not run again.
            let bisected = tests.iter().find(|t| !t.bisection.as_ref().unwrap().known).unwrap();
            let bisect_runs = bisected.bisection.as_ref().unwrap().runs as usize;
            assert_eq!(suite.count(Role::Bisect), bisect_runs + 7);
            assert_eq!(suite.count(Role::Reproducer), 16);
            assert_eq!(suite.count(Role::Alone), 24);
            // The record concludes the same, with nothing missing.
            let mut replay = suite.replay();
            let again = analyse(&suite.setup(), tallies, &["default".into()], &mut replay);
            assert!(!replay.missing && again.complete);
            assert_eq!(again.summary, analysis.summary, "ahead: {ahead}");
        }
    }

    #[test]
    fn runs_made_beside_a_suite_that_failed_there_are_made_again_and_the_record_agrees() {
        for beside in [true, false] {
            let mut suite = Suite::new(&SHARED, eight_victims, beside);
            suite.beside = Some(beside);
            let tallies = suite.shuffled(&[&SHARED]);
            let analysis = analyse(&suite.setup(), tallies.clone(), &["default".into()], &mut suite);
            assert!(analysis.summary.tests.iter().all(|t| t.category == Category::OrderDependentVictim));
            let again = if beside { 1 } else { 2 };
            assert_eq!((suite.count(Role::RepeatAll), suite.count(Role::Alone)), (again, 24 * again));
            let mut replay = suite.replay();
            let replayed = analyse(&suite.setup(), tallies, &["default".into()], &mut replay);
            assert!(!replay.missing);
            assert_eq!(replayed.summary, analysis.summary, "beside: {beside}");
        }
    }

    #[test]
    fn a_known_polluter_that_does_not_explain_a_test_leads_to_its_bisection() {
        // v1 fails after p, v2 only after q: v2's order holds p too, which it tries first.
        fn fails(t: &str, before: &[&str]) -> bool {
            (t == "v1" && before.contains(&"p")) || (t == "v2" && before.contains(&"q"))
        }
        let mut suite = Suite::new(&["p", "q", "c", "v1", "v2"], fails, true);
        let tallies = suite.shuffled(&[&["p", "q", "c", "v1", "v2"]]);
        let analysis = analyse(&suite.setup(), tallies.clone(), &["default".into()], &mut suite);
        let by_id: BTreeMap<&str, _> = analysis.summary.tests.iter().map(|t| (t.id.as_str(), t)).collect();
        assert_eq!(by_id["v1"].polluters, ["p"]);
        assert_eq!(by_id["v2"].polluters, ["q"]);
        assert!(!by_id["v2"].bisection.as_ref().unwrap().known, "bisected after p did not explain it");
        let mut replay = suite.replay();
        assert_eq!(analyse(&suite.setup(), tallies, &["default".into()], &mut replay).summary, analysis.summary);
    }

    #[test]
    fn a_record_written_before_known_polluters_were_tried_reads_as_it_was_written() {
        // v2 fails after p or q; its order holds q first, so its own bisection found q. A record
        // of that bisection lacks the run of p then v2 that trying p asks for.
        fn fails(t: &str, before: &[&str]) -> bool {
            (t == "v1" && before.contains(&"p")) || (t == "v2" && (before.contains(&"p") || before.contains(&"q")))
        }
        let mut suite = Suite::new(&["q", "p", "c", "v1", "v2"], fails, false);
        let tallies = suite.shuffled(&[&["q", "c", "p", "v1", "v2"]]);
        let try_p = Request::about(Role::Bisect, &"v2".into(), vec!["p".into(), "v2".into()], None);
        suite.lacking.push(try_p.clone());
        let old = analyse(&suite.setup(), tallies.clone(), &["default".into()], &mut suite);
        let v2 = old.summary.tests.iter().find(|t| t.id == "v2").unwrap();
        assert_eq!((v2.polluters.as_slice(), v2.bisection.as_ref().unwrap().known), (&["q".to_owned()][..], false));
        let mut replay = suite.replay();
        assert!(replay.lacks(&try_p));
        let again = analyse(&suite.setup(), tallies, &["default".into()], &mut replay);
        assert!(!replay.missing, "every run it asks for is in the record");
        assert_eq!(again.summary, old.summary);
    }

    #[test]
    fn brittle_tests_of_one_state_setter() {
        fn fails(t: &str, before: &[&str]) -> bool {
            t.starts_with('b') && !before.contains(&"s")
        }
        let mut suite = Suite::new(&["s", "c", "b1", "b2", "b3"], fails, true);
        let tallies = suite.shuffled(&[&["b1", "b2", "b3", "c", "s"], &["s", "c", "b1", "b2", "b3"]]);
        let analysis = analyse(&suite.setup(), tallies.clone(), &["default".into()], &mut suite);
        for t in &analysis.summary.tests {
            assert_eq!(
                (t.category, t.state_setters.as_slice()),
                (Category::OrderDependentBrittle, &["s".to_owned()][..])
            );
        }
        let known: Vec<bool> = analysis.summary.tests.iter().map(|t| t.bisection.as_ref().unwrap().known).collect();
        assert_eq!(known.iter().filter(|k| **k).count(), 2, "{known:?}");
        let mut replay = suite.replay();
        assert_eq!(analyse(&suite.setup(), tallies, &["default".into()], &mut replay).summary, analysis.summary);
    }

    #[test]
    fn each_category_with_its_culprit_and_a_checked_reproducer() {
        let setup = SuiteSetup {
            runner: SuiteRunner::Pytest { pytest: Pytest::new("py"), paths: vec![] },
            selection: ["p", "v", "s", "b", "n", "f", "c", "d"].map(String::from).to_vec(),
            files: "/rec".into(),
            python_path: None,
            collect_seconds: 0.0,
        };
        let mut model = Model { runs: 0, f_runs: 0 };
        let mut tallies = Tallies::default();
        for (i, order) in
            [["c", "p", "b", "v", "f", "n", "s", "d"], ["s", "v", "b", "d", "f", "p", "c", "n"]].iter().enumerate()
        {
            let req = Request {
                role: Role::Shuffled,
                subject: None,
                tests: order.map(String::from).to_vec(),
                shuffle: None,
                argv: vec![],
                strategy: None,
            };
            let t = model.run(&req).unwrap();
            tallies.add(i as u64, "default", &t);
        }
        let analysis = analyse(&setup, tallies, &["default".into()], &mut model);
        assert!(analysis.complete);
        let by_id: BTreeMap<&str, _> = analysis.summary.tests.iter().map(|t| (t.id.as_str(), t)).collect();
        assert_eq!(by_id["v"].category, Category::OrderDependentVictim);
        assert_eq!(by_id["v"].polluters, ["p"]);
        assert_eq!(by_id["v"].reproducer[by_id["v"].reproducer.len() - 2..], ["p", "v"]);
        assert_eq!(by_id["b"].category, Category::OrderDependentBrittle);
        assert_eq!(by_id["b"].state_setters, ["s"]);
        assert_eq!(by_id["n"].category, Category::NonIdempotent);
        assert_eq!(by_id["f"].category, Category::Flaky);
        assert!(by_id["f"].reproducer.is_empty());
        assert!(!by_id.contains_key("c") && !by_id.contains_key("p"));
        assert_eq!(by_id["d"].category, Category::Deterministic);
        assert_eq!(by_id["d"].reproducer.last().map(String::as_str), Some("d"), "the test alone, checked");
        assert_eq!(by_id["v"].bisection.as_ref().unwrap().status, BisectStatus::Confirmed);
    }

    #[test]
    fn a_replay_answers_each_recorded_run_once_and_says_what_is_missing() {
        let t = AttemptTests {
            role: Role::Alone,
            subject: Some("v".into()),
            order: vec!["v".into()],
            shuffle: None,
            tests: vec![],
            reproducer: vec![],
            unreported: vec![],
            incomplete: None,
            failed_otherwise: None,
            strategy: None,
        };
        let mut replay = Replay::default();
        replay.add(t.clone());
        let req = Request::about(Role::Alone, &"v".into(), vec!["v".into()], None);
        assert_eq!(replay.run(&req), Some(t));
        assert!(!replay.missing);
        assert_eq!(replay.run(&req), None);
        assert!(replay.missing);
    }

    #[test]
    fn second_runs_that_failed_after_a_pass() {
        let r = |id: &str, o| TestResult { id: id.into(), outcome: o, message: None };
        let t = AttemptTests {
            role: Role::RepeatAll,
            subject: None,
            order: vec![],
            shuffle: None,
            tests: vec![
                r("a", TestOutcome::Pass),
                r("b", TestOutcome::Fail),
                r("a", TestOutcome::Fail),
                r("b", TestOutcome::Fail),
            ],
            reproducer: vec![],
            unreported: vec![],
            incomplete: None,
            failed_otherwise: None,
            strategy: None,
        };
        assert_eq!(second_run_failed(&t).into_iter().collect::<Vec<_>>(), ["a"]);
    }
}
