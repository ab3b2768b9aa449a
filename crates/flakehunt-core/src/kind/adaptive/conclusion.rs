//! The one-line conclusion of an adaptive hunt, from its tally: reproduced twice in N s under
//! an arm (and how confirmation judged it), or, with the budget spent, what was tried and the
//! rate a failure would very likely have shown above. Pure. Main function: [`conclusion`].

use super::reproduction::{AdaptiveTally, Failure, Finding, Tried, BASELINE};
use crate::analysis::stats::{amplification, format_p, format_rate, zero_failure_upper_bound};
use crate::kind::adaptive::reproduction::ConfirmTest;
use crate::record::Outcome;

/// Confirmation's significance level: below it, the arm is the condition.
pub const ALPHA: f64 = 0.01;

/// The conclusion line (no trailing newline). `budget_spent`: the hunt stopped because its
/// budget ran out, not because its plan was done. `inert`: why the reproducing cell's mechanism
/// had no effect here, if it had none (it then cannot be the condition). It says "reproduced"
/// only of what the record shows the target gives: the plain target failing twice, or an arm
/// that confirmation, on fresh attempts, showed failing more than the baseline.
pub fn conclusion(t: &AdaptiveTally, budget_spent: bool, inert: Option<&str>) -> String {
    let Some(r) = t.reproduction() else { return not_reproduced(t) };
    let head = format!("reproduced twice in {} ({} attempts) under {}", seconds(r.seconds), r.attempts, r.cell);
    let finding = t.finding(ALPHA, inert.is_some());
    if r.cell == BASELINE {
        return format!("{head}: the plain target fails, no condition needed");
    }
    let c = t.confirmation();
    let counts =
        format!("confirmation: {}/{} vs {}/{}", c.cell_failures, c.cell_attempts, c.base_failures, c.base_attempts);
    let p = spaced(&format_p(c.p_value()));
    let ratio = amplification(c.cell_failures, c.cell_attempts, c.base_failures, c.base_attempts);
    if finding == Finding::ConditionSensitive {
        let ratio = ratio.map_or_else(String::new, |r| format!(", {r} versus {BASELINE}"));
        return format!("{head}{ratio}, {p} ({counts})");
    }
    // What was seen, in plain words: the two failures, then what confirmation made of them.
    let seen = format!("{} under {}", what_failed(t.reproducing()), r.cell);
    let ran = c.cell_attempts + c.base_attempts;
    let confirmation = if ran == 0 {
        let why = if budget_spent {
            "the budget ended before any confirmation attempt ran"
        } else {
            "no confirmation attempt ran"
        };
        why.to_owned()
    } else if c.cell_failures + c.base_failures == 0 {
        format!(
            "none failed in {ran} confirmation attempts ({} under {}, {} under {BASELINE})",
            c.cell_attempts, r.cell, c.base_attempts
        )
    } else {
        let ended = if budget_spent { ", cut short by the budget" } else { "" };
        format!(
            "in confirmation {} failed {}/{} and {BASELINE} {}/{} ({p}{ended})",
            r.cell, c.cell_failures, c.cell_attempts, c.base_failures, c.base_attempts
        )
    };
    let inert = inert
        .map_or_else(String::new, |why| format!("; {} had no effect here ({why}), so it is not the condition", r.cell));
    let slow = match t.confirm_slow() {
        0 => String::new(),
        n => format!("; {n} confirmation attempts were slow (no evidence) and ran again"),
    };
    match finding {
        Finding::Flaky if t.seen_under_baseline() => format!(
            "flaky: {seen}; {confirmation}{inert}{slow}: the same failure appears under {BASELINE} too, so it does not depend on {}",
            family(&r.cell)
        ),
        Finding::Flaky => format!(
            "flaky: {seen}; {confirmation}{inert}{slow}: it failed again, but is not shown to depend on {}",
            family(&r.cell)
        ),
        _ => format!("not reproduced: {seen}; {confirmation}{inert}{slow}: not a reproduction"),
    }
}

/// "2 attempts hung (no CPU, no output past the hang limit)", "2 attempts failed (exit 1: ...)".
fn what_failed(failures: &[Failure]) -> String {
    let n = failures.len();
    if n == 0 {
        return "2 attempts failed".to_owned();
    }
    let kind = |f: &Failure| match f.outcome {
        Outcome::Timeout if f.hung => "hung (no CPU, no output past the hang limit)",
        Outcome::Timeout => "timed out",
        Outcome::Crash => "crashed",
        Outcome::WrongOutput => "printed a wrong output",
        _ => "failed",
    };
    let mut kinds: Vec<&str> = failures.iter().map(kind).collect();
    kinds.dedup();
    let signature = failures.iter().find_map(|f| f.signature.as_deref()).filter(|s| *s != "timeout");
    let signature = signature.map_or_else(String::new, |s| {
        let short: String = s.chars().take(80).collect();
        format!(" ({}{})", short, if s.chars().count() > 80 { "..." } else { "" })
    });
    format!("{n} attempts {}{signature}", kinds.join(" or "))
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
            // The family's arm without a level (`jitter`) is named apart from its levels
            // (`jitter=0.25,1`), never dropped from the list.
            let bare = levels.iter().any(|l| l.is_empty());
            let levels: Vec<&str> = levels.iter().copied().filter(|l| !l.is_empty()).collect();
            match (bare, levels.is_empty()) {
                (_, true) => (*f).to_owned(),
                (false, false) => format!("{f}={}", levels.join(",")),
                (true, false) => format!("{f}, {f}={}", levels.join(",")),
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
    let slow: Vec<String> =
        t.tried().iter().filter(|c| c.slow > 0).map(|c| format!("{} x{}", c.cell, c.slow)).collect();
    if !slow.is_empty() {
        line.push_str(&format!("; ended while still at work (slow, no evidence either way) under {}", slow.join(", ")));
    }
    // A failure at a rate above a cell's bound would have shown there with 95 % probability; the
    // largest bound among the cells tried is what the hunt can say of every condition it tried.
    let bound = |c: &Tried| if c.failures == 0 { zero_failure_upper_bound(c.attempts, 0.95) } else { 1.0 };
    let clean: Vec<&Tried> = t.tried().iter().filter(|c| c.failures == 0 && c.attempts > 0).collect();
    if let Some(weakest) = clean.iter().max_by(|a, b| bound(a).total_cmp(&bound(b))) {
        let base = clean.iter().find(|c| c.cell == BASELINE);
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

    /// A hang: ended at the hang limit, idle through it.
    fn hang(id: u64, cell: &str, at: f64, phase: Option<&str>) -> Attempt {
        let mut a = attempt(id, cell, at, 1.0, true, phase);
        (a.outcome, a.exit_code, a.signature) = (Outcome::Timeout, None, Some("timeout".into()));
        a.hang = Some(crate::record::HangCheck { limit: 1.0, idle: Some(true), confirm_limit: Some(10.0) });
        a
    }

    #[test]
    fn a_confirmed_reproduction_names_the_arm_its_ratio_and_p() {
        let t = tally(&hunt("cpu-starved=10", 12, |i| i % 4 != 3, |_| false));
        assert_eq!(
            conclusion(&t, false, None),
            "reproduced twice in 1.2 s (5 attempts) under cpu-starved=10, x>=9 versus default, p < 0.001 (confirmation: 9/12 vs 0/12)"
        );
        assert_eq!(t.finding(ALPHA, false), Finding::ConditionSensitive);
    }

    #[test]
    fn a_failure_confirmation_sees_again_on_both_sides_is_flaky_not_a_condition() {
        let t = tally(&hunt("noisy=x2", 40, |i| i % 20 == 0, |i| i % 20 == 5));
        assert_eq!(
            conclusion(&t, false, None),
            "flaky: 2 attempts failed under noisy=x2; in confirmation noisy=x2 failed 2/40 and default 2/40 (p = 1.00): the same failure appears under default too, so it does not depend on noisy"
        );
        assert_eq!(t.finding(ALPHA, false), Finding::Flaky);
    }

    #[test]
    fn a_failure_never_seen_again_is_not_a_reproduction() {
        // The issue's own case: two attempts under jitter ended by the hang rule, none of 100
        // confirmation attempts failed.
        let mut v = vec![
            attempt(0, "default", 0.0, 0.1, false, Some("calibrate")),
            hang(1, "jitter", 0.1, None),
            attempt(2, "default", 1.1, 0.1, false, None),
            hang(3, "jitter", 1.2, None),
        ];
        for i in 0..50 {
            v.push(attempt(4 + 2 * i, "jitter", 3.0 + i as f64, 0.3, false, Some("confirm")));
            v.push(attempt(5 + 2 * i, "default", 3.5 + i as f64, 0.1, false, Some("confirm")));
        }
        let t = tally(&v);
        assert_eq!(
            conclusion(&t, false, None),
            "not reproduced: 2 attempts hung (no CPU, no output past the hang limit) under jitter; none failed in 100 confirmation attempts (50 under jitter, 50 under default): not a reproduction"
        );
        assert_eq!(t.finding(ALPHA, false), Finding::NotReproduced);
        // One that failed again only under its own arm, not enough to single it out, is no
        // reproduction either... unless that failure is the baseline's too.
        let mut once_more = v.clone();
        once_more[10].outcome = Outcome::Timeout;
        once_more[10].signature = Some("timeout".into());
        assert_eq!(tally(&once_more).finding(ALPHA, false), Finding::Flaky);
        let t = tally(&hunt("copies=4", 0, |_| false, |_| false));
        assert_eq!(
            conclusion(&t, true, None),
            "not reproduced: 2 attempts failed under copies=4; the budget ended before any confirmation attempt ran: not a reproduction"
        );
        assert_eq!(t.finding(ALPHA, false), Finding::NotReproduced);
    }

    #[test]
    fn an_inert_arm_is_never_the_condition() {
        // Confirmation would single it out, but its mechanism took no effect here.
        let t = tally(&hunt("jitter=1", 5, |_| true, |_| false));
        let line = conclusion(&t, false, Some("injected no delay"));
        assert!(
            line.starts_with(
                "flaky: 2 attempts failed under jitter=1; in confirmation jitter=1 failed 5/5 and default 0/5"
            ),
            "{line}"
        );
        assert!(line.contains("jitter=1 had no effect here (injected no delay), so it is not the condition"), "{line}");
        assert_eq!(t.finding(ALPHA, true), Finding::Flaky);
        assert_eq!(t.finding(ALPHA, false), Finding::ConditionSensitive);
    }

    #[test]
    fn the_baseline_failing_twice_needs_no_condition() {
        let t = tally(&[
            attempt(0, "default", 0.0, 0.2, true, Some("calibrate")),
            attempt(1, "default", 0.2, 0.2, true, Some("calibrate")),
        ]);
        assert_eq!(
            conclusion(&t, false, None),
            "reproduced twice in 0.40 s (2 attempts) under default: the plain target fails, no condition needed"
        );
        assert_eq!(t.finding(ALPHA, false), Finding::Flaky);
    }

    #[test]
    fn slow_attempts_are_no_evidence_and_said_so() {
        let mut v = vec![attempt(0, "default", 0.0, 0.1, false, Some("calibrate"))];
        for id in 1..4 {
            let mut a = attempt(id, "jitter=1", id as f64, 4.0, false, None);
            a.outcome = Outcome::Slow;
            v.push(a);
        }
        let t = tally(&v);
        assert_eq!(t.tried()[1], Tried { cell: "jitter=1".into(), attempts: 0, failures: 0, slow: 3 });
        let line = conclusion(&t, true, None);
        assert!(
            line.contains("; ended while still at work (slow, no evidence either way) under jitter=1 x3"),
            "{line}"
        );
        assert!(line.contains("(1 attempts of default the fewest)"), "{line}");
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
        // An arm without a level is listed beside its family's levels.
        for (cell, n) in [("jitter=1", 20), ("jitter", 20)] {
            for _ in 0..n {
                v.push(attempt(id, cell, id as f64 * 0.1, 0.1, false, None));
                id += 1;
            }
        }
        let line = conclusion(&tally(&v), true, None);
        assert_eq!(
            line,
            "not reproduced in 54 s (540 attempts): tried default, cpu-starved=33,10, pause=2ms/10ms, copies=4, jitter, jitter=1; failed once (a rumour, never twice) under pause=2ms/10ms; a failure rate above 13.9% under each condition (20 attempts of jitter the fewest), above 1.0% under default, would very likely (95 %) have shown"
        );
    }
}
