//! What a new hunt is made of before its record exists, from the options as given: its
//! settings and oracles checked, its cells (its kind's), its warm plan, its seed and where its
//! record goes. Shared by the driver's run and its Slurm job.

use std::path::PathBuf;

use crate::events::{Event, EventSink};
use crate::oracle::{OracleSpec, OracleSpecOf};
use crate::plan::{self, CellSpec, Settings, Target};
use crate::record::{Extra, Kind};
use crate::spec::{HuntError, HuntSpec};

/// The cells of a new hunt and what its manifest records about them: its kind's
/// ([`crate::kind::Hunt::cells`]).
pub(super) fn cells_of(
    spec: &HuntSpec,
    target: &Target,
    sink: &mut dyn EventSink,
) -> Result<(Vec<CellSpec>, Extra), HuntError> {
    crate::kind::of(spec.kind.record_kind()).cells(spec, target, sink)
}

/// The warm plan of a new hunt of `target` (see [`crate::warm::plan`]); why `--warm` cannot
/// serve the target is said to `sink`.
pub(super) fn warm_plan(
    spec: &HuntSpec,
    target: &Target,
    sink: &mut dyn EventSink,
) -> Result<Option<plan::WarmPlan>, HuntError> {
    let (warm, why_cold) =
        crate::warm::plan(spec.settings.warm, spec.kind.warm_by_default(), target, &spec.config.warm);
    if let Some(why) = why_cold {
        sink.event(&Event::RunsCold(&why))?;
    }
    Ok(warm)
}

/// Settings from the shared options, checked.
pub(super) fn settings_of(spec: &HuntSpec) -> Result<Settings, HuntError> {
    let s = &spec.settings;
    if s.runs == 0 {
        return Err(HuntError::usage("--runs must be at least 1"));
    }
    if s.jobs == 0 {
        return Err(HuntError::usage("--jobs must be at least 1"));
    }
    crate::bounds::check_runs("--runs", s.runs)?;
    crate::bounds::Machine::get().check_workers("--jobs", u64::from(s.jobs))?;
    if s.until_fails == Some(0) {
        return Err(HuntError::usage("--until-fails must be at least 1"));
    }
    if s.timeout.is_zero() {
        return Err(HuntError::usage("--timeout must be longer than 0s"));
    }
    Ok(Settings {
        runs: s.runs,
        jobs: s.jobs,
        until_fails: s.until_fails,
        budget_seconds: s.budget.map(|d| d.as_secs_f64()),
        timeout_seconds: s.timeout.as_secs_f64(),
        timeout_given: Some(s.timeout_given),
        grace_seconds: s.grace.as_secs_f64(),
        capture_bytes: s.capture,
        warm: None,
        checks: crate::checks::Checks::default(),
    })
}

/// The oracles the options ask for, checked; none when only the exit status judges.
pub(super) fn oracle_of(spec: &HuntSpec) -> Result<Option<OracleSpec>, HuntError> {
    let o = &spec.oracle;
    if !o.ignore.is_empty() && o.expect_stdout.is_none() && !o.majority {
        return Err(HuntError::usage(
            "--ignore masks stdout for --expect-stdout or --oracle majority: give one of them",
        ));
    }
    let oracle = OracleSpec::new(
        o.fail_if.clone(),
        o.pass_if.clone(),
        o.expect_stdout.as_deref(),
        o.ignore.clone(),
        o.majority,
    )?;
    Ok((!oracle.is_empty()).then_some(oracle))
}

/// `.flakehunt/runs/KIND-STAMP`, where a record goes without `--record`.
pub fn default_record_dir(kind: Kind) -> PathBuf {
    let base =
        PathBuf::from(".flakehunt/runs").join(format!("{}-{}", kind.name(), stamp(std::time::SystemTime::now())));
    crate::record::unused_dir(&base)
}

/// A UTC time to the second without separators (`20240105T103000`).
pub(super) fn stamp(time: std::time::SystemTime) -> String {
    humantime::format_rfc3339_seconds(time).to_string().replace([':', '-'], "").trim_end_matches('Z').to_owned()
}
