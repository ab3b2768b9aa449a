//! A matrix hunt's part of the record: its dimensions, and its part of the summary.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::against::{Change, Dimension as DifferenceDimension, Untried};

/// What a dimension changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DimensionKind {
    /// An environment variable (`unset` removes it).
    Env,
    /// A resource limit (`unlimited` allowed).
    Rlimit,
    /// A `{name}` placeholder in the argv.
    Placeholder,
}

/// One dimension of the grid; its first value is the baseline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dimension {
    /// Variable, limit or placeholder name.
    pub name: String,
    /// What it changes.
    pub kind: DimensionKind,
    /// Its values as written (`unset`, `unlimited` included).
    pub values: Vec<String>,
}

/// The matrix part of a summary's `details`: the grid, each cell's overlay and counts, what
/// reproduced and the smallest overlays; with `--against`, the search. Written through a
/// `serde_json::Value` (see [`super::details::Details`]), so its keys are in the sorted order
/// the document has always had.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixDetails {
    /// The dimensions of the grid.
    pub dimensions: Vec<Axis>,
    /// Every cell.
    pub cells: Vec<MatrixCellDetails>,
    /// The names of the reproduced cells.
    pub reproduced: Vec<String>,
    /// The first smallest overlay that still reproduces.
    pub minimal_overlay: Option<BTreeMap<String, String>>,
    /// Each distinct smallest overlay, in words.
    pub minimal_overlays: Vec<String>,
    /// Failures per dimension value.
    pub attribution: Vec<Attribution>,
    /// `matrix --against`: the other machine's differences and the search over them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub against: Option<AgainstDetails>,
}

/// One dimension of [`MatrixDetails`]: of the grid, or (`--against`) one of the other machine's
/// differences, with this machine's value and the other's as its two values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Axis {
    /// A difference from `--against`'s snapshot (tried first: a grid dimension has no `change`).
    Difference(DifferenceAxis),
    /// A dimension of the grid.
    Grid(Dimension),
}

/// A difference from the other machine as a dimension: `values` is `[here, there]`, `unset`
/// for a value that is not set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DifferenceAxis {
    /// What it is.
    pub name: String,
    /// Where it is (`env`, `locale`...).
    pub group: String,
    /// This machine's value, then the other's.
    pub values: Vec<String>,
    /// How it is applied.
    pub change: Change,
}

impl Axis {
    /// The dimension's name.
    pub fn name(&self) -> &str {
        match self {
            Axis::Difference(d) => &d.name,
            Axis::Grid(d) => &d.name,
        }
    }

    /// Its values, the baseline first.
    pub fn values(&self) -> &[String] {
        match self {
            Axis::Difference(d) => &d.values,
            Axis::Grid(d) => &d.values,
        }
    }
}

/// `details.against` of a `matrix --against`: the snapshot searched against, how the search
/// ended, what it tried and what it could not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgainstDetails {
    /// The snapshot's path, as given.
    pub snapshot: String,
    /// The other machine's host name.
    pub host: Option<String>,
    /// When its snapshot was taken.
    pub captured_at: Option<String>,
    /// `minimal`, `fails-here`, `not-reproduced`, `nothing-to-try` or `incomplete`.
    pub outcome: String,
    /// The differences tried.
    pub tried: Vec<DifferenceDimension>,
    /// The differences that cannot be applied here.
    pub untried: Vec<Untried>,
    /// What to do about those.
    pub remedies: Vec<String>,
    /// The smallest set of differences that still reproduces, by name with the other's values.
    pub minimal_overlay: Option<BTreeMap<String, String>>,
    /// Every cell of the search.
    pub search: Vec<SearchCell>,
}

/// One cell of the search, for `details.against.search`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchCell {
    /// The cell.
    pub cell: String,
    /// The differences it applied, by name, with the other machine's values.
    pub changes: BTreeMap<String, String>,
    /// Attempts.
    pub attempts: u64,
    /// Failures.
    pub failures: u64,
    /// Decided by the twice rule: `null` while undecided.
    pub reproduced: Option<bool>,
}

/// A dimension as the renderers lay it out: its name and every value a cell used.
#[derive(Debug, Clone, PartialEq)]
pub struct AxisValues<'a> {
    /// The dimension's name.
    pub name: &'a str,
    /// Its values in order, then values cells used that it does not list.
    pub values: Vec<&'a str>,
}

impl MatrixDetails {
    /// What `reproduced` says, in words: the reproduced cells, or `no cell`.
    pub fn reproduced_text(&self) -> String {
        match self.reproduced.is_empty() {
            true => "no cell".to_owned(),
            false => self.reproduced.join(", "),
        }
    }

    /// The first smallest overlay that still reproduces, as `NAME=VALUE` items.
    pub fn minimal_overlay_items(&self) -> Vec<String> {
        self.minimal_overlay.iter().flatten().map(|(k, v)| format!("{k}={v}")).collect()
    }

    /// The dimensions with their values, values that cells used but a dimension did not list
    /// appended (they still belong on its axis).
    pub fn axes(&self) -> Vec<AxisValues<'_>> {
        let mut axes = Vec::new();
        for dim in &self.dimensions {
            let name = dim.name();
            let mut values: Vec<&str> = dim.values().iter().map(String::as_str).collect();
            for c in &self.cells {
                if let Some(v) = c.overlay.as_ref().and_then(|o| o.get(name)) {
                    if !values.contains(&v.as_str()) {
                        values.push(v);
                    }
                }
            }
            if !name.is_empty() {
                axes.push(AxisValues { name, values });
            }
        }
        axes
    }

    /// The two dimensions a heat map shows: those with the most values among the first ones the
    /// attribution names, else the first two with more than one value.
    pub fn heat_axes<'a>(&self, axes: &'a [AxisValues<'a>]) -> Option<(&'a AxisValues<'a>, &'a AxisValues<'a>)> {
        let rows: Vec<[(&str, String); 5]> = self.attribution.iter().map(Attribution::fields).collect();
        let named: Vec<&AxisValues> = axes
            .iter()
            .filter(|d| d.values.len() > 1)
            .filter(|d| rows.iter().any(|row| row.iter().any(|(_, v)| v == d.name)))
            .collect();
        let rest = axes.iter().filter(|d| d.values.len() > 1 && !named.contains(d));
        let mut order = named.clone();
        order.extend(rest);
        match order.as_slice() {
            [a, b, ..] => Some((a, b)),
            _ => None,
        }
    }

    /// Failures and attempts of the cells with `x` and `y` set, summed over the other dimensions.
    pub fn heat(&self, xd: &str, x: &str, yd: &str, y: &str) -> (u64, u64) {
        fn value<'a>(c: &'a MatrixCellDetails, d: &str) -> Option<&'a str> {
            c.overlay.as_ref().and_then(|o| o.get(d)).map(String::as_str)
        }
        self.cells
            .iter()
            .filter(|c| value(c, xd) == Some(x))
            .filter(|c| value(c, yd) == Some(y))
            .fold((0, 0), |(f, n), c| (f + c.failures, n + c.attempts))
    }
}

impl Attribution {
    /// Its fields by name, in the document's (sorted) order, as text: the rate as JSON writes it.
    pub fn fields(&self) -> [(&'static str, String); 5] {
        let rate = serde_json::Number::from_f64(self.rate).map(|n| n.to_string()).unwrap_or_default();
        [
            ("attempts", self.attempts.to_string()),
            ("dimension", self.dimension.clone()),
            ("failures", self.failures.to_string()),
            ("rate", rate),
            ("value", self.value.clone()),
        ]
    }
}

/// One cell in [`MatrixDetails`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixCellDetails {
    /// The cell's name.
    pub name: String,
    /// Dimension -> value.
    pub overlay: Option<BTreeMap<String, String>>,
    /// Attempts.
    pub attempts: u64,
    /// Failures.
    pub failures: u64,
    /// Failed at least twice under its overlay.
    pub reproduced: Option<bool>,
    /// Confirmation attempts among `attempts`.
    pub confirmations: u64,
    /// The smallest overlay that still reproduces, for reproduced cells.
    pub minimal_overlay: Option<BTreeMap<String, String>>,
}

/// Failures and attempts per dimension value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    /// The dimension.
    pub dimension: String,
    /// One of its values.
    pub value: String,
    /// Attempts of cells with that value.
    pub attempts: u64,
    /// Their failures.
    pub failures: u64,
    /// failures / attempts.
    pub rate: f64,
}
