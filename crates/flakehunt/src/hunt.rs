//! The driver every hunt shares: create or resume a record, set up the process tree, the
//! watchdog and signal handling, run the plan with the recorder and the display attached, then
//! summarise the record and print the result.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use flakehunt_core::analysis::Summary;
use flakehunt_core::config::Config;
use flakehunt_core::events::{Event, EventSink, Fanout};
use flakehunt_core::exec::{Cancel, Limits, ProcessTree, Watchdog};
use flakehunt_core::oracle::{Oracle, OracleSpec};
use flakehunt_core::plan::{self, CellSpec, Rng, Settings, Target};
use flakehunt_core::profile::ProfileEnv;
use flakehunt_core::record::{Kind, Manifest, Record, Recorder, FORMAT_VERSION, SUMMARY_FILE};
use flakehunt_core::runner::{rfc3339, AttemptRunner, Runner};
use flakehunt_core::snapshot::Snapshot;

use crate::cli::HuntArgs;
use crate::display::Display;
use crate::exit;

/// A new hunt's plan, as a subcommand built it from its arguments.
pub struct NewHunt {
    /// The cells; the first is the baseline.
    pub cells: Vec<CellSpec>,
    /// Hunt-specific manifest data.
    pub extra: serde_json::Value,
    /// Oracles beyond the exit code.
    pub oracle: Option<OracleSpec>,
}

/// The oracles the options ask for, checked; none when only the exit status judges.
pub fn oracle_of(args: &HuntArgs) -> anyhow::Result<Option<OracleSpec>> {
    let majority = args.oracle == crate::cli::OracleKind::Majority;
    if !args.ignore.is_empty() && args.expect_stdout.is_none() && !majority {
        return Err(exit::usage("--ignore masks stdout for --expect-stdout or --oracle majority: give one of them"));
    }
    let spec = OracleSpec::new(
        args.fail_if.clone(),
        args.pass_if.clone(),
        args.expect_stdout.as_deref(),
        args.ignore.clone(),
        majority,
    )
    .map_err(|e| exit::usage(error_chain(&e)))?;
    Ok((!spec.is_empty()).then_some(spec))
}

/// An error and its causes on one line.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}

/// The target from `--shell` or the argv after `--`, checked to exist.
pub fn target_of(args: &HuntArgs, kind: Kind) -> anyhow::Result<Target> {
    target_from(args.shell.as_deref(), &args.command, kind)
}

/// The target from a `--shell` script or an argv, checked to exist.
pub fn target_from(shell: Option<&str>, command: &[String], kind: Kind) -> anyhow::Result<Target> {
    let target = match (shell, command.is_empty()) {
        (Some(script), _) => Target::shell(script.to_owned()),
        (None, false) => Target::argv(command.to_vec()),
        (None, true) => {
            return Err(exit::usage(format!(
            "no command to run: give it after --, e.g. `flakehunt {} -- cargo test -q ledger`, or use --shell 'STRING'",
            kind.name()
        )))
        }
    };
    flakehunt_core::exec::check_program(target.program(), target.dir.as_deref())
        .map_err(|e| exit::usage(e.to_string()))?;
    Ok(target)
}

/// Settings from the shared options.
pub fn settings_of(args: &HuntArgs) -> anyhow::Result<Settings> {
    if args.runs == 0 {
        return Err(exit::usage("--runs must be at least 1"));
    }
    if args.jobs == 0 {
        return Err(exit::usage("--jobs must be at least 1"));
    }
    flakehunt_core::bounds::check_runs("--runs", args.runs).map_err(|e| exit::usage(e.to_string()))?;
    flakehunt_core::bounds::Machine::get()
        .check_workers("--jobs", u64::from(args.jobs))
        .map_err(|e| exit::usage(e.to_string()))?;
    if args.until_fails == Some(0) {
        return Err(exit::usage("--until-fails must be at least 1"));
    }
    if args.timeout.is_zero() {
        return Err(exit::usage("--timeout must be longer than 0s"));
    }
    Ok(Settings {
        runs: args.runs,
        jobs: args.jobs,
        until_fails: args.until_fails,
        budget_seconds: args.budget.map(|d| d.as_secs_f64()),
        timeout_seconds: args.timeout.as_secs_f64(),
        grace_seconds: args.grace.as_secs_f64(),
        capture_bytes: args.capture,
    })
}

/// The checked durations of `manifest`'s plan; an error names the record's field.
fn check_plan(manifest: &Manifest) -> anyhow::Result<plan::Durations> {
    manifest.plan.check().map_err(|e| {
        exit::usage(format!(
            "the record's manifest.json holds plan.{e}: it was edited or damaged (fix the value, or start a new hunt)"
        ))
    })
}

/// The record in `dir` that `--resume` continues, which must hold a hunt of `kind`.
pub(crate) fn open_for_resume(dir: &Path, kind: Kind) -> anyhow::Result<Record> {
    let record = Record::open(dir).map_err(exit::record)?;
    check_plan(&record.manifest).map_err(|e| exit::usage(format!("{}: {e}", dir.display())))?;
    if record.manifest.kind != kind {
        let found = record.manifest.kind.name();
        return Err(exit::usage(format!(
            "{} holds a {found} record: resume it with `flakehunt {found}`",
            dir.display()
        )));
    }
    if record.manifest.withheld {
        return Err(exit::usage(format!(
            "{} cannot be resumed: its target's arguments or matrix values held secrets, which were not written; start a new hunt (or record with --no-redact)",
            dir.display()
        )));
    }
    Ok(record)
}

/// Runs a hunt: a new one built by `new`, or the one `--resume` names. Returns the exit code.
pub fn run(
    args: &HuntArgs,
    config: &Config,
    kind: Kind,
    cell_header: &str,
    new: impl FnOnce(&Target) -> anyhow::Result<NewHunt>,
) -> anyhow::Result<i32> {
    if let Some(shards) = args.slurm {
        return crate::slurm::run(args, shards, kind, cell_header, new);
    }
    // The directory a new hunt checked, so that a start refused before any attempt removes
    // what it created there.
    let mut new_dir = None;
    let (dir, manifest, mut recorder) = match &args.resume {
        Some(_) if args.has_new_target_options() => {
            return Err(exit::usage(
                "--resume continues the recorded hunt with its own target and oracles: drop the oracle and test-runner options",
            ))
        }
        Some(dir) => {
            let record = open_for_resume(dir, kind)?;
            let recorder = Recorder::resume(dir)?;
            (dir.clone(), record.manifest, recorder)
        }
        None => {
            let settings = settings_of(args)?;
            let oracle = oracle_of(args)?;
            // An adapter builds its test binary into the record, so a resumed hunt finds it.
            let dir = args.record.clone().unwrap_or_else(|| default_record_dir(kind));
            new_dir = Some(flakehunt_core::record::check_new(&dir).map_err(exit::record)?);
            let (target, adapter) = match crate::adapter::target(args, &dir)? {
                Some((target, adapter)) => (target, Some(adapter)),
                None => (target_of(args, kind)?, None),
            };
            let mut hunt = new(&target)?;
            hunt.oracle = oracle;
            if let Some(adapter) = adapter {
                if !hunt.extra.is_object() {
                    hunt.extra = serde_json::Value::Object(serde_json::Map::new());
                }
                hunt.extra["adapter"] = adapter;
            }
            let seed = args.seed.unwrap_or_else(random_seed);
            create_record(kind, target, settings, hunt, seed, args.shard, Some(dir))?
        }
    };
    // A resumed record keeps the snapshot of the machine it started on.
    let tools =
        (!dir.join(flakehunt_core::record::SNAPSHOT_FILE).exists()).then(|| snapshot_tools(config, Some(&manifest)));
    let (outcome, snapshot) = match execute(&manifest, &dir, &mut recorder, args, tools) {
        Ok(outcome) => outcome,
        Err(e) => {
            if let Some(new_dir) = &new_dir {
                discard_if_empty(new_dir);
            }
            return Err(e);
        }
    };
    if let Some(snapshot) = snapshot {
        recorder.write_document(flakehunt_core::record::SNAPSHOT_FILE, &snapshot)?;
    }
    let record = Record::open(&dir)?;
    let summary = flakehunt_core::analysis::summarize(&record)?;
    recorder.write_document(SUMMARY_FILE, &summary)?;
    crate::report::append_step_summary(&summary, &dir);
    print_summary(&summary, &dir, args.json, cell_header)?;
    Ok(if outcome.interrupted { exit::INTERRUPTED } else { summary.exit_code() })
}

/// Starts a new record: a fresh run id, the manifest, the directory (`record`, or
/// `.flakehunt/runs/<kind>-<timestamp>`).
pub fn create_record(
    kind: Kind,
    target: Target,
    settings: Settings,
    hunt: NewHunt,
    seed: u64,
    shard: Option<plan::Shard>,
    record: Option<PathBuf>,
) -> anyhow::Result<(PathBuf, Manifest, Recorder)> {
    let now = std::time::SystemTime::now();
    let stamp = stamp(now);
    let run_id = format!("{stamp}-{:04x}", Rng::new(random_seed()).next_u64() & 0xffff);
    let manifest = Manifest {
        format_version: FORMAT_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_owned(),
        kind,
        run_id,
        target,
        plan: settings,
        cells: hunt.cells,
        seed,
        host: flakehunt_core::host::hostname(),
        started_at: rfc3339(now),
        shard,
        oracle: hunt.oracle,
        extra: hunt.extra,
        redacted: flakehunt_core::redact::enabled(),
        withheld: false,
    };
    let dir = record.unwrap_or_else(|| default_record_dir(kind));
    let recorder = Recorder::create(&dir, &manifest).map_err(exit::record)?;
    Ok((dir, manifest, recorder))
}

/// `.flakehunt/runs/KIND-STAMP`, where a record goes without `--record`.
pub(crate) fn default_record_dir(kind: Kind) -> PathBuf {
    let base =
        PathBuf::from(".flakehunt/runs").join(format!("{}-{}", kind.name(), stamp(std::time::SystemTime::now())));
    flakehunt_core::record::unused_dir(&base)
}

/// A UTC time to the second without separators (`20240105T103000`).
fn stamp(time: std::time::SystemTime) -> String {
    humantime::format_rfc3339_seconds(time).to_string().replace([':', '-'], "").trim_end_matches('Z').to_owned()
}

/// What every hunt sets up around its attempts: the process tree (flakehunt as subreaper), the
/// watchdog that ends attempts if flakehunt dies, and the cancellation Ctrl-C triggers.
pub struct Session {
    /// The process tree bookkeeping, shared with the snapshot's thread.
    pub tree: Arc<ProcessTree>,
    /// The watchdog, when it could be started.
    pub watchdog: Option<Watchdog>,
    /// Cancellation, wired to the termination signals.
    pub cancel: Arc<Cancel>,
    /// What the hunt's profiles share.
    pub profiles: ProfileEnv,
    /// Matrix clean rooms by cell name.
    pub rooms: std::collections::BTreeMap<String, flakehunt_core::runner::Room>,
    /// The hunt's oracles beyond the exit code.
    pub oracle: Option<Oracle>,
    /// The plan's durations, checked.
    pub durations: plan::Durations,
    _kept_rooms: Vec<flakehunt_core::cleanroom::CleanRoom>,
}

impl Session {
    /// Sets up the session of the hunt `manifest` describes.
    pub fn start(manifest: &Manifest, quiet: bool) -> anyhow::Result<Self> {
        // Checked again here, before anything starts, for a record edited since it was opened.
        let durations = check_plan(manifest)?;
        let tree = Arc::new(ProcessTree::default());
        ProcessTree::become_subreaper();
        let exe = std::env::current_exe().context("cannot find flakehunt's own executable for its watchdog")?;
        let watchdog = Watchdog::spawn(&exe, &["__watchdog", &manifest.run_id]).ok();
        if let Some(w) = &watchdog {
            tree.register(w.pid());
        }
        let cancel = Arc::new(Cancel::new().context("cannot create the cancellation pipe")?);
        crate::signals::install(&cancel)?;
        let mut profiles = ProfileEnv::new(&manifest.run_id, manifest.seed, manifest.target.looks_like_python())
            .with_tracker(watchdog.as_ref().map(Watchdog::tracker));
        // The adaptive hunt's plan starts a copies=N arm's N attempts together.
        profiles.copies_scheduled = manifest.kind == Kind::Hunt;
        let (rooms, kept) = crate::matrix::clean_rooms(manifest, quiet, watchdog.as_ref())?;
        let oracle = manifest.oracle.as_ref().and_then(Oracle::new);
        Ok(Self { tree, watchdog, cancel, profiles, rooms, oracle, durations, _kept_rooms: kept })
    }

    /// The attempt runner of `manifest`'s target and limits.
    pub fn attempts(&self, manifest: &Manifest) -> AttemptRunner<'_> {
        let p = &manifest.plan;
        let limits = Limits {
            timeout: self.durations.timeout,
            grace: self.durations.grace,
            capture_cap: usize::try_from(p.capture_bytes).unwrap_or(usize::MAX),
            stdout_mask: self.oracle.as_ref().and_then(Oracle::mask),
            ..Limits::default()
        };
        AttemptRunner {
            run_id: manifest.run_id.clone(),
            target: manifest.target.clone(),
            limits,
            env: Vec::new(),
            env_clear: false,
            cwd: None,
            tree: &self.tree,
            watchdog: self.watchdog.as_ref(),
            cancel: &self.cancel,
            profiles: &self.profiles,
            rooms: &self.rooms,
            oracle: self.oracle.as_ref(),
        }
    }

    /// Captures the environment snapshot on a thread while the hunt runs; its tool commands
    /// are registered as flakehunt's own, so no attempt's sweep takes them for leaks.
    pub fn snapshot(&self, tools: Vec<String>, run_id: &str) -> std::thread::JoinHandle<Snapshot> {
        let tree = Arc::clone(&self.tree);
        let run_id = run_id.to_owned();
        std::thread::spawn(move || Snapshot::capture_in(&tools, Some(&tree), Some(&run_id)))
    }

    /// Ends whatever is left and lets the watchdog go.
    pub fn finish(&self) {
        self.tree.kill_all_unknown();
        if let Some(w) = &self.watchdog {
            w.finish();
        }
    }
}

/// The tool version commands a snapshot records: the configuration's list, or those of the
/// runtimes `hunt`'s target uses (every default one for `flakehunt snapshot`, which has no hunt).
pub fn snapshot_tools(config: &Config, hunt: Option<&Manifest>) -> Vec<String> {
    if !config.snapshot.tools.is_empty() {
        return config.snapshot.tools.clone();
    }
    match hunt {
        Some(m) => {
            let adapter = m.extra.get("adapter").and_then(|a| a.get("name")).and_then(|n| n.as_str());
            flakehunt_core::snapshot::tools_for(&m.target, adapter)
        }
        None => flakehunt_core::snapshot::default_tools(),
    }
}

/// Runs the plan of `manifest` into `recorder`; `args` gives the options that are not part of
/// the recorded plan (`--leak-timeout`, `--quiet`). With `tools`, the environment snapshot is
/// captured meanwhile and returned.
fn execute(
    manifest: &Manifest,
    dir: &Path,
    recorder: &mut Recorder,
    args: &HuntArgs,
    tools: Option<Vec<String>>,
) -> anyhow::Result<(flakehunt_core::runner::RunEnd, Option<Snapshot>)> {
    let mut plan = plan::from_manifest(manifest);
    let mut done = 0u64;
    let record = Record::open(dir)?;
    for attempt in record.attempts()? {
        plan.observe(&attempt?);
        done += 1;
    }
    let session = Session::start(manifest, args.quiet)?;
    let snapshot = tools.map(|tools| session.snapshot(tools, &manifest.run_id));
    let mut attempts = session.attempts(manifest);
    attempts.limits.leak_timeout = args.leak_timeout;
    let runner = Runner { attempts, jobs: manifest.plan.jobs as usize, budget: session.durations.budget };
    let mut display = Display::new(args.quiet);
    let result = {
        let mut sinks = Fanout(vec![recorder as &mut dyn EventSink, &mut display]);
        sinks.event(&Event::Started { planned: plan.planned(), done })?;
        runner.run(plan.as_mut(), &mut sinks)
    };
    display.finish();
    // Joined before the session ends, which kills every process it does not know.
    let snapshot = snapshot.and_then(|s| s.join().ok());
    session.finish();
    match result {
        Ok(end) => Ok((end, snapshot)),
        Err(flakehunt_core::runner::RunError::Spawn { program, source }) => {
            Err(exit::usage(flakehunt_core::exec::spawn_failure(&program, &source, manifest.target.dir.as_deref())))
        }
        Err(e) => Err(e.into()),
    }
}

/// Removes a record that a failed start left without a single attempt, so that the same
/// `--record` directory can be used again once the command is fixed. Only what this run
/// created is removed (see [`flakehunt_core::record::NewDir::discard`]).
fn discard_if_empty(dir: &flakehunt_core::record::NewDir) {
    let attempts = dir.path().join("attempts.jsonl");
    if !attempts.metadata().is_ok_and(|m| m.len() == 0) {
        return;
    }
    crate::adapter::discard_build(dir.path());
    dir.discard(&[crate::adapter::GO_BUILD_DIR]);
}

/// Prints the summary: the table on stdout, or JSON on stdout and the table on stderr.
pub fn print_summary(summary: &Summary, dir: &Path, json: bool, cell_header: &str) -> anyhow::Result<()> {
    let table = flakehunt_core::render::term::render(summary, cell_header);
    let footer = format!("record: {}", dir.display());
    if json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, summary)?;
        writeln!(out)?;
        eprint!("{table}");
        eprintln!("{footer}");
    } else {
        let mut out = anstream::stdout().lock();
        write!(out, "{}", crate::style::colour_table(&table))?;
        writeln!(out, "{footer}")?;
    }
    Ok(())
}

/// A seed from the clock and the pid, for hunts not given one.
pub fn random_seed() -> u64 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    Rng::new(nanos ^ (u64::from(std::process::id()) << 32)).next_u64()
}
