//! Oracles beyond the exit code: output patterns that make an attempt fail or pass
//! (`--fail-if`, `--pass-if`), an expected stdout (`--expect-stdout`, after `--ignore` masking)
//! and agreement with the majority output (`--oracle majority`, decided in the analysis, see
//! [`majority`]). Main types: [`OracleSpec`] (what the manifest records) and [`Oracle`] (compiled,
//! applied to each attempt).

pub mod majority;

use std::path::Path;
use std::sync::{Arc, Mutex};

pub use crate::exec::Mask;
use crate::exec::{Capture, Execution};
use crate::record::Outcome;
pub use crate::schema::oracle::{ExpectedStdout, OracleSpec};
use regex::Regex;

/// A bad oracle option.
#[derive(Debug, thiserror::Error)]
pub enum OracleError {
    /// A pattern does not compile.
    #[error("invalid regex '{pattern}' for {option}")]
    Regex {
        /// The option (`--fail-if`...).
        option: &'static str,
        /// The pattern.
        pattern: String,
        /// Why.
        #[source]
        source: regex::Error,
    },
    /// A `--fail-if` or `--pass-if` pattern matches the empty text, so it matches every output.
    #[error("{option} '{pattern}' matches the empty text, so it matches every output: give a pattern that needs at least one character")]
    MatchesEmpty {
        /// The option (`--fail-if`...).
        option: &'static str,
        /// The pattern.
        pattern: String,
    },
    /// The expected stdout is not a file that holds an output.
    #[error("cannot read --expect-stdout file '{path}': {why}")]
    Unfit {
        /// The file.
        path: String,
        /// What it is instead, and what to give.
        why: String,
    },
    /// The expected stdout cannot be read.
    #[error("cannot read --expect-stdout file '{path}'")]
    Expected {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl crate::error_class::Classify for OracleError {
    fn class(&self) -> crate::error_class::ErrorClass {
        use crate::error_class::ErrorClass;
        match self {
            Self::Regex { .. } | Self::MatchesEmpty { .. } | Self::Unfit { .. } => ErrorClass::Usage,
            Self::Expected { source, .. } => ErrorClass::of_named_input(source),
        }
    }
}

/// The largest `--expect-stdout` file read: an expected output is what a test prints, and a
/// bigger file is a mistake (`/dev/zero` would be read until memory ran out).
const EXPECTED_LIMIT: u64 = 256 << 20;

/// Reads an `--expect-stdout` file: a regular file of at most [`EXPECTED_LIMIT`] bytes. Opened
/// without blocking, so a FIFO is refused rather than waited on forever.
fn read_expected(path: &Path) -> Result<Vec<u8>, OracleError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let shown = || path.display().to_string();
    let io = |source| OracleError::Expected { path: shown(), source };
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).map_err(io)?;
    if !file.metadata().map_err(io)?.is_file() {
        let why = "not a regular file: give a file holding the expected output".to_owned();
        return Err(OracleError::Unfit { path: shown(), why });
    }
    let mut bytes = Vec::new();
    file.take(EXPECTED_LIMIT + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > EXPECTED_LIMIT {
        let why = format!("larger than {} MiB: give the output the test is expected to print", EXPECTED_LIMIT >> 20);
        return Err(OracleError::Unfit { path: shown(), why });
    }
    Ok(bytes)
}

/// An oracle's spec from the command line's options, checked, and its mask.
pub trait OracleSpecOf: Sized {
    /// Checks the patterns and reads the expected stdout, hashing it as attempts are hashed.
    fn new(
        fail_if: Vec<String>,
        pass_if: Vec<String>,
        expect_stdout: Option<&Path>,
        ignore: Vec<String>,
        majority: bool,
    ) -> Result<Self, OracleError>;

    /// The mask of `--ignore`, when there is one.
    fn mask(&self) -> Option<Arc<Mask>>;
}

impl OracleSpecOf for OracleSpec {
    fn new(
        fail_if: Vec<String>,
        pass_if: Vec<String>,
        expect_stdout: Option<&Path>,
        ignore: Vec<String>,
        majority: bool,
    ) -> Result<Self, OracleError> {
        for (option, list) in [("--fail-if", &fail_if), ("--pass-if", &pass_if), ("--ignore", &ignore)] {
            for pattern in list {
                let re = Regex::new(pattern).map_err(|source| OracleError::Regex {
                    option,
                    pattern: pattern.clone(),
                    source,
                })?;
                // Masks skip empty matches; a verdict cannot.
                if option != "--ignore" && re.is_match("") {
                    return Err(OracleError::MatchesEmpty { option, pattern: pattern.clone() });
                }
            }
        }
        let mask = Mask::of(&ignore);
        let expect_stdout = match expect_stdout {
            Some(path) => {
                let bytes = read_expected(path)?;
                Some(ExpectedStdout { path: path.display().to_string(), hash: hash_of(&bytes, mask) })
            }
            None => None,
        };
        Ok(Self { fail_if, pass_if, expect_stdout, ignore, majority })
    }

    fn mask(&self) -> Option<Arc<Mask>> {
        Mask::of(&self.ignore)
    }
}

/// The hash [`Capture`] computes for a stream with these bytes.
pub fn hash_of(bytes: &[u8], mask: Option<Arc<Mask>>) -> String {
    let mut c = Capture::hashing(0, 0, mask);
    c.push(bytes);
    c.hash().unwrap_or_default()
}

/// What the oracles decided about one attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// The outcome after the oracles.
    pub outcome: Outcome,
    /// Why an oracle changed or confirmed it (for the record and the signature).
    pub reason: Option<String>,
    /// Keep this attempt's output in `logs/` even if it passed (the first of each distinct
    /// output under `--oracle majority`).
    pub keep_logs: bool,
}

/// The compiled oracles of a hunt, shared by its workers.
#[derive(Debug)]
pub struct Oracle {
    spec: OracleSpec,
    fail_if: Vec<Regex>,
    pass_if: Vec<Regex>,
    /// The expected stdout's masked lines, to say where an attempt's output departs from it.
    expected_lines: Option<Vec<String>>,
    mask: Option<Arc<Mask>>,
    /// Stdout hashes seen so far, so that the first attempt of each distinct output keeps its logs.
    seen: Mutex<std::collections::HashSet<String>>,
}

impl Oracle {
    /// Compiles a recorded spec; none when it sets no oracle.
    pub fn new(spec: &OracleSpec) -> Option<Self> {
        if spec.is_empty() {
            return None;
        }
        let compile = |list: &[String]| list.iter().filter_map(|p| Regex::new(p).ok()).collect();
        let mask = spec.mask();
        let expected_lines =
            spec.expect_stdout.as_ref().and_then(|e| read_expected(Path::new(&e.path)).ok()).map(|bytes| {
                let masked = mask.as_ref().map_or_else(|| bytes.clone(), |m| m.apply(&bytes));
                String::from_utf8_lossy(&masked).lines().map(str::to_owned).collect()
            });
        Some(Self {
            spec: spec.clone(),
            fail_if: compile(&spec.fail_if),
            pass_if: compile(&spec.pass_if),
            expected_lines,
            mask,
            seen: Mutex::default(),
        })
    }

    /// The stdout mask, for the capture.
    pub fn mask(&self) -> Option<Arc<Mask>> {
        self.mask.clone()
    }

    /// Judges an attempt that ended with `outcome` (from its exit status) and printed `ex`.
    /// `pass-if` turns a failure into a pass; `fail-if` turns any attempt into a failure;
    /// `--expect-stdout` makes an attempt that exited 0 with other output `wrong-output`.
    pub fn judge(&self, outcome: Outcome, ex: &Execution) -> Judgement {
        let mut j = Judgement { outcome, reason: None, keep_logs: false };
        let hash = ex.stdout.hash();
        if self.spec.majority {
            if let Some(h) = &hash {
                j.keep_logs = self.seen.lock().map(|mut s| s.insert(h.clone())).unwrap_or(false);
            }
        }
        if self.fail_if.is_empty() && self.pass_if.is_empty() && self.spec.expect_stdout.is_none() {
            return j;
        }
        let texts = texts(ex);
        if outcome.is_failure() {
            if let Some(line) = first_match(&self.pass_if, &texts) {
                j.outcome = if ex.leaked.is_empty() { Outcome::Pass } else { Outcome::Leak };
                j.reason = Some(format!("pass-if matched: {line}"));
            }
        }
        if let Some(line) = first_match(&self.fail_if, &texts) {
            if !j.outcome.is_failure() {
                j.outcome = Outcome::Fail;
            }
            j.reason = Some(format!("fail-if matched: {line}"));
            return j;
        }
        if let (Some(expected), Outcome::Pass | Outcome::Leak) = (&self.spec.expect_stdout, j.outcome) {
            if hash.as_deref() != Some(expected.hash.as_str()) {
                j.outcome = Outcome::WrongOutput;
                let mut reason = format!("stdout differs from {}", expected.path);
                if let Some(at) = self.first_difference(ex) {
                    reason.push_str(&format!(" ({at})"));
                }
                j.reason = Some(reason);
            }
        }
        j
    }

    /// Where the captured stdout first departs from the expected one, when all of it was kept.
    fn first_difference(&self, ex: &Execution) -> Option<String> {
        let expected = self.expected_lines.as_ref()?;
        if ex.stdout.dropped() > 0 {
            return None;
        }
        let head = ex.stdout.head();
        let masked = self.mask.as_ref().map_or_else(|| head.to_vec(), |m| m.apply(head));
        let text = String::from_utf8_lossy(&masked);
        let got: Vec<&str> = text.lines().collect();
        let n = got.len().max(expected.len());
        (0..n).find_map(|i| {
            let (g, e) = (got.get(i).copied(), expected.get(i).map(String::as_str));
            (g != e).then(|| match (g, e) {
                (Some(g), Some(e)) => format!("line {}: got '{}', expected '{}'", i + 1, clip(g), clip(e)),
                (Some(g), None) => format!("line {}: unexpected '{}'", i + 1, clip(g)),
                (None, Some(e)) => format!("line {}: missing '{}'", i + 1, clip(e)),
                (None, None) => String::new(),
            })
        })
    }
}

/// The captured text of both streams: the heads, and the tails when the heads did not hold all.
fn texts(ex: &Execution) -> Vec<String> {
    let mut out = Vec::with_capacity(4);
    for c in [&ex.stdout, &ex.stderr] {
        out.push(String::from_utf8_lossy(c.head()).into_owned());
        if c.dropped() > 0 {
            out.push(c.tail_text());
        }
    }
    out
}

/// The line holding the first match of any pattern, trimmed and clipped.
fn first_match(patterns: &[Regex], texts: &[String]) -> Option<String> {
    patterns.iter().find_map(|re| {
        texts.iter().find_map(|t| {
            let m = re.find(t)?;
            let start = t[..m.start()].rfind('\n').map_or(0, |i| i + 1);
            let end = t[m.end()..].find('\n').map_or(t.len(), |i| m.end() + i);
            Some(clip(t[start..end].trim()))
        })
    })
}

/// At most 120 characters of `s`.
fn clip(s: &str) -> String {
    match s.char_indices().nth(120) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_rejects_bad_regex_and_round_trips() {
        let err = OracleSpec::new(vec!["(".into()], vec![], None, vec![], false).unwrap_err();
        assert!(err.to_string().contains("--fail-if"), "{err}");
        let spec = OracleSpec::new(vec!["race".into()], vec![], None, vec![r"\d+".into()], true).unwrap();
        let json = serde_json::to_string(&spec).unwrap();
        assert_eq!(serde_json::from_str::<OracleSpec>(&json).unwrap(), spec);
        assert!(OracleSpec::default().is_empty());
        assert!(Oracle::new(&OracleSpec::default()).is_none());
    }

    #[test]
    fn first_match_names_the_whole_line() {
        let res = vec![Regex::new("DATA RACE").unwrap()];
        let texts = vec!["ok\n".to_owned(), "a\nWARNING: DATA RACE at x\nb\n".to_owned()];
        assert_eq!(first_match(&res, &texts).as_deref(), Some("WARNING: DATA RACE at x"));
        assert_eq!(first_match(&res, &["nothing".to_owned()]), None);
    }

    #[test]
    fn expected_hash_uses_the_mask() {
        let mask = Mask::of(&[r"pid=\d+".to_owned()]);
        assert_eq!(hash_of(b"pid=1 ok\n", mask.clone()), hash_of(b"pid=22 ok\n", mask));
        assert_ne!(hash_of(b"pid=1 ok\n", None), hash_of(b"pid=22 ok\n", None));
    }
}
