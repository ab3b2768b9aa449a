//! Failure signatures: the exit status plus the telling line of stderr, normalised so that the
//! same failure with other numbers, addresses or paths groups together; or, for a failure the
//! checks found, what they found where. Pure: a leaf above the schema.

pub mod test_failure;

use std::sync::OnceLock;

use regex::Regex;

use crate::schema::attempt::{Attempt, Outcome};
use crate::schema::checks::{Check, Finding};
use crate::schema::process::signal_name;
pub use crate::schema::summary::stderr_name;

/// The signature of a failing attempt.
pub trait AttemptSignature {
    /// The signature of a failing attempt, from its tails (or its oracle's reason) as recorded;
    /// a failure the checks caused (or that exited 0) is named by what they found, not by the
    /// last line of its output.
    fn signature_of(&self) -> Option<String>;
}

impl AttemptSignature for Attempt {
    fn signature_of(&self) -> Option<String> {
        let named_by_checks = !self.hidden.is_empty()
            && self.oracle.is_none()
            && self.outcome == Outcome::Fail
            && (self.exit_code == Some(0) || self.hidden.iter().any(Finding::fails_the_target));
        self.outcome.is_failure().then(|| match &self.oracle {
            _ if named_by_checks => of_findings(self.exit_code, self.signal, &self.hidden),
            Some(reason) => of_oracle(self.outcome, self.exit_code, reason),
            None => of_streams(self.outcome, self.exit_code, self.signal, &self.stdout_tail, &self.stderr_tail),
        })
    }
}

/// The signature of a failing attempt, e.g. `exit 1: AssertionError: total <n> != <n>`.
pub fn of(outcome: Outcome, exit_code: Option<i32>, signal: Option<i32>, stderr_tail: &str) -> String {
    let head = head(outcome, exit_code, signal);
    match telling_line(stderr_tail) {
        Some(line) => format!("{head}: {}", normalise(line)),
        None => head,
    }
}

/// The signature from both streams: a test runner's report of the failing test and its
/// assertion when there is one (`exit 101: ledger::transfer: assertion failed: ok`), else
/// [`of`] on stderr.
pub fn of_streams(
    outcome: Outcome,
    exit_code: Option<i32>,
    signal: Option<i32>,
    stdout_tail: &str,
    stderr_tail: &str,
) -> String {
    match test_failure::of(stdout_tail, stderr_tail) {
        Some(named) => format!("{}: {}", head(outcome, exit_code, signal), normalise(&named)),
        None => of(outcome, exit_code, signal, stderr_tail),
    }
}

/// The stream that holds an attempt's failure, by name, and its text: the one a test runner's
/// failure report is in (pytest and `go test` write theirs to stdout), else stderr unless it is
/// blank and stdout is not.
pub fn failure_stream<'a>(stdout_tail: &'a str, stderr_tail: &'a str) -> (&'static str, &'a str) {
    let named_in_stdout = test_failure::of(stdout_tail, "").is_some();
    let named_in_stderr = test_failure::of("", stderr_tail).is_some();
    let stdout_only = stderr_tail.trim().is_empty() && !stdout_tail.trim().is_empty();
    if (named_in_stdout && !named_in_stderr) || stdout_only {
        ("stdout", stdout_tail)
    } else {
        ("stderr", stderr_tail)
    }
}

/// The signature of an attempt an oracle failed: `wrong-output: stdout differs from out.txt`,
/// `exit 0: fail-if matched: WARNING: DATA RACE`.
pub fn of_oracle(outcome: Outcome, exit_code: Option<i32>, reason: &str) -> String {
    let head = match outcome {
        Outcome::WrongOutput => "wrong-output".to_owned(),
        _ => head(outcome, exit_code, None),
    };
    format!("{head}: {}", normalise(reason))
}

/// The signature of an attempt that hung or timed out.
pub const HANG: &str = "timeout";

fn head(outcome: Outcome, exit_code: Option<i32>, signal: Option<i32>) -> String {
    match (outcome, exit_code, signal) {
        (Outcome::Timeout, _, _) => HANG.to_owned(),
        (_, _, Some(sig)) => format!("signal {}", signal_name(sig)),
        (_, Some(code), _) => format!("exit {code}"),
        _ => outcome.name().to_owned(),
    }
}

/// The line of a stderr tail that best names the failure: the last one that looks like an error
/// or assertion, else the last non-empty one. Test runners end with boilerplate ("note: run with
/// RUST_BACKTRACE=1", "error: test failed, to rerun pass --lib") that is skipped.
pub fn telling_line(stderr_tail: &str) -> Option<&str> {
    const BOILERPLATE: [&str; 4] = ["note: run with", "to rerun pass", "RUST_BACKTRACE", "short test summary info"];
    const TELLING: [&str; 8] = ["error", "assert", "panicked", "exception", "fail", "fatal", "traceback", "abort"];
    let lines: Vec<&str> = stderr_tail
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !BOILERPLATE.iter().any(|b| l.contains(b)))
        .collect();
    lines
        .iter()
        .rev()
        .find(|l| {
            let lower = l.to_ascii_lowercase();
            TELLING.iter().any(|t| lower.contains(t)) && !lower.starts_with("traceback")
        })
        .or(lines.last())
        .copied()
}

/// Replaces what varies between runs of the same failure: ANSI escapes, hex and numbers,
/// temporary paths, quoted addresses; collapses whitespace and caps the length.
pub fn normalise(line: &str) -> String {
    static RULES: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
    let rules = RULES.get_or_init(|| {
        [
            (r"\x1b\[[0-9;?]*[ -/]*[@-~]", ""),
            (r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", "<uuid>"),
            (r"0x[0-9a-fA-F]+", "<hex>"),
            (r"/tmp/[^\s:'\x22]+", "<tmp>"),
            (r"\b[0-9a-fA-F]{16,}\b", "<hex>"),
            (r"\d+(\.\d+)?", "<n>"),
            (r"\s+", " "),
        ]
        .into_iter()
        .map(|(re, with)| (Regex::new(re).expect("signature rules are valid regexes"), with))
        .collect()
    });
    let mut text = line.to_owned();
    for (re, with) in rules {
        text = re.replace_all(&text, *with).into_owned();
    }
    let text = text.trim();
    match text.char_indices().nth(160) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// Whether two signatures name the same failure, coarser than equality: the failure is the
/// same when its status is and so is the start of its message (its error and its first clause,
/// `AssertionError: lost updates after <n> transfers`), once directories (`/src/app/`) and
/// source locations (`x.py:12`, `lib.rs:10:5`, `line 9`) are masked. A fix that moves code
/// changes the line a failure reports, a copy of the project its paths, and a race the details
/// it lost (which accounts), not the failure; another exception, assertion or exit status is
/// another failure. `verify` asks it of a failure now and each one of the record it verifies.
pub fn same_failure(a: &str, b: &str) -> bool {
    a == b || coarse(a) == coarse(b)
}

/// `signature` with its directories and source locations masked (see [`same_failure`]).
fn coarse(signature: &str) -> String {
    static RULES: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
    let rules = RULES.get_or_init(|| {
        [
            // A path's directories (a copy of the project elsewhere), keeping its file's name.
            (r"(?:[A-Za-z]:)?(?:[\w.~<>@+-]*[/\\])+", "<dir>/"),
            // A source location: a file with a source extension, its line (and column).
            (r"\b[\w-]+\.(?:py|go|rs|c|cc|cpp|h|hpp|js|ts|java|rb|sh|pl|php)(?::<n>)+", "<loc>"),
            (r"\bline <n>(?:, column <n>)?", "line <n>"),
            (r"\s+", " "),
        ]
        .into_iter()
        .map(|(re, with)| (Regex::new(re).expect("signature rules are valid regexes"), with))
        .collect()
    });
    // The status as it is (`exit 1`, `signal SIGSEGV`), the message with its numbers masked.
    let signature = signature.trim_end_matches('…');
    let (head, message) = signature.split_once(": ").unwrap_or((signature, ""));
    let mut text = format!("{head}: {}", normalise(message));
    for (re, with) in rules {
        text = re.replace_all(&text, *with).into_owned();
    }
    // The status, the error and its first clause.
    text.trim().splitn(4, ": ").take(3).collect::<Vec<_>>().join(": ")
}

/// The signature's words for the places a check found: `leaked goroutines blocked at
/// ledger.go:41 (chan send), ledger.go:57 (select)`.
fn words(check: Check, places: &[&str]) -> String {
    match check {
        Check::GoroutineLeak => format!("leaked goroutines blocked at {}", places.join(", ")),
        Check::Race => format!("data race between {}", places.join(" and ")),
        Check::ThreadException => format!("exception in a thread: {}", places.join(", ")),
        Check::Unraisable => format!("unraisable exception: {}", places.join(", ")),
        Check::ThreadPanic => format!("panic in a thread: {}", places.join(", ")),
    }
}

/// The signature of an attempt failed by `findings`: the exit status, then what was found where
/// (`exit 1: leaked goroutines blocked at ledger.go:41 (chan send)`). The places keep their line
/// numbers, which a rebuilt binary keeps too: a leak at another line is another signature.
pub fn of_findings(exit_code: Option<i32>, signal: Option<i32>, findings: &[Finding]) -> String {
    let head = match (exit_code, signal) {
        (_, Some(sig)) => format!("signal {}", signal_name(sig)),
        (Some(code), None) => format!("exit {code}"),
        (None, None) => "fail".to_owned(),
    };
    // Each check's distinct places, in the order found; at most three places per check.
    let mut by_check: Vec<(Check, Vec<&str>)> = Vec::new();
    for f in findings {
        let at = match by_check.iter().position(|(c, _)| *c == f.check) {
            Some(i) => i,
            None => {
                by_check.push((f.check, Vec::new()));
                by_check.len() - 1
            }
        };
        for p in &f.places {
            if !by_check[at].1.contains(&p.as_str()) {
                by_check[at].1.push(p);
            }
        }
    }
    let parts: Vec<String> = by_check
        .into_iter()
        .map(|(check, places)| {
            let more = places.len().saturating_sub(3);
            let mut text = words(check, &places[..places.len().min(3)]);
            if more > 0 {
                text.push_str(&format!(" and {more} more"));
            }
            text
        })
        .collect();
    format!("{head}: {}", parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_comes_from_the_stream_that_holds_the_failure() {
        let pytest = "tests/test_x.py F\n=== FAILURES ===\n___ test_x ___\nE   assert 1 == 2\nFAILED tests/test_x.py::test_x - assert 1 == 2\n";
        assert_eq!(failure_stream(pytest, "").0, "stdout");
        assert_eq!(failure_stream("progress\n", "boom\n"), ("stderr", "boom\n"));
        assert_eq!(failure_stream("only here\n", " \n"), ("stdout", "only here\n"));
        assert_eq!(failure_stream("", ""), ("stderr", ""));
    }

    #[test]
    fn python_assertion_groups_across_numbers() {
        let a = "Traceback (most recent call last):\n  File \"t.py\", line 9\nAssertionError: total 1000 != 998\n";
        let b = "Traceback (most recent call last):\n  File \"t.py\", line 9\nAssertionError: total 1000 != 996\n";
        assert_eq!(of(Outcome::Fail, Some(1), None, a), of(Outcome::Fail, Some(1), None, b));
        assert_eq!(of(Outcome::Fail, Some(1), None, a), "exit 1: AssertionError: total <n> != <n>");
    }

    #[test]
    fn rust_boilerplate_is_skipped() {
        let tail = "thread 'ledger' panicked at src/lib.rs:10:5:\nassertion failed: ok\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\nerror: test failed, to rerun pass `--lib`\n";
        assert_eq!(of(Outcome::Fail, Some(101), None, tail), "exit <n>: assertion failed: ok".replace("<n>", "101"));
    }

    #[test]
    fn signals_timeouts_and_empty_stderr() {
        assert_eq!(of(Outcome::Crash, None, Some(libc::SIGSEGV), ""), "signal SIGSEGV");
        assert_eq!(of(Outcome::Timeout, None, Some(libc::SIGTERM), ""), "timeout");
        assert_eq!(of(Outcome::Fail, Some(3), None, "\n\n"), "exit 3");
    }

    #[test]
    fn volatile_parts_are_masked() {
        assert_eq!(
            normalise("\x1b[31mfailed\x1b[0m at 0x7ffd1234 in /tmp/x/y.txt uuid 123e4567-e89b-12d3-a456-426614174000"),
            "failed at <hex> in <tmp> uuid <uuid>"
        );
    }

    #[test]
    fn the_same_failure_elsewhere_in_the_code_is_the_same_and_another_is_not() {
        let at = |path: &str, line: u32| {
            let tail = format!("thread 'transfer' panicked at {path}:{line}:5:\nassertion failed: total == 100\n");
            of(Outcome::Fail, Some(101), None, &tail)
        };
        // The fix moved the assertion, or the project was copied elsewhere.
        assert!(same_failure(&at("src/lib.rs", 10), &at("src/lib.rs", 42)));
        let go = |path: &str| format!("exit 1: {path}:<n>: balance <n> != <n>");
        assert!(same_failure(&go("/home/a/ledger/ledger_test.go"), &go("/srv/ci/ledger/ledger_test.go")));
        let py = |file: &str| format!("exit 1: File \"{file}\", line <n>, in test_x: AssertionError: lost update");
        assert!(same_failure(&py("/src/old/t.py"), &py("/src/new/t.py")));
        assert!(same_failure("exit 1: t.py:12: lost update", "exit 1: t.py:40: lost update"));
        // A race loses other updates each time: the same failure.
        let ledger = |lost: &str| {
            format!("exit 1: AssertionError: lost updates after <n> transfers: {lost}; total money changed by +<n>")
        };
        assert!(same_failure(
            &ledger("alice off by -<n>, bob off by +<n>"),
            &ledger("bob off by +<n>, carol off by -<n>")
        ));
        // Another failure: another test, another exception, another message, another status.
        assert!(!same_failure("exit 1: AssertionError: lost update", "exit 1: KeyError: 'audit'"));
        assert!(!same_failure("exit 1: AssertionError: lost update", "exit 2: AssertionError: lost update"));
        assert!(!same_failure("exit 1: AssertionError: lost update", "timeout"));
        assert!(!same_failure("signal SIGSEGV", "signal SIGABRT"));
        assert!(!same_failure("exit 1: tests/a.py::test_x: assert <n>", "exit 1: tests/b.py::test_x: assert <n>"));
    }
}
