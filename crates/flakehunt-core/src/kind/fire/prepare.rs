//! Fire's part of preparing a hunt: the ladder, masks and state checked, its cells and
//! recorded options, and on `--resume` what the record keeps; and the one line for a state
//! that cannot be copied or fingerprinted. The levels themselves run in [`crate::kind::fire`].

use std::path::Path;

use crate::kind::fire::{prepare_resume, reference_cell, FireFailure, FireOptions, Ladder, ParseLadder, Resumed};
use crate::plan::{CellSpec, Settings};
use crate::record::Resumption;
use crate::spec::{FireRequest, HuntError, SettingsRequest};
use crate::state::{validate_source, Normalizer};

/// A new fire hunt's options, compiled masks, cells and plan numbers, checked without touching
/// the disk (but for the state's existence).
pub(crate) struct NewFire {
    pub options: FireOptions,
    pub normalizer: Normalizer,
    pub cells: Vec<CellSpec>,
    pub settings: Settings,
}

/// Checks the options of a new fire hunt, in the order users meet them.
pub(crate) fn new(req: &FireRequest, settings: &SettingsRequest) -> Result<NewFire, HuntError> {
    let ladder = Ladder::parse(&req.ladder).map_err(FireFailure::Ladder)?;
    let normalizer = Normalizer::new(&req.ignore, &req.ignore_columns).map_err(HuntError::Normalizer)?;
    if settings.timeout.is_zero() {
        return Err(HuntError::usage("--timeout must be longer than 0s"));
    }
    let state = match &req.state {
        Some(dir) => {
            validate_source(dir).map_err(HuntError::StateOption)?;
            Some(std::path::absolute(dir).map_err(|e| HuntError::io(format!("--state {}", dir.display()), e))?)
        }
        None => None,
    };
    let options = FireOptions {
        ladder,
        state,
        ignore: req.ignore.clone(),
        ignore_columns: req.ignore_columns.clone(),
        checks: req.checks.clone(),
        trace_tokens: req.trace_tokens,
        all_levels: req.all_levels,
        keep: req.keep,
        follow_outside_links: req.follow_outside_links,
    };
    let levels = &options.ladder.0;
    let mut cells: Vec<CellSpec> = Vec::new();
    for level in levels {
        for name in [reference_cell(level.runs), level.name()] {
            if !cells.iter().any(|c| c.name == name) {
                cells.push(CellSpec { name, profile: None, overlay: Vec::new() });
            }
        }
    }
    let settings = Settings {
        runs: options.planned_runs(levels.len()),
        jobs: levels.iter().map(|l| l.workers).max().unwrap_or(1),
        until_fails: None,
        budget_seconds: None,
        timeout_seconds: settings.timeout.as_secs_f64(),
        // A run its timeout ends did not finish its work under the level's load: fire counts
        // it as a failed run, whichever timeout it was.
        timeout_given: Some(true),
        grace_seconds: settings.grace.as_secs_f64(),
        capture_bytes: settings.capture,
        warm: None,
        checks: crate::checks::Checks::default(),
    };
    Ok(NewFire { options, normalizer, cells, settings })
}

/// Refuses a record directory inside the state, which must stay untouched.
pub(crate) fn check_record_dir(record: &Path, state: Option<&Path>) -> Result<(), HuntError> {
    if let Some(state) = state {
        if is_inside(record, state) {
            return Err(HuntError::usage(format!(
                "the record would be written inside --state {}: give --record DIR outside it (the state must stay untouched)",
                state.display()
            )));
        }
    }
    Ok(())
}

/// What a resumed fire record keeps: its options, compiled masks, and the levels that finished;
/// and what it drops once the resume is accepted.
/// `follow_outside_links` may be added on resume (a state refused for an outside link can then
/// continue); it is never taken away.
pub(crate) fn resume(
    dir: &Path,
    options: Option<FireOptions>,
    follow_outside_links: bool,
) -> Result<(FireOptions, Normalizer, Resumed, Resumption), HuntError> {
    let mut options =
        options.ok_or_else(|| HuntError::Damaged(format!("{}: the manifest holds no fire options", dir.display())))?;
    options.ladder.check().map_err(|e| HuntError::from(FireFailure::DamagedLadder(e)).in_record(dir))?;
    options.follow_outside_links |= follow_outside_links;
    if let Some(state) = &options.state {
        validate_source(state)
            .map_err(|error| HuntError::StateGone { state: state.clone(), error: Box::new(error) })?;
    }
    let normalizer = Normalizer::new(&options.ignore, &options.ignore_columns).map_err(HuntError::Normalizer)?;
    let (resumed, resumption) = prepare_resume(dir, &options)?;
    Ok((options, normalizer, resumed, resumption))
}

/// Whether `path` (which may not exist yet) would lie inside `dir`.
fn is_inside(path: &Path, dir: &Path) -> bool {
    let Ok(path) = std::path::absolute(path) else { return false };
    // Resolve what exists of the path, so a symlinked parent cannot hide where it leads.
    let mut existing = path.as_path();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => break,
        }
    }
    let mut resolved = std::fs::canonicalize(existing).unwrap_or_else(|_| existing.to_owned());
    resolved.extend(rest.iter().rev());
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned());
    resolved.starts_with(dir)
}
