//! `flakehunt hypo`: hypotheses about a flake, written down before testing with the command
//! that could kill them, kept with every outcome (`flakehunt_core::hypo`). A kill test that
//! exits 0 leaves the hypothesis standing (survived); any other exit kills it.

use std::io::BufRead;
use std::process::{Command, Stdio};

use flakehunt_core::hypo::{append, file, load, now, HypoEvent};

use crate::exit;

/// What `flakehunt hypo` is asked to do.
pub enum HypoRequest<'a> {
    /// Record a hypothesis and its kill test.
    Add {
        /// The hypothesis, in words.
        text: &'a str,
        /// The kill test.
        command: &'a [String],
    },
    /// Run a hypothesis's kill test.
    Run {
        /// The hypothesis id.
        id: u32,
    },
    /// List hypotheses and their outcomes.
    List,
}

/// Runs a `hypo` subcommand.
pub fn run(cmd: &HypoRequest<'_>) -> Result<exit::Done, exit::Error> {
    let path = file();
    let entries = load(&path)?;
    match cmd {
        HypoRequest::Add { text, command } => {
            if command.is_empty() {
                return Err(exit::usage("give the kill test after --, e.g. flakehunt hypo add \"fails only with LC_ALL=C\" -- flakehunt matrix -D LC_ALL=C.utf8 --runs 200 -- ./test.sh"));
            }
            let id = entries.iter().filter(|e| matches!(e, HypoEvent::Added { .. })).count() as u32 + 1;
            append(&path, &HypoEvent::Added { id, text: (*text).to_owned(), command: command.to_vec(), at: now() })?;
            say(&format!("hypothesis {id} recorded: {text}"))?;
            Ok(exit::Done::Ok)
        }
        HypoRequest::Run { id } => {
            let command = entries
                .iter()
                .find_map(|e| match e {
                    HypoEvent::Added { id: i, command, .. } if i == id => Some(command.clone()),
                    _ => None,
                })
                .ok_or_else(|| exit::usage(format!("no hypothesis {id}: see `flakehunt hypo list`")))?;
            let mut child = Command::new(&command[0])
                .args(&command[1..])
                .stdout(Stdio::piped())
                .spawn()
                .map_err(|source| exit::Error::KillTest { program: command[0].clone(), source })?;
            // Show its output as it comes, and remember where a hunt said its record is.
            let mut record = None;
            if let Some(out) = child.stdout.take() {
                for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                    if let Some(dir) = line.strip_prefix("record: ") {
                        record = Some(dir.trim().to_owned());
                    }
                    say(&line)?;
                }
            }
            let status = child.wait().map_err(|e| exit::Error::io("cannot wait for the kill test", e))?;
            let outcome = if status.success() { "survived" } else { "killed" };
            append(
                &path,
                &HypoEvent::Ran {
                    id: *id,
                    at: now(),
                    exit_code: status.code(),
                    outcome: outcome.into(),
                    record: record.clone(),
                },
            )?;
            say(&format!(
                "hypothesis {id}: {outcome}{}",
                record.map(|r| format!(" (record: {r})")).unwrap_or_default()
            ))?;
            Ok(exit::Done::Ok)
        }
        HypoRequest::List => {
            for e in &entries {
                if let HypoEvent::Added { id, text, command, at } = e {
                    let runs: Vec<&HypoEvent> =
                        entries.iter().filter(|r| matches!(r, HypoEvent::Ran { id: i, .. } if i == id)).collect();
                    let state = match runs.last() {
                        Some(HypoEvent::Ran { outcome, at, .. }) => {
                            format!("{outcome} ({} run(s), last {at})", runs.len())
                        }
                        _ => "untested".into(),
                    };
                    let (text, command) = flakehunt_core::hypo::shown(text, command);
                    say(&format!("{id}  {state}  {text}\n   added {at}; kill test: {command}"))?;
                }
            }
            Ok(exit::Done::Ok)
        }
    }
}

/// One line on stdout.
fn say(line: &str) -> Result<(), exit::Error> {
    exit::to_stdout(|out| writeln!(out, "{line}"))
}
