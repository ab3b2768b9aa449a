//! End-to-end tests of `sweep --profiles copies=N`: the cell's attempts run N at once and alone,
//! against a fixture whose concurrent copies always collide (`fixtures/copies-collide.sh`).

use serde_json::Value;

use crate::harness::{attempts_in, cell, fixture_arg, flakehunt, read_json, summary_of, RUN_LIMIT};

/// Runs `sweep ARGS --json --record DIR -- copies-collide.sh SCRATCH`: (exit code, summary,
/// attempts, manifest).
fn sweep(args: &[&str]) -> (Option<i32>, Value, Vec<Value>, Value) {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("rec");
    let out = flakehunt()
        .arg("sweep")
        .args(args)
        // A copy left alone waits for the others until this ends it (only when broken).
        .args(["--timeout", "30s", "--seed", "5", "--json", "--quiet", "--record"])
        .arg(&record)
        .arg("--")
        .arg(fixture_arg("copies-collide.sh"))
        .arg(dir.path().join("locks"))
        .timeout(RUN_LIMIT)
        .output();
    let summary = summary_of(&out);
    (out.status.code(), summary, attempts_in(&record), read_json(&record.join("manifest.json")))
}

/// The attempt's `[start, end]` in seconds since the epoch.
fn span(a: &Value) -> (f64, f64) {
    let at = a["started_at"].as_str().unwrap();
    let start = humantime::parse_rfc3339(at).unwrap().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    (start, start + a["seconds"].as_f64().unwrap())
}

/// Whether two attempts ran at the same time: the copies of a batch overlap by far more than
/// the record's millisecond.
fn overlap(a: &Value, b: &Value) -> bool {
    let ((s1, e1), (s2, e2)) = (span(a), span(b));
    s1 < e2 && s2 < e1
}

/// Whether `b` was running when `a` started. A start is recorded truncated to the millisecond
/// and an attempt may start well within one after another ended, so an end less than that
/// after the start is not counted.
fn running_at_start(a: &Value, b: &Value) -> bool {
    let ((s1, _), (s2, e2)) = (span(a), span(b));
    a["id"] != b["id"] && s2 <= s1 && s1 < e2 - 0.001
}

/// Whether `a` and `b` were running at the same time, beyond the record's resolution.
fn beside(a: &Value, b: &Value) -> bool {
    running_at_start(a, b) || running_at_start(b, a)
}

#[test]
fn copies_run_together_and_collide_while_the_others_run_alone() {
    let (code, summary, attempts, manifest) = sweep(&["--profiles", "default,copies=2", "--runs", "4"]);
    assert_eq!(code, Some(1), "{summary:#}");
    let default = cell(&summary, "default");
    assert_eq!((default["attempts"].as_u64(), default["failures"].as_u64()), (Some(4), Some(0)), "{default}");
    // Two batches of two: in each, one copy held the lock and the other found it taken.
    let copies = cell(&summary, "copies=2");
    assert_eq!((copies["attempts"].as_u64(), copies["failures"].as_u64()), (Some(4), Some(2)), "{copies}");
    assert_eq!(copies["outcomes"]["fail"], 2, "{copies}");
    assert_eq!(copies["inert"], false, "{copies}");
    assert_eq!(copies["effect"]["copies_at_once"], 2, "{copies}");
    // The record shows each batch's two attempts overlapping, and nothing else beside them.
    let of = |name: &str, batch: u64| -> Vec<&Value> {
        attempts.iter().filter(|a| a["cell"] == name && (a["iteration"].as_u64().unwrap() - 1) / 2 == batch).collect()
    };
    for batch in 0..2 {
        let pair = of("copies=2", batch);
        assert_eq!(pair.len(), 2);
        assert!(overlap(pair[0], pair[1]), "{pair:?}");
        for d in attempts.iter().filter(|a| a["cell"] == "default") {
            assert!(!beside(d, pair[0]) && !beside(d, pair[1]), "{d} ran beside {pair:?}");
        }
    }
    // Ids stay unique, iterations 1 to 4 in each cell; the record keeps the width asked for.
    let mut ids: Vec<u64> = attempts.iter().map(|a| a["id"].as_u64().unwrap()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 8);
    assert_eq!(manifest["plan"]["jobs"], 1);
}

#[test]
fn the_other_cells_keep_to_jobs_and_until_fails_stops_after_the_failing_batch() {
    let (code, summary, attempts, manifest) =
        sweep(&["--profiles", "default,copies=3", "--runs", "6", "--jobs", "2", "--until-fails", "1"]);
    assert_eq!(code, Some(1), "{summary:#}");
    // The first batch of three failed twice: no second batch.
    let copies = cell(&summary, "copies=3");
    assert_eq!((copies["attempts"].as_u64(), copies["failures"].as_u64()), (Some(3), Some(2)), "{copies}");
    assert_eq!(copies["effect"]["copies_at_once"], 3, "{copies}");
    assert_eq!(cell(&summary, "default")["attempts"], 6);
    // Never more than --jobs 2 default attempts at once, and the copies alone.
    let default: Vec<&Value> = attempts.iter().filter(|a| a["cell"] == "default").collect();
    for a in &default {
        let running = default.iter().filter(|b| running_at_start(a, b)).count();
        assert!(running <= 1, "{a} started beside {running} others");
        for c in attempts.iter().filter(|c| c["cell"] == "copies=3") {
            assert!(!beside(a, c), "{a} ran beside {c}");
        }
    }
    // The three copies ran together.
    let copies: Vec<&Value> = attempts.iter().filter(|c| c["cell"] == "copies=3").collect();
    assert!(copies.iter().all(|a| copies.iter().all(|b| a["id"] == b["id"] || overlap(a, b))), "{copies:?}");
    assert_eq!(manifest["plan"]["jobs"], 2);
}

#[test]
fn a_resumed_sweep_runs_the_batches_left_together_with_the_width_it_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let (record, locks) = (dir.path().join("rec"), dir.path().join("locks"));
    let flakehunt = |args: &[&str]| {
        flakehunt().args(args).args(["--json", "--quiet"]).current_dir(dir.path()).timeout(RUN_LIMIT).output()
    };
    let target = fixture_arg("copies-collide.sh");
    let first = flakehunt(&[
        "sweep",
        "--profiles",
        "default,copies=2",
        "--runs",
        "4",
        "--timeout",
        "30s",
        "--seed",
        "8",
        "--record",
        "rec",
        "--",
        &target,
        locks.to_str().unwrap(),
    ]);
    assert_eq!(first.status.code(), Some(1), "{}", String::from_utf8_lossy(&first.stderr));
    // Cut the record before the second batch of copies, as an interruption between batches
    // leaves it, and let that batch start afresh.
    let text = std::fs::read_to_string(record.join("attempts.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let cut = lines
        .iter()
        .position(|l| {
            let a: Value = serde_json::from_str(l).unwrap();
            a["cell"] == "copies=2" && a["iteration"].as_u64().unwrap() > 2
        })
        .unwrap();
    std::fs::write(record.join("attempts.jsonl"), lines[..cut].iter().map(|l| format!("{l}\n")).collect::<String>())
        .unwrap();
    std::fs::remove_file(record.join("summary.json")).unwrap();
    std::fs::remove_dir_all(&locks).unwrap();
    let resumed = flakehunt(&["sweep", "--resume", "rec"]);
    assert_eq!(resumed.status.code(), Some(1), "{}", String::from_utf8_lossy(&resumed.stderr));
    let summary = summary_of(&resumed);
    let copies = cell(&summary, "copies=2");
    assert_eq!((copies["attempts"].as_u64(), copies["failures"].as_u64()), (Some(4), Some(2)), "{copies}");
    let attempts = attempts_in(&record);
    assert_eq!(attempts.len(), 8);
    let second: Vec<&Value> = attempts[cut..].iter().filter(|a| a["cell"] == "copies=2").collect();
    assert_eq!(second.len(), 2);
    assert!(overlap(second[0], second[1]), "{second:?}");
    assert_eq!(read_json(&record.join("manifest.json"))["plan"]["jobs"], 1);
}

#[test]
fn the_majority_oracle_judges_copies_run_together() {
    // Every attempt prints the same line but the copies' fourth, which prints another.
    let script =
        r#"if [ "$FLAKEHUNT_CELL" = copies=2 ] && [ "$FLAKEHUNT_ITERATION" = 4 ]; then echo other; else echo same; fi"#;
    let dir = tempfile::tempdir().unwrap();
    let out = flakehunt()
        .args(["sweep", "--profiles", "default,copies=2", "--runs", "4", "--oracle", "majority", "--until-fails", "1"])
        .args(["--seed", "2", "--json", "--quiet", "--record"])
        .arg(dir.path().join("rec"))
        .args(["--shell", script])
        .timeout(RUN_LIMIT)
        .output();
    let summary = summary_of(&out);
    let copies = cell(&summary, "copies=2");
    assert_eq!((copies["attempts"].as_u64(), copies["failures"].as_u64()), (Some(4), Some(1)), "{copies}");
    assert_eq!(copies["effect"]["copies_at_once"], 2, "{copies}");
    assert_eq!(cell(&summary, "default")["failures"], 0);
}
