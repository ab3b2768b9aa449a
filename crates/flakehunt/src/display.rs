//! The live display on stderr: a progress bar with attempts and failures so far (hidden when
//! stderr is not a terminal), and one line for each new failure signature.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use flakehunt_core::events::{Event, EventSink};
use flakehunt_core::record::{Attempt, Outcome, RecordError};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The terminal display of a running hunt: the only place where its events become words.
pub struct Display {
    /// The progress bar, from the moment the attempts start.
    bar: Option<ProgressBar>,
    failures: u64,
    per_cell: BTreeMap<String, (u64, u64)>,
    seen: HashSet<String>,
    quiet: bool,
    /// The notes on how flakehunt runs the attempts, each once, for after the summary.
    asides: Vec<flakehunt_core::render::events::EventLine>,
    /// An adaptive hunt none of whose attempts has passed yet: its hang rule has no limit, and
    /// an attempt is bounded by `--timeout` (these seconds) and the budget alone.
    no_hang_limit: Option<f64>,
}

/// Seconds an attempt takes before the display says that, no attempt having passed, the hang
/// rule had no limit for it.
const LONG_WITHOUT_LIMIT: f64 = 5.0;

impl Display {
    /// A display; `quiet` keeps only the bar and what goes wrong.
    pub fn new(quiet: bool) -> Self {
        Self {
            bar: None,
            failures: 0,
            per_cell: BTreeMap::new(),
            seen: HashSet::new(),
            quiet,
            asides: Vec::new(),
            no_hang_limit: None,
        }
    }

    /// Prints the notes on how flakehunt ran the attempts, once each, after the summary (a
    /// newcomer's first lines are about the target, not about flakehunt's warm mode or checks).
    pub fn print_asides(&self) {
        for line in &self.asides {
            if line.always {
                self.println(&line.text);
            } else {
                self.say(&line.text);
            }
        }
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

    /// Prints a line above the bar (or plainly when there is no terminal or no bar). A line
    /// may quote the target (a collection error, a state file's lines, a signature): redacted
    /// like everything written, which costs nothing on the attempts the display only counts.
    pub fn println(&self, line: &str) {
        let line: std::borrow::Cow<'_, str> =
            if flakehunt_core::redact::enabled() { flakehunt_core::redact::text(line) } else { line.into() };
        let line = line.as_ref();
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
        let mut text = match worst {
            Some((cell, (n, f))) => format!("{} failed (most: {cell} {f}/{n})", self.failures),
            None => format!("{} failed", self.failures),
        };
        if self.no_hang_limit.is_some() {
            text.push_str(" · no hang limit until an attempt passes");
        }
        text
    }

    fn attempt_finished(&mut self, attempt: &Attempt) {
        if let Some(timeout) = self.no_hang_limit {
            if attempt.outcome == Outcome::Pass {
                self.no_hang_limit = None;
            } else if attempt.hang.is_none() && attempt.seconds >= LONG_WITHOUT_LIMIT {
                // Said once, while the hunt goes on, about the attempts still to come.
                self.no_hang_limit = None;
                self.say(&flakehunt_core::render::events::no_hang_limit_line(attempt.seconds, timeout));
            }
        }
        if attempt.outcome == Outcome::Slow && self.seen.insert(format!("slow {}", attempt.cell)) {
            self.say(&format!(
                "slow         {} #{}  ended after {:.1} s while still at work: no evidence either way (said once per cell)",
                attempt.cell, attempt.iteration, attempt.seconds
            ));
        }
        let entry = self.per_cell.entry(attempt.cell.clone()).or_default();
        entry.0 += 1;
        if attempt.outcome.is_failure() {
            entry.1 += 1;
            self.failures += 1;
            if let Some(sig) = &attempt.signature {
                if self.seen.insert(sig.clone()) {
                    self.say(&format!("new failure  {} #{}  {sig}", attempt.cell, attempt.iteration));
                    for found in attempt.hidden.iter().take(3) {
                        self.say(&format!("  {}", found.line()));
                    }
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
                let message = self.message();
                let bar = self.start_bar(planned, done);
                bar.set_length(planned);
                bar.set_position(done);
                bar.set_message(message);
            }
            Event::AttemptFinished { attempt, .. } => self.attempt_finished(attempt),
            Event::NoHangLimitYet { timeout } => self.no_hang_limit = Some(timeout),
            _ => match flakehunt_core::render::events::line(event) {
                Some(line) if line.aside && !self.asides.contains(&line) => self.asides.push(line),
                Some(line) if line.aside => {}
                Some(line) if line.always => self.println(&line.text),
                Some(line) => self.say(&line.text),
                None => {}
            },
        }
        Ok(())
    }
}
