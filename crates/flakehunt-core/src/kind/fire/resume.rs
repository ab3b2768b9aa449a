//! Continuing a fire hunt that was killed or interrupted (`flakehunt fire --resume DIR`).
//! Main function: [`prepare`].
//!
//! A level's verdict needs the final state of its sandbox and the fingerprint of its reference,
//! and neither survives the process that made them. So a resumed hunt keeps every level and
//! reference whose report is in `levels.jsonl`, and runs again, from a fresh sandbox, each group
//! that did not finish, plus each finished reference a level still to run compares with. The
//! attempts, logs and reports of what runs again are removed from the record once the resume
//! is accepted (each file rewritten to a temporary name and renamed over, so a second kill
//! leaves a record that a second `--resume` continues the same way); [`prepare`] only reads.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use super::options::SANDBOXES;
use super::options::{reference_cell, FireOptions};
use crate::record::{Record, RecordError, Resumption, ATTEMPTS};
use crate::schema::fire::{LevelReport, LEVELS};

/// What a resumed fire hunt keeps of its record.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resumed {
    /// Ladder positions (from 1) whose level finished; they are not run again.
    pub finished_levels: BTreeSet<u32>,
    /// Attempts kept.
    pub kept: u64,
    /// The first attempt id free for new runs (above every id the record ever held, so a new
    /// run's logs never meet an old run's).
    pub next_id: u64,
}

/// What the resumed hunt keeps of the record in `dir`, and what it removes from it once
/// accepted (what it runs again). Reads only.
pub fn prepare(dir: &Path, options: &FireOptions) -> Result<(Resumed, Resumption), RecordError> {
    let record = Record::open(dir)?;
    let reports: Vec<LevelReport> = record.side_lines(LEVELS)?;
    let summary = crate::kind::summarize(&record)?;
    let judged = summary.fire.as_ref().map(|f| f.levels.as_slice()).unwrap_or_default();

    // The levels still to run: those without a report, up to the first rejected level unless
    // every level is wanted (a hunt that already stopped there has nothing left to do).
    let mut finished_levels = BTreeSet::new();
    let mut to_run = Vec::new();
    for (i, level) in options.ladder.0.iter().enumerate() {
        let index = i as u32 + 1;
        if reports.iter().any(|r| r.level == index) {
            finished_levels.insert(index);
            let rejected = judged.iter().any(|l| l.level == index && l.verdict.is_reject());
            if rejected && !options.all_levels {
                break;
            }
        } else {
            to_run.push((index, *level));
        }
    }
    // A level run is told apart by its position on the ladder (a verification climbs one level
    // many times, under one cell), a reference by its cell; attempts recorded without their
    // position (older records) by their cell.
    let mut rerun: BTreeSet<String> = BTreeSet::new();
    let mut rerun_positions: BTreeSet<u32> = BTreeSet::new();
    for (index, level) in &to_run {
        rerun.insert(level.name());
        rerun.insert(reference_cell(level.runs));
        rerun_positions.insert(*index);
    }
    // A reference cut short has no report; its attempts go too.
    let reported: BTreeSet<&str> = reports.iter().map(|r| r.cell.as_str()).collect();
    let reported_positions: BTreeSet<u32> = reports.iter().map(|r| r.level).filter(|&l| l > 0).collect();
    let goes = |attempt: &crate::record::Attempt| match attempt.level.filter(|&l| l > 0) {
        Some(position) => rerun_positions.contains(&position) || !reported_positions.contains(&position),
        None => rerun.contains(&attempt.cell) || !reported.contains(attempt.cell.as_str()),
    };
    let mut next_id = 0;
    let mut kept = 0;
    let mut kept_lines = Vec::new();
    let mut dropped_ids = Vec::new();
    // The lines as written (the reader has checked every one, above), each kept or dropped
    // whole, so what is kept stays byte for byte.
    let lines = complete_lines(&dir.join(ATTEMPTS))?;
    for (line, attempt) in lines.into_iter().zip(record.attempts()?) {
        let attempt = attempt?;
        next_id = next_id.max(attempt.id + 1);
        if goes(&attempt) {
            dropped_ids.push(attempt.id);
        } else {
            kept += 1;
            kept_lines.push(line);
        }
    }
    let kept_reports: Vec<&LevelReport> = reports
        .iter()
        .filter(|r| if r.level > 0 { !rerun_positions.contains(&r.level) } else { !rerun.contains(&r.cell) })
        .collect();
    let report_lines: Vec<String> =
        kept_reports.iter().map(|r| serde_json::to_string(r).map_err(RecordError::Json)).collect::<Result<_, _>>()?;
    let remove_files = dropped_ids
        .iter()
        .flat_map(|id| ["stdout", "stderr"].map(|ext| dir.join(format!("logs/{id}.{ext}"))))
        .filter(|p| p.exists())
        .collect();
    // Sandboxes of groups that did not finish (or are run again) are left-overs of the killed
    // process; those a kept report points at (`--keep`) stay.
    let keep: BTreeSet<&str> = kept_reports.iter().filter_map(|r| r.sandbox.as_deref()).collect();
    let mut remove_trees = Vec::new();
    if let Ok(entries) = fs::read_dir(dir.join(SANDBOXES)) {
        for entry in entries.flatten() {
            let relative = format!("{SANDBOXES}/{}", entry.file_name().to_string_lossy());
            if !keep.contains(relative.as_str()) {
                remove_trees.push(entry.path());
            }
        }
    }
    // Two ladder positions with the same shape share a cell: a finished one whose cell runs
    // again lost its report above, so it is not finished any more.
    let finished_levels = finished_levels.into_iter().filter(|l| kept_reports.iter().any(|r| r.level == *l)).collect();
    let resumption = Resumption {
        attempts: Some(kept_lines),
        side_files: vec![(LEVELS.to_owned(), report_lines)],
        remove_files,
        remove_trees,
    };
    Ok((Resumed { finished_levels, kept, next_id }, resumption))
}

/// The lines of a JSONL file that end with a newline (a crash may have cut the last one), blank
/// ones left out as the reader leaves them out.
fn complete_lines(path: &Path) -> Result<Vec<String>, RecordError> {
    // A missing file is refused by the reader, which has read it before.
    let text = crate::record::read_text(path)?.unwrap_or_default();
    let complete = text.rfind('\n').map_or("", |end| &text[..=end]);
    Ok(complete.lines().filter(|l| !l.bytes().all(|b| b.is_ascii_whitespace())).map(str::to_owned).collect())
}
