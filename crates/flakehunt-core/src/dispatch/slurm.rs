//! The batch script of a Slurm job array: one array task per shard. Main function: [`script`].

use std::fmt::Write as _;
use std::path::Path;

use super::{quote, ShardedHunt};

/// Where and how the array runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlurmJob<'a> {
    /// The directory of the shard records, on a path every node shares (`--record`).
    pub root: &'a Path,
    /// The working directory of the tasks (relative paths in the command resolve from it).
    pub chdir: &'a Path,
    /// Extra `sbatch` options, one per `#SBATCH` line (e.g. `--partition=x`, `--time=1:00:00`).
    pub options: &'a [String],
}

/// The batch script that runs shard `SLURM_ARRAY_TASK_ID + 1` of `hunt`. Submit it with
/// `sbatch --array=0-(N-1)` (the script says so itself); re-submit one task with
/// `sbatch --array=K`, and it continues its shard's record.
pub fn script(hunt: &ShardedHunt, job: &SlurmJob<'_>) -> String {
    let root = job.root.display().to_string();
    let mut s = String::from("#!/bin/sh\n");
    let _ = writeln!(s, "#SBATCH --job-name=flakehunt-{}", hunt.kind);
    let _ = writeln!(s, "#SBATCH --array=0-{}", hunt.shards.saturating_sub(1));
    let _ = writeln!(s, "#SBATCH --ntasks=1");
    let _ = writeln!(s, "#SBATCH --output={root}/slurm-%A_%a.out");
    let _ = writeln!(s, "#SBATCH --chdir={}", job.chdir.display());
    for option in job.options {
        let _ = writeln!(s, "#SBATCH {option}");
    }
    let _ = writeln!(s, "#");
    let _ = writeln!(
        s,
        "# flakehunt {}: shard $((SLURM_ARRAY_TASK_ID+1)) of {} of",
        env!("CARGO_PKG_VERSION"),
        hunt.shards
    );
    let _ = writeln!(s, "#   {}", hunt.display_command());
    let _ = writeln!(s, "# with seed {}, so that every shard runs its share of one plan.", hunt.seed);
    let _ = writeln!(s, "# Re-submit failed tasks with: sbatch --array=K,L {}", quote(&format!("{root}.sbatch")));
    let _ = writeln!(s, "# Merge: flakehunt merge {root}/shard-*/ --into {root}-merged");
    s.push_str(&hunt.shard_script("SLURM_ARRAY_TASK_ID + 1", &shell_dq(&root)));
    s
}

/// Escapes `s` for use inside double quotes.
fn shell_dq(s: &str) -> String {
    s.chars()
        .flat_map(|c| match c {
            '"' | '\\' | '$' | '`' => vec!['\\', c],
            c => vec![c],
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_holds_the_array_and_the_shard_command() {
        let opts = vec!["--partition=long".to_owned(), "--time=1:00:00".to_owned()];
        let job = SlurmJob { root: Path::new("/shared/run"), chdir: Path::new("/home/me/proj"), options: &opts };
        let s = script(&super::super::example(), &job);
        assert!(s.starts_with("#!/bin/sh\n#SBATCH --job-name=flakehunt-sweep\n#SBATCH --array=0-3\n"), "{s}");
        assert!(s.contains("#SBATCH --output=/shared/run/slurm-%A_%a.out\n"));
        assert!(s.contains("#SBATCH --chdir=/home/me/proj\n"));
        assert!(s.contains("#SBATCH --partition=long\n#SBATCH --time=1:00:00\n"));
        assert!(s.contains("i=$((SLURM_ARRAY_TASK_ID + 1))\nshard=\"/shared/run/shard-$i\""));
        assert!(s.contains("--shard \"$i/4\" --seed \"42\""));
        let status = std::process::Command::new("sh").args(["-n", "-c", &s]).status().unwrap();
        assert!(status.success());
    }

    #[test]
    fn odd_paths_are_escaped() {
        assert_eq!(shell_dq(r#"/a "b" $c"#), r#"/a \"b\" \$c"#);
    }
}
