//! A hunt as the user asked for it, before anything is checked or touched: the typed
//! [`HuntSpec`] the binary builds from its arguments (what the kind of hunt varies, the target,
//! the settings, the oracles, the record), the errors that stop a hunt ([`HuntError`]), and the
//! command line a shard is given again ([`HuntSpec::sharded`]).

pub(crate) mod args;
mod error;
mod target;

use std::path::PathBuf;
use std::time::Duration;

pub use error::{error_chain, HuntError, KindError, KindFailure};
pub use target::target_from;

use crate::config::Config;
use crate::plan::Shard;
use crate::record::Kind;

/// A hunt, as the user asked for it: nothing checked yet, nothing touched.
#[derive(Debug, Clone)]
pub struct HuntSpec {
    /// What varies between cells.
    pub kind: HuntKind,
    /// The command under test.
    pub target: TargetRequest,
    /// Attempts, jobs, stop rules and limits.
    pub settings: SettingsRequest,
    /// Oracles beyond the exit status.
    pub oracle: OracleRequest,
    /// Seed of the interleaving and of seeded mechanisms (default: random, recorded).
    pub seed: Option<u64>,
    /// Run only this part of the plan.
    pub shard: Option<Shard>,
    /// Where the record goes.
    pub record: RecordRequest,
    /// Run the shards as a Slurm job array instead.
    pub slurm: Option<SlurmRequest>,
    /// `flakehunt.toml`.
    pub config: Config,
    /// `--config FILE`, given again to the shards.
    pub config_path: Option<PathBuf>,
    /// Less to say while running (given to the shards a submitter starts).
    pub quiet: bool,
}

/// What a hunt varies.
#[derive(Debug, Clone)]
pub enum HuntKind {
    /// Scheduling profiles.
    Sweep {
        /// `--profiles` (empty: every built-in that applies here).
        profiles: Vec<String>,
        /// `--strict`: refuse before any attempt when a profile has no effect here.
        strict: bool,
    },
    /// A grid of environment conditions.
    Matrix(MatrixRequest),
    /// Concurrency against sandbox copies of a state.
    Fire(FireRequest),
    /// The adaptive hunt: calibrate, then arms of condition families at levels derived from
    /// the calibration, chosen by a bandit until one reproduces, then confirmed (`flakehunt hunt`).
    Adaptive,
    /// A whole test suite per attempt, in seeded orders, under profiles.
    Suite(SuiteRequest),
    /// Another record's reproduction run again, to prove a fix (`flakehunt verify`).
    Verify(VerifyRequest),
}

/// `flakehunt verify`'s own options.
#[derive(Debug, Clone)]
pub struct VerifyRequest {
    /// The record to verify (none with `--resume`, whose record names it).
    pub record: Option<PathBuf>,
    /// `--level PCT`, as a fraction (0.99).
    pub level: f64,
}

/// `flakehunt suite`'s own options (its runner is in [`TargetRequest`]).
#[derive(Debug, Clone, Default)]
pub struct SuiteRequest {
    /// `--profiles` (empty: `default` only).
    pub profiles: Vec<String>,
    /// `--strict`.
    pub strict: bool,
}

/// `flakehunt matrix`'s own options.
#[derive(Debug, Clone, Default)]
pub struct MatrixRequest {
    /// `-D NAME=V1,V2`.
    pub define: Vec<String>,
    /// `--rlimit NAME=V1,V2`.
    pub rlimit: Vec<String>,
    /// `--confirm N`.
    pub confirm: u64,
    /// `--yes`: run grids over `max_cells`.
    pub yes: bool,
    /// `--max-cells`.
    pub max_cells: usize,
    /// `--clean-room`, with its options.
    pub clean_room: Option<CleanRoomRequest>,
    /// `--against SNAPSHOT`: search the differences from that machine instead of a grid.
    pub against: Option<PathBuf>,
}

/// `--clean-room` and its options.
#[derive(Debug, Clone, Default)]
pub struct CleanRoomRequest {
    /// `--setup CMD`.
    pub setup: Option<String>,
    /// `--keep-env LIST`.
    pub keep_env: Vec<String>,
    /// `--keep`.
    pub keep: bool,
    /// `--follow-outside-links`.
    pub follow_outside_links: bool,
}

/// `flakehunt fire`'s own options.
#[derive(Debug, Clone, Default)]
pub struct FireRequest {
    /// `--state DIR`.
    pub state: Option<PathBuf>,
    /// `--ladder WxR,...`.
    pub ladder: String,
    /// `--all-levels`.
    pub all_levels: bool,
    /// `--check CMD`.
    pub checks: Vec<String>,
    /// `--ignore REGEX`.
    pub ignore: Vec<String>,
    /// `--ignore-column TABLE.COLUMN`.
    pub ignore_columns: Vec<String>,
    /// `--trace-tokens`.
    pub trace_tokens: bool,
    /// `--keep`.
    pub keep: bool,
    /// `--follow-outside-links` (also given with `--resume`).
    pub follow_outside_links: bool,
}

/// The command under test, as asked for.
#[derive(Debug, Clone, Default)]
pub struct TargetRequest {
    /// The argv after `--`.
    pub command: Vec<String>,
    /// `--shell STRING`.
    pub shell: Option<String>,
    /// `--cargo-test NAME` (empty: no name given, as `suite` takes it).
    pub cargo_test: Option<String>,
    /// `-p PKG` with `--cargo-test`.
    pub package: Option<String>,
    /// `--go-test PKG [-run NAME]`.
    pub go_test: Vec<String>,
    /// `--pytest NODEID` (sweep, matrix, hunt: one), or `--pytest [PATH...]` (suite).
    pub pytest: Option<Vec<String>>,
    /// `--python PATH`: the interpreter for `--pytest`.
    pub python: Option<PathBuf>,
}

impl TargetRequest {
    /// Whether a test-runner adapter is asked for.
    pub fn has_adapter(&self) -> bool {
        self.cargo_test.is_some() || !self.go_test.is_empty() || self.pytest.is_some()
    }
}

/// The plan's numbers and limits, as given.
#[derive(Debug, Clone)]
pub struct SettingsRequest {
    /// `--runs`.
    pub runs: u64,
    /// `--jobs`.
    pub jobs: u32,
    /// `--until-fails`.
    pub until_fails: Option<u64>,
    /// `--budget`.
    pub budget: Option<Duration>,
    /// `--timeout`.
    pub timeout: Duration,
    /// `--timeout` was given, not left at its default: a timeout the user asked for is a
    /// failure the user defined (and replaces `hunt`'s hang rule); flakehunt's default judges
    /// an attempt still at work when it is reached as slow.
    pub timeout_given: bool,
    /// `--grace`.
    pub grace: Duration,
    /// `--leak-timeout`: not part of the recorded plan.
    pub leak_timeout: Duration,
    /// `--capture`.
    pub capture: u64,
    /// `--warm` (`Some(true)`) or `--no-warm` (`Some(false)`); `None`: the kind's default
    /// ([`HuntKind::warm_by_default`]).
    pub warm: Option<bool>,
    /// The checks of failures the exit status hides, as asked (`--leak-check`, `--race`...).
    pub checks: crate::checks::ChecksRequest,
}

/// Oracles beyond the exit status, as given.
#[derive(Debug, Clone, Default)]
pub struct OracleRequest {
    /// `--fail-if`.
    pub fail_if: Vec<String>,
    /// `--pass-if`.
    pub pass_if: Vec<String>,
    /// `--expect-stdout FILE`.
    pub expect_stdout: Option<PathBuf>,
    /// `--ignore` (sweep and matrix).
    pub ignore: Vec<String>,
    /// `--oracle majority`.
    pub majority: bool,
}

impl OracleRequest {
    /// Whether any oracle option is given.
    pub fn is_given(&self) -> bool {
        !self.fail_if.is_empty()
            || !self.pass_if.is_empty()
            || self.expect_stdout.is_some()
            || !self.ignore.is_empty()
            || self.majority
    }
}

/// Where the record goes.
#[derive(Debug, Clone)]
pub enum RecordRequest {
    /// A new record, in this directory or `.flakehunt/runs/<kind>-<timestamp>`.
    New(Option<PathBuf>),
    /// Continue the interrupted hunt recorded here.
    Resume(PathBuf),
}

/// `--slurm SHARDS`.
#[derive(Debug, Clone)]
pub struct SlurmRequest {
    /// Array tasks.
    pub shards: u32,
    /// `--slurm-opt`, split at spaces.
    pub options: Vec<String>,
}

impl HuntSpec {
    /// The checks asked for, each option given or else the kind's default
    /// ([`HuntKind::checks_by_default`]); the target then says which apply.
    pub fn asked_checks(&self) -> crate::checks::Checks {
        let asked = self.settings.checks;
        let on = |given: Option<bool>| given.unwrap_or(self.kind.checks_by_default());
        crate::checks::Checks {
            goroutine_leaks: on(asked.goroutine_leaks),
            race: asked.race,
            thread_exceptions: on(asked.threads),
            thread_panics: on(asked.threads),
        }
    }

    /// Refuses a check given by its option for a target it cannot apply to (the Go checks
    /// without `--go-test`), in one line that says what to give.
    pub fn refuse_inapplicable_checks(&self) -> Result<(), HuntError> {
        let go = !self.target.go_test.is_empty();
        let asked = self.settings.checks;
        if asked.race && !go {
            return Err(HuntError::usage(
                "--race builds a Go test binary with the race detector: give --go-test PKG (or drop --race)",
            ));
        }
        if asked.threads == Some(true) && go {
            return Err(HuntError::usage(
                "--thread-check checks Python targets and --cargo-test; Go's goroutines have --leak-check (drop --thread-check)",
            ));
        }
        if asked.goroutine_leaks == Some(true) && !go {
            return Err(HuntError::usage(
                "--leak-check checks a Go test binary flakehunt builds: give --go-test PKG (or drop --leak-check)",
            ));
        }
        Ok(())
    }
}

impl HuntKind {
    /// Whether the checks of failures the exit status hides are on unless turned off: in the
    /// adaptive hunt and the suite, where a user asks why a test is flaky; sweeps and matrices
    /// compare conditions as they always did, unless a check is asked for.
    pub fn checks_by_default(&self) -> bool {
        matches!(self, HuntKind::Adaptive | HuntKind::Suite(_))
    }

    /// Whether a Python target runs warm unless `--no-warm` is given: in the adaptive hunt and
    /// the suite, whose aim is the most attempts in the least time; sweeps and matrices compare
    /// conditions, cold as they always ran, unless `--warm` is given.
    pub fn warm_by_default(&self) -> bool {
        matches!(self, HuntKind::Adaptive | HuntKind::Suite(_))
    }

    /// The record kind.
    pub fn record_kind(&self) -> Kind {
        match self {
            HuntKind::Sweep { .. } => Kind::Sweep,
            HuntKind::Matrix(_) => Kind::Matrix,
            HuntKind::Fire(_) => Kind::Fire,
            HuntKind::Adaptive => Kind::Adaptive,
            HuntKind::Suite(_) => Kind::Suite,
            HuntKind::Verify(_) => Kind::Verify,
        }
    }
}
