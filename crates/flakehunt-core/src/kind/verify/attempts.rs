//! How many clean attempts prove a fix: enough that, were the failure still there at the rate
//! the verified record measured (the lower end of its 95 % interval, so that a lucky hunt does
//! not make the proof too short), seeing none would happen by chance at most `1 - level` of the
//! time. Pure. Main function: [`needed`].

use crate::analysis::stats;

/// The rate a proof must rule out, from `failures` in `attempts` under the condition: the lower
/// end of the Wilson 95 % interval (E. B. Wilson, JASA 22, 1927), the smallest rate the record
/// is consistent with. None when nothing failed: there is no failure to prove gone.
pub fn rate_to_rule_out(failures: u64, attempts: u64) -> Option<f64> {
    let (lo, _) = stats::wilson(failures, attempts, stats::Z95);
    (failures > 0 && lo > 0.0).then_some(lo)
}

/// Clean attempts needed to rule out `rate` at `level`: the least `N` with
/// `(1 - rate)^N <= 1 - level`, the probability that `N` independent attempts failing at
/// `rate` all pass (the binomial distribution's zero term), so
/// `N = ceil(ln(1 - level) / ln(1 - rate))`. A 70 % failure needs a handful, 2 % a few hundred.
/// `u64::MAX` when no number can (`rate <= 0`).
pub fn needed(rate: f64, level: f64) -> u64 {
    stats::attempts_to_detect(rate, level)
}

/// What `clean` attempts without a failure bound the rate below, at `level`: the exact one-sided
/// Clopper-Pearson bound for zero failures, `1 - (1 - level)^(1/clean)` (see
/// [`stats::zero_failure_upper_bound`]).
pub fn bound_after(clean: u64, level: f64) -> f64 {
    stats::zero_failure_upper_bound(clean, level)
}

/// The confidence with which `clean` attempts without a failure rule out `rate`:
/// `1 - (1 - rate)^clean`, what a budget that stops short of [`needed`] still gives.
pub fn confidence_after(clean: u64, rate: f64) -> f64 {
    if rate <= 0.0 {
        return 0.0;
    }
    let clean = i32::try_from(clean).unwrap_or(i32::MAX);
    1.0 - (1.0 - rate.min(1.0)).powi(clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probability that `n` attempts failing independently at `p` all pass: the zero term
    /// of the binomial distribution, `C(n, 0) p^0 (1 - p)^n`.
    fn all_pass(p: f64, n: u64) -> f64 {
        (1.0 - p).powf(n as f64)
    }

    #[test]
    fn the_count_is_the_least_n_whose_chance_of_all_passing_is_within_the_level() {
        for level in [0.9, 0.95, 0.99, 0.999] {
            for p in [0.9, 0.727, 0.5, 0.2, 0.05, 0.02, 0.009, 0.001] {
                let n = needed(p, level);
                assert!(all_pass(p, n) <= 1.0 - level, "p {p} level {level}: {n} attempts are not enough");
                assert!(all_pass(p, n - 1) > 1.0 - level, "p {p} level {level}: {} would do", n - 1);
            }
        }
    }

    #[test]
    fn worked_examples_by_hand() {
        // 5/5 in a hunt's confirmation: Wilson's lower end is 5 / (5 + 1.96^2) = 0.5655, and
        // ln 0.01 / ln 0.4345 = 5.53, so 6 attempts.
        let p = rate_to_rule_out(5, 5).unwrap();
        assert!((p - 0.5655).abs() < 1e-3, "{p}");
        assert_eq!(needed(p, 0.99), 6);
        // 10/500 (2 %): the lower end is 1.09 %, and ln 0.01 / ln (1 - 0.0109) = 420.
        let p = rate_to_rule_out(10, 500).unwrap();
        assert!((p - 0.01090).abs() < 1e-4, "{p}");
        let n = needed(p, 0.99);
        assert!((415..=425).contains(&n), "{n}");
        // A 70 % failure seen often needs a handful.
        assert!(needed(rate_to_rule_out(140, 200).unwrap(), 0.99) <= 5);
    }

    #[test]
    fn nothing_failed_means_nothing_to_rule_out() {
        assert_eq!(rate_to_rule_out(0, 100), None);
        assert_eq!(rate_to_rule_out(0, 0), None);
        assert_eq!(needed(0.0, 0.99), u64::MAX);
    }

    #[test]
    fn the_bound_after_the_needed_attempts_is_below_the_rate_ruled_out() {
        for (f, n) in [(5, 5), (3, 40), (10, 500), (1, 2000)] {
            let p = rate_to_rule_out(f, n).unwrap();
            let clean = needed(p, 0.99);
            assert!(bound_after(clean, 0.99) <= p, "{f}/{n}");
            assert!(bound_after(clean - 1, 0.99) > p, "{f}/{n}");
            assert!(confidence_after(clean, p) >= 0.99 - 1e-12);
            assert!(confidence_after(clean - 1, p) < 0.99);
        }
    }
}
