//! The adaptive hunt as a kind of hunt: its plan is the bandit's ([`super::record::plan_of`]),
//! its summary the common one with the reproduction. Main type: [`Adaptive`].

/// The adaptive hunt.
pub struct Adaptive;

impl crate::kind::Hunt for Adaptive {
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
