//! The suite parts every format shows: the table of the tests that failed (id, category, rate,
//! polluter or state-setter, condition, reproducer) and the words each cell of it holds. Pure.
//! Main function: [`table`].

use comfy_table::presets::NOTHING;
use comfy_table::Table;

use crate::analysis::stats::format_rate;
use crate::kind::suite::summary::{SuiteState, SuiteSummary, TestSummary};

/// `4/6 (66.7%)`: the shuffled attempts it failed in.
pub fn rate(t: &TestSummary) -> String {
    let [repeated, second_failed] = t.repeated;
    if t.failures == 0 && second_failed > 0 {
        // Non-idempotent: it never fails run once.
        return format!("0/{}; run twice: {second_failed}/{repeated}", t.attempts);
    }
    format!("{}/{} ({})", t.failures, t.attempts, format_rate(t.rate))
}

/// Who makes it fail (`after P`) or pass (`passes after S`); `-` when nobody was found.
pub fn culprits(t: &TestSummary) -> String {
    if !t.polluters.is_empty() {
        format!("after {}", t.polluters.join(" + "))
    } else if !t.state_setters.is_empty() {
        format!("passes after {}", t.state_setters.join(" + "))
    } else {
        "-".to_owned()
    }
}

/// The condition a condition-sensitive test fails more under, or `-`.
pub fn condition(t: &TestSummary) -> String {
    t.condition.clone().unwrap_or_else(|| "-".to_owned())
}

/// The reproducer as shell words to paste, or why there is none.
pub fn reproducer(t: &TestSummary) -> String {
    if t.reproducer.is_empty() {
        "none that fails twice in a row".to_owned()
    } else {
        crate::plan::shell_words(&t.reproducer)
    }
}

/// The attempts that ended before all their tests reported, one line per reason
/// (`shuffled attempts 0, 1, 2: the process ...`), then the tests that did not report; empty
/// when every attempt's tests did.
pub fn incomplete(s: &SuiteSummary) -> Vec<String> {
    let mut lines = Vec::new();
    for g in &s.incomplete {
        let (attempts, ids) = (g.attempts.len(), ids_text(&g.attempts));
        let noun = if attempts == 1 { "attempt" } else { "attempts" };
        lines.push(format!("{} {noun} {ids}: {}", g.phase, g.why));
    }
    if !s.unreported.is_empty() {
        const SHOWN: usize = 5;
        let mut named: Vec<String> = s
            .unreported
            .iter()
            .take(SHOWN)
            .map(|t| format!("{} ({} {})", t.id, t.attempts, if t.attempts == 1 { "attempt" } else { "attempts" }))
            .collect();
        if s.unreported.len() > SHOWN {
            named.push(format!("and {} more", s.unreported.len() - SHOWN));
        }
        lines.push(format!("did not report in some shuffled attempts: {}", named.join(", ")));
    }
    lines
}

/// Attempt ids, the first ten then how many more.
fn ids_text(ids: &[u64]) -> String {
    const SHOWN: usize = 10;
    let mut text: Vec<String> = ids.iter().take(SHOWN).map(u64::to_string).collect();
    if ids.len() > SHOWN {
        text.push(format!("and {} more", ids.len() - SHOWN));
    }
    text.join(", ")
}

/// The terminal table of the tests that failed, or a line saying none did; then the attempts
/// that ended before all their tests reported.
pub fn table(s: &SuiteSummary) -> String {
    let mut out = tests_table(s);
    for state in s.state_lines() {
        out.push_str(&format!("{}\n", state.sentence));
        if let Some(cleanup) = &state.cleanup {
            out.push_str(&format!("  {cleanup}\n"));
        }
        for line in state.code.into_iter().flat_map(str::lines) {
            out.push_str(format!("    {line}").trim_end());
            out.push('\n');
        }
    }
    let incomplete = incomplete(s);
    if !incomplete.is_empty() {
        let n = s.incomplete_attempts();
        let noun = if n == 1 { "attempt" } else { "attempts" };
        out.push_str(&format!("ended before all their tests reported ({n} {noun}):\n"));
        for line in incomplete {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out
}

fn tests_table(s: &SuiteSummary) -> String {
    if s.tests.is_empty() {
        if !s.incomplete.is_empty() {
            return format!("tests: none of the {} collected failed of those that reported\n", s.collected);
        }
        return format!("tests: none of the {} collected failed\n", s.collected);
    }
    let mut table = Table::new();
    table.load_preset(NOTHING);
    table.set_header(vec!["test", "category", "failed", "polluter / state-setter", "condition", "reproducer"]);
    for t in &s.tests {
        table.add_row(vec![
            t.id.clone(),
            t.category.name().to_owned(),
            rate(t),
            culprits(t),
            condition(t),
            reproducer(t),
        ]);
    }
    let mut out = format!("tests that failed ({} of {} collected):\n", s.tests.len(), s.collected);
    for line in table.to_string().lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::suite::classify::Category;
    use crate::kind::suite::Framework;

    #[test]
    fn the_table_names_culprit_and_reproducer() {
        let victim = TestSummary {
            id: "b.py::test_v".into(),
            attempts: 6,
            failures: 3,
            rate: 0.5,
            ci95: [0.1, 0.9],
            conditions: vec![],
            category: Category::OrderDependentVictim,
            condition: None,
            polluters: vec!["a.py::test_p".into()],
            state_setters: vec![],
            reproducer: vec![
                "python3".into(),
                "-m".into(),
                "pytest".into(),
                "a.py::test_p".into(),
                "b.py::test_v".into(),
            ],
            message: None,
            bisection: None,
            alone: [3, 0],
            repeated: [0, 0],
            unreported: 0,
            state: None,
        };
        let s = SuiteSummary {
            framework: Framework::Pytest,
            collected: 9,
            shuffled: true,
            tests: vec![victim],
            classified: true,
            incomplete: vec![],
            unreported: vec![],
            failed_otherwise: vec![],
            cost: None,
        };
        let text = table(&s);
        assert!(text.starts_with("tests that failed (1 of 9 collected):"), "{text}");
        let row = text.lines().nth(2).unwrap();
        for part in [
            "b.py::test_v",
            "order-dependent-victim",
            "3/6 (50.0%)",
            "after a.py::test_p",
            "python3 -m pytest a.py::test_p b.py::test_v",
        ] {
            assert!(row.contains(part), "{part} missing: {row}");
        }
        let none = SuiteSummary { tests: vec![], ..s };
        assert_eq!(table(&none), "tests: none of the 9 collected failed\n");
        let cut = SuiteSummary {
            incomplete: vec![crate::kind::suite::summary::IncompleteRuns {
                why: "the process was killed by SIGSEGV while b.py::test_c ran (4 of its 9 tests did not report)"
                    .into(),
                phase: "shuffled".into(),
                attempts: vec![2, 5],
            }],
            unreported: vec![crate::kind::suite::summary::UnreportedTest { id: "b.py::test_d".into(), attempts: 2 }],
            ..none
        };
        assert_eq!(
            table(&cut),
            "tests: none of the 9 collected failed of those that reported\n\
             ended before all their tests reported (2 attempts):\n  \
             shuffled attempts 2, 5: the process was killed by SIGSEGV while b.py::test_c ran (4 of its 9 tests did not report)\n  \
             did not report in some shuffled attempts: b.py::test_d (2 attempts)\n"
        );
    }

    #[test]
    fn a_state_finding_prints_its_cleanup_only_when_proved() {
        use crate::kind::suite::state::{Cleanup, StateDiff, StateFinding};
        let cleanup = Cleanup {
            fixture: "restore_m_X".into(),
            code: "import pytest\n\n\n@pytest.fixture\ndef restore_m_X():\n    import m\n\n    saved_x = m.X\n    yield\n    m.X = saved_x\n".into(),
            conftest: "conftest.py".into(),
            apply_to: vec!["a.py::test_p".into()],
            rate_from: Some([2, 2]),
            needed: 11,
            checked: Some([11, 11]),
            proved: true,
            verdict: None,
            seconds: None,
            run: None,
        };
        let finding = StateFinding {
            test: "b.py::test_v".into(),
            polluters: vec!["a.py::test_p".into()],
            brittle: false,
            state: vec![StateDiff {
                path: "m.X".into(),
                kind: "module global".into(),
                before: Some("0".into()),
                after: Some("1".into()),
            }],
            confirmed: Some([2, 2]),
            verdict: None,
            different: 3,
            trials: 6,
            cost: None,
            repeated: false,
            examined: None,
            cleanup: Some(cleanup.clone()),
            run: None,
        };
        let victim = TestSummary {
            id: "b.py::test_v".into(),
            attempts: 6,
            failures: 3,
            rate: 0.5,
            ci95: [0.1, 0.9],
            conditions: vec![],
            category: Category::OrderDependentVictim,
            condition: None,
            polluters: vec!["a.py::test_p".into()],
            state_setters: vec![],
            reproducer: vec![],
            message: None,
            bisection: None,
            alone: [3, 0],
            repeated: [0, 0],
            unreported: 0,
            state: Some(finding.clone()),
        };
        let s = SuiteSummary {
            framework: Framework::Pytest,
            collected: 9,
            shuffled: true,
            tests: vec![victim.clone()],
            classified: true,
            incomplete: vec![],
            unreported: vec![],
            failed_otherwise: vec![],
            cost: None,
        };
        let text = table(&s);
        let below = &text[text.find("b.py::test_v fails after").unwrap()..];
        assert_eq!(
            below,
            "b.py::test_v fails after a.py::test_p because that test leaves m.X = 1 (was 0); restoring it makes test_v pass (2/2)\n  \
             cleanup, proved: with it in place, a.py::test_p then test_v passed 11 of 11 runs (enough to rule out, \
             at 99 %, the failure rate of its reproducer's checks, 2 of 2); add it to conftest.py and @pytest.mark.usefixtures(\"restore_m_X\") to a.py::test_p:\n    \
             import pytest\n\n\n    @pytest.fixture\n    def restore_m_X():\n        import m\n\n        saved_x = m.X\n        \
             yield\n        m.X = saved_x\n"
        );
        // Not proved: said so, and no code.
        let failed = Cleanup {
            checked: Some([0, 1]),
            proved: false,
            verdict: Some("with it in place, b.py::test_v still failed (run 1 of 11)".into()),
            ..cleanup
        };
        let unproved = StateFinding { cleanup: Some(failed), ..finding };
        let s = SuiteSummary { tests: vec![TestSummary { state: Some(unproved), ..victim }], ..s };
        let text = table(&s);
        assert!(
            text.ends_with(
                "(2/2)\n  no cleanup proved (restore_m_X): with it in place, b.py::test_v still failed (run 1 of 11)\n"
            ),
            "{text}"
        );
    }
}
