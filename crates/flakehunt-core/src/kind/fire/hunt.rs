//! Fire as a kind of hunt: its plan is the static schedule of its cells, its summary the ladder's
//! verdicts ([`super::summarize`]). Main type: [`Fire`].

/// Fire.
pub struct Fire;

impl crate::kind::Hunt for Fire {
    /// None: a fire hunt's cells are its ladder's levels, which its own preparation makes
    /// (`prepare::new`).
    fn cells(
        &self,
        _: &crate::spec::HuntSpec,
        _: &crate::plan::Target,
        _: &mut dyn crate::events::EventSink,
    ) -> Result<(Vec<crate::plan::CellSpec>, crate::record::Extra), crate::spec::HuntError> {
        Ok((Vec::new(), crate::record::Extra::default()))
    }

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
