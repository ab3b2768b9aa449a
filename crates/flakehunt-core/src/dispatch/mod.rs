//! Spreading one hunt over many machines: the batch script of a Slurm job array, a GitHub
//! Actions workflow and a Kubernetes Indexed Job. Each is a pure function from a
//! [`ShardedHunt`] to text, so the generators are tested without a cluster.
//!
//! Every engine runs the same shard script: shard `i` of `N` of one plan (one seed, fixed when
//! the hunt is dispatched), recorded in `<root>/shard-<i>`, resumed when that record already
//! exists (a re-submitted or retried task continues its shard instead of starting over), and
//! leaving `<root>/shard-<i>.exit` with flakehunt's exit code so the submitter can tell a shard
//! that ran (0: nothing reproduced, 1: reproduced) from one that did not. Before it runs
//! anything, the script checks that the flakehunt it finds is the version that dispatched the
//! hunt: shards of different versions may not merge.
//!
//! Every value the user gave is quoted for the language it is written into, and only there:
//! shell words with [`quote`], YAML scalars with `yaml_str` / `yaml_block`, comments with
//! [`display_word`] (one line, so a newline in an argument cannot end a comment and run the
//! rest of the argument as a command).

pub mod github;
pub mod k8s;
pub mod slurm;

use std::fmt::Write as _;

/// The exit code of a shard whose flakehunt is missing or of another version: the environment
/// refused what was asked, as for a local run.
pub const VERSION_MISMATCH_EXIT: i32 = 3;

/// One hunt split into shards, as each shard's command line needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardedHunt {
    /// How the shards invoke flakehunt (`flakehunt`, or an absolute path on a shared file system).
    pub program: String,
    /// What `flakehunt --version` prints for the version that dispatched the hunt
    /// (`flakehunt 0.1.0`); every shard checks that its flakehunt prints the same.
    pub version: String,
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
    /// holding the shard records, taken literally (it is quoted here).
    pub fn shard_script(&self, index: &str, root: &str) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "i=$(({index}))");
        let _ = writeln!(s, "root={}", quote(root));
        s.push_str("shard=\"$root/shard-$i\"\n");
        s.push_str("mkdir -p \"$root\"\n");
        s.push_str(&self.version_check(Some("echo 3 > \"$shard.exit.tmp\" && mv \"$shard.exit.tmp\" \"$shard.exit\"")));
        s.push_str(&self.snapshot_line());
        s.push_str("code=0\n");
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

    /// The shell line that writes the snapshot of the shard's machine beside its record
    /// (`shard-<i>.snapshot.json`), before the hunt, so that a shard that fails, or is killed,
    /// still leaves one to compare with; a snapshot that cannot be written does not stop the
    /// shard. The hunt's `--python` reads the interpreter it runs.
    fn snapshot_line(&self) -> String {
        let mut w: Vec<Word<'_>> = vec![Word::Lit(&self.program)];
        w.extend(self.globals.iter().map(|g| Word::Lit(g)));
        w.extend([Word::Lit("snapshot"), Word::Lit("--output"), Word::Expand("$shard.snapshot.json".into())]);
        if let Some(python) = self.options.iter().position(|o| o == "--python").and_then(|i| self.options.get(i + 1)) {
            w.extend([Word::Lit("--python"), Word::Lit(python)]);
        }
        format!(
            "# The machine this shard runs on, for `flakehunt diff` and `flakehunt matrix --against`.\n{} || echo \"flakehunt: no snapshot of this machine\" >&2\n",
            render(&w)
        )
    }

    /// Shell lines that stop the script (exit 3) unless `program --version` prints the version
    /// that dispatched the hunt; `on_mismatch` runs first (e.g. to leave the shard's exit file,
    /// so that whoever waits for the shards is not left waiting).
    pub fn version_check(&self, on_mismatch: Option<&str>) -> String {
        self.version_check_of(&quote_program(&self.program), on_mismatch)
    }

    /// [`Self::version_check`] of the flakehunt that the shell word `program` runs.
    pub(crate) fn version_check_of(&self, program: &str, on_mismatch: Option<&str>) -> String {
        let mut s = String::new();
        s.push_str("# The version that dispatched the hunt is the version that runs it: shards of\n");
        s.push_str("# different versions may not merge.\n");
        let _ = writeln!(s, "want={}", quote(&self.version));
        let _ = writeln!(s, "have=$({program} --version 2>&1) || have=\"no flakehunt runs ($have)\"");
        s.push_str("if [ \"$have\" != \"$want\" ]; then\n");
        s.push_str(
            "  echo \"flakehunt: this hunt was dispatched by $want and must run with it, but found: $have\" >&2\n",
        );
        if let Some(cmd) = on_mismatch {
            let _ = writeln!(s, "  {cmd}");
        }
        let _ = writeln!(s, "  exit {VERSION_MISMATCH_EXIT}");
        s.push_str("fi\n");
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

    /// The hunt's command line for humans, on one line (for a comment): `flakehunt sweep ... --
    /// CMD`, each word as [`display_word`] writes it.
    pub fn display_command(&self) -> String {
        let mut w: Vec<&str> = vec![&self.program];
        w.extend(self.globals.iter().map(String::as_str));
        w.push(&self.kind);
        w.extend(self.options.iter().map(String::as_str));
        if !self.command.is_empty() {
            w.push("--");
            w.extend(self.command.iter().map(String::as_str));
        }
        w.iter().map(|s| display_word(s)).collect::<Vec<_>>().join(" ")
    }
}

fn render(words: &[Word<'_>]) -> String {
    let parts: Vec<String> = words
        .iter()
        .enumerate()
        .map(|(n, w)| match w {
            Word::Lit(s) if n == 0 => quote_program(s),
            Word::Lit(s) => quote(s),
            Word::Expand(s) => format!("\"{s}\""),
        })
        .collect();
    parts.join(" ")
}

/// Quotes `s` for a POSIX shell: unchanged when it holds only safe characters, else in single
/// quotes (with `'` written as `'\''`). Inside single quotes every character is literal,
/// newlines included, so this is exact for any string (argv cannot hold a NUL). A carriage
/// return is written as `"$(printf '\r')"` instead, since sbatch refuses a script holding one
/// before a newline (it takes it for a DOS file).
pub fn quote(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_owned()
    } else {
        let parts: Vec<String> = s.split('\r').map(|p| format!("'{}'", p.replace('\'', r"'\''"))).collect();
        parts.join("\"$(printf '\\r')\"")
    }
}

/// [`quote`] for the first word of a command, where an unquoted `NAME=value` would be taken
/// for a variable assignment.
pub(crate) fn quote_program(s: &str) -> String {
    if s.contains('=') {
        format!("'{}'", s.replace('\'', r"'\''"))
    } else {
        quote(s)
    }
}

/// Whether `c` may stand as itself in a one-line comment or a YAML scalar and reads as what it
/// is: not a control character, not a character that YAML 1.1 or a terminal takes for a line
/// break, not a byte-order mark or a bidirectional override that would make the text read
/// otherwise than it runs.
fn shows_as_itself(c: char) -> bool {
    match c {
        ' '..='~' => true,
        '\u{0}'..='\u{9f}' => false,
        '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}' => false,
        '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => false,
        _ => true,
    }
}

/// One word of a command line for humans, on one line: as [`quote`] writes it, except that a
/// word with a character that does not show as itself (a newline, a tab, a control character)
/// is written in the `$'...'` form of bash and POSIX.1-2024 (`$'a\nb'`), which a reader can
/// paste into bash and which cannot end the comment it stands in.
pub fn display_word(s: &str) -> String {
    if s.chars().all(shows_as_itself) {
        return quote(s);
    }
    let mut out = String::from("$'");
    for c in s.chars() {
        match c {
            '\\' => out.push_str(r"\\"),
            '\'' => out.push_str(r"\'"),
            '\n' => out.push_str(r"\n"),
            '\t' => out.push_str(r"\t"),
            '\r' => out.push_str(r"\r"),
            c if shows_as_itself(c) => out.push(c),
            // Bytes, not `\u`: bash writes `\u` escapes as text outside a UTF-8 locale.
            c => {
                for b in c.to_string().bytes() {
                    let _ = write!(out, "\\x{b:02x}");
                }
            }
        }
    }
    out.push('\'');
    out
}

/// A YAML scalar that stays a string whatever it holds: a double-quoted scalar in which `"`,
/// `\` and every character that does not show as itself is escaped (YAML's `\n`, `\t`, `\xXX`,
/// `\uXXXX`), so that no parser folds, drops or rejects any of it.
pub(crate) fn yaml_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if shows_as_itself(c) => out.push(c),
            c if (c as u32) <= 0xff => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) <= 0xffff => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// A YAML block literal (`|`) of `text`, its lines indented by `indent` spaces, which keeps a
/// script readable; the double-quoted [`yaml_str`] instead (ending in a newline, as a block
/// does) when the literal could not carry `text` exactly: a character that does not show as
/// itself (a tab, a carriage return, a control character), a first line that starts with a
/// space or is empty, or an end other than one newline.
pub(crate) fn yaml_block(text: &str, indent: usize) -> String {
    let exact = text.ends_with('\n')
        && !text.ends_with("\n\n")
        && !text.starts_with([' ', '\n'])
        && text.chars().all(|c| c == '\n' || shows_as_itself(c));
    if !exact {
        return format!("{}\n", yaml_str(text));
    }
    let pad = " ".repeat(indent);
    let mut out = String::from("|\n");
    for line in text.split_terminator('\n') {
        if line.is_empty() {
            out.push('\n');
        } else {
            let _ = writeln!(out, "{pad}{line}");
        }
    }
    out
}

/// Strings that have broken generated files: every quoting rule above is tested against them.
/// Refuses a dispatch option whose value holds a secret (a token in an install URL, say): the
/// generated file is committed and shown in clear, as the hunt's own arguments are
/// ([`ShardedHunt::secret_refusal`]), unless `--no-redact`.
pub fn refuse_secret_options(options: &[(&str, Option<&str>)]) -> Result<(), String> {
    if !crate::redact::enabled() {
        return Ok(());
    }
    for (option, value) in options {
        let Some(value) = value else { continue };
        let redacted = crate::redact::text(value);
        if redacted != *value {
            return Err(format!(
                "{option} `{redacted}` holds a secret, which the generated file would hold in clear: \
                 give it to the jobs through the runner's secrets store, or pass --no-redact to write it anyway"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) const HOSTILE: &[&str] = &[
    "true\ntouch /tmp/flakehunt-PWNED\n#",
    "it's",
    "say \"hi\"",
    "$HOME",
    "$(touch /tmp/flakehunt-PWNED)",
    "`touch /tmp/flakehunt-PWNED`",
    "# not a comment",
    "key: value",
    "*alias",
    "&anchor",
    "{a: b}",
    "[x, y]",
    "-leading",
    "--flag=x",
    "ünïcødé ✓ 🦀",
    "\ttab",
    "crlf\r\n",
    "trailing\\",
    "'\n;touch /tmp/flakehunt-PWNED;'",
    "${{ github.token }}",
    "%j %A",
    "!tag",
    "| > ? @",
    "---",
    "...",
    "",
    " lead space",
    "trail space ",
    "line\u{2028}sep\u{85}nel\u{7f}del\u{feff}bom\u{202e}rlo",
    "\n",
    "a=b",
];

#[cfg(test)]
pub(crate) fn example() -> ShardedHunt {
    ShardedHunt {
        program: "flakehunt".into(),
        version: "flakehunt 0.1.0".into(),
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
        assert_eq!(quote("a\r\n"), "'a'\"$(printf '\\r')\"'\n'");
        assert_eq!(quote_program("A=b"), "'A=b'");
    }

    /// What `sh` makes of `words` joined as a command line: the argv `printf` receives.
    fn argv_through_sh(line: &str) -> Vec<String> {
        let out = std::process::Command::new("sh").args(["-c", &format!("printf '%s\\0' {line}")]).output().unwrap();
        assert!(out.status.success(), "{line}: {}", String::from_utf8_lossy(&out.stderr));
        let mut v: Vec<String> = String::from_utf8(out.stdout).unwrap().split('\0').map(str::to_owned).collect();
        v.pop();
        v
    }

    #[test]
    fn every_hostile_string_reaches_the_shell_as_one_exact_word() {
        let line: Vec<String> = HOSTILE.iter().map(|s| quote(s)).collect();
        assert!(!line.concat().contains('\r'));
        assert_eq!(argv_through_sh(&line.join(" ")), HOSTILE);
    }

    #[test]
    fn display_words_are_one_line_and_paste_into_bash() {
        for s in HOSTILE {
            let d = display_word(s);
            assert!(d.chars().all(shows_as_itself), "{d}");
            let out = std::process::Command::new("bash").args(["-c", &format!("printf '%s' {d}")]).output().unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap(), *s, "{d}");
        }
    }

    #[test]
    fn yaml_scalars_and_blocks_read_back_exactly() {
        for s in HOSTILE {
            let doc = format!("a: {}\n", yaml_str(s));
            let v: serde_yaml::Value = serde_yaml::from_str(&doc).unwrap_or_else(|e| panic!("{e}\n{doc}"));
            assert_eq!(v["a"].as_str(), Some(*s), "{doc}");
            let text = format!("{s}\n");
            let doc = format!("a:\n  b: {}", yaml_block(&text, 4));
            let v: serde_yaml::Value = serde_yaml::from_str(&doc).unwrap_or_else(|e| panic!("{e}\n{doc}"));
            assert_eq!(v["a"]["b"].as_str(), Some(text.as_str()), "{doc}");
        }
        assert!(yaml_block("echo hi\n", 2).starts_with("|\n"), "a plain script stays readable");
    }

    #[test]
    fn shard_script_runs_or_resumes_its_shard() {
        let s = example().shard_script("SLURM_ARRAY_TASK_ID + 1", "/shared/run");
        assert!(s.starts_with("i=$((SLURM_ARRAY_TASK_ID + 1))\nroot=/shared/run\nshard=\"$root/shard-$i\"\n"), "{s}");
        assert!(s.contains(
            "flakehunt sweep --runs 500 --profiles default,noisy --shard \"$i/4\" --seed \"42\" --record \"$shard\" \
             --quiet -- cargo test -q 'it'\\''s flaky' || code=$?"
        ));
        assert!(s.contains("flakehunt sweep --resume \"$shard\" --quiet || code=$?"));
        assert!(s.contains("> \"$shard.exit.tmp\" && mv"));
        assert!(s.contains("want='flakehunt 0.1.0'\nhave=$(flakehunt --version 2>&1)"), "{s}");
        let snapshot = s.find("flakehunt snapshot --output \"$shard.snapshot.json\" || echo").expect(&s);
        assert!(snapshot < s.find("code=0").unwrap(), "the snapshot is taken before the hunt: {s}");
    }

    #[test]
    fn shard_script_is_valid_shell() {
        let mut hunt = example();
        hunt.command = HOSTILE.iter().map(|s| (*s).to_owned()).collect();
        let s = hunt.shard_script("0 + 1", "/tmp/x y'z\n$(w)");
        for sh in ["sh", "bash"] {
            let status = std::process::Command::new(sh).args(["-n", "-c", &s]).status().unwrap();
            assert!(status.success(), "{s}");
        }
        assert!(!hunt.display_command().contains('\n'));
    }

    /// The version check, run: a flakehunt of another version, or none, stops the shard with
    /// exit 3 and a line naming both versions.
    #[test]
    fn version_check_stops_a_shard_of_another_version() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("flakehunt");
        std::fs::write(&fake, "#!/bin/sh\necho 'flakehunt 0.0.9'\n").unwrap();
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let mut hunt = example();
        for (program, found) in
            [(fake.display().to_string(), "flakehunt 0.0.9"), ("/nonexistent/fh".into(), "no flakehunt runs (")]
        {
            hunt.program = program;
            let script = format!("{}echo ran", hunt.version_check(None));
            let out = std::process::Command::new("sh").args(["-c", &script]).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(3), "{err}");
            assert!(err.contains("dispatched by flakehunt 0.1.0 and must run with it, but found: "), "{err}");
            assert!(err.contains(found), "{err}");
            assert!(out.stdout.is_empty());
        }
        std::fs::write(&fake, "#!/bin/sh\necho 'flakehunt 0.1.0'\n").unwrap();
        hunt.program = fake.display().to_string();
        let out = std::process::Command::new("sh")
            .args(["-c", &format!("{}echo ran", hunt.version_check(None))])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "ran\n");
    }
}
