//! The live display on stderr: a progress bar with attempts and failures so far (hidden when
//! stderr is not a terminal), and one line for each new failure signature.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use flakehunt_core::events::{Event, EventSink};
use flakehunt_core::record::{Attempt, RecordError};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The terminal display of a running hunt: the only place where its events become words.
pub struct Display {
    /// The progress bar, from the moment the attempts start.
    bar: Option<ProgressBar>,
    failures: u64,
    per_cell: BTreeMap<String, (u64, u64)>,
    seen: HashSet<String>,
    quiet: bool,
}

impl Display {
    /// A display; `quiet` keeps only the bar and what goes wrong.
    pub fn new(quiet: bool) -> Self {
        Self { bar: None, failures: 0, per_cell: BTreeMap::new(), seen: HashSet::new(), quiet }
    }

    fn start_bar(&mut self, planned: u64, done: u64) -> &ProgressBar {
        self.bar.get_or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(Some(planned), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:30.cyan/blue} {pos}/{len} attempts {msg}",
                )
                .expect("the template is valid")
                .progress_chars("=> "),
            );
            bar.set_position(done);
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        })
    }

    /// Prints a line above the bar (or plainly when there is no terminal or no bar).
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(bar) if !bar.is_hidden() => bar.println(line),
            _ => eprintln!("{line}"),
        }
    }

    /// Prints a line unless quiet.
    fn say(&self, line: &str) {
        if !self.quiet {
            self.println(line);
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    fn message(&self) -> String {
        let worst = self.per_cell.iter().filter(|(_, (_, f))| *f > 0).max_by(|a, b| {
            let ra = a.1 .1 as f64 / a.1 .0.max(1) as f64;
            let rb = b.1 .1 as f64 / b.1 .0.max(1) as f64;
            ra.total_cmp(&rb)
        });
        match worst {
            Some((cell, (n, f))) => format!("{} failed (most: {cell} {f}/{n})", self.failures),
            None => format!("{} failed", self.failures),
        }
    }

    fn attempt_finished(&mut self, attempt: &Attempt) {
        let entry = self.per_cell.entry(attempt.cell.clone()).or_default();
        entry.0 += 1;
        if attempt.outcome.is_failure() {
            entry.1 += 1;
            self.failures += 1;
            if let Some(sig) = &attempt.signature {
                if self.seen.insert(sig.clone()) {
                    self.say(&format!("new failure  {} #{}  {sig}", attempt.cell, attempt.iteration));
                }
            }
        }
        if let Some(bar) = &self.bar {
            bar.inc(1);
            bar.set_message(self.message());
        }
    }
}

impl EventSink for Display {
    fn event(&mut self, event: &Event<'_>) -> Result<(), RecordError> {
        match *event {
            Event::Started { planned, done } => {
                let bar = self.start_bar(planned, done);
                bar.set_length(planned);
                bar.set_position(done);
            }
            Event::AttemptFinished { attempt, .. } => self.attempt_finished(attempt),
            Event::MatrixPlanned { cells, dimensions, runs, confirm } => {
                let sizes: Vec<String> =
                    dimensions.iter().map(|d| format!("{} ({})", d.name, d.values.len())).collect();
                self.say(&format!(
                    "matrix: {cells} cells from {}, {runs} runs each, confirm single failures up to {confirm} times",
                    sizes.join(" x ")
                ));
            }
            Event::CleanRoomReady { index, of, cell } => self.say(&format!("clean room {index}/{of}: {cell}")),
            Event::CleanRoomsKept(dirs) => self.say(&format!("clean rooms kept: {}", dirs.join(" "))),
            Event::StateCopied(stats) => self.say(&flakehunt_core::hunt::copy_line(stats)),
            Event::ReferenceStarted { cell, runs } => {
                self.say(&format!("{cell}: {runs} runs one after another in a fresh sandbox"));
            }
            Event::LevelStarted { index, of, cell, workers, runs } => self
                .say(&format!("level {index}/{of}: {cell}: {workers} workers started together, sharing {runs} runs")),
            Event::LevelJudged(l) => self.say(&format!(
                "level {}: {}: {}{}",
                l.name,
                l.verdict.name(),
                l.verdict_text,
                flakehunt_core::fire::headline_text(&l.findings)
            )),
            Event::ShardsSubmitted { job, shards, seed, script, dir } => self.say(&format!(
                "slurm: submitted job array {job} ({shards} tasks, seed {seed}); script {}; logs {}/slurm-{job}_*.out",
                script.display(),
                dir.display()
            )),
            Event::ShardProgress { job, pending, running, done, attempts } => self.say(&format!(
                "slurm job {job}: {pending} pending, {running} running, {done} done; {attempts} attempts recorded"
            )),
            Event::QueueSilent { job } => {
                self.println(&format!("flakehunt: warning: squeue does not answer; still waiting for job {job}"));
            }
            Event::ShardFailed { job, task, shards, exit, state, log } => {
                let why = match (exit, state) {
                    (Some(code), _) => format!("flakehunt exited {code}"),
                    (None, state) => format!(
                        "no exit status: cancelled, timed out or killed ({})",
                        state.map_or_else(|| "state unknown".to_owned(), |s| format!("state {s}"))
                    ),
                };
                self.println(&format!(
                    "flakehunt: slurm task {job}_{task} (shard {}/{shards}) failed: {why}; log: {}",
                    task + 1,
                    log.display()
                ));
            }
            Event::ShardsIncomplete { missing, shards, script, dir } => {
                let list: Vec<String> = missing.iter().map(|i| format!("{i}/{shards}")).collect();
                let tasks: Vec<String> = missing.iter().map(|i| (i - 1).to_string()).collect();
                self.println(&format!(
                    "flakehunt: shards {} did not complete: this record is incomplete. Re-submit them with \
                     `sbatch --array={} {}` (each continues its shard's record), then merge with \
                     `flakehunt merge {}/shard-*/ --into NEW_DIR`",
                    list.join(", "),
                    tasks.join(","),
                    script.display(),
                    dir.display()
                ));
            }
            Event::StepSummaryFailed { path, error } => self.println(&format!(
                "flakehunt: warning: cannot append to $GITHUB_STEP_SUMMARY ({}): {error}",
                path.display()
            )),
            Event::RunsCold(why) => self.println(&format!("flakehunt: {why}")),
            Event::Interrupted => self.println("interrupted: ending running attempts (Ctrl-C again to kill them now)"),
            Event::BudgetSpent => self.println("budget spent: letting running attempts finish"),
            Event::CellAdded(_) | Event::LevelRecorded(_) => {}
        }
        Ok(())
    }
}
