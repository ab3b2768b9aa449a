//! Reading a run record back: the manifest, the attempts streamed line by line (a half-written
//! last line is ignored), and the side documents. Main type: [`Record`].

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use super::writer::{ATTEMPTS, MANIFEST};
use super::{Attempt, Manifest, RecordError, CELLS, FORMAT_VERSION};
use crate::plan::CellSpec;

/// A record directory opened for reading.
#[derive(Debug, Clone)]
pub struct Record {
    /// Where it is.
    pub dir: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
}

impl Record {
    /// Opens `dir`, checking that it is a record of a format this flakehunt reads.
    pub fn open(dir: &Path) -> Result<Self, RecordError> {
        let path = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                RecordError::NotARecord(dir.to_owned())
            } else {
                RecordError::io(&path, e)
            }
        })?;
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| RecordError::Corrupt(path.clone(), e.to_string()))?;
        let version = value.get("format_version").and_then(serde_json::Value::as_u64).unwrap_or(0);
        if version != u64::from(FORMAT_VERSION) {
            return Err(RecordError::Version { dir: dir.to_owned(), found: version, supported: FORMAT_VERSION });
        }
        let manifest: Manifest =
            serde_json::from_value(value).map_err(|e| RecordError::Corrupt(path.clone(), e.to_string()))?;
        // What JSON allows but no hunt writes, which the runner indexes or divides by.
        if manifest.target.argv.is_empty() {
            return Err(RecordError::Corrupt(path, "target.argv is empty: no command to run".into()));
        }
        if let Some(shard) = manifest.shard {
            if shard.index == 0 || shard.index > shard.count {
                return Err(RecordError::Corrupt(
                    path,
                    format!("shard is {}/{}: not a shard I/N with 1 <= I <= N", shard.index, shard.count),
                ));
            }
        }
        Ok(Self { dir: dir.to_owned(), manifest })
    }

    /// Streams the attempts, in the order they were recorded, a bit of memory per attempt id.
    /// A record without its attempts file, or one that holds an attempt id twice, is damaged:
    /// counting its attempts would give numbers about no hunt.
    pub fn attempts(&self) -> Result<impl Iterator<Item = Result<Attempt, RecordError>>, RecordError> {
        let path = self.dir.join(ATTEMPTS);
        let file = match File::open(&path) {
            Ok(f) => BufReader::new(f),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(RecordError::Corrupt(
                    path,
                    "the file is missing: the record has lost its attempts (restore the file, or start a new hunt)"
                        .into(),
                ))
            }
            Err(e) => return Err(RecordError::io(&path, e)),
        };
        Ok(Lines { file, path, line: Vec::new(), number: 0, seen: SeenIds::default() })
    }

    /// Whether the attempts file ends in a line without its newline, which the reader skips: a
    /// writer killed mid-line, or a truncated copy.
    pub fn attempts_file_is_cut(&self) -> Result<bool, RecordError> {
        let path = self.dir.join(ATTEMPTS);
        let len = std::fs::metadata(&path).map_err(|e| RecordError::io(&path, e))?.len();
        Ok(valid_prefix_len(&path)? != len)
    }

    /// Every cell: the manifest's, then any added while the hunt ran.
    pub fn cells(&self) -> Result<Vec<CellSpec>, RecordError> {
        let mut cells = self.manifest.cells.clone();
        cells.extend(self.side_lines::<CellSpec>(CELLS)?);
        Ok(cells)
    }

    /// The lines of a JSONL side file (absent: none).
    pub fn side_lines<T: serde::de::DeserializeOwned>(&self, name: &str) -> Result<Vec<T>, RecordError> {
        let path = self.dir.join(name);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(RecordError::io(&path, e)),
        };
        // A last line without its newline was cut by a crash: ignore it.
        let complete = text.rfind('\n').map_or("", |end| &text[..end]);
        complete
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).map_err(|e| RecordError::Corrupt(path.clone(), e.to_string())))
            .collect()
    }

    /// A JSON document of the record, if present.
    pub fn document<T: serde::de::DeserializeOwned>(&self, name: &str) -> Result<Option<T>, RecordError> {
        let path = self.dir.join(name);
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map(Some).map_err(|e| RecordError::Corrupt(path, e.to_string())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(RecordError::io(&path, e)),
        }
    }

    /// The environment snapshot, if the record has one.
    pub fn snapshot(&self) -> Result<Option<serde_json::Value>, RecordError> {
        self.document(super::SNAPSHOT_FILE)
    }
}

struct Lines {
    file: BufReader<File>,
    path: PathBuf,
    line: Vec<u8>,
    number: u64,
    seen: SeenIds,
}

/// The attempt ids read so far: a bit per id below [`SeenIds::DENSE`] (a plan's ids are dense
/// from 0, or strided by a shard count), a set for any beyond.
#[derive(Default)]
struct SeenIds {
    bits: Vec<u64>,
    beyond: std::collections::HashSet<u64>,
}

impl SeenIds {
    /// Ids below this take a bit each (16 MiB for them all).
    const DENSE: u64 = 1 << 27;

    /// Adds `id`; false when it was there already.
    fn insert(&mut self, id: u64) -> bool {
        if id >= Self::DENSE {
            return self.beyond.insert(id);
        }
        let (word, bit) = ((id / 64) as usize, 1u64 << (id % 64));
        if word >= self.bits.len() {
            self.bits.resize(word + 1, 0);
        }
        let new = self.bits[word] & bit == 0;
        self.bits[word] |= bit;
        new
    }
}

impl Iterator for Lines {
    type Item = Result<Attempt, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            self.line.clear();
            match self.file.read_until(b'\n', &mut self.line) {
                Ok(0) => return None,
                // No newline: a line cut by a crash. Everything before it stands.
                Ok(_) if self.line.last() != Some(&b'\n') => return None,
                Ok(_) => {}
                Err(e) => return Some(Err(RecordError::io(&self.path, e))),
            }
            self.number += 1;
            if self.line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let attempt: Attempt = match serde_json::from_slice(&self.line) {
                Ok(a) => a,
                Err(e) => {
                    return Some(Err(RecordError::Corrupt(self.path.clone(), format!("line {}: {e}", self.number))))
                }
            };
            if !self.seen.insert(attempt.id) {
                return Some(Err(RecordError::Corrupt(
                    self.path.clone(),
                    format!(
                        "line {}: attempt {} is recorded a second time (each attempt is one line: remove the repeated one)",
                        self.number, attempt.id
                    ),
                )));
            }
            return Some(Ok(attempt));
        }
    }
}

/// Length of the longest prefix of `path` made of complete lines.
pub(crate) fn valid_prefix_len(path: &Path) -> Result<u64, RecordError> {
    let mut bytes = Vec::new();
    match File::open(path) {
        Ok(mut f) => f.read_to_end(&mut bytes).map_err(|e| RecordError::io(path, e))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(RecordError::io(path, e)),
    };
    Ok(bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i as u64 + 1))
}
