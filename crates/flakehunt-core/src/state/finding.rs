//! Findings: the anomalies found when a concurrent run's final state is
//! compared with the reference state of a sequential run.

pub use crate::schema::fire::{Finding, FindingKind};

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
