//! The analysis of a `matrix --against`: the search replayed on the record's counts (a cell
//! reproduces at its second failure), the smallest set of the other machine's differences that
//! still reproduces, and what was tried and what could not be. Pure: counts in, words out.
//! Main function: [`apply`].

use super::super::summary::{
    AgainstDetails, Attribution, Axis, DifferenceAxis, MatrixCellDetails, MatrixDetails, SearchCell,
};
use super::{change_map, decided, search, set_of, Against, Search};
use crate::analysis::{Summary, Tally};
use crate::drift::ChangeSetting;
use crate::plan::CellSpec;

/// Untried differences listed one by one in the notes; the rest are counted.
const UNTRIED_NOTED: usize = 12;

/// Adds what the search found to a summary built from `tally` over `cells`.
pub fn apply(summary: &mut Summary, against: &Against, runs: u64, confirm: u64, cells: &[CellSpec], tally: &Tally) {
    let dims = &against.dimensions;
    let counts = |name: &str| tally.cells.get(name).map_or((0, 0), |c| (c.attempts, c.failures));
    let sets: Vec<Vec<usize>> = cells.iter().map(|c| set_of(dims, c)).collect();
    let decision = |i: usize| {
        let (attempts, failures) = counts(&cells[i].name);
        decided(attempts, failures, runs.max(1), confirm)
    };
    let known = |set: &[usize]| sets.iter().position(|s| s == set).and_then(decision);
    let outcome = if dims.is_empty() { Search::NothingToTry } else { search(dims, &known) };
    let minimal = match &outcome {
        Search::Minimal(set) => Some(set.clone()),
        Search::FailsHere => Some(Vec::new()),
        _ => None,
    };
    for (i, out) in summary.cells.iter_mut().enumerate().take(cells.len()) {
        out.overlay = Some(change_map(dims, &sets[i]));
        out.reproduced = Some(decision(i) == Some(true));
        if minimal.as_ref() == Some(&sets[i]) {
            out.minimal_overlay = Some(change_map(dims, &sets[i]));
        }
    }
    let all_cell = (0..cells.len()).find(|&i| !dims.is_empty() && sets[i].len() == dims.len());
    let attempts: u64 = summary.attempts;
    let source = &against.snapshot;
    let (verdict, text) = match &outcome {
        Search::Minimal(set) => {
            let names: Vec<String> = set.iter().map(|&i| crate::kind::matrix::against::shortened(&dims[i].change.text())).collect();
            let others = dims.len() - set.len();
            let head = match names.len() {
                1 => format!("fails with {} alone", names[0]),
                _ => format!("fails with {} together", join_and(&names)),
            };
            let tail = match others {
                0 => String::new(),
                1 => "; the other difference tried does not matter".to_owned(),
                n => format!("; the other {n} differences tried do not matter"),
            };
            ("reproduced", format!("reproduced: {head}, the values of {source}{tail}"))
        }
        Search::FailsHere => (
            "reproduced",
            "reproduced here as it is: the baseline failed twice without any of the differences, so the failure does not need the other machine's conditions (try `flakehunt hunt` for the scheduling ones)".to_owned(),
        ),
        Search::NotReproduced => {
            let once = all_cell.is_some_and(|i| counts(&cells[i].name).1 == 1);
            if once {
                (
                    "rumour",
                    format!("rumour: with the {} difference(s) from {source} applied it failed once and never again (one failure is not a reproduction; raise --confirm or --runs)", dims.len()),
                )
            } else {
                (
                    "not-reproduced",
                    format!(
                        "not reproduced: with all {} difference(s) from {source} that apply here it did not fail twice in {attempts} attempts; what it may need is among those not tried",
                        dims.len()
                    ),
                )
            }
        }
        Search::NothingToTry => (
            "not-reproduced",
            format!(
                "nothing to try: this machine already matches {source} in everything flakehunt can change; {} difference(s) it cannot apply here are listed as not tried",
                against.untried.len()
            ),
        ),
        Search::Ask(_) if all_cell.and_then(decision) == Some(true) => (
            "reproduced",
            format!(
                "reproduced with every difference from {source} applied; the smallest set was not found: the search stopped after {} cells (the budget, or an interruption: --resume goes on)",
                cells.len()
            ),
        ),
        Search::Ask(_) => (
            "not-reproduced",
            format!("incomplete: stopped before every difference from {source} had run {runs} times (--resume goes on)"),
        ),
    };
    summary.verdict = verdict.into();
    summary.verdict_text = text;

    let tried: Vec<String> = dims
        .iter()
        .map(|d| format!("{} ({} -> {})", d.name, short(d.here.as_deref()), short(d.there.as_deref())))
        .collect();
    if !tried.is_empty() {
        summary.notes.push(format!("tried: {}", tried.join(", ")));
    }
    for u in against.untried.iter().take(UNTRIED_NOTED) {
        let why = u.why.as_deref().map(|w| format!(": {w}")).unwrap_or_default();
        summary.notes.push(format!(
            "not tried: {} {} -> {}{why}",
            u.name,
            short(u.here.as_deref()),
            short(u.there.as_deref())
        ));
    }
    if against.untried.len() > UNTRIED_NOTED {
        summary.notes.push(format!(
            "not tried: {} more (`flakehunt diff` lists them all)",
            against.untried.len() - UNTRIED_NOTED
        ));
    }
    summary.notes.extend(against.remedies.iter().cloned());

    let mut attribution = Vec::new();
    for (d, dim) in dims.iter().enumerate() {
        for (applied, value) in [(false, &dim.here), (true, &dim.there)] {
            let (mut a, mut f) = (0, 0);
            for (i, cell) in cells.iter().enumerate() {
                if sets[i].contains(&d) == applied {
                    let (ca, cf) = counts(&cell.name);
                    a += ca;
                    f += cf;
                }
            }
            attribution.push(Attribution {
                dimension: dim.name.clone(),
                value: value.clone().unwrap_or_else(|| "unset".to_owned()),
                attempts: a,
                failures: f,
                rate: if a == 0 { 0.0 } else { f as f64 / a as f64 },
            });
        }
    }
    summary.attribution = Some(attribution.clone());
    let search_cells: Vec<SearchCell> = cells
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let (attempts, failures) = counts(&c.name);
            SearchCell {
                cell: c.name.clone(),
                changes: change_map(dims, &sets[i]),
                attempts,
                failures,
                reproduced: decision(i),
            }
        })
        .collect();
    let minimal_map = minimal.as_ref().map(|set| change_map(dims, set));
    let dimensions = dims
        .iter()
        .map(|d| {
            let unset = || "unset".to_owned();
            Axis::Difference(DifferenceAxis {
                name: d.name.clone(),
                group: d.group.clone(),
                values: vec![d.here.clone().unwrap_or_else(unset), d.there.clone().unwrap_or_else(unset)],
                change: d.change.clone(),
            })
        })
        .collect();
    let details = MatrixDetails {
        dimensions,
        cells: summary.cells.iter().map(MatrixCellDetails::of).collect(),
        reproduced: summary.cells.iter().filter(|c| c.reproduced == Some(true)).map(|c| c.name.clone()).collect(),
        minimal_overlay: minimal_map.clone(),
        minimal_overlays: if verdict == "reproduced" { vec![summary.verdict_text.clone()] } else { Vec::new() },
        attribution,
        against: Some(AgainstDetails {
            snapshot: against.snapshot.clone(),
            host: against.host.clone(),
            captured_at: against.captured_at.clone(),
            outcome: match &outcome {
                Search::Minimal(_) => "minimal",
                Search::FailsHere => "fails-here",
                Search::NotReproduced => "not-reproduced",
                Search::NothingToTry => "nothing-to-try",
                Search::Ask(_) => "incomplete",
            }
            .to_owned(),
            tried: dims.clone(),
            untried: against.untried.clone(),
            remedies: against.remedies.clone(),
            minimal_overlay: minimal_map,
            search: search_cells,
        }),
    };
    summary.details = crate::analysis::Details::Matrix(Box::new(details));
}

/// A value in a note: `unset` for none, a long one cut (the details hold it whole).
fn short(value: Option<&str>) -> String {
    match value {
        None => "unset".to_owned(),
        Some(v) if v.chars().count() > 40 => format!("{}...", v.chars().take(40).collect::<String>()),
        Some(v) => v.to_owned(),
    }
}

fn join_and(items: &[String]) -> String {
    match items.len() {
        0 => String::new(),
        1 => items[0].clone(),
        n => format!("{} and {}", items[..n - 1].join(", "), items[n - 1]),
    }
}
