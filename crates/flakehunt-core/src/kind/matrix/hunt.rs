//! The matrix as a kind of hunt: the plan its manifest describes (the grid's, or `--against`'s
//! search) and its summary (the common one with the attribution or the search). Main type:
//! [`Matrix`].

use crate::analysis::{Pass, Summary};
use crate::plan::Plan;
use crate::record::{Manifest, Record, RecordError};

/// The matrix, with or without `--against`.
pub struct Matrix;

impl crate::kind::Hunt for Matrix {
    /// The grid of the dimensions given (`-D`, `--rlimit`, ...), or `--against`'s search.
    fn cells(
        &self,
        spec: &crate::spec::HuntSpec,
        target: &crate::plan::Target,
        sink: &mut dyn crate::events::EventSink,
    ) -> Result<(Vec<crate::plan::CellSpec>, crate::record::Extra), crate::spec::HuntError> {
        let crate::spec::HuntKind::Matrix(req) = &spec.kind else { unreachable!("a matrix's spec") };
        if req.against.is_some() && spec.shard.is_some() {
            return Err(crate::spec::HuntError::usage(crate::spec::args::AGAINST_IS_ONE_MACHINE));
        }
        super::prepare::cells(req, spec.settings.runs, &spec.config, target, sink)
    }

    fn plan(&self, manifest: &Manifest) -> Box<dyn Plan> {
        let confirm = manifest.extra.confirm();
        match manifest.extra.against() {
            Some(against) => {
                Box::new(super::against::AgainstPlan::new(against.dimensions.clone(), manifest.plan.runs, confirm))
            }
            None => Box::new(super::plan::MatrixPlan::new(
                manifest.cells.clone(),
                manifest.plan.runs,
                manifest.seed,
                confirm,
                manifest.shard,
            )),
        }
    }

    fn summarize(&self, record: &Record) -> Result<Summary, RecordError> {
        let mut plan = self.plan(&record.manifest);
        let pass = Pass::over(record, plan.as_mut(), |_| true, None)?;
        let mut summary = pass.summary(record, plan.as_mut())?;
        let cells = record.cells()?;
        match record.manifest.extra.against() {
            Some(against) => {
                let (runs, confirm) = (record.manifest.plan.runs, record.manifest.extra.confirm());
                super::against::summary::apply(&mut summary, against, runs, confirm, &cells, &pass.tally);
            }
            None => super::summary::apply(&mut summary, record.manifest.extra.dimensions(), &cells, &pass.tally),
        }
        pass.checks(record, &mut summary);
        pass.finish(&mut summary);
        Ok(summary)
    }
}
