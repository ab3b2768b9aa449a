//! Analysis of a record: statistics, failure signatures, tallies and the summary with its
//! verdict. Pure: attempts in, numbers and words out.

pub mod modes;
pub use crate::signature;
pub mod stats;
pub mod summary;
pub mod tally;

use crate::analysis::summary::SummaryOf;
pub use crate::schema::details::Details;
pub mod details {
    //! The summary's typed `details` (the type is the schema's).
    pub use crate::schema::details::Details;
}
pub use summary::{CellSummary, SignatureSummary, Summary};
pub use tally::Tally;

use crate::plan::{Next, Plan};
use crate::record::{Attempt, Record, RecordError};

/// The one pass over a record's attempts that every kind's summary starts from (see
/// [`crate::kind::summarize`]): the tally of its cells, how its attempts started (warm or cold)
/// and, under `--oracle majority`, the outputs that judge each attempt.
pub struct Pass {
    /// Every counted attempt, judged.
    pub tally: Tally,
    modes: modes::ModeTally,
    /// `--oracle majority`'s outputs, counted in a first reading of the record.
    majority: Option<crate::oracle::majority::Outputs>,
    /// Counted attempts in which a check found a failure the exit status hid.
    hidden: u64,
}

/// What a kind's summary sees of each attempt [`Pass::over`] counts: the attempt as recorded, then
/// as judged.
pub type Observer<'a> = &'a mut dyn FnMut(&Attempt, &Attempt);

impl Pass {
    /// Reads `record`'s attempts (twice under `--oracle majority`: count the outputs, then judge
    /// each attempt), showing `plan` every attempt that `counted` keeps, so the plan replayed over
    /// the record says whether it has work left. `observe` sees each counted attempt as recorded,
    /// then as judged.
    pub fn over(
        record: &Record,
        plan: &mut dyn Plan,
        counted: impl Fn(&Attempt) -> bool,
        mut observe: Option<Observer<'_>>,
    ) -> Result<Self, RecordError> {
        let majority = record.manifest.oracle.as_ref().is_some_and(|o| o.majority);
        let mut outputs = crate::oracle::majority::Outputs::default();
        if majority {
            for attempt in record.attempts()? {
                outputs.add(&attempt?);
            }
        }
        let mut tally = Tally::default();
        let mut modes = modes::ModeTally::default();
        let top = outputs.majority().map(str::to_owned);
        let mut hidden = 0u64;
        for attempt in record.attempts()? {
            let mut attempt = attempt?;
            if !counted(&attempt) {
                continue;
            }
            plan.observe(&attempt);
            let recorded = observe.as_ref().map(|_| attempt.clone());
            if majority {
                crate::oracle::majority::Outputs::judge_by(top.as_deref(), &mut attempt);
            }
            if let (Some(observe), Some(recorded)) = (observe.as_mut(), recorded) {
                observe(&recorded, &attempt);
            }
            tally.add(&attempt);
            modes.add(&attempt);
            hidden += u64::from(!attempt.hidden.is_empty());
        }
        Ok(Self { tally, modes, majority: majority.then_some(outputs), hidden })
    }

    /// The common summary of `record`'s cells from this pass, complete when `plan` (replayed over
    /// the record) has no work left.
    pub fn summary(&self, record: &Record, plan: &mut dyn Plan) -> Result<Summary, RecordError> {
        let mut summary = Summary::build(&record.manifest, &record.cells()?, &self.tally, plan.planned());
        summary.complete |= plan.next() == Next::Done;
        Ok(summary)
    }

    /// Adds what the checks found (`--check`) to a summary that holds the kind's part, with its
    /// note.
    pub fn checks(&self, record: &Record, summary: &mut Summary) {
        summary.checks = crate::checks::ChecksSummary::of(record.manifest.plan.checks, self.hidden);
        if let Some(c) = &summary.checks {
            summary.notes.push(c.note(summary.attempts));
        }
    }

    /// Adds what every kind's summary ends with: the majority's outputs and the attempts' modes,
    /// each with its note.
    pub fn finish(self, summary: &mut Summary) {
        if let Some(outputs) = self.majority {
            summary.outputs = outputs.summary();
            summary.notes.extend(outputs.notes());
        }
        if let Some((m, note)) = self.modes.summary() {
            summary.modes = Some(m);
            summary.notes.push(note);
        }
    }
}
