//! The adaptive hunt as a kind of hunt: its plan is the bandit's ([`super::record::plan_of`]),
//! its summary the common one with the reproduction. Main type: [`Adaptive`].

/// The adaptive hunt.
pub struct Adaptive;

impl crate::kind::Hunt for Adaptive {
    /// A budget of 10 minutes unless given, a runner as wide as its largest `copies=N` arm (the
    /// plan keeps every other arm to one attempt at a time), and a seed fixed now, so that its
    /// shards and its plan options agree on it.
    fn defaults(&self, mut spec: crate::spec::HuntSpec) -> crate::spec::HuntSpec {
        spec.settings.budget.get_or_insert(super::record::DEFAULT_BUDGET);
        spec.settings.jobs = super::bandit::runner_jobs(super::record::cpus());
        spec.seed = Some(spec.seed.unwrap_or_else(crate::rng::random_seed));
        spec
    }

    /// The baseline alone: the plan adds the arms' cells once it has calibrated.
    fn cells(
        &self,
        spec: &crate::spec::HuntSpec,
        target: &crate::plan::Target,
        _: &mut dyn crate::events::EventSink,
    ) -> Result<(Vec<crate::plan::CellSpec>, crate::record::Extra), crate::spec::HuntError> {
        use super::record::{self, TestRunner};
        let t = &spec.target;
        let adapter = if !t.go_test.is_empty() {
            Some(TestRunner::Go)
        } else if t.pytest.is_some() {
            Some(TestRunner::Pytest)
        } else {
            t.cargo_test.is_some().then_some(TestRunner::Cargo)
        };
        let timeout = spec.settings.timeout_given.then_some(spec.settings.timeout);
        let seed = spec.seed.unwrap_or_default();
        let options = record::prepare(target, adapter, seed, spec.oracle.majority, timeout);
        Ok((vec![record::baseline_cell()], crate::record::Extra { bandit: Some(options), ..Default::default() }))
    }

    fn plan(&self, manifest: &crate::record::Manifest) -> Box<dyn crate::plan::Plan> {
        Box::new(super::record::plan_of(manifest))
    }

    fn summarize(
        &self,
        record: &crate::record::Record,
    ) -> Result<crate::analysis::Summary, crate::record::RecordError> {
        let mut plan = self.plan(&record.manifest);
        // A record merged from a hunt's shards: each shard's attempts are a hunt of their own.
        let shards = match record.manifest.shard {
            None => record.merged_shards()?,
            Some(_) => None,
        };
        let mut hunt = super::record::HuntSummary::new(&record.manifest, shards.as_deref());
        let pass = crate::analysis::Pass::over(
            record,
            plan.as_mut(),
            |_| true,
            Some(&mut |recorded, judged| hunt.add(recorded, judged)),
        )?;
        let mut summary = pass.summary(record, plan.as_mut())?;
        pass.checks(record, &mut summary);
        // A hunt is complete when its plan is done, not when it ran as many attempts as it issued.
        hunt.apply(&mut summary);
        pass.finish(&mut summary);
        Ok(summary)
    }
}
