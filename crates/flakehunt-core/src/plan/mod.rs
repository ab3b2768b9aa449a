//! Plans: which attempt runs next. Pure: no processes, no files. A plan is pulled one attempt
//! at a time and sees every result, so adaptive plans (confirmation, minimisation, bandits)
//! fit the same runner as static ones. Main trait: [`Plan`].

mod schedule;
mod settings;

pub use crate::rng::Rng;
pub use crate::schema::plan::{CellSpec, Setting};
pub use crate::schema::target::{shell_words, Target};
pub(crate) use schedule::RunningMajority;
pub use schedule::{runner_jobs, schedule, schedules_copies, widest_copies, Schedule};
pub use settings::{parse_bytes, CheckSettings, Durations, Settings, Shard, WarmPlan};

use crate::record::Attempt;

/// One attempt the plan wants run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptSpec {
    /// Stable position in the plan (the attempt's `id`).
    pub id: u64,
    /// Index into the plan's cells.
    pub cell: usize,
    /// `FLAKEHUNT_ITERATION`, from 1, unique within the cell.
    pub iteration: u64,
    /// Why it runs, when not part of the plan proper (`confirm`, `minimize`).
    pub phase: Option<String>,
    /// Start it cold (a new process) even in a hunt whose attempts run warm.
    pub cold: bool,
}

/// What the plan says when asked for work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Run this attempt.
    Run(AttemptSpec),
    /// Nothing now, but results still running may lead to more work.
    Wait,
    /// The plan is complete.
    Done,
}

/// A source of attempts that sees each result.
pub trait Plan: Send {
    /// Every cell, in order; the first is the baseline. May grow as the plan adapts.
    fn cells(&self) -> &[CellSpec];
    /// The next attempt to run.
    fn next(&mut self) -> Next;
    /// A finished attempt (also every attempt of a resumed record, before the run).
    fn observe(&mut self, attempt: &Attempt);
    /// Attempts the plan expects to run, for progress display.
    fn planned(&self) -> u64;
    /// How long the next attempt of `cell` may run, when the plan decides that (the adaptive
    /// hunt's hang rule); the default keeps the hunt's `--timeout`.
    fn limits(&self, _cell: usize) -> AttemptLimits {
        AttemptLimits::default()
    }
    /// Whether the attempts observed already reach the plan's end once every one of them is
    /// taken into account, though [`Plan::next`] would still run some: an adaptive hunt cut short
    /// after its stop rule was met (see `ShardedPlan::settled`). Ask last: it may fold what the
    /// plan holds back for its next decisions.
    fn settled(&mut self) -> bool {
        false
    }
}

/// What a plan says about how long an attempt may run: a hang limit for each way it may start
/// (the plan cannot know which, a warm parent may be lost), each derived from attempts that
/// started the same way, and whether the hunt's budget ends it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AttemptLimits {
    /// For an attempt that starts as a fork of a warm parent; none: only `--timeout` bounds it.
    pub warm: Option<crate::exec::HangLimit>,
    /// For an attempt that starts cold (a new process).
    pub cold: Option<crate::exec::HangLimit>,
    /// An attempt still running when the hunt's budget ends is ended then (recorded `slow`):
    /// nothing else bounds an attempt that has no hang limit yet.
    pub end_with_budget: bool,
}

impl AttemptLimits {
    /// The hang limit of an attempt that started in `mode`.
    pub fn hang(&self, mode: crate::record::Mode) -> Option<crate::exec::HangLimit> {
        match mode {
            crate::record::Mode::Warm => self.warm,
            crate::record::Mode::Cold => self.cold,
        }
    }
}
