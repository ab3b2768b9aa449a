//! `flakehunt merge`: shard records joined into one, through the record's merge
//! ([`crate::record::Merge`]) with what only the hunt's kind knows (its plan, to count what a
//! shard did not record; its summary).

use std::path::{Path, PathBuf};

use crate::kind;
use crate::record::{self, ByKind, Merge, MergeError, Record};
use crate::schema::attempt::Attempt;
use crate::schema::summary::Summary;

/// The kinds' part of every merge.
const BY_KIND: ByKind = ByKind { not_recorded, summarize: kind::summarize };

/// Merges the shard records in `dirs` into a new record at `out` (a new or empty directory, as
/// for any new record), whose summary (also written as `summary.json`) comes back with the merge.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<(Merge, Summary), MergeError> {
    Merge::run(dirs, out, &BY_KIND)
}

/// Merges into the directory a `--slurm` hunt created for its shards (see
/// [`Merge::run_beside_shards`]).
pub(crate) fn merge_beside_shards(dirs: &[PathBuf], out: &Path) -> Result<(Merge, Summary), MergeError> {
    Merge::run_beside_shards(dirs, out, &BY_KIND)
}

/// The attempts `record`'s plan holds that are not in `done`, counted by replaying the plan as
/// `--resume` would: `(count, the first record::LISTED_IDS ids)`.
pub(crate) fn not_recorded(record: &Record, done: &[Attempt]) -> (u64, Vec<u64>) {
    let mut plan = kind::plan_of(&record.manifest);
    for a in done {
        plan.observe(a);
    }
    // A hunt whose attempts already meet its stop rule has its answer: the attempts it chose
    // before it could know (cut by its budget) are not missing.
    let mut settled = kind::plan_of(&record.manifest);
    done.iter().for_each(|a| settled.observe(a));
    if settled.settled() {
        return (0, Vec::new());
    }
    let (mut count, mut ids) = (0u64, Vec::new());
    // An adaptive plan (a matrix's confirmations) waits on results that will not come: what it
    // would run next is then unknown, and not counted.
    while let crate::plan::Next::Run(spec) = plan.next() {
        count += 1;
        if ids.len() < record::LISTED_IDS {
            ids.push(spec.id);
        }
    }
    (count, ids)
}
