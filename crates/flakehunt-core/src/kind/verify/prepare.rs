//! A new verification's manifest, from the verified record and the options: its target (the
//! record's, run where the record's hunt ran, unless a command is given), its cells (the
//! conditions that reproduced), a plan of the attempts they need, and the record's oracles.
//! Main function: [`new`].

use std::path::PathBuf;

use super::options::VerifyOptions;
use super::source;
use crate::events::{Event, EventSink};
use crate::kind::suite::setup::SetupRuns;
use crate::oracle::OracleSpec;
use crate::plan::{CellSpec, Settings, Target};
use crate::record::{Adapter, Extra, Kind};
use crate::spec::{HuntError, HuntSpec, VerifyRequest};

/// What the driver records for a new verification.
#[derive(Debug)]
pub struct Prepared {
    /// The command under test.
    pub target: Target,
    /// The plan's settings: the attempts every cell runs, one at a time.
    pub settings: Settings,
    /// The cells.
    pub cells: Vec<CellSpec>,
    /// The manifest's extra (`verify`, and the record's pytest adapter).
    pub extra: Extra,
    /// The verified record's oracles.
    pub oracle: Option<OracleSpec>,
}

/// Prepares a new verification of `req.record`, saying to `sink` how many attempts it runs and
/// why (and what a `--budget` that cannot fit them costs).
/// A Go or Rust record's test binary is built again from the code as it is now (Go's into the
/// verification's record `dir`), unless a command is given.
pub fn new(
    spec: &HuntSpec,
    req: &VerifyRequest,
    dir_new: &std::path::Path,
    sink: &mut dyn EventSink,
) -> Result<Prepared, HuntError> {
    if !(req.level > 0.0 && req.level < 1.0) {
        return Err(HuntError::usage("--level is a confidence in percent, above 0 and below 100 (e.g. 99, 99.9)"));
    }
    let Some(dir) = &req.record else {
        return Err(HuntError::usage(
            "give the record to verify: `flakehunt verify .flakehunt/runs/hunt-...` (or --resume DIR)",
        ));
    };
    let command_given = !spec.target.command.is_empty() || spec.target.shell.is_some();
    let mut source = source::read(dir, req.level, (!command_given).then_some(dir_new))?;
    if let Some(ladder) = source.fire.take() {
        return fire(spec, source, ladder, command_given, dir_new, sink);
    }
    let verified = &source.record.manifest;
    if command_given && source.target.is_some() {
        return Err(HuntError::usage(format!(
            "{} is a suite record, whose reproducers are the commands verify runs: drop the command after `--` (and --shell)",
            dir.display()
        )));
    }
    // A suite's reproducers name their runner themselves.
    let adapter = verified.extra.adapter.clone().filter(|_| source.target.is_none());
    let target = if let Some(reproducers) = source.target.clone() {
        in_hunts_directory(reproducers, &source.record)?
    } else if command_given {
        let target = crate::spec::target_from(spec.target.shell.as_deref(), &spec.target.command, Kind::Verify)?;
        carries_the_checks(&target, verified.plan.checks, dir)?;
        target
    } else {
        // The test binary built again from the code as it is now, in the place of the old one.
        let mut target = verified.target.clone();
        if let Some(rebuilt) = &source.rebuilt {
            target.argv = rebuilt.apply(&target.argv);
        }
        // A Go test binary says nothing of a skipped test unless verbose: `t.Skip` after the hunt
        // (a quarantine) would pass every attempt unseen (see `summary::unreported_by_cell`).
        if let Some(Adapter::GoTest { test: Some(_), .. }) = &verified.extra.adapter {
            target.argv.push("-test.v".into());
        }
        rebase_argv(in_hunts_directory(target, &source.record)?, moved_from(&source.record)?.as_deref())
    };
    let mut settings = verified.plan.clone();
    settings.runs = source.options.attempts;
    settings.jobs = 1;
    settings.until_fails = None;
    settings.budget_seconds = spec.settings.budget.map(|d| d.as_secs_f64());
    if spec.settings.timeout_given {
        settings.timeout_seconds = spec.settings.timeout.as_secs_f64();
        settings.timeout_given = Some(true);
    }
    // The tests the record saw fail still run (a run of many tests would pass without them).
    if source.target.is_none() {
        let timeout =
            std::time::Duration::try_from_secs_f64(settings.timeout_seconds).unwrap_or(std::time::Duration::MAX);
        super::still_runs::check(&source.record, &source.options, &source.cells, &target, command_given, timeout)?;
    }
    // Warm or cold as the verified hunt ran (a failure rate differs between the two), unless
    // asked otherwise.
    let (warm, why_cold) = match (&source.target, &verified.extra.suite) {
        // A suite's reproducers run cold, as the suite checked them; its shuffled attempts (a
        // condition-sensitive test's) warm when the suite's were.
        (Some(_), Some(setup)) => suite_warm(spec, verified, setup, &source.options),
        _ => crate::warm::plan(spec.settings.warm, verified.plan.warm.is_some(), &target, &spec.config.warm),
    };
    if let Some(why) = why_cold {
        sink.event(&Event::RunsCold(&why))?;
    }
    settings.warm = warm;
    let options = VerifyOptions { command_given, code: code_of(&target), ..source.options };
    sink.event(&Event::VerifyPlanned { options: &options, budget: spec.settings.budget })?;
    // A matrix's cells ran in clean rooms, when it asked for them: so do the verification's.
    let matrix = verified.extra.matrix.clone().map(|m| crate::record::MatrixExtra { confirm: 0, against: None, ..m });
    let suite = match (&source.target, &verified.extra.suite) {
        (Some(_), Some(setup)) => Some(suite_setup(setup, source.rebuilt.as_ref(), dir_new)?),
        _ => None,
    };
    // The adapter's test runner, whose report says whether its one test ran (see
    // `summary::unreported_by_cell`), naming the binary that runs now.
    let adapter = adapter.filter(|_| !command_given).map(|mut a| {
        if let (Adapter::GoTest { binary, .. } | Adapter::CargoTest { binary, .. }, Some(rebuilt)) =
            (&mut a, &source.rebuilt)
        {
            *binary = rebuilt.new.clone();
        }
        a
    });
    let extra = Extra { adapter, matrix, suite, verify: Some(options), ..Extra::default() };
    Ok(Prepared { target, settings, cells: source.cells, extra, oracle: verified.oracle.clone() })
}

/// Refuses a command given after `--` that cannot carry a check the verified record's failure
/// may have been found by: a check built into the record's test binary (the goroutine leak
/// check's `TestMain`, which only flakehunt's build adds; the race detector, unless the command
/// asks for `-race`) or one its runner had to be asked for (libtest's `--show-output`, which
/// prints a passing test's threads' panics). Run without it, the failure would pass unseen and an
/// unfixed test read as fixed. The thread check of a Python target carries to any command (its
/// hooks are on `PYTHONPATH` for any Python it starts).
fn carries_the_checks(
    target: &Target,
    checks: crate::checks::Checks,
    record: &std::path::Path,
) -> Result<(), HuntError> {
    let words: Vec<&str> = target.argv.iter().flat_map(|a| a.split_whitespace()).collect();
    let has = |flag: &str| words.iter().any(|w| *w == flag || w.starts_with(&format!("{flag}=")));
    let missing = if checks.goroutine_leaks {
        Some("the goroutine leak check, which flakehunt builds into the test binary (a TestMain added with `go test -overlay`)")
    } else if checks.race && !has("-race") && !has("-test.race") {
        Some("the race detector (`go test -race`), which the command does not ask for")
    } else if checks.thread_panics && !has("--show-output") && !has("--nocapture") {
        Some("the check of panics in a test's other threads (libtest's `--show-output`), which the command does not ask for")
    } else {
        None
    };
    match missing {
        Some(check) => Err(HuntError::usage(format!(
            "{} ran with {check}: the command given after `--` runs without it, so the failure it found would pass unseen; drop the command (verify rebuilds the record's test binary with its checks)",
            record.display()
        ))),
        None => Ok(()),
    }
}

/// The digest of the code where `target` runs (see [`super::code`]).
fn code_of(target: &Target) -> Option<String> {
    let here = std::env::current_dir().ok();
    super::code::fingerprint(target.dir.as_deref().or(here.as_deref())?)
}

/// Whether a suite's verification runs warm: when it runs shuffled attempts of the suite (a
/// test without a reproducer), as the suite ran them unless asked otherwise (a failure rate
/// differs between the two), and only where the suite's runner can (pytest).
fn suite_warm(
    spec: &HuntSpec,
    verified: &crate::record::Manifest,
    setup: &crate::kind::suite::setup::SuiteSetup,
    options: &VerifyOptions,
) -> (Option<crate::plan::WarmPlan>, Option<String>) {
    let shuffled = options.conditions.iter().any(|c| c.test.is_some() && c.reproducer.is_empty());
    if !shuffled || !spec.settings.warm.unwrap_or(verified.plan.warm.is_some()) {
        return (None, None);
    }
    if setup.warm_target().is_none() {
        let why = (spec.settings.warm == Some(true)).then(|| crate::warm::WarmError::Unsupported.to_string());
        return (None, why);
    }
    (Some(verified.plan.warm.unwrap_or_else(|| crate::warm::configured(&spec.config.warm))), None)
}

/// The verified suite's `setup`, for the verification's runs of its reproducers (see
/// [`super::reproducers`]): its runner, with the test binary `rebuilt`, and its scratch
/// directories in the verification's record `dir`.
fn suite_setup(
    setup: &crate::kind::suite::setup::SuiteSetup,
    rebuilt: Option<&super::rebuild::Rebuilt>,
    dir: &std::path::Path,
) -> Result<crate::kind::suite::setup::SuiteSetup, HuntError> {
    use crate::kind::suite::setup::SuiteRunner;
    let mut setup = setup.clone();
    setup.files = std::path::absolute(dir).map_err(|e| HuntError::io(dir.display().to_string(), e))?;
    match (&mut setup.runner, rebuilt) {
        (SuiteRunner::Go { go, .. }, Some(r)) => go.binary = PathBuf::from(&r.new),
        (SuiteRunner::Libtest { binary, .. }, Some(r)) => *binary = PathBuf::from(&r.new),
        _ => {}
    }
    // The test2json tool the suite found, if this machine has it (`go tool test2json` if not).
    if let SuiteRunner::Go { go, .. } = &mut setup.runner {
        go.test2json = go.test2json.take().filter(|t| std::path::Path::new(t).exists());
    }
    Ok(setup)
}

/// A verification of a fire record: the verified command (or the one given), run on the
/// record's ladder cut after its last rejected level, against fresh sandboxes of its `--state`
/// as the state is now, the rejected level as many times as its rate needs.
fn fire(
    spec: &HuntSpec,
    source: source::Source,
    mut fire: crate::kind::fire::FireOptions,
    command_given: bool,
    dir_new: &std::path::Path,
    sink: &mut dyn EventSink,
) -> Result<Prepared, HuntError> {
    if spec.shard.is_some() {
        return Err(HuntError::usage("a fire record's verification climbs one ladder on one machine: drop --shard"));
    }
    if spec.settings.warm == Some(true) {
        return Err(HuntError::usage("a fire record's runs each start a new process, as fire's did: drop --warm"));
    }
    let moved = moved_from(&source.record)?;
    if let (Some(state), Some(from)) = (&fire.state, &moved) {
        fire.state = Some(rebased(state, from).unwrap_or_else(|| state.clone()));
    }
    if let Some(state) = &fire.state {
        crate::state::validate_source(state)
            .map_err(|error| HuntError::StateGone { state: state.clone(), error: Box::new(error) })?;
    }
    crate::kind::fire::prepare::check_record_dir(dir_new, fire.state.as_deref())?;
    let verified = &source.record.manifest;
    let target = if command_given {
        let mut target = crate::spec::target_from(spec.target.shell.as_deref(), &spec.target.command, Kind::Verify)?;
        // Runs start in their sandbox, as fire's do: a relative program path would name nothing there.
        if !target.shell && target.argv[0].contains('/') && std::path::Path::new(&target.argv[0]).is_relative() {
            let absolute =
                std::path::absolute(&target.argv[0]).map_err(|e| HuntError::io(target.argv[0].clone(), e))?;
            target.argv[0] = absolute.display().to_string();
        }
        target
    } else {
        rebase_argv(verified.target.clone(), moved.as_deref())
    };
    let options = VerifyOptions { command_given, code: code_of(&target), ..source.options };
    let steps = super::fire::ladder(&fire, &options);
    let mut settings = verified.plan.clone();
    settings.runs = steps.planned_runs(steps.ladder.0.len());
    settings.jobs = steps.ladder.0.iter().map(|l| l.workers).max().unwrap_or(1);
    settings.until_fails = None;
    settings.budget_seconds = spec.settings.budget.map(|d| d.as_secs_f64());
    settings.warm = None;
    if spec.settings.timeout_given {
        settings.timeout_seconds = spec.settings.timeout.as_secs_f64();
    }
    sink.event(&Event::VerifyPlanned { options: &options, budget: spec.settings.budget })?;
    let extra = Extra { fire: Some(fire), verify: Some(options), ..Extra::default() };
    Ok(Prepared { target, settings, cells: source.cells, extra, oracle: verified.oracle.clone() })
}

/// The directory the verified hunt ran in (its snapshot's `cwd`) when it is not here: the
/// record was made on another machine, or in another checkout (a CI runner verifying a record
/// committed in the repository). Its paths under that directory are then taken under the
/// current one ([`rebased`]).
fn moved_from(record: &crate::record::Record) -> Result<Option<PathBuf>, HuntError> {
    let cwd = record.snapshot()?.and_then(|s| s.get("cwd").and_then(|c| c.as_str()).map(PathBuf::from));
    Ok(cwd.filter(|c| c.is_absolute() && !c.is_dir()))
}

/// `path`, under `from` (where the verified hunt ran, a directory not here), as the same path
/// under the current directory; none when it is not under `from`.
fn rebased(path: &std::path::Path, from: &std::path::Path) -> Option<PathBuf> {
    let relative = path.strip_prefix(from).ok()?;
    std::path::absolute(relative).ok()
}

/// `target` with each word of its argv that names a path under `from` (see [`moved_from`])
/// rebased under the current directory (a fire record's program, made absolute when it was
/// recorded; a test file named by its full path). A shell string is left as it is.
fn rebase_argv(mut target: Target, from: Option<&std::path::Path>) -> Target {
    let Some(from) = from.filter(|_| !target.shell) else { return target };
    for word in &mut target.argv {
        if let Some(here) = rebased(std::path::Path::new(word.as_str()), from) {
            *word = here.display().to_string();
        }
    }
    target
}

/// `target` run in the directory the verified hunt ran in (its snapshot's `cwd`), so that its
/// relative paths name what they named then, wherever the verification is started.
fn in_hunts_directory(target: Target, record: &crate::record::Record) -> Result<Target, HuntError> {
    if target.dir.as_ref().is_some_and(|d| d.is_absolute()) {
        return Ok(target);
    }
    let cwd = record.snapshot()?.and_then(|s| s.get("cwd").and_then(|c| c.as_str()).map(PathBuf::from));
    Ok(match cwd.filter(|c| c.is_dir()) {
        Some(cwd) => {
            let dir = target.dir.as_ref().map_or_else(|| cwd.clone(), |d| cwd.join(d));
            target.in_dir(dir)
        }
        None => target,
    })
}

/// The lines said before a verification starts: each condition's rate, the attempts that rule
/// it out and why, the time they take, and what a `--budget` that cannot fit them costs.
pub fn plan_lines(options: &VerifyOptions, budget: Option<std::time::Duration>) -> Vec<String> {
    use super::attempts;
    use super::options::Role;
    use super::summary::{confidence_text, level_text};
    use crate::analysis::stats::format_rate;
    let at = level_text(options.level);
    let miss = level_text(1.0 - options.level);
    let words = super::Words::of(&options.kind);
    let mut lines = Vec::new();
    for c in options.conditions.iter().filter(|c| c.role == Role::Condition) {
        let Some(needed) = c.needed else { continue };
        let low = attempts::rate_to_rule_out(c.failures, c.attempts).unwrap_or(0.0);
        let (failed, failing, clean) = if words.counts_named {
            ("was rejected in", "rejected", "level runs without a rejection")
        } else {
            ("failed", "failing", "clean attempts")
        };
        lines.push(format!(
            "verify: {} {failed} {}/{}{} in {} ({}, 95 % interval {} .. {}): were it still {failing} at {}, {needed} {clean} in a row would happen less than {miss} of the time, so {} prove a fix at {at}",
            c.cell,
            c.failures,
            c.attempts,
            if words.counts_named { format!(" {}", words.units) } else { String::new() },
            c.source,
            format_rate(c.rate()),
            format_rate(c.ci95[0]),
            format_rate(c.ci95[1]),
            format_rate(low),
            words.count(needed),
        ));
    }
    let names: Vec<&str> = options.conditions.iter().map(|c| c.cell.as_str()).collect();
    // A fire record's levels below the rejected one are climbed once each, not `attempts` times.
    let times =
        |c: &super::Condition| if words.counts_named && c.role == Role::Baseline { 1 } else { options.attempts };
    let seconds: f64 = options.conditions.iter().map(|c| c.mean_seconds * times(c) as f64).sum();
    if words.counts_named {
        let (conditions, below): (Vec<&super::Condition>, Vec<&super::Condition>) =
            options.conditions.iter().partition(|c| c.role == Role::Condition);
        let names = |cs: &[&super::Condition]| cs.iter().map(|c| c.cell.as_str()).collect::<Vec<_>>().join(", ");
        lines.push(format!(
            "verify: climbing the ladder {}again: {} of {}{}, each in a fresh sandbox compared with a sequential reference (fire {} {}, about {})",
            if below.is_empty() { String::new() } else { format!("(the levels below, {}, once each) ", names(&below)) },
            words.count(options.attempts),
            names(&conditions),
            if conditions.len() > 1 { " each" } else { "" },
            options.record.display(),
            options.run_id,
            duration_text(seconds),
        ));
    } else {
        lines.push(format!(
            "verify: running {} attempts of each of {} ({} of {} {}, about {})",
            options.attempts,
            names.join(", "),
            options.kind,
            options.record.display(),
            options.run_id,
            duration_text(seconds),
        ));
    }
    if let Some(budget) = budget.filter(|b| b.as_secs_f64() < seconds) {
        // What runs every round, after what a fire ladder climbs once first.
        let (once, per_round): (Vec<&super::Condition>, Vec<&super::Condition>) =
            options.conditions.iter().partition(|c| words.counts_named && c.role == Role::Baseline);
        let per_round: f64 = per_round.iter().map(|c| c.mean_seconds).sum();
        let left = budget.as_secs_f64() - once.iter().map(|c| c.mean_seconds).sum::<f64>();
        let fits = if per_round > 0.0 { (left.max(0.0) / per_round).floor() as u64 } else { options.attempts };
        let weakest = options
            .conditions
            .iter()
            .filter(|c| c.role == Role::Condition)
            .filter_map(|c| attempts::rate_to_rule_out(c.failures, c.attempts))
            .min_by(f64::total_cmp)
            .unwrap_or(0.0);
        lines.push(format!(
            "verify: --budget {} fits about {fits} of the {}: {fits} clean ones would rule out {} at only {} (not {at}), and the verdict would be inconclusive; about {} fits them all",
            humantime::format_duration(budget),
            words.count(options.attempts),
            format_rate(weakest),
            confidence_text(attempts::confidence_after(fits, weakest)),
            duration_text(seconds),
        ));
    }
    lines
}

/// `under 1 s`, `12 s`, `3.5 min`, `2.1 h`.
fn duration_text(seconds: f64) -> String {
    if seconds < 0.5 {
        "under 1 s".to_owned()
    } else if seconds < 120.0 {
        format!("{seconds:.0} s")
    } else if seconds < 7200.0 {
        format!("{:.1} min", seconds / 60.0)
    } else {
        format!("{:.1} h", seconds / 3600.0)
    }
}
