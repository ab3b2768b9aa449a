//! The one-line conclusion of an adaptive hunt, from its tally: reproduced twice in N s under
//! an arm (and how confirmation judged it), or, with the budget spent, what was tried and the
//! rate a failure would very likely have shown above. Pure. Main function: [`conclusion`].

use crate::analysis::stats::{amplification, format_p, format_rate, zero_failure_upper_bound};
use crate::kind::adaptive::reproduction::{AdaptiveTally, Tried, BASELINE};

/// Confirmation's significance level: below it, the arm is the condition.
pub const ALPHA: f64 = 0.01;

/// The conclusion line (no trailing newline). `budget_spent`: the hunt stopped because its
/// budget ran out, not because its plan was done.
pub fn conclusion(t: &AdaptiveTally, budget_spent: bool) -> String {
    let Some(r) = t.reproduction() else { return not_reproduced(t) };
    let head = format!("reproduced twice in {} ({} attempts) under {}", seconds(r.seconds), r.attempts, r.cell);
    if r.cell == BASELINE {
        return format!("{head}: the plain target fails, no condition needed");
    }
    let c = t.confirmation();
    let counts =
        format!("confirmation: {}/{} vs {}/{}", c.cell_failures, c.cell_attempts, c.base_failures, c.base_attempts);
    let p = spaced(&format_p(c.p_value()));
    if c.cell_attempts == 0 || c.base_attempts == 0 {
        let why = if budget_spent { "the budget ended before" } else { "no" };
        return format!("{head}; not confirmed against {BASELINE}: {why} confirmation attempts ran");
    }
    let Some(ratio) = amplification(c.cell_failures, c.cell_attempts, c.base_failures, c.base_attempts) else {
        return format!(
            "{head}, but it did not fail again in confirmation, nor did {BASELINE} ({counts}): flaky, not shown to depend on {}",
            family(&r.cell)
        );
    };
    if c.confirmed(ALPHA) {
        return format!("{head}, {ratio} versus {BASELINE}, {p} ({counts})");
    }
    let state =
        if budget_spent { "the budget ended during confirmation" } else { "confirmation did not single it out" };
    format!(
        "{head}, but {state}: {ratio} versus {BASELINE}, {p} ({counts}): flaky, not shown to depend on {}",
        family(&r.cell)
    )
}

/// "not reproduced in 600 s (12000 attempts): tried default, cpu-starved=33,10,3.3, ...; ..."
fn not_reproduced(t: &AdaptiveTally) -> String {
    let mut families: Vec<(&str, Vec<&str>)> = Vec::new();
    for tried in t.tried() {
        let f = family(&tried.cell);
        let level = tried.cell.split_once('=').map_or("", |(_, l)| l);
        match families.iter_mut().find(|(name, _)| *name == f) {
            Some((_, levels)) => levels.push(level),
            None => families.push((f, vec![level])),
        }
    }
    let list: Vec<String> = families
        .iter()
        .map(|(f, levels)| {
            let levels: Vec<&str> = levels.iter().copied().filter(|l| !l.is_empty()).collect();
            if levels.is_empty() {
                (*f).to_owned()
            } else {
                format!("{f}={}", levels.join(","))
            }
        })
        .collect();
    let mut line = format!("not reproduced in {} ({} attempts)", seconds(t.seconds()), t.attempts());
    if list.is_empty() {
        return line;
    }
    line.push_str(&format!(": tried {}", list.join(", ")));
    let once: Vec<&str> = t.tried().iter().filter(|c| c.failures == 1).map(|c| c.cell.as_str()).collect();
    if !once.is_empty() {
        line.push_str(&format!("; failed once (a rumour, never twice) under {}", once.join(", ")));
    }
    // A failure at a rate above a cell's bound would have shown there with 95 % probability; the
    // largest bound among the cells tried is what the hunt can say of every condition it tried.
    let bound = |c: &Tried| if c.failures == 0 { zero_failure_upper_bound(c.attempts, 0.95) } else { 1.0 };
    let clean: Vec<&Tried> = t.tried().iter().filter(|c| c.failures == 0).collect();
    if let Some(weakest) = clean.iter().max_by(|a, b| bound(a).total_cmp(&bound(b))) {
        let base = t.tried().iter().find(|c| c.cell == BASELINE && c.failures == 0);
        line.push_str(&format!(
            "; a failure rate above {} under each condition ({} attempts of {} the fewest)",
            format_rate(bound(weakest)),
            weakest.attempts,
            weakest.cell
        ));
        if let Some(base) = base.filter(|b| b.cell != weakest.cell) {
            line.push_str(&format!(", above {} under {BASELINE}", format_rate(bound(base))));
        }
        line.push_str(", would very likely (95 %) have shown");
    }
    line
}

fn family(cell: &str) -> &str {
    cell.split_once('=').map_or(cell, |(f, _)| f)
}

/// `0.04 s`, `4.2 s`, `37 s`, `612 s`: two significant digits or more.
fn seconds(s: f64) -> String {
    if s < 1.0 {
        format!("{s:.2} s")
    } else if s < 10.0 {
        format!("{s:.1} s")
    } else {
        format!("{s:.0} s")
    }
}

/// `p=0.003` as prose writes it: `p = 0.003`.
fn spaced(p: &str) -> String {
    p.replacen('=', " = ", 1).replacen('<', " < ", 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::adaptive::reproduction::tests::{attempt, START};
    use crate::record::Attempt;

    fn tally(attempts: &[Attempt]) -> AdaptiveTally {
        let mut t = AdaptiveTally::new(START);
        attempts.iter().for_each(|a| t.add(a));
        t
    }

    /// A hunt where `cell` fails on its 2nd and 3rd attempts, then `pairs` confirmation pairs in
    /// which the cell fails when `cell_fails(i)` and the baseline when `base_fails(i)`.
    fn hunt(
        cell: &str,
        pairs: u64,
        cell_fails: impl Fn(u64) -> bool,
        base_fails: impl Fn(u64) -> bool,
    ) -> Vec<Attempt> {
        let mut v = vec![
            attempt(0, "default", 0.0, 0.1, false, Some("calibrate")),
            attempt(1, cell, 0.1, 0.3, false, None),
            attempt(2, cell, 0.4, 0.3, true, None),
            attempt(3, "default", 0.7, 0.1, false, None),
            attempt(4, cell, 0.8, 0.4, true, None),
        ];
        for i in 0..pairs {
            let at = 1.2 + i as f64;
            v.push(attempt(5 + 2 * i, cell, at, 0.3, cell_fails(i), Some("confirm")));
            v.push(attempt(6 + 2 * i, "default", at + 0.5, 0.1, base_fails(i), Some("confirm")));
        }
        v
    }

    #[test]
    fn a_confirmed_reproduction_names_the_arm_its_ratio_and_p() {
        let t = tally(&hunt("cpu-starved=10", 12, |i| i % 4 != 3, |_| false));
        assert_eq!(
            conclusion(&t, false),
            "reproduced twice in 1.2 s (5 attempts) under cpu-starved=10, x>=9 versus default, p < 0.001 (confirmation: 9/12 vs 0/12)"
        );
    }

    #[test]
    fn an_unconfirmed_one_says_so() {
        let t = tally(&hunt("noisy=x2", 40, |i| i % 20 == 0, |i| i % 20 == 5));
        assert_eq!(
            conclusion(&t, false),
            "reproduced twice in 1.2 s (5 attempts) under noisy=x2, but confirmation did not single it out: x1 versus default, p = 1.00 (confirmation: 2/40 vs 2/40): flaky, not shown to depend on noisy"
        );
        let t = tally(&hunt("noisy=x2", 0, |_| false, |_| false));
        assert_eq!(
            conclusion(&t, true),
            "reproduced twice in 1.2 s (5 attempts) under noisy=x2; not confirmed against default: the budget ended before confirmation attempts ran"
        );
    }

    #[test]
    fn a_confirmation_without_any_failure_says_so() {
        let t = tally(&hunt("copies=4", 20, |_| false, |_| false));
        assert_eq!(
            conclusion(&t, false),
            "reproduced twice in 1.2 s (5 attempts) under copies=4, but it did not fail again in confirmation, nor did default (confirmation: 0/20 vs 0/20): flaky, not shown to depend on copies"
        );
    }

    #[test]
    fn the_baseline_failing_twice_needs_no_condition() {
        let t = tally(&[
            attempt(0, "default", 0.0, 0.2, true, Some("calibrate")),
            attempt(1, "default", 0.2, 0.2, true, Some("calibrate")),
        ]);
        assert_eq!(
            conclusion(&t, false),
            "reproduced twice in 0.40 s (2 attempts) under default: the plain target fails, no condition needed"
        );
    }

    #[test]
    fn a_spent_budget_says_what_was_tried_and_the_rate_that_would_have_shown() {
        let mut v = Vec::new();
        let mut id = 0;
        for (cell, n) in
            [("default", 300), ("cpu-starved=33", 40), ("cpu-starved=10", 20), ("pause=2ms/10ms", 60), ("copies=4", 80)]
        {
            for _ in 0..n {
                v.push(attempt(id, cell, id as f64 * 0.1, 0.1, false, None));
                id += 1;
            }
        }
        v[400].outcome = crate::record::Outcome::Fail;
        let line = conclusion(&tally(&v), true);
        assert_eq!(
            line,
            "not reproduced in 50 s (500 attempts): tried default, cpu-starved=33,10, pause=2ms/10ms, copies=4; failed once (a rumour, never twice) under pause=2ms/10ms; a failure rate above 13.9% under each condition (20 attempts of cpu-starved=10 the fewest), above 1.0% under default, would very likely (95 %) have shown"
        );
    }
}
