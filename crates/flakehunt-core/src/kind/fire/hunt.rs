//! Fire as a kind of hunt: its plan is the static schedule of its cells, its summary the ladder's
//! verdicts ([`super::summarize`]). Main type: [`Fire`].

/// Fire.
pub struct Fire;

impl crate::kind::Hunt for Fire {
    fn summarize(
        &self,
        record: &crate::record::Record,
    ) -> Result<crate::analysis::Summary, crate::record::RecordError> {
        let mut plan = crate::plan::schedule(&record.manifest);
        let pass = crate::analysis::Pass::over(record, &mut plan, |_| true, None)?;
        // Fire decides completeness itself (its ladder stops at the first rejection).
        let mut summary = super::summarize(record, &record.cells()?, &pass.tally)?;
        pass.checks(record, &mut summary);
        pass.finish(&mut summary);
        Ok(summary)
    }
}
