//! The suite part of the summary document (kind `suite`): one entry per test that failed at
//! least once, with its category, culprits and a checked reproducer. Main type:
//! [`SuiteSummary`], flattened into [`crate::analysis::Summary`] the way fire's is (`tests`,
//! `framework`, ... beside the common fields), so other kinds' documents do not change. Its
//! fields are a contract (ARCHITECTURE.md, "Contracts"): add freely, never rename.

use super::classify::{classify, Category, TestTally};
use super::{Framework, TestId};
use crate::analysis::stats;
use crate::kind::suite::state::StateFindings;
pub use crate::schema::suite::{ConditionSummary, IncompleteRuns, SuiteSummary, TestSummary, UnreportedTest};

/// One test's part of a suite summary, from its tally.
pub trait TestSummaryOf: Sized {
    /// The entry of a test from its tally, or none when it never failed.
    fn new(id: TestId, tally: &TestTally, reproducer: Vec<String>, message: Option<String>) -> Option<Self>;
}

impl TestSummaryOf for TestSummary {
    fn new(id: TestId, tally: &TestTally, reproducer: Vec<String>, message: Option<String>) -> Option<Self> {
        let c = classify(tally)?;
        let (lo, hi) = stats::wilson(tally.failures, tally.attempts, stats::Z95);
        let base = tally.conditions.first();
        let conditions = tally
            .conditions
            .iter()
            .enumerate()
            .map(|(i, c)| ConditionSummary {
                name: c.name.clone(),
                runs: c.runs,
                failures: c.failures,
                p_value: base.filter(|b| i > 0 && b.runs > 0 && c.runs > 0).map(|b| {
                    stats::fisher_exact_two_sided(c.failures, c.runs - c.failures, b.failures, b.runs - b.failures)
                }),
            })
            .collect();
        Some(TestSummary {
            id,
            attempts: tally.attempts,
            failures: tally.failures,
            rate: if tally.attempts == 0 { 0.0 } else { tally.failures as f64 / tally.attempts as f64 },
            ci95: [lo, hi],
            conditions,
            category: c.category,
            condition: c.condition,
            polluters: tally.polluters.clone(),
            state_setters: tally.state_setters.clone(),
            reproducer,
            message,
            bisection: None,
            alone: [tally.alone_runs, tally.alone_failures],
            repeated: [tally.repeat_runs, tally.repeat_failures],
            unreported: tally.unreported,
            state: None,
        })
    }
}

/// A suite summary computed from its tests' tallies.
pub trait SuiteSummaryOf {
    /// The summary of `tests` (id, tally, reproducer, message): the ones that never failed
    /// are left out; the rest are sorted by failures, then id.
    fn build(
        framework: Framework,
        collected: u64,
        tests: impl IntoIterator<Item = (TestId, TestTally, Vec<String>, Option<String>)>,
    ) -> Self;

    /// Takes in the attempts whose tests did not all report, and the tests that did not.
    fn add_incomplete(&mut self, tallies: &super::record::Tallies);
}

impl SuiteSummaryOf for SuiteSummary {
    fn build(
        framework: Framework,
        collected: u64,
        tests: impl IntoIterator<Item = (TestId, TestTally, Vec<String>, Option<String>)>,
    ) -> Self {
        let mut tests: Vec<TestSummary> = tests
            .into_iter()
            .filter_map(|(id, tally, reproducer, message)| TestSummary::new(id, &tally, reproducer, message))
            .collect();
        tests.sort_by(|a, b| b.failures.cmp(&a.failures).then_with(|| a.id.cmp(&b.id)));
        SuiteSummary {
            framework,
            collected,
            shuffled: framework.orders(),
            tests,
            classified: true,
            incomplete: Vec::new(),
            unreported: Vec::new(),
            failed_otherwise: Vec::new(),
            cost: None,
        }
    }

    fn add_incomplete(&mut self, tallies: &super::record::Tallies) {
        group(&mut self.incomplete, &tallies.incomplete);
        group(&mut self.failed_otherwise, &tallies.failed_otherwise);
        self.unreported =
            tallies.unreported.iter().map(|(id, n)| UnreportedTest { id: id.clone(), attempts: *n }).collect();
        self.unreported.sort_by(|a, b| b.attempts.cmp(&a.attempts).then_with(|| a.id.cmp(&b.id)));
    }
}

/// One note per reason a run failed otherwise, whatever numbers it holds (a coverage total
/// differs from run to run), the phases it happened in counted.
fn failed_otherwise_notes(runs: &[IncompleteRuns]) -> Vec<String> {
    /// One reason: its shape (numbers masked), its first words, runs per phase, and whether
    /// its numbers varied.
    struct Reason<'a> {
        shape: String,
        why: &'a str,
        phases: Vec<(String, usize)>,
        varied: bool,
    }
    let mut notes = Vec::new();
    let mut reasons: Vec<Reason> = Vec::new();
    for g in runs {
        let shape = numbers_masked(&g.why);
        let at = match reasons.iter().position(|r| r.shape == shape) {
            Some(at) => at,
            None => {
                reasons.push(Reason { shape, why: &g.why, phases: Vec::new(), varied: false });
                reasons.len() - 1
            }
        };
        let r = &mut reasons[at];
        r.varied |= r.why != g.why;
        match r.phases.iter_mut().find(|(p, _)| *p == g.phase) {
            Some((_, n)) => *n += g.attempts.len(),
            None => r.phases.push((g.phase.clone(), g.attempts.len())),
        }
    }
    for Reason { why, phases, varied, .. } in reasons {
        let n: usize = phases.iter().map(|(_, n)| n).sum();
        let phases: Vec<String> = phases.iter().map(|(p, n)| format!("{n} {p}")).collect();
        notes.push(format!(
            "{n} run{} ({}) failed for another reason than a test: {why}{}; each run is judged by its tests' own results, not by the process's exit status",
            if n == 1 { "" } else { "s" },
            phases.join(", "),
            if varied { " (its numbers vary from run to run)" } else { "" },
        ));
    }
    notes
}

/// `text` with each number in it (`41.47`, `3`) as `#`.
fn numbers_masked(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_number = false;
    for c in text.chars() {
        let digit = c.is_ascii_digit() || (in_number && c == '.');
        if digit && !in_number {
            out.push('#');
        } else if !digit {
            out.push(c);
        }
        in_number = digit;
    }
    out
}

/// Adds each of `attempts` to the group of its why and phase.
fn group(groups: &mut Vec<IncompleteRuns>, attempts: &[super::record::IncompleteAttempt]) {
    for a in attempts {
        let phase = super::record::role_name(a.role);
        match groups.iter_mut().find(|g| g.why == a.why && g.phase == phase) {
            Some(g) => g.attempts.push(a.attempt),
            None => {
                groups.push(IncompleteRuns { why: a.why.clone(), phase: phase.to_owned(), attempts: vec![a.attempt] })
            }
        }
    }
}

/// Puts a suite's classification (`suite`, `complete` when every run it asked for was had) into
/// its hunt's summary: the verdict, its words and notes.
pub fn apply(summary: &mut crate::analysis::Summary, mut suite: SuiteSummary, complete: bool) {
    suite.classified = complete;
    summary.verdict = suite.verdict().to_owned();
    summary.verdict_text = suite.verdict_text(summary.attempts);
    if !suite.incomplete.is_empty() {
        // A clean cell's attempts include some whose tests did not all report: what zero
        // failures would rule out is not known.
        let unfounded = crate::analysis::summary::zero_failure_notes(&summary.cells);
        summary.notes.retain(|n| !unfounded.contains(n));
    }
    if !suite.shuffled {
        summary.notes.push(super::order::LIBTEST_ORDER_NOTE.to_owned());
    }
    summary.notes.extend(failed_otherwise_notes(&suite.failed_otherwise));
    if !suite.classified {
        summary.notes.push(
            "the classification is incomplete (the hunt was interrupted during its confirmation runs): continue it with --resume".to_owned(),
        );
    }
    summary.suite = Some(suite);
}

/// The sentence of a suite hunt's verdict.
pub trait SuiteVerdictText {
    /// The verdict in words: how many tests failed, by category.
    fn verdict_text(&self, attempts: u64) -> String;
}

impl SuiteVerdictText for SuiteSummary {
    fn verdict_text(&self, attempts: u64) -> String {
        let short = self.incomplete_text();
        if self.tests.is_empty() {
            if let Some(short) = short {
                return format!("no test failed of those that reported, but {short}");
            }
            return format!("no test failed: {} tests, {attempts} attempts of the whole selection", self.collected);
        }
        let mut counts: Vec<(Category, usize)> = Vec::new();
        for t in &self.tests {
            match counts.iter_mut().find(|(c, _)| *c == t.category) {
                Some((_, n)) => *n += 1,
                None => counts.push((t.category, 1)),
            }
        }
        counts.sort();
        let parts: Vec<String> = counts.iter().map(|(c, n)| format!("{n} {}", c.name())).collect();
        let n = self.tests.len();
        let mut text = format!("{n} of {} tests failed ({})", self.collected, parts.join(", "));
        if let Some(short) = short {
            text.push_str(&format!("; {short}"));
        }
        text
    }
}

/// The verdict's sentence about the attempts whose tests did not all report.
trait IncompleteText {
    /// `3 attempts ended before all their tests reported (the process ...; 5 tests never
    /// reported in some)`, or none when every attempt's tests reported.
    fn incomplete_text(&self) -> Option<String>;
}

impl IncompleteText for SuiteSummary {
    fn incomplete_text(&self) -> Option<String> {
        let first = self.incomplete.first()?;
        let n = self.incomplete_attempts();
        let (attempts, their) = if n == 1 { ("attempt", "its") } else { ("attempts", "their") };
        let mut text = format!("{n} {attempts} ended before all {their} tests reported ({}", first.why);
        if self.incomplete.len() > 1 {
            let others = self.incomplete.len() - 1;
            text.push_str(&format!(", and {others} other {}", if others == 1 { "reason" } else { "reasons" }));
        }
        text.push(')');
        if !self.unreported.is_empty() {
            let k = self.unreported.len();
            text.push_str(&format!(": {k} {} did not report in some", if k == 1 { "test" } else { "tests" }));
        }
        Some(text)
    }
}

/// What the reports say of one test's state: the finding in the user's words, its cleanup's
/// sentence (where it goes and how it was checked, or why none is proved), and the cleanup's
/// code when it is proved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateLines<'a> {
    /// The finding.
    pub sentence: String,
    /// The cleanup's sentence.
    pub cleanup: Option<String>,
    /// The proved cleanup's code.
    pub code: Option<&'a str>,
}

/// The state search's findings on the summary (see [`super::state`]).
/// The state search's part of a suite summary: what it asks for and what it found.
pub trait SuiteState {
    /// Puts each finding on its test in the summary, without its cost and its run (measurements
    /// of the machine, kept in the record's [`super::state::FILE`]: the summary says what was
    /// found, and its `cost` what the state search took).
    fn apply_state(&mut self, findings: Vec<super::state::StateFinding>);

    /// What the terminal and the reports print under the table: one per finding.
    fn state_lines(&self) -> Vec<StateLines<'_>>;

    /// The tests of `summary` whose state is searched, with the tests that ran before them and
    /// what is searched: each order-dependent pytest or Go test with its polluters (or
    /// state-setters), each non-idempotent one against its own first run.
    fn state_wanted(&self) -> Vec<(TestId, Vec<TestId>, super::state::Against)>;
}

impl SuiteState for SuiteSummary {
    fn apply_state(&mut self, findings: Vec<super::state::StateFinding>) {
        for mut finding in findings {
            finding.cost = None;
            finding.run = None;
            if let Some(c) = &mut finding.cleanup {
                c.seconds = None;
                c.run = None;
            }
            if let Some(t) = self.tests.iter_mut().find(|t| t.id == finding.test) {
                t.state = Some(finding);
            }
        }
    }

    fn state_lines(&self) -> Vec<StateLines<'_>> {
        self.tests
            .iter()
            .filter_map(|t| t.state.as_ref())
            .map(|f| StateLines { sentence: f.sentence(), cleanup: f.cleanup_sentence(), code: f.cleanup_code() })
            .collect()
    }

    fn state_wanted(&self) -> Vec<(TestId, Vec<TestId>, super::state::Against)> {
        use super::classify::Category;
        use super::state::Against;
        if !matches!(self.framework, super::Framework::Pytest | super::Framework::Go) {
            return Vec::new();
        }
        self.tests
            .iter()
            .filter_map(|t| match t.category {
                Category::OrderDependentVictim if !t.polluters.is_empty() => {
                    Some((t.id.clone(), t.polluters.clone(), Against::Polluters))
                }
                Category::OrderDependentBrittle if !t.state_setters.is_empty() => {
                    Some((t.id.clone(), t.state_setters.clone(), Against::StateSetters))
                }
                Category::NonIdempotent => Some((t.id.clone(), vec![t.id.clone()], Against::FirstRun)),
                _ => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> SuiteSummary {
        let victim = TestTally {
            attempts: 20,
            failures: 9,
            alone_runs: 3,
            polluters: vec!["tests/test_alpha.py::test_polluter".into()],
            ..Default::default()
        };
        let brittle = TestTally {
            attempts: 20,
            failures: 11,
            alone_runs: 3,
            alone_failures: 3,
            state_setters: vec!["tests/test_alpha.py::test_state_setter".into()],
            ..Default::default()
        };
        let clean = TestTally { attempts: 20, alone_runs: 0, ..Default::default() };
        let reproducer = |tests: &[&str]| -> Vec<String> {
            let mut argv: Vec<String> = ["python3", "-m", "pytest", "-p", "no:randomly"].map(String::from).to_vec();
            argv.extend(tests.iter().map(|t| t.to_string()));
            argv
        };
        SuiteSummary::build(
            Framework::Pytest,
            13,
            [
                (
                    "tests/test_beta.py::test_victim".to_owned(),
                    victim,
                    reproducer(&["tests/test_alpha.py::test_polluter", "tests/test_beta.py::test_victim"]),
                    Some("AssertionError: handlers left registered: ['audit']".into()),
                ),
                (
                    "tests/test_beta.py::test_brittle".to_owned(),
                    brittle,
                    reproducer(&["tests/test_beta.py::test_brittle"]),
                    None,
                ),
                ("tests/test_beta.py::test_clean_beta".to_owned(), clean, Vec::new(), None),
            ],
        )
    }

    #[test]
    fn only_failing_tests_most_failures_first_with_the_contract_fields() {
        let s = example();
        assert_eq!(s.verdict(), "flaky-tests");
        let ids: Vec<&str> = s.tests.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["tests/test_beta.py::test_brittle", "tests/test_beta.py::test_victim"]);
        let json = serde_json::to_value(&s).unwrap();
        let victim = &json["tests"][1];
        for field in ["id", "attempts", "failures", "category", "polluters", "state_setters", "reproducer"] {
            assert!(victim.get(field).is_some(), "{field} missing: {victim}");
        }
        assert_eq!(victim["category"], "order-dependent-victim");
        assert_eq!(victim["polluters"][0], "tests/test_alpha.py::test_polluter");
        assert_eq!(json["tests"][0]["category"], "order-dependent-brittle");
        assert_eq!(json["framework"], "pytest");
        assert_eq!(SuiteSummary::build(Framework::Libtest, 3, []).verdict(), "not-reproduced");
        assert!(!SuiteSummary::build(Framework::Libtest, 3, []).shuffled);
    }

    #[test]
    fn runs_failed_otherwise_are_one_note_per_reason_whatever_its_numbers() {
        let mut s = example();
        let why = |total: &str| {
            format!("the process exited with code 1 though none of its tests failed: FAIL Required test coverage of 100% not reached. Total coverage: {total}%")
        };
        let runs = |why: String, phase: &str, attempts: Vec<u64>| IncompleteRuns { why, phase: phase.into(), attempts };
        s.failed_otherwise = vec![
            runs(why("41.47"), "alone", vec![3, 4]),
            runs(why("43.81"), "alone", vec![5]),
            runs(why("41.47"), "reproducer", vec![9]),
            runs("the process was killed by SIGTERM though none of its tests failed".into(), "shuffled", vec![0]),
        ];
        let notes = failed_otherwise_notes(&s.failed_otherwise);
        assert_eq!(notes.len(), 2, "{notes:#?}");
        assert!(notes[0].starts_with("4 runs (3 alone, 1 reproducer) failed for another reason than a test: the process exited with code 1 though none of its tests failed: FAIL Required test coverage of 100% not reached. Total coverage: 41.47% (its numbers vary from run to run);"), "{}", notes[0]);
        assert!(notes[1].starts_with("1 run (1 shuffled) failed") && !notes[1].contains("vary"), "{}", notes[1]);
        assert_eq!(numbers_masked("v1.2.3 at 10 s"), "v# at # s");
    }

    #[test]
    fn round_trips_through_json() {
        let s = example();
        let text = serde_json::to_string_pretty(&s).unwrap();
        let back: SuiteSummary = serde_json::from_str(&text).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn flattens_beside_the_common_fields() {
        // The way it joins the summary document: `#[serde(flatten)] suite: Option<SuiteSummary>`.
        #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
        struct Doc {
            kind: String,
            #[serde(flatten)]
            suite: Option<SuiteSummary>,
        }
        let doc = Doc { kind: "suite".into(), suite: Some(example()) };
        let json = serde_json::to_value(&doc).unwrap();
        assert_eq!(json["tests"][1]["id"], "tests/test_beta.py::test_victim");
        assert_eq!(serde_json::from_value::<Doc>(json).unwrap(), doc);
        let other: Doc = serde_json::from_str(r#"{"kind": "sweep"}"#).unwrap();
        assert_eq!(other.suite, None, "other kinds' documents read back without suite fields");
    }
}
