//! The one interface between the runner and everything that reports: the driver and the
//! runners emit [`Event`]s, sinks (the recorder, the terminal display) consume them. Events are
//! data: the runners never format text, the display alone words them.

use std::path::Path;

use crate::record::{RecordError, Recorder};
use crate::schema::attempt::Attempt;
use crate::schema::fire::{LevelReport, LevelSummary};
use crate::schema::matrix::Dimension;
use crate::schema::plan::CellSpec;

/// Something that happened during a hunt.
#[derive(Debug)]
pub enum Event<'a> {
    /// The hunt starts with this many planned attempts.
    Started {
        /// Planned attempts (for this shard, before stop rules).
        planned: u64,
        /// Attempts already recorded (resume).
        done: u64,
    },
    /// An attempt finished; `stdout`/`stderr` are its captured heads, for the logs.
    AttemptFinished {
        /// The attempt's record.
        attempt: &'a Attempt,
        /// Captured stdout (up to the cap).
        stdout: &'a [u8],
        /// Captured stderr (up to the cap).
        stderr: &'a [u8],
        /// Fire `--trace-tokens`: the run's `FLAKEHUNT_TOKEN`.
        token: Option<&'a str>,
    },
    /// A verification is about to run: its conditions, the attempts they need and why.
    VerifyPlanned {
        /// What it verifies and how.
        options: &'a crate::schema::verify::VerifyOptions,
        /// `--budget`, when given.
        budget: Option<std::time::Duration>,
    },
    /// An adaptive plan added a cell.
    CellAdded(&'a CellSpec),
    /// A matrix is about to run its grid.
    MatrixPlanned {
        /// Cells in the grid.
        cells: usize,
        /// Its dimensions.
        dimensions: &'a [Dimension],
        /// Attempts per cell.
        runs: u64,
        /// Re-runs of a cell that failed once.
        confirm: u64,
    },
    /// `matrix --against`: what it will try and what it cannot.
    AgainstPlanned {
        /// The snapshot, as given.
        snapshot: &'a str,
        /// The differences it searches.
        tried: &'a [crate::schema::against::Dimension],
        /// Those it cannot try here.
        untried: &'a [crate::schema::against::Untried],
        /// Attempts per cell.
        runs: u64,
    },
    /// The clean room of a matrix cell is being made (1-based `index` of `of`).
    CleanRoomReady {
        /// Which room.
        index: usize,
        /// Rooms in all.
        of: usize,
        /// Its cell.
        cell: &'a str,
    },
    /// `--keep`: the clean rooms stay, here.
    CleanRoomsKept(&'a [String]),
    /// Fire: the state was copied once and fingerprinted (what every sandbox will take).
    StateCopied(&'a crate::schema::fire::CopyStats),
    /// Fire: a sequential reference starts in a fresh sandbox.
    ReferenceStarted {
        /// Its cell (`reference-40`).
        cell: &'a str,
        /// Runs, one after another.
        runs: u64,
    },
    /// Fire: a level of the ladder starts (1-based `index` of `of`).
    LevelStarted {
        /// Position on the ladder.
        index: u32,
        /// Levels on the ladder.
        of: usize,
        /// Its cell name (`8x40`).
        cell: &'a str,
        /// Workers started together.
        workers: u32,
        /// Runs they share.
        runs: u64,
    },
    /// Fire: what the state of a finished level or reference showed (a line of `levels.jsonl`).
    LevelRecorded(&'a LevelReport),
    /// Fire: a finished level's verdict, from the same analysis as the summary's.
    LevelJudged(&'a LevelSummary),
    /// Slurm: the job array is submitted.
    ShardsSubmitted {
        /// The job id.
        job: &'a str,
        /// Array tasks.
        shards: u32,
        /// The plan's seed.
        seed: u64,
        /// The batch script.
        script: &'a Path,
        /// The record every shard writes under.
        dir: &'a Path,
    },
    /// Slurm: the queue changed.
    ShardProgress {
        /// The job id.
        job: &'a str,
        /// Tasks pending.
        pending: usize,
        /// Tasks running.
        running: usize,
        /// Shards that finished.
        done: usize,
        /// Attempts recorded over all shards.
        attempts: u64,
    },
    /// Slurm: `squeue` does not answer (said once; the wait goes on).
    QueueSilent {
        /// The job id.
        job: &'a str,
    },
    /// Slurm: an array task did not finish its shard.
    ShardFailed {
        /// The job id.
        job: &'a str,
        /// The array task (shard `task + 1`).
        task: u32,
        /// Shards in all.
        shards: u32,
        /// The exit code its shard left, if any.
        exit: Option<i32>,
        /// What Slurm says about the task, when it left no exit code.
        state: Option<&'a str>,
        /// The task's log.
        log: &'a Path,
    },
    /// Slurm: shards are missing from the merged record (1-based indices).
    ShardsIncomplete {
        /// The missing shards.
        missing: &'a [u32],
        /// Shards in all.
        shards: u32,
        /// The batch script to re-submit them with.
        script: &'a Path,
        /// The record.
        dir: &'a Path,
    },
    /// `$GITHUB_STEP_SUMMARY` could not be appended to (a courtesy: the hunt's result stands).
    StepSummaryFailed {
        /// The file.
        path: &'a Path,
        /// Why, on one line.
        error: &'a str,
    },
    /// Suite: the shuffled attempts are done; these tests failed (or failed run twice) and get
    /// their confirmation runs now.
    Classifying {
        /// How many.
        tests: usize,
    },
    /// A hunt that runs warm runs some attempts cold, for this reason (said once per reason).
    RunsCold(&'a str),
    /// A check of failures the exit status hides that was asked for cannot run on this target
    /// (a Go package with its own `TestMain`), and why: said once, before the attempts.
    CheckNote(&'a str),
    /// The checks of failures the exit status hides that are on, said before the attempts.
    ChecksOn(crate::schema::checks::Checks),
    /// An adaptive hunt starts with no attempt passed, so its hang rule has no limit yet: until
    /// one passes, an attempt runs to its end, `--timeout` (this many seconds) or the budget's
    /// end.
    NoHangLimitYet {
        /// The per-attempt timeout, in seconds.
        timeout: f64,
    },
    /// The user interrupted: running attempts are being ended and will not be recorded.
    Interrupted,
    /// The budget ran out: no new attempts start.
    BudgetSpent,
}

/// A consumer of events.
pub trait EventSink: Send {
    /// Handles one event. An error stops the hunt (a record that cannot be written is fatal).
    fn event(&mut self, event: &Event<'_>) -> Result<(), RecordError>;
}

/// Several sinks in order (the recorder first, so the display never shows an unrecorded attempt).
pub struct Fanout<'a>(pub Vec<&'a mut dyn EventSink>);

impl EventSink for Fanout<'_> {
    fn event(&mut self, event: &Event<'_>) -> Result<(), RecordError> {
        for sink in &mut self.0 {
            sink.event(event)?;
        }
        Ok(())
    }
}

/// A sink that drops everything (probes, tests).
#[derive(Debug, Default)]
pub struct Discard;

impl EventSink for Discard {
    fn event(&mut self, _: &Event<'_>) -> Result<(), RecordError> {
        Ok(())
    }
}

/// The recorder takes what the record keeps: each attempt (and its logs), each cell a plan
/// adds, each level report of fire.
impl EventSink for Recorder {
    fn event(&mut self, event: &Event<'_>) -> Result<(), RecordError> {
        match event {
            Event::AttemptFinished { attempt, stdout, stderr, token } => {
                self.append(attempt, stdout, stderr)?;
                match attempt.worker {
                    Some(worker) => self.worker_log(attempt, worker, *token),
                    None => Ok(()),
                }
            }
            Event::CellAdded(cell) => self.append_line(crate::record::CELLS, cell),
            Event::LevelRecorded(report) => self.append_line(crate::schema::fire::LEVELS, report),
            _ => Ok(()),
        }
    }
}
