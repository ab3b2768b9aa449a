//! The hypotheses file, `.flakehunt/hypotheses.jsonl`: hypotheses about a flake, written down
//! before testing with the command that could kill them, and every run of that kill test.
//! Main type: [`HypoEvent`].

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One line of the hypotheses file: a hypothesis added, or one run of its kill test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum HypoEvent {
    /// A hypothesis and its kill test.
    Added {
        /// Its number, from 1.
        id: u32,
        /// The hypothesis, in words.
        text: String,
        /// The kill test.
        command: Vec<String>,
        /// When, RFC 3339.
        at: String,
    },
    /// One run of the kill test.
    Ran {
        /// The hypothesis.
        id: u32,
        /// When, RFC 3339.
        at: String,
        /// The kill test's exit code.
        exit_code: Option<i32>,
        /// `survived` or `killed`.
        outcome: String,
        /// The record the kill test said it wrote, if it was a hunt.
        record: Option<String>,
    },
}

/// Why the hypotheses file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum HypoError {
    /// A line does not parse.
    #[error("{path}:{line}: {message}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The file cannot be read or written.
    #[error("cannot access {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl crate::error_class::Classify for HypoError {
    fn class(&self) -> crate::error_class::ErrorClass {
        match self {
            Self::Corrupt { .. } => crate::error_class::ErrorClass::Damaged,
            Self::Io { .. } => crate::error_class::ErrorClass::Io,
        }
    }
}

/// Where the hypotheses of the project in the current directory are kept.
pub fn file() -> PathBuf {
    PathBuf::from(".flakehunt/hypotheses.jsonl")
}

/// Every entry of the file at `path` (none when it does not exist). As for a record, a file
/// that is a directory, is not UTF-8 text or holds a line that is not an entry is damaged; a
/// refusal of the system is an I/O error.
pub fn load(path: &Path) -> Result<Vec<HypoEvent>, HypoError> {
    let io = |source| HypoError::Io { path: path.to_owned(), source };
    let corrupt = |line: usize, message: String| HypoError::Corrupt { path: path.to_owned(), line, message };
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(e)),
    };
    if !meta.is_file() {
        return Err(corrupt(0, "it is not a regular file, where flakehunt writes one".to_owned()));
    }
    let f = std::fs::File::open(path).map_err(io)?;
    let mut out = Vec::new();
    for (i, line) in std::io::BufReader::new(f).split(b'\n').enumerate() {
        let line = line.map_err(io)?;
        let line = String::from_utf8(line).map_err(|_| corrupt(i + 1, "not UTF-8 text".to_owned()))?;
        if line.trim().is_empty() {
            continue;
        }
        out.push(serde_json::from_str(&line).map_err(|e| corrupt(i + 1, e.to_string()))?);
    }
    Ok(out)
}

/// Appends `entry` to the file at `path`, creating it and its directory.
pub fn append(path: &Path, entry: &HypoEvent) -> Result<(), HypoError> {
    let io = |source| HypoError::Io { path: path.to_owned(), source };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut line = serde_json::to_string(entry).unwrap_or_default();
    line.push('\n');
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .map_err(io)
}

/// Now, to the second, RFC 3339.
/// A hypothesis as `hypo list` shows it: its text with control characters escaped, and its
/// kill test as the shell words that run exactly it, both with secrets redacted (the file keeps
/// the command, which `hypo run` runs) unless redaction is off.
pub fn shown(text: &str, command: &[String]) -> (String, String) {
    let (text, command) = if crate::redact::enabled() {
        (crate::redact::text(text).into_owned(), crate::redact::argv(command))
    } else {
        (text.to_owned(), command.to_vec())
    };
    let text = text.chars().flat_map(|c| if c.is_control() { c.escape_default().collect() } else { vec![c] }).collect();
    (text, crate::plan::shell_words(&command))
}

pub fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_through_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h/hypotheses.jsonl");
        assert!(load(&path).unwrap().is_empty());
        let added = HypoEvent::Added { id: 1, text: "t".into(), command: vec!["true".into()], at: now() };
        let ran = HypoEvent::Ran { id: 1, at: now(), exit_code: Some(0), outcome: "survived".into(), record: None };
        append(&path, &added).unwrap();
        append(&path, &ran).unwrap();
        assert_eq!(load(&path).unwrap(), [added, ran]);
        std::fs::write(&path, "{\"event\": \"nope\"}\n").unwrap();
        assert!(matches!(load(&path), Err(HypoError::Corrupt { line: 1, .. })));
    }
}
