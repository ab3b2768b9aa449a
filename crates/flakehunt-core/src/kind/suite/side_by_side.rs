//! Whether a suite's classification runs can go side by side: the suite run beside itself (as
//! `hunt` runs its `copies` arm before it runs attempts together), judged against the shuffled
//! attempt it copied; and what the classification cost, from the record alone. Main functions:
//! [`failed_beside_itself`], [`cost_of`].

use super::cost::{round, ClassificationCost, SideBySide};
use super::record::{AttemptTests, Role};
use super::TestId;
use crate::record::{Attempt, Mode};

/// Tests to classify from which the classification checks whether its runs can go side by side:
/// for fewer, the check (the whole suite run beside itself) costs more than running them side
/// by side would spare.
pub const SIDE_BY_SIDE_MIN_TESTS: usize = 3;
/// Runs at once at most, whatever the machine's CPUs.
pub const MAX_AT_ONCE: usize = 4;

/// The tests that passed in `reference` (a shuffled attempt run alone) and failed, or did not
/// report, in one of `copies` (the same run, beside each other); every test of the reference
/// when a copy is missing.
pub fn failed_beside_itself(reference: &AttemptTests, copies: &[AttemptTests], wanted: usize) -> Vec<TestId> {
    let passed: Vec<&TestId> = reference
        .tests
        .iter()
        .filter(|r| !r.outcome.is_failure())
        .map(|r| &r.id)
        .filter(|id| !reference.tests.iter().any(|r| r.id == **id && r.outcome.is_failure()))
        .collect();
    let mut failed: Vec<TestId> = Vec::new();
    for id in passed {
        let bad = copies.len() < wanted
            || copies.iter().any(|c| {
                c.tests.iter().any(|r| r.id == *id && r.outcome.is_failure()) || !c.tests.iter().any(|r| r.id == *id)
            });
        if bad && !failed.contains(id) {
            failed.push(id.clone());
        }
    }
    failed
}

/// The shuffled attempt a side-by-side check copies: the lowest id of `cell` whose tests all
/// reported.
pub fn reference<'a>(shuffled: impl IntoIterator<Item = &'a Attempt>, cell: &str) -> Option<&'a Attempt> {
    shuffled
        .into_iter()
        .filter(|a| a.cell == cell)
        .filter(|a| a.suite.as_ref().is_some_and(|t| t.role == Role::Shuffled && t.incomplete.is_none()))
        .min_by_key(|a| a.id)
}

/// The cost of the classification a record's `attempts` hold (`baseline`: its first cell's
/// name); none when it ran no run. `collect_seconds` is the suite's collection's (see
/// [`ClassificationCost::plain_run`]).
pub fn cost_of(attempts: &[Attempt], baseline: &str, collect_seconds: f64) -> Option<ClassificationCost> {
    let role = |a: &Attempt| a.suite.as_ref().map(|t| t.role);
    let shuffled: Vec<&Attempt> = attempts.iter().filter(|a| role(a) == Some(Role::Shuffled)).collect();
    let runs: Vec<&Attempt> = attempts.iter().filter(|a| role(a).is_some_and(|r| r != Role::Shuffled)).collect();
    if runs.is_empty() {
        return None;
    }
    let base: Vec<&&Attempt> = shuffled.iter().filter(|a| a.cell == baseline).collect();
    let mut seconds: Vec<f64> = base.iter().map(|a| a.seconds).collect();
    seconds.sort_by(f64::total_cmp);
    let median = match seconds.len() {
        0 => 0.0,
        n if n % 2 == 1 => seconds[n / 2],
        n => (seconds[n / 2 - 1] + seconds[n / 2]) / 2.0,
    };
    let warm = base.iter().filter(|a| a.mode == Mode::Warm).count();
    let plain_run = median + if warm * 2 > base.len() { collect_seconds } else { 0.0 };
    let span = |a: &&Attempt| start_of(a).map(|s| (s, s + a.seconds.max(0.0)));
    let spans: Vec<(f64, f64)> = runs.iter().filter_map(span).collect();
    let first = spans.iter().map(|s| s.0).fold(f64::INFINITY, f64::min);
    let last = spans.iter().map(|s| s.1).fold(f64::NEG_INFINITY, f64::max);
    let wall = if spans.is_empty() { 0.0 } else { (last - first).max(0.0) };
    let side_by_side = side_by_side_of(&shuffled, &runs, baseline);
    Some(ClassificationCost {
        plain_run: round(plain_run),
        seconds: round(wall),
        runs: runs.len() as u64,
        ratio: if plain_run > 0.0 { (wall / plain_run * 10.0).round() / 10.0 } else { 0.0 },
        at_once: most_at_once(&spans).max(1),
        side_by_side,
        one_at_a_time: None,
        state_search: None,
    })
}

/// The verdict of a record's side-by-side check: whether the suite ran clean beside itself,
/// when the check ran (see [`super::analyse::Runs::side_by_side`]).
pub fn verdict(attempts: &[Attempt], baseline: &str) -> Option<bool> {
    let role = |a: &&Attempt| a.suite.as_deref().map(|t| t.role);
    let shuffled: Vec<&Attempt> = attempts.iter().filter(|a| role(a) == Some(Role::Shuffled)).collect();
    let copies: Vec<&AttemptTests> =
        attempts.iter().filter_map(|a| a.suite.as_deref()).filter(|t| t.role == Role::SideBySide).collect();
    judged(&shuffled, &copies, baseline).map(|(_, failed)| failed.is_empty())
}

/// The side-by-side check among `runs`, judged against the shuffled attempt it copied.
fn side_by_side_of(shuffled: &[&Attempt], runs: &[&Attempt], baseline: &str) -> Option<SideBySide> {
    let copies: Vec<&AttemptTests> =
        runs.iter().filter_map(|a| a.suite.as_deref()).filter(|t| t.role == Role::SideBySide).collect();
    let (attempt, failed) = judged(shuffled, &copies, baseline)?;
    // Whether the run of every test twice ran with the copies (the check comes after it when the
    // shuffled attempts had too few failing tests).
    let span = |a: &&Attempt| start_of(a).map(|s| (s, s + a.seconds));
    let of = |role| runs.iter().filter(move |a| a.suite.as_deref().is_some_and(|t| t.role == role));
    let copy_spans: Vec<(f64, f64)> = of(Role::SideBySide).filter_map(span).collect();
    let repeat_all =
        of(Role::RepeatAll).filter_map(span).any(|(s, e)| copy_spans.iter().any(|&(cs, ce)| s < ce && cs < e));
    Some(SideBySide { copies: copies.len() as u64, repeat_all, attempt, failed })
}

/// The side-by-side check of a record: the shuffled attempt its `copies` copied (as the live
/// hunt chose it: see [`reference`]) and the tests that failed beside themselves; none when no
/// copy ran.
pub fn judged(shuffled: &[&Attempt], copies: &[&AttemptTests], baseline: &str) -> Option<(u64, Vec<TestId>)> {
    let first = copies.first()?;
    // The attempt copied: the same Go shuffle seed, else the same order. (A merged record holds
    // each shard's check: the first one's is judged.)
    let same = |t: &AttemptTests| match first.shuffle {
        Some(seed) => t.shuffle == Some(seed),
        None => t.order == first.order,
    };
    let copied: Vec<&Attempt> = shuffled.iter().copied().filter(|a| a.suite.as_deref().is_some_and(same)).collect();
    let reference = reference(copied.iter().copied(), baseline).or_else(|| copied.iter().copied().min_by_key(|a| a.id));
    let owned: Vec<AttemptTests> = copies.iter().filter(|t| same(t)).map(|t| (*t).clone()).collect();
    // None when the attempt copied is not in the record: no verdict either way.
    let (id, tests) = reference.and_then(|a| Some((a.id, a.suite.as_deref()?)))?;
    Some((id, failed_beside_itself(tests, &owned, owned.len())))
}

/// Seconds since the epoch of an attempt's start (the record writes `2026-12-01T00:00:00.000Z`).
fn start_of(a: &Attempt) -> Option<f64> {
    let t = humantime::parse_rfc3339_weak(a.started_at.trim_end_matches('Z')).ok()?;
    t.duration_since(std::time::UNIX_EPOCH).ok().map(|d| d.as_secs_f64())
}

/// The most spans that overlap at one instant.
fn most_at_once(spans: &[(f64, f64)]) -> u64 {
    let mut edges: Vec<(f64, i64)> = spans.iter().flat_map(|&(s, e)| [(s, 1), (e, -1)]).collect();
    // An end before a start at the same instant: back-to-back runs are not at once.
    edges.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut now, mut most) = (0i64, 0i64);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    most.max(0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::suite::{TestOutcome, TestResult};

    fn tests(role: Role, list: &[(&str, TestOutcome)]) -> AttemptTests {
        AttemptTests {
            role,
            subject: None,
            order: list.iter().map(|(id, _)| id.to_string()).collect(),
            shuffle: None,
            tests: list.iter().map(|&(id, outcome)| TestResult { id: id.into(), outcome, message: None }).collect(),
            reproducer: vec![],
            unreported: vec![],
            incomplete: None,
            failed_otherwise: None,
            strategy: None,
        }
    }

    /// An attempt of `cell` started `at` seconds after noon, lasting `seconds`, with `suite`.
    fn attempt(id: u64, cell: &str, at: f64, seconds: f64, suite: AttemptTests, mode: Mode) -> Attempt {
        let millis = (at * 1000.0).round() as u64;
        let mut a: Attempt = serde_json::from_value(serde_json::json!({
            "id": id, "cell": cell, "iteration": id + 1,
            "started_at": format!("2026-12-01T12:{:02}:{:02}.{:03}Z", millis / 60_000, millis / 1000 % 60, millis % 1000),
            "seconds": seconds, "outcome": "pass", "exit_code": 0,
            "signal": null, "stdout_tail": "", "stderr_tail": "",
        }))
        .unwrap();
        a.suite = Some(Box::new(suite));
        a.mode = mode;
        a
    }

    use TestOutcome::{Fail, Pass, Skip};

    #[test]
    fn a_test_that_passed_alone_and_failed_beside_itself_is_named() {
        let reference = tests(Role::Shuffled, &[("a", Pass), ("b", Pass), ("f", Fail), ("s", Skip)]);
        let clean = tests(Role::SideBySide, &[("a", Pass), ("b", Pass), ("f", Fail), ("s", Skip)]);
        assert!(failed_beside_itself(&reference, &[clean.clone(), clean.clone()], 2).is_empty());
        let port = tests(Role::SideBySide, &[("a", Pass), ("b", Fail), ("f", Pass), ("s", Skip)]);
        assert_eq!(failed_beside_itself(&reference, &[clean.clone(), port], 2), ["b"]);
        let short = tests(Role::SideBySide, &[("a", Pass)]);
        assert_eq!(failed_beside_itself(&reference, &[short], 1), ["b", "s"], "a test a copy never reported");
        assert_eq!(failed_beside_itself(&reference, &[clean], 2).len(), 3, "a copy missing");
    }

    #[test]
    fn the_cost_against_the_plain_run_and_the_runs_at_once() {
        let all = [("a", Pass), ("v", Fail)];
        let attempts = [
            attempt(0, "default", 0.0, 1.0, tests(Role::Shuffled, &all), Mode::Warm),
            attempt(1, "default", 1.0, 1.5, tests(Role::Shuffled, &[("v", Pass), ("a", Pass)]), Mode::Warm),
            attempt(2, "default", 2.5, 2.0, tests(Role::Shuffled, &all), Mode::Warm),
            attempt(3, "default", 5.0, 1.0, tests(Role::SideBySide, &all), Mode::Warm),
            attempt(4, "default", 5.0, 2.0, tests(Role::RepeatAll, &[]), Mode::Cold),
            attempt(5, "default", 7.0, 0.5, tests(Role::Alone, &[("v", Pass)]), Mode::Warm),
            attempt(6, "default", 7.25, 0.5, tests(Role::Alone, &[("v", Pass)]), Mode::Warm),
            attempt(7, "default", 7.75, 1.25, tests(Role::Reproducer, &[("v", Fail)]), Mode::Cold),
        ];
        let cost = cost_of(&attempts, "default", 0.5).unwrap();
        // The median warm attempt (1.5 s) and the collection a fork skips (0.5 s).
        assert_eq!(cost.plain_run, 2.0);
        assert_eq!((cost.seconds, cost.runs, cost.ratio, cost.at_once), (4.0, 5, 2.0, 2));
        let s = cost.side_by_side.as_ref().unwrap();
        assert_eq!((s.copies, s.repeat_all, s.attempt, s.failed.is_empty()), (1, true, 0, true));
        assert_eq!(
            cost.note(),
            "classification: 5 runs in 4.0 s, 2.0x the suite's plain run (2.00 s), up to 2 at once (the suite ran clean beside itself: a copy of attempt 0 beside the run of every test twice)"
        );
        // Cold attempts are the plain run as they are.
        let cold: Vec<Attempt> = attempts
            .iter()
            .cloned()
            .map(|mut a| {
                a.mode = Mode::Cold;
                a
            })
            .collect();
        assert_eq!(cost_of(&cold, "default", 0.5).unwrap().plain_run, 1.5);
        assert!(cost_of(&attempts[..3], "default", 0.5).is_none(), "no classification ran");
    }

    #[test]
    fn a_suite_that_failed_beside_itself_says_so() {
        let attempts = [
            attempt(0, "default", 0.0, 1.0, tests(Role::Shuffled, &[("a", Pass), ("tmp", Pass)]), Mode::Cold),
            attempt(1, "default", 1.0, 1.0, tests(Role::SideBySide, &[("a", Pass), ("tmp", Fail)]), Mode::Cold),
            attempt(2, "default", 1.0, 1.0, tests(Role::SideBySide, &[("a", Pass), ("tmp", Pass)]), Mode::Cold),
            attempt(3, "default", 2.0, 1.0, tests(Role::Alone, &[("v", Pass)]), Mode::Cold),
        ];
        let cost = cost_of(&attempts, "default", 0.0).unwrap();
        assert_eq!(cost.side_by_side.as_ref().unwrap().failed, ["tmp"]);
        assert!(cost.note().ends_with(
            ", one at a time: beside itself (2 copies of attempt 0 at once) the suite failed tmp, which passed alone (a shared file or port, or a flaky test)"
        ), "{}", cost.note());
    }

    #[test]
    fn spans_that_touch_are_not_at_once() {
        assert_eq!(most_at_once(&[(0.0, 1.0), (1.0, 2.0), (2.0, 3.0)]), 1);
        assert_eq!(most_at_once(&[(0.0, 2.0), (1.0, 3.0), (1.5, 1.6)]), 3);
        assert_eq!(most_at_once(&[]), 0);
    }
}
