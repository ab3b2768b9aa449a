//! The state search run for each order-dependent pytest test after its classification (one cold
//! pytest run with the state plugin, see [`super::state`]), apart from the findings' types so
//! that the summary, which holds those, does not import the runner.

use std::io;
use std::path::Path;

use super::state::{read, write, StateFinding, StateRequest, CONFIRMATIONS, MAX_TRIALS, PLUGIN_MODULE};
use super::TestId;

/// Searches the state of each test [`wanted`] finds in `summary` that the record's [`FILE`]
/// does not answer yet, one cold pytest run each (the suite's own options, the baseline cell,
/// the hunt's timeout, a temporary directory of its own as `TMPDIR`), and writes the findings
/// into the record at `dir` as each is had.
pub(crate) fn search(
    exec: &super::run::SuiteExecution<'_>,
    cell: &crate::plan::CellSpec,
    ids: &mut super::run::Ids,
    summary: &super::summary::SuiteSummary,
    dir: &Path,
) -> io::Result<()> {
    let super::setup::SuiteRunner::Pytest { pytest, .. } = &exec.setup.runner else { return Ok(()) };
    let mut findings = read(dir)?;
    for (test, polluters, brittle) in summary.state_wanted() {
        if findings.iter().any(|f| f.test == test) || exec.inner.cancel.is_stopping() {
            continue;
        }
        let work = tempfile::Builder::new().prefix("flakehunt-state-").tempdir_in(&exec.plugins)?;
        let tmp = work.path().join("tmp");
        std::fs::create_dir_all(&tmp)?;
        let out = work.path().join("answer.json");
        let raw = |id: &TestId| exec.ids.raw(id).to_owned();
        let request = StateRequest {
            victim: raw(&test),
            polluters: polluters.iter().map(raw).collect(),
            brittle,
            runs: CONFIRMATIONS,
            max_trials: MAX_TRIALS,
            out: out.clone(),
        };
        let request_file = work.path().join("request.json");
        std::fs::write(&request_file, serde_json::to_vec(&request).map_err(io::Error::other)?)?;
        let mut order = request.polluters.clone();
        order.push(request.victim.clone());
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
        let mut finding = StateFinding::from_answer(test, polluters, brittle, answer.as_deref(), &unanswered);
        if crate::redact::enabled() {
            finding.redact();
        }
        findings.push(finding);
        write(dir, &findings)?;
    }
    Ok(())
}
