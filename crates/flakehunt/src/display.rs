//! The live display on stderr: a progress bar with attempts and failures so far (hidden when
//! stderr is not a terminal), and one line for each new failure signature.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use flakehunt_core::events::{Event, EventSink};
use flakehunt_core::record::RecordError;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The terminal display of a running hunt.
pub struct Display {
    bar: ProgressBar,
    failures: u64,
    per_cell: BTreeMap<String, (u64, u64)>,
    seen: HashSet<String>,
    quiet: bool,
}

impl Display {
    /// A display for a hunt of `planned` attempts; `quiet` keeps only the bar.
    pub fn new(quiet: bool) -> Self {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30.cyan/blue} {pos}/{len} attempts {msg}")
                .expect("the template is valid")
                .progress_chars("=> "),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        Self { bar, failures: 0, per_cell: BTreeMap::new(), seen: HashSet::new(), quiet }
    }

    /// Prints a line above the bar (or plainly when there is no terminal).
    pub fn println(&self, line: &str) {
        if self.bar.is_hidden() {
            eprintln!("{line}");
        } else {
            self.bar.println(line);
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
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
}

impl EventSink for Display {
    fn event(&mut self, event: &Event<'_>) -> Result<(), RecordError> {
        match event {
            Event::Started { planned, done } => {
                self.bar.set_length(*planned);
                self.bar.set_position(*done);
            }
            Event::AttemptFinished { attempt, .. } => {
                self.bar.inc(1);
                let entry = self.per_cell.entry(attempt.cell.clone()).or_default();
                entry.0 += 1;
                if attempt.outcome.is_failure() {
                    entry.1 += 1;
                    self.failures += 1;
                    if let Some(sig) = &attempt.signature {
                        if !self.quiet && self.seen.insert(sig.clone()) {
                            self.println(&format!("new failure  {} #{}  {sig}", attempt.cell, attempt.iteration));
                        }
                    }
                }
                self.bar.set_message(self.message());
            }
            Event::Phase(text) => {
                if !self.quiet {
                    self.println(text);
                }
            }
            Event::Interrupted => self.println("interrupted: ending running attempts (Ctrl-C again to kill them now)"),
            Event::BudgetSpent => self.println("budget spent: letting running attempts finish"),
            Event::CellAdded(_) => {}
        }
        Ok(())
    }
}
