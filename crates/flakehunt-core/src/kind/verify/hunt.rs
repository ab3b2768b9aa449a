//! Verify as a kind of hunt: its plan is the static schedule of the verified conditions, its
//! summary the common one with the verdict on the fix ([`super::summary::apply`]), or, verifying
//! a fire record, the ladder's ([`super::fire::summarize`]). Main type: [`Verify`].

use crate::analysis::{Pass, Summary};
use crate::record::{Record, RecordError};

/// The verification of a fix.
pub struct Verify;

impl crate::kind::Hunt for Verify {
    /// None: a verification's cells are the verified record's conditions (`prepare::new`), on
    /// one machine.
    fn cells(
        &self,
        _: &crate::spec::HuntSpec,
        _: &crate::plan::Target,
        _: &mut dyn crate::events::EventSink,
    ) -> Result<(Vec<crate::plan::CellSpec>, crate::record::Extra), crate::spec::HuntError> {
        Err(crate::spec::HuntError::usage("verify runs on one machine: it cannot be sharded"))
    }

    fn plan(&self, manifest: &crate::record::Manifest) -> Box<dyn crate::plan::Plan> {
        Box::new(super::VerifyPlan::new(manifest))
    }

    fn summarize(&self, record: &Record) -> Result<Summary, RecordError> {
        // A fire record's verification climbs a ladder: its level runs are its attempts.
        if let (Some(verify), Some(fire)) = (&record.manifest.extra.verify, &record.manifest.extra.fire) {
            return super::fire::summarize(record, verify, fire);
        }
        let mut plan = super::VerifyPlan::new(&record.manifest);
        let pass = Pass::over(record, &mut plan, |_| true, None)?;
        let mut summary = pass.summary(record, &mut plan)?;
        if let Some(options) = &record.manifest.extra.verify {
            let hangs = super::summary::hangs_by_cell(record)?;
            let unreported = super::summary::unreported_by_cell(record, options)?;
            super::summary::apply(&mut summary, options, &hangs, &unreported);
        }
        pass.checks(record, &mut summary);
        pass.finish(&mut summary);
        Ok(summary)
    }
}
