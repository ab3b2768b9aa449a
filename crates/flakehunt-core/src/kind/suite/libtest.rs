//! Per-test results of a Rust attempt, read from libtest's plain output (`test NAME ... ok`):
//! its JSON format needs `-Z unstable-options` on stable. Main function: [`libtest_results`].

use std::collections::HashMap;

use super::{short_message, TestId, TestOutcome, TestResult};

/// Reads a libtest run's output: one result per `test NAME ... ok|FAILED|ignored` line, with a
/// failure's message from its `---- NAME stdout ----` section. With `--nocapture` and one
/// thread a test's own output may come between `test NAME ... ` and its status; a status on a
/// line of its own is then given to the test that started last. Only the tests of `known` (the
/// collected list) count, each with its last status (libtest prints its own after anything a
/// test wrote to the terminal itself), and a test whose status never came (the process
/// aborted, exited or was killed while it ran) is an [`TestOutcome::Error`], last.
pub fn libtest_results(output: &str, known: &[TestId]) -> Vec<TestResult> {
    let known: std::collections::HashSet<&str> = known.iter().map(String::as_str).collect();
    let mut results: Vec<TestResult> = Vec::new();
    let set = |results: &mut Vec<TestResult>, name: String, outcome| {
        if !known.contains(name.as_str()) {
            return;
        }
        match results.iter_mut().find(|r| r.id == name) {
            Some(r) => r.outcome = outcome,
            None => results.push(TestResult::new(name, outcome, None)),
        }
    };
    let mut pending: Option<TestId> = None;
    for line in output.lines() {
        if let Some((name, rest)) = line.strip_prefix("test ").and_then(|l| l.split_once(" ... ")) {
            let name = name.strip_suffix(" - should panic").unwrap_or(name).to_owned();
            match status(rest) {
                Some(outcome) => set(&mut results, name, outcome),
                // A benchmark's line (`bench: ...`) is no test result.
                None if rest.starts_with("bench:") => {}
                None => pending = Some(name),
            }
        } else if let Some(outcome) = status(line) {
            if let Some(name) = pending.take() {
                set(&mut results, name, outcome);
            }
        }
    }
    if let Some(name) = pending.filter(|n| known.contains(n.as_str()) && !results.iter().any(|r| r.id == *n)) {
        results.push(TestResult::new(name, TestOutcome::Error, Some(EXITED_WHILE_RUNNING.to_owned())));
    }
    let sections = failure_sections(output);
    for r in &mut results {
        if r.outcome == TestOutcome::Fail {
            r.message = sections.get(r.id.as_str()).and_then(|s| short_message(s));
        }
    }
    results
}

/// The message of a test whose status never came.
pub const EXITED_WHILE_RUNNING: &str = "the test binary ended while this test ran";

fn status(text: &str) -> Option<TestOutcome> {
    match text.trim_end() {
        "ok" => Some(TestOutcome::Pass),
        "FAILED" => Some(TestOutcome::Fail),
        t if t == "ignored" || t.starts_with("ignored, ") => Some(TestOutcome::Skip),
        _ => None,
    }
}

/// The `---- NAME stdout ----` sections of the `failures:` part, by test name.
fn failure_sections(output: &str) -> HashMap<&str, String> {
    let mut sections = HashMap::new();
    let mut current: Option<(&str, Vec<&str>)> = None;
    for line in output.lines() {
        let header = line.strip_prefix("---- ").and_then(|l| l.strip_suffix(" stdout ----"));
        if header.is_some() || line == "failures:" || line.starts_with("test result: ") {
            if let Some((name, lines)) = current.take() {
                sections.insert(name, lines.join("\n"));
            }
        }
        match (header, current.as_mut()) {
            (Some(name), _) => current = Some((name.strip_suffix(" - should panic").unwrap_or(name), Vec::new())),
            (None, Some((_, lines))) => lines.push(line),
            (None, None) => {}
        }
    }
    if let Some((name, lines)) = current {
        sections.insert(name, lines.join("\n"));
    }
    sections
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real libtest run (Rust 1.85, `--test-threads=2`), with an ignored test, a
    /// should-panic test and a benchmark line.
    const OUTPUT: &str = "\nrunning 5 tests\ntest tests::a ... ok\ntest tests::b ... FAILED\ntest tests::c ... ignored\n\
        test tests::d ... ignored, needs network\ntest tests::e - should panic ... ok\ntest bench_sum ... bench:         12.50 ns/iter (+/- 0.20)\n\n\
        failures:\n\n---- tests::b stdout ----\n\nthread 'tests::b' panicked at src/lib.rs:10:5:\nassertion failed: registry.is_empty()\n\
        note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\n\nfailures:\n    tests::b\n\n\
        test result: FAILED. 2 passed; 1 failed; 2 ignored; 0 measured; 0 filtered out; finished in 0.00s\n\n";

    #[test]
    fn statuses_and_failure_messages() {
        let known = ["tests::a", "tests::b", "tests::c", "tests::d", "tests::e", "bench_sum"].map(String::from);
        let got = libtest_results(OUTPUT, &known);
        let ids: Vec<(&str, TestOutcome)> = got.iter().map(|r| (r.id.as_str(), r.outcome)).collect();
        assert_eq!(
            ids,
            [
                ("tests::a", TestOutcome::Pass),
                ("tests::b", TestOutcome::Fail),
                ("tests::c", TestOutcome::Skip),
                ("tests::d", TestOutcome::Skip),
                ("tests::e", TestOutcome::Pass),
            ]
        );
        let message = got[1].message.as_deref().unwrap();
        assert!(
            message
                .starts_with("thread 'tests::b' panicked at src/lib.rs:10:5:\nassertion failed: registry.is_empty()"),
            "{message}"
        );
        assert!(got.iter().filter(|r| r.id != "tests::b").all(|r| r.message.is_none()));
    }

    #[test]
    fn a_status_after_the_tests_own_output_belongs_to_it() {
        let out = "running 2 tests\ntest tests::a ... hello from a\nok\ntest tests::b ... FAILED\n";
        let known = ["tests::a".to_owned(), "tests::b".to_owned(), "tests::c".to_owned()];
        let got = libtest_results(out, &known);
        assert_eq!(
            got,
            [
                TestResult::new("tests::a", TestOutcome::Pass, None),
                TestResult::new("tests::b", TestOutcome::Fail, None)
            ]
        );
        // The process ended while tests::c ran (an abort, an exit); a line naming a test that was
        // never collected counts for nothing.
        let cut = "running 3 tests\ntest tests::a ... ok\ntest tests::ghost ... FAILED\ntest tests::c ... ";
        let got = libtest_results(cut, &known);
        assert_eq!(
            got,
            [
                TestResult::new("tests::a", TestOutcome::Pass, None),
                TestResult::new("tests::c", TestOutcome::Error, Some(EXITED_WHILE_RUNNING.to_owned()))
            ]
        );
    }
}
