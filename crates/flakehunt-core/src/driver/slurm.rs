//! `--slurm SHARDS`: submit a hunt as one Slurm job array, follow it, merge its shards into the
//! record and summarise it as a local run does; or (`flakehunt slurm-script`) give the batch
//! script instead of submitting it. The script itself comes from [`crate::dispatch::slurm`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::{HuntEnd, HuntReport, Incomplete};
use crate::dispatch::slurm::{script, SlurmJob};
use crate::events::{Event, EventSink};
use crate::spec::{HuntError, HuntKind, HuntSpec, RecordRequest, SlurmRequest};

/// The batch script of a `--slurm` hunt, its record directory and working directory, after
/// every check a shard would make, so nothing that would be refused reaches the queue.
fn prepare(
    spec: &HuntSpec,
    slurm: &SlurmRequest,
    sink: &mut dyn EventSink,
) -> Result<(String, PathBuf, u64), HuntError> {
    let kind = spec.kind.record_kind();
    if slurm.shards == 0 {
        return Err(HuntError::usage("--slurm needs at least 1 shard"));
    }
    let target = match spec.kind {
        // A suite's shards collect and build on their machines: only its options are checked.
        HuntKind::Suite(_) => {
            crate::kind::suite::prepare::check(spec)?;
            crate::plan::Target::argv(vec!["python3".into()])
        }
        _ => crate::spec::target_from(spec.target.shell.as_deref(), &spec.target.command, kind)?,
    };
    super::prepare::settings_of(spec)?;
    let (cells, _) = super::prepare::cells_of(spec, &target, sink)?;
    let seed = spec.seed.unwrap_or_else(super::random_seed);
    let program = std::env::current_exe().map_err(|e| HuntError::io("cannot find flakehunt's own executable", e))?;
    // Without --profiles each machine would pick the profiles that apply on it, and shards
    // of different plans cannot be merged: pin the list chosen here.
    let mut pinned = spec.clone();
    match &mut pinned.kind {
        HuntKind::Sweep { profiles, .. } => *profiles = cells.iter().map(|c| c.name.clone()).collect(),
        HuntKind::Suite(s) => s.profiles = cells.iter().map(|c| c.name.clone()).collect(),
        _ => {}
    }
    let sharded = pinned.sharded(program.display().to_string(), slurm.shards, seed)?;
    let cwd = std::env::current_dir().map_err(|e| HuntError::io("cannot read the current directory", e))?;
    let record = match &spec.record {
        RecordRequest::New(record) => record.clone(),
        RecordRequest::Resume(_) => return Err(HuntError::usage("--slurm cannot be given with --resume")),
    };
    let dir = cwd.join(record.unwrap_or_else(|| super::default_record_dir(kind)));
    let text = script(&sharded, &SlurmJob { root: &dir, chdir: &cwd, options: &slurm.options })?;
    Ok((text, dir, seed))
}

/// The batch script `--slurm` would submit (`flakehunt slurm-script`).
pub fn script_of(spec: &HuntSpec, sink: &mut dyn EventSink) -> Result<String, HuntError> {
    let slurm = spec
        .slurm
        .as_ref()
        .ok_or_else(|| HuntError::usage("give the number of shards: `flakehunt slurm-script sweep --slurm 8 ...`"))?;
    Ok(prepare(spec, slurm, sink)?.0)
}

/// Runs a hunt as a Slurm job array: submits it, follows it, merges the shards that ran.
pub(super) fn run(spec: &HuntSpec, slurm: &SlurmRequest, sink: &mut dyn EventSink) -> Result<HuntReport, HuntError> {
    let (text, dir, seed) = prepare(spec, slurm, sink)?;
    let shards = slurm.shards;
    let new_dir = crate::record::check_new(&dir)?;
    let name = dir.file_name().map_or_else(|| "flakehunt".into(), |n| n.to_string_lossy().into_owned());
    let script_path = dir.parent().unwrap_or(&dir).join(format!("{name}.sbatch"));
    if script_path.exists() {
        return Err(HuntError::usage(format!(
            "{} exists: the batch script would replace it (move it, or choose another --record directory)",
            script_path.display()
        )));
    }
    std::fs::create_dir_all(&dir).map_err(|e| HuntError::io(format!("cannot create {}", dir.display()), e))?;
    // `create_new`: a file that appeared since the check is not overwritten either.
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&script_path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()));
    if let Err(e) = written {
        new_dir.discard(&[]);
        return Err(HuntError::io(format!("cannot write {}", script_path.display()), e));
    }

    let job = submit(&script_path, shards, &slurm.options)?;
    sink.event(&Event::ShardsSubmitted { job: &job, shards, seed, script: &script_path, dir: &dir })?;
    let states = follow(&job, &dir, shards, sink)?;
    finish(&job, &dir, &script_path, shards, &states, sink)
}

/// `sbatch --parsable --array=0-(N-1) OPTIONS SCRIPT`; returns the job id.
fn submit(script: &Path, shards: u32, options: &[String]) -> Result<String, HuntError> {
    let out = Command::new("sbatch")
        .arg("--parsable")
        .arg(format!("--array=0-{}", shards - 1))
        .args(options)
        .arg(script)
        .output()
        .map_err(|e| {
            HuntError::Refused(format!("cannot run sbatch ({e}): --slurm needs the Slurm client commands on PATH"))
        })?;
    if !out.status.success() {
        return Err(HuntError::Refused(format!(
            "sbatch refused the job: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let id = text.trim().split(';').next().unwrap_or_default().to_owned();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
        return Err(HuntError::Refused(format!("sbatch gave no job id (it said '{}')", text.trim())));
    }
    Ok(id)
}

/// Array task states while the job is queued: task id -> squeue's short state (PD, R, CG...).
/// `None` when squeue cannot answer right now.
fn queue(job: &str) -> Option<BTreeMap<u32, String>> {
    let out = Command::new("squeue").args(["-h", "-r", "-j", job, "-o", "%K %t"]).output().ok()?;
    if !out.status.success() {
        // A job that left the queue long ago is unknown to squeue: it is simply done.
        let err = String::from_utf8_lossy(&out.stderr);
        return err.contains("Invalid job id").then(BTreeMap::new);
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Some(
        text.lines()
            .filter_map(|l| {
                let (task, state) = l.trim().split_once(' ')?;
                Some((task.parse().ok()?, state.trim().to_owned()))
            })
            .collect(),
    )
}

/// The exit code each shard's task left (`shard-<i>.exit`), by task id.
fn exits(dir: &Path, shards: u32) -> BTreeMap<u32, i32> {
    (0..shards)
        .filter_map(|t| {
            let text = std::fs::read_to_string(dir.join(format!("shard-{}.exit", t + 1))).ok()?;
            Some((t, text.trim().parse().ok()?))
        })
        .collect()
}

/// Attempts recorded so far over all shards (complete lines of their attempts.jsonl).
fn attempts_recorded(dir: &Path, shards: u32) -> u64 {
    (1..=shards)
        .filter_map(|i| std::fs::read(dir.join(format!("shard-{i}/attempts.jsonl"))).ok())
        .map(|b| b.iter().filter(|&&c| c == b'\n').count() as u64)
        .sum()
}

fn poll_interval() -> Duration {
    std::env::var("FLAKEHUNT_SLURM_POLL")
        .ok()
        .and_then(|s| humantime::parse_duration(&s).ok())
        .unwrap_or(Duration::from_secs(5))
}

/// Polls until the array has left the queue, telling `sink` of progress; returns each task's
/// exit code as its shard recorded it (a task without one never finished its shard).
fn follow(job: &str, dir: &Path, shards: u32, sink: &mut dyn EventSink) -> Result<BTreeMap<u32, i32>, HuntError> {
    let interval = poll_interval();
    let mut last = None;
    let mut warned = false;
    let mut left_at: Option<Instant> = None;
    loop {
        let q = queue(job);
        let done = exits(dir, shards);
        if let Some(q) = &q {
            let pending = q.values().filter(|s| s.as_str() == "PD").count();
            let running = q.len() - pending;
            let now = (pending, running, done.len(), attempts_recorded(dir, shards));
            if last != Some(now) {
                let (pending, running, done, attempts) = now;
                sink.event(&Event::ShardProgress { job, pending, running, done, attempts })?;
                last = Some(now);
            }
            if q.is_empty() {
                // The queue is empty; a shared file system may show the last exit files a little
                // later than the scheduler forgets the tasks, so give them a moment.
                let since = *left_at.get_or_insert_with(Instant::now);
                if done.len() as u32 == shards || since.elapsed() > Duration::from_secs(30) {
                    return Ok(done);
                }
            }
        } else if !warned {
            sink.event(&Event::QueueSilent { job })?;
            warned = true;
        }
        std::thread::sleep(interval);
    }
}

/// What Slurm says about an array task that did not finish its shard (best effort).
fn task_state(job: &str, task: u32) -> Option<String> {
    let out = Command::new("scontrol").args(["-o", "show", "job", &format!("{job}_{task}")]).output();
    let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    text.split_whitespace().find_map(|w| w.strip_prefix("JobState=")).map(str::to_owned)
}

/// Reports failed tasks and merges the shards that ran into `dir`; missing or failed shards
/// never pass as success.
fn finish(
    job: &str,
    dir: &Path,
    script_path: &Path,
    shards: u32,
    exits: &BTreeMap<u32, i32>,
    sink: &mut dyn EventSink,
) -> Result<HuntReport, HuntError> {
    let failed: Vec<u32> = (0..shards).filter(|t| exits.get(t).is_none_or(|&c| c > 1)).collect();
    for &task in &failed {
        let exit = exits.get(&task).copied();
        let state = if exit.is_none() { task_state(job, task) } else { None };
        let log = dir.join(format!("slurm-{job}_{task}.out"));
        sink.event(&Event::ShardFailed { job, task, shards, exit, state: state.as_deref(), log: &log })?;
    }
    let shard_dirs: Vec<PathBuf> =
        (1..=shards).map(|i| dir.join(format!("shard-{i}"))).filter(|d| d.join("manifest.json").exists()).collect();
    if shard_dirs.is_empty() {
        return Err(HuntError::Refused(format!(
            "no shard of job {job} recorded anything: see the logs in {}",
            dir.display()
        )));
    }
    let (merge, summary) = super::merge::merge_beside_shards(&shard_dirs, dir)?;
    super::step_summary(&summary, dir, sink);
    let missing: Vec<u32> = merge
        .missing
        .iter()
        .copied()
        .chain(failed.iter().map(|t| t + 1))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let end = HuntEnd { incomplete: !missing.is_empty(), ..HuntEnd::of(&summary, false) };
    let incomplete = (!missing.is_empty()).then(|| Incomplete { missing, shards, script: script_path.to_owned() });
    Ok(HuntReport { summary, dir: dir.to_owned(), end, incomplete })
}
