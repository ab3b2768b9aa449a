//! End-to-end tests of the oracles beyond the exit code: `--fail-if`, `--pass-if`,
//! `--expect-stdout` with `--ignore`, and `--oracle majority` on a program that exits 0 with a
//! wrong sum. Every fixture decides from `FLAKEHUNT_ITERATION`, so no test depends on timing.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::harness::{attempts_in, fixture_arg, flakehunt, summary_of};

struct Run {
    code: i32,
    summary: Value,
    attempts: Vec<Value>,
    record: PathBuf,
    _dir: tempfile::TempDir,
}

/// A one-cell sweep (`default` profile) with `--json` into a fresh record.
fn sweep(args: &[&str], target: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("rec");
    let out = flakehunt()
        .args(["sweep", "--profiles", "default", "--seed", "7", "--json", "--quiet", "--record"])
        .arg(&record)
        .args(args)
        .arg("--")
        .args(target)
        .current_dir(dir.path())
        .output();
    let summary = summary_of(&out);
    let attempts = attempts_in(&record);
    Run { code: out.status.code().unwrap(), summary, attempts, record, _dir: dir }
}

/// Iterations of the attempts whose recorded outcome is `outcome`.
fn iterations(attempts: &[Value], outcome: &str) -> BTreeSet<u64> {
    attempts.iter().filter(|a| a["outcome"] == outcome).map(|a| a["iteration"].as_u64().unwrap()).collect()
}

fn set(xs: &[u64]) -> BTreeSet<u64> {
    xs.iter().copied().collect()
}

#[test]
fn fail_if_fails_matching_attempts_whatever_their_exit() {
    let run = sweep(&["--runs", "12", "--fail-if", "DATA RACE"], &[&fixture_arg("oracle/judge.sh")]);
    assert_eq!(run.code, 1);
    // 3, 6, 9, 12 warn and exit 0; 4, 8 and 5, 10 exit 1.
    assert_eq!(run.summary["failures"], 8);
    let raced: Vec<&Value> = run.attempts.iter().filter(|a| a["oracle"].is_string()).collect();
    assert_eq!(raced.iter().map(|a| a["iteration"].as_u64().unwrap()).collect::<BTreeSet<_>>(), set(&[3, 6, 9, 12]));
    for a in &raced {
        assert_eq!(a["outcome"], "fail");
        assert_eq!(a["exit_code"], 0);
        assert!(a["oracle"].as_str().unwrap().starts_with("fail-if matched: WARNING: DATA RACE at ledger.c:"), "{a}");
    }
    let sigs = run.summary["signatures"].as_array().unwrap();
    let race = sigs.iter().find(|s| s["signature"].as_str().unwrap().contains("fail-if matched")).unwrap();
    assert_eq!(race["count"], 4, "{sigs:?}");
    assert_eq!(race["signature"], "exit 0: fail-if matched: WARNING: DATA RACE at ledger.c:<n>");
}

#[test]
fn pass_if_forgives_matching_failures_only() {
    let run = sweep(&["--runs", "12", "--pass-if", "infra hiccup"], &[&fixture_arg("oracle/judge.sh")]);
    assert_eq!(run.code, 1);
    assert_eq!(run.summary["failures"], 2);
    assert_eq!(iterations(&run.attempts, "fail"), set(&[5, 10]));
    for a in run.attempts.iter().filter(|a| [4, 8].contains(&a["iteration"].as_u64().unwrap())) {
        assert_eq!(a["outcome"], "pass");
        assert_eq!(a["exit_code"], 1);
        assert_eq!(a["oracle"], "pass-if matched: connection reset by peer (infra hiccup)");
    }
}

#[test]
fn expect_stdout_compares_after_masking() {
    let run = sweep(
        &["--runs", "6", "--expect-stdout", &fixture_arg("oracle/answer.expected"), "--ignore", r"pid=\d+"],
        &[&fixture_arg("oracle/answer.sh")],
    );
    assert_eq!(run.code, 1);
    assert_eq!(run.summary["failures"], 2);
    assert_eq!(run.summary["cells"][0]["outcomes"]["wrong-output"], 2);
    assert_eq!(iterations(&run.attempts, "wrong-output"), set(&[3, 6]));
    let wrong = run.attempts.iter().find(|a| a["outcome"] == "wrong-output").unwrap();
    let reason = wrong["oracle"].as_str().unwrap();
    assert!(
        reason.contains("answer.expected") && reason.contains("line 2: got 'answer=41', expected 'answer=42'"),
        "{reason}"
    );
    // Masking made the volatile pid line agree, so every right answer hashed alike.
    let hashes: BTreeSet<&str> =
        run.attempts.iter().filter(|a| a["outcome"] == "pass").map(|a| a["stdout_hash"].as_str().unwrap()).collect();
    assert_eq!(hashes.len(), 1);
    // The manifest keeps the oracle for --resume and report.
    let manifest: Value = serde_json::from_slice(&std::fs::read(run.record.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["oracle"]["ignore"][0], r"pid=\d+");
}

#[test]
fn without_an_oracle_a_wrong_output_passes() {
    let run = sweep(&["--runs", "3"], &[&fixture_arg("oracle/answer.sh")]);
    assert_eq!(run.code, 0);
    assert_eq!(run.summary["failures"], 0);
    assert!(run.summary.get("outputs").is_none());
}

/// Compiles the racy-sum fixture into `dir`.
fn race_sum(dir: &Path) -> String {
    let exe = dir.join("race_sum");
    let status = std::process::Command::new("cc")
        .args(["-O1", "-pthread", "-o"])
        .arg(&exe)
        .arg(fixture_arg("oracle/race_sum.c"))
        .status()
        .expect("a C compiler (cc) is needed for this test");
    assert!(status.success());
    exe.display().to_string()
}

#[test]
fn majority_oracle_flags_exactly_the_wrong_sums() {
    let build = tempfile::tempdir().unwrap();
    let exe = race_sum(build.path());
    let run = sweep(&["--runs", "9", "--oracle", "majority"], &[&exe]);
    assert_eq!(run.code, 1, "{}", run.summary);
    let cell = &run.summary["cells"][0];
    assert_eq!(cell["outcomes"]["wrong-output"], 3);
    assert_eq!(cell["failures"], 3);
    // The majority is decided in the analysis: the record holds every attempt's stdout hash.
    assert!(run.attempts.iter().all(|a| a["stdout_hash"].is_string()));
    let outputs = run.summary["outputs"].as_array().unwrap();
    assert_eq!(outputs.len(), 2, "{outputs:?}");
    assert_eq!((outputs[0]["count"].as_u64(), outputs[0]["majority"].as_bool()), (Some(6), Some(true)));
    assert!(outputs[0]["example"].as_str().unwrap().contains("sum=2000"));
    assert_eq!((outputs[1]["count"].as_u64(), outputs[1]["majority"].as_bool()), (Some(3), Some(false)));
    assert!(outputs[1]["example"].as_str().unwrap().contains("sum=1000"));
    // Exactly the forced iterations are the wrong ones.
    let wrong_ids: BTreeSet<u64> =
        outputs[1]["attempts"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    let wrong_iterations: BTreeSet<u64> = run
        .attempts
        .iter()
        .filter(|a| wrong_ids.contains(&a["id"].as_u64().unwrap()))
        .map(|a| a["iteration"].as_u64().unwrap())
        .collect();
    assert_eq!(wrong_iterations, set(&[3, 6, 9]));
    let sig = &run.summary["signatures"][0];
    assert_eq!(sig["signature"], "wrong-output: stdout differs from the majority output");
    assert_eq!(sig["count"], 3);
    // Each distinct output's first attempt kept its output in logs/.
    for o in outputs {
        let log = run.record.join(format!("logs/{}.stdout", o["first_attempt"]));
        assert!(std::fs::read_to_string(&log).unwrap().contains("sum="), "{}", log.display());
    }
    // `report` judges the record the same way.
    let report = flakehunt().args(["report", "--format", "json"]).arg(&run.record).output();
    let again: Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(again["outputs"], run.summary["outputs"]);
    assert_eq!(again["cells"][0]["outcomes"], cell["outcomes"]);
    let text = flakehunt().args(["report"]).arg(&run.record).output();
    assert!(String::from_utf8_lossy(&text.stdout).contains("distinct outputs"));
}

#[test]
fn until_fails_stops_on_wrong_outputs_once_a_majority_formed() {
    // Wrong sums at iterations 3, 6, 9, ...: the one at 3 comes before any majority (2 right
    // sums), those at 6 and 9 differ from a formed majority, so `--until-fails 2` stops at 9.
    let build = tempfile::tempdir().unwrap();
    let exe = race_sum(build.path());
    let run = sweep(&["--runs", "30", "--oracle", "majority", "--until-fails", "2"], &[&exe]);
    assert_eq!(run.code, 1, "{}", run.summary);
    assert_eq!(run.attempts.len(), 9);
    assert_eq!(run.summary["complete"], true);
    assert_eq!(run.summary["cells"][0]["outcomes"]["wrong-output"], 3);
}

#[test]
fn oracle_options_are_checked_before_any_attempt() {
    let out = flakehunt().args(["sweep", "--fail-if", "(", "--", "true"]).output();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid regex '(' for --fail-if"));
    let out = flakehunt().args(["sweep", "--ignore", "x", "--", "true"]).output();
    assert_eq!(out.status.code(), Some(2));
}
