//! What the verified record says reproduced its failure: the cells to run again and the rate
//! each failed at, read through the same analysis `report` uses, so that a verification never
//! trusts a `summary.json` it did not recompute. Main function: [`read`].

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read as _;
use std::path::Path;

use super::attempts;
use super::options::{Condition, Role, VerifyOptions};
use crate::analysis::{CellSummary, Summary};
use crate::kind::adaptive::record::AdaptiveDetails;
use crate::plan::{CellSpec, Setting, Target};
use crate::record::{Kind, Record, RecordError, ATTEMPTS, CELLS};
use crate::spec::HuntError;

/// What a verification of a record runs: its options for the new manifest, the cells, and the
/// verified record itself (its target, plan and oracles are the verification's defaults).
#[derive(Debug)]
pub struct Source {
    /// The options, `command_given` unset.
    pub options: VerifyOptions,
    /// The cells to run, in the options' order.
    pub cells: Vec<CellSpec>,
    /// The verified record.
    pub record: Record,
    /// The command that runs the cells, when it is not the record's (a suite's reproducers: each
    /// cell's is its `{reproducer}` placeholder).
    pub target: Option<Target>,
    /// The record's test binary built again from the code as it is now (its suite's
    /// reproducers already run it).
    pub rebuilt: Option<super::rebuild::Rebuilt>,
    /// A fire record's: the ladder the verification climbs (the record's, cut after its last
    /// rejected level) with the record's state, masks and checks.
    pub fire: Option<crate::kind::fire::FireOptions>,
}

/// The placeholder a suite verification's cells fill with their test's reproducer.
const REPRODUCER: &str = "reproducer";

/// Reads the record in `dir` and decides what verifies a fix of its failure at `level`; its test
/// binary, when it ran one, is built again into `rebuild_into` (none: the user gave the command).
pub fn read(dir: &Path, level: f64, rebuild_into: Option<&Path>) -> Result<Source, HuntError> {
    let record = Record::open(dir)?;
    let kind = record.manifest.kind;
    match kind {
        Kind::Sweep | Kind::Adaptive => {}
        Kind::Matrix if record.manifest.extra.against().is_some() => {
            return Err(HuntError::usage(format!(
                "{} is a matrix --against record: verify re-runs the smallest overlay of a grid matrix, a hunt's arm or a sweep's profiles so far",
                dir.display()
            )))
        }
        Kind::Matrix => {}
        Kind::Suite => {}
        Kind::Verify => {
            return Err(HuntError::usage(format!(
                "{} is a verify record: verify the record it verifies ({}) instead",
                dir.display(),
                record.manifest.extra.verify.as_ref().map_or_else(|| "?".into(), |v| v.record.display().to_string())
            )))
        }
        Kind::Fire => {}
    }
    let summary = crate::kind::summarize(&record)?;
    if kind == Kind::Fire && summary.verdict != "reject" {
        return Err(HuntError::usage(format!(
            "{} rejected no level of its ladder (verdict {}): there is no failure to prove fixed; verify the record of a fire hunt that rejected one",
            dir.display(),
            summary.verdict
        )));
    }
    if kind != Kind::Fire && (summary.failures == 0 || matches!(summary.verdict.as_str(), "not-reproduced" | "rumour"))
    {
        return Err(HuntError::usage(format!(
            "{} reproduced nothing (verdict {}): there is no failure to prove fixed; verify the record of a hunt that reproduced it",
            dir.display(),
            summary.verdict
        )));
    }
    let rebuilt = match rebuild_into {
        Some(into) => super::rebuild::rebuild(&record, into)?,
        None => None,
    };
    let mut signatures = signatures_by_cell(&record)?;
    let (mut suite_cells, mut fire, mut fire_cells) = (None, None, None);
    let mut conditions = match kind {
        Kind::Adaptive => hunt_conditions(&summary),
        Kind::Matrix => matrix_conditions(&summary),
        Kind::Suite => {
            let (conditions, cells, by_test) = suite_conditions(&summary, &record, rebuilt.as_ref())?;
            suite_cells = Some(cells);
            signatures = by_test;
            conditions
        }
        Kind::Fire => {
            let options =
                record.manifest.extra.fire.as_ref().ok_or_else(|| {
                    HuntError::Damaged(format!("{}: the manifest holds no fire options", dir.display()))
                })?;
            let (conditions, cells, options) = super::fire::conditions(&summary, options).ok_or_else(|| {
                HuntError::Damaged(format!("{}: its verdict rejects, but no level of its ladder does", dir.display()))
            })?;
            // A level's failure is the kind of its rejection, which the conditions hold.
            signatures = conditions.iter().map(|c| (c.cell.clone(), c.signatures.iter().cloned().collect())).collect();
            fire_cells = Some(cells);
            fire = Some(options);
            conditions
        }
        _ => sweep_conditions(&summary),
    };
    for c in &mut conditions {
        c.signatures = signatures.get(&c.cell).map(|s| s.iter().cloned().collect()).unwrap_or_default();
        c.needed = match c.role {
            Role::Condition => attempts::rate_to_rule_out(c.failures, c.attempts).map(|p| attempts::needed(p, level)),
            Role::Baseline => None,
        };
    }
    let Some(most) = conditions.iter().filter_map(|c| c.needed).max() else {
        return Err(HuntError::usage(format!(
            "{}: no cell of it failed in the attempts that measure its rate: there is no failure to prove fixed",
            dir.display()
        )));
    };
    crate::bounds::check_runs("the attempts a verification needs", most)?;
    let all = match &suite_cells {
        Some(cells) => cells.clone(),
        None => record.cells()?,
    };
    let cells = match fire_cells {
        Some(cells) => cells,
        None => conditions
            .iter()
            .map(|c| {
                all.iter().find(|s| s.name == c.cell).cloned().ok_or_else(|| {
                    HuntError::Damaged(format!(
                        "{}: its summary names cell {}, which its manifest lacks",
                        dir.display(),
                        c.cell
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    let options = VerifyOptions {
        record: std::path::absolute(dir).map_err(|e| HuntError::io(dir.display().to_string(), e))?,
        kind: kind.name().to_owned(),
        run_id: record.manifest.run_id.clone(),
        hash: content_hash(dir)?,
        level,
        conditions,
        attempts: most,
        command_given: false,
        code: None,
    };
    if let Some(fire) = &fire {
        let steps = super::fire::ladder(fire, &options);
        crate::bounds::check_runs("the runs of a verification's ladder", steps.planned_runs(steps.ladder.0.len()))?;
    }
    // A suite's reproducers run where its runs ran (a Go package's directory).
    let target = suite_cells
        .map(|_| Target { dir: record.manifest.target.dir.clone(), ..Target::shell(format!("{{{REPRODUCER}}}")) });
    Ok(Source { options, cells, record, target, rebuilt, fire })
}

/// A condition from a cell's counts in `summary`.
fn from_cell(c: &CellSummary, role: Role, source: &str) -> Condition {
    Condition {
        cell: c.name.clone(),
        role,
        source: source.to_owned(),
        attempts: c.judged(),
        failures: c.failures,
        ci95: c.ci95,
        needed: None,
        mean_seconds: c.mean_seconds,
        signatures: Vec::new(),
        test: None,
        inert_then: c.inert.then(|| c.inert_reason.clone().unwrap_or_else(|| "no measurable effect".into())),
        reproducer: Vec::new(),
    }
}

/// A sweep's conditions: the cells that bring the failure out, or, where the sweep singled out
/// none (a flaky or deterministic verdict, or profiles that only hide it), every cell that failed
/// whose condition took effect (an inert one's failures are the default's), or failing that,
/// the inert ones, which can then prove nothing (see [`Condition::inert_then`]).
fn sweep_conditions(summary: &Summary) -> Vec<Condition> {
    let amplifying: Vec<&CellSummary> =
        summary.cells.iter().filter(|c| c.sensitive && c.direction.as_deref() == Some("amplifies")).collect();
    let failed = || summary.cells.iter().filter(|c| c.failures > 0);
    let effective: Vec<&CellSummary> = failed().filter(|c| !c.inert).collect();
    let cells: Vec<&CellSummary> = match (amplifying.is_empty(), effective.is_empty()) {
        (false, _) => amplifying,
        (true, false) => effective,
        (true, true) => failed().collect(),
    };
    cells.into_iter().map(|c| from_cell(c, Role::Condition, "the sweep")).collect()
}

/// A matrix's conditions: the cell of each smallest overlay that still reproduces (the
/// overlay's values, every other dimension at its baseline), which the minimisation found
/// reproduced itself.
fn matrix_conditions(summary: &Summary) -> Vec<Condition> {
    let dimensions = summary.dimensions.as_deref().unwrap_or_default();
    let mut out: Vec<Condition> = Vec::new();
    for minimal in summary.cells.iter().filter_map(|c| c.minimal_overlay.as_ref()) {
        let wanted = |d: &crate::kind::matrix::plan::Dimension| {
            minimal.get(&d.name).cloned().or_else(|| d.values.first().cloned()).unwrap_or_default()
        };
        let cell = summary.cells.iter().find(|c| {
            c.overlay.as_ref().is_some_and(|o| dimensions.iter().all(|d| o.get(&d.name) == Some(&wanted(d))))
        });
        if let Some(c) = cell.filter(|c| !out.iter().any(|o| o.cell == c.name)) {
            out.push(from_cell(c, Role::Condition, "the matrix"));
        }
    }
    out
}

/// A suite's conditions: each classified test's reproducer (its polluters then it, it alone, it
/// twice in one process), at the rate its reproducer checks failed, each a cell that runs the
/// reproducer through its `{reproducer}` placeholder; with the cells and the signatures of those
/// checks, by test. A Go or Rust reproducer runs the test binary `rebuilt` from the code as it
/// is now, not the one the suite built before the fix.
#[expect(clippy::type_complexity, reason = "the three parts of one reading of the record")]
fn suite_conditions(
    summary: &Summary,
    record: &Record,
    rebuilt: Option<&super::rebuild::Rebuilt>,
) -> Result<(Vec<Condition>, Vec<CellSpec>, BTreeMap<String, BTreeSet<String>>), HuntError> {
    use crate::kind::suite::record::Role as SuiteRole;
    let Some(suite) = &summary.suite else { return Ok(Default::default()) };
    let mut checks: BTreeMap<String, (u64, u64, BTreeSet<String>)> = BTreeMap::new();
    for attempt in record.attempts()? {
        let attempt = attempt?;
        let Some(t) = attempt.suite.as_ref().filter(|t| t.role == SuiteRole::Reproducer) else { continue };
        let Some(subject) = t.subject.clone() else { continue };
        // Judged as the verification judges its own runs: by the test's own result, when the
        // check's structured output holds one (see [`super::reproducers::judge_by_the_test`]).
        let mut attempt = attempt;
        super::reproducers::judge_by_the_test(&mut attempt, &subject);
        let entry = checks.entry(subject).or_default();
        if attempt.outcome != crate::record::Outcome::Slow {
            entry.0 += 1;
        }
        if attempt.outcome.is_failure() {
            entry.1 += 1;
            entry.2.extend(attempt.signature.clone());
        }
    }
    let (mut conditions, mut cells, mut signatures) = (Vec::new(), Vec::new(), BTreeMap::new());
    for t in suite.tests.iter().filter(|t| !t.reproducer.is_empty()) {
        let Some((attempts, failures, sigs)) = checks.remove(&t.id) else { continue };
        let reproducer = rebuilt.map_or_else(|| t.reproducer.clone(), |r| r.apply(&t.reproducer));
        let (lo, hi) = crate::analysis::stats::wilson(failures, attempts, crate::analysis::stats::Z95);
        conditions.push(Condition {
            cell: t.id.clone(),
            role: Role::Condition,
            source: "the suite's reproducer checks".into(),
            attempts,
            failures,
            ci95: [lo, hi],
            needed: None,
            mean_seconds: summary.cells.first().map_or(0.0, |c| c.mean_seconds),
            signatures: Vec::new(),
            test: Some(t.id.clone()),
            inert_then: None,
            reproducer: reproducer.clone(),
        });
        // The reproducer as a placeholder too, so that the manifest shows what each cell runs.
        cells.push(CellSpec {
            name: t.id.clone(),
            profile: None,
            overlay: vec![Setting::Placeholder {
                name: REPRODUCER.into(),
                value: crate::plan::shell_words(&reproducer),
            }],
        });
        signatures.insert(t.id.clone(), sigs);
    }
    conditions_under_profiles(summary, suite, record, &mut conditions, &mut cells, &mut signatures)?;
    Ok((conditions, cells, signatures))
}

/// A `condition-sensitive` test has no reproducer: it failed more in the suite's shuffled
/// attempts under one profile than under the baseline. Its verification runs the same: shuffled
/// attempts of the whole suite under that profile (the cell as the suite had it), each judged by
/// the test's own result, at the rate the suite's attempts of that cell had it fail, so that the
/// rate ruled out was measured the way it is checked. One cell per test, named
/// `TEST under PROFILE`, with the signatures the test's failures had there.
fn conditions_under_profiles(
    summary: &Summary,
    suite: &crate::schema::suite::SuiteSummary,
    record: &Record,
    conditions: &mut Vec<Condition>,
    cells: &mut Vec<CellSpec>,
    signatures: &mut BTreeMap<String, BTreeSet<String>>,
) -> Result<(), HuntError> {
    use crate::kind::suite::record::Role as SuiteRole;
    use crate::schema::suite::Category;
    let sensitive: Vec<(&crate::schema::suite::TestSummary, &String)> = suite
        .tests
        .iter()
        .filter(|t| t.category == Category::ConditionSensitive && t.reproducer.is_empty())
        .filter_map(|t| Some((t, t.condition.as_ref()?)))
        .collect();
    if sensitive.is_empty() {
        return Ok(());
    }
    let record_cells = record.cells()?;
    let mut failed_under: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for attempt in record.attempts()? {
        let attempt = attempt?;
        if attempt.suite.as_ref().is_none_or(|t| t.role != SuiteRole::Shuffled) {
            continue;
        }
        for (t, profile) in sensitive.iter().filter(|(_, p)| **p == attempt.cell) {
            let mut judged = attempt.clone();
            super::reproducers::judge_by_the_test(&mut judged, &t.id);
            if judged.outcome.is_failure() && super::summary::reported(&judged, &t.id) {
                let key = (t.id.clone(), (*profile).clone());
                failed_under.entry(key).or_default().extend(judged.signature);
            }
        }
    }
    for (t, profile) in sensitive {
        let (Some(counts), Some(spec)) =
            (t.conditions.iter().find(|c| &c.name == profile), record_cells.iter().find(|c| &c.name == profile))
        else {
            continue;
        };
        let name = under_profile(&t.id, profile);
        let (lo, hi) = crate::analysis::stats::wilson(counts.failures, counts.runs, crate::analysis::stats::Z95);
        let cell = summary.cell(profile);
        conditions.push(Condition {
            cell: name.clone(),
            role: Role::Condition,
            source: format!("the suite's shuffled attempts under {profile}"),
            attempts: counts.runs,
            failures: counts.failures,
            ci95: [lo, hi],
            needed: None,
            mean_seconds: cell.map_or(0.0, |c| c.mean_seconds),
            signatures: Vec::new(),
            test: Some(t.id.clone()),
            inert_then: cell
                .filter(|c| c.inert)
                .map(|c| c.inert_reason.clone().unwrap_or_else(|| "no measurable effect".into())),
            reproducer: Vec::new(),
        });
        cells.push(CellSpec { name: name.clone(), ..spec.clone() });
        signatures.insert(name, failed_under.remove(&(t.id.clone(), profile.clone())).unwrap_or_default());
    }
    Ok(())
}

/// The cell of a verification that runs the suite under `profile` for `test`.
fn under_profile(test: &str, profile: &str) -> String {
    format!("{test} under {profile}")
}

/// A hunt's conditions: its reproducing arm, at its level, alternating with the baseline, at the
/// rates its confirmation measured (exploration ran the arm because it failed, so its own
/// counts overstate the rate); without a confirmation, every attempt of the cell.
fn hunt_conditions(summary: &Summary) -> Vec<Condition> {
    let base = summary.cells.first();
    let arm = summary
        .adaptive
        .as_ref()
        .and_then(|a| a.reproduction.as_ref())
        .and_then(|r| summary.cell(&r.cell))
        .or_else(|| summary.cells.iter().filter(|c| c.failures > 0).max_by(|a, b| a.rate.total_cmp(&b.rate)));
    let (Some(base), Some(arm)) = (base, arm) else { return Vec::new() };
    let role = |failures: u64| if failures > 0 { Role::Condition } else { Role::Baseline };
    let confirmation = AdaptiveDetails::of(summary).map(|d| d.confirmation).filter(|c| c.cell_attempts > 0);
    if arm.name == base.name {
        return vec![from_cell(base, Role::Condition, "the hunt")];
    }
    let Some(c) = confirmation else {
        return vec![from_cell(base, role(base.failures), "the hunt"), from_cell(arm, Role::Condition, "the hunt")];
    };
    let counted = |cell: &CellSummary, attempts: u64, failures: u64| {
        let (lo, hi) = crate::analysis::stats::wilson(failures, attempts, crate::analysis::stats::Z95);
        Condition { attempts, failures, ci95: [lo, hi], ..from_cell(cell, role(failures), "the hunt's confirmation") }
    };
    vec![counted(base, c.base_attempts, c.base_failures), counted(arm, c.cell_attempts, c.cell_failures)]
}

/// The failure signatures of each cell's attempts.
fn signatures_by_cell(record: &Record) -> Result<BTreeMap<String, BTreeSet<String>>, RecordError> {
    let mut by_cell: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for attempt in record.attempts()? {
        let attempt = attempt?;
        if let (true, Some(sig)) = (attempt.outcome.is_failure(), attempt.signature) {
            by_cell.entry(attempt.cell).or_default().insert(sig);
        }
    }
    Ok(by_cell)
}

/// The record's content hash: BLAKE3 over its manifest, its added cells and its attempts (each
/// file's name and length first), `blake3:HEX`. What the summary recomputes from; the snapshot
/// and the summary document are left out, as `report` rewrites neither.
pub fn content_hash(dir: &Path) -> Result<String, HuntError> {
    let mut hasher = blake3::Hasher::new();
    for name in ["manifest.json", CELLS, ATTEMPTS] {
        let path = dir.join(name);
        let mut bytes = Vec::new();
        match std::fs::File::open(&path) {
            Ok(mut f) => {
                f.read_to_end(&mut bytes).map_err(|e| HuntError::io(format!("cannot read {}", path.display()), e))?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(HuntError::io(format!("cannot read {}", path.display()), e)),
        }
        hasher.update(name.as_bytes());
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    Ok(format!("blake3:{}", hasher.finalize().to_hex()))
}
