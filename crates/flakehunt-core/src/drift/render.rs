//! `flakehunt diff`'s renderings of a [`Drift`]: the terminal text and the JSON document. Pure:
//! a drift in, text out. Main functions: [`text`], [`json`].

use super::{Difference, Drift, Group};

/// Characters of a value shown in the terminal; JSON has them whole.
const VALUE_CAP: usize = 70;

/// The terminal rendering: each group's differences, `+` applicable or `-` not applicable
/// here with what to do instead, the group's remedies, then the counts. `a` and `b` name the
/// snapshots.
pub fn text(drift: &Drift, a: &str, b: &str) -> String {
    let mut out = format!("A: {a}\nB: {b}\n");
    if drift.differences.is_empty() {
        out.push_str("no differences\n");
        return out;
    }
    let width = drift.differences.iter().map(|d| d.name.chars().count()).max().unwrap_or(0).min(32);
    let mut groups: Vec<Group> = drift.differences.iter().map(|d| d.group).collect();
    groups.dedup();
    for group in groups {
        let of: Vec<&Difference> = drift.differences.iter().filter(|d| d.group == group).collect();
        let applicable = of.iter().filter(|d| d.applicable()).count();
        out.push_str(&format!("\n{} ({} differ, {applicable} applicable)\n", group.title(), of.len()));
        for d in of {
            let mark = if d.applicable() { '+' } else { '-' };
            out.push_str(&format!(
                "  {mark} {:width$}  {} -> {}\n",
                d.name,
                shown(d.a.as_deref()),
                shown(d.b.as_deref())
            ));
            match (&d.advice, d.applicable()) {
                (Some(advice), true) => out.push_str(&format!("      applicable: {advice}\n")),
                (Some(advice), false) => out.push_str(&format!("      not applicable here: {advice}\n")),
                (None, false) => out.push_str("      not applicable here\n"),
                (None, true) => {}
            }
        }
        for remedy in drift.remedies.iter().filter(|r| r.group == group) {
            out.push_str(&format!("  {}\n", remedy.text));
        }
    }
    let applicable = drift.applicable().count();
    out.push_str(&format!(
        "\n{} difference{}: {applicable} applicable (`flakehunt matrix --against B -- COMMAND` tries them), {} not applicable here\n",
        drift.differences.len(),
        if drift.differences.len() == 1 { "" } else { "s" },
        drift.differences.len() - applicable
    ));
    out
}

/// A value as the terminal shows it: `(unset)` for an absent one, long ones cut.
fn shown(value: Option<&str>) -> String {
    match value {
        None => "(unset)".to_owned(),
        Some(v) if v.chars().count() > VALUE_CAP => format!("{}...", v.chars().take(VALUE_CAP).collect::<String>()),
        Some(v) => v.to_owned(),
    }
}

/// The JSON document: `a`, `b`, the counts, the groups with their differences (each with
/// `applicable`, the `change` flakehunt would make, `advice`), and the remedies.
pub fn json(drift: &Drift, a: &str, b: &str) -> serde_json::Value {
    let mut groups: Vec<Group> = drift.differences.iter().map(|d| d.group).collect();
    groups.dedup();
    let groups: Vec<serde_json::Value> = groups
        .into_iter()
        .map(|group| {
            let differences: Vec<serde_json::Value> = drift
                .differences
                .iter()
                .filter(|d| d.group == group)
                .map(|d| {
                    serde_json::json!({
                        "name": d.name,
                        "a": d.a,
                        "b": d.b,
                        "applicable": d.applicable(),
                        "change": d.change,
                        "advice": d.advice,
                    })
                })
                .collect();
            serde_json::json!({ "group": group, "title": group.title(), "differences": differences })
        })
        .collect();
    let applicable = drift.applicable().count();
    serde_json::json!({
        "a": a,
        "b": b,
        "differences": drift.differences.len(),
        "applicable": applicable,
        "not_applicable": drift.differences.len() - applicable,
        "groups": groups,
        "remedies": drift.remedies,
    })
}
