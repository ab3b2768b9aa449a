//! The state search run for the order-dependent and non-idempotent tests after their
//! classification, apart from the findings' types so that the summary, which holds those, does
//! not import the runner. A pytest suite gets one cold pytest run with the state plugin per set
//! of culprits (see [`super::state`]), then one more per cleanup the search wrote, which checks
//! it; a Go suite gets each test's process-level state compared ([`super::go_state`]).

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use super::go_state::Ran;
use super::state::{
    read, write, Against, SearchRun, StateFinding, StateRequest, StateVictim, CLEANUP_MODULE, PLUGIN_MODULE,
};
use super::TestId;
use crate::kind::suite::order::PytestInvocations;
use crate::kind::suite::state::StateFindings;
use crate::kind::suite::summary::SuiteState;
use crate::runner::Finished;

/// Runs of a cleanup's check beyond which it is not tried: a reproducer that failed so seldom
/// that more would be needed proves too little to build on.
const MAX_CHECK_RUNS: u64 = 1000;

/// Searches the state of each test [`wanted`] finds in `summary` that the record's [`FILE`]
/// does not answer yet: for pytest, one cold run per set of polluters (or state-setters), for
/// all its tests, then one per cleanup to check (the suite's own options, the baseline cell, the
/// hunt's timeout, a temporary directory of its own as `TMPDIR`); for Go, two runs per test.
/// Writes the findings into the record at `dir` as each set's are had.
///
/// [`wanted`]: super::summary::SuiteSummary::state_wanted
/// [`FILE`]: super::state::FILE
pub(crate) fn search(
    exec: &super::run::SuiteExecution<'_>,
    cell: &crate::plan::CellSpec,
    ids: &mut super::run::Ids,
    summary: &super::summary::SuiteSummary,
    dir: &Path,
) -> io::Result<()> {
    let mut findings = read(dir)?;
    // The tests of one set of culprits, in the order the summary lists them.
    let mut groups: Vec<Vec<StateVictim>> = Vec::new();
    for (test, polluters, against) in summary.state_wanted() {
        if findings.iter().any(|f| f.test == test) {
            continue;
        }
        let victim = StateVictim::new(test, polluters, against);
        match groups.iter_mut().find(|g| g[0].polluters == victim.polluters && g[0].against() == against) {
            Some(g) => g.push(victim),
            None => groups.push(vec![victim]),
        }
    }
    if groups.is_empty() {
        return Ok(());
    }
    let checks = reproducer_checks(dir)?;
    let mut go = super::go_state::Built::default();
    for victims in groups {
        if exec.inner.cancel.is_stopping() {
            break;
        }
        let mut run = Run { exec, cell, ids };
        let found = match &exec.setup.runner {
            super::setup::SuiteRunner::Pytest { pytest, .. } => pytest_search(&mut run, pytest, &victims, &checks)?,
            super::setup::SuiteRunner::Go { .. } => go_search(&mut run, &mut go, &victims)?,
            super::setup::SuiteRunner::Libtest { .. } => continue,
        };
        let Some(found) = found else { break };
        for mut finding in found {
            if crate::redact::enabled() {
                finding.redact();
            }
            findings.push(finding);
        }
        write(dir, &findings)?;
    }
    Ok(())
}

/// Each of `victims`' process-level state (Go), with the runs that found it; none when
/// cancelled.
fn go_search(
    run: &mut Run<'_, '_>,
    go: &mut super::go_state::Built,
    victims: &[StateVictim],
) -> io::Result<Option<Vec<StateFinding>>> {
    let exec = run.exec;
    let dir = exec.inner.target.dir.clone().unwrap_or_else(|| ".".into());
    let mut found = Vec::new();
    for v in victims {
        let mut ran = Vec::new();
        let mut runner = |argv: Vec<String>, env: &[(String, String)]| {
            let finished = run.run(argv, env)?;
            Ok(finished.map(|f| {
                ran.push((f.attempt.id, f.attempt.seconds));
                Ran { how: super::setup::how_it_ended(&f.attempt), stdout: f.stdout }
            }))
        };
        let Some(mut finding) = go.search(&dir, &exec.plugins, &mut runner, &v.victim, &v.polluters, v.against())?
        else {
            return Ok(None);
        };
        // Its two runs, as one: the id of the last, the time of both.
        finding.run = ran.last().map(|(id, _)| SearchRun {
            id: *id,
            seconds: (ran.iter().map(|(_, s)| s).sum::<f64>() * 1000.0).round() / 1000.0,
        });
        found.push(finding);
    }
    Ok(Some(found))
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

/// One set of pytest tests' search (a cold pytest run with the state plugin), then each
/// cleanup's check: the polluters and the test run, each in a fork, as many times as the test's
/// reproducer checks in `checks` need, in a pytest that loads the cleanup as a plugin. None when
/// cancelled.
fn pytest_search(
    run: &mut Run<'_, '_>,
    pytest: &super::order::Pytest,
    victims: &[StateVictim],
    checks: &BTreeMap<TestId, Checks>,
) -> io::Result<Option<Vec<StateFinding>>> {
    let exec = run.exec;
    let work = tempfile::Builder::new().prefix("flakehunt-state-").tempdir_in(&exec.plugins)?;
    let tmp = work.path().join("tmp");
    std::fs::create_dir_all(&tmp)?;
    let out = work.path().join("answer.json");
    let raw = |id: &TestId| exec.ids.raw(id).to_owned();
    let raw_victims: Vec<StateVictim> = victims
        .iter()
        .map(|v| StateVictim { victim: raw(&v.victim), polluters: v.polluters.iter().map(raw).collect(), ..v.clone() })
        .collect();
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
    let request = StateRequest::search(raw_victims.clone(), out.clone());
    let Some(finished) = ask(&request, &[PLUGIN_MODULE], run)? else { return Ok(None) };
    let text = std::fs::read_to_string(&out).ok();
    let unanswered = format!("the state search wrote no answer: {}", super::setup::how_it_ended(&finished.attempt));
    let searched = SearchRun { id: finished.attempt.id, seconds: (finished.attempt.seconds * 1000.0).round() / 1000.0 };
    let answers = StateFinding::answers(victims, text.as_deref());
    let mut found = Vec::new();
    for ((v, raw_victim), answer) in victims.iter().zip(&raw_victims).zip(answers) {
        let mut finding = StateFinding::from_answer(
            v.victim.clone(),
            v.polluters.clone(),
            v.against(),
            answer.as_deref(),
            &unanswered,
        );
        finding.run = Some(searched.clone());
        let code = answer.as_deref().and_then(StateFinding::written_code).filter(|_| finding.cleanup.is_some());
        if let (Some(code), Some(answer)) = (code, answer.as_deref()) {
            let rate = checks.get(&v.victim).map_or([0, 0], |c| c.rate(v.against() == Against::FirstRun));
            let needed = StateFinding::runs_needed(rate[0], rate[1]);
            match needed.filter(|n| *n <= MAX_CHECK_RUNS) {
                None => finding.unchecked(match needed {
                    None => format!(
                        "its reproducer failed in {} of {} checks: there is no failure rate for a check to rule out",
                        rate[0], rate[1]
                    ),
                    Some(n) => format!(
                        "ruling out its reproducer's {} of {} failures needs {n} runs, more than {MAX_CHECK_RUNS}",
                        rate[0], rate[1]
                    ),
                }),
                Some(needed) => {
                    let mut request = StateRequest::search(vec![raw_victim.clone()], out.clone());
                    request.check = StateFinding::check_request(answer, needed);
                    std::fs::write(work.path().join(format!("{CLEANUP_MODULE}.py")), code)?;
                    let Some(finished) = ask(&request, &[PLUGIN_MODULE, CLEANUP_MODULE], run)? else {
                        return Ok(None);
                    };
                    let checked = std::fs::read_to_string(&out).ok();
                    let unanswered =
                        format!("its check wrote no answer: {}", super::setup::how_it_ended(&finished.attempt));
                    finding.checked(rate, needed, checked.as_deref(), &unanswered);
                    if let Some(c) = &mut finding.cleanup {
                        c.run = Some(SearchRun {
                            id: finished.attempt.id,
                            seconds: (finished.attempt.seconds * 1000.0).round() / 1000.0,
                        });
                    }
                }
            }
        }
        found.push(finding);
    }
    Ok(Some(found))
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
