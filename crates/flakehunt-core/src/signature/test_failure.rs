//! Reading a test runner's report of a failing test from its output: the test's name and its
//! assertion, for signatures (libtest, pytest, `go test`). Main function: [`of`].

/// `NAME: assertion` for the first failing test a test runner reported in `stdout` or `stderr`,
/// or none when neither looks like a test runner's failure report.
pub fn of(stdout: &str, stderr: &str) -> Option<String> {
    [stdout, stderr].into_iter().find_map(|text| libtest(text).or_else(|| pytest(text)).or_else(|| go_test(text)))
}

/// libtest: `---- NAME stdout ----`, then `thread 'NAME' panicked at FILE:L:C:` followed by the
/// message (Rust 1.73 and later), or `panicked at 'MESSAGE', FILE:L:C` (earlier). The first panic
/// of the section names the failure: a spawned thread's panic that failed the test (`join().unwrap()`,
/// `std::thread::scope`'s "a scoped thread panicked") is printed before the test's own. The
/// sections of the tests that passed (`successes:`, printed with `--show-output`) are skipped.
fn libtest(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut in_successes = false;
    let (start, name) = lines.iter().enumerate().find_map(|(i, l)| {
        match *l {
            "successes:" => in_successes = true,
            "failures:" => in_successes = false,
            _ => {}
        }
        let name = l.trim().strip_prefix("---- ")?.strip_suffix(" stdout ----")?;
        (!in_successes).then_some((i, name))
    })?;
    let rest = &lines[start + 1..];
    let panic = rest.iter().position(|l| l.contains("panicked at"));
    let message = match panic {
        Some(p) => {
            let line = rest[p];
            let after = &line[line.find("panicked at").map_or(0, |i| i + "panicked at".len())..].trim();
            if let Some(quoted) = after.strip_prefix('\'') {
                quoted.rsplit_once("', ").map_or(quoted, |(m, _)| m).to_owned()
            } else {
                rest[p + 1..].iter().map(|l| l.trim()).find(|l| !l.is_empty()).unwrap_or(after).to_owned()
            }
        }
        None => rest.iter().map(|l| l.trim()).find(|l| !l.is_empty() && !l.starts_with("----"))?.to_owned(),
    };
    Some(format!("{name}: {message}"))
}

/// pytest: the short summary's `FAILED NODE - MESSAGE`, else the first `E   ` line.
fn pytest(text: &str) -> Option<String> {
    if let Some(line) = text.lines().find_map(|l| l.trim().strip_prefix("FAILED ")) {
        return Some(uncut(line).replacen(" - ", ": ", 1));
    }
    let e = text.lines().find_map(|l| l.strip_prefix("E   "))?;
    Some(e.trim().to_owned())
}

/// A short summary's line as pytest cut it at the terminal's width (`... - AssertionError:
/// assert (3 ...`), without the word the cut fell in: one more digit in the message moves the
/// cut (`assert (12...`), and one failure would read as two. Marked cut with `…`.
fn uncut(line: &str) -> std::borrow::Cow<'_, str> {
    let Some(kept) = line.strip_suffix("...") else { return line.into() };
    match kept.trim_end().rsplit_once(char::is_whitespace) {
        Some((head, _)) if head.contains(" - ") => format!("{}…", head.trim_end()).into(),
        _ => line.into(),
    }
}

/// `go test`: `--- FAIL: NAME (0.00s)` and the first line after it (`file_test.go:12: message`,
/// or a panic). A failing subtest is reported nested under its parent (`--- FAIL: TestA/case`,
/// indented): the innermost one names the failure.
fn go_test(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let fail = |l: &str| {
        l.trim_start().strip_prefix("--- FAIL: ").map(|rest| rest.split(" (").next().unwrap_or("").trim().to_owned())
    };
    let mut i = lines.iter().position(|l| fail(l).is_some())?;
    let mut name = fail(lines[i])?;
    loop {
        let next = lines[i + 1..].iter().position(|l| !l.trim().is_empty()).map(|j| i + 1 + j);
        match next.and_then(|j| fail(lines[j]).map(|n| (j, n))) {
            Some((j, sub)) => (i, name) = (j, sub),
            None => break,
        }
    }
    // Not verbose, a test's messages follow its `--- FAIL` line; verbose (`-test.v`), they come
    // before it, after its `=== RUN` (or `=== CONT`) line.
    let framework = |l: &str| l.starts_with("FAIL") || l.starts_with("=== ") || l.starts_with("--- ") || l == "PASS";
    let after = lines[i + 1..].iter().map(|l| l.trim()).find(|l| !l.is_empty() && !framework(l));
    let before = || {
        let run = lines[..i].iter().rposition(|l| {
            let l = l.trim();
            (l.starts_with("=== RUN") || l.starts_with("=== CONT"))
                && l.split_whitespace().nth(2) == Some(name.as_str())
        })?;
        lines[run + 1..i].iter().map(|l| l.trim()).find(|l| !l.is_empty() && !framework(l))
    };
    let message = after.or_else(before);
    Some(match message {
        Some(m) => format!("{name}: {m}"),
        None => name,
    })
}

/// The line of a passing attempt's report in `stdout` that says the test(s) of `runner` (an
/// adapter's name: `cargo-test`, `go-test`, `pytest`) did not run: every libtest `test result:
/// ok. 0 passed; ...` (the test `#[ignore]`d, or no test matched; each binary of `cargo test`),
/// Go's `testing: warning: no tests to run` or, verbose, `--- SKIP: TEST (0.00s)` of the `test`
/// named (a subtest's skip is not the test's), pytest's summary line without a test passed
/// (`1 skipped in 0.01s`, `1 xfailed` or `1 xpassed` (an xfail mark hides the test's
/// failures, so its passes are a biased sample), `1 deselected`, `no tests ran`). None when it ran, or
/// when the report is not there to tell (a run with its output cut: it counts as it ended).
pub fn ran_no_test<'a>(runner: &str, test: Option<&str>, stdout: &'a str) -> Option<&'a str> {
    let lines = || stdout.lines().map(str::trim).filter(|l| !l.is_empty());
    match runner {
        "cargo-test" => {
            let mut results = lines().filter(|l| l.starts_with("test result: ")).peekable();
            let first = *results.peek()?;
            results.all(|l| l.contains(" 0 passed;")).then_some(first)
        }
        "go-test" => lines().find(|l| {
            l.starts_with("testing: warning: no tests to run")
                || test.is_some_and(|t| l.strip_prefix("--- SKIP: ").is_some_and(|r| r.starts_with(&format!("{t} ("))))
        }),
        "pytest" => {
            // pytest's last line: `N passed, M skipped in 0.12s`, framed by `=` unless -q.
            let last = lines().next_back()?.trim_matches('=').trim();
            let (counts, time) = last.rsplit_once(" in ")?;
            if !(time.ends_with('s') && time.starts_with(|c: char| c.is_ascii_digit())) {
                return None;
            }
            let words: Vec<&str> = counts.split(", ").filter_map(|part| part.split_whitespace().nth(1)).collect();
            // An xfail-marked test's pass (xpassed) is no evidence: its failures read `xfailed`.
            let ran = words.iter().any(|w| matches!(*w, "passed" | "failed" | "error" | "errors"));
            let not_run = counts == "no tests ran"
                || words.iter().any(|w| matches!(*w, "skipped" | "xfailed" | "xpassed" | "deselected"));
            (!ran && not_run).then_some(last)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_go_failure_reads_the_same_verbose_or_not() {
        let quiet = "--- FAIL: TestT (0.00s)\n    ledger_test.go:33: total 90, want 100\nFAIL\n";
        let verbose = "=== RUN   TestT\n    ledger_test.go:33: total 90, want 100\n--- FAIL: TestT (0.00s)\nFAIL\n";
        assert_eq!(of(quiet, "").as_deref(), Some("TestT: ledger_test.go:33: total 90, want 100"));
        assert_eq!(of(verbose, "").as_deref(), of(quiet, "").as_deref());
        // A subtest's, verbose: its own lines, not its parent's.
        let sub = "=== RUN   TestT\n=== RUN   TestT/one\n    x_test.go:9: bad one\n--- FAIL: TestT (0.00s)\n    --- FAIL: TestT/one (0.00s)\nFAIL\n";
        assert_eq!(of(sub, "").as_deref(), Some("TestT/one: x_test.go:9: bad one"));
    }

    #[test]
    fn a_pytest_summary_line_cut_at_the_terminal_s_width_names_one_failure_whatever_its_digits() {
        let three = "FAILED tests/test_lru.py::LRUCacheTest::test_lru - AssertionError: assert (3 ...\n";
        let twelve = "FAILED tests/test_lru.py::LRUCacheTest::test_lru - AssertionError: assert (12...\n";
        let (a, b) = (of(three, "").unwrap(), of(twelve, "").unwrap());
        assert_eq!(a, "tests/test_lru.py::LRUCacheTest::test_lru: AssertionError: assert…");
        assert_eq!(a, b);
        // A line that was not cut keeps its words; one cut in the node id keeps it whole.
        let whole = "FAILED t.py::test_a - assert 1 == 2\n";
        assert_eq!(of(whole, "").unwrap(), "t.py::test_a: assert 1 == 2");
        assert_eq!(of("FAILED t.py::test_with_a_very_long_na...\n", "").unwrap(), "t.py::test_with_a_very_long_na...");
    }

    #[test]
    fn a_run_of_no_test_is_told_from_the_runner_s_own_report() {
        let ignored = "\nrunning 1 test\ntest ledger::t ... ignored\n\ntest result: ok. 0 passed; 0 failed; 1 ignored; 0 measured; 1 filtered out; finished in 0.00s\n\n";
        assert!(ran_no_test("cargo-test", None, ignored).unwrap().contains("0 passed; 0 failed; 1 ignored"));
        let passed = "running 1 test\ntest ledger::t ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 1 filtered out; finished in 0.00s\n";
        assert_eq!(ran_no_test("cargo-test", None, passed), None);
        assert!(ran_no_test("go-test", Some("TestA"), "testing: warning: no tests to run\nPASS\n").is_some());
        assert_eq!(ran_no_test("go-test", Some("TestA"), "PASS\n"), None);
        let skipped = "=== RUN   TestA\n    a_test.go:9: quarantined\n--- SKIP: TestA (0.00s)\nPASS\n";
        assert!(ran_no_test("go-test", Some("TestA"), skipped).is_some());
        let sub =
            "=== RUN   TestA\n=== RUN   TestA/one\n--- PASS: TestA (0.00s)\n    --- SKIP: TestA/one (0.00s)\nPASS\n";
        assert_eq!(ran_no_test("go-test", Some("TestA"), sub), None, "a subtest skipped, the test ran");
        assert_eq!(ran_no_test("go-test", Some("TestA"), &skipped.replace("TestA", "TestAB")), None);
        for none in [
            "s                                                                        [100%]\n1 skipped in 0.01s\n",
            "x [100%]\n1 xfailed in 0.02s\n",
            "\n1 deselected in 0.01s\n",
            "\nno tests ran in 0.01s\n",
            "1 xpassed in 0.01s\n",
            "=== 1 skipped, 2 warnings in 0.01s ===\n",
        ] {
            assert!(ran_no_test("pytest", None, none).is_some(), "{none}");
        }
        for ran in [
            ".  [100%]\n1 passed in 0.01s\n",
            "1 passed, 1 skipped in 0.01s\n",
            "=== 2 passed, 1 deselected in 0.10s ===\n",
            "nothing a runner said\n",
            "",
        ] {
            assert_eq!(ran_no_test("pytest", None, ran), None, "{ran}");
        }
        assert_eq!(ran_no_test("anything", None, "1 skipped in 0.01s"), None, "a command's own output is not read");
    }

    #[test]
    fn libtest_new_and_old_panic_formats() {
        let new = "running 1 test\ntest flaky ... FAILED\n\nfailures:\n\n---- flaky stdout ----\n\nthread 'flaky' panicked at src/lib.rs:7:5:\nassertion `left != right` failed: iteration 4\n  left: 0\n right: 0\nnote: run with `RUST_BACKTRACE=1`\n\nfailures:\n    flaky\n";
        assert_eq!(of(new, "").as_deref(), Some("flaky: assertion `left != right` failed: iteration 4"));
        let old = "---- tests::t stdout ----\nthread 'tests::t' panicked at 'assertion failed: ok', src/lib.rs:3:5\n";
        assert_eq!(of(old, "").as_deref(), Some("tests::t: assertion failed: ok"));
        // `--show-output`: a passing test's section comes first; a scoped thread's panic is
        // printed before the one it causes in the test's own thread.
        let shown =
            "successes:\n\n---- a stdout ----\nhello\n\nsuccesses:\n    a\n\nfailures:\n\n---- b stdout ----\n\n\
                     thread '<unnamed>' (7) panicked at src/lib.rs:23:55:\nscoped boom\n\n\
                     thread 'b' (6) panicked at src/lib.rs:23:19:\na scoped thread panicked\n\nfailures:\n    b\n";
        assert_eq!(of(shown, "").as_deref(), Some("b: scoped boom"));
    }

    #[test]
    fn pytest_summary_line_then_e_line() {
        let out = "F\n=== FAILURES ===\n    def test_x():\n>       assert n % 3 != 0\nE       assert (3 % 3) != 0\n\nt.py:5: AssertionError\n=== short test summary info ===\nFAILED t.py::test_x - assert (3 % 3) != 0\n1 failed in 0.01s\n";
        assert_eq!(of(out, "").as_deref(), Some("t.py::test_x: assert (3 % 3) != 0"));
        assert_eq!(of("E       assert 1 == 2\n", "").as_deref(), Some("assert 1 == 2"));
    }

    #[test]
    fn go_test_and_plain_output() {
        let out = "--- FAIL: TestLedger (0.00s)\n    ledger_test.go:12: total 3 != 4\nFAIL\n";
        assert_eq!(of(out, "").as_deref(), Some("TestLedger: ledger_test.go:12: total 3 != 4"));
        assert_eq!(of("hello\n", "error: boom\n"), None);
        let sub = "--- FAIL: TestTable (0.00s)\n    --- FAIL: TestTable/bad (0.00s)\n        a_test.go:9: case bad broke\nFAIL\n";
        assert_eq!(of(sub, "").as_deref(), Some("TestTable/bad: a_test.go:9: case bad broke"));
        let panic = "--- FAIL: TestPanics (0.00s)\npanic: assignment to entry in nil map [recovered]\n\tpanic: assignment to entry in nil map\n";
        assert_eq!(of(panic, "").as_deref(), Some("TestPanics: panic: assignment to entry in nil map [recovered]"));
    }
}
