//! A verification of a fire record: the ladder climbed again, up to and including the level it
//! rejected, each level run against a fresh sandbox of the state as it is now and compared with
//! a sequential reference, as fire compares it. A level run (W workers sharing R runs, then the
//! state's fingerprint, tokens and checks) is the attempt: the rejected level runs as many times
//! as its recorded rejection rate needs, the accepted levels below it once each, and each level
//! run is judged as fire judges a level. Main functions: [`conditions`], [`ladder`],
//! [`summarize`].

use std::collections::BTreeSet;

use super::options::{Condition, Role, VerifyOptions};
use super::summary::{conclude, judge, Now, Rate, SeenSignature, Words};
use crate::analysis::{Pass, Summary, Tally};
use crate::kind::fire::{position_key, reference_cell, FireOptions, Ladder, LevelRuns, LevelSummary};
use crate::kind::verify::summary::RateOf;
use crate::plan::CellSpec;
use crate::record::{Attempt, Record, RecordError};

/// Where the rate of a fire record's level comes from.
const SOURCE: &str = "the fire ladder";

/// What a verification of the fire record summarised as `summary`, climbed with `options`,
/// runs: each rejected level, a condition at the rate its level runs were rejected, and the
/// accepted levels below the last of them, baselines climbed once each (a rejection there is
/// the failure still here, at a lower level); the cells of those levels and their references;
/// and the verification's fire options: the record's, its ladder cut after its last rejected
/// level, every level climbed whatever an earlier one came to, no sandbox kept. None when no
/// level was rejected.
pub(super) fn conditions(
    summary: &Summary,
    options: &FireOptions,
) -> Option<(Vec<Condition>, Vec<CellSpec>, FireOptions)> {
    let levels = &summary.fire.as_ref()?.levels;
    let last = levels.iter().filter(|l| l.verdict.is_reject()).map(|l| l.level).max()?;
    let ladder: Vec<_> = options.ladder.0.iter().take(last as usize).copied().collect();
    let mut conditions: Vec<Condition> = Vec::new();
    let mut cells: Vec<CellSpec> = Vec::new();
    for level in &ladder {
        let name = level.name();
        for cell in [reference_cell(level.runs), name.clone()] {
            if !cells.iter().any(|c| c.name == cell) {
                cells.push(CellSpec { name: cell, profile: None, overlay: Vec::new() });
            }
        }
        if conditions.iter().any(|c| c.cell == name) {
            continue;
        }
        let runs: Vec<&LevelSummary> = levels.iter().filter(|l| l.name == name).collect();
        let rejected: Vec<&&LevelSummary> = runs.iter().filter(|l| l.verdict.is_reject()).collect();
        let (attempts, failures) = (runs.len() as u64, rejected.len() as u64);
        let (lo, hi) = crate::analysis::stats::wilson(failures, attempts, crate::analysis::stats::Z95);
        let kinds: BTreeSet<String> = rejected.iter().map(|l| l.verdict.name().to_owned()).collect();
        conditions.push(Condition {
            cell: name,
            role: if failures > 0 { Role::Condition } else { Role::Baseline },
            source: SOURCE.into(),
            attempts,
            failures,
            ci95: [lo, hi],
            needed: None,
            mean_seconds: runs.iter().map(|l| l.seconds).sum::<f64>() / attempts.max(1) as f64,
            signatures: kinds.into_iter().collect(),
            test: None,
            inert_then: None,
            reproducer: Vec::new(),
        });
    }
    let options = FireOptions { ladder: Ladder(ladder), all_levels: true, keep: false, ..options.clone() };
    Some((conditions, cells, options))
}

/// The ladder a verification climbs: each level of `fire`'s, a condition's as many times as
/// `verify` plans, the others once. Its levels repeat, so each level run is told apart by its
/// position on it (the attempts' `level`), not by its cell.
pub fn ladder(fire: &FireOptions, verify: &VerifyOptions) -> FireOptions {
    let mut steps = Vec::new();
    for level in &fire.ladder.0 {
        let condition = verify.conditions.iter().any(|c| c.cell == level.name() && c.role == Role::Condition);
        let times = if condition { verify.attempts } else { 1 };
        steps.extend(std::iter::repeat_n(*level, times as usize));
    }
    FireOptions { ladder: Ladder(steps), all_levels: true, ..fire.clone() }
}

/// The summary of a verification of a fire record: the ladder's (every level run judged as fire
/// judges a level, its runs counted by its position), then per condition its rejections in its
/// level runs now against then, and the verdict.
pub(super) fn summarize(record: &Record, verify: &VerifyOptions, fire: &FireOptions) -> Result<Summary, RecordError> {
    let steps = ladder(fire, verify);
    let mut plan = crate::plan::schedule(&record.manifest);
    let mut by_position = Tally::default();
    let mut observe = |_: &Attempt, judged: &Attempt| {
        if let Some(position) = judged.level.filter(|&p| p > 0) {
            by_position.add(&Attempt { cell: position_key(position), ..judged.clone() });
        }
    };
    let pass = Pass::over(record, &mut plan, |_| true, Some(&mut observe))?;
    let mut summary = crate::kind::fire::summarize_ladder(
        record,
        &steps,
        &record.cells()?,
        &pass.tally,
        LevelRuns::ByPosition(&by_position),
    )?;
    apply(&mut summary, verify);
    pass.checks(record, &mut summary);
    pass.finish(&mut summary);
    Ok(summary)
}

/// Gives the ladder's summary the verification's verdict: per condition, its level runs now
/// against then, a rejection of the same kind as then or a new one.
fn apply(summary: &mut Summary, options: &VerifyOptions) {
    let levels = summary.fire.as_ref().map(|f| f.levels.clone()).unwrap_or_default();
    let seen: BTreeSet<&String> = options.conditions.iter().flat_map(|c| &c.signatures).collect();
    let mut results = Vec::new();
    for c in &options.conditions {
        let runs: Vec<&LevelSummary> = levels.iter().filter(|l| l.name == c.cell).collect();
        if runs.is_empty() {
            continue;
        }
        let rejected: Vec<&&LevelSummary> = runs.iter().filter(|l| l.verdict.is_reject()).collect();
        let kinds: BTreeSet<&str> = rejected.iter().map(|l| l.verdict.name()).collect();
        let signatures = kinds
            .into_iter()
            .map(|k| SeenSignature { signature: k.to_owned(), seen_before: seen.iter().any(|s| s.as_str() == k) })
            .collect();
        let now = Now {
            rate: Rate::of(rejected.len() as u64, runs.len() as u64),
            hung: 0,
            unreported: 0,
            without: None,
            inert: None,
            signatures,
        };
        let mut result = judge(c, now, options.level, Words::LEVEL_RUNS);
        // Say what the first rejection now found, as fire says it of a level.
        if let Some(first) = rejected.first() {
            result.text.push_str(&format!(
                "; first at level run {}: {}{}",
                first.level,
                first.verdict.meaning(),
                crate::kind::fire::headline_text(&first.findings)
            ));
        }
        results.push(result);
    }
    conclude(summary, options, results);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::fire::Level;
    use crate::kind::fire::{Ladder, ParseLadder};

    fn options(ladder: &str) -> FireOptions {
        FireOptions {
            ladder: Ladder::parse(ladder).unwrap(),
            state: None,
            ignore: vec![],
            ignore_columns: vec![],
            checks: vec![],
            trace_tokens: false,
            all_levels: false,
            keep: true,
            follow_outside_links: false,
        }
    }

    fn condition(cell: &str, role: Role) -> Condition {
        Condition {
            cell: cell.into(),
            role,
            source: SOURCE.into(),
            attempts: 1,
            failures: u64::from(role == Role::Condition),
            ci95: [0.0, 1.0],
            needed: None,
            mean_seconds: 1.0,
            signatures: vec![],
            test: None,
            inert_then: None,
            reproducer: Vec::new(),
        }
    }

    #[test]
    fn a_level_rejected_again_says_which_kind_of_rejection_now_and_then() {
        let then = Condition {
            signatures: vec!["reject-silent-corruption".into()],
            needed: Some(20),
            ..condition("8x40", Role::Condition)
        };
        let kind = |k: &str, seen_before| vec![SeenSignature { signature: k.into(), seen_before }];
        let now = |rate, signatures| Now { rate, hung: 0, unreported: 0, without: None, inert: None, signatures };
        let r = judge(&then, now(Rate::of(2, 20), kind("reject-silent-corruption", true)), 0.99, Words::LEVEL_RUNS);
        assert_eq!(r.verdict, "not-fixed");
        assert!(r.text.starts_with("8x40 is still rejected: 10.0% (2/20) now, was 100.0% (1/1)"), "{}", r.text);
        assert!(r.text.ends_with("(the same kind of rejection: reject-silent-corruption)"), "{}", r.text);
        let r = judge(&then, now(Rate::of(1, 20), kind("reject-load", false)), 0.99, Words::LEVEL_RUNS);
        assert!(r.text.ends_with("(a new kind of rejection: reject-load, was reject-silent-corruption)"), "{}", r.text);
        let r = judge(&then, now(Rate::of(0, 20), Vec::new()), 0.99, Words::LEVEL_RUNS);
        assert_eq!(r.verdict, "fixed");
        assert!(r.text.starts_with("rejection rate at 8x40 now < 20.6% at 99 % (0/20 level runs)"), "{}", r.text);
        let r = judge(&then, now(Rate::of(0, 1), Vec::new()), 0.99, Words::LEVEL_RUNS);
        assert_eq!(r.verdict, "inconclusive");
        assert!(r.text.starts_with("no rejection at 8x40 in 1 level run "), "{}", r.text);
    }

    #[test]
    fn the_rejected_level_runs_as_often_as_planned_the_levels_below_it_once() {
        let verify = VerifyOptions {
            record: "r".into(),
            kind: "fire".into(),
            run_id: "r".into(),
            hash: "h".into(),
            level: 0.99,
            conditions: vec![condition("2x4", Role::Baseline), condition("4x8", Role::Condition)],
            attempts: 3,
            command_given: false,
            code: None,
        };
        let steps = ladder(&options("2x4,4x8"), &verify);
        let four_by_eight = Level { workers: 4, runs: 8 };
        assert_eq!(steps.ladder.0, [Level { workers: 2, runs: 4 }, four_by_eight, four_by_eight, four_by_eight]);
        assert!(steps.all_levels, "every level run is evidence, a rejected one too");
        // The references: one per run count, as fire plans them.
        assert_eq!(steps.planned_runs(steps.ladder.0.len()), 4 + 4 + 8 + 3 * 8);
    }
}
