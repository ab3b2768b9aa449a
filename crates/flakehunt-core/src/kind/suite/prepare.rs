//! `flakehunt suite` on the one driver: its preparation (the interpreter, the build, the one
//! collection, the profiles as cells) and its run (the shuffled attempts through the runner,
//! then the classification's confirmation runs, recorded as attempts of the baseline cell).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::events::{Event, EventSink, Fanout};
use crate::exec::python;
use crate::kind::suite::analyse::{self, Replay};
use crate::kind::suite::collect::{self, collect_pytest, collection_limit};
use crate::kind::suite::order::{GoTest, Pytest};
use crate::kind::suite::record::Role;
use crate::kind::suite::run::{Ids, Live, SuiteExecution};
use crate::kind::suite::setup::{SetupRuns, SuiteRunner, SuiteSetup, PLUGIN_DIR};
use crate::kind::suite::written::WrittenIds;
use crate::kind::suite::{pytestlog, repeat};
use crate::plan::{CellSpec, Plan, Target};
use crate::record::{Adapter, Extra, Manifest, Record, Recorder};
use crate::runner::{AttemptRunner, RunError, Runner};
use crate::snapshot::commands::{self, Probe, Ran};
use crate::spec::{HuntError, HuntKind, HuntSpec};

/// Refuses what a suite does not take, before anything is touched.
pub(crate) fn check(spec: &HuntSpec) -> Result<(), HuntError> {
    let t = &spec.target;
    if !t.command.is_empty() || t.shell.is_some() {
        return Err(HuntError::usage(
            "suite runs the test runner itself: drop the command after -- (and --shell), and give --pytest [PATH...], --go-test PKG or --cargo-test [-p PKG]",
        ));
    }
    if !t.has_adapter() {
        return Err(HuntError::usage(
            "suite needs a test runner: give --pytest [PATH...], --go-test PKG or --cargo-test [-p PKG]",
        ));
    }
    if spec.oracle.is_given() {
        return Err(HuntError::usage(
            "suite judges each test by its runner's own results: drop the oracle options (--fail-if, --pass-if, --expect-stdout, --ignore, --oracle)",
        ));
    }
    if spec.settings.until_fails.is_some() {
        return Err(HuntError::usage(
            "--until-fails stops a cell at its failures, which a suite's attempts all have: drop it",
        ));
    }
    if t.go_test.len() > 1 {
        return Err(HuntError::usage(format!(
            "suite takes --go-test PKG (the whole package's tests), not '{}': give the other options before --go-test",
            t.go_test.join(" ")
        )));
    }
    Ok(())
}

/// The target shown for the hunt, its setup, and the adapter that built its binary; the Go
/// binary is built into `dir`.
pub(crate) fn prepare(
    spec: &HuntSpec,
    dir: &Path,
) -> Result<(Target, SuiteSetup, Option<Adapter>, crate::kind::adapter::Built), HuntError> {
    let t = &spec.target;
    let started = std::time::Instant::now();
    let files = std::path::absolute(dir).map_err(|e| HuntError::io(format!("cannot name {}", dir.display()), e))?;
    let python_path = std::env::var("PYTHONPATH").ok().filter(|p| !p.is_empty());
    let mut checks = crate::kind::adapter::Built::default();
    let mut collect_seconds = None;
    let (target, runner, selection, adapter) = if let Some(paths) = &t.pytest {
        let (target, runner, selection, built, seconds) =
            pytest(t.python.as_deref(), paths, spec.asked_checks(), collection_limit(spec))?;
        checks = built;
        collect_seconds = Some(seconds);
        (target, runner, selection, None)
    } else if let Some(pkg) = t.go_test.first() {
        let (built, adapter, applied) =
            crate::kind::adapter::go_test(std::slice::from_ref(pkg), dir, spec.asked_checks(), None)?;
        checks = applied;
        let (runner, selection) = go(&adapter, collection_limit(spec))?;
        // Shown as the user's command, not the binary in this record (shards merge on it).
        let mut target = Target::argv(vec!["go".into(), "test".into(), pkg.clone()]);
        target.dir = built.dir;
        (target, runner, selection, Some(adapter))
    } else {
        let name = t.cargo_test.as_deref().unwrap_or("");
        let (target, runner, selection) = libtest(t.package.as_deref(), name, spec.asked_checks())?;
        if let SuiteRunner::Libtest { show_output: true, .. } = runner {
            checks.checks.thread_panics = true;
        }
        (target, runner, selection, None)
    };
    if selection.is_empty() {
        return Err(HuntError::usage("the test runner collected no tests: check the paths or the package given"));
    }
    crate::bounds::check_runs("the collected tests", selection.len() as u64)?;
    let setup = SuiteSetup {
        runner,
        selection,
        files,
        python_path,
        collect_seconds: (collect_seconds.unwrap_or_else(|| started.elapsed().as_secs_f64()) * 1000.0).round() / 1000.0,
    };
    Ok((target, setup, adapter, checks))
}

/// The cells (`--profiles`, as sweep chooses them) and the manifest's `extra`.
pub(crate) fn cells(
    spec: &HuntSpec,
    target: &Target,
    setup: SuiteSetup,
    adapter: Option<Adapter>,
) -> Result<(Vec<CellSpec>, Extra), HuntError> {
    let HuntKind::Suite(req) = &spec.kind else { unreachable!("a suite's cells") };
    let profiles = if req.profiles.is_empty() { vec!["default".to_owned()] } else { req.profiles.clone() };
    let profiles = crate::probe::select(&profiles, &spec.config, target)?;
    if req.strict {
        crate::probe::refuse_inert(&profiles, crate::record::Kind::Suite)?;
    }
    let cells = profiles.into_iter().map(CellSpec::for_profile).collect();
    Ok((cells, Extra { adapter, suite: Some(setup), ..Extra::default() }))
}

/// `--pytest [PATH...]`: the interpreter the user means, with pytest, and its collection
/// through flakehunt's plugin, within `timeout`, with the seconds that collection took (a cold
/// start of the suite up to its first test). Runs start in pytest's rootdir, which node ids are
/// relative to.
fn pytest(
    explicit: Option<&Path>,
    paths: &[String],
    asked: crate::checks::Checks,
    timeout: Duration,
) -> Result<(Target, SuiteRunner, Vec<String>, crate::kind::adapter::Built, f64), HuntError> {
    let cwd = std::env::current_dir().map_err(|e| HuntError::io("cannot read the current directory", e))?;
    let venv = std::env::var_os("VIRTUAL_ENV");
    let interpreter = python::interpreter(explicit, venv.as_deref(), &cwd)?;
    let program = interpreter.program.display().to_string();
    let scratch = tempfile::Builder::new()
        .prefix("flakehunt-collect-")
        .tempdir()
        .map_err(|e| HuntError::io("cannot create a directory for the collection", e))?;
    pytestlog::write_plugin(scratch.path()).map_err(|e| {
        HuntError::io(format!("cannot write flakehunt's pytest plugin into {}", scratch.path().display()), e)
    })?;
    let mut pytest = Pytest::new(program.clone());
    let mut started = std::time::Instant::now();
    let mut collected = collect_pytest(&interpreter.program, &pytest, paths, scratch.path(), timeout)?;
    if collected.xdist {
        // Every attempt runs its tests in its order in one process: pytest-xdist must not
        // distribute them (nor the collection, whose items would be the workers').
        pytest.options.push("-n0".into());
        started = std::time::Instant::now();
        collected = collect_pytest(&interpreter.program, &pytest, paths, scratch.path(), timeout)?;
    }
    let seconds = started.elapsed().as_secs_f64();
    let ids = collected.items.unwrap_or_default();
    pytest.initial_paths = collected.initialpaths;
    pytest.coverage = collected.coverage;
    let mut built = crate::kind::adapter::Built::default();
    if asked.thread_exceptions {
        // After the collection, which the check has nothing to do with.
        let support = crate::checks::python::PytestSupport::of(&interpreter.program);
        pytest.options.extend(support.options);
        built.checks.thread_exceptions = true;
        built.note = support.note;
    }
    let mut argv = vec![program, "-m".into(), "pytest".into()];
    argv.extend(paths.iter().cloned());
    let mut target = Target::argv(argv);
    if let Some(root) = collected.rootdir.filter(|r| std::fs::canonicalize(r).ok() != std::fs::canonicalize(&cwd).ok())
    {
        target = target.in_dir(crate::kind::adapter::relative_to_cwd(&root)?);
        pytest.root = Some(root.display().to_string());
    }
    Ok((target, SuiteRunner::Pytest { pytest, paths: paths.to_vec() }, ids, built, seconds))
}

/// `--go-test PKG`: the binary the adapter built, its framing and its test list, each run within
/// `timeout`. Go before 1.17 has no `-test.shuffle`, which every attempt's order needs.
fn go(adapter: &Adapter, timeout: Duration) -> Result<(SuiteRunner, Vec<String>), HuntError> {
    let Adapter::GoTest { package, binary, dir, .. } = adapter else { unreachable!("the go adapter") };
    let version = Command::new("go").args(["env", "GOVERSION"]).output().ok().filter(|o| o.status.success());
    let version = version.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned()).unwrap_or_default();
    if go_minor(&version).is_some_and(|minor| minor < 17) {
        return Err(HuntError::usage(format!(
            "suite --go-test needs Go 1.17 or later (each attempt's order comes from -test.shuffle); this go is {version}"
        )));
    }
    let run = |args: &[&str]| {
        let mut command = Command::new(binary);
        command.args(args).current_dir(dir);
        commands::run_all(vec![Probe { command, cap: 16 << 20, timeout }], None, None).pop().expect("one result")
    };
    let list = match run(&["-test.list", "."]) {
        Ran::Exited { stdout, .. } => String::from_utf8_lossy(&stdout).into_owned(),
        Ran::NotStarted(e) => return Err(HuntError::io("cannot list the tests of the Go test binary", e)),
        Ran::TimedOut(after) => {
            return Err(HuntError::usage(format!(
                "--go-test: the test binary's -test.list did not finish within {} s (--timeout, and at least 60 s): look for an init or a TestMain that hangs",
                after.as_secs_f64()
            )))
        }
    };
    let framing = run(&["-test.v=test2json", "-test.run=^$"]).success().is_some();
    let test2json = Command::new("go")
        .args(["tool", "-n", "test2json"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|p| Path::new(p).is_file());
    let go = GoTest { go: "go".into(), package: package.clone(), binary: binary.into(), framing, test2json };
    Ok((SuiteRunner::Go { go, narrowed: false }, collect::go_test_names(&list)))
}

/// The minor version of `go1.M[.P]`, if `version` is one.
fn go_minor(version: &str) -> Option<u32> {
    let rest = version.strip_prefix("go1.")?;
    rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// `--cargo-test [NAME] [-p PKG]`: the one test binary of the build that has tests (NAME, when
/// given, picks among several by file name). The thread check of `asked` makes its runs show
/// passing tests' output, where their threads' panics are.
fn libtest(
    package: Option<&str>,
    name: &str,
    asked: crate::checks::Checks,
) -> Result<(Target, SuiteRunner, Vec<String>), HuntError> {
    let binaries = crate::kind::adapter::cargo_build(package, None)?;
    let mut with_tests = Vec::new();
    for bin in binaries {
        let out = Command::new(&bin.executable)
            .args(["--list", "--format", "terse"])
            .current_dir(&bin.package_dir)
            .stderr(Stdio::null())
            .output()
            .map_err(|e| HuntError::io(format!("cannot list the tests of {}", bin.executable.display()), e))?;
        let tests = collect::libtest_names(&String::from_utf8_lossy(&out.stdout));
        let file = bin.executable.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        if !tests.is_empty() && file.starts_with(name) {
            with_tests.push((bin, file, tests));
        }
    }
    match with_tests.len() {
        0 => Err(HuntError::usage("--cargo-test: the build has no test binary with tests")),
        1 => {
            let (bin, _, tests) = with_tests.remove(0);
            let mut argv = vec!["cargo".to_owned(), "test".to_owned()];
            argv.extend(package.map(|p| ["-p".to_owned(), p.to_owned()]).into_iter().flatten());
            let target = Target::argv(argv).in_dir(bin.package_dir);
            let runner = SuiteRunner::Libtest { binary: bin.executable, show_output: asked.thread_panics };
            Ok((target, runner, tests))
        }
        _ => {
            let names: Vec<String> = with_tests.iter().map(|(_, f, _)| f.clone()).collect();
            Err(HuntError::usage(format!(
                "--cargo-test: {} test binaries have tests ({}): name one (--cargo-test NAME, the start of its file name) or give -p PKG",
                names.len(),
                names.join(", ")
            )))
        }
    }
}

/// Runs a suite hunt's plan, then its classification, recording both; `interrupted`.
pub(crate) fn execute(
    manifest: &Manifest,
    dir: &Path,
    recorder: &mut Recorder,
    session: &crate::session::Session,
    leak_timeout: std::time::Duration,
    sink: &mut dyn EventSink,
) -> Result<bool, HuntError> {
    let setup = manifest.extra.suite.as_ref().ok_or_else(|| {
        HuntError::Damaged(format!(
            "{}: the manifest has no suite setup (extra.suite): it was edited or damaged",
            dir.display()
        ))
    })?;
    // A suite's plan is the static schedule of its shuffled attempts (`Suite` keeps `Hunt::plan`'s).
    let mut plan = crate::plan::schedule(manifest);
    let mut done = 0u64;
    let mut replay = Replay::default();
    let mut last = None;
    let mut held = Vec::new();
    for attempt in Record::open(dir)?.attempts()? {
        let attempt = attempt?;
        last = last.max(Some(attempt.id));
        match attempt.suite {
            Some(t) if t.role != Role::Shuffled => held.push((attempt.id, *t)),
            _ => {
                plan.observe(&attempt);
                done += 1;
            }
        }
    }
    // Answered in id order, as `report` answers them (runs had side by side are written as
    // they end).
    held.sort_by_key(|(id, _)| *id);
    held.into_iter().for_each(|(_, t)| replay.add(t));
    // A pytest suite's warm parents collect the whole selection once; each attempt runs its part.
    let warm = setup.warm_target().and_then(|target| session.warm_cells_of(manifest, target));
    let plugins = tempfile::Builder::new()
        .prefix("flakehunt-suite-")
        .tempdir()
        .map_err(|e| HuntError::io("cannot create a directory for flakehunt's pytest plugins", e))?;
    let _tracked = session.watchdog.as_ref().map(|w| w.track_dir(plugins.path()));
    crate::kind::suite::setup::write_plugins(plugins.path()).map_err(|e| {
        HuntError::io(format!("cannot write flakehunt's pytest plugins into {}", plugins.path().display()), e)
    })?;
    let inner = AttemptRunner { warm: warm.as_ref().map(|w| w as _), ..session.attempts(manifest, leak_timeout) };
    // The classification works on the ids as the record holds them (as `report` does); each
    // run maps them back to the real ones.
    let ids = WrittenIds::new(&setup.selection);
    let written_setup = ids.setup(setup);
    let exec = SuiteExecution {
        inner,
        setup,
        seed: manifest.seed,
        ids: &ids,
        said_cold: Default::default(),
        plugins: plugins.path().to_owned(),
    };
    let runner = Runner { attempts: exec.clone(), jobs: manifest.plan.jobs as usize, budget: session.durations.budget };
    let mut sinks = Fanout(vec![recorder as &mut dyn EventSink, sink]);
    sinks.event(&Event::Started { planned: plan.planned(), done })?;
    let end = runner.run(&mut plan, &mut sinks).map_err(|e| run_error(e, manifest))?;
    if end.interrupted {
        return Ok(true);
    }
    // The repeat runs load the plugin from the record, where printed reproducers load it from
    // too; written once the shuffled attempts are in (a resumed record that has it already is
    // left as it is).
    let plugin_dir = setup.plugin_dir();
    std::fs::create_dir_all(&plugin_dir).and_then(|()| repeat::write_plugin(&plugin_dir)).map_err(|e| {
        HuntError::io(format!("cannot write the repeat plugin into {}", dir.join(PLUGIN_DIR).display()), e)
    })?;
    // The classification starts from the shuffled attempts of the whole record.
    let record = Record::open(dir)?;
    let tallies = analyse::shuffled_tallies(&record)?;
    let cells: Vec<String> = manifest.cells.iter().map(|c| c.name.clone()).collect();
    let planned = manifest.plan.runs.saturating_mul(manifest.cells.len() as u64);
    let reference = {
        let shuffled: Vec<crate::record::Attempt> = record
            .attempts()?
            .filter_map(Result::ok)
            .filter(|a| a.suite.as_ref().is_some_and(|t| t.role == Role::Shuffled))
            .collect();
        crate::kind::suite::side_by_side::reference(&shuffled, &manifest.cells[0].name)
            .and_then(|a| Some((a.iteration, a.suite.as_deref()?.clone())))
    };
    let ids = Ids::new(planned, manifest.plan.runs, manifest.shard, last);
    let mut live = Live::new(&exec, manifest.cells[0].clone(), &mut sinks, replay, ids);
    live.reference = reference;
    let analysis = analyse::analyse(&written_setup, tallies, &cells, &mut live);
    if let Some(e) = live.error {
        return Err(e.into());
    }
    if let Some(source) = live.fatal {
        return Err(run_error(RunError::Spawn { program: setup_program(setup), source }, manifest));
    }
    // What the order-dependent tests trip over (pytest): its own runs, not recorded attempts.
    super::state_search::search(&exec, &live.cell, &mut live.ids, &analysis.summary, dir)
        .map_err(|e| HuntError::io("cannot search the state an order-dependent test trips over", e))?;
    Ok(exec.inner.cancel.is_stopping())
}

fn setup_program(setup: &SuiteSetup) -> String {
    match &setup.runner {
        SuiteRunner::Pytest { pytest, .. } => pytest.python.clone(),
        SuiteRunner::Go { go, .. } => go.binary.display().to_string(),
        SuiteRunner::Libtest { binary, .. } => binary.display().to_string(),
    }
}

fn run_error(e: RunError, manifest: &Manifest) -> HuntError {
    match e {
        RunError::Spawn { program, source } => {
            HuntError::Spawn { program, cause: source, dir: manifest.target.dir.clone() }
        }
        RunError::Record(e) => e.into(),
        RunError::Replayed(e) => e.into(),
    }
}
