//! The kinds of hunt, each in one home (`sweep.rs`, `matrix/`, `fire/`, `adaptive/`, `suite/`,
//! `verify/`), behind one small trait, [`Hunt`]: the plan a kind's manifest describes, and the
//! kind's summary of a record. [`of`] is the one place that maps a record's kind to its implementation.

pub mod adapter;
pub mod adaptive;
pub mod fire;
mod hunt;
pub mod matrix;
pub mod suite;
pub mod sweep;
pub mod verify;

pub use hunt::Hunt;

use crate::analysis::Summary;
use crate::plan::Plan;
use crate::record::{Kind, Manifest, Record, RecordError};

/// The implementation of `kind`.
pub fn of(kind: Kind) -> &'static dyn Hunt {
    match kind {
        Kind::Sweep => &sweep::Sweep,
        Kind::Matrix => &matrix::Matrix,
        Kind::Fire => &fire::Fire,
        Kind::Adaptive => &adaptive::Adaptive,
        Kind::Suite => &suite::Suite,
        Kind::Verify => &verify::Verify,
    }
}

/// The plan `manifest` describes (see [`Hunt::plan`]).
pub fn plan_of(manifest: &Manifest) -> Box<dyn Plan> {
    of(manifest.kind).plan(manifest)
}

/// Summarises a record from its files alone: the one path by which the live run, `report` and
/// `merge` compute their numbers, so they cannot disagree.
pub fn summarize(record: &Record) -> Result<Summary, RecordError> {
    of(record.manifest.kind).summarize(record)
}

/// `record` as a redacted one would hold it (see [`crate::record::Record::redacted_with`]), with
/// what its kind adds: a suite's test ids as written.
pub fn redacted(record: crate::record::Record) -> Result<crate::record::Record, crate::record::RecordError> {
    let part = suite::run::seal_part(&record.manifest);
    record.redacted_with(part)
}
