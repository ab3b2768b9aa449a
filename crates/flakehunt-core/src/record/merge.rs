//! Joining the records of one plan's shards, run on several machines, into one record that
//! `report` reads like any other. Main type: [`Merge`].
//!
//! Shards of a plan share everything but their index: format version, kind, target, plan
//! settings, cells, seed and hunt parameters. A record that differs in any of these belongs to
//! another plan, and mixing it in would produce numbers about no hunt at all, so it is refused.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::writer::write_json;
use super::{Attempt, Manifest, Record, RecordError, Recorder, CELLS, SUMMARY_FILE};
use super::{ATTEMPTS, MANIFEST};
use crate::schema::plan::Shard;
use crate::schema::summary::Summary;

/// Why shards cannot be merged. Each message is one line naming what to change.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// A record could not be read or the output written.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The output already holds a record.
    #[error("{0} already holds a record: choose a new directory for --into")]
    OutExists(PathBuf),
    /// The output is a file or a directory of the user's.
    #[error("{0} exists and is not an empty directory: choose a new or empty directory for --into (nothing in it was changed)")]
    OutNotEmpty(PathBuf),
    /// Nothing to merge.
    #[error("no records to merge: give the shard record directories")]
    Empty,
    /// A record was not run with `--shard`.
    #[error("{0} is not a shard record (it was run without --shard): only shards of one plan can be merged")]
    NotAShard(PathBuf),
    /// Two records are of different plans.
    #[error("{dir} is not a shard of the same plan as {first}: its {what} differs")]
    Mismatch {
        /// The odd record.
        dir: PathBuf,
        /// The record it was compared with.
        first: PathBuf,
        /// Which part differs.
        what: &'static str,
    },
    /// Two shards hold the same attempt: they did not run one plan's parts, or one was copied
    /// into the other.
    #[error("{a} and {b} both hold attempt {id}: shards of one plan share no attempt (was one shard's record copied into another's?)")]
    Overlap {
        /// The attempt id.
        id: u64,
        /// One record.
        a: PathBuf,
        /// The other.
        b: PathBuf,
    },
    /// Two records hold the same shard.
    #[error("shard {shard} is given twice ({a} and {b}): give each shard once")]
    Duplicate {
        /// The shard.
        shard: Shard,
        /// One record.
        a: PathBuf,
        /// The other.
        b: PathBuf,
    },
}

impl crate::error_class::Classify for MergeError {
    fn class(&self) -> crate::error_class::ErrorClass {
        match self {
            Self::Record(e) => crate::error_class::Classify::class(e),
            Self::OutExists(_)
            | Self::OutNotEmpty(_)
            | Self::Empty
            | Self::NotAShard(_)
            | Self::Mismatch { .. }
            | Self::Overlap { .. }
            | Self::Duplicate { .. } => crate::error_class::ErrorClass::Usage,
        }
    }
}

/// One shard as recorded in `merge.json`.
#[derive(Debug, Clone, Serialize)]
pub struct MergedShard {
    /// Where it was read from.
    pub dir: PathBuf,
    /// Its place in the plan.
    pub shard: Shard,
    /// Its run id.
    pub run_id: String,
    /// The machine it ran on.
    pub host: String,
    /// Attempts it held.
    pub attempts: u64,
    /// Attempts its plan holds that it did not record: killed, out of budget, or cut short by
    /// a damaged file. Zero for a complete shard.
    #[serde(default)]
    pub missing_attempts: u64,
    /// The first of those attempts' ids (at most [`LISTED_IDS`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_ids: Vec<u64>,
    /// Its attempts file ends in a cut line: the shard was killed while writing, or the file was
    /// truncated. The attempt on that line is among the missing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut_line: bool,
}

/// How many missing attempt ids a merge lists per shard.
pub const LISTED_IDS: usize = 20;

/// The result of a merge.
/// What only the kind of the merged hunt knows, given by the driver (`driver::merge`) so that
/// the record does not depend on the kinds.
#[derive(Debug, Clone, Copy)]
pub struct ByKind {
    /// The attempts a shard's plan holds that the shard did not record: how many, and the first
    /// [`LISTED_IDS`] of their ids.
    pub not_recorded: fn(&Record, &[Attempt]) -> (u64, Vec<u64>),
    /// The merged record's summary.
    pub summarize: fn(&Record) -> Result<Summary, RecordError>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Merge {
    /// The shards joined, by index.
    pub merged_from: Vec<MergedShard>,
    /// Shards of the plan that were not given (the merged record is then incomplete).
    pub missing: Vec<u32>,
    /// Attempts of the given shards' plans that are not in the merged record (each shard's
    /// `missing_attempts`, summed): the record is then incomplete.
    #[serde(default)]
    pub missing_attempts: u64,
}

impl Merge {
    /// Merges the shard records in `dirs` into a new record at `out` (a new or empty directory,
    /// as for any new record), whose summary (also written as `summary.json`) comes back with
    /// the merge.
    pub fn run(dirs: &[PathBuf], out: &Path, by_kind: &ByKind) -> Result<(Self, Summary), MergeError> {
        super::check_new(out).map_err(|e| match e {
            RecordError::Exists(dir) => MergeError::OutExists(dir),
            RecordError::NotEmpty(dir) | RecordError::NotADirectory(dir) => MergeError::OutNotEmpty(dir),
            other => MergeError::Record(other),
        })?;
        Self::join(dirs, out, by_kind)
    }

    /// Merges into the directory a `--slurm` hunt created for its shards, which holds them and
    /// their logs: only a record already there is refused.
    pub fn run_beside_shards(dirs: &[PathBuf], out: &Path, by_kind: &ByKind) -> Result<(Self, Summary), MergeError> {
        if out.join(MANIFEST).exists() || out.join(ATTEMPTS).exists() {
            return Err(MergeError::OutExists(out.to_owned()));
        }
        Self::join(dirs, out, by_kind)
    }

    fn join(dirs: &[PathBuf], out: &Path, by_kind: &ByKind) -> Result<(Self, Summary), MergeError> {
        let mut records = Vec::new();
        for dir in dirs {
            let record = Record::open(dir)?;
            let shard = record.manifest.shard.ok_or_else(|| MergeError::NotAShard(dir.clone()))?;
            records.push((shard, record));
        }
        let Some((_, first)) = records.first() else { return Err(MergeError::Empty) };
        let first = first.clone();
        for (_, r) in &records[1..] {
            if let Some(what) = difference(&first.manifest, &r.manifest) {
                return Err(MergeError::Mismatch { dir: r.dir.clone(), first: first.dir.clone(), what });
            }
        }
        records.sort_by_key(|(s, _)| s.index);
        for pair in records.windows(2) {
            if pair[0].0.index == pair[1].0.index {
                return Err(MergeError::Duplicate {
                    shard: pair[0].0,
                    a: pair[0].1.dir.clone(),
                    b: pair[1].1.dir.clone(),
                });
            }
        }
        let count = records[0].0.count;
        let present: BTreeSet<u32> = records.iter().map(|(s, _)| s.index).collect();
        let missing = (1..=count).filter(|i| !present.contains(i)).collect();

        let base = &records[0].1.manifest;
        let mut manifest = base.clone();
        manifest.shard = None;
        manifest.run_id = format!("merged-{}", base.run_id);
        manifest.started_at = records.iter().map(|(_, r)| r.manifest.started_at.clone()).min().unwrap_or_default();
        let mut hosts: Vec<String> = Vec::new();
        for (_, r) in &records {
            if !hosts.contains(&r.manifest.host) {
                hosts.push(r.manifest.host.clone());
            }
        }
        manifest.host = hosts.join(",");

        // Attempts in plan order (id, then shard), so the merged record reads as the unsharded
        // run would have written it with one job, and signatures' first attempts agree.
        let mut attempts: Vec<(u64, u32, Attempt, PathBuf)> = Vec::new();
        let mut merged_from = Vec::new();
        for (shard, r) in &records {
            let held: Vec<Attempt> = r.attempts()?.collect::<Result<_, _>>()?;
            let (missing_attempts, missing_ids) = (by_kind.not_recorded)(r, &held);
            merged_from.push(MergedShard {
                dir: r.dir.clone(),
                shard: *shard,
                run_id: r.manifest.run_id.clone(),
                host: r.manifest.host.clone(),
                attempts: held.len() as u64,
                missing_attempts,
                missing_ids,
                cut_line: r.attempts_file_is_cut()?,
            });
            attempts.extend(held.into_iter().map(|a| (a.id, shard.index, a, r.dir.clone())));
        }
        let missing_attempts = merged_from.iter().map(|s| s.missing_attempts).sum();
        attempts.sort_by_key(|(id, shard, _, _)| (*id, *shard));
        if let Some(w) = attempts.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(MergeError::Overlap { id: w[0].0, a: w[0].3.clone(), b: w[1].3.clone() });
        }

        let mut recorder = Recorder::create(out, &manifest)?;
        for (_, _, attempt, dir) in &attempts {
            let (stdout, stderr) = match &attempt.log {
                Some(log) => (
                    read_or_empty(&dir.join(log).with_extension("stdout"))?,
                    read_or_empty(&dir.join(log).with_extension("stderr"))?,
                ),
                None => (Vec::new(), Vec::new()),
            };
            recorder.append(attempt, &stdout, &stderr)?;
        }
        if let Some(snapshot) = records[0].1.snapshot()? {
            write_json(&out.join(super::SNAPSHOT_FILE), &snapshot)?;
        }
        merge_side_files(&records.iter().map(|(_, r)| r.dir.as_path()).collect::<Vec<_>>(), out)?;
        let merge = Merge { merged_from, missing, missing_attempts };
        recorder.write_document(super::MERGE_FILE, &merge)?;
        let record = Record::open(out)?;
        let summary = (by_kind.summarize)(&record)?;
        recorder.write_document(SUMMARY_FILE, &summary)?;
        Ok((merge, summary))
    }
}

/// The first part of the plan in which two shard manifests differ. The number of jobs and the
/// time budget are each machine's own business and do not change which attempts a shard holds.
fn difference(a: &Manifest, b: &Manifest) -> Option<&'static str> {
    let (sa, sb) = (a.shard?, b.shard?);
    let plan_eq = {
        let (mut pa, mut pb) = (a.plan.clone(), b.plan.clone());
        pa.jobs = 0;
        pb.jobs = 0;
        pa.budget_seconds = None;
        pb.budget_seconds = None;
        pa == pb
    };
    [
        (a.format_version == b.format_version, "record format version"),
        (a.kind == b.kind, "kind of hunt"),
        (a.target == b.target, "target command"),
        (plan_eq, "plan settings (runs, stop rules, timeouts)"),
        (a.cells == b.cells, "list of cells"),
        (a.seed == b.seed, "seed"),
        (comparable(&a.extra) == comparable(&b.extra), "hunt parameters"),
        (sa.count == sb.count, "shard count"),
    ]
    .into_iter()
    .find(|(same, _)| !same)
    .map(|(_, what)| what)
}

/// The hunt parameters two shards must share: without what each machine found for itself (the
/// test binary each built into its own record, how long the build and the collection took,
/// where its files went), which does not change which attempts a shard holds.
fn comparable(extra: &super::Extra) -> super::Extra {
    let mut e = extra.clone();
    // A verification names the record it verifies where each machine keeps it; its content
    // hash says it is the same one.
    if let Some(v) = &mut e.verify {
        v.record = std::path::PathBuf::new();
    }
    if let Some(super::Adapter::GoTest { binary, build_seconds, .. }) = &mut e.adapter {
        binary.clear();
        *build_seconds = 0.0;
    }
    if let Some(s) = &mut e.suite {
        *s = s.comparable();
    }
    e
}

/// A shard's log, or nothing when the shard has none.
fn read_or_empty(path: &Path) -> Result<Vec<u8>, RecordError> {
    Ok(super::reader::read_file(path)?.unwrap_or_default())
}

/// Carries the JSONL side files (cells an adaptive plan added, fire levels...) over: every line
/// of every shard once. Cells are keyed by name, since each shard may add the same cell.
fn merge_side_files(dirs: &[&Path], out: &Path) -> Result<(), RecordError> {
    let mut names: BTreeSet<String> = BTreeSet::new();
    for dir in dirs {
        let entries = fs::read_dir(dir).map_err(|e| RecordError::io(dir, e))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".jsonl") && name != ATTEMPTS {
                names.insert(name);
            }
        }
    }
    for name in names {
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let mut text = String::new();
        for dir in dirs {
            let path = dir.join(&name);
            let Some(content) = super::reader::read_text(&path)? else { continue };
            // A last line without its newline was cut by a crash, as in attempts.jsonl.
            let complete = content.rfind('\n').map_or("", |end| &content[..end]);
            for line in complete.lines().filter(|l| !l.trim().is_empty()) {
                let key = if name == CELLS {
                    serde_json::from_str::<serde_json::Value>(line)
                        .ok()
                        .and_then(|v| v.get("name").and_then(|n| n.as_str()).map(str::to_owned))
                        .unwrap_or_else(|| line.to_owned())
                } else {
                    line.to_owned()
                };
                if seen.insert(key) {
                    text.push_str(line);
                    text.push('\n');
                }
            }
        }
        let path = out.join(&name);
        fs::write(&path, text).map_err(|e| RecordError::io(&path, e))?;
    }
    Ok(())
}

impl Merge {
    /// The line that says what was merged: `merged 3 of 4 shards (120 attempts) into DIR`.
    pub fn headline(&self, into: &Path) -> String {
        let attempts: u64 = self.merged_from.iter().map(|s| s.attempts).sum();
        let count = self.merged_from.first().map_or(0, |s| s.shard.count);
        let missing = match self.missing_attempts {
            0 => String::new(),
            n => format!(", {n} missing"),
        };
        format!(
            "merged {} of {count} shards ({attempts} attempts{missing}) into {}",
            self.merged_from.len(),
            into.display()
        )
    }

    /// What makes the merged record incomplete or suspect, one sentence each, with what to do.
    pub fn warnings(&self) -> Vec<String> {
        let count = self.merged_from.first().map_or(0, |s| s.shard.count);
        let mut out = Vec::new();
        if !self.missing.is_empty() {
            let missing: Vec<String> = self.missing.iter().map(|i| format!("{i}/{count}")).collect();
            out.push(format!("shards {} are missing: the merged record is incomplete", missing.join(", ")));
        }
        for shard in self.merged_from.iter().filter(|s| s.missing_attempts > 0) {
            let ids: Vec<String> = shard.missing_ids.iter().map(u64::to_string).collect();
            let more = if shard.missing_attempts > ids.len() as u64 { ", ..." } else { "" };
            let cut = if shard.cut_line { "; its last line was cut (killed while writing, or truncated)" } else { "" };
            // The kind of hunt the shard holds, for the command that resumes it.
            let kind = super::Record::open(&shard.dir).map_or("sweep", |r| r.manifest.kind.name());
            out.push(format!(
                "shard {} ({}) is missing {} attempts (ids {}{more}){cut}: the merged record is incomplete; \
                 continue the shard with `flakehunt {kind} --resume {}`, then merge again",
                shard.shard,
                shard.dir.display(),
                shard.missing_attempts,
                ids.join(", "),
                shard.dir.display()
            ));
        }
        out
    }
}
