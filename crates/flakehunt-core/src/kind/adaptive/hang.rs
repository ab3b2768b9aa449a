//! The hang rule: once attempts run the same way have passed, an attempt that runs far past them
//! is judged at a limit of seconds instead of the full `--timeout`. At the limit flakehunt looks
//! at what its processes do: still at work (CPU time, output, a runnable thread), it is ended as
//! `slow`, no evidence either way, and the next limit of its arm is longer; idle, it is a hang,
//! counted as `timeout` once it stayed idle until a much longer limit (the first hang of its arm)
//! or at the limit (once a hang of its arm is confirmed). Main function: [`hang_timeout`].

use std::time::Duration;

/// How many times the passed attempts' 99th percentile an attempt may run before it is judged.
pub const HANG_FACTOR: f64 = 20.0;
/// The shortest hang limit: below a second, a loaded machine's hiccup (a swap-in, a page-cache
/// miss, a neighbour's build) could make a healthy attempt look hung.
pub const MIN_HANG: Duration = Duration::from_secs(1);
/// Passed attempts needed before the rule applies: fewer say little about the tail.
pub const MIN_PASSED: usize = 3;
/// An arm whose attempt was ended as slow gets at least this many times that attempt's length
/// as its next limit, so that a condition that slows the target more than expected is given the
/// time it needs instead of being cut short again.
pub const SLOW_GROWTH: f64 = 4.0;
/// The first hang of an arm runs to its limit plus nine times it (at most two minutes more, at
/// least the limit again) before it counts: a no-CPU, no-output stall that ends by itself was
/// not a hang.
pub const CONFIRM_FACTOR: f64 = 10.0;
/// See [`CONFIRM_FACTOR`].
pub const CONFIRM_MAX_EXTRA: Duration = Duration::from_secs(120);

/// The hang limit for attempts whose own kind (same arm and mode, or the baseline's stretched by
/// what the arm costs) passed in `p99_seconds` at the 99th percentile: [`HANG_FACTOR`] times it,
/// at least [`MIN_HANG`].
pub fn hang_timeout(p99_seconds: f64) -> Duration {
    let limit = (HANG_FACTOR * p99_seconds.max(0.0)).min(Duration::MAX.as_secs_f64() / 4.0);
    Duration::from_secs_f64(limit).max(MIN_HANG)
}

/// The longer limit a first hang at `limit` is let run to (see [`CONFIRM_FACTOR`]).
pub fn confirm_limit(limit: Duration) -> Duration {
    let extra = limit.mul_f64(CONFIRM_FACTOR - 1.0).min(CONFIRM_MAX_EXTRA).max(limit);
    limit.saturating_add(extra)
}

/// The index of the 99th percentile (nearest rank: the smallest value with at least 99 % of
/// the values at or below it) of `n` sorted values; `n` > 0.
pub fn p99_rank(n: usize) -> usize {
    ((0.99 * n as f64).ceil() as usize).clamp(1, n) - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twenty_times_the_99th_percentile_at_least_a_second() {
        assert_eq!(hang_timeout(0.1), Duration::from_secs(2));
        assert_eq!(hang_timeout(0.5), Duration::from_secs(10));
        // Fast tests are not cut below a second.
        assert_eq!(hang_timeout(0.002), MIN_HANG);
        assert_eq!(hang_timeout(f64::NAN.max(0.0)), MIN_HANG);
        // 100 values and one slow one: the 99th percentile is the 100th smallest.
        assert_eq!(p99_rank(101), 99);
        assert_eq!(p99_rank(10), 9);
        assert_eq!(p99_rank(1), 0);
    }

    #[test]
    fn a_first_hang_runs_much_longer_before_it_counts() {
        assert_eq!(confirm_limit(Duration::from_secs(1)), Duration::from_secs(10));
        assert_eq!(confirm_limit(Duration::from_secs(10)), Duration::from_secs(100));
        // At most two minutes more, but never less than the limit again.
        assert_eq!(confirm_limit(Duration::from_secs(60)), Duration::from_secs(180));
        assert_eq!(confirm_limit(Duration::from_secs(300)), Duration::from_secs(600));
    }
}
