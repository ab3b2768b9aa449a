//! `flakehunt fire`'s arguments: run the command concurrently with itself, on an escalating
//! ladder, against sandbox copies of its state.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use flakehunt_core::kind::fire::DEFAULT_LADDER;

use super::{parse_bytes, parse_duration};

/// `flakehunt fire`.
#[derive(Debug, Args)]
#[group(skip)]
#[command(group = clap::ArgGroup::new("plan").multiple(true).conflicts_with("resume"))]
pub struct FireArgs {
    /// The state the command works on (files, SQLite databases). Never modified: every level runs in its own copy,
    /// as working directory, in FLAKEHUNT_STATE and as {state} in the command (default: an empty directory).
    #[arg(long, value_name = "DIR", group = "plan")]
    pub state: Option<PathBuf>,
    /// Levels to climb, WxR: W workers started together sharing R runs.
    #[arg(long, default_value = DEFAULT_LADDER, value_name = "LIST", group = "plan")]
    pub ladder: String,
    /// Keep climbing after a rejected level.
    #[arg(long, group = "plan")]
    pub all_levels: bool,
    /// An invariant run with `sh -c` in the final state of the reference and of each level (FLAKEHUNT_RUNS is set);
    /// non-zero is a finding. Repeatable.
    #[arg(long = "check", value_name = "CMD", group = "plan")]
    pub checks: Vec<String>,
    /// Mask what matches in text and rows before comparing (pids, timestamps). Repeatable; uuids and long hex are
    /// masked by default.
    #[arg(long, value_name = "REGEX", group = "plan")]
    pub ignore: Vec<String>,
    /// Leave this SQLite column out of the comparison. Repeatable.
    #[arg(long, value_name = "TABLE.COLUMN", group = "plan")]
    pub ignore_column: Vec<String>,
    /// Give every run a unique FLAKEHUNT_TOKEN; each passing run's token must end up in the state exactly once.
    #[arg(long, group = "plan")]
    pub trace_tokens: bool,
    /// Keep the sandboxes in the record (sandboxes/) to inspect them.
    #[arg(long, group = "plan")]
    pub keep: bool,
    /// Copy what a symlink in the state that resolves outside it points to, instead of refusing the state (such a
    /// link is never left pointing at the original; links inside the state are re-pointed into the copy). Also
    /// accepted with --resume.
    #[arg(long)]
    pub follow_outside_links: bool,
    /// Per-run timeout: then SIGTERM to its process group, then SIGKILL after --grace.
    #[arg(long, default_value = "10m", value_name = "DURATION", value_parser = parse_duration, group = "plan")]
    pub timeout: Duration,
    /// Time between SIGTERM and SIGKILL.
    #[arg(long, default_value = "2s", value_name = "DURATION", value_parser = parse_duration, group = "plan")]
    pub grace: Duration,
    /// How long to keep reading output after the main process exits, while descendants may hold it.
    #[arg(long, default_value = "100ms", value_name = "DURATION", value_parser = parse_duration)]
    pub leak_timeout: Duration,
    /// Bytes of each output stream kept per failing run.
    #[arg(long, default_value = "1MiB", value_name = "BYTES", value_parser = parse_bytes, group = "plan")]
    pub capture: u64,
    /// Seed of the run ids' tokens and of seeded mechanisms (default: random, recorded).
    #[arg(long, value_name = "N", group = "plan")]
    pub seed: Option<u64>,
    /// Write the run record here (default: .flakehunt/runs/fire-<timestamp>).
    #[arg(long, value_name = "DIR", group = "plan")]
    pub record: Option<PathBuf>,
    /// Print the summary as JSON on stdout (the table goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Print less while running.
    #[arg(short, long)]
    pub quiet: bool,
    /// Continue the fire hunt recorded in DIR, killed or interrupted: finished levels are kept, the level that was
    /// cut short runs again from a fresh sandbox (with its reference). Takes its options from the record.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// Run this string through `sh -c` instead of an argv after `--`.
    #[arg(long, value_name = "STRING", conflicts_with = "command", group = "plan")]
    pub shell: Option<String>,
    /// The command under test, run without a shell.
    #[arg(last = true, value_name = "COMMAND", group = "plan", conflicts_with = "resume")]
    pub command: Vec<String>,
}
