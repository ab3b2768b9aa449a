//! Token tracing: every passing run writes a unique token (such as
//! `fht-3f9a…`) into the state, and each must end up there exactly once.

use std::collections::{BTreeMap, HashMap};
use std::io::Seek;
use std::path::Path;

use super::finding::{quote, Finding, FindingKind};
use super::fingerprint_error::FingerprintError;
use super::{sqlite, walk};

/// How many characters past the shared prefix a truncated token must keep
/// to be recognised: fewer would match random text too easily.
const MIN_TORN_CHARS: usize = 4;

/// Why tokens could not be traced.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The tokens do not share a prefix ending in a separator.
    #[error("tokens must share a prefix ending in a separator, like \"fht-\"")]
    NoSharedPrefix,
    /// The state could not be read.
    #[error(transparent)]
    State(#[from] FingerprintError),
}

impl crate::error_class::Classify for TokenError {
    fn class(&self) -> crate::error_class::ErrorClass {
        match self {
            Self::NoSharedPrefix => crate::error_class::ErrorClass::Usage,
            Self::State(e) => crate::error_class::Classify::class(e),
        }
    }
}

/// Checks that each token appears exactly once across the text lines and
/// SQLite text cells of the state directory `dir`.
///
/// Tokens must share a prefix ending in a non-alphanumeric separator, like
/// `fht-`: the content is scanned once for that prefix and each occurrence
/// is looked up in a hash map, instead of searching for every token.
///
/// Findings, sorted by path then kind:
/// - `lost` (path `.`): tokens that appear nowhere;
/// - `duplicated` (path where the token first appears): extra occurrences of
///   tokens that appear more than once;
/// - `torn` (path of the fragment): tokens that appear nowhere whole, but
///   whose first part (at least four characters past the prefix) does, as
///   left by a partial or interleaved write.
///
/// Binary files are not scanned, and neither is content the normaliser
/// would mask: tokens are traced in the raw state.
pub fn trace_tokens(dir: &Path, tokens: &[String]) -> Result<Vec<Finding>, TokenError> {
    if tokens.is_empty() {
        return Ok(Vec::new());
    }
    let mut tracer = Tracer::new(tokens)?;
    for file in walk::walk(dir)? {
        if file.is_symlink {
            continue;
        }
        let path = tracer.paths.len();
        tracer.paths.push(file.rel);
        tracer.scan_file(&file.path, path)?;
    }
    Ok(tracer.findings(tokens))
}

/// Where and how often a token was seen.
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    count: u64,
    /// Index in `Tracer::paths` of the first file it was seen in.
    first_path: usize,
    /// Index in `Tracer::fragments` of a truncated fragment of it.
    torn: Option<usize>,
}

struct Tracer<'t> {
    /// The prefix shared by all tokens, up to its first separator.
    prefix: &'t str,
    /// Distinct token lengths, longest first, to match the longest token
    /// when one is a prefix of another.
    lengths: Vec<usize>,
    /// The distinct tokens, sorted, to find tokens starting with a fragment.
    sorted: Vec<&'t str>,
    seen: HashMap<&'t str, Seen>,
    /// Fragments that may be truncated tokens, with the file they were in.
    fragments: Vec<(String, usize)>,
    /// Relative paths of the scanned files.
    paths: Vec<String>,
}

impl<'t> Tracer<'t> {
    fn new(tokens: &'t [String]) -> Result<Self, TokenError> {
        let first = &tokens[0];
        let end = first
            .char_indices()
            .find(|(_, c)| !c.is_alphanumeric())
            .map(|(i, c)| i + c.len_utf8())
            .ok_or(TokenError::NoSharedPrefix)?;
        let prefix = &first[..end];
        if tokens.iter().any(|token| !token.starts_with(prefix)) {
            return Err(TokenError::NoSharedPrefix);
        }
        let mut sorted: Vec<&str> = tokens.iter().map(String::as_str).collect();
        sorted.sort_unstable();
        sorted.dedup();
        let mut lengths: Vec<usize> = sorted.iter().map(|t| t.len()).collect();
        lengths.sort_unstable_by(|a, b| b.cmp(a));
        lengths.dedup();
        let seen = sorted.iter().map(|&t| (t, Seen::default())).collect();
        Ok(Tracer { prefix, lengths, sorted, seen, fragments: Vec::new(), paths: Vec::new() })
    }

    fn scan_file(&mut self, path: &Path, index: usize) -> Result<(), FingerprintError> {
        let read_error = |source| FingerprintError::Read { path: path.to_owned(), source };
        let mut file = walk::open(path)?;
        if sqlite::has_header(&mut file).map_err(read_error)? {
            return self.scan_database(path, index);
        }
        let size = file.metadata().map_err(read_error)?.len();
        if size > walk::TEXT_LIMIT {
            return Ok(());
        }
        file.rewind().map_err(read_error)?;
        // Lines holding the prefix are collected first and only scanned if
        // the whole file turns out to be text.
        let prefix = self.prefix;
        let mut segments = Vec::new();
        let is_text = walk::read_lines(&mut file, |line, _| {
            if line.contains(prefix) {
                segments.push(line.to_owned());
            }
        })
        .map_err(read_error)?;
        if is_text {
            for segment in &segments {
                self.scan(segment, index);
            }
        }
        Ok(())
    }

    /// Scans the text cells of every user table. A database that cannot be
    /// read is skipped: fingerprinting reports it as an integrity problem.
    fn scan_database(&mut self, path: &Path, index: usize) -> Result<(), FingerprintError> {
        let Ok(conn) = sqlite::open(path) else {
            return Ok(());
        };
        let Ok(tables) = sqlite::user_tables(&conn) else {
            return Ok(());
        };
        for table in tables {
            // A table that fails midway keeps what was read before.
            let _ = self.scan_table(&conn, &table, index);
        }
        Ok(())
    }

    fn scan_table(&mut self, conn: &rusqlite::Connection, table: &str, index: usize) -> rusqlite::Result<()> {
        let mut stmt = sqlite::select_all(conn, table)?;
        let columns = stmt.column_count();
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            for i in 0..columns {
                if let rusqlite::types::ValueRef::Text(bytes) = row.get_ref(i)? {
                    if let Ok(text) = std::str::from_utf8(bytes) {
                        self.scan(text, index);
                    }
                }
            }
        }
        Ok(())
    }

    /// Counts the tokens in one line or cell, and notes fragments that may
    /// be truncated tokens.
    fn scan(&mut self, segment: &str, path: usize) {
        let mut from = 0;
        while let Some(offset) = segment[from..].find(self.prefix) {
            let start = from + offset;
            let rest = &segment[start..];
            if let Some(token) = self.whole_token(rest) {
                if let Some(seen) = self.seen.get_mut(token) {
                    if seen.count == 0 {
                        seen.first_path = path;
                    }
                    seen.count += 1;
                }
                from = start + token.len();
                continue;
            }
            // A fragment runs until the next token starts, or to the end:
            // a write cut short is followed by the next write or by nothing.
            let after_prefix = self.prefix.len();
            let end = rest[after_prefix..].find(self.prefix).map_or(rest.len(), |i| i + after_prefix);
            let shared = self.longest_shared_prefix(&rest[..end]);
            if shared >= after_prefix + MIN_TORN_CHARS {
                self.fragments.push((rest[..shared].to_owned(), path));
            }
            from = start + after_prefix;
        }
    }

    /// The token `text` starts with, if any.
    fn whole_token(&self, text: &str) -> Option<&'t str> {
        self.lengths.iter().find_map(|&len| {
            let candidate = text.get(..len)?;
            self.seen.get_key_value(candidate).map(|(&token, _)| token)
        })
    }

    /// The length of the longest prefix of `fragment` that some token starts
    /// with. In sorted order, the token sharing the longest prefix with a
    /// string is one of its two neighbours.
    fn longest_shared_prefix(&self, fragment: &str) -> usize {
        let at = self.sorted.partition_point(|token| *token < fragment);
        let neighbours = [at.checked_sub(1), Some(at)];
        neighbours
            .into_iter()
            .flatten()
            .filter_map(|i| self.sorted.get(i))
            .map(|token| common_prefix_len(token, fragment))
            .max()
            .unwrap_or(0)
    }

    fn findings(mut self, tokens: &[String]) -> Vec<Finding> {
        // Each fragment accounts for one missing token starting with it.
        for (index, (fragment, _)) in self.fragments.iter().enumerate() {
            let from = self.sorted.partition_point(|token| *token < fragment.as_str());
            let missing =
                self.sorted[from..].iter().take_while(|token| token.starts_with(fragment.as_str())).find(|token| {
                    let seen = &self.seen[*token];
                    seen.count == 0 && seen.torn.is_none()
                });
            if let Some(token) = missing {
                if let Some(seen) = self.seen.get_mut(token) {
                    seen.torn = Some(index);
                }
            }
        }

        let mut tallies: BTreeMap<(String, FindingKind), (u64, String)> = BTreeMap::new();
        let mut tally = |path: &str, kind, count, detail: &dyn Fn() -> String| {
            tallies
                .entry((path.to_owned(), kind))
                .and_modify(|(total, _)| *total += count)
                .or_insert_with(|| (count, detail()));
        };
        let mut done = std::collections::HashSet::new();
        // Input order, so that examples name the earliest runs.
        for token in tokens {
            if !done.insert(token.as_str()) {
                continue;
            }
            let seen = self.seen[token.as_str()];
            match (seen.count, seen.torn) {
                (1, _) => {}
                (0, Some(index)) => {
                    let (fragment, path) = &self.fragments[index];
                    tally(&self.paths[*path], FindingKind::Torn, 1, &|| {
                        format!("token {} only appears truncated as {}", quote(token), quote(fragment))
                    });
                }
                (0, None) => tally(".", FindingKind::Lost, 1, &|| format!("token {} appears nowhere", quote(token))),
                (count, _) => tally(&self.paths[seen.first_path], FindingKind::Duplicated, count - 1, &|| {
                    format!("token {} appears {count} times", quote(token))
                }),
            }
        }
        tallies.into_iter().map(|((path, kind), (count, detail))| Finding::new(kind, path, count, detail)).collect()
    }
}

fn common_prefix_len(a: &str, b: &str) -> usize {
    a.char_indices().zip(b.chars()).find(|((_, x), y)| x != y).map_or_else(|| a.len().min(b.len()), |((i, _), _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    const A: &str = "fht-3f9a0c11";
    const B: &str = "fht-77b2e0d4";
    const C: &str = "fht-c0ffee42";

    fn tokens() -> Vec<String> {
        [A, B, C].map(String::from).to_vec()
    }

    fn trace(files: &[(&str, &str)]) -> Vec<Finding> {
        let tmp = tempfile::tempdir().unwrap();
        for (path, content) in files {
            fs::write(tmp.path().join(path), content).unwrap();
        }
        trace_tokens(tmp.path(), &tokens()).unwrap()
    }

    #[test]
    fn each_token_exactly_once() {
        let log = format!("run {A} ok\nrun {B} ok\n");
        assert!(trace(&[("log", &log), ("other", C)]).is_empty());
        // Glued together is still once each.
        assert!(trace(&[("log", &format!("{A}{B}{C}"))]).is_empty());
    }

    #[test]
    fn missing_token_is_lost() {
        let log = format!("run {A}\nrun {C}\n");
        assert_eq!(
            trace(&[("log", &log)]),
            [Finding::new(FindingKind::Lost, ".", 1, format!("token \"{B}\" appears nowhere"))]
        );
    }

    #[test]
    fn token_twice_is_duplicated() {
        let log = format!("run {A}\nrun {B}\nrun {C}\n");
        let again = format!("retry {B}\n");
        assert_eq!(
            trace(&[("a.log", &log), ("b.log", &again)]),
            [Finding::new(FindingKind::Duplicated, "a.log", 1, format!("token \"{B}\" appears 2 times"))]
        );
    }

    #[test]
    fn truncated_token_is_torn() {
        // B was cut after "fht-77b2" and the next write followed on the
        // same line; the fragment of C at the end is too short to count,
        // and C is whole elsewhere anyway.
        let log = format!("run {A}\nrun fht-77b2run {C}\nrun fht-c0f");
        let findings = trace(&[("log", &log)]);
        assert_eq!(
            findings,
            [Finding::new(
                FindingKind::Torn,
                "log",
                1,
                format!("token \"{B}\" only appears truncated as \"fht-77b2\"")
            )],
            "{log:?}"
        );

        // Too short a fragment is not evidence: the token is just lost.
        let log = format!("run {A}\nrun {C}\nrun fht-77\n");
        assert_eq!(trace(&[("log", &log)])[0].kind, FindingKind::Lost);
    }

    #[test]
    fn tokens_in_sqlite_cells_count_and_binaries_do_not() {
        let tmp = tempfile::tempdir().unwrap();
        let conn = rusqlite::Connection::open(tmp.path().join("jobs.db")).unwrap();
        conn.execute_batch(&format!(
            "CREATE TABLE jobs (id INTEGER, token TEXT);
             INSERT INTO jobs VALUES (1, '{A}'), (2, 'done {B}'), (3, '{B}');"
        ))
        .unwrap();
        drop(conn);
        fs::write(tmp.path().join("blob"), format!("\0{C}")).unwrap();
        let findings = trace_tokens(tmp.path(), &tokens()).unwrap();
        assert_eq!(
            findings,
            [
                Finding::new(FindingKind::Lost, ".", 1, format!("token \"{C}\" appears nowhere")),
                Finding::new(FindingKind::Duplicated, "jobs.db", 1, format!("token \"{B}\" appears 2 times")),
            ]
        );
    }

    #[test]
    fn tokens_need_a_shared_prefix() {
        let tmp = tempfile::tempdir().unwrap();
        let mixed = ["fht-1234".to_owned(), "xyz-1234".to_owned()];
        assert!(matches!(trace_tokens(tmp.path(), &mixed), Err(TokenError::NoSharedPrefix)));
        let bare = ["abcdef".to_owned()];
        assert!(matches!(trace_tokens(tmp.path(), &bare), Err(TokenError::NoSharedPrefix)));
        assert!(trace_tokens(tmp.path(), &[]).unwrap().is_empty());
    }
}
