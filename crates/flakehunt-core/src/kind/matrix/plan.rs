//! The matrix: dimensions of environment conditions, their cartesian product as cells, and the
//! adaptive plan that runs the grid then confirms cells that failed exactly once. Main types:
//! [`Dimension`] and [`MatrixPlan`].

use std::collections::BTreeMap;

use crate::plan::{AttemptSpec, CellSpec, Next, Plan, Schedule, Setting, Shard};
use crate::record::Attempt;
pub use crate::schema::matrix::{Dimension, DimensionKind};

/// A matrix dimension's values as the settings its cells apply.
pub trait DimensionSetting {
    /// The setting for value `i`.
    fn setting(&self, i: usize) -> Setting;
}

impl DimensionSetting for Dimension {
    fn setting(&self, i: usize) -> Setting {
        let v = &self.values[i];
        match self.kind {
            DimensionKind::Env => Setting::Env { name: self.name.clone(), value: (v != "unset").then(|| v.clone()) },
            DimensionKind::Rlimit => Setting::Rlimit { name: self.name.clone(), value: parse_limit(v).ok().flatten() },
            DimensionKind::Placeholder => Setting::Placeholder { name: self.name.clone(), value: v.clone() },
        }
    }
}

/// Parses a resource limit value: a number with an optional K/M/G (binary) suffix, or
/// `unlimited` (`Ok(None)`).
pub fn parse_limit(v: &str) -> Result<Option<u64>, String> {
    let t = v.trim();
    if t == "unlimited" || t == "infinity" {
        return Ok(None);
    }
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1u64 << 10),
        Some((i, 'm' | 'M')) => (&t[..i], 1 << 20),
        Some((i, 'g' | 'G')) => (&t[..i], 1 << 30),
        _ => (t, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .map(Some)
        .ok_or_else(|| format!("'{v}' is not a limit: write a number (K, M, G suffixes allowed) or unlimited"))
}

/// How many cells the grid of `dimensions` has, without building it; `None` beyond `u64`.
pub fn grid_size(dimensions: &[Dimension]) -> Option<u64> {
    dimensions.iter().try_fold(1u64, |n, d| n.checked_mul(d.values.len() as u64))
}

/// The grid's cells, in odometer order with the last dimension varying fastest; the first cell
/// is the baseline (every dimension at its first value).
///
/// A cell's name holds its values, and it is written everywhere (record, logs, reports, the
/// terminal): unless `--no-redact`, secret values are redacted in it ([`redacted_cell_name`]),
/// the overlay itself keeping the real values the attempts need. Two cells whose names
/// redaction made equal (`API_TOKEN=a`, `API_TOKEN=b`) are told apart by their position.
pub fn grid(dimensions: &[Dimension]) -> Vec<CellSpec> {
    let mut cells = raw_grid(dimensions);
    if crate::redact::enabled() {
        let names: Vec<String> = cells.iter().map(|c| redacted_cell_name(&c.overlay)).collect();
        for (i, (cell, name)) in cells.iter_mut().zip(&names).enumerate() {
            cell.name = if names.iter().filter(|n| *n == name).count() > 1 {
                format!("{name} (cell {})", i + 1)
            } else {
                name.clone()
            };
        }
    }
    cells
}

/// [`cell_name`] with secret values redacted: by the variable's name, then by value.
pub fn redacted_cell_name(overlay: &[Setting]) -> String {
    if overlay.is_empty() {
        return "baseline".into();
    }
    let pair = |s: &Setting| {
        let value = s.value_text();
        let value = match s {
            Setting::Env { .. } | Setting::Placeholder { .. } => {
                crate::redact::env_value(s.name(), &value).into_owned()
            }
            Setting::Rlimit { .. } => value,
        };
        crate::redact::text(&format!("{}={value}", s.name())).into_owned()
    };
    overlay.iter().map(pair).collect::<Vec<_>>().join(" ")
}

fn raw_grid(dimensions: &[Dimension]) -> Vec<CellSpec> {
    let total: usize = dimensions.iter().map(|d| d.values.len()).product();
    (0..total)
        .map(|mut n| {
            let mut idx = vec![0; dimensions.len()];
            for (i, d) in dimensions.iter().enumerate().rev() {
                idx[i] = n % d.values.len();
                n /= d.values.len();
            }
            let overlay: Vec<Setting> = dimensions.iter().zip(&idx).map(|(d, &i)| d.setting(i)).collect();
            CellSpec { name: cell_name(&overlay), profile: None, overlay }
        })
        .collect()
}

/// `LC_ALL=C TZ=UTC`.
pub fn cell_name(overlay: &[Setting]) -> String {
    if overlay.is_empty() {
        return "baseline".into();
    }
    overlay.iter().map(|s| format!("{}={}", s.name(), s.value_text())).collect::<Vec<_>>().join(" ")
}

/// The overlay of a cell as a map, for documents.
pub fn overlay_map(overlay: &[Setting]) -> BTreeMap<String, String> {
    overlay.iter().map(|s| (s.name().to_owned(), s.value_text())).collect()
}

/// Runs the grid (interleaved rounds, as sweep), then re-runs each cell that failed exactly once
/// up to `confirm` times, stopping at its second failure: a single failure is a rumour until
/// confirmed or cleared.
#[derive(Debug)]
pub struct MatrixPlan {
    main: Schedule,
    main_done: bool,
    confirm: u64,
    shard: Option<Shard>,
    failures: Vec<u64>,
    confirmations: Vec<u64>,
    issued_confirmations: Vec<u64>,
    in_flight: u64,
    runs: u64,
}

impl MatrixPlan {
    /// The plan for `cells` x `runs`, confirming single failures up to `confirm` times.
    pub fn new(cells: Vec<CellSpec>, runs: u64, seed: u64, confirm: u64, shard: Option<Shard>) -> Self {
        let n = cells.len();
        Self {
            main: Schedule::new(cells, runs, seed).shard(shard),
            main_done: false,
            confirm,
            shard,
            failures: vec![0; n],
            confirmations: vec![0; n],
            issued_confirmations: vec![0; n],
            in_flight: 0,
            runs,
        }
    }

    /// The id of confirmation `k` (from 0) of cell `cell`: past the grid's ids, distinct per
    /// shard so merged shards never collide.
    fn confirm_id(&self, cell: usize, k: u64) -> u64 {
        let base = self.runs * self.main.cells().len() as u64;
        let (index, count) = self.shard.map_or((0, 1), |s| (u64::from(s.index - 1), u64::from(s.count)));
        base + ((cell as u64 * self.confirm + k) * count + index)
    }
}

impl Plan for MatrixPlan {
    fn cells(&self) -> &[CellSpec] {
        self.main.cells()
    }

    fn next(&mut self) -> Next {
        if !self.main_done {
            match self.main.next() {
                Next::Run(spec) => {
                    self.in_flight += 1;
                    return Next::Run(spec);
                }
                Next::Wait => return Next::Wait,
                Next::Done => self.main_done = true,
            }
        }
        // Confirmation decisions need the grid's final counts.
        if self.in_flight > 0 && self.issued_confirmations.iter().all(|&c| c == 0) {
            return Next::Wait;
        }
        for cell in 0..self.failures.len() {
            let issued = self.issued_confirmations[cell];
            if self.failures[cell] == 1 && issued < self.confirm && issued == self.confirmations[cell] {
                self.issued_confirmations[cell] += 1;
                self.in_flight += 1;
                return Next::Run(AttemptSpec {
                    id: self.confirm_id(cell, issued),
                    cell,
                    iteration: self.runs + issued + 1,
                    phase: Some("confirm".into()),
                    cold: false,
                });
            }
        }
        if self.in_flight > 0 {
            Next::Wait
        } else {
            Next::Done
        }
    }

    fn observe(&mut self, attempt: &Attempt) {
        let Some(cell) = self.main.cells().iter().position(|c| c.name == attempt.cell) else { return };
        self.in_flight = self.in_flight.saturating_sub(1);
        if attempt.outcome.is_failure() {
            self.failures[cell] += 1;
        }
        if attempt.phase.as_deref() == Some("confirm") {
            self.confirmations[cell] += 1;
            self.issued_confirmations[cell] = self.issued_confirmations[cell].max(self.confirmations[cell]);
        } else {
            self.main.observe(attempt);
        }
    }

    fn planned(&self) -> u64 {
        self.main.planned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Effect, Outcome};

    fn dims() -> Vec<Dimension> {
        vec![
            Dimension { name: "LC_ALL".into(), kind: DimensionKind::Env, values: vec!["C.utf8".into(), "C".into()] },
            Dimension {
                name: "nofile".into(),
                kind: DimensionKind::Rlimit,
                values: vec!["1024".into(), "unlimited".into(), "4k".into()],
            },
        ]
    }

    #[test]
    fn grid_is_the_cartesian_product_with_baseline_first() {
        let cells = grid(&dims());
        assert_eq!(cells.len(), 6);
        assert_eq!(cells[0].name, "LC_ALL=C.utf8 nofile=1024");
        assert_eq!(cells[5].name, "LC_ALL=C nofile=4096");
        assert_eq!(cells[1].overlay[1], Setting::Rlimit { name: "nofile".into(), value: None });
    }

    #[test]
    fn limits_parse() {
        assert_eq!(parse_limit("65535"), Ok(Some(65535)));
        assert_eq!(parse_limit("8M"), Ok(Some(8 << 20)));
        assert_eq!(parse_limit("unlimited"), Ok(None));
        assert!(parse_limit("lots").is_err());
    }

    fn attempt(spec: &AttemptSpec, cells: &[CellSpec], fail: bool) -> Attempt {
        Attempt {
            id: spec.id,
            cell: cells[spec.cell].name.clone(),
            iteration: spec.iteration,
            started_at: String::new(),
            seconds: 0.0,
            outcome: if fail { Outcome::Fail } else { Outcome::Pass },
            exit_code: Some(i32::from(fail)),
            signal: None,
            termination: None,
            stdout_tail: String::new(),
            stderr_tail: String::new(),
            stdout_bytes: 0,
            stderr_bytes: 0,
            stdout_hash: None,
            oracle: None,
            leaked: vec![],
            effect: Effect::default(),
            signature: None,
            worker: None,
            level: None,
            phase: spec.phase.clone(),
            log: None,
            load: None,
            hang: None,
            error: None,
            cpu_seconds: None,
            suite: None,
            mode: Default::default(),
            hidden: Vec::new(),
            rerun: None,
        }
    }

    #[test]
    fn single_failures_are_confirmed_until_a_second_failure() {
        let cells = grid(&dims()[..1]);
        let mut plan = MatrixPlan::new(cells.clone(), 3, 1, 5, None);
        let mut confirms = 0;
        loop {
            match plan.next() {
                Next::Run(spec) => {
                    // Cell 1 fails on its first run and on its third confirmation.
                    let fail = spec.cell == 1 && (spec.iteration == 1 || spec.iteration == 3 + 3);
                    if spec.phase.is_some() {
                        confirms += 1;
                        assert_eq!(spec.cell, 1);
                    }
                    let a = attempt(&spec, &cells, fail);
                    plan.observe(&a);
                }
                Next::Wait => panic!("nothing is in flight"),
                Next::Done => break,
            }
        }
        assert_eq!(confirms, 3);
        assert_eq!(plan.failures, vec![0, 2]);
    }

    #[test]
    fn confirmation_waits_for_the_grid_in_flight() {
        let cells = grid(&dims()[..1]);
        let mut plan = MatrixPlan::new(cells.clone(), 1, 1, 5, None);
        let a = match plan.next() {
            Next::Run(s) => s,
            other => panic!("{other:?}"),
        };
        let b = match plan.next() {
            Next::Run(s) => s,
            other => panic!("{other:?}"),
        };
        assert_eq!(plan.next(), Next::Wait);
        plan.observe(&attempt(&a, &cells, true));
        plan.observe(&attempt(&b, &cells, false));
        assert!(matches!(plan.next(), Next::Run(s) if s.phase.as_deref() == Some("confirm")));
    }
}
