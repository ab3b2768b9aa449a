//! The run record: the summary's contract fields, the attempt lines, logs, and `--resume`.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::harness::{attempts_in, Hunt};

#[test]
fn the_summary_has_every_contract_field() {
    let run = Hunt::sweep().args(["--runs", "4"]).fixture("flaky-every.sh", &["2"]).run();
    run.expect_code(1);
    let summary = run.json();
    assert_eq!(summary, run.summary(), "--json prints summary.json");
    assert_eq!(summary["format_version"], 1);
    assert_eq!(summary["kind"], "sweep");
    assert_eq!(summary["baseline"], "default");
    assert!(summary["verdict"].is_string());
    for cell in summary["cells"].as_array().unwrap() {
        for field in
            ["name", "attempts", "failures", "rate", "p_value", "amplification", "sensitive", "inert", "effect"]
        {
            assert!(cell.get(field).is_some(), "cell lacks {field}: {cell:#}");
        }
        let outcomes: BTreeSet<&str> = cell["outcomes"].as_object().unwrap().keys().map(String::as_str).collect();
        // The contract's outcomes; later outcomes (wrong-output) may be added beside them.
        assert!(
            BTreeSet::from(["pass", "fail", "crash", "timeout", "leak", "spawn-error"]).is_subset(&outcomes),
            "{outcomes:?}"
        );
        let ci = cell["ci95"].as_array().unwrap();
        assert_eq!(ci.len(), 2);
        assert!(ci[0].as_f64().unwrap() <= cell["rate"].as_f64().unwrap());
        assert!(cell["rate"].as_f64().unwrap() <= ci[1].as_f64().unwrap());
        assert_eq!(cell["attempts"], 4);
        assert_eq!(cell["failures"], 2);
    }
    let signatures = summary["signatures"].as_array().unwrap();
    assert_eq!(signatures.len(), 1);
    assert_eq!(signatures[0]["count"], 4);
    assert_eq!(signatures[0]["cells"], serde_json::json!(["default", "one-core"]));
    assert!(signatures[0]["signature"].is_string());
}

#[test]
fn every_attempt_line_carries_the_record_fields() {
    let run = Hunt::sweep().args(["--runs", "3"]).fixture("flaky-every.sh", &["3"]).run();
    let attempts = run.attempts();
    assert_eq!(attempts.len(), 6);
    for attempt in &attempts {
        for field in ["id", "cell", "iteration", "started_at", "seconds", "outcome", "exit_code", "signal"] {
            assert!(attempt.get(field).is_some(), "attempt lacks {field}: {attempt:#}");
        }
        assert!(attempt["stdout_tail"].is_string() && attempt["stderr_tail"].is_string());
        if attempt["cell"] == "one-core" {
            assert!(attempt["effect"].is_object(), "one-core records its effect: {attempt:#}");
        }
    }
    let ids: BTreeSet<u64> = attempts.iter().map(|a| a["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, (0..6).collect());
    let failing = attempts.iter().find(|a| a["outcome"] == "fail").unwrap();
    assert_eq!(failing["exit_code"], 1);
    assert_eq!(failing["signal"], Value::Null);
    assert!(failing["stderr_tail"].as_str().unwrap().contains("AssertionError"));
    assert_eq!(attempts.iter().find(|a| a["outcome"] == "pass").unwrap()["stdout_tail"], "ok 1\n");
}

#[test]
fn logs_are_kept_for_failing_attempts_only() {
    let run = Hunt::sweep().default_only().args(["--runs", "4"]).fixture("flaky-every.sh", &["2"]).run();
    for attempt in run.attempts() {
        let failed = attempt["outcome"] == "fail";
        assert_eq!(attempt["log"].is_string(), failed, "{attempt:#}");
        if failed {
            let base = run.dir.join(attempt["log"].as_str().unwrap());
            let stderr = std::fs::read_to_string(base.with_extension("stderr")).unwrap();
            assert!(stderr.starts_with(&format!("iteration {} of cell default\n", attempt["iteration"])));
            assert!(base.with_extension("stdout").exists());
        }
    }
    let logs = std::fs::read_dir(run.dir.join("logs")).unwrap().count();
    assert_eq!(logs, 2 * 2, "two failing attempts, two streams each");
}

#[test]
fn resume_completes_a_cut_record_without_repeating_attempts() {
    let run = Hunt::sweep().args(["--runs", "5", "--seed", "11"]).fixture("flaky-every.sh", &["2"]).run();
    run.expect_code(1);
    let full = run.attempts();
    assert_eq!(full.len(), 10);

    // Keep four whole lines and half of the fifth, as a killed flakehunt would.
    let path = run.dir.join("attempts.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let cut = format!("{}{}", lines[..4].concat(), &lines[4][..lines[4].len() / 2]);
    std::fs::write(&path, cut).unwrap();
    std::fs::remove_file(run.dir.join("summary.json")).unwrap();

    let resumed = Hunt::sweep().without_record().args(["--resume"]).args([&run.dir]).run();
    resumed.expect_code(1);
    let attempts = attempts_in(&run.dir);
    let ids: Vec<u64> = attempts.iter().map(|a| a["id"].as_u64().unwrap()).collect();
    let unique: BTreeSet<u64> = ids.iter().copied().collect();
    assert_eq!(ids.len(), unique.len(), "duplicate ids: {ids:?}");
    assert_eq!(unique, (0..10).collect());
    // The same plan, so the same cell and iteration under each id.
    let key = |a: &Value| (a["id"].as_u64(), a["cell"].clone(), a["iteration"].as_u64(), a["outcome"].clone());
    let mut before: Vec<_> = full.iter().map(key).collect();
    let mut after: Vec<_> = attempts.iter().map(key).collect();
    before.sort_by_key(|k| k.0);
    after.sort_by_key(|k| k.0);
    assert_eq!(before, after);
    let summary = resumed.json();
    assert_eq!(summary["attempts"], 10);
    assert_eq!(summary["complete"], true);
    assert_eq!(summary, crate::harness::read_json(&run.dir.join("summary.json")));
}

#[test]
fn without_json_the_table_and_verdict_go_to_stdout() {
    let run = Hunt::sweep().without_json().default_only().args(["--runs", "2"]).command(["true"]).run();
    run.expect_code(0);
    assert!(run.stdout.contains("verdict: not reproduced"), "{}", run.stdout);
    assert!(run.stdout.contains(&format!("record: {}", run.dir.display())), "{}", run.stdout);
}
