//! The command under test. Main type: [`Target`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// An argv run without a shell, or a string run through `sh -c`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    /// The argv (for a shell target, one element: the script).
    pub argv: Vec<String>,
    /// Run `argv[0]` through `sh -c`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shell: bool,
    /// The directory to run in, relative to where the attempts would otherwise run (the
    /// project, or a cell's clean room) unless absolute: `go test` runs a package's tests in the
    /// package's directory, and tests open `testdata/` by relative paths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
}

impl Target {
    /// A target run without a shell.
    pub fn argv(argv: Vec<String>) -> Self {
        Self { argv, shell: false, dir: None }
    }

    /// The same target, run in `dir`.
    #[must_use]
    pub fn in_dir(self, dir: PathBuf) -> Self {
        Self { dir: Some(dir), ..self }
    }

    /// The working directory of an attempt whose surroundings would run it in `base` (none: the
    /// hunt's own working directory).
    pub fn working_dir(&self, base: Option<&Path>) -> Option<PathBuf> {
        match (base, &self.dir) {
            (Some(b), Some(d)) => Some(b.join(d)),
            (None, Some(d)) => Some(d.clone()),
            (b, None) => b.map(Path::to_owned),
        }
    }

    /// A target run through `sh -c`.
    pub fn shell(script: String) -> Self {
        Self { argv: vec![script], shell: true, dir: None }
    }

    /// Program and arguments, with `{name}` placeholders replaced by `subst`.
    pub fn program_and_args(&self, subst: &[(String, String)]) -> (OsString, Vec<OsString>) {
        let fill = |s: &String| -> OsString {
            let mut out = s.clone();
            for (name, value) in subst {
                out = out.replace(&format!("{{{name}}}"), value);
            }
            out.into()
        };
        if self.shell {
            ("sh".into(), vec!["-c".into(), fill(&self.argv[0])])
        } else {
            (fill(&self.argv[0]), self.argv[1..].iter().map(fill).collect())
        }
    }

    /// The command as a user would type it.
    pub fn display(&self) -> String {
        if self.shell {
            return format!("sh -c {}", quote(&self.argv[0]));
        }
        self.argv.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ")
    }

    /// The program that must exist for the target to start.
    pub fn program(&self) -> &str {
        if self.shell {
            "sh"
        } else {
            &self.argv[0]
        }
    }

    /// Whether the target looks like a Python program (for the `tight-gil` profile).
    pub fn looks_like_python(&self) -> bool {
        let first = self.argv.first().map(String::as_str).unwrap_or("");
        let words: Vec<&str> = if self.shell {
            first.split_whitespace().collect()
        } else {
            self.argv.iter().map(String::as_str).collect()
        };
        words.iter().take(3).any(|w| {
            let base = w.rsplit('/').next().unwrap_or(w);
            base.starts_with("python") || base == "pytest" || base.ends_with(".py") || base == "uv" || base == "tox"
        })
    }
}

/// An argv as shell words that run exactly it: each word unchanged when it holds only characters
/// no shell treats specially, else in single quotes, or in `$'...'` with escapes when it holds
/// control characters (a newline in a single-quoted word would show as two lines, hiding what
/// the second one is). For showing a command that runs without a shell, such as a kill test.
pub fn shell_words(argv: &[String]) -> String {
    argv.iter().map(|w| shell_word(w)).collect::<Vec<_>>().join(" ")
}

fn shell_word(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./=:+@%".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        return s.to_owned();
    }
    if !s.chars().any(char::is_control) {
        return format!("'{}'", s.replace('\'', r"'\''"));
    }
    let mut out = String::from("$'");
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            c if c.is_control() => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("\\x{b:02x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Quotes a word for display when it would not survive a shell as is.
fn quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+{}".contains(c)) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_run_exactly_the_argv() {
        let argv = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(shell_words(&argv(&["pytest", "-k", "a and b"])), "pytest -k 'a and b'");
        assert_eq!(
            shell_words(&argv(&["echo", "it's", "", "{a,b}", "$HOME", "*"])),
            r"echo 'it'\''s' '' '{a,b}' '$HOME' '*'"
        );
        assert_eq!(shell_words(&argv(&["sh", "-c", "true\ntouch /tmp/x"])), r"sh -c $'true\ntouch /tmp/x'");
        assert_eq!(shell_words(&argv(&["a\u{1b}[2J'\\"])), r"$'a\x1b[2J\'\\'");
        assert_eq!(shell_words(&argv(&["caf\u{e9}"])), "'caf\u{e9}'");
    }

    #[test]
    fn shell_targets_run_through_sh() {
        let t = Target::shell("echo hi && false".into());
        let (p, a) = t.program_and_args(&[]);
        assert_eq!(p, "sh");
        assert_eq!(a, vec![OsString::from("-c"), OsString::from("echo hi && false")]);
        assert_eq!(t.display(), "sh -c 'echo hi && false'");
    }

    #[test]
    fn placeholders_are_substituted() {
        let t = Target::argv(vec!["pytest".into(), "-n".into(), "{workers}".into()]);
        let (_, a) = t.program_and_args(&[("workers".into(), "4".into())]);
        assert_eq!(a[1], OsString::from("4"));
    }

    #[test]
    fn a_target_directory_is_relative_to_the_attempt_base() {
        let t = Target::argv(vec!["./p.test".into()]);
        assert_eq!(t.working_dir(Some(Path::new("/room"))), Some(PathBuf::from("/room")));
        assert_eq!(t.working_dir(None), None);
        let t = t.in_dir("pkg/ledger".into());
        assert_eq!(t.working_dir(Some(Path::new("/room"))), Some(PathBuf::from("/room/pkg/ledger")));
        assert_eq!(t.working_dir(None), Some(PathBuf::from("pkg/ledger")));
        let t = Target::argv(vec!["x".into()]).in_dir("/abs".into());
        assert_eq!(t.working_dir(Some(Path::new("/room"))), Some(PathBuf::from("/abs")));
        let json = serde_json::to_string(&Target::argv(vec!["x".into()])).unwrap();
        assert_eq!(json, r#"{"argv":["x"]}"#, "records without a directory stay as they were");
    }

    #[test]
    fn python_is_recognised() {
        assert!(Target::argv(vec!["python3".into(), "t.py".into()]).looks_like_python());
        assert!(Target::argv(vec!["/usr/bin/pytest".into()]).looks_like_python());
        assert!(Target::shell("python3 -m pytest -q".into()).looks_like_python());
        assert!(!Target::argv(vec!["cargo".into(), "test".into()]).looks_like_python());
    }
}
