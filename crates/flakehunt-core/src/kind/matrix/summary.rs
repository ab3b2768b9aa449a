//! Matrix analysis: which cells reproduced (twice, never once), the smallest overlay that still
//! reproduces, and attribution per dimension value. Pure: counts in, words out.

use std::collections::BTreeMap;

use crate::analysis::stats;
use crate::analysis::{Summary, Tally};
use crate::kind::matrix::plan::{cell_name, overlay_map, redacted_cell_name, Dimension, DimensionSetting};
use crate::plan::CellSpec;
pub use crate::schema::matrix::{
    AgainstDetails, Attribution, Axis, AxisValues, DifferenceAxis, MatrixCellDetails, MatrixDetails, SearchCell,
};

/// A cell counts as reproduced only at this many failures under the same overlay.
pub const REPRODUCED_AT: u64 = 2;

/// Adds the matrix parts to a summary built from `tally` over the grid `cells` of `dimensions`.
pub fn apply(summary: &mut Summary, dimensions: &[Dimension], cells: &[CellSpec], tally: &Tally) {
    let failures_of = |name: &str| tally.cells.get(name).map_or(0, |c| c.failures);
    let reproduced = |name: &str| failures_of(name) >= REPRODUCED_AT;
    // Index of each cell's value per dimension, recovered from its overlay.
    let index_of = |cell: &CellSpec| -> Vec<usize> {
        dimensions
            .iter()
            .zip(&cell.overlay)
            .map(|(d, s)| d.values.iter().position(|v| *v == s.value_text()).unwrap_or(0))
            .collect()
    };
    // The name the record holds: the plain one, or the one redaction gave (see `plan::grid`).
    let name_of = |idx: &[usize]| {
        let overlay: Vec<_> = dimensions.iter().zip(idx).map(|(d, &i)| d.setting(i)).collect();
        let plain = cell_name(&overlay);
        if tally.cells.contains_key(&plain) {
            plain
        } else {
            redacted_cell_name(&overlay)
        }
    };

    let mut minimal_overlays: Vec<(BTreeMap<String, String>, Vec<String>)> = Vec::new();
    for (spec, out) in cells.iter().zip(summary.cells.iter_mut()) {
        out.overlay = Some(overlay_map(&spec.overlay));
        out.reproduced = Some(reproduced(&spec.name));
        if !reproduced(&spec.name) {
            continue;
        }
        // Delta debugging with granularity one: revert each dimension to its baseline value
        // and keep the reversion when the cell it leads to still reproduces (twice).
        let mut current = index_of(spec);
        for d in 0..dimensions.len() {
            if current[d] == 0 {
                continue;
            }
            let mut candidate = current.clone();
            candidate[d] = 0;
            if reproduced(&name_of(&candidate)) {
                current = candidate;
            }
        }
        let minimal: BTreeMap<String, String> = dimensions
            .iter()
            .zip(&current)
            .filter(|(_, &i)| i != 0)
            .map(|(d, &i)| (d.name.clone(), d.values[i].clone()))
            .collect();
        out.minimal_overlay = Some(minimal.clone());
        match minimal_overlays.iter_mut().find(|(m, _)| *m == minimal) {
            Some((_, names)) => names.push(spec.name.clone()),
            None => minimal_overlays.push((minimal, vec![spec.name.clone()])),
        }
    }

    let mut attribution = Vec::new();
    for (d, dim) in dimensions.iter().enumerate() {
        for (i, value) in dim.values.iter().enumerate() {
            let (mut attempts, mut failures) = (0, 0);
            for spec in cells.iter().filter(|c| index_of(c).get(d) == Some(&i)) {
                if let Some(t) = tally.cells.get(&spec.name) {
                    attempts += t.attempts;
                    failures += t.failures;
                }
            }
            let rate = if attempts == 0 { 0.0 } else { failures as f64 / attempts as f64 };
            attribution.push(Attribution {
                dimension: dim.name.clone(),
                value: value.clone(),
                attempts,
                failures,
                rate,
            });
        }
    }

    let sentences: Vec<String> =
        minimal_overlays.iter().map(|(m, names)| sentence(m, dimensions, names.len())).collect();
    let rumours: Vec<&str> = cells.iter().filter(|c| failures_of(&c.name) == 1).map(|c| c.name.as_str()).collect();
    let (verdict, text) = if !minimal_overlays.is_empty() {
        ("reproduced", format!("reproduced: {}", sentences.join("; ")))
    } else if !rumours.is_empty() {
        (
            "rumour",
            format!(
                "rumour: {} failed once and never again (one failure is not a reproduction; raise --confirm or --runs)",
                rumours.join(", ")
            ),
        )
    } else {
        ("not-reproduced", format!("not reproduced in {} attempts over {} cells", summary.attempts, cells.len()))
    };
    summary.verdict = verdict.into();
    summary.verdict_text = text;
    if verdict == "not-reproduced" {
        let rate = stats::attempts_to_detect_twice(0.01, 0.95);
        summary
            .notes
            .push(format!("to reproduce (twice) a 1 % failure with 95 % confidence a cell needs {rate} attempts"));
    }
    summary.dimensions = Some(dimensions.to_vec());
    summary.attribution = Some(attribution.clone());
    let details = MatrixDetails {
        dimensions: dimensions.iter().cloned().map(Axis::Grid).collect(),
        cells: summary.cells.iter().map(MatrixCellDetails::of).collect(),
        reproduced: summary.cells.iter().filter(|c| c.reproduced == Some(true)).map(|c| c.name.clone()).collect(),
        minimal_overlay: minimal_overlays.first().map(|(m, _)| m.clone()),
        minimal_overlays: sentences,
        attribution,
        against: None,
    };
    summary.details = crate::analysis::Details::Matrix(Box::new(details));
}

/// "fails with LC_ALL=C alone; TZ and nofile do not matter".
fn sentence(minimal: &BTreeMap<String, String>, dimensions: &[Dimension], cells: usize) -> String {
    let others: Vec<&str> = dimensions.iter().map(|d| d.name.as_str()).filter(|n| !minimal.contains_key(*n)).collect();
    let set: Vec<String> = minimal.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let head = match set.len() {
        0 => "fails at the baseline: none of these conditions is needed".to_owned(),
        1 => format!("fails with {} alone", set[0]),
        _ => format!("fails with {} together", join_and(&set)),
    };
    let tail = match others.len() {
        0 => String::new(),
        _ if set.is_empty() => String::new(),
        1 => format!("; {} does not matter", others[0]),
        _ => format!("; {} do not matter", join_and(&others.iter().map(|s| s.to_string()).collect::<Vec<_>>())),
    };
    let count = if cells > 1 { format!(" ({cells} reproduced cells)") } else { String::new() };
    format!("{head}{tail}{count}")
}

fn join_and(items: &[String]) -> String {
    match items.len() {
        0 => String::new(),
        1 => items[0].clone(),
        n => format!("{} and {}", items[..n - 1].join(", "), items[n - 1]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Summaries written by flakehunt before `details` was typed read back into the typed
    /// details, and come out as the same document, the details byte for byte.
    #[test]
    fn summaries_written_before_round_trip() {
        for text in [
            include_str!("../../../tests/records/matrix.summary.json"),
            include_str!("../../../tests/records/fire.summary.json"),
        ] {
            let summary: Summary = serde_json::from_str(text).unwrap();
            let written: serde_json::Value = serde_json::from_str(text).unwrap();
            let mut again = serde_json::to_value(&summary).unwrap();
            // Fields added since are written with their defaults: a signature's stream.
            for signature in again["signatures"].as_array_mut().into_iter().flatten() {
                assert_eq!(signature.as_object_mut().and_then(|s| s.remove("stream")), Some("stderr".into()));
            }
            assert_eq!(again, written);
            let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap();
            let details = serde_json::to_value(&summary.details).unwrap();
            assert_eq!(pretty(&details), pretty(&written["details"]));
        }
        let summary: Summary =
            serde_json::from_str(include_str!("../../../tests/records/matrix.summary.json")).unwrap();
        let details = summary.details.matrix().unwrap();
        assert_eq!(details.dimensions.len(), 1);
        assert_eq!(details.cells.len(), 2);
        assert_eq!(details.attribution.len(), 2);
        assert_eq!(serde_json::to_value(details).unwrap(), serde_json::to_value(&summary.details).unwrap());
    }

    /// A heat map sums each pair of values over the other dimensions, and its axes hold the
    /// values cells used that their dimension did not list.
    #[test]
    fn heat_sums_over_other_dimensions() {
        let details: MatrixDetails = serde_json::from_value(serde_json::json!({
            "dimensions": [
                {"name": "A", "kind": "env", "values": ["1", "2"]},
                {"name": "B", "kind": "env", "values": []},
                {"name": "C", "kind": "env", "values": ["x"]}
            ],
            "cells": [
                {"name": "a", "overlay": {"A": "1", "B": "p", "C": "x"}, "attempts": 4, "failures": 1,
                 "reproduced": null, "confirmations": 0, "minimal_overlay": null},
                {"name": "b", "overlay": {"A": "1", "B": "p", "C": "y"}, "attempts": 4, "failures": 2,
                 "reproduced": null, "confirmations": 0, "minimal_overlay": null},
                {"name": "c", "overlay": {"A": "2", "B": "q"}, "attempts": 4, "failures": 0,
                 "reproduced": null, "confirmations": 0, "minimal_overlay": null}
            ],
            "reproduced": [], "minimal_overlay": null, "minimal_overlays": [], "attribution": []
        }))
        .unwrap();
        let axes = details.axes();
        let (x, y) = details.heat_axes(&axes).unwrap();
        assert_eq!((x.name, y.name), ("A", "B"));
        assert_eq!(y.values, vec!["p", "q"]);
        assert_eq!(details.heat("A", "1", "B", "p"), (3, 8));
    }
}
