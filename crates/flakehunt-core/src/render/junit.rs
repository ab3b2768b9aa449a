//! The JUnit XML rendering, for CI systems that display test reports. One test suite per hunt,
//! one test case per cell (and per fire level). A cell that failed some of the time is *flaky*:
//! a passing test case with one `flakyFailure` per failing attempt, as nextest and Surefire
//! write them; a cell that failed every time is a `failure`, its other failing attempts listed as
//! `rerunFailure`s. Text goes through `quick-junit`'s `XmlString`, which removes ANSI escapes and
//! characters XML cannot hold.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestRerun, TestSuite};

use super::text::tail;
use super::RenderContext;
use crate::analysis::stats::format_rate;
use crate::analysis::{CellSummary, Summary};
use crate::kind::suite::state::StateFindings;
use crate::record::Attempt;

/// Lines of stderr kept per listed attempt.
const STDERR_LINES: usize = 40;

/// Renders a summary as JUnit XML.
pub fn render(summary: &Summary, ctx: &RenderContext) -> String {
    let kind = summary.kind.name();
    let mut suite = TestSuite::new(format!("flakehunt {kind}: {}", summary.target));
    suite.add_property(("run_id", summary.run_id.as_str()));
    suite.add_property(("seed", ctx.manifest.seed.to_string().as_str()));
    suite.add_property(("verdict", summary.verdict_text.as_str()));
    if let Some(shard) = ctx.manifest.shard {
        suite.add_property(("shard", shard.to_string().as_str()));
    }
    let mut total = 0.0;
    let verify = crate::kind::verify::VerifyDetails::of(summary);
    for c in &summary.cells {
        let classname = format!("flakehunt.{kind}");
        let verified = verify.as_ref().and_then(|v| v.conditions.iter().find(|r| r.cell == c.name));
        let case = match verified {
            Some(result) => verify_case(c, result, ctx.failing_of(&c.name), &classname),
            None => cell_case(c, ctx.failing_of(&c.name), &classname),
        };
        total += c.mean_seconds * c.attempts as f64;
        suite.add_test_case(case);
    }
    if let Some(tests) = &summary.suite {
        for t in &tests.tests {
            suite.add_test_case(test_case(t, ctx));
        }
    }
    // A verification's level runs are its conditions' attempts, judged in their cases above.
    if let Some(fire) = summary.fire.as_ref().filter(|_| verify.is_none()) {
        for level in fire.rungs() {
            let status = if level.accepted() {
                TestCaseStatus::success()
            } else if !level.ran() {
                let mut s = TestCaseStatus::skipped();
                s.set_message("not run: the ladder stopped at an earlier rejected level");
                s
            } else {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message(level.verdict());
                let lines: Vec<String> = level
                    .findings()
                    .iter()
                    .map(|f| format!("{} {} {}: {}", f.count, f.kind, f.path, f.detail).trim().to_owned())
                    .collect();
                s.set_description(lines.join("\n"));
                s
            };
            let mut case = TestCase::new(format!("level {}", level.name()), status);
            case.set_classname(format!("flakehunt.{kind}.ladder"));
            suite.add_test_case(case);
        }
    }
    suite.set_time(secs(total));
    let mut report = Report::new("flakehunt");
    report.add_test_suite(suite);
    report.to_string().unwrap_or_else(|e| format!("<!-- cannot serialise the JUnit report: {e} -->\n"))
}

fn cell_case(c: &CellSummary, failing: &[Attempt], classname: &str) -> TestCase {
    let passes = c.outcomes.get("pass").copied().unwrap_or(0);
    let spawn_errors = c.outcomes.get("spawn-error").copied().unwrap_or(0);
    let judged = c.judged();
    let mut message = format!("{} of {judged} attempts failed ({})", c.failures, format_rate(c.rate));
    if c.slow > 0 {
        message.push_str(&format!("; {} more were slow (ended while still at work: no evidence)", c.slow));
    }
    let status = if c.attempts == 0 {
        let mut s = TestCaseStatus::skipped();
        s.set_message("no attempt ran");
        s
    } else if judged == 0 {
        let mut s = TestCaseStatus::skipped();
        s.set_message(format!("no attempt ended by itself: {} were slow (no evidence either way)", c.slow));
        s
    } else if c.failures == 0 && passes == 0 && spawn_errors > 0 {
        let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
        s.set_message(format!("the target could not be started ({spawn_errors} attempts)"));
        s
    } else if c.failures == 0 {
        TestCaseStatus::success()
    } else if c.failures < judged {
        TestCaseStatus::Success { flaky_runs: failing.iter().map(rerun).collect() }
    } else {
        let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
        s.set_message(message.as_str());
        if let Some(first) = failing.first() {
            s.set_type(first.outcome.name());
            s.set_description(tail(&first.stderr_tail, STDERR_LINES));
        }
        for a in failing.iter().skip(1) {
            s.add_rerun(rerun(a));
        }
        s
    };
    let mut case = TestCase::new(c.name.as_str(), status);
    case.set_classname(classname);
    case.set_time(secs(c.mean_seconds * c.attempts as f64));
    if (c.failures > 0 && c.failures < judged) || c.slow > 0 {
        // Flaky cases pass, so CI shows no message: put the rate where a reader finds it.
        case.set_system_out(message);
    }
    case
}

/// A verified reproduction: a failure when the failure still appears (however rarely: a CI gate
/// must not pass it as flaky), skipped when the verification is inconclusive, else a success
/// whose output gives the bound; the rates then and now as properties.
fn verify_case(
    c: &CellSummary,
    result: &crate::kind::verify::summary::ConditionResult,
    failing: &[Attempt],
    classname: &str,
) -> TestCase {
    let status = match result.verdict.as_str() {
        "not-fixed" => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(result.text.as_str());
            if let Some(first) = failing.first() {
                s.set_type(first.outcome.name());
                s.set_description(tail(&first.stderr_tail, STDERR_LINES));
            }
            for a in failing.iter().skip(1) {
                s.add_rerun(rerun(a));
            }
            s
        }
        "inconclusive" => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(result.text.as_str());
            s
        }
        _ => TestCaseStatus::success(),
    };
    let mut case = TestCase::new(c.name.as_str(), status);
    case.set_classname(classname);
    case.set_time(secs(c.mean_seconds * c.attempts as f64));
    let rate =
        |r: &crate::kind::verify::summary::Rate| format!("{}/{} ({})", r.failures, r.attempts, format_rate(r.rate));
    case.add_property(("verdict", result.verdict.as_str()));
    case.add_property(("then", rate(&result.then).as_str()));
    case.add_property(("now", rate(&result.now).as_str()));
    case.set_system_out(result.text.as_str());
    case
}

/// A suite's test that failed at least once: one `flakyFailure` per failing run of it (the
/// shuffled attempts', or its confirmation runs' for a test that only fails run twice), a
/// `failure` when it failed every time; its category, culprits and reproducer as properties.
fn test_case(t: &crate::kind::suite::summary::TestSummary, ctx: &RenderContext) -> TestCase {
    use crate::kind::suite::record::Role;
    let mut runs: Vec<(&Attempt, Option<&str>)> = Vec::new();
    let mut confirmations = Vec::new();
    for a in ctx.failing.values().flatten() {
        let Some(part) = a.suite.as_deref() else { continue };
        let failed = part.tests.iter().find(|r| r.id == t.id && r.outcome.is_failure());
        if let Some(r) = failed {
            let run = (a, r.message.as_deref());
            if part.role == Role::Shuffled {
                runs.push(run);
            } else {
                confirmations.push(run);
            }
        }
    }
    if runs.is_empty() {
        runs = confirmations;
    }
    runs.sort_by_key(|(a, _)| a.id);
    let message = match super::suite::culprits(t).as_str() {
        "-" => format!("{}: failed {}", t.category.name(), super::suite::rate(t)),
        culprits => format!("{}: failed {} ({culprits})", t.category.name(), super::suite::rate(t)),
    };
    let test_rerun = |(a, m): &(&Attempt, Option<&str>)| {
        let mut r = TestRerun::new(NonSuccessKind::Failure);
        let phase = a.phase.as_deref().unwrap_or("shuffled");
        r.set_message(format!("attempt {} ({phase}, iteration {}): {}", a.id, a.iteration, m.unwrap_or("failed")));
        r.set_time(secs(a.seconds));
        r
    };
    let status = if t.attempts > 0 && t.failures == t.attempts {
        let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
        s.set_message(message.as_str());
        s.set_description(t.message.clone().unwrap_or_default());
        for run in runs.iter().skip(1) {
            s.add_rerun(test_rerun(run));
        }
        s
    } else {
        TestCaseStatus::Success { flaky_runs: runs.iter().map(test_rerun).collect() }
    };
    let mut case = TestCase::new(t.id.as_str(), status);
    let framework = ctx.manifest.extra.suite.as_ref().map_or("suite", |s| s.framework().name());
    case.set_classname(format!("flakehunt.suite.{framework}"));
    case.add_property(("category", t.category.name()));
    for p in &t.polluters {
        case.add_property(("polluter", p.as_str()));
    }
    for s in &t.state_setters {
        case.add_property(("state-setter", s.as_str()));
    }
    if let Some(c) = &t.condition {
        case.add_property(("condition", c.as_str()));
    }
    if !t.reproducer.is_empty() {
        case.add_property(("reproducer", crate::plan::shell_words(&t.reproducer).as_str()));
    }
    // The state it trips over and its cleanup: one-line properties, and in full (the proved
    // fixture's code) in its output, where a CI's test view shows it.
    let mut out = message;
    if let Some(state) = &t.state {
        let sentence = state.sentence();
        case.add_property(("state", sentence.as_str()));
        out.push_str(&format!("\n\n{sentence}"));
        if let Some(cleanup) = state.cleanup_sentence() {
            case.add_property(("cleanup", cleanup.as_str()));
            out.push_str(&format!("\n{cleanup}"));
        }
        if let Some(code) = state.cleanup_code() {
            out.push_str(&format!("\n\n{code}"));
        }
    }
    case.set_system_out(out);
    case
}

/// One failing attempt as a `flakyFailure` or `rerunFailure`.
fn rerun(a: &Attempt) -> TestRerun {
    let mut r = TestRerun::new(NonSuccessKind::Failure);
    let what = a.signature.clone().unwrap_or_else(|| a.outcome.name().to_owned());
    r.set_message(format!("attempt {} (iteration {}): {what}", a.id, a.iteration));
    r.set_type(a.outcome.name());
    r.set_time(secs(a.seconds));
    r.set_system_err(tail(&a.stderr_tail, STDERR_LINES));
    r
}

fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or_default()
}
