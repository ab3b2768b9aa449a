//! A suite record's verification runs each classified test's reproducer as the suite checked it:
//! as the printed command is pasted, with the runner's structured results read (pytest's results
//! plugin, Go's test2json events), so that an attempt is judged by the test's own result, not by
//! the process's exit status or by what its output says. A `condition-sensitive` test, which has
//! no reproducer, is checked by shuffled attempts of the whole suite under its profile, judged
//! the same way. Main type: [`Reproducers`].

use std::path::Path;

use super::options::Condition;
use super::summary::failed_signature;
use crate::exec::{Cancel, Watchdog};
use crate::kind::suite::run::SuiteExecution;
use crate::kind::suite::setup::{Request, SetupRuns};
use crate::plan::{AttemptSpec, CellSpec};
use crate::record::{Attempt, Outcome};
use crate::runner::{Execute, Finished, Slot};

/// Runs a suite verification's attempts: each cell's test's reproducer (or, for a test that has
/// none, a shuffled attempt of the suite under the cell's profile), through the suite's own
/// execution.
#[derive(Debug, Clone)]
pub struct Reproducers<'a> {
    /// The suite's execution of reproducer checks (the verification's setup: the verified
    /// suite's runner, its scratch directories in the verification's record).
    pub suite: SuiteExecution<'a>,
    /// The verification's conditions, each a test and its reproducer, by cell.
    pub conditions: &'a [Condition],
}

impl Execute for Reproducers<'_> {
    fn run(
        &self,
        spec: &AttemptSpec,
        cell: &CellSpec,
        worker: usize,
        slot: Slot,
        _extra_env: &[(String, String)],
    ) -> Result<Finished, std::io::Error> {
        let condition = self.conditions.iter().find(|c| c.cell == cell.name && c.test.is_some());
        let Some((test, condition)) = condition.and_then(|c| c.test.as_ref().map(|t| (t, c))) else {
            return Err(std::io::Error::other(format!("no reproducer for the verification's cell {}", cell.name)));
        };
        // A test without a reproducer (`condition-sensitive`) is checked as the suite saw it
        // fail: a shuffled attempt of the whole suite under its cell's profile.
        let req = if condition.reproducer.is_empty() {
            self.suite.ids.written_request(&self.suite.setup.shuffled(self.suite.seed, spec.id))
        } else {
            Request::reproducer(test, condition.reproducer.clone())
        };
        let mut finished = self.suite.run_request(spec, cell, worker, slot, &req)?;
        judge_by_the_test(&mut finished.attempt, test);
        Ok(finished)
    }

    fn cancel(&self) -> &Cancel {
        self.suite.cancel()
    }

    fn program(&self) -> &str {
        self.suite.program()
    }

    fn watchdog(&self) -> Option<&Watchdog> {
        self.suite.watchdog()
    }

    fn in_dir(&self, dir: &Path, env: Vec<(String, String)>) -> Self {
        Self { suite: self.suite.in_dir(dir, env), ..self.clone() }
    }

    fn with_shell(&self, script: &str) -> Self {
        Self { suite: self.suite.with_shell(script), ..self.clone() }
    }
}

/// What a suite verification's runs need besides the attempt runner: flakehunt's pytest
/// plugins, written for this run (and removed with it), and the suite's ids as written.
#[derive(Debug)]
pub struct SuiteFiles {
    /// The plugins' directory.
    pub plugins: tempfile::TempDir,
    ids: crate::redact::ids::WrittenIds,
}

impl SuiteFiles {
    /// The files of the verification `manifest` records, when it verifies a suite (its
    /// `extra.suite`, and conditions with reproducers); none otherwise.
    pub fn of(manifest: &crate::record::Manifest) -> Result<Option<Self>, crate::spec::HuntError> {
        let (Some(setup), Some(_)) = (&manifest.extra.suite, &manifest.extra.verify) else { return Ok(None) };
        let plugins = tempfile::Builder::new()
            .prefix("flakehunt-verify-")
            .tempdir()
            .map_err(|e| crate::spec::HuntError::io("cannot create a directory for flakehunt's pytest plugins", e))?;
        crate::kind::suite::setup::write_plugins(plugins.path()).map_err(|e| {
            crate::spec::HuntError::io(
                format!("cannot write flakehunt's pytest plugins into {}", plugins.path().display()),
                e,
            )
        })?;
        Ok(Some(Self { plugins, ids: crate::redact::ids::WrittenIds::new(&setup.selection) }))
    }

    /// The execution of the verification `manifest` records, its attempts run by `inner`.
    pub fn execution<'a>(
        &'a self,
        inner: crate::runner::AttemptRunner<'a>,
        manifest: &'a crate::record::Manifest,
    ) -> Option<Reproducers<'a>> {
        let (setup, verify) = (manifest.extra.suite.as_ref()?, manifest.extra.verify.as_ref()?);
        let suite = SuiteExecution {
            inner,
            setup,
            seed: manifest.seed,
            ids: &self.ids,
            said_cold: Default::default(),
            plugins: self.plugins.path().to_owned(),
        };
        Some(Reproducers { suite, conditions: &verify.conditions })
    }
}

/// Makes `attempt`'s outcome the verified `test`'s own result, when its results hold one: a
/// failure of it (any of its runs) fails the attempt, signed by it alone; its passing passes
/// the attempt whatever else failed in the process (another test of the reproducer, a plugin's
/// teardown), which is not the failure verified. An attempt whose results hold nothing of the
/// test keeps how its process ended (the summary sets a failed one aside: no evidence either
/// way), and one ended by a limit (a hang, a slow attempt) keeps that.
pub fn judge_by_the_test(attempt: &mut Attempt, test: &str) {
    let Some(t) = attempt.suite.as_deref() else { return };
    let mut runs = t.tests.iter().filter(|r| r.id == test).peekable();
    if runs.peek().is_none() || matches!(attempt.outcome, Outcome::Timeout | Outcome::Slow) {
        return;
    }
    let failed = runs.any(|r| r.outcome.is_failure());
    if failed {
        if !attempt.outcome.is_failure() {
            attempt.outcome = Outcome::Fail;
        }
        let status = attempt.exit_code.map_or_else(|| attempt.outcome.name().to_owned(), |c| format!("exit {c}"));
        attempt.signature = Some(failed_signature(&status, test));
    } else if attempt.outcome.is_failure() {
        attempt.outcome = Outcome::Pass;
        attempt.signature = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::suite::record::{AttemptTests, Role};
    use crate::kind::suite::{TestOutcome, TestResult};
    use crate::kind::verify::summary::reported;

    fn run(exit: i32, results: &[(&str, TestOutcome)]) -> Attempt {
        let mut a: Attempt = serde_json::from_value(serde_json::json!({
            "id": 0, "cell": "b::v", "iteration": 1, "started_at": "", "seconds": 0.1,
            "outcome": if exit == 0 { "pass" } else { "fail" }, "exit_code": exit,
            "signal": null, "stdout_tail": "", "stderr_tail": "",
            "signature": if exit == 0 { None } else { Some(format!("exit {exit}: failed: a::p, b::v")) },
        }))
        .unwrap();
        a.suite = Some(Box::new(AttemptTests {
            role: Role::Reproducer,
            subject: Some("b::v".into()),
            order: vec![],
            shuffle: None,
            tests: results
                .iter()
                .map(|(id, outcome)| TestResult { id: (*id).into(), outcome: *outcome, message: None })
                .collect(),
            reproducer: vec![],
            unreported: vec![],
            incomplete: None,
            failed_otherwise: None,
            strategy: None,
        }));
        a
    }

    #[test]
    fn the_test_s_own_result_decides() {
        // Another test of the reproducer failed, the verified one passed: no failure of it.
        let mut a = run(1, &[("a::p", TestOutcome::Fail), ("b::v", TestOutcome::Pass)]);
        judge_by_the_test(&mut a, "b::v");
        assert_eq!((a.outcome, a.signature.as_deref()), (Outcome::Pass, None));
        // It failed: signed by it alone, whatever else failed with it.
        let mut a = run(1, &[("a::p", TestOutcome::Fail), ("b::v", TestOutcome::Fail)]);
        judge_by_the_test(&mut a, "b::v");
        assert_eq!((a.outcome, a.signature.as_deref()), (Outcome::Fail, Some("exit 1: failed: b::v")));
        // Its second run failed in a process that exited 0 (a plugin that hides it): a failure.
        let mut a = run(0, &[("b::v", TestOutcome::Pass), ("b::v", TestOutcome::Error)]);
        judge_by_the_test(&mut a, "b::v");
        assert_eq!((a.outcome, a.signature.as_deref()), (Outcome::Fail, Some("exit 0: failed: b::v")));
        // Nothing of it reported: as the process ended, for the summary to set aside.
        let mut a = run(2, &[("a::p", TestOutcome::Pass)]);
        judge_by_the_test(&mut a, "b::v");
        assert_eq!(a.outcome, Outcome::Fail);
        assert!(!reported(&a, "b::v"));
    }
}
