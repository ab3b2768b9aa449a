//! `flakehunt merge`: join shard records into one record.

use flakehunt_core::record::{Merge, MergeError};

use std::path::{Path, PathBuf};

use crate::exit;

/// The kind of hunt a shard record holds (`sweep`, `matrix`), for the command that resumes it.
fn merge_kind(dir: &std::path::Path) -> &'static str {
    flakehunt_core::record::Record::open(dir).map_or("sweep", |r| r.manifest.kind.name())
}

/// Runs `flakehunt merge`: the shard records `dirs` joined `into` one.
pub fn run(dirs: &[PathBuf], into: &Path) -> anyhow::Result<exit::Done> {
    let (merge, _) = Merge::run(dirs, into).map_err(|e| match e {
        MergeError::Record(r) => exit::record(r),
        other => exit::usage(other.to_string()),
    })?;
    let attempts: u64 = merge.merged_from.iter().map(|s| s.attempts).sum();
    let count = merge.merged_from.first().map_or(0, |s| s.shard.count);
    let missing = match merge.missing_attempts {
        0 => String::new(),
        n => format!(", {n} missing"),
    };
    eprintln!(
        "merged {} of {count} shards ({attempts} attempts{missing}) into {}",
        merge.merged_from.len(),
        into.display()
    );
    if !merge.missing.is_empty() {
        let missing: Vec<String> = merge.missing.iter().map(|i| format!("{i}/{count}")).collect();
        eprintln!("flakehunt: warning: shards {} are missing: the merged record is incomplete", missing.join(", "));
    }
    for shard in merge.merged_from.iter().filter(|s| s.missing_attempts > 0) {
        let ids: Vec<String> = shard.missing_ids.iter().map(u64::to_string).collect();
        let more = if shard.missing_attempts > ids.len() as u64 { ", ..." } else { "" };
        let cut = if shard.cut_line { "; its last line was cut (killed while writing, or truncated)" } else { "" };
        eprintln!(
            "flakehunt: warning: shard {} ({}) is missing {} attempts (ids {}{more}){cut}: the merged record is incomplete; \
             continue the shard with `flakehunt {} --resume {}`, then merge again",
            shard.shard,
            shard.dir.display(),
            shard.missing_attempts,
            ids.join(", "),
            merge_kind(&shard.dir),
            shard.dir.display()
        );
    }
    if merge.duplicate_ids > 0 {
        eprintln!(
            "flakehunt: warning: {} attempt ids appear in more than one shard: were the shards run from the same plan?",
            merge.duplicate_ids
        );
    }
    eprintln!("report it with: flakehunt report {}", into.display());
    Ok(exit::Done::Ok)
}
