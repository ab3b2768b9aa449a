//! The classification of a suite hunt's failing tests, with their own confirmation runs: every
//! test twice in one process, each failing test alone, twice in one process, bisected for its
//! polluters or state-setters, and its reproducer checked. One procedure, [`analyse`], drives
//! both the live hunt (its [`Runs`] start real attempts and record them) and the analysis of a
//! record ([`Replay`] answers from the attempts recorded), so that `report`, `--resume` and
//! `merge` reach the same conclusions as the run did, without running anything.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use super::bisect::{BisectStatus, Bisection, Bisector};
use super::classify::{classify, Category};
use super::record::{AttemptTests, Prefix, Role, Tallies};
use super::setup::{Request, SuiteSetup};
use super::summary::SuiteSummary;
use super::{Framework, TestId};
pub use crate::schema::suite::BisectionSummary;

/// Confirmation runs of a failing test alone: "passes alone" needs several.
pub const ALONE_RUNS: usize = 3;
/// Runs of a test twice in one process, for one whose second run failed in the repeat-all pass:
/// all must confirm it ([`super::classify::CONFIRMING_REPEATS`]).
pub const REPEAT_RUNS: usize = super::classify::CONFIRMING_REPEATS as usize;
/// Runs a reproducer must fail in, one after the other, before it is printed.
pub const REPRODUCER_CHECKS: usize = 2;

/// Runs (or finds) the runs the classification asks for.
pub trait Runs {
    /// The suite part of a run of `req` in the baseline cell; none when it cannot be had (the
    /// hunt was interrupted, or the record does not hold it).
    fn run(&mut self, req: &Request) -> Option<AttemptTests>;

    /// The tests about to be classified, once, before their runs (for the display).
    fn classifying(&mut self, _tests: &[TestId]) {}
}

/// The recorded confirmation, repetition, bisection and reproducer runs, each found by what it
/// ran; a request asked for more often than recorded has no answer.
#[derive(Debug, Default)]
pub struct Replay {
    memo: HashMap<Request, VecDeque<AttemptTests>>,
    /// A request found no recorded run.
    pub missing: bool,
}

impl Replay {
    /// Adds a recorded run (shuffled attempts are not replayed: they are the hunt's input).
    pub fn add(&mut self, t: AttemptTests) {
        if t.role != Role::Shuffled {
            self.memo.entry(Request::of_record(&t)).or_default().push_back(t);
        }
    }

    /// The next recorded run of `req`, if one is left.
    pub fn take(&mut self, req: &Request) -> Option<AttemptTests> {
        self.memo.get_mut(req).and_then(VecDeque::pop_front)
    }
}

impl Runs for Replay {
    fn run(&mut self, req: &Request) -> Option<AttemptTests> {
        let found = self.take(req);
        self.missing |= found.is_none();
        found
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
/// whose second run in one process failed), asking `runs` for each confirmation run.
pub fn analyse(setup: &SuiteSetup, mut tallies: Tallies, cells: &[String], runs: &mut dyn Runs) -> Analysis {
    tallies.order_cells(cells);
    let mut c = Classifier { setup, runs, tallies, complete: true };
    // Every test twice in one process: the only way a non-idempotent test shows, since each
    // attempt runs each test once.
    let mut second_failed = BTreeSet::new();
    if let Some(req) = setup.repeat_all() {
        if let Some(t) = c.run(&req) {
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
    let mut entries = Vec::new();
    let mut bisections = BTreeMap::new();
    for id in failing {
        let (reproducer, bisection) = c.test(&id, second_failed.contains(&id));
        if let Some(b) = bisection {
            bisections.insert(id.clone(), b);
        }
        let tally = c.tallies.tests.get(&id).cloned().unwrap_or_default();
        entries.push((id.clone(), tally, reproducer, c.tallies.messages.get(&id).cloned()));
    }
    let mut summary = SuiteSummary::build(setup.framework(), setup.selection.len() as u64, entries);
    for t in &mut summary.tests {
        t.bisection = bisections.remove(&t.id);
    }
    summary.add_incomplete(&c.tallies);
    Analysis { summary, complete: c.complete }
}

struct Classifier<'a> {
    setup: &'a SuiteSetup,
    runs: &'a mut dyn Runs,
    tallies: Tallies,
    complete: bool,
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

    /// One failing test's confirmation runs; its reproducer (empty when none fails twice) and
    /// its bisection.
    fn test(&mut self, id: &TestId, second_failed: bool) -> (Vec<String>, Option<BisectionSummary>) {
        let alone = Request::about(Role::Alone, id, vec![id.clone()], None);
        for _ in 0..ALONE_RUNS {
            self.run(&alone);
        }
        if second_failed {
            let repeat = Request::about(Role::Repeat, id, vec![id.clone()], None);
            for _ in 0..REPEAT_RUNS {
                self.run(&repeat);
            }
        }
        let t = self.tallies.tests.get(id).cloned().unwrap_or_default();
        let passes_alone = t.alone_runs > 0 && t.alone_failures == 0;
        let fails_alone = t.alone_runs > 0 && t.alone_failures == t.alone_runs;
        let orders = self.setup.framework().orders();
        let mut bisection = None;
        let mut shuffle = None;
        if orders && passes_alone && !t.repeat_confirmed() {
            if let Some(prefix) = self.tallies.first_failure.get(id).cloned() {
                let (b, s) = self.bisect(id, &prefix, true);
                if b.status == BisectStatus::Confirmed {
                    self.tallies.tests.entry(id.clone()).or_default().polluters = b.culprits.clone();
                }
                shuffle = prefix.shuffle;
                bisection = Some(s);
            }
        } else if orders && fails_alone {
            if let Some(prefix) = self.tallies.first_pass.get(id).cloned() {
                let (b, s) = self.bisect(id, &prefix, false);
                if b.status == BisectStatus::Confirmed {
                    self.tallies.tests.entry(id.clone()).or_default().state_setters = b.culprits.clone();
                }
                bisection = Some(s);
            }
        }
        let t = self.tallies.tests.get(id).cloned().unwrap_or_default();
        let category = classify(&t).map(|c| c.category);
        let argv = match category {
            Some(Category::OrderDependentVictim) => {
                let mut tests = t.polluters.clone();
                tests.push(id.clone());
                Some(self.setup.order_reproducer(&tests, shuffle))
            }
            Some(Category::OrderDependentBrittle | Category::Deterministic) => {
                Some(self.setup.order_reproducer(std::slice::from_ref(id), None))
            }
            Some(Category::NonIdempotent) => self.setup.repeat_reproducer(id),
            _ => None,
        };
        let Some(argv) = argv else { return (Vec::new(), bisection) };
        let check = Request::reproducer(id, argv.clone());
        // A non-idempotent test's reproducer must show what its category claims: its first run
        // passing and its second failing (pytest's results and Go's test2json events name each
        // run; libtest has no such reproducer).
        let repeated = category == Some(Category::NonIdempotent) && self.setup.framework() != Framework::Libtest;
        // One after the other: the second is not run when the first did not fail.
        let checked = (0..REPRODUCER_CHECKS).all(|_| self.reproduced(&check, id, repeated));
        (if checked { argv } else { Vec::new() }, bisection)
    }

    /// Bisects the tests before `id` in `prefix` for its polluters (`polluters`) or its
    /// state-setters. A run that could not be had voids the result.
    fn bisect(&mut self, id: &TestId, prefix: &Prefix, polluters: bool) -> (Bisection, BisectionSummary) {
        let mut missing = false;
        let mut fails_after = |tests: &[TestId]| {
            let mut order = tests.to_vec();
            order.push(id.clone());
            let req = Request::about(Role::Bisect, id, order, prefix.shuffle);
            match self.failed(&req, id) {
                Some(failed) => failed,
                None => {
                    missing = true;
                    // No more runs: the bisection's answer is void anyway.
                    !polluters
                }
            }
        };
        let bisector = Bisector::default();
        let mut b = if polluters {
            bisector.polluters(&prefix.before, &mut fails_after)
        } else {
            bisector.state_setters(&prefix.before, &mut fails_after)
        };
        if missing {
            b.culprits.clear();
            b.status = BisectStatus::BudgetSpent;
        }
        let summary = BisectionSummary {
            searched: if polluters { "polluters" } else { "state-setters" }.to_owned(),
            prefix: prefix.before.len(),
            runs: b.runs,
            status: b.status,
        };
        (b, summary)
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

/// The classification a record holds: its shuffled attempts' tallies, and every confirmation
/// run answered from the record (none is run); `complete` is false when one was missing (an
/// interrupted hunt).
pub fn of_record(record: &crate::record::Record) -> Result<Option<Analysis>, crate::record::RecordError> {
    let Some(setup) = record.manifest.extra.suite.as_ref() else { return Ok(None) };
    let tallies = shuffled_tallies(record)?;
    let mut replay = Replay::default();
    for attempt in record.attempts()? {
        if let Some(t) = attempt?.suite {
            replay.add(*t);
        }
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
