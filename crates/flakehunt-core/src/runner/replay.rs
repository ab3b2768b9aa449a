//! A test runner's or build tool's report that an attempt ran no test: it replayed a cached
//! result (`go test` without `-count=1`, `bazel test`, Gradle's up-to-date `test` task,
//! Turborepo and Nx caches), or its selection matched none (`go test -run TestTypo`, a libtest
//! filter, every pytest test skipped, jest's `No tests found`). A hunt of such attempts would
//! call a flaky test clean. Main functions: [`replayed`], [`ran_no_test`].

/// An attempt's report that it ran no test: the line that says so, what it means and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replay {
    /// The tool's line, as it printed it.
    pub line: String,
    /// Why that is no run (`is a cached result replayed`).
    pub what: &'static str,
    /// What makes the command run its tests.
    pub advice: &'static str,
}

/// An attempt that ran no test: it stops the hunt (exit 2), since every attempt after it would
/// do the same, and is not recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "attempt {attempt} ran no test: `{}` {}, and a hunt of it proves nothing; {}",
    .replay.line,
    .replay.what,
    .replay.advice
)]
pub struct Replayed {
    /// The attempt.
    pub attempt: u64,
    /// What its output said.
    pub replay: Replay,
}

/// What a replay is.
const REPLAYED: &str = "is a cached result replayed";

/// Fragments one of which a replay's line holds, to pass over output without one quickly.
const HINTS: [&str; 5] = ["(cached)", "UP-TO-DATE", "FROM-CACHE", "cache hit, replaying", "from the cache"];

/// The first line of `outputs` (an attempt's streams, head and tail) in which a build tool says
/// it replayed a cached test result; none when every test it reports ran.
pub fn replayed<'a>(outputs: impl IntoIterator<Item = &'a [u8]>) -> Option<Replay> {
    outputs.into_iter().find_map(|bytes| {
        let text = String::from_utf8_lossy(bytes);
        if !HINTS.iter().any(|h| text.contains(h)) {
            return None;
        }
        // The tools print these lines from their first column; a test's own report of them
        // (`t.Log`, a golden file's diff) is indented.
        text.lines().find_map(|line| replay_line(line.trim_end()))
    })
}

fn replay_line(line: &str) -> Option<Replay> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let replay = |advice| Some(Replay { line: line.to_owned(), what: REPLAYED, advice });
    // go test: `ok  	example.com/pkg	(cached)`.
    if line.starts_with("ok") && words.first() == Some(&"ok") && words.get(2) == Some(&"(cached)") {
        return replay(
            "make the command run its tests every time: go test -count=1 (flakehunt adds it to GOFLAGS: the command, or a script it runs, sets its own)",
        );
    }
    // bazel test: `//pkg:test    (cached) PASSED in 0.4s`.
    let target = line.starts_with("//") || line.starts_with('@');
    if target && words.windows(2).any(|w| w[0] == "(cached)" && matches!(w[1], "PASSED" | "FAILED" | "FLAKY")) {
        return replay("make the command run its tests every time: bazel test --cache_test_results=no");
    }
    // Gradle: `> Task :app:test UP-TO-DATE` (or FROM-CACHE), a test task that did not run.
    if let (true, [">", "Task", task, .., last]) = (line.starts_with('>'), words.as_slice()) {
        let name = task.rsplit(':').next().unwrap_or_default().to_ascii_lowercase();
        if name.contains("test") && matches!(*last, "UP-TO-DATE" | "FROM-CACHE") {
            return replay("make the command run its tests every time: gradle --rerun-tasks (or `test { outputs.upToDateWhen { false } }`)");
        }
    }
    // Turborepo: `app:test: cache hit, replaying logs 0b1d...`; Nx: `Nx read the output from
    // the cache instead of running the command`.
    if line.contains("cache hit, replaying") {
        return replay("make the command run its tests every time: turbo run --force");
    }
    if line.contains("read the output from the cache instead of running the command") {
        return replay("make the command run its tests every time: nx --skip-nx-cache");
    }
    None
}

/// What to do about a command that selects no test.
const SELECT_ONE: &str = "name a test the command runs here (a `-run` pattern, a filter or a `-k` that matches none, or a test that skips itself here, runs nothing)";

/// The line of a passing attempt's whole output (never a cut one) in which its test
/// runner says it ran no test: every `go test` package `[no tests to run]` or `[no test
/// files]` (or a test binary's `testing: warning: no tests to run`), every libtest `test result`
/// at `0 passed; 0 failed`, pytest's summary with nothing passed or failed (`2 skipped in
/// 0.01s`), jest's `No tests found`. None when any test ran.
pub fn ran_no_test(output: &str) -> Option<Replay> {
    let found = |line: &str| Some(Replay { line: line.to_owned(), what: "says no test ran", advice: SELECT_ONE });
    // go test: a package line per package, from the first column.
    let packages: Vec<&str> = output
        .lines()
        .map(str::trim_end)
        .filter(|l| l.starts_with("ok ") || l.starts_with("ok\t") || l.starts_with("FAIL\t") || l.starts_with("?  "))
        .collect();
    let none_run = |l: &&str| l.ends_with("[no tests to run]") || l.ends_with("[no test files]");
    if !packages.is_empty() {
        return packages.iter().all(none_run).then(|| found(packages[0])).flatten();
    }
    // A test binary's, libtest's (each binary of `cargo test`) and pytest's own reports, as an
    // adapter's attempts are read; jest's.
    use crate::signature::test_failure::ran_no_test as said;
    let jest = || output.lines().map(str::trim).find(|l| l.starts_with("No tests found"));
    ["go-test", "cargo-test"]
        .iter()
        .find_map(|runner| said(runner, None, output))
        .or_else(jest)
        .or_else(|| said("pytest", None, output))
        .and_then(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(text: &str) -> Option<&'static str> {
        replayed([text.as_bytes()]).map(|r| r.advice)
    }

    #[test]
    fn each_tool_s_replay_is_told_from_a_run() {
        assert!(of("ok  \texample.com/pkg\t(cached)\n").unwrap().contains("go test -count=1"));
        assert!(of("ok  \texample.com/pkg\t(cached)\tcoverage: 80.0% of statements\n").is_some());
        assert_eq!(of("ok  \texample.com/pkg\t0.012s\n"), None);
        assert!(of("//lib:lib_test                 (cached) PASSED in 0.4s\n")
            .unwrap()
            .contains("bazel test --cache_test_results=no"));
        assert_eq!(of("//lib:lib_test                 PASSED in 0.4s\n"), None);
        assert!(of("> Task :app:test UP-TO-DATE\n").unwrap().contains("gradle --rerun-tasks"));
        assert!(of("> Task :lib:integrationTest FROM-CACHE\n").is_some());
        assert_eq!(of("> Task :app:compileJava UP-TO-DATE\n> Task :app:test\n"), None);
        assert!(of("web:test: cache hit, replaying logs 0b1d4c\n").unwrap().contains("turbo run --force"));
        let nx = "> nx run app:test  [existing outputs match the cache, left as is]\n\n Nx read the output from the cache instead of running the command for 1 out of 1 tasks.\n";
        assert!(of(nx).unwrap().contains("nx --skip-nx-cache"));
    }

    #[test]
    fn a_run_of_no_test_is_told_from_a_run_of_some() {
        let said = |text: &str| ran_no_test(text).map(|r| r.line);
        let typo = "testing: warning: no tests to run\nPASS\nok  \texample.com/p\t0.002s [no tests to run]\n";
        assert_eq!(said(typo).as_deref(), Some("ok  \texample.com/p\t0.002s [no tests to run]"));
        let some = "ok  \texample.com/p\t0.01s\n?   \texample.com/q\t[no test files]\n";
        assert_eq!(said(some), None, "one package ran its tests");
        assert!(said("testing: warning: no tests to run\nPASS\n").is_some(), "a test binary");
        let cargo = "running 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 3 filtered out; finished in 0.00s\n";
        assert!(said(cargo).is_some());
        let ran = format!("{cargo}running 1 test\ntest t ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n");
        assert_eq!(said(&ran), None, "another binary ran it");
        assert!(said("ss\n2 skipped in 0.01s\n").is_some());
        assert_eq!(said("s.\n1 passed, 1 skipped in 0.01s\n"), None);
        assert!(said("No tests found related to files changed since last commit.\n").is_some());
        assert_eq!(said("all good\n"), None, "a command that is no test runner");
    }

    #[test]
    fn a_test_s_own_words_are_no_replay() {
        // A test that prints the words in a line of its own.
        assert_eq!(of("value (cached) read twice\n"), None);
        assert_eq!(of("the index is UP-TO-DATE\n"), None);
        assert_eq!(of("ok (cached)\n"), None);
        assert_eq!(of("    x_test.go:9: want:\n    ok  \texample.com/pkg\t(cached)\n"), None);
        assert_eq!(of("  > Task :app:test UP-TO-DATE\n"), None);
    }
}
