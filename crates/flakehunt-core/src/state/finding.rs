//! Findings: the anomalies found when a concurrent run's final state is
//! compared with the reference state of a sequential run.

use std::fmt;

use serde::{Deserialize, Serialize};

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

/// Quotes `text` for a finding's detail, cut to about 120 characters so that
/// a huge line cannot flood a report.
pub(crate) fn quote(text: &str) -> String {
    const MAX_CHARS: usize = 120;
    match text.char_indices().nth(MAX_CHARS) {
        Some((cut, _)) => format!("{:?}…", &text[..cut]),
        None => format!("{text:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_serialise_in_kebab_case() {
        let finding = Finding::new(FindingKind::CheckFailed, "a.log", 2, "x");
        let json = serde_json::to_string(&finding).unwrap();
        assert_eq!(json, r#"{"kind":"check-failed","path":"a.log","count":2,"detail":"x"}"#);
        let back: Finding = serde_json::from_str(&json).unwrap();
        assert_eq!(back, finding);
        for kind in [
            FindingKind::Lost,
            FindingKind::Duplicated,
            FindingKind::Torn,
            FindingKind::Changed,
            FindingKind::Integrity,
            FindingKind::Leak,
            FindingKind::CheckFailed,
            FindingKind::FailedRuns,
        ] {
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{kind}\""));
        }
    }

    #[test]
    fn quote_truncates_long_text() {
        assert_eq!(quote("event 1"), "\"event 1\"");
        let long = "é".repeat(200);
        let quoted = quote(&long);
        assert_eq!(quoted.chars().count(), 120 + 3);
        assert!(quoted.ends_with("\"…"));
    }
}
