//! The terminal rendering: one table row per cell, then inert profiles, signatures, notes and
//! the verdict. Pure text; colour is added by the caller's stream if it supports it.

use std::fmt::Write as _;

use comfy_table::presets::NOTHING;
use comfy_table::{CellAlignment, Table};

use crate::analysis::stats::{format_p, format_rate};
use crate::analysis::{CellSummary, Summary};
use crate::kind::verify::summary::ConditionText;

mod fire;

/// Renders a summary as the text the live run prints at its end.
pub fn render(summary: &Summary, cell_header: &str) -> String {
    if let Some(f) = &summary.fire {
        return fire::render(summary, f);
    }
    let mut out = String::new();
    let mut table = Table::new();
    table.load_preset(NOTHING);
    let baseline = &summary.baseline;
    // The machine's mean 1-minute load during each cell's attempts, so a difference between
    // cells can be told from a neighbour's load (absent from records made without it).
    let load = summary.cells.iter().any(|c| c.mean_load.is_some());
    // A verification compares each cell with the record it verifies, not with another cell.
    let verify = crate::kind::verify::VerifyDetails::of(summary);
    let then = |c: &CellSummary| {
        let v = verify.as_ref()?;
        v.conditions.iter().find(|r| r.cell == c.name).map(|r| r.then_text())
    };
    let mut header = vec![
        cell_header.to_owned(),
        "attempts".into(),
        "failed".into(),
        "rate".into(),
        "95% interval".into(),
        if verify.is_some() {
            "then".to_owned()
        } else if summary.cells.len() > 1 && baseline.len() > 12 {
            "vs baseline".to_owned()
        } else {
            format!("vs {baseline}")
        },
    ];
    if load {
        header.push("load".into());
    }
    header.push("effect".into());
    table.set_header(header);
    // An adaptive hunt lists the arms it tried; the levels it never opened go on one line.
    let hunt = summary.kind == crate::record::Kind::Adaptive;
    let untried: Vec<&str> =
        summary.cells.iter().filter(|c| hunt && c.attempts == 0).map(|c| c.name.as_str()).collect();
    for c in summary.cells.iter().filter(|c| !hunt || c.attempts > 0) {
        let mut row = vec![
            format!(
                "{}{}",
                c.name,
                match (c.inert, c.reproduced, c.failures) {
                    (true, _, _) => " (inert)",
                    (_, Some(true), _) => " [reproduced]",
                    (_, Some(false), 1) => " [rumour]",
                    _ => "",
                }
            ),
            c.attempts_text(),
            c.failures.to_string(),
            format_rate(c.rate),
            interval(c),
            then(c).unwrap_or_else(|| versus(c, baseline)),
        ];
        if load {
            row.push(c.mean_load.map_or_else(|| "-".to_owned(), |l| format!("{l:.1}")));
        }
        row.push(effect_text(c));
        table.add_row(row);
    }
    for i in 1..=5 {
        if let Some(col) = table.column_mut(i) {
            col.set_cell_alignment(if i <= 2 { CellAlignment::Right } else { CellAlignment::Left });
        }
    }
    if let Some(col) = table.column_mut(6).filter(|_| load) {
        col.set_cell_alignment(CellAlignment::Right);
    }
    for line in table.to_string().lines() {
        let _ = writeln!(out, "{}", line.trim_end());
    }
    if !untried.is_empty() {
        let _ = writeln!(out, "not tried (the hunt ended first): {}", untried.join(", "));
    }
    for c in summary.cells.iter().filter(|c| c.inert) {
        let _ = writeln!(out, "inert: {}: {}", c.name, c.inert_reason.as_deref().unwrap_or("no measurable effect"));
    }
    for c in summary.cells.iter().filter(|c| c.leaking > 0) {
        let _ = writeln!(out, "leaks: {}: {} attempt(s) left processes behind (killed)", c.name, c.leaking);
    }
    if let Some(suite) = &summary.suite {
        // Per test, instead of the attempts' signatures (any failing test fails an attempt).
        out.push_str(&super::suite::table(suite));
    } else if !summary.signatures.is_empty() {
        let _ = writeln!(out, "failure signatures:");
        for s in summary.signatures.iter().take(5) {
            let _ = writeln!(out, "  {:>5}x  {}  [{}]", s.count, s.signature, s.cells.join(", "));
        }
        if summary.signatures.len() > 5 {
            let _ = writeln!(out, "  ... and {} more", summary.signatures.len() - 5);
        }
    }
    if !summary.outputs.is_empty() {
        let _ = writeln!(out, "distinct outputs (--oracle majority):");
        for o in summary.outputs.iter().take(5) {
            let last = o.example.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
            let tag = if o.majority { "majority" } else { "wrong-output" };
            let _ = writeln!(out, "  {:>5}x  {tag:<12}  first attempt {}  ...{last}", o.count, o.first_attempt);
        }
        if summary.outputs.len() > 5 {
            let _ = writeln!(out, "  ... and {} more", summary.outputs.len() - 5);
        }
    }
    for c in summary.cells.iter().filter(|c| c.meaning.is_some()) {
        let _ = writeln!(
            out,
            "{} {}: {}",
            c.name,
            c.direction.as_deref().unwrap_or(""),
            c.meaning.as_deref().unwrap_or("")
        );
    }
    if let Some(attribution) = summary.attribution.as_ref().filter(|a| !a.is_empty()) {
        let mut t = Table::new();
        t.load_preset(NOTHING);
        t.set_header(vec!["dimension", "value", "attempts", "failed", "rate"]);
        for a in attribution {
            t.add_row(vec![
                a.dimension.clone(),
                a.value.clone(),
                a.attempts.to_string(),
                a.failures.to_string(),
                format_rate(a.rate),
            ]);
        }
        let _ = writeln!(out, "attribution:");
        for line in t.to_string().lines() {
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
    for n in &summary.notes {
        let _ = writeln!(out, "note: {n}");
    }
    let hunt = crate::kind::adaptive::record::AdaptiveDetails::of(summary);
    if let Some(h) = &hunt {
        for s in &h.skipped {
            let _ = writeln!(out, "skipped: {}: {}", s.family, s.reason);
        }
        for r in &h.retired {
            let _ = writeln!(out, "retired: {}: {}", r.cell, r.reason);
        }
    } else if summary.suite.as_ref().is_some_and(|s| !s.classified) && summary.attempts >= summary.planned {
        let _ = writeln!(out, "incomplete: the classification's confirmation runs did not all run");
    } else if !summary.complete {
        // An adaptive hunt plans as it goes: it has no planned total to fall short of.
        let _ = writeln!(out, "incomplete: {} of {} planned attempts ran", summary.attempts, summary.planned);
    }
    let _ = writeln!(out, "verdict: {}", summary.verdict_text);
    if let Some(h) = &hunt {
        let _ = writeln!(out, "conclusion: {}", h.conclusion);
    }
    out
}

pub(crate) fn interval(c: &CellSummary) -> String {
    if c.attempts == 0 {
        "-".into()
    } else if c.failures == 0 {
        format!("< {}", format_rate(c.ci95[1]))
    } else {
        format!("{} .. {}", format_rate(c.ci95[0]), format_rate(c.ci95[1]))
    }
}

pub(crate) fn versus(c: &CellSummary, baseline: &str) -> String {
    if c.name == baseline {
        return "-".into();
    }
    let Some(p) = c.p_value else { return "-".into() };
    let mut s = format_p(p);
    if let Some(x) = c.amplification {
        let _ = write!(s, ", x{}{}", if c.amplification_at_least { ">=" } else { "" }, trim_ratio(x));
    }
    if c.sensitive {
        s.push_str(if c.direction.as_deref() == Some("suppresses") { " (hides it)" } else { " (brings it out)" });
    }
    s
}

fn trim_ratio(x: f64) -> String {
    if x >= 10.0 || (x - x.round()).abs() < 0.05 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// A short text of what the profile measured.
pub fn effect_text(c: &CellSummary) -> String {
    let e = &c.effect;
    let mut parts = Vec::new();
    if let Some(m) = e.get("mechanism").and_then(|v| v.as_str()) {
        parts.push(m.to_owned());
    }
    if let Some(n) = e.get("copies_at_once").and_then(serde_json::Value::as_u64) {
        parts.push(format!("{n} copies at once"));
    }
    if let Some(cpus) = e.get("cpus").and_then(|v| v.as_str()) {
        parts.push(format!("cpus {cpus}"));
    }
    if let Some(s) = e.get("cpu_share").and_then(serde_json::Value::as_f64) {
        parts.push(format!("{:.0}% cpu", s * 100.0));
    }
    if let Some(n) = e.get("noise_cpu_seconds").and_then(serde_json::Value::as_f64) {
        parts.push(format!("noise {n:.1} cpu-s"));
    }
    if let Some(p) = e.get("policy").and_then(|v| v.as_str()) {
        parts.push(format!("policy {p}"));
    }
    if let Some(n) = e.get("pauses").and_then(serde_json::Value::as_u64) {
        let secs = e.get("paused_seconds").and_then(serde_json::Value::as_f64).unwrap_or(0.0);
        parts.push(format!("{n} pauses, {:.0} ms", secs * 1000.0));
    }
    if let Some(s) = e.get("switch_interval").and_then(serde_json::Value::as_f64) {
        parts.push(format!("switch {s:e}s"));
    }
    if let Some(n) = e.get("jitter_delays").and_then(serde_json::Value::as_u64) {
        parts.push(format!("{n} delays"));
    }
    if e.get("hints").is_some() && parts.is_empty() {
        parts.push("hints set".into());
    }
    parts.join(", ")
}
