//! End to end: `report` in every format, shards joined by `merge` agreeing with the unsharded
//! run, merge refusals, the job summary, completions and the man page. Runs the real binary
//! against `fixtures/flaky-every.sh`, which fails on every third iteration: deterministic.

use std::path::Path;

use crate::harness::flakehunt;
use serde_json::Value;

/// Runs a small sweep into `record`, with extra arguments (`--shard`, `--seed`...).
fn sweep(record: &Path, extra: &[&str]) -> assert_cmd::assert::Assert {
    flakehunt()
        .args(["sweep", "--runs", "9", "--profiles", "default,one-core-native", "-q"])
        .args(extra)
        .arg("--record")
        .arg(record)
        .arg("--")
        .arg(crate::harness::fixture("flaky-every.sh"))
        .arg("3")
        .assert()
}

fn report_json(dir: &Path) -> Value {
    let out = flakehunt().arg("report").arg(dir).args(["--format", "json"]).output();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The parts of a summary that must not depend on how the plan was split.
fn counts(summary: &Value) -> Value {
    let cells: Vec<Value> = summary["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            serde_json::json!([
                c["name"],
                c["attempts"],
                c["failures"],
                c["outcomes"],
                c["rate"],
                c["ci95"],
                c["p_value"]
            ])
        })
        .collect();
    let sigs: Vec<Value> = summary["signatures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| serde_json::json!([s["signature"], s["count"]]))
        .collect();
    serde_json::json!({
        "attempts": summary["attempts"], "planned": summary["planned"], "failures": summary["failures"],
        "complete": summary["complete"], "verdict": summary["verdict"], "cells": cells, "signatures": sigs
    })
}

fn stderr_of(a: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&a.get_output().stderr).into_owned()
}

#[test]
fn merged_shards_equal_the_unsharded_run() {
    let t = tempfile::tempdir().unwrap();
    let whole = t.path().join("whole");
    sweep(&whole, &["--seed", "11"]).code(1);
    let mut shards = Vec::new();
    for i in 1..=3 {
        let dir = t.path().join(format!("shard{i}"));
        sweep(&dir, &["--seed", "11", "--shard", &format!("{i}/3")]);
        shards.push(dir);
    }
    let merged = t.path().join("merged");
    // Given out of order: the merge sorts them.
    flakehunt().arg("merge").args([&shards[2], &shards[0], &shards[1]]).arg("--into").arg(&merged).assert().success();
    let (a, b) = (report_json(&whole), report_json(&merged));
    assert_eq!(counts(&a), counts(&b));
    assert_eq!(a["attempts"], 18);
    assert_eq!(a["failures"], 6);
    assert!(merged.join("summary.json").is_file() && merged.join("merge.json").is_file());
    // Logs of failing attempts came along.
    let logs = std::fs::read_dir(merged.join("logs")).unwrap().count();
    assert_eq!(logs, 12, "stdout and stderr of 6 failing attempts");
    // And every format renders the merged record.
    for format in ["term", "md", "junit", "html"] {
        let out = t.path().join(format!("report.{format}"));
        flakehunt().arg("report").arg(&merged).args(["--format", format, "--output"]).arg(&out).assert().success();
        assert!(std::fs::metadata(&out).unwrap().len() > 100, "{format} report is empty");
    }
}

#[test]
fn merge_refuses_what_is_not_one_plan() {
    let t = tempfile::tempdir().unwrap();
    let p = |n: &str| t.path().join(n);
    sweep(&p("a1"), &["--seed", "5", "--shard", "1/2"]);
    sweep(&p("a2"), &["--seed", "5", "--shard", "2/2"]);
    sweep(&p("other-seed"), &["--seed", "6", "--shard", "2/2"]);
    sweep(&p("three"), &["--seed", "5", "--shard", "2/3"]);
    sweep(&p("plain"), &["--seed", "5"]);
    let refuse = |dirs: &[&str], out: &str, expect: &str| {
        let existed = p(out).join("manifest.json").exists();
        let mut cmd = flakehunt();
        cmd.arg("merge");
        for d in dirs {
            cmd.arg(p(d));
        }
        let a = cmd.arg("--into").arg(p(out)).assert().code(2);
        let err = stderr_of(&a);
        assert!(err.contains(expect), "expected '{expect}' in: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        assert!(existed || !p(out).join("manifest.json").exists(), "nothing written on refusal");
    };
    refuse(&["a1", "other-seed"], "m1", "its seed differs");
    refuse(&["a1", "three"], "m2", "its shard count differs");
    refuse(&["a1", "a1"], "m3", "shard 1/2 is given twice");
    refuse(&["a1", "plain"], "m4", "is not a shard record");
    refuse(&["a1", "nowhere"], "m5", "is not a flakehunt record");
    // A different target is another plan too.
    flakehunt()
        .args(["sweep", "--runs", "9", "--profiles", "default,one-core-native", "-q", "--seed", "5", "--shard", "2/2"])
        .arg("--record")
        .arg(p("b2"))
        .args(["--shell", "true"])
        .assert()
        .success();
    refuse(&["a1", "b2"], "m6", "its target command differs");
    // The output must be new.
    refuse(&["a1", "a2"], "a1", "already holds a record");
    // A partial merge works and says so.
    let a = flakehunt().arg("merge").arg(p("a1")).arg("--into").arg(p("half")).assert().success();
    assert!(stderr_of(&a).contains("shards 2/2 are missing"));
    assert_eq!(report_json(&p("half"))["complete"], false);
}

#[test]
fn report_of_a_bad_directory_is_one_line_and_exit_2() {
    let t = tempfile::tempdir().unwrap();
    let a = flakehunt().arg("report").arg(t.path()).assert().code(2);
    let err = stderr_of(&a);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("not a flakehunt record"), "{err}");
}

#[test]
fn report_term_matches_the_live_table() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("r");
    let live = sweep(&dir, &["--seed", "3"]).code(1);
    let live = String::from_utf8_lossy(&live.get_output().stdout).into_owned();
    let report = flakehunt().arg("report").arg(&dir).output();
    assert_eq!(live, String::from_utf8_lossy(&report.stdout));
}

#[test]
fn hunts_append_to_the_github_step_summary() {
    let t = tempfile::tempdir().unwrap();
    let summary = t.path().join("step-summary.md");
    std::fs::write(&summary, "# earlier step\n").unwrap();
    flakehunt()
        .env("GITHUB_STEP_SUMMARY", &summary)
        .args(["sweep", "--runs", "3", "--profiles", "default", "-q", "--record"])
        .arg(t.path().join("r"))
        .arg("--")
        .arg(crate::harness::fixture("flaky-every.sh"))
        .arg("3")
        .assert()
        .code(1);
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(text.starts_with("# earlier step\n"), "appended, not replaced");
    assert!(text.contains("## flakehunt sweep:") && text.contains("| profile | attempts |"), "{text}");
}

#[test]
fn completions_and_man_page() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = flakehunt().args(["completions", shell]).output();
        assert!(out.status.success(), "{shell}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("report"), "{shell} completes subcommands");
    }
    let out = flakehunt().arg("man").output();
    assert!(out.status.success());
    let man = String::from_utf8_lossy(&out.stdout);
    assert!(man.contains(".TH flakehunt 1") && man.contains("merge"));
}
