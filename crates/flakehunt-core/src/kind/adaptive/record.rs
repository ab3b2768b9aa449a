//! What an adaptive hunt keeps in its record and adds to its summary: the plan's options in the
//! manifest (so `--resume`, `report` and `merge` rebuild the same plan), the runtime and the
//! runner's width a new hunt is prepared with, and the summary's `reproduction` and typed
//! details. Main functions: [`options_of`], [`prepare`], [`AdaptiveSummary`].

use std::path::Path;

use super::bandit::{runner_jobs, BanditOptions, BanditPlan};
use super::calibration::RuntimeKind;
use super::reproduction::Finding;
use crate::analysis::Summary;
use crate::kind::adaptive::calibration::RuntimeOfExecutable;
use crate::kind::adaptive::reproduction::{AdaptiveTally, ConfirmCounts, ConfirmTest, Reproduction};
use crate::plan::{Plan, Target};
use crate::record::{Attempt, Manifest};
pub use crate::schema::adaptive::{AdaptiveDetails, AdaptivePart, Retired, Stretch, TIMELINE_MAX};

/// The options a hunt's manifest holds (defaults for a record without them).
pub fn options_of(manifest: &Manifest) -> BanditOptions {
    manifest.extra.bandit.clone().unwrap_or_else(|| BanditOptions { patient: false, ..BanditOptions::default() })
}

/// The adaptive plan a hunt's manifest describes. A shard (`--shard I/N`) is a hunt of its
/// own: its decisions are seeded apart from the other shards', and its attempt ids are
/// `I-1, I-1+N, ...`, so `flakehunt merge` joins shards without two attempts sharing an id.
pub fn plan_of(manifest: &Manifest) -> ShardedPlan {
    let mut options = options_of(manifest);
    options.warm = manifest.plan.warm.is_some();
    let (index, count) = manifest.shard.map_or((1, 1), |s| (u64::from(s.index), u64::from(s.count).max(1)));
    if count > 1 {
        options.seed ^= index.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    ShardedPlan { inner: BanditPlan::new(options), offset: index.saturating_sub(1), count }
}

/// A [`BanditPlan`] whose attempt ids are spread for its shard (see [`plan_of`]).
#[derive(Debug)]
pub struct ShardedPlan {
    inner: BanditPlan,
    offset: u64,
    count: u64,
}

impl ShardedPlan {
    /// The bandit plan itself.
    pub fn bandit(&self) -> &BanditPlan {
        &self.inner
    }

    /// See [`BanditPlan::settle`].
    pub fn settle(&mut self) {
        self.inner.settle();
    }

    /// Whether the attempts observed already reach the hunt's end once all of them are folded
    /// in ([`Self::settle`], which this does): a hunt ended by its budget (or killed) after the
    /// attempt that met its stop rule, but before the attempts it chose before it could know
    /// had run, has its answer, and nothing is missing from it.
    pub fn settled(&mut self) -> bool {
        self.inner.settle();
        *self.inner.stage() == super::Stage::Done
    }
}

impl Plan for ShardedPlan {
    fn cells(&self) -> &[crate::plan::CellSpec] {
        self.inner.cells()
    }

    fn next(&mut self) -> crate::plan::Next {
        match self.inner.next() {
            crate::plan::Next::Run(mut spec) => {
                spec.id = spec.id * self.count + self.offset;
                crate::plan::Next::Run(spec)
            }
            other => other,
        }
    }

    fn observe(&mut self, attempt: &Attempt) {
        if self.count == 1 {
            return self.inner.observe(attempt);
        }
        // Another shard's attempt (a merged record replayed by one shard's plan) is not this
        // hunt's.
        if attempt.id % self.count != self.offset {
            return;
        }
        let mut own = attempt.clone();
        own.id /= self.count;
        self.inner.observe(&own);
    }

    fn planned(&self) -> u64 {
        self.inner.planned()
    }

    fn limits(&self, cell: usize) -> crate::plan::AttemptLimits {
        self.inner.limits(cell)
    }

    fn settled(&mut self) -> bool {
        ShardedPlan::settled(self)
    }
}

/// How a test runner the hunt builds for runs the target, when one does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestRunner {
    /// `--go-test`.
    Go,
    /// `--pytest`.
    Pytest,
    /// `--cargo-test`.
    Cargo,
}

/// What runs `target`: the adapter's runtime, Python by the command's words, else what the
/// PATH-resolved program's first bytes say (an ELF built by Go, a static one, a script).
pub fn runtime_of(target: &Target, adapter: Option<TestRunner>) -> RuntimeKind {
    match adapter {
        Some(TestRunner::Go) => return RuntimeKind::Go,
        Some(TestRunner::Pytest) => return RuntimeKind::Python,
        Some(TestRunner::Cargo) => return RuntimeKind::Native,
        None => {}
    }
    if target.looks_like_python() {
        return RuntimeKind::Python;
    }
    let program = target.program();
    let path = if program.contains('/') {
        Some(target.dir.as_deref().map_or_else(|| Path::new(program).to_path_buf(), |d| d.join(program)))
    } else {
        std::env::var_os("PATH")
            .and_then(|paths| std::env::split_paths(&paths).map(|d| d.join(program)).find(|p| p.is_file()))
    };
    // The head is enough: an ELF's build notes and a script's `#!` line come first; a Go
    // binary's build id note is within the first pages.
    let head = path.and_then(|p| read_head(&p, 1 << 20)).unwrap_or_default();
    RuntimeKind::of_executable(&head)
}

fn read_head(path: &Path, max: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path).ok()?.take(max).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// The options of a new hunt of `target` on this machine: its seed, the CPUs, the runtime, the
/// oracle, and the user's `--timeout` when given (the hang rule then does not apply).
pub fn prepare(
    target: &Target,
    adapter: Option<TestRunner>,
    seed: u64,
    majority: bool,
    timeout: Option<std::time::Duration>,
) -> BanditOptions {
    BanditOptions {
        seed,
        cpus: cpus(),
        runtime: runtime_of(target, adapter),
        majority,
        timeout,
        ..BanditOptions::default()
    }
}

/// CPUs this process may run on.
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// The budget of a hunt not given `--budget`.
pub const DEFAULT_BUDGET: std::time::Duration = std::time::Duration::from_secs(600);

/// The baseline cell every hunt starts with (the plan adds the arms' cells once calibrated).
pub fn baseline_cell() -> crate::plan::CellSpec {
    crate::plan::CellSpec::for_profile(crate::profile::Profile::default_profile())
}

/// Feeds a hunt's judged attempts to what its summary needs. The plan folds attempts in id
/// order, whatever order they ended (and were recorded) in, so the tally does too: the
/// reproduction it names is the arm the plan confirmed.
#[derive(Debug)]
pub struct AdaptiveSummary {
    tally: AdaptiveTally,
    plan: ShardedPlan,
    started: Option<f64>,
    timeline: Vec<Stretch>,
    /// Judged attempts not yet tallied, by id: attempts end at most a runner's width out of
    /// order, so holding a few times that puts them back in id order.
    pending: std::collections::BTreeMap<u64, Attempt>,
    reorder: usize,
}

impl AdaptiveSummary {
    /// For the hunt `manifest` describes.
    pub fn new(manifest: &Manifest) -> Self {
        Self {
            tally: AdaptiveTally::new(&manifest.started_at),
            plan: plan_of(manifest),
            started: crate::analysis::tally::unix_seconds(&manifest.started_at),
            timeline: Vec::new(),
            pending: std::collections::BTreeMap::new(),
            reorder: 4 * runner_jobs(options_of(manifest).cpus) as usize,
        }
    }

    /// One attempt as recorded (`observe`, which judges by its own running majority) and as
    /// judged by the analysis (`judged`, for the tally).
    pub fn add(&mut self, recorded: &Attempt, judged: &Attempt) {
        self.plan.observe(recorded);
        self.pending.insert(judged.id, judged.clone());
        while self.pending.len() > self.reorder {
            if let Some((_, a)) = self.pending.pop_first() {
                self.tally.add(&a);
            }
        }
        let from = match (self.started, crate::analysis::tally::unix_seconds(&judged.started_at)) {
            (Some(start), Some(began)) => (began - start).max(0.0),
            _ => self.timeline.last().map_or(0.0, |s| s.to),
        };
        let to = from + judged.seconds;
        let failed = u64::from(judged.outcome.is_failure());
        // Copies of one arm overlap and end in any order: one stretch while cell and phase hold.
        let full = self.timeline.len() >= TIMELINE_MAX;
        match self.timeline.last_mut() {
            Some(s) if s.cell == judged.cell && s.phase == judged.phase => {
                s.from = s.from.min(from);
                s.to = s.to.max(to);
                s.attempts += 1;
                s.failures += failed;
            }
            _ if full => {}
            _ => self.timeline.push(Stretch {
                cell: judged.cell.clone(),
                phase: judged.phase.clone(),
                from,
                to,
                attempts: 1,
                failures: failed,
            }),
        }
    }

    /// Completes `summary`: `reproduction`, `details`, and whether the hunt is complete.
    pub fn apply(mut self, summary: &mut Summary) {
        let done = self.settle();
        self.render(summary, done, Vec::new());
    }

    /// Tallies what is left and folds every attempt into the plan; whether the hunt is done. Its
    /// confirmation counts are then the plan's, which stopped at its stop rule (attempts chosen
    /// before the stop was known are not counted), whenever it has one for the reproducing
    /// cell: done or cut short, the counts are the same function of the attempts, so running the
    /// attempts a cut-short hunt had chosen changes none of them.
    fn settle(&mut self) -> bool {
        for (_, a) in std::mem::take(&mut self.pending) {
            self.tally.add(&a);
        }
        let next_is_done = self.plan.next() == crate::plan::Next::Done;
        // The attempts the plan had not folded when it stopped (or the record ends): for the
        // arms their last attempts retired; they may also meet its stop rule.
        let done = self.plan.settled() || next_is_done;
        let plan = self.plan.bandit();
        let same_arm = |c: &&crate::kind::adaptive::Confirmation| {
            self.tally.reproduction().is_some_and(|r| plan.cells().get(c.arm).is_some_and(|cell| cell.name == r.cell))
        };
        if let Some(c) = plan.confirmation().filter(same_arm).copied() {
            self.tally.set_confirmation(ConfirmCounts {
                cell_attempts: c.arm_attempts,
                cell_failures: c.arm_failures,
                base_attempts: c.base_attempts,
                base_failures: c.base_failures,
            });
        }
        done
    }

    /// Writes the tally into `summary`, with `notes` of its own.
    fn render(self, summary: &mut Summary, done: bool, notes: Vec<String>) {
        summary.notes.extend(notes);
        summary.complete = done;
        summary.adaptive = Some(AdaptivePart { reproduction: self.tally.reproduction().cloned() });
        let c = self.tally.confirmation();
        let inert =
            self.tally.reproduction().and_then(|r| summary.cell(&r.cell)).and_then(|cell| cell.inert_reason.clone());
        let conclusion = super::conclusion::conclusion(&self.tally, !done, inert.as_deref());
        apply_finding(summary, &self.tally, inert.is_some());
        let details = AdaptiveDetails {
            conclusion,
            calibration: self.plan.bandit().calibration().cloned(),
            skipped: self.plan.bandit().skipped().to_vec(),
            retired: self
                .plan
                .bandit()
                .retired()
                .into_iter()
                .map(|(cell, reason)| Retired { cell: cell.to_owned(), reason: reason.to_owned() })
                .collect(),
            tried: self.tally.tried().to_vec(),
            confirmation: c,
            p_value: (c.cell_attempts > 0 && c.base_attempts > 0).then(|| c.p_value()),
            stopped_early: !done,
            timeline: self.timeline,
        };
        summary.details = crate::analysis::Details::Adaptive(Box::new(details));
    }

    /// The reproduction so far.
    pub fn reproduction(&self) -> Option<&Reproduction> {
        self.tally.reproduction()
    }
}

/// The summary of a hunt record: the hunt's, or for a record merged from shards, each shard's
/// on its own attempts, then joined ([`AdaptiveTally::join`]). Each shard is a hunt of its own,
/// seeded apart: read as one hunt, their interleaved attempts would show a cell failing twice
/// that failed once in each of two hunts, and a confirmation no shard ran.
#[derive(Debug)]
pub struct HuntSummary {
    /// Each part's attempts' id residue (modulo `count`), and its summary.
    parts: Vec<(u64, AdaptiveSummary)>,
    count: u64,
}

impl HuntSummary {
    /// For the hunt `manifest` describes; `shards`: those a merged record was merged from.
    pub fn new(manifest: &Manifest, shards: Option<&[crate::plan::Shard]>) -> Self {
        let merged = shards.filter(|s| !s.is_empty() && manifest.shard.is_none());
        let Some(shards) = merged else {
            return Self { parts: vec![(0, AdaptiveSummary::new(manifest))], count: 1 };
        };
        let parts = shards
            .iter()
            .map(|s| {
                let mut shard = manifest.clone();
                shard.shard = Some(*s);
                (u64::from(s.index.saturating_sub(1)), AdaptiveSummary::new(&shard))
            })
            .collect();
        Self { parts, count: u64::from(shards[0].count.max(1)) }
    }

    /// See [`AdaptiveSummary::add`]: to the shard whose attempt it is.
    pub fn add(&mut self, recorded: &Attempt, judged: &Attempt) {
        let residue = recorded.id % self.count;
        if let Some((_, part)) = self.parts.iter_mut().find(|(r, _)| *r == residue) {
            part.add(recorded, judged);
        }
    }

    /// Completes `summary` (see [`AdaptiveSummary::apply`]): a merged record's from its
    /// shards' tallies joined, complete when every shard is, its details (calibration, skipped
    /// and retired arms) the first shard's, its timeline every shard's.
    pub fn apply(mut self, summary: &mut Summary) {
        if self.parts.len() == 1 {
            if let Some((_, part)) = self.parts.pop() {
                part.apply(summary);
            }
            return;
        }
        let total = self.parts.len();
        let mut done = true;
        let mut tallies = Vec::new();
        let mut timeline = Vec::new();
        let mut lead = None;
        for (_, mut part) in self.parts {
            done &= part.settle();
            tallies.push(std::mem::take(&mut part.tally));
            timeline.append(&mut part.timeline);
            lead.get_or_insert(part);
        }
        let Some(mut lead) = lead else { return };
        let (tally, others) = AdaptiveTally::join(tallies);
        let lead_cell = tally.reproduction().map(|r| r.cell.clone()).unwrap_or_default();
        let notes = others
            .into_iter()
            .map(|(cell, n)| {
                format!(
                    "{n} of the {total} shards reproduced under {cell} instead: each shard is a hunt of its own, \
                     and {lead_cell}'s confirmation, pooled over the shards that reproduced under it, is the stronger"
                )
            })
            .collect();
        timeline.sort_by(|a: &Stretch, b: &Stretch| a.from.total_cmp(&b.from));
        timeline.truncate(TIMELINE_MAX);
        lead.tally = tally;
        lead.timeline = timeline;
        lead.render(summary, done, notes);
    }
}

/// A hunt's verdict is its confirmation's, not a sweep's comparison of every cell with the
/// baseline: exploration ran each arm because of what it had shown, so its counts are no test.
/// Only the arm confirmation singled out is `sensitive`; a hunt in which nothing the target gives
/// by itself was seen is `not-reproduced` (exit 0), whatever failed once or twice on the way.
fn apply_finding(summary: &mut Summary, tally: &AdaptiveTally, inert: bool) {
    let finding = tally.finding(super::conclusion::ALPHA, inert);
    let condition = tally.reproduction().map(|r| r.cell.clone()).filter(|_| finding == Finding::ConditionSensitive);
    for cell in &mut summary.cells {
        let confirmed = condition.as_deref() == Some(cell.name.as_str());
        if confirmed {
            cell.direction = Some("amplifies".into());
            cell.meaning = crate::analysis::summary::meaning_of(&cell.name, "amplifies");
        } else {
            (cell.direction, cell.meaning) = (None, None);
        }
        cell.sensitive = confirmed;
    }
    let c = tally.confirmation();
    let (verdict, text) = match (finding, tally.reproduction()) {
        (Finding::ConditionSensitive, _) => {
            let cell = condition.unwrap_or_default();
            let counts = format!("{}/{} vs {}/{}", c.cell_failures, c.cell_attempts, c.base_failures, c.base_attempts);
            (
                "condition-sensitive",
                format!("condition-sensitive ({cell}): {cell} amplifies the failure (confirmation: {counts})"),
            )
        }
        // Every attempt of every cell failed: the sweep's word for it stands.
        (Finding::Flaky, _) if summary.verdict == "deterministic" => ("deterministic", summary.verdict_text.clone()),
        (Finding::Flaky, Some(r)) if r.cell == super::reproduction::BASELINE => {
            ("flaky-insensitive", "flaky: the plain target fails, no condition needed".to_owned())
        }
        (Finding::Flaky, Some(r)) if tally.seen_under_baseline() => (
            "flaky-insensitive",
            format!(
                "flaky: the failure seen under {0} appears under the baseline too, so it does not depend on {0}",
                r.cell
            ),
        ),
        (Finding::Flaky, r) => (
            "flaky-insensitive",
            format!(
                "flaky: {} failed again in confirmation, but confirmation did not show that the failure depends on it",
                r.map_or("the arm", |r| r.cell.as_str())
            ),
        ),
        (Finding::NotReproduced, Some(r)) => (
            "not-reproduced",
            format!(
                "not reproduced: what failed twice under {} did not fail again in confirmation nor under the baseline",
                r.cell
            ),
        ),
        (Finding::NotReproduced, None) => {
            ("not-reproduced", format!("not reproduced in {} attempts", summary.attempts))
        }
    };
    summary.verdict = verdict.into();
    summary.verdict_text = text;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::summary::SummaryOf;
    use crate::plan::Next;

    #[test]
    fn the_runtime_comes_from_the_adapter_the_command_or_the_program() {
        let sh = Target::argv(vec!["sh".into(), "-c".into(), "true".into()]);
        assert_eq!(runtime_of(&sh, Some(TestRunner::Go)), RuntimeKind::Go);
        assert_eq!(runtime_of(&sh, Some(TestRunner::Pytest)), RuntimeKind::Python);
        assert_eq!(runtime_of(&sh, Some(TestRunner::Cargo)), RuntimeKind::Native);
        let py = Target::argv(vec!["python3".into(), "t.py".into()]);
        assert_eq!(runtime_of(&py, None), RuntimeKind::Python);
        // sh, found on PATH and read: an ELF, not Python, not unknown.
        let kind = runtime_of(&sh, None);
        assert!(matches!(kind, RuntimeKind::Native | RuntimeKind::Static), "{kind:?}");
        let missing = Target::argv(vec!["/nonexistent/flakehunt-test".into()]);
        assert_eq!(runtime_of(&missing, None), RuntimeKind::of_executable(&[]));
    }

    fn manifest(shard: Option<crate::plan::Shard>) -> Manifest {
        let mut m: Manifest = serde_json::from_value(serde_json::json!({
            "format_version": 1, "tool_version": "t", "kind": "hunt", "run_id": "r",
            "target": Target::argv(vec!["true".into()]), "plan": crate::plan::Settings::default(),
            "cells": [baseline_cell()], "seed": 1, "host": "h", "started_at": "2026-12-01T12:00:00.000Z",
            "shard": null, "oracle": null, "extra": {"bandit": {"seed": 9, "cpus": 2}},
            "redacted": false, "withheld": false,
        }))
        .unwrap();
        m.shard = shard;
        m
    }

    /// The verdict and its words for a hunt whose attempts are `attempts`, `inert` saying whether
    /// the reproducing arm's mechanism took no effect.
    fn verdict_of(attempts: &[Attempt], inert: bool) -> (String, String) {
        use crate::kind::adaptive::reproduction::tests::START;
        let m = manifest(None);
        let mut summary = Summary::build(&m, &m.cells, &crate::analysis::Tally::default(), 0);
        let mut tally = AdaptiveTally::new(START);
        attempts.iter().for_each(|a| tally.add(a));
        apply_finding(&mut summary, &tally, inert);
        (summary.verdict, summary.verdict_text)
    }

    #[test]
    fn a_hunts_verdict_is_flaky_only_where_the_failure_appeared_again_and_never_an_inert_condition() {
        use crate::kind::adaptive::reproduction::tests::attempt;
        // `jitter` fails twice in exploration; then ten confirmation pairs, the arm failing when
        // `arm_fails(i)`, the baseline when `base_fails(i)`.
        let hunt = |arm_fails: &dyn Fn(u64) -> bool, base_fails: &dyn Fn(u64) -> bool| {
            let mut v = vec![
                attempt(0, "default", 0.0, 0.1, false, Some("calibrate")),
                attempt(1, "jitter", 0.1, 0.1, true, None),
                attempt(2, "jitter", 0.2, 0.1, true, None),
            ];
            for i in 0..10 {
                v.push(attempt(3 + 2 * i, "jitter", 1.0 + i as f64, 0.1, arm_fails(i), Some("confirm")));
                v.push(attempt(4 + 2 * i, "default", 1.5 + i as f64, 0.1, base_fails(i), Some("confirm")));
            }
            v
        };
        let (verdict, text) = verdict_of(&hunt(&|_| false, &|_| false), false);
        assert_eq!(verdict, "not-reproduced");
        assert_eq!(
            text,
            "not reproduced: what failed twice under jitter did not fail again in confirmation nor under the baseline"
        );
        let (verdict, text) = verdict_of(&hunt(&|i| i == 4, &|_| false), false);
        assert_eq!(verdict, "flaky-insensitive");
        assert_eq!(
            text,
            "flaky: jitter failed again in confirmation, but confirmation did not show that the failure depends on it"
        );
        let (verdict, text) = verdict_of(&hunt(&|_| false, &|i| i == 7), false);
        assert_eq!(verdict, "flaky-insensitive");
        assert_eq!(
            text,
            "flaky: the failure seen under jitter appears under the baseline too, so it does not depend on jitter"
        );
        // Confirmation singles the arm out (10/10 against 0/10), but its mechanism took no effect.
        let (verdict, _) = verdict_of(&hunt(&|_| true, &|_| false), false);
        assert_eq!(verdict, "condition-sensitive");
        let (verdict, text) = verdict_of(&hunt(&|_| true, &|_| false), true);
        assert_eq!(verdict, "flaky-insensitive");
        assert!(text.starts_with("flaky: jitter failed again in confirmation"), "{text}");
    }

    #[test]
    fn a_shards_attempt_ids_are_its_residue_and_replay_maps_them_back() {
        let shard = crate::plan::Shard { index: 2, count: 3 };
        let mut plan = plan_of(&manifest(Some(shard)));
        let Next::Run(first) = plan.next() else { panic!("calibration first") };
        assert_eq!(first.id, 1);
        let attempt: Attempt = serde_json::from_value(serde_json::json!({
            "id": first.id, "cell": "default", "iteration": first.iteration, "started_at": "", "seconds": 0.1,
            "outcome": "pass", "exit_code": 0, "signal": null, "stdout_tail": "", "stderr_tail": "", "phase": "calibrate",
        }))
        .unwrap();
        plan.observe(&attempt);
        let Next::Run(second) = plan.next() else { panic!("more calibration") };
        assert_eq!(second.id, 4);
        // Unsharded: ids as the bandit issues them, and the manifest's seed.
        let mut whole = plan_of(&manifest(None));
        let Next::Run(first) = whole.next() else { panic!() };
        assert_eq!(first.id, 0);
        assert_eq!(options_of(&manifest(None)).seed, 9);
    }

    /// Runs the plan `manifest` describes as the runner does with enough jobs: every `Run`
    /// starts an attempt, a `Wait` (or the end) ends the oldest one running; `fails` decides
    /// from the cell and the iteration. The attempts in the order they ended, and the cells.
    fn drive(manifest: &Manifest, fails: impl Fn(&str, u64) -> bool) -> (Vec<Attempt>, Vec<crate::plan::CellSpec>) {
        let mut plan = plan_of(manifest);
        let mut running: Vec<crate::plan::AttemptSpec> = Vec::new();
        let mut attempts = Vec::new();
        loop {
            assert!(attempts.len() < 5000, "the hunt never ended");
            match plan.next() {
                Next::Run(spec) => running.push(spec),
                Next::Wait | Next::Done if !running.is_empty() => {
                    let spec = running.remove(0);
                    let cell = plan.cells()[spec.cell].name.clone();
                    let fail = fails(&cell, spec.iteration);
                    let attempt: Attempt = serde_json::from_value(serde_json::json!({
                        "id": spec.id, "cell": cell, "iteration": spec.iteration, "started_at": "", "seconds": 0.02,
                        "outcome": if fail { "fail" } else { "pass" }, "exit_code": i32::from(fail), "signal": null,
                        "stdout_tail": "", "stderr_tail": "", "phase": spec.phase,
                    }))
                    .unwrap();
                    plan.observe(&attempt);
                    attempts.push(attempt);
                }
                Next::Wait => panic!("the plan waits with nothing running"),
                Next::Done => return (attempts, plan.cells().to_vec()),
            }
        }
    }

    /// The summary of a record of `attempts` (written as the runner writes one).
    fn summarize(manifest: &Manifest, cells: &[crate::plan::CellSpec], attempts: &[Attempt]) -> Summary {
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("rec");
        let mut recorder = crate::record::Recorder::create(&record, manifest).unwrap();
        for cell in &cells[1..] {
            recorder.append_line(crate::record::CELLS, cell).unwrap();
        }
        for a in attempts {
            recorder.append(a, b"", b"").unwrap();
        }
        crate::kind::summarize(&crate::record::Record::open(&record).unwrap()).unwrap()
    }

    fn confirmation(summary: &Summary) -> ConfirmCounts {
        AdaptiveDetails::of(summary).unwrap().confirmation
    }

    // A hunt ended by its budget (or killed) once the attempt that met its stop rule was in, but
    // before the attempts it had chosen before it could know: it read as cut short, a merge of it
    // as missing attempts, and its confirmation counted those chosen attempts too, so resuming it
    // (which runs them) lowered its counts.
    #[test]
    fn a_hunt_cut_after_its_stop_rule_was_met_is_complete_and_counts_as_it_stopped() {
        let m = manifest(None);
        let fails = |cell: &str, it: u64| cell.starts_with("pause=") && it % 3 == 0 && it > 20;
        let (attempts, cells) = drive(&m, fails);
        let whole = summarize(&m, &cells, &attempts);
        assert!(whole.complete);
        assert_eq!(whole.verdict, "condition-sensitive", "{whole:#?}");
        let counts = confirmation(&whole);
        let reproduced = whole.adaptive.clone().and_then(|a| a.reproduction).unwrap().cell;
        // The attempt that met the stop rule: confirmation attempts in id order until the counts.
        let mut by_id = attempts.clone();
        by_id.sort_by_key(|a| a.id);
        let (mut arm, mut base) = (0, 0);
        let stop = by_id
            .iter()
            .find(|a| {
                if a.phase.as_deref() == Some(super::super::CONFIRM) {
                    arm += u64::from(a.cell == reproduced);
                    base += u64::from(a.cell == "default");
                }
                (arm, base) == (counts.cell_attempts, counts.base_attempts)
            })
            .unwrap()
            .id;
        assert!(by_id.last().unwrap().id > stop, "attempts chosen before the stop was known ran after it");
        let cut: Vec<Attempt> = attempts.iter().filter(|a| a.id <= stop).cloned().collect();
        let cut_summary = summarize(&m, &cells, &cut);
        assert!(cut_summary.complete, "{cut_summary:#?}");
        assert_eq!(confirmation(&cut_summary), counts);
        assert_eq!(cut_summary.verdict, whole.verdict);
        // Nothing is missing from it: its plan, every attempt folded in, is done.
        let mut plan = plan_of(&m);
        cut.iter().for_each(|a| plan.observe(a));
        assert!(plan.settled());
    }
}
