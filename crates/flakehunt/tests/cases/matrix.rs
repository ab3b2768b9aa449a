//! End-to-end tests of `flakehunt matrix`: failures that follow one variable, one limit or a
//! combination of two; the twice rule and confirmation; placeholders; clean rooms; bad input;
//! the environment snapshot; hypotheses.

use serde_json::Value;

use crate::harness::{bin, cell, flakehunt};

fn fail_when() -> String {
    crate::harness::fixture("fail-when.sh").display().to_string()
}

struct Run {
    code: i32,
    summary: Value,
    stderr: String,
    dir: tempfile::TempDir,
}

/// Runs `flakehunt matrix ARGS --json --record rec -- TARGET` in a fresh directory.
fn matrix(args: &[&str], target: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let out = flakehunt()
        .arg("matrix")
        .args(args)
        .args(["--json", "-q", "--record", "rec", "--"])
        .args(target)
        .current_dir(dir.path())
        .env("SECRET_TOKEN", "hunter2")
        .output();
    let summary = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    Run { code: out.status.code().unwrap(), summary, stderr: String::from_utf8_lossy(&out.stderr).into_owned(), dir }
}

fn attribution(summary: &Value, dimension: &str, value: &str) -> (u64, u64) {
    let row = summary["attribution"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["dimension"] == dimension && a["value"] == value)
        .unwrap();
    (row["attempts"].as_u64().unwrap(), row["failures"].as_u64().unwrap())
}

#[test]
fn a_failure_that_follows_one_variable() {
    let f = fail_when();
    let run = matrix(
        &["-D", "LC_ALL=C.utf8,C", "-D", "TZ=UTC,America/New_York", "--runs", "4"],
        &[&f, "[ \"$LC_ALL\" = C ]", "2"],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    let s = &run.summary;
    assert_eq!(s["kind"], "matrix");
    assert_eq!(s["verdict"], "reproduced");
    assert_eq!(s["dimensions"].as_array().unwrap().len(), 2);
    assert_eq!(s["dimensions"][0]["kind"], "env");
    for tz in ["UTC", "America/New_York"] {
        let c = cell(s, &format!("LC_ALL=C TZ={tz}"));
        assert_eq!(c["reproduced"], true);
        assert_eq!(c["failures"], 2);
        assert_eq!(c["minimal_overlay"], serde_json::json!({"LC_ALL": "C"}));
        assert_eq!(c["overlay"]["TZ"], tz);
        let clean = cell(s, &format!("LC_ALL=C.utf8 TZ={tz}"));
        assert_eq!(clean["reproduced"], false);
        assert_eq!(clean["failures"], 0);
    }
    assert!(
        s["verdict_text"].as_str().unwrap().contains("fails with LC_ALL=C alone; TZ does not matter"),
        "{}",
        s["verdict_text"]
    );
    assert_eq!(attribution(s, "LC_ALL", "C"), (8, 4));
    assert_eq!(attribution(s, "LC_ALL", "C.utf8"), (8, 0));
    assert_eq!(attribution(s, "TZ", "UTC"), (8, 2));
}

#[test]
fn a_failure_that_follows_one_limit() {
    let f = fail_when();
    let run = matrix(&["--rlimit", "nofile=4096,512", "--runs", "3"], &[&f, "[ \"$(ulimit -n)\" -lt 1000 ]"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let s = &run.summary;
    assert_eq!(s["dimensions"][0]["kind"], "rlimit");
    let c = cell(s, "nofile=512");
    assert_eq!(c["failures"], 3);
    assert_eq!(c["minimal_overlay"], serde_json::json!({"nofile": "512"}));
    assert_eq!(cell(s, "nofile=4096")["failures"], 0);
}

#[test]
fn a_failure_that_needs_two_conditions_together() {
    let f = fail_when();
    let run = matrix(
        &["-D", "LC_ALL=C.utf8,C", "-D", "TZ=UTC,Asia/Tokyo", "--rlimit", "nofile=4096,2048", "--runs", "2"],
        &[&f, "[ \"$LC_ALL\" = C ] && [ \"$TZ\" = Asia/Tokyo ]"],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    let s = &run.summary;
    let c = cell(s, "LC_ALL=C TZ=Asia/Tokyo nofile=2048");
    assert_eq!(c["minimal_overlay"], serde_json::json!({"LC_ALL": "C", "TZ": "Asia/Tokyo"}));
    assert!(
        s["verdict_text"]
            .as_str()
            .unwrap()
            .contains("fails with LC_ALL=C and TZ=Asia/Tokyo together; nofile does not matter"),
        "{}",
        s["verdict_text"]
    );
    assert_eq!(cell(s, "LC_ALL=C TZ=UTC nofile=2048")["reproduced"], false);
}

#[test]
fn a_single_failure_is_a_rumour_that_confirmation_clears() {
    let f = fail_when();
    // Fails on its very first attempt in the LC_ALL=C cell and never again.
    let run = matrix(
        &["-D", "LC_ALL=C.utf8,C", "--runs", "3", "--confirm", "4"],
        &[&f, "[ \"$LC_ALL\" = C ] && [ \"$FLAKEHUNT_ITERATION\" = 1 ]"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let s = &run.summary;
    assert_eq!(s["verdict"], "rumour");
    let c = cell(s, "LC_ALL=C");
    assert_eq!(c["reproduced"], false);
    assert_eq!(c["failures"], 1);
    assert_eq!(c["confirmations"], 4);
    assert_eq!(c["attempts"], 7);
    let lines = std::fs::read_to_string(run.dir.path().join("rec/attempts.jsonl")).unwrap();
    let confirms = lines.lines().filter(|l| l.contains("\"phase\":\"confirm\"")).count();
    assert_eq!(confirms, 4);
}

#[test]
fn confirmation_turns_a_second_failure_into_a_reproduction() {
    let f = fail_when();
    // Fails at iteration 3 (the plan's last run) and 5 (the second confirmation).
    let run = matrix(
        &["-D", "MODE=a,b", "--runs", "3", "--confirm", "10"],
        &[&f, "[ \"$MODE\" = b ] && { [ \"$FLAKEHUNT_ITERATION\" = 3 ] || [ \"$FLAKEHUNT_ITERATION\" = 5 ]; }"],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    let c = cell(&run.summary, "MODE=b");
    assert_eq!(c["reproduced"], true);
    assert_eq!(c["confirmations"], 2, "stops at the second failure");
}

#[test]
fn placeholders_are_substituted_and_not_exported() {
    let f = fail_when();
    let run = matrix(&["-D", "workers=1,4", "--runs", "2"], &[&f, "[ {workers} -ge 4 ] && [ -z \"$workers\" ]"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.summary["dimensions"][0]["kind"], "placeholder");
    assert_eq!(cell(&run.summary, "workers=4")["failures"], 2);
    assert_eq!(cell(&run.summary, "workers=1")["failures"], 0);
}

#[test]
fn unset_removes_a_variable() {
    let f = fail_when();
    let run = matrix(&["-D", "HOME=/root,unset", "--runs", "2"], &[&f, "[ -z \"${HOME+x}\" ]"]);
    assert_eq!(cell(&run.summary, "HOME=unset")["failures"], 2, "{}", run.stderr);
    assert_eq!(cell(&run.summary, "HOME=/root")["failures"], 0);
}

#[test]
fn bad_input_is_one_line_exit_2_and_no_record() {
    let cases: &[(&[&str], &[&str], &str)] = &[
        (&["--rlimit", "files=1,2"], &["true"], "unknown rlimit 'files'"),
        (&["--rlimit", "nofile=lots"], &["true"], "not a limit"),
        (&["--rlimit", "nofile=999999999999"], &["true"], "above the hard limit"),
        (&["-D", "X=1,2"], &["echo", "{threads}"], "uses {threads}"),
        (&["-D", "X=1,2", "-D", "X=3"], &["true"], "given twice"),
        (&["-D", "X"], &["true"], "NAME=value1,value2"),
        (&[], &["true"], "no dimensions"),
        (&["-D", "A=1,2,3,4,5", "-D", "B=1,2,3,4,5", "--max-cells", "10"], &["true"], "--yes"),
    ];
    for (args, target, message) in cases {
        let run = matrix(args, target);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(message), "{args:?}: {}", run.stderr);
        assert!(!run.dir.path().join("rec").exists(), "{args:?} left a record");
    }
}

#[test]
fn every_record_has_a_redacted_snapshot() {
    let run = matrix(&["-D", "A=1,2", "--runs", "1"], &["true"]);
    let snapshot: Value =
        serde_json::from_str(&std::fs::read_to_string(run.dir.path().join("rec/snapshot.json")).unwrap()).unwrap();
    assert_eq!(snapshot["env"]["SECRET_TOKEN"], "<redacted>");
    assert!(snapshot["cpus_online"].as_u64().unwrap() >= 1);
    assert!(snapshot["rlimits"]["nofile"].is_object());
}

#[test]
fn clean_rooms_copy_tracked_files_and_scrub_the_environment() {
    let repo = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let ok =
            std::process::Command::new("git").args(args).current_dir(repo.path()).output().unwrap().status.success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    // The check fails when anything leaks in: the untracked file, the caller's variable, or a
    // HOME outside the room; and when the setup did not run.
    std::fs::write(
        repo.path().join("check.sh"),
        "#!/bin/sh\n[ -f tracked.txt ] || exit 11\n[ ! -e untracked.txt ] || exit 12\n[ -z \"$LEAKY\" ] || exit 13\n\
         [ \"$KEPT\" = yes ] || exit 14\ncase \"$HOME\" in \"$(dirname \"$PWD\")\"/home) ;; *) exit 15;; esac\n\
         [ -f setup-ran ] || exit 16\n[ -z \"$(ls -A \"$HOME\")\" ] || exit 17\nexit 0\n",
    )
    .unwrap();
    std::fs::write(repo.path().join("tracked.txt"), "x").unwrap();
    git(&["add", "check.sh", "tracked.txt"]);
    std::fs::write(repo.path().join("untracked.txt"), "y").unwrap();
    let out = flakehunt()
        .args(["matrix", "--clean-room", "--setup", "touch setup-ran", "--keep-env", "KEPT", "-D", "TZ=UTC,Asia/Tokyo"])
        .args(["--runs", "2", "--json", "-q", "--record"])
        .arg(repo.path().join(".rec"))
        .args(["--", "sh", "check.sh"])
        .current_dir(repo.path())
        .env("LEAKY", "1")
        .env("KEPT", "yes")
        .output();
    let summary: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(summary["failures"], 0, "{}", summary["signatures"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(!repo.path().join("setup-ran").exists(), "the project itself is untouched");
}

#[test]
fn clean_room_outside_a_repository_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = flakehunt()
        .args(["matrix", "--clean-room", "-D", "A=1,2", "--runs", "1", "--", "true"])
        .current_dir(dir.path())
        .env("GIT_CEILING_DIRECTORIES", dir.path().parent().unwrap())
        .output();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("git repository"));
}

#[test]
fn hypotheses_are_recorded_run_and_listed() {
    let dir = tempfile::tempdir().unwrap();
    let f = fail_when();
    let hypo = |args: &[&str]| flakehunt().arg("hypo").args(args).current_dir(dir.path()).output();
    let add = hypo(&[
        "add",
        "fails only with LC_ALL=C",
        "--",
        bin().to_str().unwrap(),
        "matrix",
        "-q",
        "-D",
        "LC_ALL=C.utf8",
        "--runs",
        "3",
        "--",
        &f,
        "[ \"$LC_ALL\" = C ]",
    ]);
    assert!(add.status.success());
    let add2 = hypo(&["add", "C.utf8 is safe too", "--", "false"]);
    assert!(add2.status.success());
    let run1 = hypo(&["run", "1"]);
    assert!(
        String::from_utf8_lossy(&run1.stdout).contains("hypothesis 1: survived (record: "),
        "{}",
        String::from_utf8_lossy(&run1.stdout)
    );
    let run2 = hypo(&["run", "2"]);
    assert!(String::from_utf8_lossy(&run2.stdout).contains("hypothesis 2: killed"));
    let list = String::from_utf8_lossy(&hypo(&["list"]).stdout).into_owned();
    assert!(list.contains("1  survived") && list.contains("2  killed"), "{list}");
    let lines = std::fs::read_to_string(dir.path().join(".flakehunt/hypotheses.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), 4);
    assert_eq!(hypo(&["run", "9"]).status.code(), Some(2));
}
