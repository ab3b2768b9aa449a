//! The hang rule: once some attempts have passed, an attempt that runs far past them is a hang,
//! ended and recorded as `timeout` after seconds instead of the full `--timeout`. Main function:
//! [`hang_timeout`].

use std::time::Duration;

/// How many times the passed attempts' 99th percentile an attempt may run before it is a hang.
pub const HANG_FACTOR: f64 = 20.0;
/// The shortest hang timeout: below a second, a loaded machine's hiccup (a swap-in, a page-cache
/// miss, a neighbour's build) could make a healthy attempt look hung.
pub const MIN_HANG: Duration = Duration::from_secs(1);
/// Passed attempts needed before the rule applies: fewer say little about the tail.
pub const MIN_PASSED: usize = 3;

/// The timeout for the next attempt: the user's `--timeout` when given (it always wins);
/// otherwise, once at least [`MIN_PASSED`] attempts passed, [`HANG_FACTOR`] times the 99th
/// percentile of their wall times (nearest-rank), at least [`MIN_HANG`]; `None` before that (the
/// default timeout applies). `stretch` scales the passed attempts' durations for an arm that is
/// expected to run longer than they did (a quota stretching it x10), when they were not its own.
pub fn hang_timeout(passed_seconds: &[f64], stretch: f64, explicit: Option<Duration>) -> Option<Duration> {
    if explicit.is_some() {
        return explicit;
    }
    let mut d: Vec<f64> = passed_seconds.iter().copied().filter(|s| s.is_finite() && *s >= 0.0).collect();
    if d.len() < MIN_PASSED {
        return None;
    }
    d.sort_by(f64::total_cmp);
    // Nearest-rank percentile: the smallest value with at least 99 % of the values at or below it.
    let rank = ((0.99 * d.len() as f64).ceil() as usize).clamp(1, d.len());
    let p99 = d[rank - 1] * stretch.max(1.0);
    let limit = (HANG_FACTOR * p99).min(Duration::MAX.as_secs_f64() / 2.0);
    Some(Duration::from_secs_f64(limit).max(MIN_HANG))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twenty_times_the_99th_percentile_at_least_a_second() {
        // 100 attempts of 0.1 s and one slow one of 0.5 s: the 99th percentile is 0.1 s.
        let mut d = vec![0.1; 100];
        d.push(0.5);
        assert_eq!(hang_timeout(&d, 1.0, None), Some(Duration::from_secs(2)));
        // With 10 attempts the slowest is the 99th percentile.
        let d = [0.2, 0.3, 0.25, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.5];
        assert_eq!(hang_timeout(&d, 1.0, None), Some(Duration::from_secs(10)));
        // Fast tests are not cut below a second.
        assert_eq!(hang_timeout(&[0.002; 50], 1.0, None), Some(MIN_HANG));
    }

    #[test]
    fn an_explicit_timeout_wins_and_few_passes_say_nothing() {
        let t = Some(Duration::from_secs(7));
        assert_eq!(hang_timeout(&[0.1; 50], 1.0, t), t);
        assert_eq!(hang_timeout(&[0.1, 0.1], 1.0, None), None);
        assert_eq!(hang_timeout(&[], 1.0, None), None);
        assert_eq!(hang_timeout(&[f64::NAN, 0.1, 0.1], 1.0, None), None);
    }

    #[test]
    fn an_arm_expected_to_run_longer_gets_a_longer_limit() {
        assert_eq!(hang_timeout(&[0.5; 10], 10.0, None), Some(Duration::from_secs(100)));
        // A stretch below 1 never shortens the limit.
        assert_eq!(hang_timeout(&[0.5; 10], 0.1, None), Some(Duration::from_secs(10)));
    }
}
