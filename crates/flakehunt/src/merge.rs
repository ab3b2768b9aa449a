//! `flakehunt merge`: join shard records into one record.

use flakehunt_core::record::{Merge, MergeError};

use crate::cli::MergeArgs;
use crate::exit;

/// Runs `flakehunt merge`; returns the exit code.
pub fn run(args: &MergeArgs) -> anyhow::Result<i32> {
    let (merge, _) = Merge::run(&args.dirs, &args.into).map_err(|e| match e {
        MergeError::Record(r) => exit::record(r),
        other => exit::usage(other.to_string()),
    })?;
    let attempts: u64 = merge.merged_from.iter().map(|s| s.attempts).sum();
    let count = merge.merged_from.first().map_or(0, |s| s.shard.count);
    eprintln!(
        "merged {} of {count} shards ({attempts} attempts) into {}",
        merge.merged_from.len(),
        args.into.display()
    );
    if !merge.missing.is_empty() {
        let missing: Vec<String> = merge.missing.iter().map(|i| format!("{i}/{count}")).collect();
        eprintln!("flakehunt: warning: shards {} are missing: the merged record is incomplete", missing.join(", "));
    }
    if merge.duplicate_ids > 0 {
        eprintln!(
            "flakehunt: warning: {} attempt ids appear in more than one shard: were the shards run from the same plan?",
            merge.duplicate_ids
        );
    }
    eprintln!("report it with: flakehunt report {}", args.into.display());
    Ok(exit::OK)
}
