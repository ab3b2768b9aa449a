//! Normalisation of volatile content (UUIDs, hashes, user-ignored patterns
//! and SQLite columns) before states are fingerprinted and compared.

use std::borrow::Cow;
use std::collections::BTreeSet;

use regex::Regex;

/// The text that replaces every masked match.
pub const PLACEHOLDER: &str = "<*>";

/// UUIDs in their canonical 8-4-4-4-12 form.
const UUID: &str = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";

/// Hex strings of at least 16 digits: hashes, random ids, addresses.
const LONG_HEX: &str = r"\b[0-9a-fA-F]{16,}\b";

/// Masks content that legitimately differs between runs so that it does not
/// show up as a difference.
#[derive(Debug, Clone)]
pub struct Normalizer {
    /// User patterns and default masks combined into one alternation, so
    /// that masking is a single pass over the text.
    mask: Regex,
    /// Ignored columns as lowercase `(table, column)`: SQLite identifiers
    /// are case-insensitive.
    ignored_columns: BTreeSet<(String, String)>,
}

/// Why a [`Normalizer`] could not be built.
#[derive(Debug, thiserror::Error)]
pub enum NormalizerError {
    /// A user pattern is not a valid regex.
    #[error("invalid --ignore regex {pattern:?}")]
    InvalidRegex {
        /// The pattern as given.
        pattern: String,
        /// The regex parser's complaint.
        #[source]
        source: regex::Error,
    },
    /// An ignored column is not written `TABLE.COLUMN`.
    #[error("invalid ignored column {column:?}, expected TABLE.COLUMN")]
    InvalidColumn {
        /// The column as given.
        column: String,
    },
}

impl crate::error_class::Classify for NormalizerError {
    fn class(&self) -> crate::error_class::ErrorClass {
        match self {
            Self::InvalidRegex { .. } | Self::InvalidColumn { .. } => crate::error_class::ErrorClass::Usage,
        }
    }
}

impl Normalizer {
    /// Builds a normaliser from user `--ignore` regexes and ignored SQLite
    /// columns written `TABLE.COLUMN`, on top of the default masks for UUIDs
    /// and long hex strings.
    pub fn new<S: AsRef<str>>(ignore: &[S], ignored_columns: &[S]) -> Result<Normalizer, NormalizerError> {
        let mut alternatives = Vec::with_capacity(ignore.len() + 2);
        for pattern in ignore {
            let pattern = pattern.as_ref();
            // Each pattern is compiled alone first so that an error names
            // the faulty pattern rather than the combined alternation.
            Regex::new(pattern)
                .map_err(|source| NormalizerError::InvalidRegex { pattern: pattern.to_owned(), source })?;
            alternatives.push(format!("(?:{pattern})"));
        }
        alternatives.push(format!("(?:{UUID})"));
        alternatives.push(format!("(?:{LONG_HEX})"));
        let combined = alternatives.join("|");
        // The combined regex can still exceed the size limit when the user
        // patterns are huge; blame them all at once then.
        let mask = Regex::new(&combined)
            .map_err(|source| NormalizerError::InvalidRegex { pattern: combined.clone(), source })?;

        let mut columns = BTreeSet::new();
        for column in ignored_columns {
            let column = column.as_ref();
            match column.split_once('.') {
                Some((table, name)) if !table.is_empty() && !name.is_empty() => {
                    columns.insert((table.to_ascii_lowercase(), name.to_ascii_lowercase()));
                }
                _ => return Err(NormalizerError::InvalidColumn { column: column.to_owned() }),
            }
        }
        Ok(Normalizer { mask, ignored_columns: columns })
    }

    /// Replaces every match of the masks in `text` with [`PLACEHOLDER`],
    /// borrowing when nothing matches.
    pub fn mask<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = String::new();
        let mut last = 0;
        for m in self.mask.find_iter(text) {
            // A pattern such as `x*` matches the empty string everywhere;
            // masking those matches would only scatter placeholders.
            if m.is_empty() {
                continue;
            }
            out.push_str(&text[last..m.start()]);
            out.push_str(PLACEHOLDER);
            last = m.end();
        }
        if last == 0 {
            return Cow::Borrowed(text);
        }
        out.push_str(&text[last..]);
        Cow::Owned(out)
    }

    /// Whether `table.column` is excluded from comparisons.
    pub fn ignores_column(&self, table: &str, column: &str) -> bool {
        self.ignored_columns.contains(&(table.to_ascii_lowercase(), column.to_ascii_lowercase()))
    }
}

impl Default for Normalizer {
    /// A normaliser with only the default masks.
    fn default() -> Self {
        Normalizer::new::<&str>(&[], &[]).expect("the default masks are valid")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_uuids_and_long_hex() {
        let norm = Normalizer::default();
        assert_eq!(norm.mask("id 123e4567-e89b-12d3-a456-426614174000 done"), "id <*> done");
        assert_eq!(norm.mask("sha 0123456789abcdef0123"), "sha <*>");
        // Short hex and decimal numbers are content, not noise.
        assert_eq!(norm.mask("count=1234 x=deadbeef"), "count=1234 x=deadbeef");
        assert!(matches!(norm.mask("plain"), Cow::Borrowed("plain")));
    }

    #[test]
    fn masks_user_patterns() {
        let norm = Normalizer::new(&[r"\d{2}:\d{2}:\d{2}", "x*"], &[]).unwrap();
        assert_eq!(norm.mask("at 12:30:01 ok"), "at <*> ok");
        // The empty matches of `x*` are ignored, its real matches are not.
        assert_eq!(norm.mask("axxb"), "a<*>b");
    }

    #[test]
    fn invalid_regex_is_named() {
        let err = Normalizer::new(&["ok", "(unclosed"], &[]).unwrap_err();
        assert_eq!(err.to_string(), "invalid --ignore regex \"(unclosed\"");
    }

    #[test]
    fn ignored_columns() {
        let norm = Normalizer::new(&[], &["events.created_at"]).unwrap();
        assert!(norm.ignores_column("Events", "CREATED_AT"));
        assert!(!norm.ignores_column("events", "id"));
        let err = Normalizer::new(&[], &["nodot"]).unwrap_err();
        assert!(err.to_string().contains("\"nodot\""));
    }
}
