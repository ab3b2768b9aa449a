//! The command line: raw arguments as clap parses them, and their translation into the
//! library's typed hunt ([`spec`]); the only module that knows clap. Validation, which touches
//! the OS, happens in the library when the hunt is prepared.

mod applies;
mod dispatch;
mod fire;
pub mod shell;
mod spec;
mod verify;

pub use dispatch::{text as dispatch_text, DispatchCommand};
pub use fire::FireArgs;
pub use spec::{hunt_spec, parse_hunt};
pub use verify::VerifyArgs;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
pub use flakehunt_core::plan::parse_bytes;

/// Make flaky tests and race conditions reproducible on demand.
#[derive(Debug, Parser)]
#[command(name = "flakehunt", version, propagate_version = true, max_term_width = 100)]
#[command(
    after_help = "Exit codes: 0 nothing reproduced (or every fire level accepted), 1 reproduced (or a level rejected), \
2 usage or configuration error (or a damaged record; diff: 0 the snapshots agree, 1 they differ), 3 the environment refused what was asked \
(verify: 0 fixed, 1 not fixed, 3 inconclusive), \
4 the system refused to read or write a file, \
130 interrupted."
)]
pub struct Cli {
    /// Configuration file (default: flakehunt.toml in the current directory, when present).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Write secrets as they are: no redaction of the record, logs, snapshot, reports and
    /// generated job files (the target always gets its real environment and arguments).
    #[arg(long, global = true)]
    pub no_redact: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Reproduce a flaky failure twice in the least time: calibrate, try conditions at levels
    /// sized to the target, confirm against the baseline, and name the condition. `--budget`
    /// defaults to 10m; `--timeout`, when given, replaces the hang rule. It plans as it goes, so it
    /// takes no `--runs`, `--jobs` or `--until-fails`.
    Hunt(Box<HuntArgs>),
    /// Run a test many times under worse scheduling and say which profile brings its failure out.
    Sweep(Box<SweepArgs>),
    /// Run a whole test suite in seeded orders (under --profiles) and classify each failing test:
    /// non-idempotent, order-dependent (with its polluter or state-setter), condition-sensitive,
    /// flaky or deterministic, with a reproducer checked to fail. `--profiles` defaults to `default`
    /// alone; no command after `--`: the runner is --pytest [PATH...], --go-test PKG or --cargo-test.
    Suite(Box<SweepArgs>),
    /// Run a test under a grid of environment conditions and find the smallest set the failure follows.
    Matrix(Box<MatrixArgs>),
    /// Prove a fix: run again what reproduced the failure a `hunt`, `sweep`, `matrix` or pytest
    /// `suite` RECORD holds (its reproducing arm alternating with the baseline, its sensitive
    /// profiles, its smallest overlay, each test's reproducer), as many times as the recorded
    /// failure rate needs for no failure to rule it out at --level. Exit 0 fixed, 1 not fixed,
    /// 3 inconclusive.
    Verify(Box<VerifyArgs>),
    /// Hypotheses about a flake, each with the command that could kill it.
    #[command(subcommand)]
    Hypo(HypoCommand),
    /// Render a recorded hunt (finished, interrupted or merged) as text, Markdown, JSON, JUnit or HTML.
    Report(ReportArgs),
    /// Join the records of one plan's shards (`--shard I/N`) into one record.
    Merge(MergeArgs),
    /// Print the batch script that `--slurm` submits, for submitting by hand:
    /// `flakehunt slurm-script sweep --slurm 8 --record /shared/run ... -- CMD`.
    SlurmScript {
        /// The hunt, as it would be run with --slurm.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true, value_name = "HUNT")]
        hunt: Vec<String>,
    },
    /// Print a GitHub Actions workflow or a Kubernetes Indexed Job that runs a hunt's shards on many machines.
    #[command(subcommand)]
    Dispatch(DispatchCommand),
    /// Print a shell completion script (e.g. `flakehunt completions bash > /etc/bash_completion.d/flakehunt`).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) on stdout (e.g. `flakehunt man > flakehunt.1`).
    Man,
    /// Run a small workload under each profile and show what each really does on this machine.
    Probe {
        /// Profiles to probe, comma-separated (default: all).
        #[arg(long, value_delimiter = ',', value_parser = list_item, value_name = "LIST")]
        profiles: Vec<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// List built-in and configured profiles.
    Profiles,
    /// Print the environment snapshot (secrets redacted) that every record holds, with the
    /// Python interpreter's distributions, Go's environment and modules and Rust's lock file:
    /// take it where a test fails (a CI step), then `flakehunt diff` or `matrix --against` it.
    Snapshot(SnapshotArgs),
    /// Compare two snapshots (files, or records' snapshot.json): what differs, grouped, each
    /// applicable (flakehunt can make this machine, A, look like B) or not, with what to do
    /// instead. With one, A is this machine now. Exit 0: nothing differs, 1: something does.
    Diff(DiffArgs),

    /// Internal: the workload `probe` runs.
    #[command(name = "__probe-workload", hide = true)]
    ProbeWorkload {
        /// Wall-clock milliseconds to spin.
        millis: u64,
    },
    /// Run a command concurrently with itself against copies of its state: does it lose, tear or corrupt anything?
    Fire(Box<FireArgs>),
    /// Internal: the watchdog that ends a hunt's processes if flakehunt dies.
    #[command(name = "__watchdog", hide = true)]
    Watchdog {
        /// The hunt's run id.
        run_id: String,
        /// A process group never to kill (flakehunt's own).
        #[arg(long)]
        protect: Vec<i32>,
    },
}

/// Options every hunt shares. Those in the group `plan` are recorded, so `--resume` (which
/// takes them from the record) conflicts with the group.
#[derive(Debug, Args)]
#[group(skip)]
#[command(group = clap::ArgGroup::new("plan").multiple(true).conflicts_with("resume"))]
pub struct HuntArgs {
    /// Attempts per cell.
    #[arg(long, default_value_t = 100, value_name = "N", group = "plan")]
    pub runs: u64,
    /// Attempts running at once.
    #[arg(short, long, default_value_t = 1, value_name = "J", group = "plan")]
    pub jobs: u32,
    /// Stop a cell after K failures.
    #[arg(long, value_name = "K", group = "plan")]
    pub until_fails: Option<u64>,
    /// Stop starting attempts after this long (e.g. 2m, 1h30m).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, group = "plan")]
    pub budget: Option<Duration>,
    /// Seed of the interleaving and of seeded mechanisms (default: random, recorded).
    #[arg(long, value_name = "N", group = "plan")]
    pub seed: Option<u64>,
    /// Per-attempt timeout: then SIGTERM to its process group, then SIGKILL after --grace.
    #[arg(long, default_value = "10m", value_name = "DURATION", value_parser = parse_duration, group = "plan")]
    pub timeout: Duration,
    /// Time between SIGTERM and SIGKILL.
    #[arg(long, default_value = "2s", value_name = "DURATION", value_parser = parse_duration, group = "plan")]
    pub grace: Duration,
    /// How long to keep reading output after the main process exits, while descendants may hold it.
    #[arg(long, default_value = "100ms", value_name = "DURATION", value_parser = parse_duration)]
    pub leak_timeout: Duration,
    /// Bytes of each output stream kept per attempt (the rest is counted and dropped).
    #[arg(long, default_value = "1MiB", value_name = "BYTES", value_parser = parse_bytes, group = "plan")]
    pub capture: u64,
    /// Write the run record here (default: .flakehunt/runs/<kind>-<timestamp>).
    #[arg(long, value_name = "DIR", group = "plan")]
    pub record: Option<PathBuf>,
    /// Continue the interrupted hunt recorded in DIR (its plan and target are reused, so the
    /// options that would change them cannot be given with it).
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// Run only shard I of N of the plan (join the records with `flakehunt merge`).
    #[arg(long, value_name = "I/N", group = "plan")]
    pub shard: Option<flakehunt_core::plan::Shard>,
    /// Submit the hunt as a Slurm job array of SHARDS tasks, wait for it, and merge the shards into
    /// --record (which must be on a path every node shares).
    #[arg(long, value_name = "SHARDS", conflicts_with_all = ["shard", "resume"])]
    pub slurm: Option<u32>,
    /// Extra sbatch options for --slurm, e.g. '--partition=long --time=1:00:00' (split at spaces).
    #[arg(long, value_name = "OPTIONS", allow_hyphen_values = true, requires = "slurm")]
    pub slurm_opt: Vec<String>,
    /// Python targets (pytest, `python3 SCRIPT.py`): fork each attempt from an interpreter that imported the
    /// target once, instead of starting a new one (default in `hunt` and `suite`; see the README).
    #[arg(long, overrides_with = "no_warm", group = "plan")]
    pub warm: bool,
    /// Start every attempt in a new process (default in `sweep` and `matrix`).
    #[arg(long, overrides_with = "warm", group = "plan")]
    pub no_warm: bool,
    /// Go (--go-test): fail a test that leaves goroutines running, blocked, naming where (default in `hunt` and
    /// `suite`; the test binary gets a TestMain through `go build -overlay`, see the README).
    #[arg(long, overrides_with = "no_leak_check", group = "plan", help_heading = "Checks")]
    pub leak_check: bool,
    /// Go: do not check for leaked goroutines (default in `sweep` and `matrix`).
    #[arg(long, overrides_with = "leak_check", group = "plan", help_heading = "Checks")]
    pub no_leak_check: bool,
    /// Go (--go-test): build the test binary with the race detector (`-race`; needs cgo and a C compiler); a race
    /// report fails the attempt, named by its two places. It slows the test several times over.
    #[arg(long, group = "plan", help_heading = "Checks")]
    pub race: bool,
    /// Python targets and --cargo-test: fail an attempt in which an exception ended a thread, or Python could
    /// not raise one (`__del__`, a callback), or a thread other than the test's panicked, naming where (default in
    /// `hunt` and `suite`; pytest's warnings about them become errors, see the README).
    #[arg(long, overrides_with = "no_thread_check", group = "plan", help_heading = "Checks")]
    pub thread_check: bool,
    /// Do not check threads for exceptions and panics (default in `sweep` and `matrix`).
    #[arg(long, overrides_with = "thread_check", group = "plan", help_heading = "Checks")]
    pub no_thread_check: bool,
    /// Print the summary as JSON on stdout (the table goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Print less while running.
    #[arg(short, long)]
    pub quiet: bool,
    /// Fail an attempt whose stdout or stderr matches REGEX, whatever its exit status (repeatable).
    #[arg(long, value_name = "REGEX", help_heading = "Oracles")]
    pub fail_if: Vec<String>,
    /// Count a failing attempt whose stdout or stderr matches REGEX as a pass (repeatable).
    #[arg(long, value_name = "REGEX", help_heading = "Oracles")]
    pub pass_if: Vec<String>,
    /// An attempt that exits 0 must print exactly FILE's content on stdout (after --ignore), else it is wrong-output.
    #[arg(long, value_name = "FILE", help_heading = "Oracles")]
    pub expect_stdout: Option<PathBuf>,
    /// Mask what matches REGEX in each stdout line before outputs are compared (pids, times; repeatable).
    #[arg(long, value_name = "REGEX", help_heading = "Oracles")]
    pub ignore: Vec<String>,
    /// Judge attempts by their exit status only, or also by agreement with the most common stdout.
    #[arg(long, value_enum, default_value_t = OracleKind::Exit, value_name = "KIND", help_heading = "Oracles")]
    pub oracle: OracleKind,
    /// Build the cargo test binary once and run test NAME in it directly (suite: the whole binary).
    #[arg(long, value_name = "NAME", num_args = 0..=1, default_missing_value = "", help_heading = "Test runners", conflicts_with_all = ["command", "shell", "go_test", "pytest"])]
    pub cargo_test: Option<String>,
    /// With --cargo-test: the package holding the test.
    #[arg(short = 'p', long, value_name = "PKG", help_heading = "Test runners", requires = "cargo_test")]
    pub package: Option<String>,
    /// Build the Go test binary of PKG once (`go test -c`) and run it with `-test.run NAME`.
    #[arg(long, num_args = 1..=3, allow_hyphen_values = true, value_names = ["PKG", "-run NAME"],
          help_heading = "Test runners", conflicts_with_all = ["command", "shell", "pytest"])]
    pub go_test: Vec<String>,
    /// Run one pytest node id with the plugins that alter re-runs disabled (suite: the paths to collect).
    #[arg(long, value_name = "NODEID", num_args = 0.., help_heading = "Test runners", conflicts_with_all = ["command", "shell"])]
    pub pytest: Option<Vec<String>>,
    /// The interpreter for --pytest (default: $VIRTUAL_ENV's, else ./.venv's, else python3).
    #[arg(long, value_name = "PATH", help_heading = "Test runners", requires = "pytest")]
    pub python: Option<PathBuf>,
    /// Run this string through `sh -c` instead of an argv after `--`.
    #[arg(long, value_name = "STRING", conflicts_with = "command", group = "plan")]
    pub shell: Option<String>,
    /// The command under test, run without a shell.
    #[arg(last = true, value_name = "COMMAND", group = "plan", conflicts_with = "resume")]
    pub command: Vec<String>,
}

/// How attempts are judged besides `--fail-if`, `--pass-if` and `--expect-stdout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OracleKind {
    /// The exit status.
    Exit,
    /// Also: an attempt that exits 0 with another stdout than the most common one is wrong-output.
    Majority,
}

/// `flakehunt sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Profiles to compare, comma-separated; the first is the baseline (default: every built-in that applies here).
    #[arg(long, value_delimiter = ',', value_parser = list_item, value_name = "LIST", conflicts_with = "resume")]
    pub profiles: Vec<String>,
    /// Refuse (exit 3) before any attempt when a profile has no effect on this machine.
    #[arg(long, conflicts_with = "resume")]
    pub strict: bool,
    /// Shared hunt options.
    #[command(flatten)]
    pub hunt: HuntArgs,
}

/// `flakehunt snapshot`.
#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// Write the snapshot to FILE instead of stdout (for a CI step to upload).
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The Python interpreter to read (default: $VIRTUAL_ENV's, else ./.venv's, else python3).
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// Read Go's module list in this package directory (default: the working directory, when
    /// `go` is on PATH).
    #[arg(long, value_name = "DIR")]
    pub go_test: Option<PathBuf>,
}

/// `flakehunt diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// A then B: snapshot files or record directories; given one, it is B and A is a snapshot
    /// of this machine taken now.
    #[arg(value_name = "SNAPSHOT", num_args = 1..=2, required = true)]
    pub snapshots: Vec<PathBuf>,
    /// Print the differences as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `flakehunt report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The run record directory.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Output format.
    #[arg(long, short, value_enum, default_value_t = ReportFormat::Term)]
    pub format: ReportFormat,
    /// Write to this file instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// The formats of `flakehunt report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// The tables the live run prints.
    Term,
    /// GitHub-flavoured Markdown (pull requests, job summaries).
    Md,
    /// The summary document.
    Json,
    /// JUnit XML for CI test reports.
    Junit,
    /// One self-contained HTML page with charts.
    Html,
}

impl From<ReportFormat> for flakehunt_core::render::Format {
    fn from(f: ReportFormat) -> Self {
        match f {
            ReportFormat::Term => Self::Term,
            ReportFormat::Md => Self::Markdown,
            ReportFormat::Json => Self::Json,
            ReportFormat::Junit => Self::Junit,
            ReportFormat::Html => Self::Html,
        }
    }
}

/// The command line's definition, as parsed and as the help, completions and man page show it.
pub fn command() -> clap::Command {
    applies::command(Cli::command())
}

/// The command line of this process, parsed (clap prints usage errors and exits); an option
/// that does not apply to the subcommand is refused.
pub fn parse() -> Result<Cli, crate::exit::Error> {
    let matches = command().get_matches();
    if let Some(line) = applies::refusal(&matches) {
        return Err(crate::exit::usage(line));
    }
    Ok(Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit()))
}

/// `flakehunt merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shard records to join.
    #[arg(value_name = "DIR", required = true)]
    pub dirs: Vec<PathBuf>,
    /// The new record to write.
    #[arg(long, value_name = "OUT")]
    pub into: PathBuf,
}

/// `flakehunt hypo`.
#[derive(Debug, Subcommand)]
pub enum HypoCommand {
    /// Record a hypothesis and its kill test (exit 0: it survived; anything else: killed).
    Add {
        /// The hypothesis, in words.
        text: String,
        /// The kill test.
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Run a hypothesis's kill test and record the outcome.
    Run {
        /// The hypothesis id.
        id: u32,
    },
    /// List hypotheses and their outcomes.
    List,
}

/// `flakehunt matrix`.
#[derive(Debug, Args)]
pub struct MatrixArgs {
    /// A dimension: an environment variable (or a `{NAME}` placeholder in the command) and its
    /// values; the first value is the baseline; `unset` removes the variable.
    #[arg(short = 'D', long = "define", value_name = "NAME=V1,V2", conflicts_with = "resume")]
    pub define: Vec<String>,
    /// A resource limit dimension: nofile, nproc, stack, as, core, fsize, cpu, memlock (`unlimited` allowed).
    #[arg(long, value_name = "NAME=V1,V2", conflicts_with = "resume")]
    pub rlimit: Vec<String>,
    /// Hunt the differences from another machine instead of a grid: its snapshot (a file
    /// `flakehunt snapshot --output` wrote, or a record directory). The dimensions are the
    /// differences flakehunt can apply here, this machine's value the baseline and the other's
    /// the second; they are searched in groups, then within a group (see the README).
    #[arg(long, value_name = "SNAPSHOT", conflicts_with_all = ["define", "rlimit", "clean_room", "yes", "max_cells", "shard", "slurm", "resume"])]
    pub against: Option<PathBuf>,
    /// Re-run a cell that failed exactly once up to N times to confirm it (twice) or clear it.
    #[arg(long, default_value_t = 10, value_name = "N", conflicts_with = "resume")]
    pub confirm: u64,
    /// Run grids larger than --max-cells.
    #[arg(long, conflicts_with = "resume")]
    pub yes: bool,
    /// Largest grid run without --yes.
    #[arg(long, default_value_t = 256, value_name = "N", conflicts_with = "resume")]
    pub max_cells: usize,
    /// Run every cell in a fresh copy of the repository's tracked files, with a scrubbed
    /// environment and its own empty HOME and TMPDIR.
    #[arg(long, conflicts_with = "resume")]
    pub clean_room: bool,
    /// With --clean-room: run this (through sh -c) once in each copy before its attempts.
    #[arg(long, value_name = "CMD", requires = "clean_room")]
    pub setup: Option<String>,
    /// With --clean-room: variables passed through besides PATH, comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = list_item, value_name = "LIST", requires = "clean_room")]
    pub keep_env: Vec<String>,
    /// With --clean-room: keep the copies afterwards.
    #[arg(long, requires = "clean_room")]
    pub keep: bool,
    /// With --clean-room: copy what a tracked symlink that resolves outside the repository points to, instead of
    /// refusing it (links inside the repository are re-pointed into the room).
    #[arg(long, requires = "clean_room")]
    pub follow_outside_links: bool,
    /// Shared hunt options.
    #[command(flatten)]
    pub hunt: HuntArgs,
}

/// Parses a hunt given as words to another subcommand (`slurm-script`, `dispatch`) as flakehunt
/// would parse it. Clap's message, which starts with its own `error: `, follows ours without
/// it, and keeps the usage of the subcommand that refused the words.
pub fn parse_nested(argv: impl IntoIterator<Item = String>) -> Result<Cli, crate::exit::Error> {
    let usage = |e: clap::Error| crate::exit::usage(nested_message(&e));
    let matches = command().try_get_matches_from(argv).map_err(usage)?;
    if let Some(line) = applies::refusal(&matches) {
        return Err(crate::exit::usage(line));
    }
    Cli::from_arg_matches(&matches).map_err(usage)
}

fn nested_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let text = text.trim();
    text.strip_prefix("error: ").unwrap_or(text).to_owned()
}

/// One item of a comma-separated list option: an empty one (`--profiles ''`, `a,,b`, a
/// trailing comma) is a mistake, not an item to skip, since skipping it can leave nothing to run.
pub fn list_item(s: &str) -> Result<String, String> {
    let item = s.trim();
    if item.is_empty() {
        return Err("an empty item (a stray comma?): give names separated by commas, e.g. a,b".to_owned());
    }
    Ok(item.to_owned())
}

/// Parses `10m`, `2s`, `1h30m`, `500ms`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| format!("{e} (write e.g. 30s, 2m, 1h30m, 500ms)"))?;
    flakehunt_core::bounds::check_duration(s, d).map_err(|e| e.why)
}
