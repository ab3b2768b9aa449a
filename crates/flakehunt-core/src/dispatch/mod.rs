//! Spreading one hunt over many machines: the batch script of a Slurm job array, a GitHub
//! Actions workflow and a Kubernetes Indexed Job. Each is a pure function from a
//! [`ShardedHunt`] to text, so the generators are tested without a cluster.
//!
//! Every engine runs the same shard script: shard `i` of `N` of one plan (one seed, fixed when
//! the hunt is dispatched), recorded in `<root>/shard-<i>`, resumed when that record already
//! exists (a re-submitted or retried task continues its shard instead of starting over), and
//! leaving `<root>/shard-<i>.exit` with flakehunt's exit code so the submitter can tell a shard
//! that ran (0: nothing reproduced, 1: reproduced) from one that did not.

pub mod github;
pub mod k8s;
pub mod slurm;

use std::fmt::Write as _;

/// One hunt split into shards, as each shard's command line needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardedHunt {
    /// How the shards invoke flakehunt (`flakehunt`, or an absolute path on a shared file system).
    pub program: String,
    /// Options before the subcommand (`--config FILE`).
    pub globals: Vec<String>,
    /// `sweep` or `matrix`.
    pub kind: String,
    /// The hunt's options, without `--shard`, `--record`, `--seed` and the dispatch options.
    pub options: Vec<String>,
    /// The command under test (after `--`); empty with `--shell`.
    pub command: Vec<String>,
    /// Number of shards.
    pub shards: u32,
    /// The plan's seed, shared by every shard.
    pub seed: u64,
}

/// A piece of a shell command line: literal text (quoted) or a shell expansion (double-quoted,
/// so `$i` and `$((...))` expand).
enum Word<'a> {
    Lit(&'a str),
    Expand(String),
}

impl ShardedHunt {
    /// The POSIX shell script one shard runs. `index` is a shell arithmetic expression giving
    /// the shard's 1-based index (e.g. `SLURM_ARRAY_TASK_ID + 1`); `root` is the directory
    /// holding the shard records (a shell word, expanded: may use variables).
    pub fn shard_script(&self, index: &str, root: &str) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "i=$(({index}))");
        let _ = writeln!(s, "shard=\"{root}/shard-$i\"");
        let _ = writeln!(s, "code=0");
        s.push_str("# A shard whose record exists was started before: continue it, never start it over.\n");
        s.push_str("if [ -f \"$shard/manifest.json\" ]; then\n  ");
        let mut resume: Vec<Word<'_>> = vec![Word::Lit(&self.program)];
        resume.extend(self.globals.iter().map(|g| Word::Lit(g)));
        resume.extend([Word::Lit(&self.kind), Word::Lit("--resume"), Word::Expand("$shard".into())]);
        resume.push(Word::Lit("--quiet"));
        s.push_str(&render(&resume));
        s.push_str(" || code=$?\nelse\n  ");
        s.push_str(&render(&self.fresh_words()));
        s.push_str(" || code=$?\nfi\n");
        s.push_str("echo \"$code\" > \"$shard.exit.tmp\" && mv \"$shard.exit.tmp\" \"$shard.exit\"\n");
        s.push_str("# 0: nothing reproduced, 1: reproduced; both are a shard that ran. Anything else failed.\n");
        s.push_str("if [ \"$code\" -gt 1 ]; then exit \"$code\"; fi\n");
        s
    }

    fn fresh_words(&self) -> Vec<Word<'_>> {
        let mut w: Vec<Word<'_>> = vec![Word::Lit(&self.program)];
        w.extend(self.globals.iter().map(|g| Word::Lit(g)));
        w.push(Word::Lit(&self.kind));
        w.extend(self.options.iter().map(|o| Word::Lit(o)));
        w.push(Word::Lit("--shard"));
        w.push(Word::Expand(format!("$i/{}", self.shards)));
        w.push(Word::Lit("--seed"));
        w.push(Word::Expand(self.seed.to_string()));
        w.push(Word::Lit("--record"));
        w.push(Word::Expand("$shard".into()));
        if !self.options.iter().any(|o| o == "--quiet" || o == "-q") {
            w.push(Word::Lit("--quiet"));
        }
        if !self.command.is_empty() {
            w.push(Word::Lit("--"));
            w.extend(self.command.iter().map(|c| Word::Lit(c)));
        }
        w
    }

    /// Why this hunt must not be written into a job file, unless `--no-redact`: the first
    /// argument that holds a secret (a generated script, workflow or manifest is committed,
    /// attached and shown in clear), as one line saying what to do instead.
    pub fn secret_refusal(&self) -> Option<String> {
        if !crate::redact::enabled() {
            return None;
        }
        let mut words: Vec<String> = self.globals.clone();
        words.push(self.kind.clone());
        words.extend(self.options.iter().cloned());
        words.push("--".into());
        words.extend(self.command.iter().cloned());
        let redacted = crate::redact::argv(&words);
        let i = words.iter().zip(&redacted).position(|(w, r)| w != r)?;
        // The option a redacted value belongs to, when it is a word of its own (`--password X`).
        let shown = match i.checked_sub(1).map(|p| &redacted[p]) {
            Some(option) if option.starts_with('-') && redacted[i] == crate::redact::REDACTED => {
                format!("{option} {}", redacted[i])
            }
            _ => redacted[i].clone(),
        };
        Some(format!(
            "the argument `{shown}` holds a secret, which the generated file would hold in clear: \
             give it to the jobs through the runner's environment or secrets store (a variable the target reads), \
             or pass --no-redact to write it anyway"
        ))
    }

    /// The hunt's command line for humans: `flakehunt sweep ... -- CMD`, quoted for a shell.
    pub fn display_command(&self) -> String {
        let mut w: Vec<Word<'_>> = vec![Word::Lit(&self.program)];
        w.extend(self.globals.iter().map(|g| Word::Lit(g)));
        w.push(Word::Lit(&self.kind));
        w.extend(self.options.iter().map(|o| Word::Lit(o)));
        if !self.command.is_empty() {
            w.push(Word::Lit("--"));
            w.extend(self.command.iter().map(|c| Word::Lit(c)));
        }
        render(&w)
    }
}

fn render(words: &[Word<'_>]) -> String {
    let parts: Vec<String> = words
        .iter()
        .map(|w| match w {
            Word::Lit(s) => quote(s),
            Word::Expand(s) => format!("\"{s}\""),
        })
        .collect();
    parts.join(" ")
}

/// Quotes `s` for a POSIX shell: unchanged when it holds only safe characters, else in single
/// quotes (with `'` written as `'\''`).
pub fn quote(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// A YAML scalar that stays a string whatever it holds: JSON's double-quoted form, which YAML
/// reads the same way.
pub(crate) fn yaml_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

/// A YAML block literal (`|`) of `text`, its lines indented by `indent` spaces.
pub(crate) fn yaml_block(text: &str, indent: usize) -> String {
    let pad = " ".repeat(indent);
    let mut out = String::from("|\n");
    for line in text.lines() {
        if line.is_empty() {
            out.push('\n');
        } else {
            let _ = writeln!(out, "{pad}{line}");
        }
    }
    out
}

#[cfg(test)]
pub(crate) fn example() -> ShardedHunt {
    ShardedHunt {
        program: "flakehunt".into(),
        globals: vec![],
        kind: "sweep".into(),
        options: vec!["--runs".into(), "500".into(), "--profiles".into(), "default,noisy".into()],
        command: vec!["cargo".into(), "test".into(), "-q".into(), "it's flaky".into()],
        shards: 4,
        seed: 42,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(quote("cargo"), "cargo");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("$HOME"), "'$HOME'");
    }

    #[test]
    fn shard_script_runs_or_resumes_its_shard() {
        let s = example().shard_script("SLURM_ARRAY_TASK_ID + 1", "/shared/run");
        assert!(s.starts_with("i=$((SLURM_ARRAY_TASK_ID + 1))\nshard=\"/shared/run/shard-$i\"\n"), "{s}");
        assert!(s.contains(
            "flakehunt sweep --runs 500 --profiles default,noisy --shard \"$i/4\" --seed \"42\" --record \"$shard\" \
             --quiet -- cargo test -q 'it'\\''s flaky' || code=$?"
        ));
        assert!(s.contains("flakehunt sweep --resume \"$shard\" --quiet || code=$?"));
        assert!(s.contains("> \"$shard.exit.tmp\" && mv"));
    }

    #[test]
    fn shard_script_is_valid_shell() {
        let s = example().shard_script("0 + 1", "/tmp/x");
        let status = std::process::Command::new("sh").args(["-n", "-c", &s]).status().unwrap();
        assert!(status.success(), "{s}");
    }
}
