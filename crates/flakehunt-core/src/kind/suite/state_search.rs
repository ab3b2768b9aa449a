//! The state search run for the order-dependent pytest tests after their classification (one cold
//! pytest run with the state plugin per set of culprits, see [`super::state`]), apart from the findings' types so
//! that the summary, which holds those, does not import the runner.

use std::io;
use std::path::Path;

use super::state::{
    read, write, SearchRun, StateFinding, StateRequest, StateVictim, CONFIRMATIONS, MAX_TRIALS, PLUGIN_MODULE,
};
use super::TestId;

/// Searches the state of each test [`wanted`] finds in `summary` that the record's [`FILE`]
/// does not answer yet: one cold pytest run per set of polluters (or state-setters), for all
/// its tests (the suite's own options, the baseline cell, the hunt's timeout, a temporary
/// directory of its own as `TMPDIR`), and writes the findings into the record at `dir` as each
/// run ends.
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
    let super::setup::SuiteRunner::Pytest { pytest, .. } = &exec.setup.runner else { return Ok(()) };
    let mut findings = read(dir)?;
    // The tests of one set of culprits, in the order the summary lists them.
    let mut groups: Vec<Vec<StateVictim>> = Vec::new();
    for (test, polluters, brittle) in summary.state_wanted() {
        if findings.iter().any(|f| f.test == test) {
            continue;
        }
        let victim = StateVictim { victim: test, polluters, brittle };
        match groups.iter_mut().find(|g| g[0].polluters == victim.polluters && g[0].brittle == brittle) {
            Some(g) => g.push(victim),
            None => groups.push(vec![victim]),
        }
    }
    for victims in groups {
        if exec.inner.cancel.is_stopping() {
            break;
        }
        let work = tempfile::Builder::new().prefix("flakehunt-state-").tempdir_in(&exec.plugins)?;
        let tmp = work.path().join("tmp");
        std::fs::create_dir_all(&tmp)?;
        let out = work.path().join("answer.json");
        let raw = |id: &TestId| exec.ids.raw(id).to_owned();
        let request = StateRequest {
            victims: victims
                .iter()
                .map(|v| StateVictim {
                    victim: raw(&v.victim),
                    polluters: v.polluters.iter().map(raw).collect(),
                    brittle: v.brittle,
                })
                .collect(),
            runs: CONFIRMATIONS,
            max_trials: MAX_TRIALS,
            out: out.clone(),
        };
        let request_file = work.path().join("request.json");
        std::fs::write(&request_file, serde_json::to_vec(&request).map_err(io::Error::other)?)?;
        // Each test the run names once: the culprits, then the tests.
        let mut order: Vec<TestId> = request.victims[0].polluters.clone();
        order.extend(request.victims.iter().map(|v| v.victim.clone()));
        let mut inv =
            pytest.run(&order, &exec.plugins, exec.setup.python_path.as_deref(), &work.path().join("results.jsonl"));
        inv.argv.extend(["-p".into(), PLUGIN_MODULE.into(), "--flakehunt-state".into()]);
        inv.argv.push(request_file.display().to_string());
        inv.env.push(("TMPDIR".into(), tmp.display().to_string()));
        let target = crate::plan::Target { argv: inv.argv, shell: false, dir: exec.inner.target.dir.clone() };
        let runner = crate::runner::AttemptRunner { target, warm: None, ..exec.inner.clone() };
        let (id, iteration) = ids.take();
        let spec = crate::plan::AttemptSpec { id, cell: 0, iteration, phase: Some("state".into()), cold: true };
        let finished = runner.run_unsealed(&spec, cell, 0, crate::runner::Slot::default(), &inv.env)?;
        if finished.cancelled {
            break;
        }
        let answer = std::fs::read_to_string(&out).ok();
        let unanswered = format!("the state search wrote no answer: {}", super::setup::how_it_ended(&finished.attempt));
        let run = SearchRun { id, seconds: (finished.attempt.seconds * 1000.0).round() / 1000.0 };
        for mut finding in StateFinding::from_answers(&victims, answer.as_deref(), &unanswered) {
            if crate::redact::enabled() {
                finding.redact();
            }
            finding.run = Some(run.clone());
            findings.push(finding);
        }
        write(dir, &findings)?;
    }
    Ok(())
}
