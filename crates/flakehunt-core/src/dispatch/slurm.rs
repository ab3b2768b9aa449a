//! The batch script of a Slurm job array: one array task per shard. Main function: [`script`].

use std::fmt::Write as _;
use std::path::Path;

use super::{display_word, ShardedHunt};

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

/// A path that an `#SBATCH` line cannot carry.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SlurmScriptError {
    /// sbatch reads an `#SBATCH` line up to its end: no quoting carries a newline.
    #[error("{what} {path:?} holds a newline, which an #SBATCH line cannot carry: choose a path without one")]
    Newline {
        /// Which path (`--record`, `the working directory`).
        what: &'static str,
        /// The path.
        path: String,
    },
}

impl crate::error_class::Classify for SlurmScriptError {
    fn class(&self) -> crate::error_class::ErrorClass {
        match self {
            Self::Newline { .. } => crate::error_class::ErrorClass::Usage,
        }
    }
}

/// The value of an `#SBATCH` option as sbatch's own parser reads it (`_get_argument` in
/// `src/sbatch/opt.c`): in double quotes, which group whitespace and hide `#`, with `"` and
/// `\` escaped by a backslash.
fn sbatch_value(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// The batch script that runs shard `SLURM_ARRAY_TASK_ID + 1` of `hunt`. Submit it with
/// `sbatch --array=0-(N-1)` (the script says so itself); re-submit one task with
/// `sbatch --array=K`, and it continues its shard's record.
pub fn script(hunt: &ShardedHunt, job: &SlurmJob<'_>) -> Result<String, SlurmScriptError> {
    let root = job.root.to_string_lossy();
    let chdir = job.chdir.to_string_lossy();
    for (what, path) in [("--record", &root), ("the working directory", &chdir)] {
        if path.contains(['\n', '\r']) {
            return Err(SlurmScriptError::Newline { what, path: path.to_string() });
        }
    }
    let mut s = String::from("#!/bin/sh\n");
    let _ = writeln!(s, "#SBATCH --job-name=flakehunt-{}", hunt.kind);
    let _ = writeln!(s, "#SBATCH --array=0-{}", hunt.shards.saturating_sub(1));
    let _ = writeln!(s, "#SBATCH --ntasks=1");
    // `%` is sbatch's replacement character in file names (`%A`, `%a`): `%%` is a `%`.
    let _ = writeln!(s, "#SBATCH --output={}", sbatch_value(&format!("{}/slurm-%A_%a.out", root.replace('%', "%%"))));
    let _ = writeln!(s, "#SBATCH --chdir={}", sbatch_value(&chdir));
    for option in job.options {
        // Each option as sbatch's command line would take it: quoted when it holds a quote, a
        // backslash or a `#`, which the `#SBATCH` parser would read otherwise.
        let plain = !option.contains(['"', '\\', '#', '\n', '\r']) && !option.contains(char::is_whitespace);
        let _ = writeln!(s, "#SBATCH {}", if plain { option.clone() } else { sbatch_value(option) });
    }
    let _ = writeln!(s, "#");
    let _ = writeln!(s, "# {}: shard $((SLURM_ARRAY_TASK_ID+1)) of {} of", hunt.version, hunt.shards);
    let _ = writeln!(s, "#   {}", hunt.display_command());
    let _ = writeln!(s, "# with seed {}, so that every shard runs its share of one plan.", hunt.seed);
    let _ =
        writeln!(s, "# Re-submit failed tasks with: sbatch --array=K,L {}", display_word(&format!("{root}.sbatch")));
    let _ = writeln!(
        s,
        "# Merge: flakehunt merge {}/shard-*/ --into {}",
        display_word(&root),
        display_word(&format!("{root}-merged"))
    );
    s.push_str(&hunt.shard_script("SLURM_ARRAY_TASK_ID + 1", &root));
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_holds_the_array_and_the_shard_command() {
        let opts = vec!["--partition=long".to_owned(), "--time=1:00:00".to_owned()];
        let job = SlurmJob { root: Path::new("/shared/run"), chdir: Path::new("/home/me/proj"), options: &opts };
        let s = script(&super::super::example(), &job).unwrap();
        assert!(s.starts_with("#!/bin/sh\n#SBATCH --job-name=flakehunt-sweep\n#SBATCH --array=0-3\n"), "{s}");
        assert!(s.contains("#SBATCH --output=\"/shared/run/slurm-%A_%a.out\"\n"));
        assert!(s.contains("#SBATCH --chdir=\"/home/me/proj\"\n"));
        assert!(s.contains("#SBATCH --partition=long\n#SBATCH --time=1:00:00\n"));
        assert!(s.contains("i=$((SLURM_ARRAY_TASK_ID + 1))\nroot=/shared/run\nshard=\"$root/shard-$i\""));
        assert!(s.contains("--shard \"$i/4\" --seed \"42\""));
        let status = std::process::Command::new("sh").args(["-n", "-c", &s]).status().unwrap();
        assert!(status.success());
    }

    #[test]
    fn odd_paths_are_escaped_for_sbatch() {
        assert_eq!(sbatch_value(r#"/a "b" \c #d"#), r#""/a \"b\" \\c #d""#);
        let job = SlurmJob { root: Path::new("/a%j b"), chdir: Path::new("/"), options: &[] };
        let s = script(&super::super::example(), &job).unwrap();
        assert!(s.contains("#SBATCH --output=\"/a%%j b/slurm-%A_%a.out\"\n"), "{s}");
        let opts = vec!["--comment=a\"b #c".to_owned()];
        let s = script(&super::super::example(), &SlurmJob { options: &opts, ..job.clone() }).unwrap();
        assert!(s.contains("#SBATCH \"--comment=a\\\"b #c\"\n"), "{s}");
        let job = SlurmJob { root: Path::new("/a\nb"), ..job };
        assert!(matches!(script(&super::super::example(), &job), Err(SlurmScriptError::Newline { .. })));
    }

    /// Every hostile string as an argument: one line per comment, valid shell. (The integration
    /// tests run the script and compare the argv the command receives.)
    #[test]
    fn hostile_arguments_stay_inside_their_quotes() {
        let mut hunt = super::super::example();
        hunt.command = super::super::HOSTILE.iter().map(|s| (*s).to_owned()).collect();
        let job = SlurmJob { root: Path::new("/r 'x' \"y\" $z #w"), chdir: Path::new("/"), options: &[] };
        let s = script(&hunt, &job).unwrap();
        for sh in ["sh", "bash"] {
            assert!(std::process::Command::new(sh).args(["-n", "-c", &s]).status().unwrap().success(), "{s}");
        }
        // The header (sbatch's options, then comments) is all comment lines: a newline in an
        // argument cannot end a comment there.
        let header: Vec<&str> = s.lines().skip(1).take_while(|l| !l.starts_with("i=$((")).collect();
        assert!(header.len() > 10 && header.iter().all(|l| l.starts_with('#')), "{s}");
    }
}
