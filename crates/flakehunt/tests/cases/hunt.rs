//! End-to-end tests of `flakehunt hunt`, the adaptive hunt, on fixtures whose failures depend
//! only on the cell and iteration flakehunt gives them: the reproducing arm and its family,
//! `summary.reproduction`, the exit codes, the hang rule, `--resume`, and `report`.

use std::path::{Path, PathBuf};

use crate::harness::{attempts_in, cell, run_in, summary_of};
use serde_json::Value;

/// Fails on even iterations of a `copies=N` arm (the condition plain re-running in parallel
/// sets); passes everywhere else.
const COPIES_RACE: &str = r#"#!/bin/sh
echo "case $FLAKEHUNT_CELL #$FLAKEHUNT_ITERATION"
case "$FLAKEHUNT_CELL" in
  copies=*) [ $((FLAKEHUNT_ITERATION % 2)) -eq 0 ] && { echo "lost update" >&2; exit 1; } ;;
esac
exit 0
"#;

/// A fixture script `name` with `body` in `dir`, executable.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// (id, cell, iteration, phase, outcome) of every attempt, by id.
fn decisions(record: &Path) -> Vec<(u64, String, u64, Value, Value)> {
    let mut d: Vec<_> = attempts_in(record)
        .into_iter()
        .map(|a| {
            (
                a["id"].as_u64().unwrap(),
                a["cell"].as_str().unwrap().to_owned(),
                a["iteration"].as_u64().unwrap(),
                a["phase"].clone(),
                a["outcome"].clone(),
            )
        })
        .collect();
    d.sort_by_key(|x| x.0);
    d
}

#[test]
fn a_race_that_needs_concurrent_copies_is_reproduced_under_a_copies_arm_and_confirmed() {
    let dir = tempfile::tempdir().unwrap();
    let fx = script(dir.path(), "race.sh", COPIES_RACE);
    let out =
        run_in(dir.path(), &["hunt", "--json", "-q", "--seed", "7", "--record", "rec", "--", fx.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let summary = summary_of(&out);
    assert_eq!(summary["kind"], "hunt");
    let r = &summary["reproduction"];
    let arm = r["cell"].as_str().unwrap();
    assert!(arm.starts_with("copies="), "{summary:#}");
    // The attempts until the second failure of that arm, counted from the record in id order
    // (the order the plan decides in; copies started together end in any order).
    let mut attempts = attempts_in(&dir.path().join("rec"));
    attempts.sort_by_key(|a| a["id"].as_u64());
    let mut failures = 0;
    let until = attempts
        .iter()
        .position(|a| {
            failures += u64::from(a["cell"] == arm && a["outcome"] == "fail");
            failures == 2
        })
        .unwrap();
    assert_eq!(r["attempts"].as_u64(), Some(until as u64 + 1), "{r}");
    assert!(r["seconds"].as_f64().unwrap() > 0.0);
    // Calibration ran first: five plain attempts, each with its CPU time from wait4.
    let calibrate: Vec<&Value> = attempts.iter().filter(|a| a["phase"] == "calibrate").collect();
    assert_eq!(calibrate.len(), 5);
    assert!(
        calibrate.iter().all(|a| a["cell"] == "default" && a["cpu_seconds"].as_f64().is_some()),
        "{:#?}",
        calibrate[0]
    );
    // Confirmation singled the arm out, as a sweep would judge it.
    assert_eq!(summary["verdict"], "condition-sensitive");
    assert_eq!(cell(&summary, arm)["sensitive"], true);
    assert!(attempts.iter().any(|a| a["phase"] == "confirm" && a["cell"] == "default"));
    let conclusion = summary["details"]["conclusion"].as_str().unwrap();
    assert!(conclusion.starts_with("reproduced twice in ") && conclusion.contains(arm), "{conclusion}");
    // The table printed on stderr ends with the conclusion line.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("conclusion: {conclusion}")), "{stderr}");
    // Every arm is a cell whose name carries its level.
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("rec/manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["kind"], "hunt");
    assert_eq!(manifest["extra"]["bandit"]["seed"], 7);
    assert!(summary["cells"].as_array().unwrap().iter().any(|c| c["name"] == "copies=2"));
}

/// Fails on the second and third attempts of every arm, never again: the first arm to get there
/// failed twice, and confirmation sees nothing.
const TWICE_THEN_NEVER: &str = r#"#!/bin/sh
if [ "$FLAKEHUNT_CELL" != default ] && [ "$FLAKEHUNT_ITERATION" -ge 2 ] && [ "$FLAKEHUNT_ITERATION" -le 3 ]; then
  echo "deadlock" >&2; exit 2
fi
exit 0
"#;

/// A failure seen twice and never again is hunted while the budget lasts, as one seen once
/// would be: its confirmation does not give up after 20 clean pairs (the rule before), and the
/// hunt ends not reproduced, saying how many clean confirmation attempts ran.
#[test]
fn a_failure_seen_twice_and_never_again_is_confirmed_while_the_budget_lasts() {
    let dir = tempfile::tempdir().unwrap();
    let fx = script(dir.path(), "twice.sh", TWICE_THEN_NEVER);
    let args =
        ["hunt", "--json", "-q", "--seed", "3", "--budget", "15s", "--record", "rec", "--", fx.to_str().unwrap()];
    let out = run_in(dir.path(), &args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let summary = summary_of(&out);
    assert_eq!(summary["verdict"], "not-reproduced", "{summary:#}");
    let c = &summary["details"]["confirmation"];
    let (arm, base) = (c["cell_attempts"].as_u64().unwrap(), c["base_attempts"].as_u64().unwrap());
    assert_eq!((c["cell_failures"].as_u64(), c["base_failures"].as_u64()), (Some(0), Some(0)), "{c}");
    assert!(arm > 20 && base > 20, "went on past 20 clean pairs: {c}");
    let conclusion = summary["details"]["conclusion"].as_str().unwrap();
    assert!(conclusion.contains(&format!("none failed in {} confirmation attempts", arm + base)), "{conclusion}");
    // The hunt kept going until its budget: every attempt after the confirmation started is one.
    let confirming = decisions(&dir.path().join("rec"));
    let first = confirming.iter().position(|d| d.3 == "confirm").unwrap();
    assert!(confirming[first..].iter().all(|d| d.3 == "confirm"), "nothing but confirmation after it began");
}

#[test]
fn nothing_reproduced_within_the_budget_exits_0_with_a_null_reproduction() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(dir.path(), &["hunt", "--json", "-q", "--budget", "2s", "--record", "rec", "--shell", "exit 0"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let summary = summary_of(&out);
    assert_eq!(summary["kind"], "hunt");
    assert!(summary["reproduction"].is_null() && summary.get("reproduction").is_some(), "{summary:#}");
    assert_eq!(summary["verdict"], "not-reproduced");
    let conclusion = summary["details"]["conclusion"].as_str().unwrap();
    assert!(conclusion.starts_with("not reproduced in "), "{conclusion}");
}

#[test]
fn a_hang_far_past_the_passed_attempts_is_ended_as_a_timeout_with_its_output() {
    // The first attempt after calibration hangs; the default --timeout is 10 minutes, so the
    // test ends only because the hang rule ended that attempt.
    let dir = tempfile::tempdir().unwrap();
    let body = format!(
        "{}\n",
        COPIES_RACE.replace(
            "echo \"case",
            "case \"$FLAKEHUNT_ATTEMPT\" in *.5) echo 'waiting for the lock'; exec sleep 100000 ;; esac\necho \"case"
        )
    );
    let fx = script(dir.path(), "hang.sh", &body);
    let out =
        run_in(dir.path(), &["hunt", "--json", "-q", "--seed", "3", "--record", "rec", "--", fx.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let attempts = attempts_in(&dir.path().join("rec"));
    let hung = attempts.iter().find(|a| a["id"] == 5).unwrap();
    assert_eq!(hung["outcome"], "timeout", "{hung:#}");
    assert!(hung["termination"].is_string() || hung["termination"].is_object(), "{hung:#}");
    // Its output is kept: in the record and in its log.
    assert_eq!(hung["stdout_tail"], "waiting for the lock\n");
    let log = dir.path().join("rec").join(format!("{}.stdout", hung["log"].as_str().unwrap()));
    let kept = std::fs::read_to_string(&log).unwrap();
    assert!(kept.contains("waiting for the lock"), "{kept}");
}

#[test]
fn an_explicit_timeout_replaces_the_hang_rule() {
    let dir = tempfile::tempdir().unwrap();
    let fx = script(dir.path(), "race.sh", COPIES_RACE);
    let out = run_in(
        dir.path(),
        &["hunt", "--json", "-q", "--seed", "7", "--timeout", "77s", "--record", "rec", "--", fx.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1));
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("rec/manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["extra"]["bandit"]["timeout"]["secs"], 77, "{manifest:#}");
    // Without it, the plan records none: the hang rule applies.
    let out =
        run_in(dir.path(), &["hunt", "--json", "-q", "--seed", "7", "--record", "rec2", "--", fx.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("rec2/manifest.json")).unwrap()).unwrap();
    assert!(manifest["extra"]["bandit"]["timeout"].is_null(), "{manifest:#}");
}

#[test]
fn a_hunt_killed_mid_way_resumes_where_its_decisions_left_off() {
    let dir = tempfile::tempdir().unwrap();
    // The baseline's first attempt after a copies arm failed (an exploring or confirming one)
    // kills flakehunt once: SIGKILL, so no summary and no cleanup but the watchdog's. Keyed on
    // that failure, not on a count of attempts: which arms run first depends on how long each
    // took, which a loaded machine changes.
    let (marker, failed) = (dir.path().join("killed"), dir.path().join("copies-failed"));
    let body = COPIES_RACE
        .replacen(
            "echo \"case",
            &format!(
                "if [ \"$FLAKEHUNT_CELL\" = default ] && [ -e {f} ] && [ ! -e {m} ]; then touch {m}; kill -KILL $PPID; exec sleep 100000; fi\necho \"case",
                m = marker.display(),
                f = failed.display()
            ),
            1,
        )
        .replacen("{ echo \"lost update\"", &format!("{{ touch {}; echo \"lost update\"", failed.display()), 1);
    assert!(body.contains("touch") && body.contains("copies-failed; echo"), "{body}");
    let killer = script(dir.path(), "killer.sh", &body);
    let first = run_in(
        dir.path(),
        &["hunt", "--json", "-q", "--seed", "11", "--record", "part", "--", killer.to_str().unwrap()],
    );
    assert_eq!(first.status.code(), None, "flakehunt was to be killed: {}", String::from_utf8_lossy(&first.stderr));
    let part = dir.path().join("part");
    let before = decisions(&part);
    assert!(before.iter().any(|d| d.1.starts_with("copies=") && d.4 == "fail"), "{before:?}");
    let resumed = run_in(dir.path(), &["hunt", "--json", "-q", "--resume", "part"]);
    assert_eq!(resumed.status.code(), Some(1), "{}", String::from_utf8_lossy(&resumed.stderr));
    let after = decisions(&part);
    assert_eq!(after[..before.len()], before[..], "the recorded attempts are kept as they were");
    // The resumed plan replayed the record: no second calibration, ids and iterations go on
    // where they stopped, and it went on confirming the arm that had failed twice rather than
    // exploring again.
    assert_eq!(after.iter().filter(|d| d.3 == "calibrate").count(), 5);
    let ids: Vec<u64> = after.iter().map(|d| d.0).collect();
    assert_eq!(ids, (0..after.len() as u64).collect::<Vec<_>>());
    for cell in ["default", "copies=2"] {
        let its: Vec<u64> = after.iter().filter(|d| d.1 == cell).map(|d| d.2).collect();
        assert_eq!(its, (1..=its.len() as u64).collect::<Vec<_>>(), "{cell}");
    }
    let first_confirm = after.iter().position(|d| d.3 == "confirm").unwrap();
    assert!(after[first_confirm..].iter().all(|d| d.3 == "confirm"), "{after:?}");
    let summary = summary_of(&resumed);
    assert!(summary["reproduction"]["cell"].as_str().unwrap().starts_with("copies="));
    assert_eq!(summary["attempts"].as_u64(), Some(after.len() as u64));
    assert_eq!(summary["complete"], true);
}

#[test]
fn report_renders_a_hunt_record() {
    let dir = tempfile::tempdir().unwrap();
    let fx = script(dir.path(), "race.sh", COPIES_RACE);
    let out = run_in(dir.path(), &["hunt", "-q", "--seed", "5", "--record", "rec", "--", fx.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("conclusion: reproduced twice in "), "{stdout}");
    let report = run_in(dir.path(), &["report", "rec"]);
    assert_eq!(report.status.code(), Some(0), "{}", String::from_utf8_lossy(&report.stderr));
    assert!(String::from_utf8_lossy(&report.stdout).contains("conclusion: reproduced twice in "));
    let json = run_in(dir.path(), &["report", "rec", "--format", "json"]);
    let summary: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(summary["reproduction"]["cell"].as_str().unwrap().starts_with("copies="));
}

/// [`COPIES_RACE`], whose plain target also fails once, on the last calibration attempt.
const COPIES_RACE_AND_ONE_PLAIN_FAILURE: &str = r#"#!/bin/sh
case "$FLAKEHUNT_CELL" in
  copies=*) [ $((FLAKEHUNT_ITERATION % 2)) -eq 0 ] && { echo "lost update" >&2; exit 1; } ;;
  default) [ "$FLAKEHUNT_ITERATION" -eq 5 ] && { echo "lost update" >&2; exit 1; } ;;
esac
exit 0
"#;

// Each shard is a hunt of its own: read as one hunt, the merged record's interleaved attempts
// made the plain target's single failure in each shard "the plain target fails twice", and
// its confirmation counts were no shard's.
#[test]
fn merged_hunt_shards_conclude_what_their_shards_did_with_their_confirmations_pooled() {
    let dir = tempfile::tempdir().unwrap();
    let fx = script(dir.path(), "race.sh", COPIES_RACE_AND_ONE_PLAIN_FAILURE);
    let mut confirmations = Vec::new();
    for (shard, rec) in [("1/2", "s1"), ("2/2", "s2")] {
        let out = run_in(
            dir.path(),
            &["hunt", "--json", "-q", "--seed", "4", "--shard", shard, "--record", rec, "--", fx.to_str().unwrap()],
        );
        assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
        let summary = summary_of(&out);
        assert_eq!(summary["verdict"], "condition-sensitive", "{summary:#}");
        assert!(summary["reproduction"]["cell"].as_str().unwrap().starts_with("copies="), "{summary:#}");
        assert_eq!(summary["complete"], true, "{summary:#}");
        confirmations.push(summary["details"]["confirmation"].clone());
    }
    let merged = run_in(dir.path(), &["merge", "s1", "s2", "--into", "m"]);
    let stderr = String::from_utf8_lossy(&merged.stderr);
    assert_eq!(merged.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("missing"), "{stderr}");
    let json = run_in(dir.path(), &["report", "m", "--format", "json"]);
    let summary: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(summary["verdict"], "condition-sensitive", "{summary:#}");
    assert!(summary["reproduction"]["cell"].as_str().unwrap().starts_with("copies="), "{summary:#}");
    assert_eq!(summary["complete"], true, "{summary:#}");
    let c = &summary["details"]["confirmation"];
    for key in ["cell_attempts", "cell_failures", "base_attempts", "base_failures"] {
        let pooled: u64 = confirmations.iter().map(|s| s[key].as_u64().unwrap()).sum();
        assert_eq!(c[key].as_u64(), Some(pooled), "{key}: {c:#} from {confirmations:?}");
    }
}

#[test]
fn shards_of_a_hunt_merge_without_sharing_attempt_ids() {
    let dir = tempfile::tempdir().unwrap();
    let fx = script(dir.path(), "race.sh", COPIES_RACE);
    for (shard, rec) in [("1/2", "s1"), ("2/2", "s2")] {
        let out = run_in(
            dir.path(),
            &["hunt", "-q", "--seed", "4", "--shard", shard, "--record", rec, "--", fx.to_str().unwrap()],
        );
        assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    }
    // Each shard's ids are its own residue: I-1, I-1+N, ...
    assert!(decisions(&dir.path().join("s2")).iter().all(|d| d.0 % 2 == 1));
    let merged = run_in(dir.path(), &["merge", "s1", "s2", "--into", "m"]);
    let stderr = String::from_utf8_lossy(&merged.stderr);
    assert_eq!(merged.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("more than one shard"), "{stderr}");
    let json = run_in(dir.path(), &["report", "m", "--format", "json"]);
    let summary: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(summary["kind"], "hunt");
    assert!(summary["reproduction"]["cell"].as_str().unwrap().starts_with("copies="), "{summary:#}");
    let (a, b) = (attempts_in(&dir.path().join("s1")).len(), attempts_in(&dir.path().join("s2")).len());
    assert_eq!(summary["attempts"].as_u64(), Some((a + b) as u64));
}

/// The notes on how flakehunt runs the attempts (the checks that are on, a warm mode that cannot
/// apply to an arm) come once each after the summary: the first lines a hunt shows are about the
/// target. A Python script that fails under tight-gil on even iterations, stdout and stderr in
/// one stream as a terminal shows them.
#[test]
fn notes_on_how_attempts_run_come_once_after_the_conclusion() {
    let dir = tempfile::tempdir().unwrap();
    let target = script(
        dir.path(),
        "flaky.py",
        "import os, sys\nif os.environ['FLAKEHUNT_CELL'] == 'tight-gil' and int(os.environ['FLAKEHUNT_ITERATION']) % 2 == 0:\n    sys.exit('lost update')\n",
    );
    let both = dir.path().join("output");
    let file = std::fs::File::create(&both).unwrap();
    let out = crate::harness::flakehunt()
        .args(["hunt", "--budget", "60s", "--seed", "1", "--record", "rec", "--", "python3"])
        .arg(&target)
        .current_dir(dir.path())
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .output();
    let text = std::fs::read_to_string(&both).unwrap();
    assert_eq!(out.status.code(), Some(1), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    let conclusion = lines.iter().position(|l| l.starts_with("conclusion:")).unwrap_or_else(|| panic!("{text}"));
    let notes: Vec<usize> =
        (0..lines.len()).filter(|&i| lines[i].starts_with("checks: ") || lines[i].starts_with("flakehunt: ")).collect();
    assert!(!notes.is_empty(), "the checks that are on are said: {text}");
    assert!(notes.iter().all(|&i| i > conclusion), "notes after the conclusion: {text}");
    let checks = lines.iter().filter(|l| l.starts_with("checks: ")).count();
    assert_eq!(checks, 1, "once: {text}");
    assert!(!lines[0].starts_with("checks: ") && !lines[0].starts_with("flakehunt: "), "{text}");
}

/// Before any attempt has passed the hang rule has no limit: an attempt that took long then is
/// said to have run without one, once, while the hunt goes on (a target that hangs on its first
/// attempts would otherwise wait out its own timers in silence).
#[test]
fn a_long_first_attempt_is_said_to_have_had_no_hang_limit() {
    let dir = tempfile::tempdir().unwrap();
    let target = script(dir.path(), "slow-failure.sh", "#!/bin/sh\nsleep 6\necho 'deadlock' >&2\nexit 2\n");
    let out = run_in(dir.path(), &["hunt", "--budget", "9s", "--record", "rec", "--", target.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said: Vec<&str> = stderr.lines().filter(|l| l.starts_with("no attempt has passed yet")).collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(said[0].contains("--timeout (10m) or the budget's end"), "{}", said[0]);
    // With --timeout the hang rule does not apply: nothing to say.
    let out = run_in(
        dir.path(),
        &["hunt", "--budget", "9s", "--timeout", "7s", "--record", "rec2", "--", target.to_str().unwrap()],
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("no attempt has passed yet"));
}
