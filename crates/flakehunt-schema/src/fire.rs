//! A fire hunt's part of the record: its options (the ladder, the state, the checks), each
//! level's report, and its part of the summary.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// One rung: `workers` processes at once sharing `runs` invocations in total.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Level {
    /// Worker threads, each running one invocation at a time.
    pub workers: u32,
    /// Invocations in total, shared by the workers.
    pub runs: u64,
}

impl Level {
    /// The level's name as users write it, `8x40`; also its cell name in the record.
    pub fn name(self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.workers, self.runs)
    }
}

/// The levels in the order they run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ladder(pub Vec<Level>);

impl fmt::Display for Ladder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self.0.iter().map(|l| l.name()).collect();
        f.write_str(&names.join(","))
    }
}

/// The parameters of a fire hunt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FireOptions {
    /// The levels, in order.
    pub ladder: Ladder,
    /// The user's state directory (never modified); `None` runs in empty sandboxes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<PathBuf>,
    /// `--ignore` regexes masking volatile text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore: Vec<String>,
    /// `--ignore-column TABLE.COLUMN`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore_columns: Vec<String>,
    /// `--check` invariants, run with `sh -c` in the sandbox after each level and reference.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
    /// Give every run a `FLAKEHUNT_TOKEN` and check that each passing run's token is in the
    /// state exactly once.
    #[serde(default)]
    pub trace_tokens: bool,
    /// Keep climbing after a rejected level.
    #[serde(default)]
    pub all_levels: bool,
    /// Keep the sandboxes in the record (`sandboxes/`) instead of removing them.
    #[serde(default)]
    pub keep: bool,
    /// Copy what a symlink in the state that leads outside it points to, instead of refusing
    /// the state (`--follow-outside-links`).
    #[serde(default)]
    pub follow_outside_links: bool,
}

impl FireOptions {
    /// The options of a manifest's `extra`, or `None` when it holds none (not a fire record).
    pub fn from_extra(extra: &serde_json::Value) -> Option<Self> {
        serde_json::from_value(extra.clone()).ok()
    }

    /// Invocations the hunt plans when it climbs the first `levels` levels: theirs plus one
    /// sequential reference per distinct run count.
    pub fn planned_runs(&self, levels: usize) -> u64 {
        let mut seen = Vec::new();
        let mut total = 0;
        for level in self.ladder.0.iter().take(levels) {
            if !seen.contains(&level.runs) {
                seen.push(level.runs);
                total += level.runs;
            }
            total += level.runs;
        }
        total
    }
}

/// What a fire hunt found, flattened into the summary document (`reference`, `levels`, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FireSummary {
    /// The ladder as given, `2x10,8x40,20x100`.
    pub ladder: String,
    /// All sequential reference runs together.
    pub reference: ReferenceSummary,
    /// One sequential reference per distinct run count of the levels climbed.
    pub references: Vec<ReferenceSummary>,
    /// The levels evaluated, in order.
    pub levels: Vec<LevelSummary>,
    /// The rejected level the hunt stopped at, when it stopped early.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_at: Option<String>,
}

/// A rung of the ladder as the renderers show it: a level evaluated, or one the hunt never
/// climbed (it stops at the first rejected level).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rung<'a> {
    /// An evaluated level.
    Ran(&'a LevelSummary),
    /// A level of the ladder beyond the last one evaluated, as the ladder gives it.
    NotRun {
        /// Workers at once.
        workers: Option<u64>,
        /// Invocations in all.
        runs: Option<u64>,
    },
}

impl FireSummary {
    /// Every rung of the ladder: the levels evaluated, then the ones the hunt never climbed.
    pub fn rungs(&self) -> Vec<Rung<'_>> {
        let mut rungs: Vec<Rung> = self.levels.iter().map(Rung::Ran).collect();
        for (i, step) in self.ladder.split(',').enumerate().filter(|(_, s)| !s.is_empty()) {
            if i < rungs.len() {
                continue;
            }
            let mut parts = step.trim().split('x').map(|n| n.parse::<u64>().ok());
            let (workers, runs) = (parts.next().flatten(), parts.next().flatten());
            rungs.push(Rung::NotRun { workers, runs });
        }
        rungs
    }
}

impl Rung<'_> {
    /// `8x40`: the workers and the runs recorded (or, not run, planned).
    pub fn name(&self) -> String {
        match (self.workers(), self.runs()) {
            (Some(w), Some(r)) => format!("{w}x{r}"),
            (Some(w), None) => format!("{w} workers"),
            _ => "level".into(),
        }
    }

    /// Workers at once.
    pub fn workers(&self) -> Option<u64> {
        match self {
            Rung::Ran(l) => Some(u64::from(l.workers)),
            Rung::NotRun { workers, .. } => *workers,
        }
    }

    /// Invocations recorded (not run: planned).
    pub fn runs(&self) -> Option<u64> {
        match self {
            Rung::Ran(l) => Some(l.runs),
            Rung::NotRun { runs, .. } => *runs,
        }
    }

    /// Invocations that failed, once run.
    pub fn failures(&self) -> Option<u64> {
        match self {
            Rung::Ran(l) => Some(l.failures),
            Rung::NotRun { .. } => None,
        }
    }

    /// Whether the state differed from the reference, once run.
    pub fn state_differs(&self) -> Option<bool> {
        match self {
            Rung::Ran(l) => Some(l.state_differs),
            Rung::NotRun { .. } => None,
        }
    }

    /// The verdict's machine name, or `not run`.
    pub fn verdict(&self) -> &'static str {
        match self {
            Rung::Ran(l) => l.verdict.name(),
            Rung::NotRun { .. } => "not run",
        }
    }

    /// Whether the level ran.
    pub fn ran(&self) -> bool {
        matches!(self, Rung::Ran(_))
    }

    /// Whether the verdict accepts the level.
    pub fn accepted(&self) -> bool {
        matches!(self, Rung::Ran(l) if l.verdict == Verdict::Accept)
    }

    /// What the level found.
    pub fn findings(&self) -> &[Finding] {
        match self {
            Rung::Ran(l) => &l.findings,
            Rung::NotRun { .. } => &[],
        }
    }
}

/// A sequential reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReferenceSummary {
    /// Its cell name (`reference-40`); empty for the total.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Runs recorded.
    pub runs: u64,
    /// Runs that failed.
    pub failures: u64,
    /// What went wrong even without concurrency (failed runs, failing checks, tokens).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
}

/// One evaluated level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelSummary {
    /// Position on the ladder, from 1.
    pub level: u32,
    /// `8x40`.
    pub name: String,
    /// Workers at once.
    pub workers: u32,
    /// Runs recorded.
    pub runs: u64,
    /// Runs that failed (non-zero exit, signal, timeout, could not start).
    pub failures: u64,
    /// The final state differs from the reference (state findings, failed checks, leaks).
    pub state_differs: bool,
    /// The level's verdict.
    pub verdict: Verdict,
    /// What the verdict means.
    pub verdict_text: String,
    /// What was found, state findings first, then failed runs by signature.
    pub findings: Vec<Finding>,
    /// Wall-clock seconds of the level's runs.
    pub seconds: f64,
    /// The reference it was compared with.
    pub reference: String,
    /// Where its sandbox was kept, relative to the record (`--keep`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// What copying `--state` into its sandbox made and wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copied: Option<CopyStats>,
}

/// The verdict of one level, from two facts: whether runs failed, and whether the final state
/// differs from the sequential reference (ARCHITECTURE.md, "Contracts").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// No run failed and the state matches the reference.
    Accept,
    /// Every run succeeded, yet the state is wrong: the most dangerous outcome, because
    /// nothing in production would notice.
    RejectSilentCorruption,
    /// Runs failed but the state is right: contention, timeouts, "database is locked".
    RejectLoad,
    /// Runs failed and the state is wrong.
    RejectRaceCrash,
}

impl Verdict {
    /// The verdict for a level.
    pub fn of(runs_failed: bool, state_differs: bool) -> Self {
        match (runs_failed, state_differs) {
            (false, false) => Verdict::Accept,
            (false, true) => Verdict::RejectSilentCorruption,
            (true, false) => Verdict::RejectLoad,
            (true, true) => Verdict::RejectRaceCrash,
        }
    }

    /// The machine name, as serialised.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Accept => "accept",
            Verdict::RejectSilentCorruption => "reject-silent-corruption",
            Verdict::RejectLoad => "reject-load",
            Verdict::RejectRaceCrash => "reject-race-crash",
        }
    }

    /// Whether the level was rejected.
    pub fn is_reject(self) -> bool {
        self != Verdict::Accept
    }

    /// What the verdict means, in words.
    pub fn meaning(self) -> &'static str {
        match self {
            Verdict::Accept => "every run succeeded and the state matches the sequential reference",
            Verdict::RejectSilentCorruption => {
                "SILENT CORRUPTION: every run exited successfully, yet the state differs from the sequential reference"
            }
            Verdict::RejectLoad => {
                "cannot handle load: runs failed (contention, timeouts, locks), though the state is right"
            }
            Verdict::RejectRaceCrash => {
                "race with crash: runs failed and the state differs from the sequential reference"
            }
        }
    }
}

/// The state-side results of one finished level or reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelReport {
    /// Position on the ladder from 1; 0 for a sequential reference.
    pub level: u32,
    /// The cell name of its attempts (`8x40`, `reference-40`).
    pub cell: String,
    /// Workers (1 for a reference).
    pub workers: u32,
    /// Runs planned.
    pub runs: u64,
    /// The reference cell the state was compared with (levels only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// Differences of the final state from the reference's, and token problems: what only a
    /// fingerprint of the sandbox could tell, which the record does not otherwise keep.
    #[serde(default)]
    pub findings: Vec<Finding>,
    /// The `--check` invariants, in the order given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckResult>,
    /// Whether tokens were traced in this state.
    #[serde(default)]
    pub tokens_traced: bool,
    /// Wall-clock seconds of the runs.
    pub seconds: f64,
    /// Where the sandbox was kept (`--keep`), relative to the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// What copying `--state` into the sandbox made and wrote (bytes written stay small for
    /// sparse files and reflinks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copied: Option<CopyStats>,
}

/// One `--check` run on a final state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckResult {
    /// The command, as given.
    pub command: String,
    /// Exited 0.
    pub passed: bool,
    /// Its exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signature-style summary of why it failed (`exit 1: ledger off by 3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// One anomaly in the final state, with how many times it occurred.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// What went wrong.
    pub kind: FindingKind,
    /// Where it went wrong: a path relative to the state directory, or
    /// `FILE:TABLE` for an SQLite table, or `.` for the state as a whole.
    pub path: String,
    /// How many lines, rows or tokens are affected.
    pub count: u64,
    /// A short human-readable example, such as a quoted missing line.
    pub detail: String,
}

impl Finding {
    /// Creates a finding.
    pub fn new(kind: FindingKind, path: impl Into<String>, count: u64, detail: impl Into<String>) -> Self {
        Finding { kind, path: path.into(), count, detail: detail.into() }
    }
}

/// The kind of a [`Finding`], serialised in kebab-case (`lost`,
/// `check-failed`, ...).
///
/// The state module produces the first five kinds; the runner produces the
/// others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    /// Lines, rows or tokens of the reference are missing from the actual
    /// state: the classic lost update.
    Lost,
    /// Lines, rows or tokens occur more often than in the reference, as when
    /// two runs write the same record.
    Duplicated,
    /// Lines that look like no line of the reference, or tokens that only
    /// appear truncated: interleaved or partial writes.
    Torn,
    /// A file, table, symlink or binary content differs in a way the other
    /// kinds do not describe.
    Changed,
    /// An SQLite database fails `PRAGMA integrity_check`.
    Integrity,
    /// Something outlived the runs (reported by the runner).
    Leak,
    /// A user-supplied state check failed (reported by the runner).
    CheckFailed,
    /// Some invocations exited unsuccessfully (reported by the runner).
    FailedRuns,
}

impl FindingKind {
    /// The kebab-case name, as serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            FindingKind::Lost => "lost",
            FindingKind::Duplicated => "duplicated",
            FindingKind::Torn => "torn",
            FindingKind::Changed => "changed",
            FindingKind::Integrity => "integrity",
            FindingKind::Leak => "leak",
            FindingKind::CheckFailed => "check-failed",
            FindingKind::FailedRuns => "failed-runs",
        }
    }
}

impl fmt::Display for FindingKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a copy made, as recorded with each fire level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CopyStats {
    /// Regular files copied (hard links not counted).
    pub files: u64,
    /// Their apparent size in bytes.
    pub bytes: u64,
    /// Bytes of data actually written: holes and reflinked blocks are not.
    pub written: u64,
    /// Files whose blocks are shared with the original (reflinks).
    pub cloned: u64,
    /// Symlinks re-pointed inside the copy.
    pub links: u64,
    /// Extra names of a file that has several in the tree.
    pub hard_links: u64,
    /// FIFOs recreated.
    pub fifos: u64,
    /// Links outside the tree whose content was copied (`--follow-outside-links`).
    pub followed: u64,
    /// Entries left out: sockets, and links outside the tree with nothing to copy.
    pub left_out: u64,
}

/// Side file of a fire record holding one [`LevelReport`] per finished level or reference.
pub const LEVELS: &str = "levels.jsonl";
