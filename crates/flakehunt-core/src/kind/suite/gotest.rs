//! Per-test results of a Go attempt, read from its `go test -json` / `go tool test2json`
//! event stream. Main function: [`go_results`].

use std::collections::HashMap;

use serde::Deserialize;

use super::{short_message, ParseError, TestId, TestOutcome, TestResult};

/// One test2json event (`go doc test2json`); only the fields used here.
#[derive(Debug, Deserialize)]
struct Event {
    #[serde(rename = "Action")]
    action: String,
    #[serde(rename = "Test", default)]
    test: Option<String>,
    #[serde(rename = "Output", default)]
    output: Option<String>,
}

/// What one Go attempt's event stream said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GoRun {
    /// One per test (subtests `TestX/sub` included) per run, in the order the runs ended.
    pub results: Vec<TestResult>,
    /// The top-level tests in the order they started: the order `-test.shuffle` chose, which
    /// the attempt record keeps so the order can be replayed.
    pub order: Vec<TestId>,
}

/// Reads a test2json event stream. A test that started and never ended (the binary exited,
/// was killed or timed out while it ran) is an [`TestOutcome::Error`]. Lines that are not
/// JSON objects (a build's plain output before the stream) are skipped; an object that is not
/// an event is an error, since the results would otherwise be silently incomplete.
pub fn go_results(stream: &str) -> Result<GoRun, ParseError> {
    let mut run = GoRun::default();
    // Tests started and not yet ended, with the output they printed so far.
    let mut running: HashMap<String, Vec<String>> = HashMap::new();
    let mut started: Vec<String> = Vec::new();
    for (i, line) in stream.lines().enumerate() {
        let line = line.trim();
        if !line.starts_with('{') {
            continue;
        }
        let event: Event = serde_json::from_str(line).map_err(|source| ParseError::GoEvent { line: i + 1, source })?;
        let Some(test) = event.test else { continue };
        match event.action.as_str() {
            "run" => {
                if !test.contains('/') {
                    run.order.push(test.clone());
                }
                running.insert(test.clone(), Vec::new());
                started.push(test);
            }
            "output" => {
                if let (Some(out), Some(lines)) = (event.output, running.get_mut(&test)) {
                    lines.push(out);
                }
            }
            action @ ("pass" | "fail" | "skip") => {
                let outcome = match action {
                    "pass" => TestOutcome::Pass,
                    "fail" => TestOutcome::Fail,
                    _ => TestOutcome::Skip,
                };
                let output = running.remove(&test).unwrap_or_default();
                started.retain(|t| *t != test);
                let message = if outcome == TestOutcome::Pass { None } else { own_output(&output) };
                run.results.push(TestResult::new(test, outcome, message));
            }
            _ => {}
        }
    }
    for test in started {
        let output = running.remove(&test).unwrap_or_default();
        let message = own_output(&output).unwrap_or_else(|| "the test binary exited while this test ran".into());
        run.results.push(TestResult::new(test, TestOutcome::Error, Some(message)));
    }
    Ok(run)
}

/// What a test printed itself (`t.Log`, `t.Fatal`, a panic), without the framework's
/// `=== RUN`, `--- FAIL` and `=== PAUSE/CONT` lines.
fn own_output(lines: &[String]) -> Option<String> {
    let own: Vec<&str> = lines
        .iter()
        .map(|l| l.trim_end())
        .filter(|l| {
            let t = l.trim_start();
            !(t.starts_with("=== ")
                || t.starts_with("--- PASS")
                || t.starts_with("--- FAIL")
                || t.starts_with("--- SKIP"))
        })
        .map(str::trim)
        .collect();
    short_message(&own.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// go 1.19's `go tool test2json -t -p PKG BIN -test.v -test.shuffle=7 -test.run ...` on the
    /// fixture suite (times shortened), with `TestNonIdempotent` run twice (`-test.count=2`)
    /// and a test the binary exited in.
    const STREAM: &str = r#"{"Time":"2026-12-01T09:57:13Z","Action":"output","Package":"p","Output":"-test.shuffle 7\n"}
{"Time":"2026-12-01T09:57:13Z","Action":"run","Package":"p","Test":"TestPolluter"}
{"Time":"2026-12-01T09:57:13Z","Action":"output","Package":"p","Test":"TestPolluter","Output":"=== RUN   TestPolluter\n"}
{"Time":"2026-12-01T09:57:13Z","Action":"output","Package":"p","Test":"TestPolluter","Output":"--- PASS: TestPolluter (0.00s)\n"}
{"Time":"2026-12-01T09:57:13Z","Action":"pass","Package":"p","Test":"TestPolluter","Elapsed":0}
{"Time":"2026-12-01T09:57:13Z","Action":"run","Package":"p","Test":"TestVictim"}
{"Time":"2026-12-01T09:57:13Z","Action":"output","Package":"p","Test":"TestVictim","Output":"=== RUN   TestVictim\n"}
{"Time":"2026-12-01T09:57:13Z","Action":"output","Package":"p","Test":"TestVictim","Output":"    beta_test.go:8: handlers left registered: [audit]\n"}
{"Time":"2026-12-01T09:57:13Z","Action":"output","Package":"p","Test":"TestVictim","Output":"--- FAIL: TestVictim (0.00s)\n"}
{"Time":"2026-12-01T09:57:13Z","Action":"fail","Package":"p","Test":"TestVictim","Elapsed":0}
{"Time":"2026-12-01T09:57:13Z","Action":"run","Package":"p","Test":"TestCleanSubtests"}
{"Time":"2026-12-01T09:57:13Z","Action":"run","Package":"p","Test":"TestCleanSubtests/one"}
{"Time":"2026-12-01T09:57:13Z","Action":"run","Package":"p","Test":"TestCleanSubtests/two"}
{"Time":"2026-12-01T09:57:13Z","Action":"output","Package":"p","Test":"TestCleanSubtests/one","Output":"    --- PASS: TestCleanSubtests/one (0.00s)\n"}
{"Time":"2026-12-01T09:57:13Z","Action":"pass","Package":"p","Test":"TestCleanSubtests/one","Elapsed":0}
{"Time":"2026-12-01T09:57:13Z","Action":"pass","Package":"p","Test":"TestCleanSubtests/two","Elapsed":0}
{"Time":"2026-12-01T09:57:13Z","Action":"pass","Package":"p","Test":"TestCleanSubtests","Elapsed":0}
{"Time":"2026-12-01T09:57:13Z","Action":"run","Package":"p","Test":"TestSkipped"}
{"Time":"2026-12-01T09:57:13Z","Action":"output","Package":"p","Test":"TestSkipped","Output":"    gamma_test.go:27: skipped on purpose\n"}
{"Time":"2026-12-01T09:57:13Z","Action":"skip","Package":"p","Test":"TestSkipped","Elapsed":0}
{"Action":"run","Package":"p","Test":"TestNonIdempotent"}
{"Action":"pass","Package":"p","Test":"TestNonIdempotent"}
{"Action":"run","Package":"p","Test":"TestNonIdempotent"}
{"Action":"output","Package":"p","Test":"TestNonIdempotent","Output":"    gamma_test.go:14: ran 2 times in this process\n"}
{"Action":"fail","Package":"p","Test":"TestNonIdempotent"}
{"Action":"run","Package":"p","Test":"TestExits"}
{"Action":"output","Package":"p","Test":"TestExits","Output":"=== RUN   TestExits\n"}
{"Time":"2026-12-01T09:57:13Z","Action":"output","Package":"p","Output":"FAIL\n"}
{"Time":"2026-12-01T09:57:13Z","Action":"fail","Package":"p","Elapsed":0.002}
"#;

    #[test]
    fn results_subtests_repeats_and_the_order_that_ran() {
        let run = go_results(STREAM).unwrap();
        let got: Vec<(&str, TestOutcome)> = run.results.iter().map(|r| (r.id.as_str(), r.outcome)).collect();
        assert_eq!(
            got,
            [
                ("TestPolluter", TestOutcome::Pass),
                ("TestVictim", TestOutcome::Fail),
                ("TestCleanSubtests/one", TestOutcome::Pass),
                ("TestCleanSubtests/two", TestOutcome::Pass),
                ("TestCleanSubtests", TestOutcome::Pass),
                ("TestSkipped", TestOutcome::Skip),
                ("TestNonIdempotent", TestOutcome::Pass),
                ("TestNonIdempotent", TestOutcome::Fail),
                ("TestExits", TestOutcome::Error),
            ]
        );
        assert_eq!(
            run.order,
            [
                "TestPolluter",
                "TestVictim",
                "TestCleanSubtests",
                "TestSkipped",
                "TestNonIdempotent",
                "TestNonIdempotent",
                "TestExits"
            ]
        );
        assert_eq!(run.results[1].message.as_deref(), Some("beta_test.go:8: handlers left registered: [audit]"));
        assert_eq!(run.results[7].message.as_deref(), Some("gamma_test.go:14: ran 2 times in this process"));
        assert_eq!(run.results[8].message.as_deref(), Some("the test binary exited while this test ran"));
        assert_eq!(run.results[0].message, None);
    }

    #[test]
    fn plain_lines_are_skipped_and_a_broken_event_is_an_error() {
        let run = go_results(
            "# example.com/p\nok\n{\"Action\":\"run\",\"Test\":\"TestA\"}\n{\"Action\":\"pass\",\"Test\":\"TestA\"}\n",
        )
        .unwrap();
        assert_eq!(run.results, [TestResult::new("TestA", TestOutcome::Pass, None)]);
        let err = go_results("{\"Action\":\"run\",\"Test\":\"TestA\"}\n{\"Action\":\n").unwrap_err();
        assert_eq!(err.to_string(), "line 2 of the go test -json output is not a test2json event");
    }
}
