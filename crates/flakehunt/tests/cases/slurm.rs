//! A real Slurm: a single-node cluster started by the test (its own `slurm.conf`, state, spool
//! and ports in a temporary directory), a sweep run through it as a job array of 3 tasks, and
//! the merged record compared with a local run of the same plan; then a task cancelled with
//! `scancel`, reported and re-submitted until its shard completes. The daemons are stopped by
//! their pids, also when the test fails. Needs `slurmctld`, `slurmd` and the client commands
//! (Debian: `slurm-wlm`); without them the test fails, it does not skip.

use crate::harness::{slurm_cluster, Invocation};

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use slurm_cluster::{slurm_program, Cluster};

fn fixture() -> PathBuf {
    crate::harness::fixture("flaky-every.sh")
}

/// flakehunt, given the time a job array takes to run through the queue.
fn flakehunt() -> Invocation {
    let mut cmd = crate::harness::flakehunt();
    cmd.timeout(Duration::from_secs(300));
    cmd
}

const SWEEP: &[&str] = &["sweep", "--runs", "9", "--profiles", "default,one-core-native", "--seed", "11"];

/// The parts of a summary that must not depend on how the plan was split.
fn counts(summary: &Value) -> Value {
    let cells: Vec<Value> = summary["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| serde_json::json!([c["name"], c["attempts"], c["failures"], c["outcomes"], c["rate"]]))
        .collect();
    serde_json::json!({
        "attempts": summary["attempts"], "planned": summary["planned"], "failures": summary["failures"],
        "complete": summary["complete"], "verdict": summary["verdict"], "cells": cells
    })
}

fn report_json(dir: &Path) -> Value {
    let out = flakehunt().arg("report").arg(dir).args(["--format", "json"]).output();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_sweep_run_as_a_slurm_job_array_merges_into_the_unsharded_plan() {
    let cluster = Cluster::start();
    // The records must be on a path every node shares; here the only node's temporary directory.
    let work = tempfile::tempdir().unwrap();
    let local = work.path().join("local");
    flakehunt().args(SWEEP).args(["-q", "--record"]).arg(&local).arg("--").arg(fixture()).arg("3").assert().code(1);

    let run = work.path().join("run");
    let out = flakehunt()
        .args(SWEEP)
        .args(["--slurm", "3", "--record"])
        .arg(&run)
        .arg("--")
        .arg(fixture())
        .arg("3")
        .current_dir(work.path())
        .env("SLURM_CONF", &cluster.conf)
        .env("FLAKEHUNT_SLURM_POLL", "200ms")
        .output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "same exit code as the local run\n{stdout}\n{stderr}\n{}", cluster.logs());
    assert!(stderr.contains("slurm: submitted job array"), "{stderr}");
    assert!(stderr.contains("0 pending, 0 running, 3 done; 18 attempts recorded"), "{stderr}");
    assert!(stdout.contains("record: "), "the summary a local run prints: {stdout}");
    assert!(work.path().join("run.sbatch").is_file(), "the batch script beside the record");

    let merge: Value = serde_json::from_str(&std::fs::read_to_string(run.join("merge.json")).unwrap()).unwrap();
    assert_eq!(merge["merged_from"].as_array().unwrap().len(), 3);
    assert_eq!(merge["missing"], serde_json::json!([]));
    assert_eq!(counts(&report_json(&run)), counts(&report_json(&local)));
    for i in 1..=3 {
        let shard = report_json(&run.join(format!("shard-{i}")));
        assert_eq!(shard["attempts"], 6, "shard {i} holds its share of every round");
        assert!(run.join(format!("shard-{i}.snapshot.json")).is_file(), "shard {i}: the snapshot of its node");
    }

    a_cancelled_task_is_reported_and_its_shard_resubmitted(&cluster, work.path());
}

/// Polls `cond` with a generous deadline (never a fixed sleep).
fn poll_until(cluster: &Cluster, what: &str, cond: impl FnMut() -> bool) {
    crate::harness::poll_until_explained(what, Duration::from_secs(180), cond, || format!(":\n{}", cluster.logs()));
}

/// Shard 2's attempts hang while a gate file exists; its task is cancelled with `scancel`. The
/// hunt must name the task, say the record is incomplete and how to re-submit, and leave no
/// process; re-submitting the task (gate gone) continues the shard's record to its plan.
fn a_cancelled_task_is_reported_and_its_shard_resubmitted(cluster: &Cluster, work: &Path) {
    let gate = work.join("gate");
    let pid_file = work.join("hanging");
    std::fs::write(&gate, "").unwrap();
    let script = format!(
        r#"if [ "$SLURM_ARRAY_TASK_ID" = 1 ] && [ -e {gate} ]; then echo $$ > {pid}.tmp && mv {pid}.tmp {pid}; exec sleep 300; fi"#,
        gate = gate.display(),
        pid = pid_file.display()
    );
    let run = work.join("cancelled");
    let stderr_path = work.join("cancelled.stderr");
    let mut hunt = flakehunt()
        .args(["sweep", "--runs", "4", "--profiles", "default", "--seed", "5", "--slurm", "2", "--record"])
        .arg(&run)
        .args(["--shell", &script])
        .current_dir(work)
        .env("SLURM_CONF", &cluster.conf)
        .env("FLAKEHUNT_SLURM_POLL", "200ms")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn();
    poll_until(cluster, "shard 2's attempt to hang", || pid_file.exists());
    let hanging: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    let job = Command::new("squeue").args(["-h", "-o", "%F"]).env("SLURM_CONF", &cluster.conf).output().unwrap();
    let job = String::from_utf8_lossy(&job.stdout).lines().next().expect("the array is queued").trim().to_owned();
    let scancel = Command::new(slurm_program("scancel"))
        .arg(format!("{job}_1"))
        .env("SLURM_CONF", &cluster.conf)
        .status()
        .unwrap();
    assert!(scancel.success());
    let mut code = None;
    poll_until(cluster, "the hunt to end after the cancellation", || {
        code = hunt.try_wait().unwrap().map(|s| s.code());
        code.is_some()
    });
    let stderr = std::fs::read_to_string(&stderr_path).unwrap();
    assert_eq!(code, Some(Some(3)), "nothing reproduced and a shard missing is not a success\n{stderr}");
    assert!(stderr.contains(&format!("slurm task {job}_1 (shard 2/2) failed")), "{stderr}");
    assert!(stderr.contains("shards 2/2 did not complete"), "{stderr}");
    assert!(stderr.contains("sbatch --array=1 "), "{stderr}");
    // Slurm signalled the hanging attempt as well as its flakehunt: that death is the job's
    // end, not a crash of the test, and is not recorded.
    let cut = std::fs::read_to_string(run.join("shard-2/attempts.jsonl")).unwrap_or_default();
    assert!(!cut.contains("\"crash\""), "{cut}");
    poll_until(cluster, "the cancelled task's attempt to end", || {
        std::fs::read_to_string(format!("/proc/{hanging}/stat"))
            .map_or(true, |s| s.rsplit(')').next().unwrap_or("").trim_start().starts_with(['Z', 'X']))
    });

    // Re-submitted with the gate gone, the task continues shard 2's record to its plan.
    std::fs::remove_file(&gate).unwrap();
    let _ = std::fs::remove_file(run.join("shard-2.exit"));
    let resubmit = Command::new(slurm_program("sbatch"))
        .arg("--array=1")
        .arg(work.join("cancelled.sbatch"))
        .env("SLURM_CONF", &cluster.conf)
        .output()
        .unwrap();
    assert!(resubmit.status.success(), "{}", String::from_utf8_lossy(&resubmit.stderr));
    poll_until(cluster, "the re-submitted task to finish", || run.join("shard-2.exit").exists());
    assert_eq!(std::fs::read_to_string(run.join("shard-2.exit")).unwrap().trim(), "0");
    let merged = work.join("cancelled-merged");
    flakehunt()
        .arg("merge")
        .arg(run.join("shard-1"))
        .arg(run.join("shard-2"))
        .arg("--into")
        .arg(&merged)
        .assert()
        .success();
    let summary = report_json(&merged);
    assert_eq!((summary["attempts"].as_u64(), summary["complete"].as_bool()), (Some(4), Some(true)), "{summary:#}");
}
