//! A verification's verdict from its record alone: per condition, the rate now against the rate
//! then, and `fixed` (no failure in enough attempts, with the bound), `not-fixed` (the failure,
//! of the same signature or a new one, still appears; Fisher's p of now against then) or
//! `inconclusive` (too few attempts, or a condition that took no effect here). Pure. Main type:
//! [`VerifyDetails`]; main function: [`apply`].

use std::collections::{BTreeMap, BTreeSet};

use super::attempts;
use super::options::{Condition, Role, VerifyOptions};
use crate::analysis::stats::{self, format_p, format_rate};
use crate::analysis::Summary;
pub use crate::schema::verify::{ConditionResult, Rate, SeenSignature, Verified, VerifyDetails};
use crate::signature;

/// A failure rate with its confidence interval, and as the reports write it.
pub(super) trait RateOf {
    fn of(failures: u64, attempts: u64) -> Self;

    fn text(&self) -> String;
}

impl RateOf for Rate {
    fn of(failures: u64, attempts: u64) -> Self {
        let (lo, hi) = stats::wilson(failures, attempts, stats::Z95);
        let rate = if attempts == 0 { 0.0 } else { failures as f64 / attempts as f64 };
        Self { attempts, failures, rate, ci95: [lo, hi] }
    }

    fn text(&self) -> String {
        format!("{} ({}/{})", format_rate(self.rate), self.failures, self.attempts)
    }
}

/// A verification's condition as its table shows it.
pub trait ConditionText {
    /// The rate then, as a table shows it (`50.0% (8/16)`).
    fn then_text(&self) -> String;
}

impl ConditionText for ConditionResult {
    fn then_text(&self) -> String {
        self.then.text()
    }
}

/// A confidence reached, to a tenth of a percent (`64.6 %`, `0 %`).
pub fn confidence_text(confidence: f64) -> String {
    let text = format!("{:.1}", confidence * 100.0);
    format!("{} %", text.trim_end_matches(".0"))
}

/// `99 %`, `99.9 %`.
pub fn level_text(level: f64) -> String {
    let pct = level * 100.0;
    let text = format!("{pct:.3}");
    format!("{} %", text.trim_end_matches('0').trim_end_matches('.'))
}

/// Gives `summary` (built from the verification's record like any hunt's) the verification's
/// verdict and details. The cells are compared with the verified record, not with each other:
/// the per-cell comparison with the first cell is dropped. `hangs` counts, per cell, the
/// attempts that a limit of flakehunt's own found hung (see [`hangs_by_cell`]), `unreported`
/// the reproducer runs in which their test did not run (see [`unreported_by_cell`]).
pub fn apply(
    summary: &mut Summary,
    options: &VerifyOptions,
    hangs: &BTreeMap<String, u64>,
    unreported: &BTreeMap<String, NotRun>,
) {
    let level = options.level;
    // A failure is the one the record saw when its signature, moved lines and paths aside,
    // appeared there under any of the conditions (a hunt's arm's failure showing under the
    // baseline is still that failure).
    let seen: BTreeSet<&String> = options.conditions.iter().flat_map(|c| &c.signatures).collect();
    let seen_before = |signature: &str| seen.iter().any(|s| signature::same_failure(s, signature));
    // A hang is the record's failure only when the record hung too.
    let hung_then = seen_before(signature::HANG);
    let mut results = Vec::new();
    for c in &options.conditions {
        let Some(cell) = summary.cell(&c.cell) else { continue };
        let hung = if hung_then { 0 } else { hangs.get(&c.cell).copied().unwrap_or(0).min(cell.failures) };
        let not_run = unreported.get(&c.cell).cloned().unwrap_or_default();
        let failed_unreported = not_run.failed.min(cell.failures - hung);
        let passed_unreported = not_run.passed.min(cell.judged() - cell.failures);
        let unreported = failed_unreported + passed_unreported;
        let now = Rate::of(cell.failures - hung - failed_unreported, cell.judged() - hung - unreported);
        let inert = cell.inert.then(|| cell.inert_reason.clone().unwrap_or_else(|| "no measurable effect".into()));
        let signatures = summary
            .signatures
            .iter()
            .filter(|s| s.cells.contains(&c.cell) && (hung_then || s.signature != signature::HANG))
            .map(|s| {
                let names_test = c.test.as_ref().is_some_and(|t| {
                    s.signature.contains(&format!(" {t}: ")) || s.signature.ends_with(&failed_signature("", t))
                });
                SeenSignature { signature: s.signature.clone(), seen_before: names_test || seen_before(&s.signature) }
            })
            .collect();
        let without = not_run.culprit.map(|p| (p, not_run.without_culprit.min(passed_unreported)));
        results.push(judge(c, Now { rate: now, hung, unreported, without, inert, signatures }, level, Words::ATTEMPTS));
    }
    conclude(summary, options, results);
}

/// Gives `summary` the verification's verdict, from each condition's `results`, and its details.
pub(super) fn conclude(summary: &mut Summary, options: &VerifyOptions, results: Vec<ConditionResult>) {
    for cell in &mut summary.cells {
        cell.p_value = None;
        cell.amplification = None;
        cell.amplification_at_least = false;
        cell.sensitive = false;
        cell.direction = None;
        cell.meaning = None;
    }
    let judged = |v: &str| results.iter().filter(|r| r.verdict == v).collect::<Vec<_>>();
    let (not_fixed, inconclusive) = (judged("not-fixed"), judged("inconclusive"));
    let texts = |rs: &[&ConditionResult]| rs.iter().map(|r| r.text.clone()).collect::<Vec<_>>().join("; ");
    let (verdict, text) = if !not_fixed.is_empty() {
        ("not-fixed", format!("not fixed: {}", texts(&not_fixed)))
    } else if !inconclusive.is_empty() {
        ("inconclusive", format!("inconclusive: {}", texts(&inconclusive)))
    } else {
        let fixed = judged("fixed");
        ("fixed", format!("fixed: {}", texts(&fixed)))
    };
    summary.verdict = verdict.to_owned();
    summary.verdict_text = text;
    let details = VerifyDetails {
        verified: Verified {
            record: options.record.display().to_string(),
            kind: options.kind.clone(),
            run_id: options.run_id.clone(),
            hash: options.hash.clone(),
        },
        level: options.level,
        planned: options.attempts,
        conditions: results,
    };
    summary.details = crate::analysis::Details::Verify(Box::new(details));
}

/// Per cell, the attempts that hung: `timeout` at a limit flakehunt set (the hang rule, or its
/// default timeout), not at the user's `--timeout`, whose end is a failure the user defined.
pub fn hangs_by_cell(record: &crate::record::Record) -> Result<BTreeMap<String, u64>, crate::record::RecordError> {
    let mut hangs = BTreeMap::new();
    if record.manifest.plan.user_timeout() {
        return Ok(hangs);
    }
    for attempt in record.attempts()? {
        let attempt = attempt?;
        if attempt.outcome == crate::record::Outcome::Timeout {
            *hangs.entry(attempt.cell).or_insert(0) += 1;
        }
    }
    Ok(hangs)
}

/// How a verification's sentences name what it runs and what goes wrong: attempts that fail,
/// or (a fire record's) level runs that the ladder rejects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Words {
    /// One of what runs: `attempt`, `level run`.
    pub unit: &'static str,
    /// Several.
    pub units: &'static str,
    /// What a failure is called: `failure`, `rejection`.
    pub failure: &'static str,
    /// How a condition is named after a failure: `under tight-gil`, `at 8x40`.
    pub at: &'static str,
    /// What tells two failures apart: `signature`, `kind of rejection`.
    pub signature: &'static str,
    /// A condition that failed again: `still fails`.
    pub still: &'static str,
    /// Counts name their unit (`0/20 level runs`); attempts go without (`0/15`).
    pub counts_named: bool,
}

impl Words {
    /// Attempts that fail (a hunt's, a sweep's, a matrix's or a suite's reproduction).
    pub const ATTEMPTS: Words = Words {
        unit: "attempt",
        units: "attempts",
        failure: "failure",
        at: "under",
        signature: "signature",
        still: "still fails",
        counts_named: false,
    };
    /// Level runs that the ladder rejects (a fire record's).
    pub const LEVEL_RUNS: Words = Words {
        unit: "level run",
        units: "level runs",
        failure: "rejection",
        at: "at",
        signature: "kind of rejection",
        still: "is still rejected",
        counts_named: true,
    };

    /// The words of a verification of a record of kind `kind` (its name).
    pub fn of(kind: &str) -> Self {
        if kind == crate::record::Kind::Fire.name() {
            Self::LEVEL_RUNS
        } else {
            Self::ATTEMPTS
        }
    }

    /// `1 attempt`, `20 level runs`.
    pub fn count(&self, n: u64) -> String {
        format!("{n} {}", if n == 1 { self.unit } else { self.units })
    }
}

/// The signature of a failure of `test` in a reproducer's run that ended with `status`
/// (`exit 1: failed: tests/test_b.py::test_victim`), the same then and now (see
/// [`super::reproducers::judge_by_the_test`]).
pub fn failed_signature(status: &str, test: &str) -> String {
    format!("{status}: failed: {test}")
}

/// Whether `attempt`, a reproducer's run, holds a result of `test` in its structured output.
pub fn reported(attempt: &crate::record::Attempt, test: &str) -> bool {
    attempt.suite.as_deref().is_some_and(|t| t.tests.iter().any(|r| r.id == test))
}

/// Whether `attempt`, a reproducer's run, is evidence about `test`: a run of it failed, or it
/// ran and passed. A test that reported nothing did not run (it is not collected any more, a
/// conftest deselected it, the run broke first), and one that was skipped (`@pytest.mark.skip`,
/// an `xfail` that failed as expected, Go's `t.Skip`, libtest's `#[ignore]`) ran none of its
/// body's checks: a run that exits 0 all the same proves no fix.
pub fn ran(attempt: &crate::record::Attempt, test: &str) -> bool {
    use crate::kind::suite::TestOutcome;
    let Some(t) = attempt.suite.as_deref() else { return false };
    let runs: Vec<TestOutcome> = t.tests.iter().filter(|r| r.id == test).map(|r| r.outcome).collect();
    runs.iter().any(|o| o.is_failure()) || (!runs.is_empty() && !runs.contains(&TestOutcome::Skip))
}

/// A cell's reproducer runs that are no evidence: its test did not run (see [`ran`]), by how
/// their process ended, or it passed where a test its reproducer runs before it (a polluter)
/// did not run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NotRun {
    /// Runs whose process failed.
    pub failed: u64,
    /// Runs whose process passed (a skipped or deselected test, the rest of the reproducer
    /// passing; or a pass without its polluters), `without_culprit` included.
    pub passed: u64,
    /// Passes of the test in runs in which one of its polluters did not run.
    pub without_culprit: u64,
    /// The first polluter that did not run.
    pub culprit: Option<String>,
}

/// The tests a suite's reproducer runs before `condition`'s test, in the suite's `selection`:
/// a pytest reproducer's node ids, a Go reproducer's `-test.run '^(TestP|TestV)$'` names. None
/// for a reproducer of the test alone or twice.
fn culprits<'a>(condition: &'a super::Condition, selection: Option<&BTreeSet<&str>>) -> Vec<&'a str> {
    let test = condition.test.as_deref().unwrap_or_default();
    let words = condition.reproducer.iter().map(String::as_str);
    let go = condition.reproducer.iter().position(|w| w == "-test.run").and_then(|i| condition.reproducer.get(i + 1));
    let named: Vec<&str> = match go {
        Some(pattern) => pattern
            .trim_start_matches('^')
            .trim_end_matches('$')
            .trim_start_matches('(')
            .trim_end_matches(')')
            .split('|')
            .collect(),
        None => words.filter(|w| selection.is_some_and(|s| s.contains(w))).collect(),
    };
    named.into_iter().filter(|t| *t != test).collect()
}

/// Per cell of a suite's verification, its reproducer runs in which the verified test did not
/// run (see [`ran`]): none is evidence about the test, whether its process failed (it died
/// before the test ran, a fixture broke the session) or passed (the test was skipped, or is
/// not collected any more and the rest passed). A timeout is left to the hang rule.
pub fn unreported_by_cell(
    record: &crate::record::Record,
    options: &VerifyOptions,
) -> Result<BTreeMap<String, NotRun>, crate::record::RecordError> {
    use crate::record::Outcome;
    let mut unreported: BTreeMap<String, NotRun> = BTreeMap::new();
    // The test runner of an adapter's one test (`--cargo-test`, `--go-test`, `--pytest`), whose
    // report says whether its test ran; a command's own output is not read.
    let adapter = record.manifest.extra.adapter.as_ref();
    let runner = adapter.map(crate::record::Adapter::name);
    let adapters_test = match adapter {
        Some(crate::record::Adapter::GoTest { test, .. }) => test.as_deref(),
        Some(crate::record::Adapter::CargoTest { test, .. }) => Some(test.as_str()),
        _ => None,
    };
    if options.conditions.iter().all(|c| c.test.is_none()) && runner.is_none() {
        return Ok(unreported);
    }
    let selection: Option<BTreeSet<&str>> =
        record.manifest.extra.suite.as_ref().map(|s| s.selection.iter().map(String::as_str).collect());
    for attempt in record.attempts()? {
        let attempt = attempt?;
        let Some(condition) = options.conditions.iter().find(|c| c.cell == attempt.cell) else { continue };
        if matches!(attempt.outcome, Outcome::Timeout | Outcome::Slow) {
            continue;
        }
        let did_not_run = match (&condition.test, runner) {
            (Some(test), _) if ran(&attempt, test) && !attempt.outcome.is_failure() => {
                // It passed: evidence only when the reproducer's other tests (its polluters)
                // ran before it, the condition it failed under then.
                let absent = culprits(condition, selection.as_ref()).into_iter().find(|c| !ran(&attempt, c));
                if let Some(absent) = absent {
                    let entry = unreported.entry(attempt.cell.clone()).or_default();
                    entry.culprit.get_or_insert_with(|| absent.to_owned());
                    entry.without_culprit += 1;
                }
                absent.is_some()
            }
            (Some(test), _) => !ran(&attempt, test),
            (None, Some(runner)) => {
                !attempt.outcome.is_failure()
                    && crate::signature::test_failure::ran_no_test(runner, adapters_test, &attempt.stdout_tail)
                        .is_some()
            }
            (None, None) => false,
        };
        if !did_not_run {
            continue;
        }
        let entry = unreported.entry(attempt.cell).or_default();
        if attempt.outcome.is_failure() {
            entry.failed += 1;
        } else {
            entry.passed += 1;
        }
    }
    Ok(unreported)
}

/// What a verification saw under one cell.
pub(super) struct Now {
    /// Its failures in its attempts, hangs left out.
    pub rate: Rate,
    /// Its hangs (none when the verified record hung too: they are then its failure).
    pub hung: u64,
    /// Its reproducer runs in which its test did not run (reported nothing, or was skipped), or
    /// passed without its polluters, left out of `rate`.
    pub unreported: u64,
    /// A polluter that did not run, and the test's passes without it (among `unreported`).
    pub without: Option<(String, u64)>,
    /// Why its condition had no effect here.
    pub inert: Option<String>,
    /// The signatures of its failures.
    pub signatures: Vec<SeenSignature>,
}

/// One cell's verdict, said in `words`.
pub(super) fn judge(c: &Condition, seen: Now, level: f64, words: Words) -> ConditionResult {
    let Now { rate: now, hung, unreported, without, inert, signatures } = seen;
    let then = Rate::of(c.failures, c.attempts);
    let at = level_text(level);
    let name = &c.cell;
    let mut p_value = None;
    let mut bound = None;
    let (verdict, text) = if now.failures > 0 {
        let p = stats::fisher_exact_two_sided(
            now.failures,
            now.attempts - now.failures,
            then.failures,
            then.attempts - then.failures,
        );
        p_value = Some(p);
        let new: Vec<&str> = signatures.iter().filter(|s| !s.seen_before).map(|s| s.signature.as_str()).collect();
        let first_new = || {
            let first: String = new[0].chars().take(160).collect();
            let more = if new.len() > 1 { format!(" (and {} more)", new.len() - 1) } else { String::new() };
            format!("{first}{}{more}", if first.len() < new[0].len() { "..." } else { "" })
        };
        let what = words.signature;
        // A fire record's kinds of rejection are few and short: say which it is.
        let same = if words.counts_named {
            let seen: Vec<&str> = signatures.iter().filter(|s| s.seen_before).map(|s| s.signature.as_str()).collect();
            format!("the same {what}: {}", seen.join(", "))
        } else {
            format!("the same {what}")
        };
        let which = match (new.len(), signatures.len()) {
            (0, _) => same,
            (n, all) if n == all && words.counts_named && !c.signatures.is_empty() => {
                format!("a new {what}: {}, was {}", first_new(), c.signatures.join(", "))
            }
            (n, all) if n == all => format!("a new {what}: {}", first_new()),
            _ => format!("the same {what}, and a new one: {}", first_new()),
        };
        (
            "not-fixed",
            format!("{name} {}: {} now, was {}, {} ({which})", words.still, now.text(), then.text(), format_p(p)),
        )
    } else if hung > 0 {
        (
            "inconclusive",
            format!(
                "{name} hung in {hung} of {} attempts (no CPU, no output past the hang limit), which the verified record never did: a hang is neither its failure nor a pass; hunt it with `flakehunt hunt`",
                now.attempts + hung
            ),
        )
    } else if let Some((polluter, passes)) = without.filter(|(_, n)| *n == unreported) {
        (
            "inconclusive",
            format!(
                "{name} passed in {passes} of {} runs of its reproducer in which {polluter}, which it failed after, did not run (skipped, deselected, or not collected any more): the condition it failed under did not take effect, and such a pass proves no fix",
                now.attempts + unreported,
            ),
        )
    } else if unreported > 0 {
        (
            "inconclusive",
            format!(
                "{name} reported no result in {unreported} of {} {}: it did not run (it was skipped or xfailed, ignored, deselected, is not collected any more, or the run broke first), and such a run is neither its failure nor a pass",
                now.attempts + unreported,
                if c.test.is_some() { "runs of its reproducer" } else { "attempts of its test" },
            ),
        )
    } else if let Some(why) = &inert {
        ("inconclusive", format!("{name} had no effect here ({why}): its clean attempts are no evidence"))
    } else if let Some(why) = c.inert_then.as_ref().filter(|_| c.role == Role::Condition) {
        (
            "inconclusive",
            format!(
                "{name} had no effect in the verified record ({why}): its failures there were not its condition's, and clean attempts under it prove no fix; hunt again for a condition that takes effect"
            ),
        )
    } else if c.role == Role::Baseline {
        ("clean", format!("{name} {} now, was {}", now.text(), then.text()))
    } else {
        let b = attempts::bound_after(now.attempts, level);
        bound = Some(b);
        let needed = c.needed.unwrap_or(u64::MAX);
        if now.attempts >= needed {
            (
                "fixed",
                format!(
                    "{} rate {} {name} now < {} at {at} (0/{}{}), was {}",
                    words.failure,
                    words.at,
                    format_rate(b),
                    now.attempts,
                    if words.counts_named { format!(" {}", words.units) } else { String::new() },
                    then.text()
                ),
            )
        } else {
            let rule_out = attempts::rate_to_rule_out(c.failures, c.attempts).unwrap_or(0.0);
            (
                "inconclusive",
                format!(
                    "no {} {} {name} in {} (rate < {} at {at}), but ruling out the recorded rate's lower end, {}, needs {needed}: they rule it out at only {}",
                    words.failure,
                    words.at,
                    words.count(now.attempts),
                    format_rate(b),
                    format_rate(rule_out),
                    confidence_text(attempts::confidence_after(now.attempts, rule_out)),
                ),
            )
        }
    };
    ConditionResult {
        cell: c.cell.clone(),
        role: c.role,
        verdict: verdict.to_owned(),
        text,
        then,
        then_source: c.source.clone(),
        now,
        needed: c.needed,
        bound,
        p_value,
        signatures,
        inert,
        hung,
        unreported,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition(failures: u64, attempts: u64) -> Condition {
        let (lo, hi) = stats::wilson(failures, attempts, stats::Z95);
        Condition {
            cell: "tight-gil".into(),
            role: Role::Condition,
            source: "the sweep".into(),
            attempts,
            failures,
            ci95: [lo, hi],
            needed: attempts::rate_to_rule_out(failures, attempts).map(|p| attempts::needed(p, 0.99)),
            mean_seconds: 0.1,
            signatures: vec!["exit 1: AssertionError".into()],
            test: None,
            inert_then: None,
            reproducer: Vec::new(),
        }
    }

    fn now(rate: Rate, inert: Option<String>, signatures: Vec<SeenSignature>) -> Now {
        Now { rate, hung: 0, unreported: 0, without: None, inert, signatures }
    }

    #[test]
    fn a_hang_is_neither_the_failure_nor_a_pass() {
        let c = condition(8, 11);
        let n = c.needed.unwrap();
        // Enough clean attempts, and one that hung: no proof of a fix, and not the race again.
        let r = judge(&c, Now { hung: 1, ..now(Rate::of(0, n), None, Vec::new()) }, 0.99, Words::ATTEMPTS);
        assert_eq!(r.verdict, "inconclusive", "{}", r.text);
        assert!(r.text.contains(&format!("hung in 1 of {} attempts", n + 1)), "{}", r.text);
        // The race as well: not fixed, whatever hung.
        let same = vec![SeenSignature { signature: "exit 1: AssertionError".into(), seen_before: true }];
        let r = judge(&c, Now { hung: 1, ..now(Rate::of(2, n), None, same) }, 0.99, Words::ATTEMPTS);
        assert_eq!(r.verdict, "not-fixed", "{}", r.text);
    }

    #[test]
    fn a_condition_inert_in_the_verified_record_proves_nothing() {
        let c = Condition { inert_then: Some("the program set its own switch interval".into()), ..condition(8, 16) };
        let n = c.needed.unwrap();
        let r = judge(&c, now(Rate::of(0, n), None, Vec::new()), 0.99, Words::ATTEMPTS);
        assert_eq!(r.verdict, "inconclusive", "{}", r.text);
        assert!(r.text.contains("had no effect in the verified record"), "{}", r.text);
    }

    #[test]
    fn enough_clean_attempts_are_fixed_with_the_bound() {
        let c = condition(8, 11);
        let n = c.needed.unwrap();
        let r = judge(&c, now(Rate::of(0, n), None, Vec::new()), 0.99, Words::ATTEMPTS);
        assert_eq!(r.verdict, "fixed");
        assert!(r.text.starts_with("failure rate under tight-gil now < "), "{}", r.text);
        assert!(r.text.contains(&format!("at 99 % (0/{n}), was 72.7% (8/11)")), "{}", r.text);
    }

    #[test]
    fn too_few_clean_attempts_are_inconclusive_and_say_what_they_rule_out() {
        let c = condition(8, 11);
        let r = judge(&c, now(Rate::of(0, 2), None, Vec::new()), 0.99, Words::ATTEMPTS);
        assert_eq!(r.verdict, "inconclusive", "{}", r.text);
        assert!(r.text.contains("rule it out at only"), "{}", r.text);
    }

    #[test]
    fn an_inert_condition_is_no_evidence() {
        let c = condition(8, 11);
        let r =
            judge(&c, now(Rate::of(0, 100), Some("no interval reported".into()), Vec::new()), 0.99, Words::ATTEMPTS);
        assert_eq!(r.verdict, "inconclusive");
    }

    #[test]
    fn a_failure_now_is_not_fixed_and_says_which_signature() {
        let c = condition(8, 11);
        let same = vec![SeenSignature { signature: "exit 1: AssertionError".into(), seen_before: true }];
        let r = judge(&c, now(Rate::of(3, 10), None, same), 0.99, Words::ATTEMPTS);
        assert_eq!(r.verdict, "not-fixed");
        assert!(r.text.contains("(the same signature)") && r.p_value.is_some(), "{}", r.text);
        let new = vec![SeenSignature { signature: "exit 2: KeyError".into(), seen_before: false }];
        let r = judge(&c, now(Rate::of(1, 10), Some("inert".into()), new), 0.99, Words::ATTEMPTS);
        assert_eq!(r.verdict, "not-fixed", "a failure is evidence whatever the condition did");
        assert!(r.text.contains("a new signature: exit 2: KeyError"), "{}", r.text);
    }

    #[test]
    fn levels_read_as_percentages() {
        assert_eq!(level_text(0.99), "99 %");
        assert_eq!(level_text(0.999), "99.9 %");
        assert_eq!(level_text(0.95), "95 %");
        assert_eq!(confidence_text(0.646_12), "64.6 %");
        assert_eq!(confidence_text(0.0), "0 %");
    }
}
