//! Read-only views of the hunt-specific part of a summary (`Summary.details`): the matrix's
//! dimensions and overlays, the fire ladder. The matrix and fire hunts own that document; these
//! views read it defensively (a missing or oddly typed field is skipped, never a panic), so the
//! renderers show whatever a record carries. Main types: [`MatrixView`], [`FireView`].

use std::collections::BTreeMap;

use serde_json::Value;

use crate::analysis::Summary;

/// One matrix dimension and its values, the first being the baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Dimension {
    /// The variable, limit or placeholder name.
    pub name: String,
    /// Its values in order.
    pub values: Vec<String>,
}

/// One matrix cell: its overlay and counts.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixCell {
    /// The cell's name.
    pub name: String,
    /// Dimension name to value.
    pub overlay: BTreeMap<String, String>,
    /// Attempts.
    pub attempts: u64,
    /// Failures.
    pub failures: u64,
}

/// The matrix part of a summary.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixView {
    /// Dimensions in order.
    pub dimensions: Vec<Dimension>,
    /// Cells with their overlays.
    pub cells: Vec<MatrixCell>,
    /// What `reproduced` says, in words.
    pub reproduced: Option<String>,
    /// The smallest overlay that still reproduces, as `NAME=VALUE` items.
    pub minimal_overlay: Vec<String>,
    /// Attribution rows, as key/value lists (whatever fields the matrix writes).
    pub attribution: Vec<Vec<(String, String)>>,
}

/// One concurrent level of a fire ladder.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Level {
    /// Workers at once.
    pub workers: Option<u64>,
    /// Invocations in all.
    pub runs: Option<u64>,
    /// Invocations that failed.
    pub failures: Option<u64>,
    /// Whether the state differed from the reference.
    pub state_differs: Option<bool>,
    /// `accept` or a `reject...` verdict.
    pub verdict: String,
    /// Findings: kind, path, count, detail.
    pub findings: Vec<Finding>,
}

/// One thing a fire level found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Finding {
    /// Lost records, torn lines, integrity error...
    pub kind: String,
    /// The file or table.
    pub path: String,
    /// How many.
    pub count: Option<u64>,
    /// In words.
    pub detail: String,
}

/// The fire part of a summary.
#[derive(Debug, Clone, PartialEq)]
pub struct FireView {
    /// The sequential reference: runs and failures.
    pub reference: Option<(u64, u64)>,
    /// The ladder, in order.
    pub levels: Vec<Level>,
}

impl Level {
    /// `8x40`.
    pub fn name(&self) -> String {
        match (self.workers, self.runs) {
            (Some(w), Some(r)) => format!("{w}x{r}"),
            (Some(w), None) => format!("{w} workers"),
            _ => "level".into(),
        }
    }

    /// Whether the level ran (the ladder stops at the first rejected level).
    pub fn ran(&self) -> bool {
        !self.verdict.eq_ignore_ascii_case("not run")
    }

    /// Whether the verdict accepts the level.
    pub fn accepted(&self) -> bool {
        self.verdict.eq_ignore_ascii_case("accept")
    }
}

/// A JSON scalar (or anything) as text: strings bare, null as empty.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => if *b { "yes" } else { "no" }.into(),
        Value::Array(items) => items.iter().map(value_text).collect::<Vec<_>>().join(", "),
        Value::Object(m) => m.iter().map(|(k, v)| format!("{k}={}", value_text(v))).collect::<Vec<_>>().join(", "),
        Value::Number(n) => n.to_string(),
    }
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).filter(|x| !x.is_null()).map(value_text)
}

impl MatrixView {
    /// The matrix details of `summary`, if it carries any.
    pub fn of(summary: &Summary) -> Option<Self> {
        let d = &summary.details;
        if !d.is_object() || (d.get("dimensions").is_none() && d.get("cells").is_none()) {
            return None;
        }
        let mut cells: Vec<MatrixCell> = Vec::new();
        for c in d.get("cells").and_then(Value::as_array).into_iter().flatten() {
            let name = str_field(c, "name").unwrap_or_default();
            let overlay = c
                .get("overlay")
                .and_then(Value::as_object)
                .map(|m| m.iter().map(|(k, v)| (k.clone(), value_text(v))).collect())
                .unwrap_or_default();
            // Counts come from the summary's own cell when it has one, so they match the tables.
            let (attempts, failures) = match summary.cell(&name) {
                Some(s) => (s.attempts, s.failures),
                None => (
                    c.get("attempts").and_then(Value::as_u64).unwrap_or(0),
                    c.get("failures").and_then(Value::as_u64).unwrap_or(0),
                ),
            };
            cells.push(MatrixCell { name, overlay, attempts, failures });
        }
        let mut dimensions = Vec::new();
        for dim in d.get("dimensions").and_then(Value::as_array).into_iter().flatten() {
            let (name, mut values) = match dim {
                Value::String(s) => (s.clone(), Vec::new()),
                _ => (
                    str_field(dim, "name").unwrap_or_default(),
                    dim.get("values")
                        .and_then(Value::as_array)
                        .map(|a| a.iter().map(value_text).collect())
                        .unwrap_or_default(),
                ),
            };
            // Values the dimension did not list but cells used still belong on the axis.
            for c in &cells {
                if let Some(v) = c.overlay.get(&name) {
                    if !values.contains(v) {
                        values.push(v.clone());
                    }
                }
            }
            if !name.is_empty() {
                dimensions.push(Dimension { name, values });
            }
        }
        let reproduced = d.get("reproduced").filter(|v| !v.is_null()).map(|v| match v {
            Value::Bool(true) => "yes".to_owned(),
            Value::Bool(false) => "no".to_owned(),
            Value::Array(a) if a.is_empty() => "no cell".to_owned(),
            other => value_text(other),
        });
        let minimal_overlay = match d.get("minimal_overlay") {
            Some(Value::Object(m)) => m.iter().map(|(k, v)| format!("{k}={}", value_text(v))).collect(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|s| match (s.get("name"), s.get("value")) {
                    (Some(n), Some(v)) => format!("{}={}", value_text(n), value_text(v)),
                    _ => value_text(s),
                })
                .collect(),
            Some(Value::String(s)) => vec![s.clone()],
            _ => Vec::new(),
        };
        let attribution = d
            .get("attribution")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|row| match row {
                Value::Object(m) => m.iter().map(|(k, v)| (k.clone(), value_text(v))).collect(),
                other => vec![("".to_owned(), value_text(other))],
            })
            .collect();
        Some(Self { dimensions, cells, reproduced, minimal_overlay, attribution })
    }

    /// The two dimensions a heat map shows: those with the most values among the first ones the
    /// attribution names, else the first two with more than one value.
    pub fn heat_axes(&self) -> Option<(&Dimension, &Dimension)> {
        let named: Vec<&Dimension> = self
            .dimensions
            .iter()
            .filter(|d| d.values.len() > 1)
            .filter(|d| self.attribution.iter().any(|row| row.iter().any(|(_, v)| v == &d.name)))
            .collect();
        let rest = self.dimensions.iter().filter(|d| d.values.len() > 1 && !named.contains(d));
        let mut order = named.clone();
        order.extend(rest);
        match order.as_slice() {
            [a, b, ..] => Some((a, b)),
            _ => None,
        }
    }

    /// Failures and attempts of the cells with `x` and `y` set, summed over the other dimensions.
    pub fn heat(&self, xd: &str, x: &str, yd: &str, y: &str) -> (u64, u64) {
        self.cells
            .iter()
            .filter(|c| c.overlay.get(xd).map(String::as_str) == Some(x))
            .filter(|c| c.overlay.get(yd).map(String::as_str) == Some(y))
            .fold((0, 0), |(f, n), c| (f + c.failures, n + c.attempts))
    }
}

impl FireView {
    /// The fire details of `summary`, if it carries any.
    pub fn of(summary: &Summary) -> Option<Self> {
        // A fire summary carries its ladder at the top level; older documents in `details`.
        let top = summary.fire.as_ref().and_then(|f| serde_json::to_value(f).ok());
        let d = match &top {
            Some(v) if v.get("levels").is_some() => v,
            _ => &summary.details,
        };
        let levels_json = d.get("levels").and_then(Value::as_array)?;
        let u = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64);
        let reference = d.get("reference").and_then(|r| Some((u(r, "runs")?, u(r, "failures").unwrap_or(0))));
        let levels = levels_json
            .iter()
            .map(|l| Level {
                workers: u(l, "workers"),
                runs: u(l, "runs"),
                failures: u(l, "failures"),
                state_differs: l.get("state_differs").and_then(Value::as_bool),
                verdict: str_field(l, "verdict").unwrap_or_else(|| "not run".into()),
                findings: l
                    .get("findings")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|f| Finding {
                        kind: str_field(f, "kind").unwrap_or_default(),
                        path: str_field(f, "path").unwrap_or_default(),
                        count: u(f, "count"),
                        detail: str_field(f, "detail").unwrap_or_default(),
                    })
                    .collect(),
            })
            .collect();
        let mut levels: Vec<Level> = levels;
        // Levels of the ladder the hunt never climbed (it stopped at a rejection) are shown too.
        let ladder = d.get("ladder").and_then(Value::as_str).unwrap_or("");
        for (i, step) in ladder.split(',').enumerate().filter(|(_, s)| !s.is_empty()) {
            if i < levels.len() {
                continue;
            }
            let mut parts = step.trim().split('x').map(|n| n.parse::<u64>().ok());
            let (workers, runs) = (parts.next().flatten(), parts.next().flatten());
            levels.push(Level {
                workers,
                runs,
                failures: None,
                state_differs: None,
                verdict: "not run".into(),
                findings: Vec::new(),
            });
        }
        Some(Self { reference, levels })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary_with(details: Value) -> Summary {
        let manifest: crate::record::Manifest = serde_json::from_value(serde_json::json!({
            "format_version": 1, "tool_version": "0", "kind": "matrix", "run_id": "r",
            "target": {"argv": ["t"]}, "plan": {"runs": 1, "jobs": 1, "timeout_seconds": 1.0,
            "grace_seconds": 1.0, "capture_bytes": 1}, "cells": [], "seed": 1, "host": "h",
            "started_at": "2024-01-01T00:00:00Z"
        }))
        .unwrap();
        let mut s = Summary::build(&manifest, &[], &crate::analysis::Tally::default(), 0);
        s.details = details;
        s
    }

    #[test]
    fn odd_details_do_not_panic() {
        for d in [
            serde_json::json!({"dimensions": 3, "cells": "x"}),
            serde_json::json!({"dimensions": ["A"], "cells": [{"overlay": 1}, 2]}),
            serde_json::json!({"levels": [1, {"workers": "x", "findings": [null]}]}),
        ] {
            let s = summary_with(d);
            let _ = MatrixView::of(&s).map(|m| m.heat_axes().map(|(a, b)| (a.name.clone(), b.name.clone())));
            let _ = FireView::of(&s);
        }
    }

    #[test]
    fn heat_sums_over_other_dimensions() {
        let s = summary_with(serde_json::json!({
            "dimensions": [{"name": "A", "values": ["1", "2"]}, "B", {"name": "C", "values": ["x"]}],
            "cells": [
                {"name": "a", "overlay": {"A": "1", "B": "p", "C": "x"}, "attempts": 4, "failures": 1},
                {"name": "b", "overlay": {"A": "1", "B": "p", "C": "y"}, "attempts": 4, "failures": 2},
                {"name": "c", "overlay": {"A": "2", "B": "q"}, "attempts": 4, "failures": 0}
            ]
        }));
        let m = MatrixView::of(&s).unwrap();
        let (x, y) = m.heat_axes().unwrap();
        assert_eq!((x.name.as_str(), y.name.as_str()), ("A", "B"));
        assert_eq!(y.values, vec!["p", "q"]);
        assert_eq!(m.heat("A", "1", "B", "p"), (3, 8));
    }
}
