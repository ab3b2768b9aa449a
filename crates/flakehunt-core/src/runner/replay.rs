//! A build tool's report that it replayed a cached test result instead of running the tests:
//! such an attempt ran nothing, and a hunt of replays would call a flaky test clean (`go test`
//! without `-count=1`, `bazel test`, Gradle's up-to-date `test` task, Turborepo and Nx caches).
//! Main function: [`replayed`].

/// A replayed result: the line that says so, and how to make the command run its tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replay {
    /// The tool's line, as it printed it.
    pub line: String,
    /// What turns the cache off for it.
    pub advice: &'static str,
}

/// An attempt that ran no test, its build tool having replayed a cached result: it stops the
/// hunt (exit 2), since every attempt after it would do the same, and is not recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "attempt {attempt} ran no test: `{}` is a cached result replayed, and a hunt of replays proves nothing; make the command run its tests every time: {}",
    .replay.line,
    .replay.advice
)]
pub struct Replayed {
    /// The attempt.
    pub attempt: u64,
    /// What its output said.
    pub replay: Replay,
}

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
    let replay = |advice| Some(Replay { line: line.to_owned(), advice });
    // go test: `ok  	example.com/pkg	(cached)`.
    if line.starts_with("ok") && words.first() == Some(&"ok") && words.get(2) == Some(&"(cached)") {
        return replay(
            "go test -count=1 (flakehunt adds it to GOFLAGS: the command, or a script it runs, sets its own)",
        );
    }
    // bazel test: `//pkg:test    (cached) PASSED in 0.4s`.
    let target = line.starts_with("//") || line.starts_with('@');
    if target && words.windows(2).any(|w| w[0] == "(cached)" && matches!(w[1], "PASSED" | "FAILED" | "FLAKY")) {
        return replay("bazel test --cache_test_results=no");
    }
    // Gradle: `> Task :app:test UP-TO-DATE` (or FROM-CACHE), a test task that did not run.
    if let (true, [">", "Task", task, .., last]) = (line.starts_with('>'), words.as_slice()) {
        let name = task.rsplit(':').next().unwrap_or_default().to_ascii_lowercase();
        if name.contains("test") && matches!(*last, "UP-TO-DATE" | "FROM-CACHE") {
            return replay("gradle --rerun-tasks (or `test { outputs.upToDateWhen { false } }`)");
        }
    }
    // Turborepo: `app:test: cache hit, replaying logs 0b1d...`; Nx: `Nx read the output from
    // the cache instead of running the command`.
    if line.contains("cache hit, replaying") {
        return replay("turbo run --force");
    }
    if line.contains("read the output from the cache instead of running the command") {
        return replay("nx --skip-nx-cache");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(text: &str) -> Option<&'static str> {
        replayed([text.as_bytes()]).map(|r| r.advice)
    }

    #[test]
    fn each_tool_s_replay_is_told_from_a_run() {
        assert!(of("ok  \texample.com/pkg\t(cached)\n").unwrap().starts_with("go test"));
        assert!(of("ok  \texample.com/pkg\t(cached)\tcoverage: 80.0% of statements\n").is_some());
        assert_eq!(of("ok  \texample.com/pkg\t0.012s\n"), None);
        assert!(of("//lib:lib_test                 (cached) PASSED in 0.4s\n").unwrap().starts_with("bazel"));
        assert_eq!(of("//lib:lib_test                 PASSED in 0.4s\n"), None);
        assert!(of("> Task :app:test UP-TO-DATE\n").unwrap().starts_with("gradle"));
        assert!(of("> Task :lib:integrationTest FROM-CACHE\n").is_some());
        assert_eq!(of("> Task :app:compileJava UP-TO-DATE\n> Task :app:test\n"), None);
        assert!(of("web:test: cache hit, replaying logs 0b1d4c\n").unwrap().starts_with("turbo"));
        let nx = "> nx run app:test  [existing outputs match the cache, left as is]\n\n Nx read the output from the cache instead of running the command for 1 out of 1 tasks.\n";
        assert!(of(nx).unwrap().starts_with("nx"));
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
