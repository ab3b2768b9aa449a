//! What a renderer may know about a record beyond its summary: the manifest, the environment
//! snapshot and a bounded sample of failing attempts. Main type: [`RenderContext`].

use std::collections::BTreeMap;

use crate::record::{Attempt, Kind, Manifest, Record, RecordError};

/// Failing attempts kept per cell for the renderers that list them (JUnit). A cell that failed
/// 10,000 times would make a report nobody opens; the counts stay exact in the summary.
pub const FAILING_PER_CELL: usize = 100;

/// The record's facts a renderer may use besides the summary.
#[derive(Debug, Clone)]
pub struct RenderContext {
    /// The record's manifest.
    pub manifest: Manifest,
    /// The environment snapshot (`snapshot.json`), when the record has one.
    pub snapshot: Option<serde_json::Value>,
    /// Failing attempts per cell, in record order, at most [`FAILING_PER_CELL`] each.
    pub failing: BTreeMap<String, Vec<Attempt>>,
    /// What a cell is called in this hunt's tables (`profile`, `cell`, `level`).
    pub cell_header: String,
}

impl RenderContext {
    /// A context from a manifest alone (no snapshot, no attempts).
    pub fn new(manifest: Manifest) -> Self {
        let cell_header = cell_header(manifest.kind).to_owned();
        Self { manifest, snapshot: None, failing: BTreeMap::new(), cell_header }
    }

    /// Reads what the renderers need from `record`, streaming its attempts once and keeping at
    /// most `per_cell` failing attempts of each cell.
    pub fn from_record(record: &Record, per_cell: usize) -> Result<Self, RecordError> {
        let mut ctx = Self::new(record.manifest.clone());
        // A damaged snapshot must not stop a report: it is context, not data.
        ctx.snapshot = record.snapshot().ok().flatten();
        // Keeping none (the job summary's Markdown) needs no pass over the attempts.
        if per_cell == 0 {
            return Ok(ctx);
        }
        for attempt in record.attempts()? {
            let attempt = attempt?;
            if !attempt.outcome.is_failure() {
                continue;
            }
            let kept = ctx.failing.entry(attempt.cell.clone()).or_default();
            if kept.len() < per_cell {
                kept.push(attempt);
            }
        }
        Ok(ctx)
    }

    /// The kept failing attempts of a cell.
    pub fn failing_of(&self, cell: &str) -> &[Attempt] {
        self.failing.get(cell).map_or(&[], Vec::as_slice)
    }
}

/// What a cell is called in a hunt's tables.
pub fn cell_header(kind: Kind) -> &'static str {
    match kind {
        Kind::Sweep => "profile",
        Kind::Matrix => "cell",
        Kind::Fire => "level",
        Kind::Adaptive => "arm",
        Kind::Suite => "profile",
        Kind::Verify => "condition",
    }
}
