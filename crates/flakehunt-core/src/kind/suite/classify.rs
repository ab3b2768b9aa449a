//! Why a test failed: its category, from what the hunt and the test's own confirmation runs
//! tallied. Pure. Main function: [`classify`]; main types: [`TestTally`], [`Category`].

use serde::{Deserialize, Serialize};

use super::TestId;
use crate::analysis::stats;
use crate::analysis::summary::ALPHA;
pub use crate::schema::suite::Category;

/// Runs of a test twice in one process that must all show its second run failing after its
/// first passed before it is called `non-idempotent`: one such run can be noise (a timing test
/// on a loaded machine), two in a row that agree are not.
pub const CONFIRMING_REPEATS: u64 = 2;

/// One test's runs under one condition (a cell): the hunt's attempts in that cell.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConditionTally {
    /// The cell's name (`default`, `cpu-starved`, `LC_ALL=C`).
    pub name: String,
    /// Runs of the test in the cell.
    pub runs: u64,
    /// Runs that failed.
    pub failures: u64,
}

/// What a hunt learnt about one test.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestTally {
    /// The hunt's attempts that ran the test (shuffled orders, every cell).
    pub attempts: u64,
    /// Of those, the ones it failed in.
    pub failures: u64,
    /// Confirmation runs of the test alone.
    pub alone_runs: u64,
    /// Of those, the ones it failed in.
    pub alone_failures: u64,
    /// Confirmation runs of the test twice in a row in one process (the repeat plugin,
    /// `-test.count=2`) in which it reported (the repeat-all pass only names the tests to
    /// confirm, and counts here for nothing).
    pub repeat_runs: u64,
    /// Of those, the ones whose first run passed and whose second failed.
    pub repeat_failures: u64,
    /// Per cell, the baseline first (empty or one entry: no conditions varied).
    pub conditions: Vec<ConditionTally>,
    /// Shuffled attempts it was to run in that ended before it reported (counted in neither
    /// `attempts` nor `failures`: no evidence either way).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unreported: u64,
    /// Confirmed polluters (a bisection's result), empty when none was found.
    pub polluters: Vec<TestId>,
    /// Confirmed state-setters, empty when none was found.
    pub state_setters: Vec<TestId>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl TestTally {
    /// Whether its runs twice in one process confirm that it breaks its own state: at least
    /// [`CONFIRMING_REPEATS`], each with a passing first run and a failing second.
    pub fn repeat_confirmed(&self) -> bool {
        self.repeat_runs >= CONFIRMING_REPEATS && self.repeat_failures == self.repeat_runs
    }
}

/// A test's category, with the condition it is sensitive to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Classification {
    /// The category.
    pub category: Category,
    /// The condition a `condition-sensitive` test fails more under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
}

/// The category of a test, or none when it never failed. In order:
/// 1. fails alone every time: `order-dependent-brittle` when a state-setter made it pass,
///    else `deterministic` when it also failed in every attempt;
/// 2. passes alone every time (and was run alone): `non-idempotent` when its repeats in one
///    process confirm it ([`TestTally::repeat_confirmed`]), else `order-dependent-victim` when a polluter was found;
/// 3. `condition-sensitive` when a cell's failure rate exceeds the baseline's at p < 0.01
///    (two-sided Fisher exact test, as `sweep` calls cells), naming the most significant;
/// 4. otherwise `flaky`.
///
/// A test whose only failures are unconfirmed second runs in one process is not classified.
pub fn classify(t: &TestTally) -> Option<Classification> {
    if t.failures + t.alone_failures == 0 && !t.repeat_confirmed() {
        return None;
    }
    let plain = |category| Some(Classification { category, condition: None });
    let fails_alone = t.alone_runs > 0 && t.alone_failures == t.alone_runs;
    let passes_alone = t.alone_runs > 0 && t.alone_failures == 0;
    if fails_alone {
        if !t.state_setters.is_empty() {
            return plain(Category::OrderDependentBrittle);
        }
        if t.failures == t.attempts {
            return plain(Category::Deterministic);
        }
    }
    if passes_alone {
        if t.repeat_confirmed() {
            return plain(Category::NonIdempotent);
        }
        if !t.polluters.is_empty() {
            return plain(Category::OrderDependentVictim);
        }
    }
    if let Some(name) = sensitive_condition(&t.conditions) {
        return Some(Classification { category: Category::ConditionSensitive, condition: Some(name) });
    }
    plain(Category::Flaky)
}

/// The cell whose failure rate is above the baseline's (the first cell's) with the smallest
/// Fisher p below [`ALPHA`].
fn sensitive_condition(cells: &[ConditionTally]) -> Option<String> {
    let (base, rest) = cells.split_first()?;
    let base_rate = base.failures as f64 / base.runs.max(1) as f64;
    rest.iter()
        .filter(|c| c.runs > 0 && base.runs > 0 && c.failures as f64 / c.runs as f64 > base_rate)
        .map(|c| {
            let p = stats::fisher_exact_two_sided(
                c.failures,
                c.runs - c.failures,
                base.failures,
                base.runs - base.failures,
            );
            (p, c)
        })
        .filter(|(p, _)| *p < ALPHA)
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c.name.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn category(t: &TestTally) -> Option<&'static str> {
        classify(t).map(|c| c.category.name())
    }

    fn cells(list: &[(&str, u64, u64)]) -> Vec<ConditionTally> {
        list.iter().map(|&(n, runs, failures)| ConditionTally { name: n.into(), runs, failures }).collect()
    }

    #[test]
    fn a_test_that_never_failed_has_no_category() {
        assert_eq!(category(&TestTally { attempts: 50, ..Default::default() }), None);
    }

    #[test]
    fn each_category() {
        let base = TestTally { attempts: 20, failures: 5, alone_runs: 5, ..Default::default() };
        let victim = TestTally { polluters: vec!["a.py::test_p".into()], ..base.clone() };
        assert_eq!(category(&victim), Some("order-dependent-victim"));
        let non_idempotent = TestTally { failures: 0, repeat_runs: 2, repeat_failures: 2, ..base.clone() };
        assert_eq!(category(&non_idempotent), Some("non-idempotent"));
        let brittle =
            TestTally { failures: 12, alone_failures: 5, state_setters: vec!["a.py::test_s".into()], ..base.clone() };
        assert_eq!(category(&brittle), Some("order-dependent-brittle"));
        let deterministic = TestTally { failures: 20, alone_failures: 5, ..base.clone() };
        assert_eq!(category(&deterministic), Some("deterministic"));
        let flaky = TestTally { alone_failures: 2, ..base.clone() };
        assert_eq!(category(&flaky), Some("flaky"));
        assert_eq!(category(&base), Some("flaky"), "passes alone, no polluter found: flaky");
        let starved = TestTally {
            conditions: cells(&[("default", 40, 0), ("one-core", 40, 1), ("cpu-starved", 40, 12)]),
            ..flaky.clone()
        };
        assert_eq!(
            classify(&starved),
            Some(Classification { category: Category::ConditionSensitive, condition: Some("cpu-starved".into()) })
        );
    }

    #[test]
    fn precedence_between_categories() {
        // A non-idempotent test that also has a polluter (a test doing the same thing) is
        // non-idempotent: the fix is in the test itself.
        let both = TestTally {
            attempts: 10,
            failures: 3,
            alone_runs: 3,
            repeat_runs: 2,
            repeat_failures: 2,
            polluters: vec!["p".into()],
            ..Default::default()
        };
        assert_eq!(category(&both), Some("non-idempotent"));
        // An order explains failures before a condition does.
        let ordered = TestTally {
            conditions: cells(&[("default", 40, 0), ("cpu-starved", 40, 12)]),
            repeat_failures: 0,
            ..both.clone()
        };
        assert_eq!(category(&ordered), Some("order-dependent-victim"));
        // Fails alone every time but passed in some orders with no state-setter found: the
        // order is not proven, so it is flaky.
        let unproven = TestTally { attempts: 10, failures: 9, alone_runs: 3, alone_failures: 3, ..Default::default() };
        assert_eq!(category(&unproven), Some("flaky"));
        // Never run alone: no order category can be claimed.
        let unconfirmed = TestTally { attempts: 10, failures: 10, polluters: vec!["p".into()], ..Default::default() };
        assert_eq!(category(&unconfirmed), Some("flaky"));
    }

    #[test]
    fn non_idempotent_needs_every_repeat_to_confirm() {
        // A timing test whose second run failed once in a loaded moment: the repeat-all pass
        // named it, one of its two confirmations failed. Not classified: it never failed else.
        let noisy = TestTally { attempts: 10, alone_runs: 3, repeat_runs: 2, repeat_failures: 1, ..Default::default() };
        assert_eq!(category(&noisy), None);
        let once = TestTally { repeat_runs: 1, repeat_failures: 1, ..noisy.clone() };
        assert_eq!(category(&once), None, "one confirmation is not reproducible");
        let confirmed = TestTally { repeat_runs: 2, repeat_failures: 2, ..noisy.clone() };
        assert_eq!(category(&confirmed), Some("non-idempotent"));
        // It also failed in a shuffled attempt: classified by that, not as non-idempotent.
        let shuffled = TestTally { failures: 1, ..noisy };
        assert_eq!(category(&shuffled), Some("flaky"));
    }

    #[test]
    fn a_condition_needs_significance_and_a_higher_rate() {
        let t = |c| TestTally { attempts: 80, failures: 3, conditions: c, ..Default::default() };
        assert_eq!(category(&t(cells(&[("default", 40, 1), ("noisy", 40, 2)]))), Some("flaky"), "not significant");
        assert_eq!(category(&t(cells(&[("default", 40, 12), ("idle", 40, 0)]))), Some("flaky"), "suppresses");
        assert_eq!(category(&t(cells(&[("default", 40, 3)]))), Some("flaky"), "no other cell");
        let serialized = serde_json::to_string(&Category::OrderDependentBrittle).unwrap();
        assert_eq!(serialized, "\"order-dependent-brittle\"");
    }
}
