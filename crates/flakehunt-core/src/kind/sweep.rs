//! `flakehunt sweep`: the same target under each scheduling profile, its attempts interleaved
//! in a seeded order ([`crate::plan::Schedule`]); its summary is the common one. Main type:
//! [`Sweep`].

use crate::analysis::{Pass, Summary};
use crate::events::EventSink;
use crate::plan::{CellSpec, Target};
use crate::record::{Extra, Kind, Record, RecordError};
use crate::spec::{HuntError, HuntKind, HuntSpec};

/// The sweep.
pub struct Sweep;

impl super::Hunt for Sweep {
    /// One cell per profile selected (`--profiles`, every applicable one by default).
    fn cells(
        &self,
        spec: &HuntSpec,
        target: &Target,
        _: &mut dyn EventSink,
    ) -> Result<(Vec<CellSpec>, Extra), HuntError> {
        let HuntKind::Sweep { profiles, strict } = &spec.kind else { unreachable!("a sweep's spec") };
        let profiles = crate::probe::select(profiles, &spec.config, target)?;
        for p in &profiles {
            if let Some(n) = p.knobs.copies {
                crate::bounds::Machine::get().check_workers(&format!("copies of profile {}", p.name), u64::from(n))?;
            }
        }
        if *strict {
            crate::probe::refuse_inert(&profiles, Kind::Sweep)?;
        }
        Ok((profiles.into_iter().map(CellSpec::for_profile).collect(), Extra::default()))
    }

    fn summarize(&self, record: &Record) -> Result<Summary, RecordError> {
        let mut plan = crate::plan::schedule(&record.manifest);
        let pass = Pass::over(record, &mut plan, |_| true, None)?;
        let mut summary = pass.summary(record, &mut plan)?;
        pass.checks(record, &mut summary);
        pass.finish(&mut summary);
        Ok(summary)
    }
}
