//! Reading a run record back: the manifest, the attempts streamed line by line (a half-written
//! last line is ignored), and the side documents. Main type: [`Record`].

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use super::{Attempt, Manifest, RecordError, CELLS, FORMAT_VERSION};
use super::{ATTEMPTS, MANIFEST};
use crate::plan::CellSpec;
use crate::record::{RedactAttempt, WrittenManifest};
use crate::signature::AttemptSignature;

/// A record directory opened for reading.
#[derive(Debug, Clone)]
pub struct Record {
    /// Where it is.
    pub dir: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
    /// Read as a redacted record would hold it (see [`Record::redacted_with`]).
    view: Option<std::sync::Arc<RedactedView>>,
}

/// What a kind of hunt adds to sealing an attempt read as a redacted record holds it (a suite:
/// its test ids as written, see `kind::suite::written`).
pub type SealPart = std::sync::Arc<dyn Fn(&mut Attempt) + Send + Sync>;

/// What reading a record written with `--no-redact` as a redacted one takes: its cell names as
/// written, each real one to its written one, and what its kind adds.
struct RedactedView {
    part: Option<SealPart>,
    cells: std::collections::HashMap<String, String>,
}

impl std::fmt::Debug for RedactedView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedactedView").field("cells", &self.cells).finish_non_exhaustive()
    }
}

impl Record {
    /// Opens `dir`, checking that it is a record of a format this flakehunt reads.
    pub fn open(dir: &Path) -> Result<Self, RecordError> {
        let path = dir.join(MANIFEST);
        let text = match read_text(&path) {
            Ok(Some(text)) => text,
            // No manifest, or `dir` is a file: not a record at all.
            Ok(None) => return Err(RecordError::NotARecord(dir.to_owned())),
            Err(RecordError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotADirectory => {
                return Err(RecordError::NotARecord(dir.to_owned()))
            }
            Err(e) => return Err(e),
        };
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
        Ok(Self { dir: dir.to_owned(), manifest, view: None })
    }

    /// The record as a redacted one would hold it, for a `report` of a record written with
    /// `--no-redact` (or before redaction existed): its manifest as written, every attempt
    /// sealed as the live run seals it (the target's output, test ids, signatures), cell names
    /// and side files redacted. So the analysis runs on what a redacted record holds, and what
    /// it shows keeps the shape of ids a redaction of the rendered text would cut. Unchanged
    /// when redaction is off or the record is redacted already. `part`: what the record's kind
    /// adds to sealing an attempt (`kind::redacted` gives it).
    pub fn redacted_with(self, part: Option<SealPart>) -> Result<Self, RecordError> {
        if self.manifest.redacted || !crate::redact::enabled() {
            return Ok(self);
        }
        let path = self.dir.join(MANIFEST);
        let mut raw = self.manifest.clone();
        raw.redacted = true;
        let written = raw.to_written().map_err(RecordError::Json)?;
        let mut manifest: Manifest =
            serde_json::from_value(written).map_err(|e| RecordError::Corrupt(path, e.to_string()))?;
        // Cells that redaction named alike are told apart by their place, as a matrix does.
        let mut cells = std::collections::HashMap::new();
        let names: Vec<String> = manifest.cells.iter().map(|c| c.name.clone()).collect();
        for (i, (cell, raw)) in manifest.cells.iter_mut().zip(&self.manifest.cells).enumerate() {
            if names.iter().filter(|n| **n == cell.name).count() > 1 {
                cell.name = format!("{} (cell {})", cell.name, i + 1);
            }
            cells.insert(raw.name.clone(), cell.name.clone());
        }
        let view = Some(std::sync::Arc::new(RedactedView { part, cells }));
        Ok(Self { dir: self.dir, manifest, view })
    }

    /// Streams the attempts, in the order they were recorded, a bit of memory per attempt id.
    /// A record without its attempts file, or one that holds an attempt id twice, is damaged:
    /// counting its attempts would give numbers about no hunt.
    pub fn attempts(&self) -> Result<impl Iterator<Item = Result<Attempt, RecordError>>, RecordError> {
        let path = self.dir.join(ATTEMPTS);
        let Some(file) = open_file(&path)? else {
            return Err(RecordError::Corrupt(
                path,
                "the file is missing: the record has lost its attempts (restore the file, or start a new hunt)".into(),
            ));
        };
        Ok(Lines {
            file: BufReader::new(file),
            path,
            line: Vec::new(),
            number: 0,
            seen: SeenIds::default(),
            view: self.view.clone(),
        })
    }

    /// Whether the attempts file ends in a line without its newline, which the reader skips: a
    /// writer killed mid-line, or a truncated copy.
    pub fn attempts_file_is_cut(&self) -> Result<bool, RecordError> {
        let path = self.dir.join(ATTEMPTS);
        let Some(bytes) = read_file(&path)? else { return Ok(false) };
        Ok(prefix_len(&bytes) != bytes.len() as u64)
    }

    /// Every cell: the manifest's, then any added while the hunt ran. A cell added twice (a
    /// hunt killed after writing the cell but before the attempt that led to it, then resumed,
    /// adds it again) is read once.
    pub fn cells(&self) -> Result<Vec<CellSpec>, RecordError> {
        let mut cells = self.manifest.cells.clone();
        for mut added in self.side_lines::<CellSpec>(CELLS)? {
            if let Some(view) = &self.view {
                added.name = view.cell(&added.name);
            }
            if !cells.iter().any(|c| c.name == added.name) {
                cells.push(added);
            }
        }
        Ok(cells)
    }

    /// The lines of a JSONL side file (absent: none).
    pub fn side_lines<T: serde::de::DeserializeOwned>(&self, name: &str) -> Result<Vec<T>, RecordError> {
        let path = self.dir.join(name);
        let Some(text) = read_text(&path)? else { return Ok(Vec::new()) };
        // A last line without its newline was cut by a crash: ignore it.
        let complete = text.rfind('\n').map_or("", |end| &text[..end]);
        complete.lines().filter(|l| !l.trim().is_empty()).map(|l| self.parse(l, &path)).collect()
    }

    /// One JSON document of the record, redacted when this is a [redacted](Self::redacted_with) view.
    fn parse<T: serde::de::DeserializeOwned>(&self, text: &str, path: &Path) -> Result<T, RecordError> {
        let corrupt = |e: serde_json::Error| RecordError::Corrupt(path.to_owned(), e.to_string());
        if self.view.is_none() {
            return serde_json::from_str(text).map_err(corrupt);
        }
        let mut value: serde_json::Value = serde_json::from_str(text).map_err(corrupt)?;
        crate::redact::json(&mut value);
        serde_json::from_value(value).map_err(corrupt)
    }

    /// A JSON document of the record, if present.
    pub fn document<T: serde::de::DeserializeOwned>(&self, name: &str) -> Result<Option<T>, RecordError> {
        let path = self.dir.join(name);
        match read_text(&path)? {
            Some(text) => self.parse(&text, &path).map(Some),
            None => Ok(None),
        }
    }

    /// The shards a merged record was merged from (`merge.json`), or `None` for a record that
    /// was not merged.
    pub fn merged_shards(&self) -> Result<Option<Vec<crate::plan::Shard>>, RecordError> {
        #[derive(serde::Deserialize)]
        struct Merged {
            merged_from: Vec<From>,
        }
        #[derive(serde::Deserialize)]
        struct From {
            shard: crate::plan::Shard,
        }
        let merged: Option<Merged> = self.document(super::MERGE_FILE)?;
        Ok(merged.map(|m| m.merged_from.into_iter().map(|f| f.shard).collect()))
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
    view: Option<std::sync::Arc<RedactedView>>,
}

impl RedactedView {
    /// A cell's name as written.
    fn cell(&self, raw: &str) -> String {
        self.cells.get(raw).cloned().unwrap_or_else(|| crate::redact::text(raw).into_owned())
    }

    /// An attempt as the live run would have sealed it with redaction on.
    fn seal(&self, a: &mut Attempt) {
        a.redact();
        a.cell = self.cell(&a.cell);
        a.signature = a.signature_of();
        if let Some(part) = &self.part {
            part(a);
        }
    }
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
            let mut attempt: Attempt = match serde_json::from_slice(&self.line) {
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
            if let Some(view) = &self.view {
                view.seal(&mut attempt);
            }
            return Some(Ok(attempt));
        }
    }
}

/// Length of the longest prefix of `path` made of complete lines.
pub(crate) fn valid_prefix_len(path: &Path) -> Result<u64, RecordError> {
    Ok(read_file(path)?.map_or(0, |bytes| prefix_len(&bytes)))
}

fn prefix_len(bytes: &[u8]) -> u64 {
    bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i as u64 + 1)
}

/// Opens a file of a record for reading; none when it does not exist.
///
/// What a record holds is either readable, damaged or beyond reach: a directory, a FIFO or a
/// device where a file belongs is damage (checked before opening, so a FIFO cannot block the
/// reader), and so is text that is not UTF-8 ([`read_text`]); a refusal of the system (no
/// permission, an I/O error) is [`RecordError::Io`], with its reason.
pub(crate) fn open_file(path: &Path) -> Result<Option<File>, RecordError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(RecordError::io(path, e)),
    };
    if !meta.is_file() {
        let what = if meta.is_dir() { "a directory" } else { "not a regular file" };
        return Err(RecordError::Corrupt(path.to_owned(), format!("it is {what}, where flakehunt writes a file")));
    }
    File::open(path).map(Some).map_err(|e| RecordError::io(path, e))
}

/// The bytes of a file of a record; none when it does not exist (see [`open_file`]).
pub(crate) fn read_file(path: &Path) -> Result<Option<Vec<u8>>, RecordError> {
    let Some(mut file) = open_file(path)? else { return Ok(None) };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(|e| RecordError::io(path, e))?;
    Ok(Some(bytes))
}

/// The text of a file of a record; none when it does not exist. Text that is not UTF-8 is
/// damage, never an access error.
pub(crate) fn read_text(path: &Path) -> Result<Option<String>, RecordError> {
    let Some(bytes) = read_file(path)? else { return Ok(None) };
    String::from_utf8(bytes).map(Some).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        RecordError::Corrupt(path.to_owned(), format!("it is not UTF-8 text (byte {at})"))
    })
}
