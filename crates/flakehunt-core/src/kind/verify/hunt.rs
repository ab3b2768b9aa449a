//! Verify as a kind of hunt: its plan is the static schedule of the verified conditions, its
//! summary the common one with the verdict on the fix ([`super::summary::apply`]). Main type:
//! [`Verify`].

use crate::analysis::{Pass, Summary};
use crate::record::{Record, RecordError};

/// The verification of a fix.
pub struct Verify;

impl crate::kind::Hunt for Verify {
    fn summarize(&self, record: &Record) -> Result<Summary, RecordError> {
        let mut plan = crate::plan::schedule(&record.manifest);
        let pass = Pass::over(record, &mut plan, |_| true, None)?;
        let mut summary = pass.summary(record, &mut plan)?;
        if let Some(options) = &record.manifest.extra.verify {
            super::summary::apply(&mut summary, options);
        }
        pass.checks(record, &mut summary);
        pass.finish(&mut summary);
        Ok(summary)
    }
}
