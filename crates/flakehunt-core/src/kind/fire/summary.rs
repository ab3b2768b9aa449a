//! The fire part of the summary, rebuilt from the record alone: the attempts (failures,
//! signatures, leaks per level) joined with `levels.jsonl` (what the fingerprints found).
//! Main type: [`FireSummary`]. Its fields are a contract (ARCHITECTURE.md): add, never rename.

use super::options::{reference_cell, FireOptions};
use super::Verdict;
use crate::analysis::summary::SummaryOf;
use crate::analysis::tally::{CellTally, Tally};
use crate::analysis::Summary;
use crate::plan::CellSpec;
use crate::record::{Outcome, Record, RecordError};
pub use crate::schema::fire::{FireSummary, LevelSummary, ReferenceSummary};
use crate::schema::fire::{LevelReport, LEVELS};
use crate::state::{Finding, FindingKind};

/// Where the runs of each level run are counted.
#[derive(Debug, Clone, Copy)]
pub enum LevelRuns<'a> {
    /// In the tally of the level's cell: a fire hunt climbs each level of its ladder once.
    ByCell,
    /// In this tally, under [`position_key`] of the level run's position on the ladder (the
    /// attempts' `level`): a verification runs one level many times, each level run a cell's
    /// attempts of its own.
    ByPosition(&'a Tally),
}

/// The key of the runs of the level run at `position` in a [`LevelRuns::ByPosition`] tally.
pub fn position_key(position: u32) -> String {
    format!("#{position}")
}

/// Summarises a fire record: the common summary of its cells, with the fire verdict and the
/// ladder.
pub fn summarize(record: &Record, cells: &[CellSpec], tally: &Tally) -> Result<Summary, RecordError> {
    let options = record.manifest.extra.fire.clone().ok_or_else(|| {
        RecordError::Corrupt(record.dir.join("manifest.json"), "a fire record without its ladder".into())
    })?;
    summarize_ladder(record, &options, cells, tally, LevelRuns::ByCell)
}

/// Summarises the climb of `options`' ladder that `record` holds, each level run's runs counted
/// where `runs` says: the fire part of a fire hunt's summary, or of a verification of one
/// (whose ladder runs the rejected level many times).
pub fn summarize_ladder(
    record: &Record,
    options: &FireOptions,
    cells: &[CellSpec],
    tally: &Tally,
    runs: LevelRuns<'_>,
) -> Result<Summary, RecordError> {
    let manifest = &record.manifest;
    let reports: Vec<LevelReport> = record.side_lines(LEVELS)?;
    let empty = CellTally::default();
    let cell_tally = |name: &str| tally.cells.get(name).unwrap_or(&empty);
    let (level_tally, level_key) = match runs {
        LevelRuns::ByCell => (tally, None),
        LevelRuns::ByPosition(t) => (t, Some(position_key as fn(u32) -> String)),
    };
    let key_of = |position: u32, name: &str| level_key.map_or_else(|| name.to_owned(), |k| k(position));
    let mut notes = Vec::new();

    let mut references = Vec::new();
    for report in reports.iter().filter(|r| r.level == 0) {
        let t = cell_tally(&report.cell);
        let mut findings = report.findings.clone();
        findings.extend(report.checks.iter().filter(|c| !c.passed).map(|c| check_finding(c, "")));
        findings.extend(failed_runs(tally, &report.cell));
        let failures = failures(t);
        if failures > 0 {
            notes.push(format!(
                "the sequential {} failed {failures} of {} runs: the command fails even without concurrency, so failures at the levels may not come from it",
                report.cell, t.attempts
            ));
        }
        for check in report.checks.iter().filter(|c| !c.passed) {
            notes.push(format!(
                "check `{}` fails on the sequential {} too: it cannot tell concurrency problems apart, so it is not counted at the levels",
                check.command, report.cell
            ));
        }
        if report.tokens_traced && !report.findings.is_empty() {
            notes.push(format!(
                "tokens: the sequential {} does not keep each FLAKEHUNT_TOKEN exactly once (the command must write it into the state): tokens were not traced at the levels",
                report.cell
            ));
        }
        references.push(ReferenceSummary { name: report.cell.clone(), runs: t.attempts, failures, findings });
    }

    let mut levels = Vec::new();
    let mut stopped_at = None;
    let mut climbed = options.ladder.0.len();
    for (i, level) in options.ladder.0.iter().enumerate() {
        let index = i as u32 + 1;
        let name = level.name();
        let key = key_of(index, &name);
        let t = level_tally.cells.get(&key).unwrap_or(&empty);
        let Some(report) = reports.iter().find(|r| r.level == index) else {
            if t.attempts > 0 {
                notes.push(format!(
                    "level {name} was interrupted after {} of {} runs: its state was not evaluated",
                    t.attempts, level.runs
                ));
            }
            break;
        };
        let reference = reports.iter().find(|r| r.level == 0 && r.cell == reference_cell(level.runs));
        let mut findings = report.findings.clone();
        for check in report.checks.iter().filter(|c| !c.passed) {
            let passed_on_reference = reference
                .and_then(|r| r.checks.iter().find(|rc| rc.command == check.command))
                .is_none_or(|rc| rc.passed);
            if passed_on_reference {
                findings.push(check_finding(check, " (it passes on the sequential reference)"));
            }
        }
        if t.leaking > 0 {
            findings.push(Finding::new(
                FindingKind::Leak,
                ".",
                t.leaking,
                format!("{} run(s) left processes behind (killed after the run)", t.leaking),
            ));
        }
        let state_differs = !findings.is_empty();
        findings.extend(failed_runs(level_tally, &key));
        let failures = failures(t);
        let verdict = Verdict::of(failures > 0, state_differs);
        levels.push(LevelSummary {
            level: index,
            name: name.clone(),
            workers: level.workers,
            runs: t.attempts,
            failures,
            state_differs,
            verdict,
            verdict_text: verdict.meaning().to_owned(),
            findings,
            seconds: report.seconds,
            reference: report.reference.clone().unwrap_or_default(),
            sandbox: report.sandbox.clone(),
            copied: report.copied,
        });
        if verdict.is_reject() && !options.all_levels {
            if index < options.ladder.0.len() as u32 {
                stopped_at = Some(name);
            }
            climbed = i + 1;
            break;
        }
    }

    let planned = options.planned_runs(climbed);
    let mut summary = Summary::build(manifest, cells, tally, planned);
    let total = ReferenceSummary {
        name: String::new(),
        runs: references.iter().map(|r| r.runs).sum(),
        failures: references.iter().map(|r| r.failures).sum(),
        findings: Vec::new(),
    };
    let rejected: Vec<&LevelSummary> = levels.iter().filter(|l| l.verdict.is_reject()).collect();
    let (verdict, verdict_text) = match rejected.first() {
        Some(first) => {
            let mut text = format!("REJECT at {}: {}", first.name, first.verdict.meaning());
            text.push_str(&headline_text(&first.findings));
            if rejected.len() > 1 {
                let others: Vec<&str> = rejected[1..].iter().map(|l| l.name.as_str()).collect();
                text.push_str(&format!("; also rejected: {}", others.join(", ")));
            }
            ("reject", text)
        }
        None if levels.is_empty() => ("incomplete", "no level finished: nothing to judge yet".to_owned()),
        None => {
            let names: Vec<&str> = levels.iter().map(|l| l.name.as_str()).collect();
            ("accept", format!("accept: every level run survived concurrency ({})", names.join(", ")))
        }
    };
    if stopped_at.is_some() {
        notes.push("stopped at the first rejected level (--all-levels climbs the whole ladder)".to_owned());
    }
    summary.verdict = verdict.to_owned();
    summary.verdict_text = verdict_text;
    summary.notes = notes;
    summary.fire =
        Some(FireSummary { ladder: options.ladder.to_string(), reference: total, references, levels, stopped_at });
    Ok(summary)
}

/// The finding that best names what went wrong: torn lines or duplicates explain the lost
/// records that come with them, not the other way round.
fn headline(findings: &[Finding]) -> Option<&Finding> {
    let rank = |kind: FindingKind| match kind {
        FindingKind::Integrity => 0,
        FindingKind::Torn => 1,
        FindingKind::Duplicated => 2,
        FindingKind::Lost => 3,
        FindingKind::Changed => 4,
        FindingKind::CheckFailed => 5,
        FindingKind::Leak => 6,
        FindingKind::FailedRuns => 7,
    };
    findings.iter().min_by_key(|f| rank(f.kind))
}

/// The most telling finding as the text that follows a verdict, ` (torn 3 in log: ...)`, or
/// nothing when there are none: the same words live and in the summary.
pub fn headline_text(findings: &[Finding]) -> String {
    headline(findings).map(|f| format!(" ({} {} in {}: {})", f.kind, f.count, f.path, f.detail)).unwrap_or_default()
}

/// Failures of a cell: its failing runs plus those that could not start.
fn failures(t: &CellTally) -> u64 {
    t.failures + t.outcomes.get(&Outcome::SpawnError).copied().unwrap_or(0)
}

/// One `failed-runs` finding per failure signature seen in `cell`, most frequent first.
fn failed_runs(tally: &Tally, cell: &str) -> Vec<Finding> {
    let mut found: Vec<(u64, &String)> =
        tally.signatures.iter().filter_map(|(sig, s)| s.cells.get(cell).map(|&n| (n, sig))).collect();
    found.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    found.into_iter().map(|(n, sig)| Finding::new(FindingKind::FailedRuns, ".", n, sig.clone())).collect()
}

fn check_finding(check: &super::CheckResult, suffix: &str) -> Finding {
    let why = check.why.clone().unwrap_or_else(|| "failed".into());
    Finding::new(FindingKind::CheckFailed, ".", 1, format!("`{}`: {why}{suffix}", check.command))
}
