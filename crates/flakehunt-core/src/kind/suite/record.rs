//! What a suite attempt adds to its line of `attempts.jsonl` (the order that ran and each
//! test's result), and the per-test tallies the classification starts from, computed from
//! those lines alone so that the live run, `report`, `--resume` and `merge` agree. Main types:
//! [`AttemptTests`], [`Tallies`].

use std::collections::BTreeMap;

use super::classify::{ConditionTally, TestTally};
use super::{TestId, TestOutcome, TestResult};
pub use crate::schema::suite::{AttemptTests, Prefix, Role};

/// What the attempts say about each test.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tallies {
    /// Per test (subtests included), without polluters and state-setters: those come from the
    /// bisections.
    pub tests: BTreeMap<TestId, TestTally>,
    /// A test's first failure's message.
    pub messages: BTreeMap<TestId, String>,
    /// The first shuffled attempt a test failed in: where a victim's polluters are looked for.
    pub first_failure: BTreeMap<TestId, Prefix>,
    /// The first shuffled attempt a test passed in: where a brittle test's state-setters are.
    pub first_pass: BTreeMap<TestId, Prefix>,
    /// Per test, the shuffled attempts it was to run in and reported nothing in.
    pub unreported: BTreeMap<TestId, u64>,
    /// The attempts (of any role) whose tests did not all report, in the order added.
    pub incomplete: Vec<IncompleteAttempt>,
    /// The attempts (of any role) whose process failed though none of their tests did
    /// (`unreported` is 0 in each).
    pub failed_otherwise: Vec<IncompleteAttempt>,
}

/// An attempt whose tests did not all report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncompleteAttempt {
    /// Its id.
    pub attempt: u64,
    /// Why it ran.
    pub role: Role,
    /// Why its tests did not all report.
    pub why: String,
    /// How many of its tests reported nothing.
    pub unreported: u64,
}

impl Tallies {
    /// Adds one attempt (its id, its cell's name and its suite part). Skipped tests count
    /// for nothing; bisection, reproducer and side-by-side runs only for messages.
    pub fn add(&mut self, attempt: u64, cell: &str, a: &AttemptTests) {
        if let Some(why) = &a.incomplete {
            self.incomplete.push(IncompleteAttempt {
                attempt,
                role: a.role,
                why: why.clone(),
                unreported: a.unreported.len() as u64,
            });
        }
        if let Some(why) = &a.failed_otherwise {
            self.failed_otherwise.push(IncompleteAttempt { attempt, role: a.role, why: why.clone(), unreported: 0 });
        }
        for r in &a.tests {
            if r.outcome.is_failure() {
                if let Some(m) = &r.message {
                    self.messages.entry(r.id.clone()).or_insert_with(|| m.clone());
                }
            }
        }
        match a.role {
            Role::Shuffled => self.add_shuffled(attempt, cell, a),
            Role::Alone => {
                for (id, failed) in per_test(&a.tests).into_iter().filter(|(id, _)| Some(*id) == a.subject.as_ref()) {
                    let t = self.tests.entry(id.clone()).or_default();
                    t.alone_runs += 1;
                    t.alone_failures += u64::from(failed);
                }
            }
            // A confirmation of a test twice in one process counts when the test reported: it
            // confirms when its first run passed and its second failed. The repeat-all pass only
            // names the tests to confirm: one noisy second run there (a timing test on a loaded
            // machine) is no evidence of a test that breaks its own state.
            Role::Repeat => {
                let Some(subject) = &a.subject else { return };
                if let Some(confirmed) = repeat_confirmed(&a.tests, subject) {
                    let t = self.tests.entry(subject.clone()).or_default();
                    t.repeat_runs += 1;
                    t.repeat_failures += u64::from(confirmed);
                }
            }
            Role::RepeatAll | Role::Bisect | Role::Reproducer | Role::SideBySide => {}
        }
    }

    fn add_shuffled(&mut self, attempt: u64, cell: &str, a: &AttemptTests) {
        for id in &a.unreported {
            *self.unreported.entry(id.clone()).or_default() += 1;
            self.tests.entry(id.clone()).or_default().unreported += 1;
        }
        for (id, failed) in per_test(&a.tests) {
            let t = self.tests.entry(id.clone()).or_default();
            t.attempts += 1;
            t.failures += u64::from(failed);
            match t.conditions.iter_mut().find(|c| c.name == cell) {
                Some(c) => {
                    c.runs += 1;
                    c.failures += u64::from(failed);
                }
                None => {
                    t.conditions.push(ConditionTally { name: cell.to_owned(), runs: 1, failures: u64::from(failed) })
                }
            }
            // A subtest is replayed as its top-level test.
            // (A pytest node id holds `/` in its path: it is found as itself first.)
            let top = id.split('/').next().unwrap_or(id);
            let Some(pos) = a.order.iter().position(|t| t == id).or_else(|| a.order.iter().position(|t| t == top))
            else {
                continue;
            };
            let prefix =
                || Prefix { attempt, before: a.order[..pos].to_vec(), shuffle: a.shuffle, strategy: a.strategy };
            let first = if failed { &mut self.first_failure } else { &mut self.first_pass };
            first.entry(id.clone()).or_insert_with(prefix);
        }
    }

    /// Puts each test's cells in the order of `cells` (the baseline first), as the
    /// classification expects; cells a test never ran in are left out.
    pub fn order_cells(&mut self, cells: &[String]) {
        for t in self.tests.values_mut() {
            t.conditions.sort_by_key(|c| cells.iter().position(|n| *n == c.name).unwrap_or(usize::MAX));
        }
    }
}

/// Each test that ran (was not skipped) once, in the order of its first result, and whether
/// any of its results failed: pytest writes a test whose call failed and whose teardown raised
/// as two results, which are one run of the test.
fn per_test(results: &[TestResult]) -> Vec<(&TestId, bool)> {
    let mut out: Vec<(&TestId, bool)> = Vec::new();
    let mut at: std::collections::HashMap<&TestId, usize> = std::collections::HashMap::new();
    for r in results.iter().filter(|r| r.outcome != TestOutcome::Skip) {
        match at.get(&r.id) {
            Some(&i) => out[i].1 |= r.outcome.is_failure(),
            None => {
                at.insert(&r.id, out.len());
                out.push((&r.id, r.outcome.is_failure()));
            }
        }
    }
    out
}

/// Whether a run of `test` twice in one process shows it failing its second run after its first
/// passed (each runner reports one result per run of a test, in order: pytest's plugin frames a
/// run's phases between its start and its finish); none when it did not run at all, and no
/// confirmation when it ran once (a reproducer that could not repeat it).
pub fn repeat_confirmed(results: &[TestResult], test: &str) -> Option<bool> {
    let runs: Vec<&TestResult> = results.iter().filter(|r| r.id == test && r.outcome != TestOutcome::Skip).collect();
    match runs.as_slice() {
        [] => None,
        [first, second, ..] => Some(first.outcome == TestOutcome::Pass && second.outcome.is_failure()),
        [_] => Some(false),
    }
}

/// The phase a classification attempt is recorded with.
pub fn role_name(role: Role) -> &'static str {
    match role {
        Role::Shuffled => "shuffled",
        Role::Alone => "alone",
        Role::Repeat => "repeat",
        Role::RepeatAll => "repeat-all",
        Role::Bisect => "bisect",
        Role::Reproducer => "reproducer",
        Role::SideBySide => "side-by-side",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::suite::TestOutcome::{Error, Fail, Pass, Skip};

    fn results(list: &[(&str, TestOutcome)]) -> Vec<TestResult> {
        list.iter()
            .map(|&(id, o)| TestResult {
                id: id.into(),
                outcome: o,
                message: (o == Fail).then(|| format!("{id} failed")),
            })
            .collect()
    }

    fn shuffled(order: &[&str], outcomes: &[(&str, TestOutcome)]) -> AttemptTests {
        AttemptTests {
            role: Role::Shuffled,
            subject: None,
            order: order.iter().map(|s| s.to_string()).collect(),
            shuffle: Some(99),
            tests: results(outcomes),
            reproducer: vec![],
            unreported: vec![],
            incomplete: None,
            failed_otherwise: None,
            strategy: None,
        }
    }

    #[test]
    fn tallies_per_role_and_where_to_bisect() {
        let mut t = Tallies::default();
        t.add(1, "default", &shuffled(&["p", "v", "s"], &[("p", Pass), ("v", Fail), ("s", Skip)]));
        t.add(2, "cpu-starved", &shuffled(&["v", "p"], &[("v", Pass), ("p", Pass)]));
        t.add(3, "default", &shuffled(&["x", "p", "v"], &[("x", Pass), ("p", Pass), ("v", Fail)]));
        let alone = |o| AttemptTests {
            role: Role::Alone,
            subject: Some("v".into()),
            order: vec!["v".into()],
            shuffle: None,
            tests: results(&[("v", o)]),
            reproducer: vec![],
            unreported: vec![],
            incomplete: None,
            failed_otherwise: None,
            strategy: None,
        };
        t.add(4, "default", &alone(Pass));
        t.add(5, "default", &alone(Pass));
        let repeat = AttemptTests {
            role: Role::Repeat,
            subject: Some("v".into()),
            order: vec!["v".into()],
            shuffle: None,
            tests: results(&[("v", Pass), ("v", Pass)]),
            reproducer: vec![],
            unreported: vec![],
            incomplete: None,
            failed_otherwise: None,
            strategy: None,
        };
        t.add(6, "default", &repeat);
        let all = AttemptTests {
            role: Role::RepeatAll,
            subject: None,
            order: vec!["p".into(), "n".into()],
            shuffle: None,
            tests: results(&[("p", Pass), ("p", Pass), ("n", Pass), ("n", Fail), ("x", Fail), ("x", Fail)]),
            reproducer: vec![],
            unreported: vec![],
            incomplete: None,
            failed_otherwise: None,
            strategy: None,
        };
        t.add(7, "default", &all);
        let bisect = AttemptTests {
            role: Role::Bisect,
            subject: Some("v".into()),
            order: vec![],
            shuffle: None,
            tests: results(&[("v", Fail)]),
            reproducer: vec![],
            unreported: vec![],
            incomplete: None,
            failed_otherwise: None,
            strategy: None,
        };
        t.add(8, "default", &bisect);

        let v = &t.tests["v"];
        assert_eq!(
            (v.attempts, v.failures, v.alone_runs, v.alone_failures, v.repeat_runs, v.repeat_failures),
            (3, 2, 2, 0, 1, 0)
        );
        assert_eq!(
            v.conditions,
            [
                ConditionTally { name: "default".into(), runs: 2, failures: 2 },
                ConditionTally { name: "cpu-starved".into(), runs: 1, failures: 0 }
            ]
        );
        assert!(!t.tests.contains_key("s"), "a skip counts for nothing");
        assert!(!t.tests.contains_key("n"), "the repeat-all pass only names tests to confirm");
        let r = |list: &[(&str, TestOutcome)]| repeat_confirmed(&results(list), "n");
        assert_eq!(r(&[("n", Pass), ("x", Fail), ("n", Fail)]), Some(true));
        assert_eq!(r(&[("n", Fail), ("n", Fail)]), Some(false), "a first run that failed confirms nothing");
        assert_eq!(r(&[("n", Pass)]), Some(false), "ran once: not repeated");
        assert_eq!(r(&[("x", Pass)]), None);
        assert_eq!(
            t.first_failure["v"],
            Prefix { attempt: 1, before: vec!["p".into()], shuffle: Some(99), strategy: None }
        );
        assert_eq!(t.first_pass["v"], Prefix { attempt: 2, before: vec![], shuffle: Some(99), strategy: None });
        assert_eq!(t.messages["v"], "v failed");

        let mut cells = t.clone();
        cells.order_cells(&["cpu-starved".into(), "default".into()]);
        assert_eq!(cells.tests["v"].conditions[0].name, "cpu-starved");
    }

    #[test]
    fn a_failed_call_and_teardown_are_one_run() {
        let mut t = Tallies::default();
        t.add(1, "default", &shuffled(&["a", "b"], &[("a", Fail), ("a", Error), ("b", Pass)]));
        t.add(2, "default", &shuffled(&["b", "a"], &[("b", Pass), ("a", Pass)]));
        assert_eq!((t.tests["a"].attempts, t.tests["a"].failures), (2, 1));
        assert_eq!(t.tests["a"].conditions[0].runs, 2);
    }

    #[test]
    fn a_node_id_with_a_path_is_found_in_the_order_as_itself() {
        let mut t = Tallies::default();
        let (p, v) = ("tests/a.py::test_p", "tests/b.py::test_v");
        t.add(1, "default", &shuffled(&[p, v], &[(p, Pass), (v, Fail)]));
        assert_eq!(t.first_failure[v].before, [p], "not looked up as `tests`, the part before its first /");
    }

    #[test]
    fn a_subtest_is_replayed_from_its_parents_place() {
        let mut t = Tallies::default();
        t.add(1, "default", &shuffled(&["TestA", "TestB"], &[("TestA", Pass), ("TestB/sub", Fail), ("TestB", Fail)]));
        assert_eq!(t.first_failure["TestB/sub"].before, ["TestA"]);
    }

    #[test]
    fn the_attempt_part_round_trips_and_flattens() {
        let a = shuffled(&["p", "v"], &[("p", Pass), ("v", Fail)]);
        let json = serde_json::to_value(&a).unwrap();
        assert_eq!(json["role"], "shuffled");
        assert_eq!(json["tests"][1], serde_json::json!({"id": "v", "outcome": "fail", "message": "v failed"}));
        assert_eq!(serde_json::from_value::<AttemptTests>(json).unwrap(), a);
    }
}
