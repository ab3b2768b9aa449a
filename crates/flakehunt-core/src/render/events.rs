//! The words of the live display: each event a running hunt sends (but the attempts, which
//! the display counts itself) as the line the terminal shows, or none. Pure. Main function:
//! [`line`].

use crate::events::Event;

/// A line to show while a hunt runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventLine {
    /// The text.
    pub text: String,
    /// Shown even with `--quiet`: a warning, an interruption, a failed shard.
    pub always: bool,
    /// A note on how flakehunt runs the attempts (a warm mode that cannot apply, the checks that
    /// are on), not on what the target did: said once, after the summary, so that the first
    /// lines a hunt shows are about the target.
    pub aside: bool,
}

/// What the display says when an attempt of an adaptive hunt ran `seconds` before any attempt
/// had passed (the hang rule then has no limit), `timeout` being `--timeout`'s seconds.
pub fn no_hang_limit_line(seconds: f64, timeout: f64) -> String {
    format!(
        "no attempt has passed yet, so the hang rule has no limit to end a hang with (an attempt just took {seconds:.1} s): until one passes, an attempt runs to its end, --timeout ({}) or the budget's end; give --timeout to end a hang sooner",
        humantime::format_duration(std::time::Duration::from_secs_f64(timeout.max(0.0).round()))
    )
}

/// The line `event` shows, if any.
pub fn line(event: &Event<'_>) -> Option<EventLine> {
    let said = |text: String| Some(EventLine { text, always: false, aside: false });
    let warned = |text: String| Some(EventLine { text, always: true, aside: false });
    let aside = |line: Option<EventLine>| line.map(|l| EventLine { aside: true, ..l });
    match *event {
        Event::MatrixPlanned { cells, dimensions, runs, confirm } => {
            let sizes: Vec<String> = dimensions.iter().map(|d| format!("{} ({})", d.name, d.values.len())).collect();
            said(format!(
                "matrix: {cells} cells from {}, {runs} runs each, confirm single failures up to {confirm} times",
                sizes.join(" x ")
            ))
        }
        Event::AgainstPlanned { snapshot, tried, untried, runs } => {
            let names = |n: Vec<&str>| match n.len() {
                0 => "none".to_owned(),
                1..=10 => n.join(", "),
                more => format!("{}, and {} more", n[..8].join(", "), more - 8),
            };
            said(format!(
                "matrix --against {snapshot}: {} difference(s) to try ({}), {runs} runs per cell; {} not applicable here ({})",
                tried.len(),
                names(tried.iter().map(|d| d.name.as_str()).collect()),
                untried.len(),
                names(untried.iter().map(|d| d.name.as_str()).collect()),
            ))
        }
        Event::VerifyPlanned { options, budget } => {
            said(crate::kind::verify::prepare::plan_lines(options, budget).join("\n"))
        }
        Event::CleanRoomReady { index, of, cell } => said(format!("clean room {index}/{of}: {cell}")),
        Event::CleanRoomsKept(dirs) => said(format!("clean rooms kept: {}", dirs.join(" "))),
        Event::StateCopied(stats) => said(copy_line(stats)),
        Event::ReferenceStarted { cell, runs } => {
            said(format!("{cell}: {runs} runs one after another in a fresh sandbox"))
        }
        Event::LevelStarted { index, of, cell, workers, runs } => {
            said(format!("level {index}/{of}: {cell}: {workers} workers started together, sharing {runs} runs"))
        }
        Event::LevelJudged(l) => said(format!(
            "level {}: {}: {}{}",
            l.name,
            l.verdict.name(),
            l.verdict_text,
            crate::kind::fire::headline_text(&l.findings)
        )),
        Event::ShardsSubmitted { job, shards, seed, script, dir } => said(format!(
            "slurm: submitted job array {job} ({shards} tasks, seed {seed}); script {}; logs {}/slurm-{job}_*.out",
            script.display(),
            dir.display()
        )),
        Event::ShardProgress { job, pending, running, done, attempts } => said(format!(
            "slurm job {job}: {pending} pending, {running} running, {done} done; {attempts} attempts recorded"
        )),
        Event::QueueSilent { job } => {
            warned(format!("flakehunt: warning: squeue does not answer; still waiting for job {job}"))
        }
        Event::ShardFailed { job, task, shards, exit, state, log } => {
            let why = match (exit, state) {
                (Some(code), _) => format!("flakehunt exited {code}"),
                (None, state) => format!(
                    "no exit status: cancelled, timed out or killed ({})",
                    state.map_or_else(|| "state unknown".to_owned(), |s| format!("state {s}"))
                ),
            };
            warned(format!(
                "flakehunt: slurm task {job}_{task} (shard {}/{shards}) failed: {why}; log: {}",
                task + 1,
                log.display()
            ))
        }
        Event::ShardsIncomplete { missing, shards, script, dir } => {
            let list: Vec<String> = missing.iter().map(|i| format!("{i}/{shards}")).collect();
            let tasks: Vec<String> = missing.iter().map(|i| (i - 1).to_string()).collect();
            warned(format!(
                "flakehunt: shards {} did not complete: this record is incomplete. Re-submit them with \
                 `sbatch --array={} {}` (each continues its shard's record), then merge with \
                 `flakehunt merge {}/shard-*/ --into NEW_DIR`",
                list.join(", "),
                tasks.join(","),
                script.display(),
                dir.display()
            ))
        }
        Event::StepSummaryFailed { path, error } => {
            warned(format!("flakehunt: warning: cannot append to $GITHUB_STEP_SUMMARY ({}): {error}", path.display()))
        }
        Event::Classifying { tests: 0 } => said("suite: no test failed".into()),
        Event::Classifying { tests } => said(format!(
            "suite: {tests} test(s) failed: running each alone, twice in one process, bisecting for polluters or state-setters, and checking reproducers"
        )),
        Event::RunsCold(why) | Event::CheckNote(why) => aside(warned(format!("flakehunt: {why}"))),
        Event::ChecksOn(checks) => aside(checks.line().and_then(said)),
        // Said by the display itself, when an attempt runs long before any passed.
        Event::NoHangLimitYet { .. } => None,
        Event::Interrupted => warned("interrupted: ending running attempts (Ctrl-C again to kill them now)".into()),
        Event::BudgetSpent => warned("budget spent: letting running attempts finish".into()),
        Event::Started { .. } | Event::AttemptFinished { .. } | Event::CellAdded(_) | Event::LevelRecorded(_) => None,
    }
}

/// What each sandbox copy of the state takes, in one line.
pub fn copy_line(c: &crate::copy::CopyStats) -> String {
    let plural = if c.files == 1 { "" } else { "s" };
    let mut line =
        format!("state: {} file{plural}, {} bytes, {} bytes written per sandbox", c.files, c.bytes, c.written);
    for (n, what) in [(c.cloned, "reflinked"), (c.links, "links re-pointed"), (c.followed, "outside links followed")] {
        if n > 0 {
            line.push_str(&format!(", {n} {what}"));
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_are_shown_even_when_quiet() {
        let l = line(&Event::QueueSilent { job: "42" }).unwrap();
        assert!(l.always && l.text.contains("job 42"), "{l:?}");
        assert!(!line(&Event::CleanRoomReady { index: 1, of: 2, cell: "c" }).unwrap().always);
        assert_eq!(line(&Event::Started { planned: 1, done: 0 }), None);
    }
}
