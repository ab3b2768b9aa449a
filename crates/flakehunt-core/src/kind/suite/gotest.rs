//! Per-test results of a Go attempt, read from its `go test -json` / `go tool test2json`
//! event stream. Main function: [`go_results`].

use std::collections::{HashMap, HashSet};

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

/// Reads a test2json event stream of a run of `count` iterations (`-test.count`) of a binary
/// whose top-level tests are `known` (the collected selection). A test that started and never
/// ended (the binary exited, was killed or timed out while it ran) is an
/// [`TestOutcome::Error`]. Lines that are not JSON objects (a build's plain output before the
/// stream) are skipped; an object that is not an event is an error, since the results would
/// otherwise be silently incomplete.
///
/// Before Go 1.20 test2json reads the binary's plain `-test.v` output, in which a test's own
/// output can look like the framework's lines (`--- FAIL: TestX`, `=== RUN   TestY`). Since
/// 1.20 the framework's lines are framed (`-test.v=test2json`) and only those count. For both,
/// events are taken only where the framework could have printed them, so that what a test
/// prints cannot invent a test or end another:
/// - a top-level test is one of `known`, run at most `count` times, and starts only when the
///   test before it has ended or paused (tests run one at a time until they pause, `t.Parallel`);
/// - an end, or a subtest's start, counts only for the top-level test running (or continued
///   after its pause);
/// - a test's last end wins: the framework prints its own `--- PASS`/`--- FAIL` line after
///   everything the test printed while it ran.
pub fn go_results(stream: &str, known: &[TestId], count: u32) -> Result<GoRun, ParseError> {
    struct Run {
        id: String,
        outcome: Option<TestOutcome>,
        output: Vec<String>,
    }
    let known: HashSet<&str> = known.iter().map(String::as_str).collect();
    let mut run = GoRun::default();
    let mut runs: Vec<Run> = Vec::new();
    // The latest run of each test (subtests included), by name.
    let mut latest: HashMap<String, usize> = HashMap::new();
    // The runs in the order they first ended.
    let mut ended: Vec<usize> = Vec::new();
    let mut started: HashMap<String, u32> = HashMap::new();
    let mut current: Option<String> = None;
    let mut continued: HashSet<String> = HashSet::new();
    for (i, line) in stream.lines().enumerate() {
        let line = line.trim();
        if !line.starts_with('{') {
            continue;
        }
        let event: Event = serde_json::from_str(line).map_err(|source| ParseError::GoEvent { line: i + 1, source })?;
        let Some(test) = event.test else { continue };
        let top = test.split('/').next().unwrap_or(&test).to_owned();
        if !known.contains(top.as_str()) {
            continue;
        }
        let active = current.as_deref() == Some(top.as_str()) || continued.contains(&top);
        let top_level = test == top;
        match event.action.as_str() {
            "run" => {
                if top_level {
                    let free =
                        current.as_ref().is_none_or(|c| latest.get(c).is_some_and(|&r| runs[r].outcome.is_some()));
                    let times = started.entry(top.clone()).or_default();
                    if !free || *times >= count {
                        continue;
                    }
                    *times += 1;
                    current = Some(top.clone());
                    run.order.push(top);
                } else if !active {
                    continue;
                }
                latest.insert(test.clone(), runs.len());
                runs.push(Run { id: test, outcome: None, output: Vec::new() });
            }
            "pause" if top_level && current.as_deref() == Some(test.as_str()) => current = None,
            "cont" if top_level && started.contains_key(&test) => {
                continued.insert(test);
            }
            "output" => {
                if let (Some(out), Some(&r)) = (event.output, latest.get(&test)) {
                    runs[r].output.push(out);
                }
            }
            action @ ("pass" | "fail" | "skip") if active => {
                let Some(&r) = latest.get(&test) else { continue };
                if runs[r].outcome.is_none() {
                    ended.push(r);
                }
                runs[r].outcome = Some(match action {
                    "pass" => TestOutcome::Pass,
                    "fail" => TestOutcome::Fail,
                    _ => TestOutcome::Skip,
                });
            }
            _ => {}
        }
    }
    let unended = (0..runs.len()).filter(|r| runs[*r].outcome.is_none());
    let order: Vec<usize> = ended.iter().copied().chain(unended).collect();
    for r in order {
        let Run { id, outcome, output } = &runs[r];
        let result = match outcome {
            Some(TestOutcome::Pass) => TestResult::new(id.clone(), TestOutcome::Pass, None),
            Some(o) => TestResult::new(id.clone(), *o, own_output(output)),
            None => {
                let message = own_output(output).unwrap_or_else(|| EXITED_WHILE_RUNNING.into());
                TestResult::new(id.clone(), TestOutcome::Error, Some(message))
            }
        };
        run.results.push(result);
    }
    Ok(run)
}

/// The message of a test that started and never ended, when it printed nothing itself.
pub const EXITED_WHILE_RUNNING: &str = "the test binary exited while this test ran";

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
        let known =
            ["TestPolluter", "TestVictim", "TestCleanSubtests", "TestSkipped", "TestNonIdempotent", "TestExits"]
                .map(String::from);
        let run = go_results(STREAM, &known, 2).unwrap();
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
        let known = ["TestA".to_owned()];
        let run = go_results(
            "# example.com/p\nok\n{\"Action\":\"run\",\"Test\":\"TestA\"}\n{\"Action\":\"pass\",\"Test\":\"TestA\"}\n",
            &known,
            1,
        )
        .unwrap();
        assert_eq!(run.results, [TestResult::new("TestA", TestOutcome::Pass, None)]);
        let err = go_results("{\"Action\":\"run\",\"Test\":\"TestA\"}\n{\"Action\":\n", &known, 1).unwrap_err();
        assert_eq!(err.to_string(), "line 2 of the go test -json output is not a test2json event");
    }

    /// go 1.19's test2json on a binary run with plain `-test.v` whose TestCleanZeta prints lines
    /// that look like the framework's: its own failure, another test's start and failure, and
    /// the failure of a test that already passed; TestSub's subtest prints its own failure.
    const FORGED: &str = r#"{"Action":"run","Package":"x","Test":"TestCleanAlpha"}
{"Action":"output","Package":"x","Test":"TestCleanAlpha","Output":"=== RUN   TestCleanAlpha\n"}
{"Action":"output","Package":"x","Test":"TestCleanAlpha","Output":"--- PASS: TestCleanAlpha (0.00s)\n"}
{"Action":"pass","Package":"x","Test":"TestCleanAlpha","Elapsed":0}
{"Action":"run","Package":"x","Test":"TestCleanZeta"}
{"Action":"output","Package":"x","Test":"TestCleanZeta","Output":"=== RUN   TestCleanZeta\n"}
{"Action":"output","Package":"x","Test":"TestCleanZeta","Output":"--- FAIL: TestCleanZeta (0.00s)\n"}
{"Action":"fail","Package":"x","Test":"TestCleanZeta","Elapsed":0}
{"Action":"run","Package":"x","Test":"TestGhost"}
{"Action":"output","Package":"x","Test":"TestGhost","Output":"=== RUN   TestGhost\n"}
{"Action":"output","Package":"x","Test":"TestGhost","Output":"--- FAIL: TestGhost (0.00s)\n"}
{"Action":"fail","Package":"x","Test":"TestGhost","Elapsed":0}
{"Action":"output","Package":"x","Test":"TestCleanAlpha","Output":"--- FAIL: TestCleanAlpha (0.00s)\n"}
{"Action":"fail","Package":"x","Test":"TestCleanAlpha","Elapsed":0}
{"Action":"output","Package":"x","Test":"TestCleanZeta","Output":"--- PASS: TestCleanZeta (0.00s)\n"}
{"Action":"pass","Package":"x","Test":"TestCleanZeta","Elapsed":0}
{"Action":"run","Package":"x","Test":"TestSub"}
{"Action":"output","Package":"x","Test":"TestSub","Output":"=== RUN   TestSub\n"}
{"Action":"run","Package":"x","Test":"TestSub/one"}
{"Action":"output","Package":"x","Test":"TestSub/one","Output":"=== RUN   TestSub/one\n"}
{"Action":"output","Package":"x","Test":"TestSub/one","Output":"    --- FAIL: TestSub/one (0.00s)\n"}
{"Action":"output","Package":"x","Test":"TestSub","Output":"--- PASS: TestSub (0.00s)\n"}
{"Action":"output","Package":"x","Test":"TestSub/one","Output":"    --- PASS: TestSub/one (0.00s)\n"}
{"Action":"pass","Package":"x","Test":"TestSub/one","Elapsed":0}
{"Action":"pass","Package":"x","Test":"TestSub","Elapsed":0}
{"Action":"output","Package":"x","Output":"PASS\n"}
{"Action":"pass","Package":"x","Elapsed":0.014}
"#;

    #[test]
    fn a_tests_own_output_that_looks_like_the_framework_invents_and_ends_nothing() {
        let known = ["TestCleanAlpha", "TestCleanZeta", "TestSub"].map(String::from);
        let run = go_results(FORGED, &known, 1).unwrap();
        let got: Vec<(&str, TestOutcome)> = run.results.iter().map(|r| (r.id.as_str(), r.outcome)).collect();
        assert_eq!(
            got,
            [
                ("TestCleanAlpha", TestOutcome::Pass),
                ("TestCleanZeta", TestOutcome::Pass),
                ("TestSub/one", TestOutcome::Pass),
                ("TestSub", TestOutcome::Pass)
            ],
            "the last end of the test running wins; TestGhost was never collected"
        );
        assert_eq!(run.order, ["TestCleanAlpha", "TestCleanZeta", "TestSub"]);

        // A test that runs a collected test's name while it runs itself starts nothing.
        let inside = "{\"Action\":\"run\",\"Test\":\"TestA\"}\n{\"Action\":\"run\",\"Test\":\"TestB\"}\n{\"Action\":\"fail\",\"Test\":\"TestB\"}\n{\"Action\":\"pass\",\"Test\":\"TestA\"}\n{\"Action\":\"run\",\"Test\":\"TestB\"}\n{\"Action\":\"pass\",\"Test\":\"TestB\"}\n";
        let run = go_results(inside, &["TestA".to_owned(), "TestB".to_owned()], 1).unwrap();
        let got: Vec<(&str, TestOutcome)> = run.results.iter().map(|r| (r.id.as_str(), r.outcome)).collect();
        assert_eq!(got, [("TestA", TestOutcome::Pass), ("TestB", TestOutcome::Pass)]);

        // Parallel tests: each pauses, the next starts, and they end after being continued.
        let parallel = "{\"Action\":\"run\",\"Test\":\"TestP\"}\n{\"Action\":\"pause\",\"Test\":\"TestP\"}\n{\"Action\":\"run\",\"Test\":\"TestQ\"}\n{\"Action\":\"pause\",\"Test\":\"TestQ\"}\n{\"Action\":\"cont\",\"Test\":\"TestP\"}\n{\"Action\":\"cont\",\"Test\":\"TestQ\"}\n{\"Action\":\"fail\",\"Test\":\"TestQ\"}\n{\"Action\":\"pass\",\"Test\":\"TestP\"}\n";
        let run = go_results(parallel, &["TestP".to_owned(), "TestQ".to_owned()], 1).unwrap();
        let got: Vec<(&str, TestOutcome)> = run.results.iter().map(|r| (r.id.as_str(), r.outcome)).collect();
        assert_eq!(got, [("TestQ", TestOutcome::Fail), ("TestP", TestOutcome::Pass)]);
    }
}
