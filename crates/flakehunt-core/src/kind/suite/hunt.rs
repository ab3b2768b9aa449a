//! The suite as a kind of hunt: its plan is the static schedule of its shuffled attempts, its
//! summary the common one of those attempts with each failing test's classification. Main type:
//! [`Suite`].

use crate::kind::suite::cost::StateSearchCost;
use crate::kind::suite::summary::SuiteState;

/// The suite.
pub struct Suite;

impl crate::kind::Hunt for Suite {
    /// The suite's cells (its conditions) before its collection: the setup is a placeholder, as
    /// a Slurm job's checks before it submits need (each shard collects and builds its own).
    fn cells(
        &self,
        spec: &crate::spec::HuntSpec,
        target: &crate::plan::Target,
        _: &mut dyn crate::events::EventSink,
    ) -> Result<(Vec<crate::plan::CellSpec>, crate::record::Extra), crate::spec::HuntError> {
        let placeholder = super::setup::SuiteSetup {
            runner: super::setup::SuiteRunner::Libtest { binary: std::path::PathBuf::new(), show_output: false },
            selection: Vec::new(),
            files: std::path::PathBuf::new(),
            python_path: None,
            collect_seconds: 0.0,
        };
        super::prepare::cells(spec, target, placeholder, None)
    }

    fn summarize(
        &self,
        record: &crate::record::Record,
    ) -> Result<crate::analysis::Summary, crate::record::RecordError> {
        let mut plan = crate::plan::schedule(&record.manifest);
        // Its cells count its shuffled attempts; its confirmation runs are the classification's,
        // below.
        let shuffled =
            |a: &crate::record::Attempt| a.suite.as_ref().is_none_or(|t| t.role == super::record::Role::Shuffled);
        let pass = crate::analysis::Pass::over(record, &mut plan, shuffled, None)?;
        let mut summary = pass.summary(record, &mut plan)?;
        let attempts: Vec<crate::record::Attempt> = record.attempts()?.collect::<Result<_, _>>()?;
        let baseline = record.manifest.cells.first().map(|c| c.name.as_str()).unwrap_or_default();
        let beside = super::side_by_side::verdict(&attempts, baseline);
        if let Some(analysis) = super::analyse::of_record(record, beside)? {
            super::summary::apply(&mut summary, analysis.summary, analysis.complete);
        }
        if let Some(suite) = summary.suite.as_mut() {
            let path = record.dir.join(super::state::FILE);
            let findings = super::state::read(&record.dir).map_err(|e| match e.kind() {
                std::io::ErrorKind::InvalidData => crate::record::RecordError::Corrupt(path.clone(), e.to_string()),
                _ => crate::record::RecordError::Io { path: path.clone(), source: e },
            })?;
            // The searches' runs and their cleanups' checks.
            let runs: Vec<&super::state::SearchRun> = findings
                .iter()
                .flat_map(|f| f.run.iter().chain(f.cleanup.as_ref().and_then(|c| c.run.as_ref())))
                .collect();
            if let Some(setup) = record.manifest.extra.suite.as_ref() {
                suite.cost = super::side_by_side::cost_of(&attempts, baseline, setup.collect_seconds).map(|cost| {
                    let one_at_a_time = setup.one_at_a_time().map(str::to_owned);
                    super::cost::ClassificationCost { one_at_a_time, ..cost.with_state_search(&runs) }
                });
                if let Some(cost) = suite.cost.as_ref().filter(|_| !suite.tests.is_empty()) {
                    summary.notes.push(cost.note());
                }
            }
            suite.apply_state(findings);
        }
        pass.checks(record, &mut summary);
        // A suite is complete when its classification is too.
        if summary.suite.as_ref().is_some_and(|s| !s.classified) {
            summary.complete = false;
        }
        pass.finish(&mut summary);
        Ok(summary)
    }
}
