//! Analysis of a record: statistics, failure signatures, tallies and the summary with its
//! verdict. Pure: attempts in, numbers and words out.

pub mod modes;
pub mod signature;
pub mod stats;
pub mod summary;
pub mod tally;
pub mod test_failure;

pub use summary::{CellSummary, SignatureSummary, Summary};
pub use tally::Tally;

use crate::plan::Next;
use crate::record::{Kind, Record, RecordError};

/// Summarises a record from its files alone: the one path by which the live run, `report` and
/// `merge` compute their numbers, so they cannot disagree.
pub fn summarize(record: &Record) -> Result<Summary, RecordError> {
    // `--oracle majority` needs two passes: count the outputs, then judge each attempt.
    let majority = record.manifest.oracle.as_ref().is_some_and(|o| o.majority);
    let mut outputs = crate::oracle::majority::Outputs::default();
    if majority {
        for attempt in record.attempts()? {
            outputs.add(&attempt?);
        }
    }
    let mut tally = Tally::default();
    let mut modes = modes::ModeTally::default();
    // The plan replayed over the record says whether it has work left: a cell stopped by
    // `--until-fails` ran fewer attempts than the plan holds, yet the hunt is complete.
    let mut plan = crate::plan::from_manifest(&record.manifest);
    let top = outputs.majority().map(str::to_owned);
    let mut hunt = (record.manifest.kind == Kind::Adaptive)
        .then(|| crate::kind::adaptive::record::AdaptiveSummary::new(&record.manifest));
    let suite = record.manifest.kind == Kind::Suite;
    let mut hidden = 0u64;
    for attempt in record.attempts()? {
        let mut attempt = attempt?;
        // A suite's cells count its shuffled attempts; its confirmation runs are the
        // classification's, below.
        if suite && attempt.suite.as_ref().is_some_and(|t| t.role != crate::kind::suite::record::Role::Shuffled) {
            continue;
        }
        plan.observe(&attempt);
        let recorded = hunt.as_ref().map(|_| attempt.clone());
        if majority {
            crate::oracle::majority::Outputs::judge_by(top.as_deref(), &mut attempt);
        }
        if let (Some(h), Some(recorded)) = (hunt.as_mut(), recorded) {
            h.add(&recorded, &attempt);
        }
        tally.add(&attempt);
        modes.add(&attempt);
        hidden += u64::from(!attempt.hidden.is_empty());
    }
    let cells = record.cells()?;
    let mut summary = match record.manifest.kind {
        Kind::Sweep => Summary::build(&record.manifest, &cells, &tally, plan.planned()),
        Kind::Matrix => {
            let mut summary = Summary::build(&record.manifest, &cells, &tally, plan.planned());
            match record.manifest.extra.against() {
                Some(against) => {
                    let (runs, confirm) = (record.manifest.plan.runs, record.manifest.extra.confirm());
                    crate::kind::matrix::against::summary::apply(&mut summary, against, runs, confirm, &cells, &tally);
                }
                None => crate::kind::matrix::summary::apply(
                    &mut summary,
                    record.manifest.extra.dimensions(),
                    &cells,
                    &tally,
                ),
            }
            summary
        }
        Kind::Fire => crate::kind::fire::summarize(record, &cells, &tally)?,
        Kind::Adaptive => Summary::build(&record.manifest, &cells, &tally, plan.planned()),
        Kind::Verify => {
            let mut summary = Summary::build(&record.manifest, &cells, &tally, plan.planned());
            if let Some(options) = &record.manifest.extra.verify {
                crate::kind::verify::summary::apply(&mut summary, options);
            }
            summary
        }
        Kind::Suite => {
            let mut summary = Summary::build(&record.manifest, &cells, &tally, plan.planned());
            if let Some(analysis) = crate::kind::suite::analyse::of_record(record)? {
                crate::kind::suite::summary::apply(&mut summary, analysis);
            }
            summary
        }
    };
    summary.checks = crate::checks::ChecksSummary::of(record.manifest.plan.checks, hidden);
    if let Some(c) = &summary.checks {
        summary.notes.push(c.note(summary.attempts));
    }
    // Fire decides completeness itself (its ladder stops at the first rejection).
    if record.manifest.kind != Kind::Fire {
        summary.complete |= plan.next() == Next::Done;
    }
    // A suite is complete when its classification is too.
    if summary.suite.as_ref().is_some_and(|s| !s.classified) {
        summary.complete = false;
    }
    // A hunt is complete when its plan is done, not when it ran as many attempts as it issued.
    if let Some(h) = hunt {
        h.apply(&mut summary);
    }
    if majority {
        summary.outputs = outputs.summary();
        summary.notes.extend(outputs.notes());
    }
    if let Some((m, note)) = modes.summary() {
        summary.modes = Some(m);
        summary.notes.push(note);
    }
    Ok(summary)
}
