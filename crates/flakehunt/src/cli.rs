//! The command line: raw arguments as clap parses them. Validation into a plan happens in each
//! subcommand's module, the only place that touches the OS.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

/// Make flaky tests and race conditions reproducible on demand.
#[derive(Debug, Parser)]
#[command(name = "flakehunt", version, propagate_version = true, max_term_width = 100)]
#[command(
    after_help = "Exit codes: 0 nothing reproduced (or every fire level accepted), 1 reproduced (or a level rejected), \
2 usage or configuration error, 3 the environment refused what was asked, 130 interrupted."
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a test many times under worse scheduling and say which profile brings its failure out.
    Sweep(Box<SweepArgs>),
    /// Internal: the watchdog that ends a hunt's processes if flakehunt dies.
    #[command(name = "__watchdog", hide = true)]
    Watchdog {
        /// The hunt's run id.
        run_id: String,
    },
}

/// Options every hunt shares.
#[derive(Debug, Args)]
pub struct HuntArgs {
    /// Attempts per cell.
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub runs: u64,
    /// Attempts running at once.
    #[arg(short, long, default_value_t = 1, value_name = "J")]
    pub jobs: u32,
    /// Stop a cell after K failures.
    #[arg(long, value_name = "K")]
    pub until_fails: Option<u64>,
    /// Stop starting attempts after this long (e.g. 2m, 1h30m).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub budget: Option<Duration>,
    /// Seed of the interleaving and of seeded mechanisms (default: random, recorded).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Per-attempt timeout: then SIGTERM to its process group, then SIGKILL after --grace.
    #[arg(long, default_value = "10m", value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Time between SIGTERM and SIGKILL.
    #[arg(long, default_value = "2s", value_name = "DURATION", value_parser = parse_duration)]
    pub grace: Duration,
    /// How long to keep reading output after the main process exits, while descendants may hold it.
    #[arg(long, default_value = "100ms", value_name = "DURATION", value_parser = parse_duration)]
    pub leak_timeout: Duration,
    /// Bytes of each output stream kept per attempt (the rest is counted and dropped).
    #[arg(long, default_value = "1MiB", value_name = "BYTES", value_parser = parse_bytes)]
    pub capture: u64,
    /// Write the run record here (default: .flakehunt/runs/<kind>-<timestamp>).
    #[arg(long, value_name = "DIR")]
    pub record: Option<PathBuf>,
    /// Continue the interrupted hunt recorded in DIR (its plan and target are reused, so the
    /// options that would change them cannot be given with it).
    #[arg(
        long,
        value_name = "DIR",
        conflicts_with_all = [
            "record", "shell", "command", "runs", "jobs", "until_fails", "budget", "seed",
            "timeout", "grace", "capture", "shard",
        ]
    )]
    pub resume: Option<PathBuf>,
    /// Run only shard I of N of the plan (join the records with `flakehunt merge`).
    #[arg(long, value_name = "I/N")]
    pub shard: Option<flakehunt_core::plan::Shard>,
    /// Print the summary as JSON on stdout (the table goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Print less while running.
    #[arg(short, long)]
    pub quiet: bool,
    /// Run this string through `sh -c` instead of an argv after `--`.
    #[arg(long, value_name = "STRING", conflicts_with = "command")]
    pub shell: Option<String>,
    /// The command under test, run without a shell.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `flakehunt sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Profiles to compare, comma-separated; the first is the baseline (default: every built-in that applies here).
    #[arg(long, value_delimiter = ',', value_name = "LIST", conflicts_with = "resume")]
    pub profiles: Vec<String>,
    /// Shared hunt options.
    #[command(flatten)]
    pub hunt: HuntArgs,
}

/// Parses `10m`, `2s`, `1h30m`, `500ms`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("{e} (write e.g. 30s, 2m, 1h30m, 500ms)"))
}

/// Parses `1MiB`, `4096`, `64KiB`, `2MB`.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| format!("invalid size '{s}': write e.g. 4096, 64KiB, 1MiB"))?;
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1000,
        "kib" => 1 << 10,
        "m" | "mb" => 1_000_000,
        "mib" => 1 << 20,
        "g" | "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        _ => return Err(format!("invalid size unit in '{s}': use B, KiB, MiB or GiB")),
    };
    n.checked_mul(mult).ok_or_else(|| format!("size '{s}' is too large"))
}
