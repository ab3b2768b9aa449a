//! `flakehunt hypo`: hypotheses about a flake, written down before testing with the command
//! that could kill them, and kept with every outcome in `.flakehunt/hypotheses.jsonl`.
//! A kill test that exits 0 leaves the hypothesis standing (survived); any other exit kills it.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

use crate::cli::HypoCommand;
use crate::exit;

/// One line of the hypotheses file: a hypothesis added, or one run of its kill test.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
enum Entry {
    /// A hypothesis and its kill test.
    Added { id: u32, text: String, command: Vec<String>, at: String },
    /// One run of the kill test.
    Ran { id: u32, at: String, exit_code: Option<i32>, outcome: String, record: Option<String> },
}

fn file() -> PathBuf {
    PathBuf::from(".flakehunt/hypotheses.jsonl")
}

fn load() -> anyhow::Result<Vec<Entry>> {
    let path = file();
    let Ok(f) = std::fs::File::open(&path) else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for (i, line) in std::io::BufReader::new(f).lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        out.push(serde_json::from_str(&line).map_err(|e| exit::usage(format!("{}:{}: {e}", path.display(), i + 1)))?);
    }
    Ok(out)
}

fn append(entry: &Entry) -> anyhow::Result<()> {
    let path = file();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
    writeln!(f, "{}", serde_json::to_string(entry)?)?;
    Ok(())
}

fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Runs a `hypo` subcommand.
pub fn run(cmd: &HypoCommand) -> anyhow::Result<i32> {
    let entries = load()?;
    match cmd {
        HypoCommand::Add { text, command } => {
            if command.is_empty() {
                return Err(exit::usage("give the kill test after --, e.g. flakehunt hypo add \"fails only with LC_ALL=C\" -- flakehunt matrix -D LC_ALL=C.utf8 --runs 200 -- ./test.sh"));
            }
            let id = entries.iter().filter(|e| matches!(e, Entry::Added { .. })).count() as u32 + 1;
            append(&Entry::Added { id, text: text.clone(), command: command.clone(), at: now() })?;
            println!("hypothesis {id} recorded: {text}");
            Ok(exit::OK)
        }
        HypoCommand::Run { id } => {
            let command = entries
                .iter()
                .find_map(|e| match e {
                    Entry::Added { id: i, command, .. } if i == id => Some(command.clone()),
                    _ => None,
                })
                .ok_or_else(|| exit::usage(format!("no hypothesis {id}: see `flakehunt hypo list`")))?;
            let mut child = Command::new(&command[0])
                .args(&command[1..])
                .stdout(Stdio::piped())
                .spawn()
                .map_err(|e| exit::usage(format!("cannot start the kill test '{}': {e}", command[0])))?;
            // Show its output as it comes, and remember where a hunt said its record is.
            let mut record = None;
            if let Some(out) = child.stdout.take() {
                for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                    if let Some(dir) = line.strip_prefix("record: ") {
                        record = Some(dir.trim().to_owned());
                    }
                    println!("{line}");
                }
            }
            let status = child.wait()?;
            let outcome = if status.success() { "survived" } else { "killed" };
            append(&Entry::Ran {
                id: *id,
                at: now(),
                exit_code: status.code(),
                outcome: outcome.into(),
                record: record.clone(),
            })?;
            println!("hypothesis {id}: {outcome}{}", record.map(|r| format!(" (record: {r})")).unwrap_or_default());
            Ok(exit::OK)
        }
        HypoCommand::List => {
            for e in &entries {
                if let Entry::Added { id, text, command, at } = e {
                    let runs: Vec<&Entry> =
                        entries.iter().filter(|r| matches!(r, Entry::Ran { id: i, .. } if i == id)).collect();
                    let state = match runs.last() {
                        Some(Entry::Ran { outcome, at, .. }) => format!("{outcome} ({} run(s), last {at})", runs.len()),
                        _ => "untested".into(),
                    };
                    // What reaches the terminal: secrets redacted (the file keeps the command, which
                    // `hypo run` runs), control characters of the text escaped.
                    use flakehunt_core::redact;
                    let (text, command) = if redact::enabled() {
                        (redact::text(text).into_owned(), redact::argv(command))
                    } else {
                        (text.clone(), command.clone())
                    };
                    let text: String = text
                        .chars()
                        .flat_map(|c| if c.is_control() { c.escape_default().collect() } else { vec![c] })
                        .collect();
                    println!(
                        "{id}  {state}  {text}\n   added {at}; kill test: {}",
                        flakehunt_core::plan::shell_words(&command)
                    );
                }
            }
            Ok(exit::OK)
        }
    }
}
