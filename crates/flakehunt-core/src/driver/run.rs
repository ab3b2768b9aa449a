//! The one start and end sequence every hunt shares: create or resume the record, start the
//! session (process tree, watchdog, signals, clean rooms), capture the snapshot meanwhile, run
//! the plan (or fire's ladder) with the recorder and the caller's sink attached, then summarise
//! the record. Main function: [`run`].

use std::path::{Path, PathBuf};

use super::prepare::{cells_of, default_record_dir, oracle_of, settings_of, stamp, warm_plan};
use super::{step_summary, HuntEnd, HuntReport};
use crate::events::{Event, EventSink, Fanout};
use crate::kind::fire::{FireError, FireFailure, FireOptions, FireRunner, FireSinks, Resumed, SANDBOXES};
use crate::kind::suite::setup::SetupRuns;
use crate::oracle::OracleSpec;
use crate::plan::{self, CellSpec, CheckSettings, Rng, Settings, Target};
use crate::record::{
    Extra, Kind, Manifest, NewDir, Record, Recorder, Resumption, FORMAT_VERSION, SNAPSHOT_FILE, SUMMARY_FILE,
};
use crate::rng::random_seed;
use crate::runner::{rfc3339, AttemptRunner, RunError, Runner};
use crate::spec::{HuntError, HuntKind, HuntSpec, RecordRequest};
use crate::state::Normalizer;

/// A record ready to run, with what its kind needs besides.
struct Opened {
    dir: PathBuf,
    manifest: Manifest,
    recorder: Recorder,
    /// The directory a new hunt checked: a start refused before any attempt removes what it
    /// created there (only that), so the same `--record` can be given again.
    new_dir: Option<NewDir>,
    ladder: Option<Ladder>,
}

/// What fire's ladder runs with.
struct Ladder {
    options: FireOptions,
    normalizer: Normalizer,
    resumed: Option<Resumed>,
}

/// Runs the hunt `spec` describes, sending its events to `sink` (after the recorder, so the
/// sink never sees an unrecorded attempt).
pub fn run(spec: &HuntSpec, sink: &mut dyn EventSink) -> Result<HuntReport, HuntError> {
    let with_defaults;
    let spec = match &spec.record {
        RecordRequest::New(_) => {
            with_defaults = crate::kind::of(spec.kind.record_kind()).defaults(spec.clone());
            &with_defaults
        }
        RecordRequest::Resume(_) => spec,
    };
    if let Some(slurm) = &spec.slurm {
        return super::slurm::run(spec, slurm, sink);
    }
    let mut opened = open(spec, sink)?;
    let result = execute(spec, &mut opened, sink);
    let Opened { dir, mut recorder, new_dir, .. } = opened;
    let (interrupted, snapshot) = match result {
        Ok(done) => done,
        Err(e) => {
            if let Some(new_dir) = &new_dir {
                discard_if_empty(new_dir);
            }
            return Err(e);
        }
    };
    if let Some(snapshot) = snapshot {
        recorder.write_document(SNAPSHOT_FILE, &snapshot)?;
    }
    let summary = crate::kind::summarize(&Record::open(&dir)?)?;
    recorder.write_document(SUMMARY_FILE, &summary)?;
    step_summary(&summary, &dir, sink);
    let end = HuntEnd::of(&summary, interrupted);
    Ok(HuntReport { summary, dir, end, incomplete: None })
}

/// Creates the record of a new hunt, or opens the one `--resume` names.
fn open(spec: &HuntSpec, sink: &mut dyn EventSink) -> Result<Opened, HuntError> {
    let kind = spec.kind.record_kind();
    match (&spec.record, &spec.kind) {
        (RecordRequest::Resume(_), HuntKind::Sweep { .. } | HuntKind::Matrix(_) | HuntKind::Suite(_) | HuntKind::Adaptive)
            if spec.oracle.is_given() || spec.target.has_adapter() =>
        {
            Err(HuntError::usage(
                "--resume continues the recorded hunt with its own target and oracles: drop the oracle and test-runner options",
            ))
        }
        (RecordRequest::Resume(dir), HuntKind::Fire(req)) => {
            let record = open_for_resume(dir, kind)?;
            let (options, normalizer, resumed, resumption) =
                crate::kind::fire::prepare::resume(dir, record.manifest.extra.fire.clone(), req.follow_outside_links)?;
            let recorder = Recorder::resume(dir, resumption);
            let ladder = Some(Ladder { options, normalizer, resumed: Some(resumed) });
            Ok(Opened { dir: dir.clone(), manifest: record.manifest, recorder, new_dir: None, ladder })
        }
        (RecordRequest::Resume(dir), HuntKind::Verify(_))
            if Record::open(dir).is_ok_and(|r| r.manifest.kind == kind && r.manifest.extra.fire.is_some()) =>
        {
            // A fire record's verification climbs its ladder again: resumed as fire resumes.
            let record = open_for_resume(dir, kind)?;
            check_code_unchanged(&record, dir)?;
            let extra = &record.manifest.extra;
            let steps = extra.verify.as_ref().zip(extra.fire.as_ref()).map(|(v, f)| crate::kind::verify::fire::ladder(f, v));
            let (options, normalizer, resumed, resumption) = crate::kind::fire::prepare::resume(dir, steps, false)?;
            let recorder = Recorder::resume(dir, resumption);
            let ladder = Some(Ladder { options, normalizer, resumed: Some(resumed) });
            Ok(Opened { dir: dir.clone(), manifest: record.manifest, recorder, new_dir: None, ladder })
        }
        (RecordRequest::Resume(dir), _) => {
            let record = open_for_resume(dir, kind)?;
            check_code_unchanged(&record, dir)?;
            let recorder = Recorder::resume(dir, Resumption::default());
            Ok(Opened { dir: dir.clone(), manifest: record.manifest, recorder, new_dir: None, ladder: None })
        }
        (RecordRequest::New(record), HuntKind::Fire(req)) => {
            // Everything that can be checked without touching the disk comes first.
            let fire = crate::kind::fire::prepare::new(req, &spec.settings)?;
            let mut target = crate::spec::target_from(spec.target.shell.as_deref(), &spec.target.command, kind)?;
            // Runs start in their sandbox: a program path relative to here (where it was just
            // found) would name nothing there.
            if !target.shell && target.argv[0].contains('/') && Path::new(&target.argv[0]).is_relative() {
                let absolute =
                    std::path::absolute(&target.argv[0]).map_err(|e| HuntError::io(target.argv[0].clone(), e))?;
                target.argv[0] = absolute.display().to_string();
            }
            let dir = record.clone().unwrap_or_else(|| default_record_dir(kind));
            crate::kind::fire::prepare::check_record_dir(&dir, fire.options.state.as_deref())?;
            let extra = Extra { fire: Some(fire.options.clone()), ..Extra::default() };
            let seed = spec.seed.unwrap_or_else(random_seed);
            // The last check, and the first to touch the disk.
            let new_dir = crate::record::check_new(&dir)?;
            let (manifest, recorder) = create_record(kind, target, fire.settings, fire.cells, extra, None, seed, None, &dir)?;
            let ladder = Some(Ladder { options: fire.options, normalizer: fire.normalizer, resumed: None });
            Ok(Opened { dir, manifest, recorder, new_dir: Some(new_dir), ladder })
        }
        (RecordRequest::New(record), HuntKind::Verify(req)) => {
            let dir = record.clone().unwrap_or_else(|| default_record_dir(kind));
            let new_dir = crate::record::check_new(&dir)?;
            // A verification refused before its record is written (a rebuild that failed, or
            // lacks a check) leaves nothing of it, its test binary's build included.
            let verify = crate::kind::verify::prepare::new(spec, req, &dir, sink)
                .inspect_err(|_| new_dir.discard(&[crate::kind::adapter::GO_BUILD_DIR]))?;
            let seed = spec.seed.unwrap_or_else(random_seed);
            // A fire record's verification climbs the ladder its rejected level repeats on.
            let ladder = match (&verify.extra.verify, &verify.extra.fire) {
                (Some(v), Some(f)) => Some(Ladder {
                    options: crate::kind::verify::fire::ladder(f, v),
                    normalizer: Normalizer::new(&f.ignore, &f.ignore_columns).map_err(HuntError::Normalizer)?,
                    resumed: None,
                }),
                _ => None,
            };
            let (manifest, recorder) = create_record(
                kind,
                verify.target,
                verify.settings,
                verify.cells,
                verify.extra,
                verify.oracle,
                seed,
                spec.shard,
                &dir,
            )?;
            Ok(Opened { dir, manifest, recorder, new_dir: Some(new_dir), ladder })
        }
        (RecordRequest::New(record), HuntKind::Suite(_)) => {
            crate::kind::suite::prepare::check(spec)?;
            spec.refuse_inapplicable_checks()?;
            let mut settings = settings_of(spec)?;
            let dir = record.clone().unwrap_or_else(|| default_record_dir(kind));
            let new_dir = crate::record::check_new(&dir)?;
            let (target, setup, adapter, built) = crate::kind::suite::prepare::prepare(spec, &dir)?;
            if let Some(note) = &built.note {
                sink.event(&Event::CheckNote(note))?;
            }
            settings.checks = built.checks;
            settings.warm = warm_plan(spec, &target, sink)?;
            let (cells, extra) = crate::kind::suite::prepare::cells(spec, &target, setup, adapter)?;
            let seed = spec.seed.unwrap_or_else(random_seed);
            let (manifest, recorder) = create_record(kind, target, settings, cells, extra, None, seed, spec.shard, &dir)?;
            Ok(Opened { dir, manifest, recorder, new_dir: Some(new_dir), ladder: None })
        }
        (RecordRequest::New(record), _) => {
            spec.refuse_inapplicable_checks()?;
            let mut settings = settings_of(spec)?;
            let oracle = oracle_of(spec)?;
            // An adapter builds its test binary into the record, so a resumed hunt finds it.
            let dir = record.clone().unwrap_or_else(|| default_record_dir(kind));
            let new_dir = crate::record::check_new(&dir)?;
            let limit = crate::kind::suite::collect::collection_limit(spec);
            let (target, adapter, built) = match crate::kind::adapter::target(&spec.target, &dir, spec.asked_checks(), limit)? {
                Some((target, adapter, built)) => (target, Some(adapter), built),
                None => {
                    let target = crate::spec::target_from(spec.target.shell.as_deref(), &spec.target.command, kind)?;
                    let built = crate::kind::adapter::Built::of_command(
                        &target,
                        spec.asked_checks(),
                        spec.settings.checks.threads == Some(true),
                    );
                    (target, None, built)
                }
            };
            if let Some(note) = &built.note {
                sink.event(&Event::CheckNote(note))?;
            }
            settings.checks = built.checks;
            let (cells, mut extra) = cells_of(spec, &target, sink)?;
            extra.adapter = adapter;
            settings.warm = warm_plan(spec, &target, sink)?;
            let seed = spec.seed.unwrap_or_else(random_seed);
            let (manifest, recorder) = create_record(kind, target, settings, cells, extra, oracle, seed, spec.shard, &dir)?;
            Ok(Opened { dir, manifest, recorder, new_dir: Some(new_dir), ladder: None })
        }
    }
}

/// The session, the snapshot and the run itself; `(interrupted, snapshot)`.
fn execute(
    spec: &HuntSpec,
    opened: &mut Opened,
    sink: &mut dyn EventSink,
) -> Result<(bool, Option<crate::snapshot::Snapshot>), HuntError> {
    let Opened { dir, manifest, recorder, ladder, .. } = opened;
    // A resumed record keeps the snapshot of the machine it started on.
    let tools = (!dir.join(SNAPSHOT_FILE).exists()).then(|| {
        let tools = crate::snapshot::tools_of(&spec.config, Some(manifest));
        crate::snapshot::SnapshotRequest::for_hunt(&manifest.target, manifest.extra.adapter.as_ref(), tools)
    });
    let leak_timeout = spec.settings.leak_timeout;
    if !manifest.plan.checks.is_none() {
        sink.event(&Event::ChecksOn(manifest.plan.checks))?;
    }
    if manifest.extra.bandit.as_ref().is_some_and(|b| b.timeout.is_none()) {
        sink.event(&Event::NoHangLimitYet { timeout: spec.settings.timeout.as_secs_f64() })?;
    }
    match ladder {
        None if manifest.kind == Kind::Suite => {
            let session = crate::session::Session::start(manifest, sink)?;
            let snapshot = tools.map(|tools| session.snapshot(tools, &manifest.run_id));
            let result = crate::kind::suite::prepare::execute(manifest, dir, recorder, &session, leak_timeout, sink);
            let snapshot = snapshot.and_then(|s| s.join().ok());
            session.finish();
            Ok((result?, snapshot))
        }
        None => {
            let mut plan = crate::kind::plan_of(manifest);
            let mut done = 0u64;
            for attempt in Record::open(dir)?.attempts()? {
                plan.observe(&attempt?);
                done += 1;
            }
            let session = crate::session::Session::start(manifest, sink)?;
            let snapshot = tools.map(|tools| session.snapshot(tools, &manifest.run_id));
            // A suite's verification runs its shuffled attempts (a condition-sensitive test's)
            // warm as the suite ran them: its parents collect the suite, as the suite's did.
            let warm = match &manifest.extra.suite {
                Some(setup) => setup.warm_target().and_then(|target| session.warm_cells_of(manifest, target)),
                None => session.warm_cells(manifest),
            };
            // A suite's verification runs its reproducers as the suite checked them.
            let reproducers = crate::kind::verify::reproducers::SuiteFiles::of(manifest)?;
            let _tracked =
                reproducers.as_ref().and_then(|r| Some(session.watchdog.as_ref()?.track_dir(r.plugins.path())));
            let runner = Runner {
                attempts: AttemptRunner {
                    warm: warm.as_ref().map(|w| w as _),
                    ..session.attempts(manifest, leak_timeout)
                },
                jobs: plan::runner_jobs(manifest),
                budget: session.durations.budget,
            };
            let result = std::thread::scope(|scope| {
                // An adaptive hunt tries every mechanism within its first seconds: the helpers
                // (the jitter library's build, the quota backend, the Python hook) are made while
                // its calibration runs, not in the way of its first attempt of each arm. Under
                // SCHED_IDLE (the compiler inherits it), so they take only CPU time the
                // calibration attempts leave.
                if manifest.kind == crate::record::Kind::Adaptive {
                    scope.spawn(|| {
                        crate::exec::idle_priority();
                        session.profiles.make_helpers();
                    });
                }
                let mut sinks = Fanout(vec![recorder as &mut dyn EventSink, sink]);
                sinks.event(&Event::Started { planned: plan.planned(), done })?;
                let suite = reproducers.as_ref().and_then(|r| r.execution(runner.attempts.clone(), manifest));
                Ok::<_, HuntError>(match suite {
                    Some(attempts) => {
                        Runner { attempts, jobs: runner.jobs, budget: runner.budget }.run(plan.as_mut(), &mut sinks)
                    }
                    None => runner.run(plan.as_mut(), &mut sinks),
                })
            })?;
            // Joined before the session ends, which kills every process it does not know.
            let snapshot = snapshot.and_then(|s| s.join().ok());
            // The warm parents exit once told, before the session kills what it does not know.
            warm.iter().for_each(crate::warm::WarmCells::end);
            session.finish();
            match result {
                Ok(end) => Ok((end.interrupted, snapshot)),
                Err(RunError::Spawn { program, source }) => {
                    Err(HuntError::Spawn { program, cause: source, dir: manifest.target.dir.clone() })
                }
                Err(RunError::Record(e)) => Err(e.into()),
                Err(RunError::Replayed(e)) => Err(e.into()),
            }
        }
        Some(ladder) => {
            // A refused start removes the directory it created (a new record is discarded whole).
            let made_sandboxes = !dir.join(SANDBOXES).exists();
            let refuse = |session: crate::session::Session, e: HuntError| {
                session.finish();
                if made_sandboxes {
                    let _ = std::fs::remove_dir(dir.join(SANDBOXES));
                }
                Err(e)
            };
            // Absolute, like every path handed to a run, even with a relative --record.
            let sandboxes = std::path::absolute(dir.join(SANDBOXES))
                .and_then(|s| std::fs::create_dir_all(&s).map(|()| s))
                .map_err(|e| HuntError::io(format!("cannot create {}", dir.join(SANDBOXES).display()), e))?;
            let session = crate::session::Session::start(manifest, sink)?;
            let fire = FireRunner {
                attempts: session.attempts(manifest, leak_timeout),
                options: ladder.options.clone(),
                normalizer: ladder.normalizer.clone(),
                sandboxes,
                token_salt: (manifest.seed >> 32) as u32,
                budget: session.durations.budget,
            };
            match fire.check_state() {
                Ok(copied) if fire.options.state.is_some() => sink.event(&Event::StateCopied(&copied))?,
                Ok(_) => {}
                Err(e) => {
                    // Nothing ran: the caller leaves no record behind for a refused state.
                    let state = fire.options.state.clone();
                    let error =
                        FireFailure::State { error: Box::new(e), sandboxes: fire.sandboxes.clone(), state }.into();
                    return refuse(session, error);
                }
            }
            // A resumed ladder drops what it runs again before its first sandbox, whose name may
            // be taken by a left-over: only once nothing that can be seen before a run refuses.
            if ladder.resumed.is_some() {
                if let Err(e) = crate::exec::check_program(manifest.target.program(), manifest.target.dir.as_deref()) {
                    return refuse(session, e.into());
                }
                if let Err(e) = recorder.accept() {
                    return refuse(session, e.into());
                }
            }
            let snapshot = tools.map(|tools| session.snapshot(tools, &manifest.run_id));
            let result = fire.run(&mut FireSinks { recorder, display: sink }, ladder.resumed.as_ref());
            let snapshot = snapshot.and_then(|s| s.join().ok());
            session.finish();
            match result {
                Ok(end) => Ok((end.interrupted, snapshot)),
                Err(FireError::Spawn { program, source }) => {
                    Err(HuntError::Spawn { program, cause: source, dir: manifest.target.dir.clone() })
                }
                Err(e) => Err(FireFailure::Run(e).into()),
            }
        }
    }
}

/// The checked durations of `manifest`'s plan; an error names the record's field.
pub(super) fn check_plan(manifest: &Manifest) -> Result<plan::Durations, HuntError> {
    manifest.plan.check().map_err(HuntError::DamagedPlan)
}

/// The record in `dir` that `--resume` continues, which must hold a hunt of `kind`, with every
/// line of its attempts file readable: a resume refused here has touched nothing.
/// A verification resumes only on the code it started on (see [`crate::kind::verify::code`]).
fn check_code_unchanged(record: &Record, dir: &Path) -> Result<(), HuntError> {
    let Some(options) = &record.manifest.extra.verify else { return Ok(()) };
    let here = std::env::current_dir().map_err(|e| HuntError::io("the current directory", e))?;
    let code_dir = record.manifest.target.dir.as_deref().unwrap_or(&here);
    crate::kind::verify::code::check_unchanged(options, code_dir, dir)
}

fn open_for_resume(dir: &Path, kind: Kind) -> Result<Record, HuntError> {
    let record = Record::open(dir)?;
    for attempt in record.attempts()? {
        attempt?;
    }
    check_plan(&record.manifest).map_err(|e| e.in_record(dir))?;
    if record.manifest.kind != kind {
        let found = record.manifest.kind.name();
        return Err(HuntError::usage(format!(
            "{} holds a {found} record: resume it with `flakehunt {found}`",
            dir.display()
        )));
    }
    if record.manifest.withheld {
        return Err(HuntError::usage(format!(
            "{} cannot be resumed: its target's arguments or matrix values held secrets, which were not written; start a new hunt (or record with --no-redact)",
            dir.display()
        )));
    }
    Ok(record)
}

/// Starts a new record in `dir`: a fresh run id and the manifest.
#[expect(clippy::too_many_arguments, reason = "the manifest's parts, each from its own check")]
fn create_record(
    kind: Kind,
    target: Target,
    settings: Settings,
    cells: Vec<CellSpec>,
    extra: Extra,
    oracle: Option<OracleSpec>,
    seed: u64,
    shard: Option<plan::Shard>,
    dir: &Path,
) -> Result<(Manifest, Recorder), HuntError> {
    if crate::redact::enabled() {
        crate::redact::add_secret_values(secret_values_of(&cells));
    }
    let now = std::time::SystemTime::now();
    let run_id = format!("{}-{:04x}", stamp(now), Rng::new(random_seed()).next_u64() & 0xffff);
    let manifest = Manifest {
        format_version: FORMAT_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_owned(),
        kind,
        run_id,
        target,
        plan: settings,
        cells,
        seed,
        host: crate::host::hostname(),
        started_at: rfc3339(now),
        shard,
        oracle,
        extra,
        redacted: crate::redact::enabled(),
        withheld: false,
    };
    let recorder = Recorder::create(dir, &manifest)?;
    Ok((manifest, recorder))
}

/// The values of the secret-named variables the cells set (a matrix's `-D API_TOKEN=...`, a
/// profile's `env`): the attempts get them, and may print them.
fn secret_values_of(cells: &[CellSpec]) -> Vec<String> {
    let mut values = Vec::new();
    for cell in cells {
        for setting in &cell.overlay {
            match setting {
                plan::Setting::Env { name, value: Some(value) } | plan::Setting::Placeholder { name, value }
                    if crate::redact::is_secret_name(name) =>
                {
                    values.push(value.clone());
                }
                _ => {}
            }
        }
        if let Some(profile) = &cell.profile {
            let env = profile.knobs.env.iter().filter(|(name, _)| crate::redact::is_secret_name(name));
            values.extend(env.map(|(_, value)| value.clone()));
        }
    }
    values
}

/// Removes a record that a failed start left without a single attempt, so that the same
/// `--record` directory can be used again once the command is fixed. Only what this run
/// created is removed (see [`NewDir::discard`]).
fn discard_if_empty(dir: &NewDir) {
    let attempts = dir.path().join("attempts.jsonl");
    if !attempts.metadata().is_ok_and(|m| m.len() == 0) {
        return;
    }
    crate::kind::adapter::discard_build(dir.path());
    dir.discard(&[crate::kind::adapter::GO_BUILD_DIR, SANDBOXES]);
}
