//! `--slurm SHARDS`: submit a hunt as one Slurm job array, follow it, merge its shards into the
//! record and print the summary a local run prints; and `flakehunt slurm-script`, which prints
//! the batch script instead of submitting it. The script itself comes from
//! `flakehunt_core::dispatch::slurm`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Context;
use flakehunt_core::dispatch::slurm::{script, SlurmJob};
use flakehunt_core::dispatch::ShardedHunt;
use flakehunt_core::plan::Target;
use flakehunt_core::record::{Kind, Merge};

use crate::cli::HuntArgs;
use crate::exit;
use crate::hunt::NewHunt;

/// Options of a hunt that each shard's command line sets itself, or that only the submitter
/// reads; they are taken out of the user's command line, with their values.
const TAKEN_WITH_VALUE: &[&str] = &["--slurm", "--slurm-opt", "--record", "--seed", "--shard", "--resume"];
const TAKEN_FLAGS: &[&str] = &["--json"];

/// Splits a hunt's command line (`[--config F] sweep|matrix OPTIONS [-- CMD]`) into the parts a
/// shard's command line is built from.
pub fn sharded_from_argv(argv: &[String], program: String, shards: u32, seed: u64) -> anyhow::Result<ShardedHunt> {
    let mut i = 0;
    while i < argv.len() && argv[i] != "sweep" && argv[i] != "matrix" {
        i += if argv[i] == "--config" { 2 } else { 1 };
    }
    let Some(kind) = argv.get(i) else {
        return Err(exit::usage("only a sweep or a matrix can be sharded: give `sweep ...` or `matrix ...`"));
    };
    let globals = argv[..i].to_vec();
    let mut options = Vec::new();
    let mut command = Vec::new();
    let mut rest = argv[i + 1..].iter();
    while let Some(arg) = rest.next() {
        if arg == "--" {
            command = rest.cloned().collect();
            break;
        }
        let name = arg.split_once('=').map_or(arg.as_str(), |(n, _)| n);
        if TAKEN_WITH_VALUE.contains(&name) {
            if !arg.contains('=') {
                rest.next();
            }
        } else if !TAKEN_FLAGS.contains(&arg.as_str()) {
            options.push(arg.clone());
        }
    }
    let version = format!("flakehunt {}", env!("CARGO_PKG_VERSION"));
    let hunt = ShardedHunt { program, version, globals, kind: kind.clone(), options, command, shards, seed };
    // Every generated file (batch script, workflow, Job) is built from this: none may hold a secret.
    match hunt.secret_refusal() {
        Some(refusal) => Err(exit::usage(refusal)),
        None => Ok(hunt),
    }
}

/// `flakehunt slurm-script HUNT...`: the hunt parsed as if run with `--slurm`, printing the
/// script instead of submitting it.
pub fn print_script(hunt: &[String], config: Option<&Path>) -> anyhow::Result<i32> {
    let mut argv = vec!["flakehunt".to_owned()];
    if let Some(c) = config {
        argv.extend(["--config".to_owned(), c.display().to_string()]);
    }
    argv.extend(hunt.iter().cloned());
    let mut cli = crate::cli::parse_nested(argv.clone())?;
    let args = match &mut cli.command {
        crate::cli::Command::Sweep(a) => &mut a.hunt,
        crate::cli::Command::Matrix(a) => &mut a.hunt,
        _ => {
            return Err(exit::usage(
                "slurm-script takes a sweep or a matrix: `flakehunt slurm-script sweep --slurm 8 ...`",
            ))
        }
    };
    if args.slurm.is_none() {
        return Err(exit::usage("give the number of shards: `flakehunt slurm-script sweep --slurm 8 ...`"));
    }
    args.slurm_print = true;
    crate::dispatch(&cli)
}

/// The hunt's own command line, from this process's arguments (`slurm-script` taken out).
fn own_argv() -> Vec<String> {
    let mut argv: Vec<String> = std::env::args().skip(1).collect();
    if let Some(pos) = argv.iter().position(|a| a == "slurm-script") {
        argv.remove(pos);
    }
    argv
}

/// Runs a hunt as a Slurm job array (or prints its script). Returns the exit code.
pub fn run(
    args: &HuntArgs,
    shards: u32,
    kind: Kind,
    cell_header: &str,
    new: impl FnOnce(&Target) -> anyhow::Result<NewHunt>,
) -> anyhow::Result<i32> {
    if shards == 0 {
        return Err(exit::usage("--slurm needs at least 1 shard"));
    }
    // Check everything a shard would refuse before anything reaches the queue.
    let target = crate::hunt::target_of(args, kind)?;
    crate::hunt::settings_of(args)?;
    let hunt = new(&target)?;
    let seed = args.seed.unwrap_or_else(crate::hunt::random_seed);
    let program = std::env::current_exe().context("cannot find flakehunt's own executable")?;
    let mut sharded = sharded_from_argv(&own_argv(), program.display().to_string(), shards, seed)?;
    // Without --profiles each machine would pick the profiles that apply on it, and shards
    // of different plans cannot be merged: pin the list chosen here.
    if kind == Kind::Sweep && !sharded.options.iter().any(|o| o == "--profiles" || o.starts_with("--profiles=")) {
        let names: Vec<&str> = hunt.cells.iter().map(|c| c.name.as_str()).collect();
        sharded.options.extend(["--profiles".to_owned(), names.join(",")]);
    }
    let cwd = std::env::current_dir()?;
    let dir = cwd.join(args.record.clone().unwrap_or_else(|| crate::hunt::default_record_dir(kind)));
    let options: Vec<String> = args.slurm_opt.iter().flat_map(|o| o.split_whitespace().map(str::to_owned)).collect();
    let text = script(&sharded, &SlurmJob { root: &dir, chdir: &cwd, options: &options })
        .map_err(|e| exit::usage(e.to_string()))?;
    if args.slurm_print {
        print!("{text}");
        return Ok(exit::OK);
    }

    let new_dir = flakehunt_core::record::check_new(&dir).map_err(exit::record)?;
    let name = dir.file_name().map_or_else(|| "flakehunt".into(), |n| n.to_string_lossy().into_owned());
    let script_path = dir.parent().unwrap_or(&dir).join(format!("{name}.sbatch"));
    if script_path.exists() {
        return Err(exit::usage(format!(
            "{} exists: the batch script would replace it (move it, or choose another --record directory)",
            script_path.display()
        )));
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // `create_new`: a file that appeared since the check is not overwritten either.
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&script_path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()));
    if let Err(e) = written {
        new_dir.discard(&[]);
        return Err(anyhow::Error::from(e).context(format!("cannot write {}", script_path.display())));
    }

    let job = submit(&script_path, shards, &options)?;
    if !args.quiet {
        eprintln!(
            "slurm: submitted job array {job} ({shards} tasks, seed {seed}); script {}; logs {}/slurm-{job}_*.out",
            script_path.display(),
            dir.display()
        );
    }
    let states = follow(&job, &dir, shards, args.quiet);
    finish(&job, &dir, &script_path, shards, &states, args, cell_header)
}

/// `sbatch --parsable --array=0-(N-1) OPTIONS SCRIPT`; returns the job id.
fn submit(script: &Path, shards: u32, options: &[String]) -> anyhow::Result<String> {
    let out = Command::new("sbatch")
        .arg("--parsable")
        .arg(format!("--array=0-{}", shards - 1))
        .args(options)
        .arg(script)
        .output()
        .map_err(|e| {
            exit::Refused(format!("cannot run sbatch ({e}): --slurm needs the Slurm client commands on PATH"))
        })?;
    if !out.status.success() {
        return Err(
            exit::Refused(format!("sbatch refused the job: {}", String::from_utf8_lossy(&out.stderr).trim())).into()
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let id = text.trim().split(';').next().unwrap_or_default().to_owned();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
        return Err(exit::Refused(format!("sbatch gave no job id (it said '{}')", text.trim())).into());
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

/// Polls until the array has left the queue, showing progress; returns each task's exit code
/// as its shard recorded it (a task without one never finished its shard).
fn follow(job: &str, dir: &Path, shards: u32, quiet: bool) -> BTreeMap<u32, i32> {
    let interval = poll_interval();
    let mut last = String::new();
    let mut warned = false;
    let mut left_at: Option<Instant> = None;
    loop {
        let q = queue(job);
        let done = exits(dir, shards);
        if let Some(q) = &q {
            let pending = q.values().filter(|s| s.as_str() == "PD").count();
            let running = q.len() - pending;
            let line = format!(
                "slurm job {job}: {pending} pending, {running} running, {} done; {} attempts recorded",
                done.len(),
                attempts_recorded(dir, shards)
            );
            if !quiet && line != last {
                eprintln!("{line}");
                last = line;
            }
            if q.is_empty() {
                // The queue is empty; a shared file system may show the last exit files a little
                // later than the scheduler forgets the tasks, so give them a moment.
                let since = *left_at.get_or_insert_with(Instant::now);
                if done.len() as u32 == shards || since.elapsed() > Duration::from_secs(30) {
                    return done;
                }
            }
        } else if !warned {
            eprintln!("flakehunt: warning: squeue does not answer; still waiting for job {job}");
            warned = true;
        }
        std::thread::sleep(interval);
    }
}

/// What Slurm says about an array task that did not finish its shard (best effort).
fn task_state(job: &str, task: u32) -> String {
    let out = Command::new("scontrol").args(["-o", "show", "job", &format!("{job}_{task}")]).output();
    let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    text.split_whitespace()
        .find_map(|w| w.strip_prefix("JobState="))
        .map_or_else(|| "state unknown".to_owned(), |s| format!("state {s}"))
}

/// Reports failed tasks, merges the shards that ran into `dir`, prints the summary; the exit
/// code of a local run, except that missing or failed shards never pass as success.
fn finish(
    job: &str,
    dir: &Path,
    script_path: &Path,
    shards: u32,
    exits: &BTreeMap<u32, i32>,
    args: &HuntArgs,
    cell_header: &str,
) -> anyhow::Result<i32> {
    let failed: Vec<u32> = (0..shards).filter(|t| exits.get(t).is_none_or(|&c| c > 1)).collect();
    for &t in &failed {
        let why = match exits.get(&t) {
            Some(code) => format!("flakehunt exited {code}"),
            None => format!("no exit status: cancelled, timed out or killed ({})", task_state(job, t)),
        };
        eprintln!(
            "flakehunt: slurm task {job}_{t} (shard {}/{shards}) failed: {why}; log: {}",
            t + 1,
            dir.join(format!("slurm-{job}_{t}.out")).display()
        );
    }
    let shard_dirs: Vec<PathBuf> =
        (1..=shards).map(|i| dir.join(format!("shard-{i}"))).filter(|d| d.join("manifest.json").exists()).collect();
    if shard_dirs.is_empty() {
        return Err(exit::Refused(format!(
            "no shard of job {job} recorded anything: see the logs in {}",
            dir.display()
        ))
        .into());
    }
    let (merge, summary) = Merge::run_beside_shards(&shard_dirs, dir).map_err(|e| match e {
        flakehunt_core::record::MergeError::Record(r) => exit::record(r),
        other => exit::usage(other.to_string()),
    })?;
    crate::report::append_step_summary(&summary, dir);
    crate::hunt::print_summary(&summary, dir, args.json, cell_header)?;
    let incomplete: Vec<u32> = merge
        .missing
        .iter()
        .copied()
        .chain(failed.iter().map(|t| t + 1))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if incomplete.is_empty() {
        return Ok(summary.exit_code());
    }
    let list: Vec<String> = incomplete.iter().map(|i| format!("{i}/{shards}")).collect();
    let tasks: Vec<String> = incomplete.iter().map(|i| (i - 1).to_string()).collect();
    eprintln!(
        "flakehunt: shards {} did not complete: this record is incomplete. Re-submit them with \
         `sbatch --array={} {}` (each continues its shard's record), then merge with \
         `flakehunt merge {}/shard-*/ --into NEW_DIR`",
        list.join(", "),
        tasks.join(","),
        script_path.display(),
        dir.display()
    );
    // A reproduced failure stands even with shards missing; "nothing reproduced" does not.
    Ok(if summary.exit_code() == exit::OK { exit::REFUSED } else { summary.exit_code() })
}
