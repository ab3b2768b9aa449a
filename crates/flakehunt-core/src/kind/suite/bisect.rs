//! Finding who makes a test fail (its polluters) or pass (its state-setters): delta debugging
//! over the tests that preceded it in an order where it did, with a binary-search fast path
//! for the common single culprit. Main type: [`Bisector`]; its result: [`Bisection`].
//!
//! Every candidate run is a callback `FnMut(&[TestId]) -> bool`: run these tests, in this
//! order, then the test in question, in one process, and say whether the test *failed*. The
//! tests handed to it always keep their relative order in the original prefix.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::TestId;
pub use crate::schema::suite::BisectStatus;

/// What a bisection found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bisection {
    /// The culprits, in the order they ran (empty when not reproduced).
    pub culprits: Vec<TestId>,
    /// Calls of the callback, the two confirmations included.
    pub runs: u32,
    /// How it ended.
    pub status: BisectStatus,
}

/// Bisection settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bisector {
    /// Calls of the callback at most. A single culprit among n tests needs about
    /// `log2(n) + 4` (1 for the whole prefix, `log2 n` for the binary search, 1 to check the
    /// culprit alone, 2 to confirm); ddmin's worst case is quadratic, hence a bound.
    pub max_runs: u32,
}

impl Default for Bisector {
    fn default() -> Self {
        Self { max_runs: 200 }
    }
}

impl Bisector {
    /// The smallest subset of `prefix` (the tests that ran before a victim in an order where
    /// it failed) after which the victim still fails. `fails_after(tests)` runs `tests` then
    /// the victim and says whether the victim failed; the victim is assumed to pass alone
    /// (the caller has seen it do so).
    pub fn polluters(&self, prefix: &[TestId], mut fails_after: impl FnMut(&[TestId]) -> bool) -> Bisection {
        self.minimize(prefix, &mut fails_after)
    }

    /// The smallest subset of `prefix` (the tests that ran before a brittle test in an order
    /// where it passed) after which it still passes. Same callback as [`Self::polluters`]
    /// (true = the test failed); the test is assumed to fail alone.
    pub fn state_setters(&self, prefix: &[TestId], mut fails_after: impl FnMut(&[TestId]) -> bool) -> Bisection {
        self.minimize(prefix, &mut |tests| !fails_after(tests))
    }

    /// The smallest subset of `prefix` that is `interesting`, given that the empty set is not.
    fn minimize(&self, prefix: &[TestId], interesting: &mut dyn FnMut(&[TestId]) -> bool) -> Bisection {
        let mut oracle = Oracle { prefix, interesting, runs: 0, max_runs: self.max_runs, seen: HashMap::new() };
        let all: Vec<usize> = (0..prefix.len()).collect();
        let (found, status) = match search(&mut oracle, &all) {
            Search::NotReproduced => (Vec::new(), BisectStatus::NotReproduced),
            Search::Budget(best) => (best, BisectStatus::BudgetSpent),
            Search::Found(found) => {
                // Confirmed by running it again, twice, past the cache (the second run is
                // skipped when the first did not reproduce).
                let confirmed = (0..2).all(|_| oracle.run(&found));
                (found, if confirmed { BisectStatus::Confirmed } else { BisectStatus::Unconfirmed })
            }
        };
        Bisection { culprits: found.iter().map(|&i| prefix[i].clone()).collect(), runs: oracle.runs, status }
    }
}

enum Search {
    Found(Vec<usize>),
    NotReproduced,
    /// The budget ran out; the smallest set known to be interesting.
    Budget(Vec<usize>),
}

/// The callback, counted and cached by the set of positions it was given.
struct Oracle<'a> {
    prefix: &'a [TestId],
    interesting: &'a mut dyn FnMut(&[TestId]) -> bool,
    runs: u32,
    max_runs: u32,
    seen: HashMap<Vec<usize>, bool>,
}

impl Oracle<'_> {
    /// Calls the callback (uncached).
    fn run(&mut self, set: &[usize]) -> bool {
        self.runs += 1;
        let tests: Vec<TestId> = set.iter().map(|&i| self.prefix[i].clone()).collect();
        (self.interesting)(&tests)
    }

    /// Whether `set` (sorted positions) is interesting; none once the budget is spent.
    fn test(&mut self, set: &[usize]) -> Option<bool> {
        if let Some(&r) = self.seen.get(set) {
            return Some(r);
        }
        if self.runs >= self.max_runs {
            return None;
        }
        let r = self.run(set);
        self.seen.insert(set.to_vec(), r);
        Some(r)
    }
}

fn search(oracle: &mut Oracle<'_>, all: &[usize]) -> Search {
    if all.is_empty() {
        // Nothing preceded the test: nothing to blame.
        return Search::NotReproduced;
    }
    match oracle.test(all) {
        None => return Search::Budget(all.to_vec()),
        Some(false) => return Search::NotReproduced,
        Some(true) => {}
    }
    // Fast path: the shortest interesting prefix, by binary search (the empty prefix is not
    // interesting, the whole one is). Its last test is then needed given the ones before it,
    // and with one culprit (most victims: Gruber et al., "An Empirical Study of Flaky Tests in
    // Python", ICST 2021) it is the culprit, found in log2(n) + 1 runs.
    let (mut lo, mut hi) = (0, all.len());
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        match oracle.test(&all[..mid]) {
            None => return Search::Budget(all[..hi].to_vec()),
            Some(true) => hi = mid,
            Some(false) => lo = mid,
        }
    }
    let last = all[hi - 1];
    match oracle.test(&[last]) {
        None => return Search::Budget(all[..hi].to_vec()),
        Some(true) => return Search::Found(vec![last]),
        Some(false) => {}
    }
    // Several culprits: ddmin over the tests before `last`, with `last` always included.
    match ddmin(oracle, all[..hi - 1].to_vec(), last) {
        Ok(mut set) => {
            set.push(last);
            Search::Found(set)
        }
        Err(mut best) => {
            best.push(last);
            Search::Budget(best)
        }
    }
}

/// Zeller and Hildebrandt's ddmin ("Simplifying and Isolating Failure-Inducing Input", IEEE
/// TSE 28(2), 2002, fig. 4): the 1-minimal subset of `c` that, with `fixed` after it, is
/// interesting, given that `c` is and the empty set is not. Tries each of `n` chunks, then
/// each complement; refines the granularity when neither reduces. On an exhausted budget,
/// `Err` holds the smallest interesting subset seen.
fn ddmin(oracle: &mut Oracle<'_>, mut c: Vec<usize>, fixed: usize) -> Result<Vec<usize>, Vec<usize>> {
    let with_fixed = |set: &[usize]| {
        let mut v = set.to_vec();
        v.push(fixed);
        v
    };
    let mut n = 2;
    while c.len() >= 2 {
        let chunks = split(&c, n);
        let mut reduced = None;
        for chunk in &chunks {
            match oracle.test(&with_fixed(chunk)) {
                None => return Err(c),
                Some(true) => {
                    reduced = Some((chunk.clone(), 2));
                    break;
                }
                Some(false) => {}
            }
        }
        if reduced.is_none() {
            for chunk in &chunks {
                let complement: Vec<usize> = c.iter().copied().filter(|i| !chunk.contains(i)).collect();
                match oracle.test(&with_fixed(&complement)) {
                    None => return Err(c),
                    Some(true) => {
                        reduced = Some((complement, (n - 1).max(2)));
                        break;
                    }
                    Some(false) => {}
                }
            }
        }
        match reduced {
            Some((smaller, granularity)) => {
                c = smaller;
                n = granularity;
            }
            None if n >= c.len() => break,
            None => n = (n * 2).min(c.len()),
        }
    }
    Ok(c)
}

/// `c` in `n` contiguous chunks of near-equal length.
fn split(c: &[usize], n: usize) -> Vec<Vec<usize>> {
    let n = n.min(c.len()).max(1);
    (0..n).map(|k| c[k * c.len() / n..(k + 1) * c.len() / n].to_vec()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite(n: usize) -> Vec<TestId> {
        (0..n).map(|i| format!("tests/test_{:04}.py::test_{i}", i / 10)).collect()
    }

    fn log2_ceil(n: usize) -> u32 {
        usize::BITS - (n - 1).leading_zeros()
    }

    #[test]
    fn a_single_polluter_among_2000_costs_log_n_runs() {
        let prefix = suite(2000);
        for p in [0, 1, 777, 1998, 1999] {
            let polluter = prefix[p].clone();
            let mut calls = 0;
            let got = Bisector::default().polluters(&prefix, |tests| {
                calls += 1;
                tests.contains(&polluter)
            });
            assert_eq!(got.status, BisectStatus::Confirmed);
            assert_eq!(got.culprits, std::slice::from_ref(&polluter));
            assert_eq!(got.runs, calls);
            eprintln!("single polluter at {p} of 2000: {} runs", got.runs);
            // 1 (whole prefix) + 11 (binary search) + 1 (alone) + 2 (confirmations).
            assert!(got.runs <= log2_ceil(2000) + 4, "polluter at {p}: {} runs", got.runs);
        }
    }

    #[test]
    fn two_polluters_that_only_pollute_together() {
        let prefix = suite(2000);
        let (p1, p2) = (prefix[300].clone(), prefix[1500].clone());
        let got = Bisector::default().polluters(&prefix, |tests| tests.contains(&p1) && tests.contains(&p2));
        assert_eq!(got.status, BisectStatus::Confirmed);
        assert_eq!(got.culprits, [p1, p2], "in the order they ran");
        eprintln!("two polluters (300, 1500) of 2000: {} runs", got.runs);
        assert!(got.runs <= 4 * log2_ceil(2000) + 4, "{} runs", got.runs);
    }

    #[test]
    fn a_brittle_test_and_its_state_setter() {
        // Fails alone; passes iff the state-setter ran before it.
        let prefix = suite(500);
        let setter = prefix[123].clone();
        let got = Bisector::default().state_setters(&prefix, |tests| !tests.contains(&setter));
        assert_eq!((got.status, got.culprits.clone()), (BisectStatus::Confirmed, vec![setter]));
        eprintln!("state-setter at 123 of 500: {} runs", got.runs);
        assert!(got.runs <= log2_ceil(500) + 4, "{} runs", got.runs);
    }

    #[test]
    fn the_callback_always_gets_tests_in_their_original_order() {
        let prefix = suite(300);
        let (a, b, c) = (prefix[10].clone(), prefix[150].clone(), prefix[299].clone());
        let got = Bisector::default().polluters(&prefix, |tests| {
            let pos: Vec<usize> = tests.iter().map(|t| prefix.iter().position(|p| p == t).unwrap()).collect();
            assert!(pos.windows(2).all(|w| w[0] < w[1]), "out of order: {pos:?}");
            [&a, &b, &c].iter().all(|t| tests.contains(t))
        });
        assert_eq!(got.culprits, [a, b, c]);
        eprintln!("three polluters (10, 150, 299) of 300: {} runs", got.runs);
    }

    #[test]
    fn no_reproduction_costs_one_run() {
        let got = Bisector::default().polluters(&suite(2000), |_| false);
        assert_eq!((got.status, got.runs, got.culprits.len()), (BisectStatus::NotReproduced, 1, 0));
        let got = Bisector::default().polluters(&[], |_| true);
        assert_eq!((got.status, got.runs), (BisectStatus::NotReproduced, 0), "an empty prefix blames nobody");
    }

    #[test]
    fn a_result_that_does_not_reproduce_twice_more_is_unconfirmed() {
        let prefix = suite(64);
        let polluter = prefix[5].clone();
        let mut calls = 0;
        // Reproduces for the search, then stops failing (flaky on its own).
        let searching = 1 + log2_ceil(64) + 1;
        let got = Bisector::default().polluters(&prefix, |tests| {
            calls += 1;
            calls <= searching && tests.contains(&polluter)
        });
        assert_eq!((got.status, got.culprits), (BisectStatus::Unconfirmed, vec![polluter]));
        assert_eq!(got.runs, searching + 1, "the second confirmation is not run after the first failed");
    }

    #[test]
    fn an_exhausted_budget_returns_the_smallest_reproducing_set_seen() {
        let prefix = suite(2000);
        let polluter = prefix[1000].clone();
        let got = Bisector { max_runs: 4 }.polluters(&prefix, |tests| tests.contains(&polluter));
        assert_eq!(got.status, BisectStatus::BudgetSpent);
        assert_eq!(got.runs, 4);
        assert!(got.culprits.contains(&polluter) && got.culprits.len() < 2000, "{}", got.culprits.len());
    }

    #[test]
    fn ddmin_finds_every_member_of_a_three_test_conjunction_on_small_prefixes() {
        for n in 3..40 {
            let prefix = suite(n);
            let want: Vec<TestId> = [0, n / 2, n - 1].iter().map(|&i| prefix[i].clone()).collect();
            let got = Bisector::default().polluters(&prefix, |tests| want.iter().all(|w| tests.contains(w)));
            let mut dedup = want.clone();
            dedup.dedup();
            assert_eq!(got.culprits, dedup, "n = {n}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_single_polluter_is_found_in_log_n_runs(n in 1usize..3000, p in 0usize..3000) {
            let prefix = suite(n);
            let polluter = prefix[p % n].clone();
            let got = Bisector::default().polluters(&prefix, |tests| tests.contains(&polluter));
            proptest::prop_assert_eq!(got.status, BisectStatus::Confirmed);
            proptest::prop_assert_eq!(got.culprits, vec![polluter]);
            proptest::prop_assert!(got.runs <= log2_ceil(n.max(2)) + 4);
        }
    }
}
