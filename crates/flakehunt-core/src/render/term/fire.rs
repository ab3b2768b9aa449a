//! The terminal rendering of a fire hunt: the ladder as a table (references in the order they
//! ran), each rejected level's findings, and the verdict, loudly when the corruption is silent.

use std::fmt::Write as _;

use comfy_table::presets::NOTHING;
use comfy_table::{CellAlignment, Table};

use crate::analysis::Summary;
use crate::kind::fire::{FireSummary, LevelSummary, Verdict};
use crate::state::Finding;

/// Findings listed per rejected level; the rest are counted.
const MAX_FINDINGS: usize = 8;

/// Renders the summary of a fire hunt.
pub(super) fn render(summary: &Summary, fire: &FireSummary) -> String {
    let mut out = String::new();
    let mut table = Table::new();
    table.load_preset(NOTHING);
    table.set_header(vec!["level", "workers", "runs", "failed", "state differs", "verdict", "findings"]);
    let mut shown = Vec::new();
    // A verification runs one level many times: each level run is numbered.
    let repeated = |name: &str| fire.levels.iter().filter(|l| l.name == name).count() > 1;
    let mut seen: Vec<&str> = Vec::new();
    for level in &fire.levels {
        seen.push(&level.name);
        let name = if repeated(&level.name) {
            format!("{} #{}", level.name, seen.iter().filter(|n| **n == level.name).count())
        } else {
            level.name.clone()
        };
        if !shown.contains(&level.reference) {
            if let Some(r) = fire.references.iter().find(|r| r.name == level.reference) {
                table.add_row(vec![
                    r.name.clone(),
                    "1".into(),
                    r.runs.to_string(),
                    r.failures.to_string(),
                    "-".into(),
                    "(sequential)".into(),
                    short_findings(&r.findings),
                ]);
            }
            shown.push(level.reference.clone());
        }
        table.add_row(vec![
            name,
            level.workers.to_string(),
            level.runs.to_string(),
            level.failures.to_string(),
            if level.state_differs { "yes".into() } else { "no".into() },
            level.verdict.name().to_owned(),
            short_findings(&level.findings),
        ]);
    }
    for i in 1..=3 {
        if let Some(col) = table.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    for line in table.to_string().lines() {
        let _ = writeln!(out, "{}", line.trim_end());
    }
    // The findings of a level's first rejected run; its others are counted.
    let rejected: Vec<&LevelSummary> = fire.levels.iter().filter(|l| l.verdict.is_reject()).collect();
    for (i, level) in rejected.iter().enumerate() {
        if rejected[..i].iter().any(|l| l.name == level.name) {
            continue;
        }
        findings(&mut out, level);
        let more = rejected[i + 1..].iter().filter(|l| l.name == level.name).count();
        if more > 0 {
            let _ = writeln!(out, "  ... and {more} more rejected run(s) of {}", level.name);
        }
    }
    if let Some(level) = fire.levels.iter().find(|l| l.verdict == Verdict::RejectSilentCorruption) {
        let _ = writeln!(
            out,
            "!! SILENT CORRUPTION at {}: every run exited successfully, yet the state is wrong. Nothing in production would notice.",
            level.name
        );
    }
    for n in &summary.notes {
        let _ = writeln!(out, "note: {n}");
    }
    if !summary.complete {
        let _ = writeln!(out, "incomplete: {} of {} planned runs ran", summary.attempts, summary.planned);
    }
    let _ = writeln!(out, "verdict: {}", summary.verdict_text);
    out
}

/// `lost 3, torn 1` for the table.
fn short_findings(findings: &[Finding]) -> String {
    let mut parts: Vec<(String, u64)> = Vec::new();
    for f in findings {
        let kind = f.kind.to_string();
        match parts.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += f.count,
            None => parts.push((kind, f.count)),
        }
    }
    parts.iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", ")
}

fn findings(out: &mut String, level: &LevelSummary) {
    let _ = writeln!(out, "{} ({}):", level.name, level.verdict.name());
    for f in level.findings.iter().take(MAX_FINDINGS) {
        let _ = writeln!(out, "  {:<12} {:>5}  {}  {}", f.kind.as_str(), f.count, f.path, f.detail);
    }
    if level.findings.len() > MAX_FINDINGS {
        let _ = writeln!(out, "  ... and {} more", level.findings.len() - MAX_FINDINGS);
    }
    if let Some(sandbox) = &level.sandbox {
        let _ = writeln!(out, "  sandbox kept: {sandbox}");
    }
}
