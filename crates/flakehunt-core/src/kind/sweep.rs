//! `flakehunt sweep`: the same target under each scheduling profile, its attempts interleaved
//! in a seeded order ([`crate::plan::Schedule`]); its summary is the common one. Main type:
//! [`Sweep`].

use crate::analysis::{Pass, Summary};
use crate::record::{Record, RecordError};

/// The sweep.
pub struct Sweep;

impl super::Hunt for Sweep {
    fn summarize(&self, record: &Record) -> Result<Summary, RecordError> {
        let mut plan = crate::plan::schedule(&record.manifest);
        let pass = Pass::over(record, &mut plan, |_| true, None)?;
        let mut summary = pass.summary(record, &mut plan)?;
        pass.checks(record, &mut summary);
        pass.finish(&mut summary);
        Ok(summary)
    }
}
