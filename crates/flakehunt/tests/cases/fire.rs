//! End-to-end tests of `flakehunt fire` against the fixtures in `fixtures/fire/`: broken
//! operations are rejected with the right verdict and findings, their correct versions are
//! accepted at every level, the user's state is never modified, bad input is one line and
//! exit 2, and no process outlives a hunt.
//!
//! The broken fixtures wait inside their critical section until another run got there too
//! (`fixtures/fire/meet.sh`, through a file outside the state), so concurrent runs collide on
//! any machine; the correct ones are run several times, because a false alarm must never happen.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::harness::{flakehunt, is_gone};
use serde_json::Value;

/// Longest a fire test waits for a run to start or end.
const FIRE_POLL: std::time::Duration = std::time::Duration::from_secs(120);

/// A finished `flakehunt fire --json` run.
struct Fired {
    code: i32,
    summary: Value,
    stderr: String,
    record: PathBuf,
}

/// Runs `flakehunt fire --json --record <tmp>/record ARGS`, with the broken fixtures' meeting
/// files in `<tmp>`.
fn fire(tmp: &Path, args: &[&str]) -> Fired {
    let record = tmp.join("record");
    let out = flakehunt()
        .current_dir(tmp)
        .env("FIXTURE_MEET", tmp.join("meet"))
        .args(["fire", "--json", "--quiet", "--record"])
        .arg(&record)
        .args(args)
        .output();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let summary =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("no JSON summary ({e}); stderr:\n{stderr}"));
    Fired { code: out.status.code().unwrap_or(-1), summary, stderr, record }
}

/// Every file and directory under `dir` with its mode and content, to prove a tree untouched.
fn tree(dir: &Path) -> BTreeMap<PathBuf, (u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let content = if meta.is_dir() {
                stack.push(path.clone());
                Vec::new()
            } else {
                std::fs::read(&path).unwrap()
            };
            out.insert(path.strip_prefix(dir).unwrap().to_owned(), (meta.permissions().mode(), content));
        }
    }
    out
}

/// A state directory holding `app.db` with an empty `events(n)` table, and a note file.
fn sqlite_state(tmp: &Path) -> PathBuf {
    let state = tmp.join("state");
    std::fs::create_dir(&state).unwrap();
    let conn = rusqlite_free_create(&state.join("app.db"));
    assert!(conn, "python3 could not create the database");
    std::fs::write(state.join("README"), "the app's state\n").unwrap();
    state
}

/// Creates an SQLite database with python3 (the test crate does not link SQLite).
fn rusqlite_free_create(path: &Path) -> bool {
    std::process::Command::new("python3")
        .args([
            "-c",
            "import sqlite3, sys; d = sqlite3.connect(sys.argv[1]); d.execute('CREATE TABLE events (n INTEGER NOT NULL)'); d.commit()",
        ])
        .arg(path)
        .status()
        .unwrap()
        .success()
}

fn level(summary: &Value, index: usize) -> &Value {
    &summary["levels"][index]
}

fn findings_of<'a>(level: &'a Value, kind: &str) -> Vec<&'a Value> {
    level["findings"].as_array().unwrap().iter().filter(|f| f["kind"] == kind).collect()
}

/// The summary recomputed from the record alone equals the one the live run printed.
fn assert_recomputable(fired: &Fired) {
    let record = flakehunt_core::record::Record::open(&fired.record).unwrap();
    let again = flakehunt_core::kind::summarize(&record).unwrap();
    // Compared as parsed text, as the live run's was: serde_json's default float parsing does
    // not always round-trip to the same f64 as `to_value` keeps.
    let again: Value = serde_json::from_str(&serde_json::to_string(&again).unwrap()).unwrap();
    assert_eq!(again, fired.summary);
    let stored: Value =
        serde_json::from_str(&std::fs::read_to_string(fired.record.join("summary.json")).unwrap()).unwrap();
    assert_eq!(stored, fired.summary);
    // The document reads back into the library's type, fire part included.
    let typed: flakehunt_core::analysis::Summary = serde_json::from_value(stored).unwrap();
    assert!(typed.fire.is_some_and(|f| !f.levels.is_empty()));
}

#[test]
fn unlocked_counter_is_silent_corruption_with_lost_updates() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(state.join("counter"), "0\n").unwrap();
    let before = tree(&state);
    let check = r#"test "$(cat counter)" -eq "$FLAKEHUNT_RUNS""#;
    let fired = fire(
        tmp.path(),
        &[
            "--state",
            "state",
            "--ladder",
            "2x6,4x12",
            "--check",
            check,
            "--",
            &crate::harness::fixture_arg("fire/counter.sh"),
            "broken",
        ],
    );
    assert_eq!(fired.code, 1, "{}", fired.stderr);
    let s = &fired.summary;
    assert_eq!(s["kind"], "fire");
    assert_eq!(s["verdict"], "reject");
    assert_eq!(s["reference"], serde_json::json!({"runs": 6, "failures": 0}));
    // Stopped at the first rejected level.
    assert_eq!(s["levels"].as_array().unwrap().len(), 1);
    assert_eq!(s["stopped_at"], "2x6");
    let l = level(s, 0);
    assert_eq!(l["workers"], 2);
    assert_eq!(l["runs"], 6);
    assert_eq!(l["failures"], 0);
    assert_eq!(l["state_differs"], true);
    assert_eq!(l["verdict"], "reject-silent-corruption");
    let lost = findings_of(l, "lost");
    assert_eq!(lost.len(), 1, "{l}");
    assert_eq!(lost[0]["path"], "counter");
    assert!(lost[0]["detail"].as_str().unwrap().starts_with("\"6\" (found"), "{}", lost[0]);
    let check_failed = findings_of(l, "check-failed");
    assert_eq!(check_failed.len(), 1, "{l}");
    assert!(fired.stderr.contains("SILENT CORRUPTION"), "{}", fired.stderr);
    assert_eq!(tree(&state), before, "the original state was modified");

    // The record: levels, per-worker logs, attempts with their level and worker.
    let rec = &fired.record;
    let levels = std::fs::read_to_string(rec.join("levels.jsonl")).unwrap();
    assert_eq!(levels.lines().count(), 2);
    for worker in 0..2 {
        let log = std::fs::read_to_string(rec.join(format!("logs/worker-{worker}.log"))).unwrap();
        assert!(log.lines().any(|l| l.contains(" 2x6 attempt ") && l.contains(" exit 0 ")), "{log}");
    }
    let attempts = std::fs::read_to_string(rec.join("attempts.jsonl")).unwrap();
    let attempts: Vec<Value> = attempts.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(attempts.len(), 12);
    assert!(attempts.iter().filter(|a| a["cell"] == "reference-6").all(|a| a["level"] == 0 && a["worker"] == 0));
    let workers: std::collections::BTreeSet<u64> =
        attempts.iter().filter(|a| a["level"] == 1).map(|a| a["worker"].as_u64().unwrap()).collect();
    assert_eq!(workers, [0, 1].into());
    assert!(!rec.join("sandboxes").exists(), "sandboxes are removed without --keep");
    assert_recomputable(&fired);
}

#[test]
fn chunked_appends_tear_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let fired = fire(
        tmp.path(),
        &[
            "--ladder",
            "2x6",
            "--trace-tokens",
            "--keep",
            "--",
            &crate::harness::fixture_arg("fire/append.sh"),
            "chunked",
        ],
    );
    assert_eq!(fired.code, 1, "{}", fired.stderr);
    let l = level(&fired.summary, 0);
    assert_eq!(l["verdict"], "reject-silent-corruption");
    let torn = findings_of(l, "torn");
    assert!(torn.iter().any(|f| f["path"] == "events.log"), "{l}");
    // The tokens of runs whose lines were interleaved are no longer whole where they belong.
    assert!(l["sandbox"].as_str().is_some_and(|s| fired.record.join(s).join("events.log").exists()), "{l}");
    assert_recomputable(&fired);
}

#[test]
fn select_max_then_insert_duplicates_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let state = sqlite_state(tmp.path());
    let before = tree(&state);
    let fired = fire(
        tmp.path(),
        &["--state", "state", "--ladder", "2x6", "--", &crate::harness::fixture_arg("fire/sqlite_next.py"), "broken"],
    );
    assert_eq!(fired.code, 1, "{}", fired.stderr);
    let l = level(&fired.summary, 0);
    assert_eq!(l["verdict"], "reject-silent-corruption");
    assert_eq!(l["failures"], 0);
    let duplicated = findings_of(l, "duplicated");
    assert_eq!(duplicated.len(), 1, "{l}");
    assert_eq!(duplicated[0]["path"], "app.db:events");
    assert!(!findings_of(l, "lost").is_empty(), "{l}");
    assert_eq!(tree(&state), before, "the original state was modified");
}

#[test]
fn writer_without_busy_timeout_cannot_handle_load() {
    let tmp = tempfile::tempdir().unwrap();
    let fired =
        fire(tmp.path(), &["--ladder", "2x6", "--", &crate::harness::fixture_arg("fire/sqlite_config.py"), "nowait"]);
    assert_eq!(fired.code, 1, "{}", fired.stderr);
    let s = &fired.summary;
    assert_eq!(s["reference"]["failures"], 0);
    let l = level(s, 0);
    assert_eq!(l["verdict"], "reject-load");
    assert_eq!(l["state_differs"], false);
    let failures = l["failures"].as_u64().unwrap();
    assert!((1..6).contains(&failures), "{l}");
    let failed = findings_of(l, "failed-runs");
    assert_eq!(failed.iter().map(|f| f["count"].as_u64().unwrap()).sum::<u64>(), failures);
    assert!(failed[0]["detail"].as_str().unwrap().contains("database is locked"), "{l}");
    assert_recomputable(&fired);
}

/// Runs a correct fixture three times over a two-level ladder: every level must be accepted
/// every time. Both levels have 8 runs, so they share one sequential reference: the suite stays
/// fast on a loaded machine.
fn assert_always_accepted(args: &[&str], state: Option<&Path>) {
    for round in 0..3 {
        let tmp = tempfile::tempdir().unwrap();
        let mut all = vec!["--ladder", "2x8,4x8"];
        let copied;
        if let Some(state) = state {
            copied = tmp.path().join("state");
            std::fs::create_dir(&copied).unwrap();
            for entry in std::fs::read_dir(state).unwrap() {
                let entry = entry.unwrap();
                std::fs::copy(entry.path(), copied.join(entry.file_name())).unwrap();
            }
            all.extend(["--state", "state"]);
        }
        all.extend(args);
        let fired = fire(tmp.path(), &all);
        let s = &fired.summary;
        assert_eq!(fired.code, 0, "round {round}: {}\n{s}", fired.stderr);
        assert_eq!(s["verdict"], "accept");
        let levels = s["levels"].as_array().unwrap();
        assert_eq!(levels.len(), 2);
        for l in levels {
            assert_eq!(l["verdict"], "accept", "round {round}: {l}");
            assert_eq!(l["findings"], serde_json::json!([]));
        }
    }
}

#[test]
fn locked_counter_is_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("counter"), "0\n").unwrap();
    let check = r#"test "$(cat counter)" -eq "$FLAKEHUNT_RUNS""#;
    assert_always_accepted(
        &["--check", check, "--", &crate::harness::fixture_arg("fire/counter.sh"), "locked"],
        Some(tmp.path()),
    );
}

#[test]
fn single_write_appends_are_accepted_with_their_tokens() {
    assert_always_accepted(&["--trace-tokens", "--", &crate::harness::fixture_arg("fire/append.sh"), "atomic"], None);
}

#[test]
fn one_immediate_transaction_is_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let state = sqlite_state(tmp.path());
    assert_always_accepted(&["--", &crate::harness::fixture_arg("fire/sqlite_next.py"), "tx"], Some(&state));
}

#[test]
fn writer_with_busy_timeout_is_accepted() {
    assert_always_accepted(&["--", &crate::harness::fixture_arg("fire/sqlite_config.py"), "wait"], None);
}

#[test]
fn leaked_processes_are_findings_and_do_not_outlive_the_hunt() {
    let tmp = tempfile::tempdir().unwrap();
    let pids = tmp.path().join("pids");
    let script = format!("sleep 300 >/dev/null 2>&1 & echo $! >> {}; echo done >> out.log", pids.display());
    let fired = fire(tmp.path(), &["--ladder", "2x4", "--shell", &script]);
    assert_eq!(fired.code, 1, "{}", fired.stderr);
    let l = level(&fired.summary, 0);
    let leak = findings_of(l, "leak");
    assert_eq!(leak.len(), 1, "{l}");
    assert_eq!(leak[0]["count"], 4);
    let pids = std::fs::read_to_string(&pids).unwrap();
    assert_eq!(pids.lines().count(), 8, "4 reference runs and 4 level runs");
    for pid in pids.lines() {
        // Dead, or a zombie waiting for a reaper that is not flakehunt any more.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit(')').next().unwrap_or("").split_whitespace().next().unwrap_or("X");
        assert!(stat.is_empty() || state == "Z" || state == "X", "process {pid} outlived the hunt: {stat}");
    }
}

#[test]
fn bad_input_is_one_line_and_exit_2_and_touches_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = tmp.path().join("fake");
    std::fs::create_dir(&fake).unwrap();
    std::fs::write(fake.join("app.db"), "not a database at all, just text\n").unwrap();
    std::fs::write(tmp.path().join("file"), "x").unwrap();
    let before = tree(&fake);
    let cases: [(&[&str], &str); 6] = [
        (&["--state", "missing", "--", "true"], "missing"),
        (&["--state", "file", "--", "true"], "not a directory"),
        (&["--ladder", "2x", "--", "true"], "invalid ladder level '2x'"),
        (&["--ladder", "8x4", "--", "true"], "more workers than runs"),
        (&["--ignore", "(unclosed", "--", "true"], "invalid --ignore regex"),
        (&["--state", "fake", "--", "true"], "is named like an SQLite database but is not one"),
    ];
    for (args, expected) in cases {
        let out = flakehunt().current_dir(tmp.path()).args(["fire", "--record", "record"]).args(args).output();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("flakehunt: error: ") && stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!tmp.path().join("record").exists(), "{args:?} left a record behind");
    }
    assert_eq!(tree(&fake), before);
    // A record inside the state would modify it.
    let out = flakehunt().current_dir(&fake).args(["fire", "--state", ".", "--", "true"]).output();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("inside --state"));
    assert_eq!(tree(&fake), before);
}

#[test]
fn ctrl_c_stops_the_ladder_and_leaves_no_process() {
    let tmp = tempfile::tempdir().unwrap();
    let pids = tmp.path().join("pids");
    let script = format!("echo $$ >> {}; exec sleep 300", pids.display());
    let child = flakehunt()
        .current_dir(tmp.path())
        .args(["fire", "--quiet", "--json", "--record", "record", "--ladder", "2x4", "--shell", &script])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    // Wait for the first run to be under way (a condition, not a guess at a duration).
    crate::harness::poll_until("the first run to start", FIRE_POLL, || {
        std::fs::read_to_string(&pids).is_ok_and(|p| p.lines().count() > 0)
    });
    // SAFETY: kill(2) on a child we spawned and have not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["complete"], false);
    assert_eq!(summary["levels"], serde_json::json!([]));
    for pid in std::fs::read_to_string(&pids).unwrap().lines() {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit(')').next().unwrap_or("").split_whitespace().next().unwrap_or("X");
        assert!(stat.is_empty() || state == "Z" || state == "X", "run {pid} outlived the hunt: {stat}");
    }
    assert!(!tmp.path().join("record/sandboxes").exists(), "sandboxes are removed on interruption");
}

#[test]
fn a_killed_fire_hunt_resumes_from_the_level_that_was_cut_short() {
    let tmp = tempfile::tempdir().unwrap();
    let (pids, flag) = (tmp.path().join("pids"), tmp.path().join("hang"));
    std::fs::write(&flag, "").unwrap();
    // Runs of the second level hang while the flag file exists; every run appends one line.
    let script = format!(
        r#"echo run >> log; if [ "$FLAKEHUNT_CELL" = 2x6 ] && [ -e {flag} ]; then echo $$ >> {pids}; exec sleep 300; fi"#,
        flag = flag.display(),
        pids = pids.display()
    );
    let mut child = flakehunt()
        .current_dir(tmp.path())
        .args(["fire", "--quiet", "--record", "record", "--ladder", "2x4,2x6", "--shell", &script])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    crate::harness::poll_until("the second level to start", FIRE_POLL, || {
        std::fs::read_to_string(&pids).is_ok_and(|p| p.lines().count() > 0)
    });
    child.kill().unwrap();
    child.wait().unwrap();
    // The watchdog ends the hanging runs of the killed hunt.
    crate::harness::poll_until("the watchdog to end the killed hunt's runs", FIRE_POLL, || {
        std::fs::read_to_string(&pids).unwrap().lines().all(is_gone)
    });
    let record = tmp.path().join("record");
    let levels_before = std::fs::read_to_string(record.join("levels.jsonl")).unwrap();
    assert_eq!(levels_before.lines().count(), 3, "reference-4, 2x4 and reference-6 finished: {levels_before}");

    std::fs::remove_file(&flag).unwrap();
    let out = flakehunt().current_dir(tmp.path()).args(["fire", "--quiet", "--json", "--resume", "record"]).output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["complete"], true, "{summary:#}");
    assert_eq!(level(&summary, 0)["verdict"], "accept", "{summary:#}");
    assert_eq!(level(&summary, 1)["verdict"], "accept", "{summary:#}");
    // Each group's runs are in the record once: the cut level and the reference it compares
    // with ran again, their partial attempts gone.
    let attempts: Vec<Value> = std::fs::read_to_string(record.join("attempts.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut per_cell: BTreeMap<String, u64> = BTreeMap::new();
    for a in &attempts {
        *per_cell.entry(a["cell"].as_str().unwrap().to_owned()).or_default() += 1;
    }
    let expected: BTreeMap<String, u64> =
        [("reference-4", 4), ("2x4", 4), ("reference-6", 6), ("2x6", 6)].map(|(c, n)| (c.to_owned(), n)).into();
    assert_eq!(per_cell, expected);
    let mut ids: Vec<u64> = attempts.iter().map(|a| a["id"].as_u64().unwrap()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), attempts.len(), "attempt ids are unique");
    let levels = std::fs::read_to_string(record.join("levels.jsonl")).unwrap();
    assert_eq!(levels.lines().count(), 4, "{levels}");
    assert!(!record.join("sandboxes").exists(), "no sandbox of the killed hunt is left");
    // What the live run printed is what `report` computes from the record.
    assert_recomputable(&Fired { code: 0, summary, stderr: stderr.into_owned(), record });
}

#[test]
fn resume_takes_the_options_from_the_record() {
    let out = flakehunt().args(["fire", "--resume", "somewhere", "--ladder", "2x4"]).output();
    assert_eq!(out.status.code(), Some(2));
    let tmp = tempfile::tempdir().unwrap();
    let out = flakehunt().args(["fire", "--resume"]).arg(tmp.path()).output();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}
