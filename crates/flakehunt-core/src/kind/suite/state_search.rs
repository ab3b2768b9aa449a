//! The state search run for each order-dependent or non-idempotent test after its
//! classification, apart from the findings' types so that the summary, which holds those, does
//! not import the runner. A pytest test gets one cold pytest run with the state plugin (see
//! [`super::state`]), then, when the search wrote a cleanup, one more that checks it; a Go test
//! gets its process-level state compared ([`super::go_state`]).

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use super::go_state::Ran;
use super::state::{read, write, Against, StateFinding, StateRequest, CLEANUP_MODULE, PLUGIN_MODULE};
use super::TestId;
use crate::runner::Finished;

/// Runs of a cleanup's check beyond which it is not tried: a reproducer that failed so seldom
/// that more would be needed proves too little to build on.
const MAX_CHECK_RUNS: u64 = 1000;

/// Searches the state of each test `summary` wants searched
/// ([`super::summary::SuiteSummary::state_wanted`]) that the record's
/// [`super::state::FILE`] does not answer yet (the suite's own options, the baseline cell, the hunt's timeout, a
/// temporary directory of its own as `TMPDIR`), and writes the findings into the record at
/// `dir` as each is had.
pub(crate) fn search(
    exec: &super::run::SuiteExecution<'_>,
    cell: &crate::plan::CellSpec,
    ids: &mut super::run::Ids,
    summary: &super::summary::SuiteSummary,
    dir: &Path,
) -> io::Result<()> {
    let wanted = summary.state_wanted();
    if wanted.is_empty() {
        return Ok(());
    }
    let mut findings = read(dir)?;
    let checks = reproducer_checks(dir)?;
    let mut go = super::go_state::Built::default();
    for (test, polluters, against) in wanted {
        if findings.iter().any(|f| f.test == test) || exec.inner.cancel.is_stopping() {
            continue;
        }
        let mut run = Run { exec, cell, ids };
        let found = match &exec.setup.runner {
            super::setup::SuiteRunner::Pytest { pytest, .. } => {
                let rate = checks.get(&test).map_or([0, 0], |c| c.rate(against == Against::FirstRun));
                pytest_search(&mut run, pytest, &test, &polluters, against, rate)?
            }
            super::setup::SuiteRunner::Go { .. } => {
                let dir = exec.inner.target.dir.clone().unwrap_or_else(|| ".".into());
                let mut runner = |argv: Vec<String>, env: &[(String, String)]| {
                    let ran = run.run(argv, env)?;
                    Ok(ran.map(|f| Ran { how: super::setup::how_it_ended(&f.attempt), stdout: f.stdout }))
                };
                go.search(&dir, &exec.plugins, &mut runner, &test, &polluters, against)?
            }
            super::setup::SuiteRunner::Libtest { .. } => continue,
        };
        let Some(mut finding) = found else { break };
        if crate::redact::enabled() {
            finding.redact();
        }
        findings.push(finding);
        write(dir, &findings)?;
    }
    Ok(())
}

/// What a state search's runs need: the suite's execution, the cell they run in, the ids they
/// take.
pub(crate) struct Run<'e, 'a> {
    pub exec: &'e super::run::SuiteExecution<'a>,
    pub cell: &'e crate::plan::CellSpec,
    pub ids: &'e mut super::run::Ids,
}

impl Run<'_, '_> {
    /// Runs `argv` with `env` in the suite's directory, as an attempt of its own (not recorded);
    /// none when it was cancelled.
    pub fn run(&mut self, argv: Vec<String>, env: &[(String, String)]) -> io::Result<Option<Finished>> {
        let target = crate::plan::Target { argv, shell: false, dir: self.exec.inner.target.dir.clone() };
        let runner = crate::runner::AttemptRunner { target, warm: None, ..self.exec.inner.clone() };
        let (id, iteration) = self.ids.take();
        let spec = crate::plan::AttemptSpec { id, cell: 0, iteration, phase: Some("state".into()), cold: true };
        let finished = runner.run_unsealed(&spec, self.cell, 0, crate::runner::Slot::default(), env)?;
        Ok((!finished.cancelled).then_some(finished))
    }
}

/// One pytest test's search (a cold pytest run with the state plugin), then its cleanup's
/// check: the polluters and the test run, each in a fork, as many times as its reproducer
/// checks' failures `rate` (failures, runs) need, in a pytest that loads the cleanup as a plugin.
/// None when cancelled.
fn pytest_search(
    run: &mut Run<'_, '_>,
    pytest: &super::order::Pytest,
    test: &TestId,
    polluters: &[TestId],
    against: Against,
    rate: [u64; 2],
) -> io::Result<Option<StateFinding>> {
    let exec = run.exec;
    let work = tempfile::Builder::new().prefix("flakehunt-state-").tempdir_in(&exec.plugins)?;
    let tmp = work.path().join("tmp");
    std::fs::create_dir_all(&tmp)?;
    let out = work.path().join("answer.json");
    let raw = |id: &TestId| exec.ids.raw(id).to_owned();
    let mut request = StateRequest::search(raw(test), polluters.iter().map(raw).collect(), against, out.clone());
    let request_file = work.path().join("request.json");
    let ask = |request: &StateRequest, plugins: &[&str], run: &mut Run<'_, '_>| -> io::Result<Option<Finished>> {
        std::fs::write(&request_file, serde_json::to_vec(request).map_err(io::Error::other)?)?;
        let _ = std::fs::remove_file(&out);
        let mut inv = pytest.run(
            &request.order(),
            &exec.plugins,
            exec.setup.python_path.as_deref(),
            &work.path().join("results.jsonl"),
        );
        for plugin in plugins {
            inv.argv.extend(["-p".into(), (*plugin).into()]);
        }
        inv.argv.extend(["--flakehunt-state".into(), request_file.display().to_string()]);
        // The cleanup under check is a module in the work directory.
        for (key, value) in &mut inv.env {
            if key == "PYTHONPATH" {
                *value = format!("{}:{value}", work.path().display());
            }
        }
        inv.env.push(("TMPDIR".into(), tmp.display().to_string()));
        run.run(inv.argv, &inv.env)
    };
    let Some(finished) = ask(&request, &[PLUGIN_MODULE], run)? else { return Ok(None) };
    let answer = std::fs::read_to_string(&out).ok();
    let unanswered = format!("the state search wrote no answer: {}", super::setup::how_it_ended(&finished.attempt));
    let mut finding =
        StateFinding::from_answer(test.clone(), polluters.to_vec(), against, answer.as_deref(), &unanswered);
    let Some(answer) = answer else { return Ok(Some(finding)) };
    let (Some(code), true) = (StateFinding::written_code(&answer), finding.cleanup.is_some()) else {
        return Ok(Some(finding));
    };
    let needed = StateFinding::runs_needed(rate[0], rate[1]);
    let Some(needed) = needed.filter(|n| *n <= MAX_CHECK_RUNS) else {
        finding.unchecked(match needed {
            None => format!(
                "its reproducer failed in {} of {} checks: there is no failure rate for a check to rule out",
                rate[0], rate[1]
            ),
            Some(n) => format!(
                "ruling out its reproducer's {} of {} failures needs {n} runs, more than {MAX_CHECK_RUNS}",
                rate[0], rate[1]
            ),
        });
        return Ok(Some(finding));
    };
    request.check = StateFinding::check_request(&answer, needed);
    std::fs::write(work.path().join(format!("{CLEANUP_MODULE}.py")), code)?;
    let Some(finished) = ask(&request, &[PLUGIN_MODULE, CLEANUP_MODULE], run)? else { return Ok(None) };
    let checked = std::fs::read_to_string(&out).ok();
    let unanswered = format!("its check wrote no answer: {}", super::setup::how_it_ended(&finished.attempt));
    finding.checked(rate, needed, checked.as_deref(), &unanswered);
    Ok(Some(finding))
}

/// A test's reproducer checks in the record: how many reported, how many of them failed, and
/// how many showed a second run failing after a first that passed.
#[derive(Debug, Default, Clone, Copy)]
struct Checks {
    runs: u64,
    failed: u64,
    runs_twice: u64,
    failed_second: u64,
}

impl Checks {
    /// Failures and runs, judged as `verify` judges a suite's reproducer: by the test's own
    /// result (`repeated`: a first run that passed, then a second that failed).
    fn rate(self, repeated: bool) -> [u64; 2] {
        if repeated {
            [self.failed_second, self.runs_twice]
        } else {
            [self.failed, self.runs]
        }
    }
}

/// Each test's reproducer checks in the record at `dir`.
fn reproducer_checks(dir: &Path) -> io::Result<BTreeMap<TestId, Checks>> {
    use super::record::{repeat_confirmed, Role};
    let record = crate::record::Record::open(dir).map_err(io::Error::other)?;
    let mut checks: BTreeMap<TestId, Checks> = BTreeMap::new();
    for attempt in record.attempts().map_err(io::Error::other)? {
        let attempt = attempt.map_err(io::Error::other)?;
        let Some(t) = attempt.suite.as_deref().filter(|t| t.role == Role::Reproducer) else { continue };
        let Some(subject) = &t.subject else { continue };
        let c = checks.entry(subject.clone()).or_default();
        let failed = t.tests.iter().any(|r| r.id == *subject && r.outcome.is_failure());
        if failed || (t.reported(subject) && t.tests.iter().any(|r| r.id == *subject)) {
            c.runs += 1;
            c.failed += u64::from(failed);
        }
        if let Some(second) = repeat_confirmed(&t.tests, subject) {
            c.runs_twice += 1;
            c.failed_second += u64::from(second);
        }
    }
    Ok(checks)
}
