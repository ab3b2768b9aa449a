//! Statistics for comparing failure rates of a test across cells.
//!
//! Every function here is pure: no I/O, no allocation beyond the returned
//! strings, no panics on odd input (zero attempts, more failures than
//! attempts, NaN confidences). Each one documents its formula and where the
//! formula comes from, so that a number printed by flakehunt can be checked
//! by hand or against R.
//!
//! Conventions: a "rate" is a failure proportion in `[0, 1]`; a
//! "confidence" is a probability in `[0, 1]` such as `0.95`.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The two-sided 95 % standard normal quantile, `Φ⁻¹(0.975)`.
///
/// Value as printed by R's `qnorm(0.975)` with 16 significant digits.
pub const Z95: f64 = 1.959963984540054;

/// Wilson score interval for a binomial proportion `failures / attempts`.
///
/// With `p̂ = f/n` and quantile `z`:
///
/// ```text
///            p̂ + z²/(2n)          z       ┌ p̂(1-p̂)     z²  ┐ ½
/// centre = ─────────────   ±  ───────── · │ ──────── + ──── │
///           1 + z²/n           1 + z²/n   └    n       4n²  ┘
/// ```
///
/// Source: E. B. Wilson, "Probable inference, the law of succession, and
/// statistical inference", JASA 22 (1927); recommended over the Wald
/// interval by A. Agresti & B. A. Coull, "Approximate is better than 'exact'
/// for interval estimation of binomial proportions", The American
/// Statistician 52 (1998). This is R's `prop.test(f, n, correct = FALSE)`
/// interval.
///
/// Unlike the Wald interval it never collapses to a point at `0/n` or `n/n`,
/// which is exactly the case flakehunt cares about ("0 failures in 200
/// runs": the upper bound is still ~1.9 %).
///
/// Odd inputs: `attempts == 0` gives the uninformative `(0.0, 1.0)`;
/// `failures > attempts` is treated as `failures == attempts`; a negative
/// `z` is used as `|z|`, and a non-finite `z` gives `(0.0, 1.0)`. The bounds
/// are clamped to `[0, 1]`, and are exactly `0.0` (resp. `1.0`) when there
/// are no failures (resp. only failures), where the formula gives that value
/// up to rounding.
pub fn wilson(failures: u64, attempts: u64, z: f64) -> (f64, f64) {
    if attempts == 0 || !z.is_finite() {
        return (0.0, 1.0);
    }
    let failures = failures.min(attempts);
    let n = attempts as f64;
    let p = failures as f64 / n;
    let z = z.abs();
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = z / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    let lo = if failures == 0 { 0.0 } else { centre - half };
    let hi = if failures == attempts { 1.0 } else { centre + half };
    (lo.clamp(0.0, 1.0), hi.clamp(0.0, 1.0))
}

/// Exact one-sided upper confidence bound on the failure rate after
/// observing 0 failures in `attempts` attempts.
///
/// ```text
/// upper = 1 - (1 - confidence)^(1/n)
/// ```
///
/// This is the Clopper–Pearson bound for `x = 0` (C. J. Clopper &
/// E. S. Pearson, Biometrika 26, 1934): the largest rate `p` for which
/// seeing no failure still has probability `(1-p)^n >= 1 - confidence`. The
/// "rule of three" (J. A. Hanley & A. Lippman-Hand, JAMA 249, 1983)
/// approximates it at 95 % as `3/n`. `n = 200` at 95 % gives ~0.0149.
///
/// Computed as `-expm1(ln(1 - confidence) / n)` to stay accurate for large
/// `n`. `attempts == 0` gives `1.0`; `confidence` is clamped to `[0, 1]`
/// (NaN is treated as 0).
pub fn zero_failure_upper_bound(attempts: u64, confidence: f64) -> f64 {
    let confidence = clamp_probability(confidence);
    if attempts == 0 || confidence >= 1.0 {
        return 1.0;
    }
    let bound = -((1.0 - confidence).ln() / attempts as f64).exp_m1();
    bound.clamp(0.0, 1.0)
}

/// Smallest number of attempts `n` such that a test failing independently
/// with probability `rate` fails at least once with probability at least
/// `confidence`:
///
/// ```text
/// 1 - (1 - rate)^n >= confidence   <=>   n >= ln(1 - confidence) / ln(1 - rate)
/// ```
///
/// so `n = ceil(ln(1 - confidence) / ln(1 - rate))` (the geometric
/// distribution's quantile). The closed form is then checked against the
/// defining inequality (and nudged by one if rounding in the logarithms
/// landed on the wrong side of an integer), so the result is exactly the
/// smallest `n` under floating-point evaluation of `(1 - rate)^n`.
///
/// Edge cases: `confidence <= 0` needs `0` attempts; `rate >= 1` needs `1`;
/// when the goal is unreachable (`rate <= 0`, NaN, or `confidence >= 1` with
/// `rate < 1`) the result is `u64::MAX`, meaning "never".
pub fn attempts_to_detect(rate: f64, confidence: f64) -> u64 {
    if confidence.is_nan() || confidence <= 0.0 {
        return 0;
    }
    if rate.is_nan() || rate <= 0.0 {
        return u64::MAX;
    }
    if rate >= 1.0 {
        return 1;
    }
    if confidence >= 1.0 {
        return u64::MAX;
    }
    let ln_q = (-rate).ln_1p(); // ln(1 - rate), < 0
    let ln_miss = (1.0 - confidence).ln(); // ln of allowed miss probability, < 0
                                           // P(no failure in n) = exp(n ln q); the goal is P(no failure) <= 1 - conf.
    let enough = |n: u64| (n as f64) * ln_q <= ln_miss;
    let estimate = (ln_miss / ln_q).ceil();
    if !estimate.is_finite() || estimate >= u64::MAX as f64 {
        return u64::MAX;
    }
    let mut n = (estimate as u64).max(1);
    // Rounding can put the estimate one off in either direction.
    while n > 1 && enough(n - 1) {
        n -= 1;
    }
    while !enough(n) {
        if n == u64::MAX {
            return u64::MAX;
        }
        n += 1;
    }
    n
}

/// Smallest number of attempts `n` such that a test failing independently
/// with probability `rate` fails at least **twice** with probability at
/// least `confidence`.
///
/// With `X ~ Binomial(n, rate)` and `q = 1 - rate`:
///
/// ```text
/// P(X <= 1) = q^n + n·rate·q^(n-1) = q^(n-1) · (q + n·rate)
/// ```
///
/// and the goal is `P(X <= 1) <= 1 - confidence`. `P(X <= 1)` decreases in
/// `n`, so the answer is found by iterating: start from
/// [`attempts_to_detect`] (seeing two failures needs at least as many
/// attempts as seeing one), double until the goal is met, then bisect. The
/// loop runs at most ~2·64 times. The tail probability is evaluated in log
/// space so that tiny rates and high confidences do not lose precision.
///
/// Seeing a failure twice is what flakehunt asks for before it calls a
/// failure "reproduced" rather than a one-off.
///
/// Edge cases as for [`attempts_to_detect`]; `rate >= 1` needs `2`.
pub fn attempts_to_detect_twice(rate: f64, confidence: f64) -> u64 {
    if confidence.is_nan() || confidence <= 0.0 {
        return 0;
    }
    if rate.is_nan() || rate <= 0.0 {
        return u64::MAX;
    }
    if rate >= 1.0 {
        return 2;
    }
    if confidence >= 1.0 {
        return u64::MAX;
    }
    let ln_q = (-rate).ln_1p();
    let q = 1.0 - rate;
    let ln_miss = (1.0 - confidence).ln();
    // ln P(X <= 1) = (n-1) ln q + ln(q + n·rate); n >= 1 here.
    let enough = |n: u64| {
        let n = n as f64;
        (n - 1.0) * ln_q + (q + n * rate).ln() <= ln_miss
    };

    let mut lo = attempts_to_detect(rate, confidence).max(2) - 1; // known not enough
    if lo == u64::MAX - 1 {
        return u64::MAX;
    }
    // Gallop: find some `hi` that is enough.
    let mut step: u64 = 1;
    let mut hi = lo.saturating_add(step);
    while !enough(hi) {
        if hi == u64::MAX {
            return u64::MAX;
        }
        lo = hi;
        step = step.saturating_mul(2);
        hi = hi.saturating_add(step);
    }
    // Bisect: invariant `!enough(lo) && enough(hi)` (lo may be the trivially
    // insufficient `attempts_to_detect - 1`, or 1).
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if enough(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// Relative tolerance when deciding that a table is "at most as likely" as
/// the observed one; the same value as R's `fisher.test` (`relErr`), so that
/// tables whose probabilities are equal in exact arithmetic count as equal
/// despite rounding.
const FISHER_REL_TOL: f64 = 1e-7;

/// Most terms [`fisher_exact_two_sided`] walks on each side of the mode.
///
/// The walk normally ends long before this, when the terms underflow
/// (after ~40 standard deviations); reaching the cap needs a hypergeometric
/// standard deviation above ~10⁵, i.e. tables with ~10¹⁰ attempts or more.
/// It only exists so that absurd inputs cannot loop for hours.
const FISHER_MAX_STEPS: u128 = 1 << 22;

/// Two-sided Fisher exact test for the 2×2 table
///
/// ```text
///            failures  passes
///   cell 1 [    a        b   ]
///   cell 2 [    c        d   ]
/// ```
///
/// Conditioning on the margins, `a` follows the hypergeometric distribution
///
/// ```text
/// P(a = x) = C(a+b, x) · C(c+d, (a+c) - x) / C(n, a+c)
/// ```
///
/// and the two-sided p-value is the sum of `P(a = x)` over all `x` whose
/// probability is `<= P(a = a_obs) · (1 + 1e-7)`. Source: R. A. Fisher,
/// "On the interpretation of χ² from contingency tables", JRSS 85 (1922);
/// the two-sided rule and the `1 + 1e-7` tolerance are those of R's
/// `fisher.test` (`stats` package). Note that SciPy and `statrs` use a
/// looser tolerance (`1e-4`), so they can differ from R in near-ties.
///
/// Implementation: instead of evaluating each probability from
/// log-factorials (whose absolute rounding error grows with `n`: at
/// `n = 10⁶` the terms are ~10⁷ and the error in a difference of nine of them
/// is already within two orders of magnitude of the tolerance), the
/// probabilities are computed *relative to the mode* with the exact ratio
/// of consecutive terms,
///
/// ```text
/// P(x+1) / P(x) = (r1 - x)(c1 - x) / ((x + 1)(r2 - c1 + x + 1))
/// ```
///
/// (`r1 = a+b`, `r2 = c+d`, `c1 = a+c`) and normalised by their sum, as R
/// does with `exp(d - max(d)) / sum(...)`. Nothing overflows (all relative
/// terms are `<= 1`), the relative error of a term grows by a few ulps per
/// step (~1e-10 after 10⁶ steps, far inside the tolerance),
/// and the walk away from the mode stops as soon as the terms underflow to
/// zero, so the cost is `O(min(support, ~40·sd))`, never more than the
/// smallest margin; totals of several million take milliseconds. (For
/// absurdly large tables, beyond ~10¹⁰ attempts, the walk is capped at
/// 2²² terms per side and the result becomes a slightly conservative
/// approximation.)
///
/// Returns a value in `[0, 1]`; a table with an empty row or column (only
/// one table has those margins) gives `1.0`. Inputs are combined in `u128`,
/// so no `u64` input can overflow.
pub fn fisher_exact_two_sided(a: u64, b: u64, c: u64, d: u64) -> f64 {
    let (a, b, c, d) = (a as u128, b as u128, c as u128, d as u128);
    let r1 = a + b;
    let r2 = c + d;
    let c1 = a + c;
    let n = r1 + r2;
    // Support of `a` given the margins.
    let lo = c1.saturating_sub(r2);
    let hi = r1.min(c1);
    if lo == hi {
        return 1.0;
    }

    // Ratios P(x+1)/P(x) (for lo <= x < hi) and P(x-1)/P(x) (for
    // lo < x <= hi). Every factor is a whole number >= 1 there, so the ratios
    // are finite and positive, and each product is exact in an f64 for the
    // sizes flakehunt sees (< 2^53).
    let r1f = r1 as f64;
    let c1f = c1 as f64;
    let shift = r2 as f64 - c1f; // r2 - c1, may be negative
    let up = |x: f64| (r1f - x) * (c1f - x) / ((x + 1.0) * (shift + x + 1.0));
    let down = |x: f64| x * (shift + x) / ((r1f - x + 1.0) * (c1f - x + 1.0));

    // Mode of the hypergeometric: floor((r1+1)(c1+1)/(n+2)), inside [lo, hi].
    let mode = ((r1 + 1).saturating_mul(c1 + 1) / (n + 2)).clamp(lo, hi);

    // Relative probability of the observed table: walk from the mode to `a`.
    // Past the step cap, the last term computed stands in for it: an upper
    // bound, which can only make the p-value larger (conservative).
    let mut p_obs = 1.0f64;
    if a > mode {
        let a = a.min(mode.saturating_add(FISHER_MAX_STEPS));
        let mut x = mode;
        while x < a && p_obs > 0.0 {
            p_obs *= up(x as f64);
            x += 1;
        }
    } else {
        let a = a.max(mode.saturating_sub(FISHER_MAX_STEPS));
        let mut x = mode;
        while x > a && p_obs > 0.0 {
            p_obs *= down(x as f64);
            x -= 1;
        }
    }
    let threshold = p_obs * (1.0 + FISHER_REL_TOL);

    // Sum all relative probabilities, and those not more likely than the
    // observed table. The mode itself has relative probability 1.
    let mut total = 1.0f64;
    let mut extreme = if 1.0 <= threshold { 1.0 } else { 0.0 };
    let mut accumulate = |p: f64| {
        total += p;
        if p <= threshold {
            extreme += p;
        }
    };
    let mut p = 1.0f64;
    let mut x = mode;
    let hi = hi.min(mode.saturating_add(FISHER_MAX_STEPS));
    let lo = lo.max(mode.saturating_sub(FISHER_MAX_STEPS));
    while x < hi {
        p *= up(x as f64);
        if p == 0.0 {
            break; // every further term is smaller still
        }
        accumulate(p);
        x += 1;
    }
    p = 1.0;
    x = mode;
    while x > lo {
        p *= down(x as f64);
        if p == 0.0 {
            break;
        }
        accumulate(p);
        x -= 1;
    }
    let p_value = extreme / total;
    if p_value.is_nan() {
        1.0
    } else {
        p_value.clamp(0.0, 1.0)
    }
}

/// How much more (or less) often a test fails in a cell than in the
/// baseline.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Amplification {
    /// `cell rate / baseline rate`; `0.0` when the cell never failed but the
    /// baseline did.
    pub ratio: f64,
    /// The ratio is a lower bound: the baseline never failed, so its rate was
    /// replaced by the largest rate that is still "one failure away",
    /// `1 / n_base`.
    pub at_least: bool,
}

impl fmt::Display for Amplification {
    /// `x3.5`, `x12`, `x>=7`, `x0`: one decimal below 10, none above, and a
    /// trailing `.0` dropped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let number = if self.ratio >= 9.95 {
            format!("{:.0}", self.ratio)
        } else {
            let s = format!("{:.1}", self.ratio);
            match s.strip_suffix(".0") {
                Some(whole) => whole.to_owned(),
                None => s,
            }
        };
        if self.at_least {
            write!(f, "x>={number}")
        } else {
            write!(f, "x{number}")
        }
    }
}

/// Failure-rate ratio of a cell against the baseline (a relative risk).
///
/// ```text
/// ratio = (f_cell / n_cell) / (f_base / n_base)
/// ```
///
/// When the baseline has no failures its rate is replaced by `1 / n_base`
/// (one failure more would have given that rate), which makes the ratio a
/// lower bound and sets [`Amplification::at_least`]: `7/200` vs `0/200`
/// gives `x>=7`. When the cell has no failures and the baseline does, the
/// ratio is `0.0` (the cell suppresses the failure).
///
/// Returns `None` when there is nothing to compare: either side has no
/// attempts, or neither side failed. Failures above attempts are treated
/// as equal to attempts.
pub fn amplification(f_cell: u64, n_cell: u64, f_base: u64, n_base: u64) -> Option<Amplification> {
    if n_cell == 0 || n_base == 0 {
        return None;
    }
    let f_cell = f_cell.min(n_cell);
    let f_base = f_base.min(n_base);
    match (f_cell, f_base) {
        (0, 0) => None,
        (0, _) => Some(Amplification { ratio: 0.0, at_least: false }),
        // Written as products first so that whole ratios stay exact
        // (7/200 over 1/200 is 7, not 7.000000000000001).
        (_, 0) => Some(Amplification { ratio: f_cell as f64 * n_base as f64 / n_cell as f64, at_least: true }),
        (_, _) => Some(Amplification {
            ratio: (f_cell as f64 * n_base as f64) / (f_base as f64 * n_cell as f64),
            at_least: false,
        }),
    }
}

/// Formats a failure rate as a percentage with one decimal: `0.0%`, `3.5%`,
/// `12.5%`, `100.0%`.
///
/// A non-zero rate that would print as `0.0%` (below 0.05 %) is shown with
/// two significant digits instead (`0.020%`), because for a flaky test
/// "rare" and "never" are different findings. Rates are clamped to `[0, 1]`;
/// NaN prints as `n/a`.
pub fn format_rate(rate: f64) -> String {
    if rate.is_nan() {
        return "n/a".to_owned();
    }
    let pct = rate.clamp(0.0, 1.0) * 100.0;
    if pct > 0.0 && pct < 0.05 {
        // Two significant digits: 0.02 -> 3 decimals, 0.0015 -> 4 decimals.
        let decimals = (1.0 - pct.log10().floor()).clamp(1.0, 20.0) as usize;
        format!("{pct:.decimals$}%")
    } else {
        format!("{pct:.1}%")
    }
}

/// Formats a p-value: `p<0.001` below 0.001, three decimals below 0.1
/// (`p=0.015`), two decimals otherwise (`p=0.27`, `p=1.00`).
///
/// Values are clamped to `[0, 1]`; NaN prints as `p=n/a`.
pub fn format_p(p: f64) -> String {
    if p.is_nan() {
        return "p=n/a".to_owned();
    }
    let p = p.clamp(0.0, 1.0);
    if p < 0.001 {
        "p<0.001".to_owned()
    } else if p < 0.1 {
        // 0.0996 would print as 0.100, which is fine: still three decimals.
        format!("p={p:.3}")
    } else {
        format!("p={p:.2}")
    }
}

/// Clamps a probability to `[0, 1]`, mapping NaN to 0.
fn clamp_probability(p: f64) -> f64 {
    if p.is_nan() {
        0.0
    } else {
        p.clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests;
