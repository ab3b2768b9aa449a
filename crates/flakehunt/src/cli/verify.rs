//! `flakehunt verify`'s arguments: run again, after a fix, what reproduced a recorded failure,
//! as many times as its recorded rate needs.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::parse_duration;

/// `flakehunt verify`.
#[derive(Debug, Args)]
#[group(skip)]
#[command(group = clap::ArgGroup::new("plan").multiple(true).conflicts_with("resume"))]
pub struct VerifyArgs {
    /// The record of the hunt, sweep, matrix or suite that reproduced the failure.
    #[arg(value_name = "RECORD", required_unless_present = "resume", group = "plan")]
    pub verified: Option<PathBuf>,
    /// The confidence, in percent, with which no failure in the attempts run rules out the
    /// recorded failure rate (the lower end of its 95 % interval).
    #[arg(long, default_value_t = flakehunt_core::kind::verify::DEFAULT_LEVEL, value_name = "PCT", group = "plan")]
    pub level: f64,
    /// Stop starting attempts after this long (e.g. 2m): said before starting, with what it
    /// costs; a verification it cuts short is inconclusive.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, group = "plan")]
    pub budget: Option<Duration>,
    /// Per-attempt timeout: then SIGTERM to its process group, then SIGKILL after the record's
    /// grace (default: the verified record's).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, group = "plan")]
    pub timeout: Option<Duration>,
    /// How long to keep reading output after the main process exits, while descendants may hold it.
    #[arg(long, default_value = "100ms", value_name = "DURATION", value_parser = parse_duration)]
    pub leak_timeout: Duration,
    /// Seed of the interleaving and of seeded mechanisms (default: random, recorded).
    #[arg(long, value_name = "N", group = "plan")]
    pub seed: Option<u64>,
    /// Python targets: fork each attempt from an interpreter that imported the target once
    /// (default: as the verified record ran).
    #[arg(long, overrides_with = "no_warm", group = "plan")]
    pub warm: bool,
    /// Start every attempt in a new process (default: as the verified record ran).
    #[arg(long, overrides_with = "warm", group = "plan")]
    pub no_warm: bool,
    /// Run only shard I of N of the verification's attempts (join the records with `flakehunt
    /// merge`; give every shard the same --seed).
    #[arg(long, value_name = "I/N", group = "plan")]
    pub shard: Option<flakehunt_core::plan::Shard>,
    /// Write the verify record here (default: .flakehunt/runs/verify-<timestamp>).
    #[arg(long, value_name = "DIR", group = "plan")]
    pub record: Option<PathBuf>,
    /// Continue the interrupted verification recorded in DIR.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// Print the summary as JSON on stdout (the table goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Print less while running.
    #[arg(short, long)]
    pub quiet: bool,
    /// Run this string through `sh -c` instead of the record's command.
    #[arg(long, value_name = "STRING", conflicts_with = "command", group = "plan")]
    pub shell: Option<String>,
    /// The command to verify, run without a shell (default: the record's own).
    #[arg(last = true, value_name = "COMMAND", group = "plan", conflicts_with = "resume")]
    pub command: Vec<String>,
}
