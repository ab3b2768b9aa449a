//! The kinds of hunt besides the sweep: each kind's own preparation, plan, summary and records
//! in one folder.

pub mod adapter;
pub mod adaptive;
pub mod fire;
pub mod matrix;
pub mod suite;
pub mod verify;

/// `record` as a redacted one would hold it (see [`crate::record::Record::redacted_with`]), with
/// what its kind adds: a suite's test ids as written.
pub fn redacted(record: crate::record::Record) -> Result<crate::record::Record, crate::record::RecordError> {
    let part = suite::run::seal_part(&record.manifest);
    record.redacted_with(part)
}
