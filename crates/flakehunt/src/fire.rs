//! `flakehunt fire`: run the command concurrently with itself, on an escalating ladder, against
//! sandbox copies of its state, and say whether it loses, tears or corrupts anything.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use flakehunt_core::config::Config;
use flakehunt_core::fire::{
    prepare_resume, reference_cell, FireError, FireOptions, FireRunner, FireSinks, Ladder, Resumed, DEFAULT_LADDER,
    SANDBOXES,
};
use flakehunt_core::plan::{CellSpec, Settings};
use flakehunt_core::record::{Kind, Manifest, Record, Recorder, SUMMARY_FILE};
use flakehunt_core::state::{validate_source, FingerprintError, Normalizer, NormalizerError, SandboxError};

use crate::cli::{parse_bytes, parse_duration};
use crate::display::Display;
use crate::exit;
use crate::hunt::{self, NewHunt, Session};

/// `flakehunt fire`.
#[derive(Debug, Args)]
pub struct FireArgs {
    /// The state the command works on (files, SQLite databases). Never modified: every level runs in its own copy,
    /// as working directory, in FLAKEHUNT_STATE and as {state} in the command (default: an empty directory).
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
    /// Levels to climb, WxR: W workers started together sharing R runs.
    #[arg(long, default_value = DEFAULT_LADDER, value_name = "LIST")]
    pub ladder: String,
    /// Keep climbing after a rejected level.
    #[arg(long)]
    pub all_levels: bool,
    /// An invariant run with `sh -c` in the final state of the reference and of each level (FLAKEHUNT_RUNS is set);
    /// non-zero is a finding. Repeatable.
    #[arg(long = "check", value_name = "CMD")]
    pub checks: Vec<String>,
    /// Mask what matches in text and rows before comparing (pids, timestamps). Repeatable; uuids and long hex are
    /// masked by default.
    #[arg(long, value_name = "REGEX")]
    pub ignore: Vec<String>,
    /// Leave this SQLite column out of the comparison. Repeatable.
    #[arg(long, value_name = "TABLE.COLUMN")]
    pub ignore_column: Vec<String>,
    /// Give every run a unique FLAKEHUNT_TOKEN; each passing run's token must end up in the state exactly once.
    #[arg(long)]
    pub trace_tokens: bool,
    /// Keep the sandboxes in the record (sandboxes/) to inspect them.
    #[arg(long)]
    pub keep: bool,
    /// Copy what a symlink in the state that resolves outside it points to, instead of refusing the state (such a
    /// link is never left pointing at the original; links inside the state are re-pointed into the copy). Also
    /// accepted with --resume.
    #[arg(long)]
    pub follow_outside_links: bool,
    /// Per-run timeout: then SIGTERM to its process group, then SIGKILL after --grace.
    #[arg(long, default_value = "10m", value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Time between SIGTERM and SIGKILL.
    #[arg(long, default_value = "2s", value_name = "DURATION", value_parser = parse_duration)]
    pub grace: Duration,
    /// Bytes of each output stream kept per failing run.
    #[arg(long, default_value = "1MiB", value_name = "BYTES", value_parser = parse_bytes)]
    pub capture: u64,
    /// Write the run record here (default: .flakehunt/runs/fire-<timestamp>).
    #[arg(long, value_name = "DIR")]
    pub record: Option<PathBuf>,
    /// Print the summary as JSON on stdout (the table goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Print less while running.
    #[arg(short, long)]
    pub quiet: bool,
    /// Continue the fire hunt recorded in DIR, killed or interrupted: finished levels are kept, the level that was
    /// cut short runs again from a fresh sandbox (with its reference). Takes its options from the record.
    #[arg(long, value_name = "DIR", conflicts_with_all = [
        "state", "ladder", "all_levels", "checks", "ignore", "ignore_column", "trace_tokens", "keep", "timeout",
        "grace", "capture", "record", "shell", "command",
    ])]
    pub resume: Option<PathBuf>,
    /// Run this string through `sh -c` instead of an argv after `--`.
    #[arg(long, value_name = "STRING", conflicts_with = "command")]
    pub shell: Option<String>,
    /// The command under test, run without a shell.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Runs `flakehunt fire`; returns the exit code.
pub fn run(args: &FireArgs, config: &Config) -> anyhow::Result<i32> {
    let fresh = match &args.resume {
        Some(dir) => resume_record(dir, args.follow_outside_links)?,
        None => new_record(args)?,
    };
    let Fresh { dir, manifest, mut recorder, options, normalizer, new_dir, resumed } = fresh;
    // A new hunt refused before its first run leaves nothing behind: what it created in the
    // record directory goes (only that), so the same --record can be given again.
    let discard = || {
        if let Some(new_dir) = &new_dir {
            new_dir.discard(&[SANDBOXES]);
        }
    };
    // Absolute, like every path handed to a run, even with a relative --record.
    let sandboxes = match std::path::absolute(dir.join(SANDBOXES)).and_then(|s| std::fs::create_dir_all(&s).map(|()| s))
    {
        Ok(sandboxes) => sandboxes,
        Err(e) => {
            discard();
            return Err(anyhow::Error::from(e).context(format!("cannot create {}", dir.join(SANDBOXES).display())));
        }
    };

    let session = match Session::start(&manifest, args.quiet) {
        Ok(session) => session,
        Err(e) => {
            discard();
            return Err(e);
        }
    };
    let fire = FireRunner {
        attempts: session.attempts(&manifest),
        options,
        normalizer,
        sandboxes,
        token_salt: (manifest.seed >> 32) as u32,
    };
    match fire.check_state() {
        Ok(copied) if fire.options.state.is_some() && !args.quiet => eprintln!("{}", copy_line(&copied)),
        Ok(_) => {}
        Err(e) => {
            session.finish();
            // Nothing ran: leave no record behind for a refused state.
            discard();
            return Err(exit::usage(state_error(&e, &fire)));
        }
    }
    // A resumed record keeps the snapshot of the machine it started on.
    let snapshot = (!dir.join(flakehunt_core::record::SNAPSHOT_FILE).exists())
        .then(|| session.snapshot(hunt::snapshot_tools(config, Some(&manifest)), &manifest.run_id));
    let mut display = Display::new(args.quiet);
    let result = fire.run(&mut FireSinks { recorder: &mut recorder, display: &mut display }, resumed.as_ref());
    display.finish();
    let snapshot = snapshot.and_then(|s| s.join().ok());
    session.finish();
    let end = match result {
        Ok(end) => end,
        Err(FireError::Spawn { program, source }) => {
            if recorder_is_empty(&dir) {
                discard();
            }
            let dir = manifest.target.dir.as_deref();
            return Err(exit::usage(flakehunt_core::exec::spawn_failure(&program, &source, dir)));
        }
        Err(e) => return Err(e.into()),
    };
    if let Some(snapshot) = snapshot {
        recorder.write_document(flakehunt_core::record::SNAPSHOT_FILE, &snapshot)?;
    }
    let summary = flakehunt_core::analysis::summarize(&Record::open(&dir)?)?;
    recorder.write_document(SUMMARY_FILE, &summary)?;
    crate::report::append_step_summary(&summary, &dir);
    hunt::print_summary(&summary, &dir, args.json, "level")?;
    Ok(if end.interrupted { exit::INTERRUPTED } else { summary.exit_code() })
}

/// A record ready for the ladder: a new one, or a resumed one with what it keeps.
struct Fresh {
    dir: PathBuf,
    manifest: Manifest,
    recorder: Recorder,
    options: FireOptions,
    /// The options' masks, compiled.
    normalizer: Normalizer,
    /// The directory a new hunt checked (a refused start then removes what it created there).
    new_dir: Option<flakehunt_core::record::NewDir>,
    resumed: Option<Resumed>,
}

/// Checks the options of a new fire hunt and creates its record.
fn new_record(args: &FireArgs) -> anyhow::Result<Fresh> {
    // Everything that can be checked without touching the disk comes first.
    let ladder: Ladder = args.ladder.parse().map_err(|e| exit::usage(format!("--ladder: {e}")))?;
    let normalizer =
        Normalizer::new(&args.ignore, &args.ignore_column).map_err(|e| exit::usage(normalizer_error(&e)))?;
    if args.timeout.is_zero() {
        return Err(exit::usage("--timeout must be longer than 0s"));
    }
    let state = match &args.state {
        Some(dir) => {
            validate_source(dir).map_err(|e| exit::usage(format!("--state: {e}")))?;
            Some(std::path::absolute(dir).map_err(|e| exit::usage(format!("--state {}: {e}", dir.display())))?)
        }
        None => None,
    };
    let mut target = hunt::target_from(args.shell.as_deref(), &args.command, Kind::Fire)?;
    // Runs start in their sandbox: a program path relative to here (where it was just found)
    // would name nothing there.
    if !target.shell && target.argv[0].contains('/') && Path::new(&target.argv[0]).is_relative() {
        let absolute =
            std::path::absolute(&target.argv[0]).map_err(|e| exit::usage(format!("{}: {e}", target.argv[0])))?;
        target.argv[0] = absolute.display().to_string();
    }
    let record_dir = args.record.clone().unwrap_or_else(|| hunt::default_record_dir(Kind::Fire));
    if let Some(state) = &state {
        if is_inside(&record_dir, state) {
            return Err(exit::usage(format!(
                "the record would be written inside --state {}: give --record DIR outside it (the state must stay untouched)",
                state.display()
            )));
        }
    }

    let options = FireOptions {
        ladder,
        state,
        ignore: args.ignore.clone(),
        ignore_columns: args.ignore_column.clone(),
        checks: args.checks.clone(),
        trace_tokens: args.trace_tokens,
        all_levels: args.all_levels,
        keep: args.keep,
        follow_outside_links: args.follow_outside_links,
    };
    let levels = &options.ladder.0;
    let mut cells: Vec<CellSpec> = Vec::new();
    for level in levels {
        for name in [reference_cell(level.runs), level.name()] {
            if !cells.iter().any(|c| c.name == name) {
                cells.push(CellSpec { name, profile: None, overlay: Vec::new() });
            }
        }
    }
    let settings = Settings {
        runs: options.planned_runs(levels.len()),
        jobs: levels.iter().map(|l| l.workers).max().unwrap_or(1),
        until_fails: None,
        budget_seconds: None,
        timeout_seconds: args.timeout.as_secs_f64(),
        grace_seconds: args.grace.as_secs_f64(),
        capture_bytes: args.capture,
    };
    let seed = hunt::random_seed();
    // The last check, and the first to touch the disk.
    let new_dir = flakehunt_core::record::check_new(&record_dir).map_err(exit::record)?;
    let hunt = NewHunt { cells, extra: serde_json::to_value(&options)?, oracle: None };
    let (dir, manifest, recorder) =
        hunt::create_record(Kind::Fire, target, settings, hunt, seed, None, Some(record_dir))?;
    Ok(Fresh { dir, manifest, recorder, options, normalizer, new_dir: Some(new_dir), resumed: None })
}

/// Opens the fire record in `dir` to continue it: levels that finished are kept, what was cut
/// short runs again from a fresh sandbox. `follow_outside_links` may be added on resume (a state
/// refused for an outside link can then continue); it is never taken away.
fn resume_record(dir: &Path, follow_outside_links: bool) -> anyhow::Result<Fresh> {
    let record = hunt::open_for_resume(dir, Kind::Fire)?;
    let mut options = FireOptions::from_extra(&record.manifest.extra)
        .ok_or_else(|| exit::usage(format!("{}: the manifest holds no fire options", dir.display())))?;
    options.ladder.check().map_err(|e| exit::usage(format!("{}: the manifest's ladder: {e}", dir.display())))?;
    options.follow_outside_links |= follow_outside_links;
    if let Some(state) = &options.state {
        validate_source(state).map_err(|e| {
            exit::usage(format!("the hunt's --state {} cannot be copied any more: {e}", state.display()))
        })?;
    }
    let normalizer =
        Normalizer::new(&options.ignore, &options.ignore_columns).map_err(|e| exit::usage(normalizer_error(&e)))?;
    let resumed = prepare_resume(dir, &options)?;
    let recorder = Recorder::resume(dir)?;
    Ok(Fresh {
        dir: dir.to_owned(),
        manifest: record.manifest,
        recorder,
        options,
        normalizer,
        new_dir: None,
        resumed: Some(resumed),
    })
}

/// Whether the record holds no attempt yet.
fn recorder_is_empty(dir: &Path) -> bool {
    dir.join("attempts.jsonl").metadata().is_ok_and(|m| m.len() == 0)
}

/// Whether `path` (which may not exist yet) would lie inside `dir`.
fn is_inside(path: &Path, dir: &Path) -> bool {
    let Ok(path) = std::path::absolute(path) else { return false };
    // Resolve what exists of the path, so a symlinked parent cannot hide where it leads.
    let mut existing = path.as_path();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => break,
        }
    }
    let mut resolved = std::fs::canonicalize(existing).unwrap_or_else(|_| existing.to_owned());
    resolved.extend(rest.iter().rev());
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned());
    resolved.starts_with(dir)
}

/// What each sandbox copy of the state takes, in one line.
fn copy_line(c: &flakehunt_core::copy::CopyStats) -> String {
    let plural = if c.files == 1 { "" } else { "s" };
    let mut line =
        format!("state: {} file{plural}, {} bytes, {} bytes written per sandbox", c.files, c.bytes, c.written);
    for (n, what) in [(c.cloned, "reflinked"), (c.links, "links re-pointed"), (c.followed, "outside links followed")] {
        if n > 0 {
            line.push_str(&format!(", {n} {what}"));
        }
    }
    line
}

/// One line for a bad `--ignore` or `--ignore-column`: the regex parser's message spans
/// several lines, of which the last says what is wrong.
fn normalizer_error(e: &NormalizerError) -> String {
    match e {
        NormalizerError::InvalidRegex { source, .. } => {
            let why = source.to_string();
            let last = why.lines().map(str::trim).rfind(|l| !l.is_empty()).unwrap_or("").to_owned();
            format!("{e}: {}", last.trim_start_matches("error: "))
        }
        NormalizerError::InvalidColumn { .. } => format!("--ignore-column: {e}"),
    }
}

/// One line for a state that cannot be copied or fingerprinted, naming the user's path rather
/// than the copy's.
fn state_error(e: &FireError, fire: &FireRunner<'_>) -> String {
    let original = |p: &Path| -> String {
        let check = fire.sandboxes.join("check");
        match (p.strip_prefix(&check), &fire.options.state) {
            (Ok(rel), Some(state)) => state.join(rel).display().to_string(),
            _ => p.display().to_string(),
        }
    };
    match e {
        FireError::Fingerprint(FingerprintError::NotSqlite { path }) => format!(
            "--state: {} is named like an SQLite database but is not one (rename it, or fix the state)",
            original(path)
        ),
        FireError::Fingerprint(FingerprintError::Sqlite { path, source }) => {
            format!("--state: cannot open SQLite database {}: {source}", original(path))
        }
        FireError::Sandbox(e @ SandboxError::TooLarge { .. }) => format!("--state: {e}: nothing was copied"),
        other => format!("--state: {}", hunt::error_chain(other)),
    }
}
