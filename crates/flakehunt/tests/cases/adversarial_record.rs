//! Damaged and refused records, end to end: a `--resume` refused for any reason (a damaged
//! attempts file, a target that cannot start, a state that cannot be copied any more, a record
//! of another kind) leaves every file of the record as it was, the summary of the live run
//! included; a record that repeats an attempt or has lost its attempts file is refused by
//! `report`, `merge` and `--resume` alike rather than counted.
//!
//! Records are made by real hunts of deterministic fixtures, then damaged by hand, the way a
//! killed writer, a bad copy or an editor leaves them.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::harness::{fixture, flakehunt, run_in};

/// Every file and directory under `dir`, with the bytes and permission bits of each file:
/// what a refused command must leave as it was.
fn tree(dir: &Path) -> BTreeMap<PathBuf, (u32, Option<Vec<u8>>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let mode = meta.permissions().mode();
            if meta.is_dir() {
                stack.push(path.clone());
                out.insert(path, (mode, None));
            } else {
                out.insert(path.clone(), (mode, Some(std::fs::read(&path).unwrap_or_default())));
            }
        }
    }
    out
}

#[track_caller]
fn assert_unchanged(before: &BTreeMap<PathBuf, (u32, Option<Vec<u8>>)>, dir: &Path, what: &str) {
    let after = tree(dir);
    let names = |t: &BTreeMap<PathBuf, _>| t.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(before), names(&after), "{what}: files of the record came or went");
    for (path, was) in before {
        assert!(after[path] == *was, "{what}: {} was changed", path.display());
    }
}

/// A refusal: exit code 2 (a damaged record is the user's to mend, as for `report`) in one line
/// that says `says`.
#[track_caller]
fn assert_refused(out: &Output, says: &str, what: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!matches!(out.status.code(), Some(0 | 1)), "{what}: not refused ({:?}): {stderr}", out.status);
    assert!(stderr.contains(says), "{what}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{what}: {stderr}");
}

/// A copy of fixture `name` in `dir`, which the test may take away.
fn own_copy(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::copy(fixture(name), &path).unwrap();
    path
}

/// Cuts the attempts file of `record` to its first `keep` lines and half of the next, as a
/// writer killed mid-line leaves it.
fn cut_after(record: &Path, keep: usize) {
    let path = record.join("attempts.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() > keep, "{text}");
    let mut cut: String = lines[..keep].iter().map(|l| format!("{l}\n")).collect();
    cut.push_str(&lines[keep][..lines[keep].len() / 2]);
    std::fs::write(&path, cut).unwrap();
}

/// A line in the middle of the attempts file that is no attempt.
fn damage_a_middle_line(record: &Path) {
    let path = record.join("attempts.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(1, "{\"id\": 1, \"cell\": ");
    std::fs::write(&path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
}

/// The hunts of every kind the driver runs with a plan, each with a record in `dir/NAME`.
fn records_of_every_kind(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    let flaky = fixture("flaky-every.sh");
    let flaky = flaky.to_str().unwrap();
    let hunts: [(&str, Vec<&str>); 3] = [
        ("sweep", vec!["sweep", "--profiles", "default", "--runs", "4", "--record", "sweep", "--", flaky, "2"]),
        ("matrix", vec!["matrix", "-D", "X=a,b", "--runs", "2", "--record", "matrix", "--", flaky, "2"]),
        // Fails every time: the adaptive hunt calls it deterministic after its calibration.
        ("hunt", vec!["hunt", "--record", "hunt", "--", flaky, "1"]),
    ];
    let mut out = Vec::new();
    for (kind, args) in hunts {
        let run = run_in(dir, &args);
        assert!(matches!(run.status.code(), Some(0 | 1)), "{kind}: {}", String::from_utf8_lossy(&run.stderr));
        let record = dir.join(kind);
        assert!(record.join("summary.json").exists(), "{kind}");
        out.push((kind, record));
    }
    // A suite of two tests, one failing on every other run: its record holds the repeat plugin
    // and classification runs besides.
    let project = dir.join("project");
    std::fs::create_dir_all(project.join("tests")).unwrap();
    std::fs::write(
        project.join("tests/test_two.py"),
        "import os\n\ndef test_ok():\n    pass\n\ndef test_every_other():\n    assert int(os.environ['FLAKEHUNT_ITERATION']) % 2\n",
    )
    .unwrap();
    let record = dir.join("suite");
    let run = flakehunt()
        .args(["suite", "--runs", "2", "--quiet", "--record", record.to_str().unwrap(), "--pytest"])
        .current_dir(&project)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output();
    assert_eq!(run.status.code(), Some(1), "suite: {}", String::from_utf8_lossy(&run.stderr));
    assert!(record.join("suite/flakehunt_repeat.py").exists());
    out.push(("suite", record));
    out
}

#[test]
fn a_resume_refused_for_a_damaged_attempts_file_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, record) in records_of_every_kind(dir.path()) {
        damage_a_middle_line(&record);
        // A cut last line too: dropping it is the resumed hunt's first change, not the refused one's.
        let path = record.join("attempts.jsonl");
        let mut text = std::fs::read(&path).unwrap();
        text.extend_from_slice(b"{\"id\": 99");
        std::fs::write(&path, text).unwrap();
        let before = tree(&record);
        let out = run_in(dir.path(), &[kind, "--resume", record.to_str().unwrap()]);
        assert_refused(&out, "attempts.jsonl is damaged: line 2", kind);
        assert_unchanged(&before, &record, kind);
        // `report` refuses the same record the same way, so the live run's summary is what is left.
        let report = run_in(dir.path(), &["report", record.to_str().unwrap()]);
        assert_refused(&report, "attempts.jsonl is damaged: line 2", kind);
        assert_eq!(report.status.code(), out.status.code(), "{kind}: one exit code for one damage");
    }
}

#[test]
fn a_resume_whose_target_cannot_start_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let script = own_copy(dir.path(), "flaky-every.sh");
    let script = script.to_str().unwrap();
    let hunts: [(&str, Vec<&str>); 2] = [
        ("sweep", vec!["sweep", "--profiles", "default", "--runs", "6", "--record", "sweep", "--", script, "2"]),
        ("matrix", vec!["matrix", "-D", "X=a,b", "--runs", "3", "--record", "matrix", "--", script, "2"]),
    ];
    for (kind, args) in &hunts {
        let run = run_in(dir.path(), args);
        assert_eq!(run.status.code(), Some(1), "{kind}: {}", String::from_utf8_lossy(&run.stderr));
        // As a killed hunt leaves it: attempts left to run, the last line cut, the summary of
        // what ran.
        cut_after(&dir.path().join(kind), 2);
    }
    for (mode, says) in [(0o644, "permission denied"), (0, "no such file")] {
        if mode == 0 {
            std::fs::remove_file(script).unwrap();
        } else {
            std::fs::set_permissions(script, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        for (kind, _) in &hunts {
            let record = dir.path().join(kind);
            let before = tree(&record);
            let out = run_in(dir.path(), &[kind, "--resume", record.to_str().unwrap()]);
            let what = format!("{kind}, script {says}");
            assert_eq!(out.status.code(), Some(2), "{what}: {}", String::from_utf8_lossy(&out.stderr));
            assert!(String::from_utf8_lossy(&out.stderr).contains(says), "{what}");
            assert_unchanged(&before, &record, &what);
        }
    }
}

/// A fire record as a hunt killed during its second level leaves it: the level's runs are in
/// the attempts file, its report is not.
fn fire_record_cut_in_its_second_level(dir: &Path, target: &[&str], state: Option<&Path>) -> PathBuf {
    let mut args = vec!["fire", "--quiet", "--record", "fire", "--ladder", "2x4,2x6"];
    if let Some(state) = state {
        args.extend(["--state", state.to_str().unwrap()]);
    }
    args.push("--");
    args.extend(target);
    let run = run_in(dir, &args);
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    let record = dir.join("fire");
    let levels = record.join("levels.jsonl");
    let text = std::fs::read_to_string(&levels).unwrap();
    let kept: Vec<&str> = text.lines().filter(|l| !l.contains("\"cell\":\"2x6\"")).collect();
    assert_eq!(kept.len(), 3, "{text}");
    std::fs::write(&levels, kept.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    std::fs::remove_file(record.join("summary.json")).unwrap();
    // The summary the killed hunt would not have written stands for the live run's analysis.
    let report = run_in(dir, &["report", "fire", "--format", "json", "--output", "fire/summary.json"]);
    assert_eq!(report.status.code(), Some(0), "{}", String::from_utf8_lossy(&report.stderr));
    record
}

#[test]
fn a_fire_resume_refused_before_its_first_run_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(state.join("events.log"), "").unwrap();
    let script = dir.path().join("append.sh");
    std::fs::write(&script, "#!/bin/sh\ntest -e events.log\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let record = fire_record_cut_in_its_second_level(dir.path(), &[script.to_str().unwrap()], Some(&state));

    // A state that cannot be copied any more: a link to outside it.
    std::os::unix::fs::symlink("/etc/hostname", state.join("outside")).unwrap();
    let before = tree(&record);
    let out = run_in(dir.path(), &["fire", "--resume", "fire"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("outside"), "{}", String::from_utf8_lossy(&out.stderr));
    assert_unchanged(&before, &record, "fire, a state that cannot be copied");
    std::fs::remove_file(state.join("outside")).unwrap();

    // A target that cannot start.
    std::fs::remove_file(&script).unwrap();
    let out = run_in(dir.path(), &["fire", "--resume", "fire"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such file"), "{}", String::from_utf8_lossy(&out.stderr));
    assert_unchanged(&before, &record, "fire, a target that cannot start");

    // A damaged attempts file.
    damage_a_middle_line(&record);
    let before = tree(&record);
    let out = run_in(dir.path(), &["fire", "--resume", "fire"]);
    assert_refused(&out, "attempts.jsonl is damaged: line 2", "fire, a damaged attempts file");
    assert_unchanged(&before, &record, "fire, a damaged attempts file");
}

#[test]
fn a_fire_resume_accepted_still_runs_the_cut_level_again() {
    let dir = tempfile::tempdir().unwrap();
    let record = fire_record_cut_in_its_second_level(dir.path(), &["true"], None);
    let out = run_in(dir.path(), &["fire", "--quiet", "--json", "--resume", "fire"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let attempts = crate::harness::attempts_in(&record);
    let per_cell = |cell: &str| attempts.iter().filter(|a| a["cell"] == cell).count();
    assert_eq!((per_cell("2x4"), per_cell("reference-6"), per_cell("2x6")), (4, 6, 6), "the cut level ran once more");
    assert_eq!(std::fs::read_to_string(record.join("levels.jsonl")).unwrap().lines().count(), 4);
}

#[test]
fn a_resume_of_another_kind_or_a_damaged_manifest_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let flaky = fixture("flaky-every.sh");
    let run = run_in(
        dir.path(),
        &["sweep", "--profiles", "default", "--runs", "4", "--record", "rec", "--", flaky.to_str().unwrap(), "2"],
    );
    assert_eq!(run.status.code(), Some(1));
    let record = dir.path().join("rec");
    cut_after(&record, 2);
    let before = tree(&record);
    let out = run_in(dir.path(), &["matrix", "--resume", "rec"]);
    assert_refused(&out, "holds a sweep record", "matrix --resume of a sweep");
    assert_unchanged(&before, &record, "matrix --resume of a sweep");
    let manifest = record.join("manifest.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, text.replace("\"timeout_seconds\": 600.0", "\"timeout_seconds\": -1.0")).unwrap();
    let before = tree(&record);
    let out = run_in(dir.path(), &["sweep", "--resume", "rec"]);
    assert_refused(&out, "timeout", "a damaged plan");
    assert_unchanged(&before, &record, "a damaged plan");
}

/// A sweep record in `dir/NAME` (`--shard` when given).
fn sweep_record(dir: &Path, name: &str, shard: Option<&str>) -> PathBuf {
    let flaky = fixture("flaky-every.sh");
    let mut args = vec!["sweep", "--profiles", "default", "--runs", "6", "--seed", "7", "--record", name];
    if let Some(shard) = shard {
        args.extend(["--shard", shard]);
    }
    args.extend(["--", flaky.to_str().unwrap(), "3"]);
    let run = run_in(dir, &args);
    assert!(matches!(run.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&run.stderr));
    dir.join(name)
}

#[test]
fn an_attempt_recorded_twice_is_damage_for_report_merge_and_resume() {
    let dir = tempfile::tempdir().unwrap();
    let a = sweep_record(dir.path(), "a", Some("1/2"));
    let b = sweep_record(dir.path(), "b", Some("2/2"));
    // Shard 1's second attempt appended again, as a copy of the line.
    let path = a.join("attempts.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let second = text.lines().nth(1).unwrap().to_owned();
    std::fs::write(&path, format!("{text}{second}\n")).unwrap();
    let before = tree(&a);
    let says = "attempts.jsonl is damaged: line 4: attempt 2 is recorded a second time";
    assert_refused(&run_in(dir.path(), &["report", "a"]), says, "report");
    assert_refused(&run_in(dir.path(), &["merge", "a", "b", "--into", "m"]), says, "merge");
    assert!(!dir.path().join("m").exists(), "a refused merge writes nothing");
    assert_refused(&run_in(dir.path(), &["sweep", "--resume", "a"]), says, "--resume");
    assert_unchanged(&before, &a, "a record that repeats an attempt");

    // The same attempt in two shards: a copy of one shard's line in the other's file.
    std::fs::write(&path, &text).unwrap();
    let b_path = b.join("attempts.jsonl");
    let b_text = std::fs::read_to_string(&b_path).unwrap();
    std::fs::write(&b_path, format!("{b_text}{second}\n")).unwrap();
    let out = run_in(dir.path(), &["merge", "a", "b", "--into", "m"]);
    assert_refused(&out, "both hold attempt 2", "merge of overlapping shards");
    assert!(!dir.path().join("m").exists(), "a refused merge writes nothing");
}

#[test]
fn a_record_without_its_attempts_file_is_damage_for_report_merge_and_resume() {
    let dir = tempfile::tempdir().unwrap();
    let a = sweep_record(dir.path(), "a", Some("1/2"));
    sweep_record(dir.path(), "b", Some("2/2"));
    std::fs::remove_file(a.join("attempts.jsonl")).unwrap();
    let before = tree(&a);
    let says = "attempts.jsonl is damaged: the file is missing";
    assert_refused(&run_in(dir.path(), &["report", "a"]), says, "report");
    assert_refused(&run_in(dir.path(), &["merge", "a", "b", "--into", "m"]), says, "merge");
    assert!(!dir.path().join("m").exists(), "a refused merge writes nothing");
    let resume = run_in(dir.path(), &["sweep", "--resume", "a"]);
    assert_refused(&resume, says, "--resume");
    assert_unchanged(&before, &a, "a record without its attempts file");
}
