//! Writing a run record as the hunt goes: manifest first, one flushed line per attempt, logs of
//! failing attempts, the summary at the end. Main type: [`Recorder`].

use std::fs::{self, File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::{Attempt, Manifest, RecordError};
use crate::events::{Event, EventSink};

/// The writer of one record directory.
#[derive(Debug)]
pub struct Recorder {
    dir: PathBuf,
    attempts: File,
    line: Vec<u8>,
}

pub(crate) const MANIFEST: &str = "manifest.json";
pub(crate) const ATTEMPTS: &str = "attempts.jsonl";
pub(crate) const LOGS: &str = "logs";

impl Recorder {
    /// Starts a new record in `dir`, which must not hold a record already. The command checks
    /// the directory with [`super::check_new`] before it writes anything into it (an adapter's
    /// build comes first); this refuses what appeared since.
    pub fn create(dir: &Path, manifest: &Manifest) -> Result<Self, RecordError> {
        if dir.join(MANIFEST).exists() || dir.join(ATTEMPTS).exists() {
            return Err(RecordError::Exists(dir.to_owned()));
        }
        fs::create_dir_all(dir.join(LOGS)).map_err(|source| RecordError::Create { path: dir.to_owned(), source })?;
        write_json(&dir.join(MANIFEST), &manifest.to_written().map_err(RecordError::Json)?)?;
        let path = dir.join(ATTEMPTS);
        let attempts =
            OpenOptions::new().create_new(true).append(true).open(&path).map_err(|e| RecordError::io(&path, e))?;
        Ok(Self { dir: dir.to_owned(), attempts, line: Vec::with_capacity(8192) })
    }

    /// Reopens an existing record to append to it, cutting a last line that a killed writer left
    /// half-written.
    pub fn resume(dir: &Path) -> Result<Self, RecordError> {
        let path = dir.join(ATTEMPTS);
        let valid = super::reader::valid_prefix_len(&path)?;
        let mut attempts =
            OpenOptions::new().read(true).write(true).open(&path).map_err(|e| RecordError::io(&path, e))?;
        attempts.set_len(valid).map_err(|e| RecordError::io(&path, e))?;
        attempts.seek(SeekFrom::End(0)).map_err(|e| RecordError::io(&path, e))?;
        let logs = dir.join(LOGS);
        if fs::metadata(&logs).is_ok_and(|m| !m.is_dir()) {
            return Err(RecordError::Corrupt(logs, "it is a file, where flakehunt writes a directory".into()));
        }
        fs::create_dir_all(&logs).map_err(|e| RecordError::io(&logs, e))?;
        let _ = fs::remove_file(dir.join(super::SUMMARY_FILE));
        Ok(Self { dir: dir.to_owned(), attempts, line: Vec::with_capacity(8192) })
    }

    /// The record directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends one attempt as a single `write` so a crash leaves whole lines only, and writes its
    /// logs first when it has some.
    pub fn append(&mut self, attempt: &Attempt, stdout: &[u8], stderr: &[u8]) -> Result<(), RecordError> {
        if let Some(log) = &attempt.log {
            let base = self.dir.join(log);
            for (ext, bytes) in [("stdout", stdout), ("stderr", stderr)] {
                let path = base.with_extension(ext);
                fs::write(&path, bytes).map_err(|e| RecordError::io(&path, e))?;
            }
        }
        self.line.clear();
        serde_json::to_writer(&mut self.line, attempt).map_err(RecordError::Json)?;
        self.line.push(b'\n');
        self.attempts.write_all(&self.line).map_err(|e| RecordError::io(&self.dir.join(ATTEMPTS), e))
    }

    /// Appends a finished run's line to `logs/worker-N.log`: what each worker of a fire level
    /// ran, in order.
    fn worker_log(&self, a: &Attempt, worker: u32, token: Option<&str>) -> Result<(), RecordError> {
        let status = match (a.exit_code, a.signal) {
            (Some(code), _) => format!("exit {code}"),
            (None, Some(sig)) => format!("signal {}", crate::analysis::signature::signal_name(sig)),
            (None, None) => "not started".to_owned(),
        };
        let mut line = format!(
            "{} {} attempt {} run {} {status} {:.3}s {}",
            a.started_at,
            a.cell,
            a.id,
            a.iteration,
            a.seconds,
            a.outcome.name()
        );
        if let Some(token) = token {
            line.push_str(&format!(" token {token}"));
        }
        line.push('\n');
        let path = self.dir.join(format!("{LOGS}/worker-{worker}.log"));
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut file| file.write_all(line.as_bytes()))
            .map_err(|source| RecordError::Io { path, source })
    }

    /// Writes any JSON document into the record (`summary.json`, `snapshot.json`, ...), redacted
    /// unless `--no-redact`: most of what it holds was redacted before, and this catches the
    /// rest (a fire level's findings, details of a hunt).
    pub fn write_document<T: serde::Serialize>(&self, name: &str, value: &T) -> Result<(), RecordError> {
        write_json(&self.dir.join(name), &redacted_json(value)?)
    }

    /// Appends one line to a JSONL side file (cells added by an adaptive plan, fire levels),
    /// redacted as [`Self::write_document`] is.
    pub fn append_line<T: serde::Serialize>(&self, name: &str, value: &T) -> Result<(), RecordError> {
        let path = self.dir.join(name);
        let mut line = serde_json::to_vec(&redacted_json(value)?).map_err(RecordError::Json)?;
        line.push(b'\n');
        let mut f = OpenOptions::new().create(true).append(true).open(&path).map_err(|e| RecordError::io(&path, e))?;
        f.write_all(&line).map_err(|e| RecordError::io(&path, e))
    }
}

/// `value` as JSON, its secrets redacted unless redaction is off.
fn redacted_json<T: serde::Serialize>(value: &T) -> Result<serde_json::Value, RecordError> {
    let mut json = serde_json::to_value(value).map_err(RecordError::Json)?;
    if crate::redact::enabled() {
        crate::redact::json(&mut json);
    }
    Ok(json)
}

/// Writes pretty JSON atomically (temporary file, then rename), so a reader never sees half a
/// document.
pub(crate) fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), RecordError> {
    let tmp = path.with_extension("json.tmp");
    let mut bytes = serde_json::to_vec_pretty(value).map_err(RecordError::Json)?;
    bytes.push(b'\n');
    fs::write(&tmp, bytes).map_err(|e| RecordError::io(&tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| RecordError::io(path, e))
}

impl EventSink for Recorder {
    fn event(&mut self, event: &Event<'_>) -> Result<(), RecordError> {
        match event {
            Event::AttemptFinished { attempt, stdout, stderr, token } => {
                self.append(attempt, stdout, stderr)?;
                match attempt.worker {
                    Some(worker) => self.worker_log(attempt, worker, *token),
                    None => Ok(()),
                }
            }
            Event::CellAdded(cell) => self.append_line(super::CELLS, cell),
            Event::LevelRecorded(report) => self.append_line(crate::fire::LEVELS, report),
            _ => Ok(()),
        }
    }
}
