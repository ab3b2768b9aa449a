//! Writing a run record as the hunt goes: manifest first, one flushed line per attempt, logs of
//! failing attempts, the summary at the end. Main type: [`Recorder`].

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::{Attempt, Manifest, RecordError, ATTEMPTS, LOGS, MANIFEST};

use crate::record::WrittenManifest;

/// The writer of one record directory.
#[derive(Debug)]
pub struct Recorder {
    dir: PathBuf,
    /// Open once the record may be written: at once for a new record, at the first write for a
    /// resumed one (see [`Resumption`]).
    attempts: Option<File>,
    /// What a resumed record needs changed before anything is added, not done yet.
    pending: Option<Resumption>,
    line: Vec<u8>,
}

/// What a resumed record needs changed before the hunt adds to it: a last line a killed writer
/// cut is dropped, the old summary goes, and a kind of hunt may drop what it runs again (fire's
/// levels cut short). None of it is done until the resume is accepted, at the first write (or
/// [`Recorder::accept`]), so a resume refused before then (a damaged record, a target that
/// cannot start, a state that cannot be copied) leaves every file of the record as it was.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resumption {
    /// Lines that replace `attempts.jsonl`; none keeps its complete lines.
    pub attempts: Option<Vec<String>>,
    /// JSONL side files replaced by these lines.
    pub side_files: Vec<(String, Vec<String>)>,
    /// Files of the record to remove (logs of the attempts run again).
    pub remove_files: Vec<PathBuf>,
    /// Directories of the record to remove with what they hold (fire's sandboxes left over).
    pub remove_trees: Vec<PathBuf>,
}

impl Recorder {
    /// Starts a new record in `dir`, which must not hold a record already. The command checks
    /// the directory with [`super::check_new`] before it writes anything into it (an adapter's
    /// build comes first); this refuses what appeared since.
    pub fn create(dir: &Path, manifest: &Manifest) -> Result<Self, RecordError> {
        if dir.join(MANIFEST).exists() || dir.join(ATTEMPTS).exists() {
            return Err(RecordError::Exists(dir.to_owned()));
        }
        fs::create_dir_all(dir.join(LOGS)).map_err(|source| RecordError::Create { path: dir.to_owned(), source })?;
        // The attempts file first: a manifest is never without one, so a record whose
        // attempts file is missing is damaged, not a record that had not started.
        let path = dir.join(ATTEMPTS);
        let attempts =
            OpenOptions::new().create_new(true).append(true).open(&path).map_err(|e| RecordError::io(&path, e))?;
        write_json(&dir.join(MANIFEST), &manifest.to_written().map_err(RecordError::Json)?)?;
        Ok(Self { dir: dir.to_owned(), attempts: Some(attempts), pending: None, line: Vec::with_capacity(8192) })
    }

    /// The writer of an existing record that a resumed hunt adds to, once it is accepted: until
    /// its first write (or [`Self::accept`]) nothing in `dir` is touched, and then `resumption`
    /// is done first.
    pub fn resume(dir: &Path, resumption: Resumption) -> Self {
        Self { dir: dir.to_owned(), attempts: None, pending: Some(resumption), line: Vec::with_capacity(8192) }
    }

    /// Accepts a resumed record: drops a last line a killed writer cut, does what the
    /// [`Resumption`] asks, removes the old summary and opens the attempts file. Done at the
    /// first write; fire calls it before the first sandbox of its ladder. Nothing for a new
    /// record, or one accepted already.
    pub fn accept(&mut self) -> Result<(), RecordError> {
        let Some(pending) = self.pending.take() else { return Ok(()) };
        let logs = self.dir.join(LOGS);
        if fs::metadata(&logs).is_ok_and(|m| !m.is_dir()) {
            return Err(RecordError::Corrupt(logs, "it is a file, where flakehunt writes a directory".into()));
        }
        let path = self.dir.join(ATTEMPTS);
        match &pending.attempts {
            Some(lines) => replace_lines(&path, lines)?,
            None => {
                let valid = super::reader::valid_prefix_len(&path)?;
                let file = OpenOptions::new().write(true).open(&path).map_err(|e| RecordError::io(&path, e))?;
                file.set_len(valid).map_err(|e| RecordError::io(&path, e))?;
            }
        }
        for (name, lines) in &pending.side_files {
            replace_lines(&self.dir.join(name), lines)?;
        }
        for file in &pending.remove_files {
            match fs::remove_file(file) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(RecordError::io(file, e)),
                _ => {}
            }
        }
        for tree in &pending.remove_trees {
            let _ = crate::copy::remove_tree(tree);
        }
        match fs::remove_file(self.dir.join(super::SUMMARY_FILE)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(RecordError::io(&self.dir.join(super::SUMMARY_FILE), e))
            }
            _ => {}
        }
        fs::create_dir_all(&logs).map_err(|e| RecordError::io(&logs, e))?;
        let attempts = OpenOptions::new().append(true).open(&path).map_err(|e| RecordError::io(&path, e))?;
        self.attempts = Some(attempts);
        Ok(())
    }

    /// The attempts file, open for appending once the record is accepted.
    fn attempts_file(&mut self) -> Result<&mut File, RecordError> {
        self.accept()?;
        let path = self.dir.join(ATTEMPTS);
        self.attempts.as_mut().ok_or_else(|| RecordError::io(&path, std::io::ErrorKind::NotFound.into()))
    }

    /// The record directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends one attempt as a single `write` so a crash leaves whole lines only, and writes its
    /// logs first when it has some.
    pub fn append(&mut self, attempt: &Attempt, stdout: &[u8], stderr: &[u8]) -> Result<(), RecordError> {
        self.accept()?;
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
        let line = std::mem::take(&mut self.line);
        let written = self.attempts_file()?.write_all(&line);
        self.line = line;
        written.map_err(|e| RecordError::io(&self.dir.join(ATTEMPTS), e))
    }

    /// Appends a finished run's line to `logs/worker-N.log`: what each worker of a fire level
    /// ran, in order.
    pub(crate) fn worker_log(&mut self, a: &Attempt, worker: u32, token: Option<&str>) -> Result<(), RecordError> {
        self.accept()?;
        let status = match (a.exit_code, a.signal) {
            (Some(code), _) => format!("exit {code}"),
            (None, Some(sig)) => format!("signal {}", crate::schema::process::signal_name(sig)),
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
    pub fn write_document<T: serde::Serialize>(&mut self, name: &str, value: &T) -> Result<(), RecordError> {
        self.accept()?;
        write_json(&self.dir.join(name), &redacted_json(value)?)
    }

    /// Appends one line to a JSONL side file (cells added by an adaptive plan, fire levels),
    /// redacted as [`Self::write_document`] is.
    pub fn append_line<T: serde::Serialize>(&mut self, name: &str, value: &T) -> Result<(), RecordError> {
        self.accept()?;
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

/// Replaces a JSONL file with `lines`, through a temporary file renamed over it, so a second
/// kill leaves the old file or the new one.
fn replace_lines(path: &Path, lines: &[String]) -> Result<(), RecordError> {
    let tmp = path.with_extension("jsonl.tmp");
    let mut file = File::create(&tmp).map_err(|e| RecordError::io(&tmp, e))?;
    for line in lines {
        writeln!(file, "{line}").map_err(|e| RecordError::io(&tmp, e))?;
    }
    file.sync_all().map_err(|e| RecordError::io(&tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| RecordError::io(path, e))
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
