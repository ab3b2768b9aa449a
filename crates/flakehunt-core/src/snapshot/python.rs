//! The Python interpreter a hunt runs and the distributions it can import, read from that
//! interpreter itself: one short script that walks `sys.path` as `importlib.metadata` does
//! (first match wins) and reads each distribution's name and version from its `.dist-info`
//! directory name, or from the first lines of `METADATA` / `PKG-INFO` where the name does not
//! say. No pip, no metadata parsing of whole files: a few tens of milliseconds beyond the
//! interpreter's start. Main type: [`Python`].

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::commands::{Probe, Ran};

/// How long the interpreter may take to list its distributions.
pub(super) const TIMEOUT: Duration = Duration::from_secs(5);

/// Bytes of its output kept: thousands of distributions fit.
const CAP: usize = 4 << 20;

/// The script, for Python 2.7 and 3.x alike: it prints one JSON object.
const SCRIPT: &str = r#"
import json, os, re, sys
def norm(n):
    return re.sub(r"[-_.]+", "-", n).lower()
def headers(path):
    name = version = None
    try:
        with open(path, "rb") as f:
            for raw in f:
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                if not line:
                    break
                if name is None and line.startswith("Name:"):
                    name = line[5:].strip()
                elif version is None and line.startswith("Version:"):
                    version = line[8:].strip()
                if name and version:
                    break
    except (IOError, OSError):
        pass
    return name, version
packages = {}
for entry in sys.path:
    try:
        names = sorted(os.listdir(entry or "."))
    except (OSError, IOError):
        continue
    for n in names:
        if n.startswith("~"):
            continue
        if n.endswith(".dist-info"):
            meta = "METADATA"
        elif n.endswith(".egg-info"):
            meta = "PKG-INFO"
        else:
            continue
        path = os.path.join(entry or ".", n)
        parts = n.rsplit(".", 1)[0].split("-")
        if meta == "METADATA" and len(parts) == 2 and parts[0] and parts[1]:
            name, version = parts
        else:
            name, version = headers(os.path.join(path, meta) if os.path.isdir(path) else path)
        if name and version:
            packages.setdefault(norm(name), version)
impl = getattr(sys, "implementation", None)
print(json.dumps({
    "version": ".".join(str(p) for p in sys.version_info[:3]),
    "implementation": impl.name if impl else "cpython",
    "executable": sys.executable,
    "prefix": sys.prefix,
    "base_prefix": getattr(sys, "base_prefix", getattr(sys, "real_prefix", sys.prefix)),
    "packages": packages,
}))
"#;

/// The interpreter a hunt runs and what it can import.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Python {
    /// The interpreter as the hunt runs it (`python3`, `.venv/bin/python`).
    pub program: String,
    /// Why this one: `--python`, `VIRTUAL_ENV`, `./.venv`, `PATH` or `the target`.
    pub chosen_by: String,
    /// `sys.executable`: the file that ran.
    pub executable: Option<String>,
    /// `major.minor.micro`.
    pub version: Option<String>,
    /// `sys.implementation.name` (`cpython`, `pypy`).
    pub implementation: Option<String>,
    /// `sys.prefix`.
    pub prefix: Option<String>,
    /// `sys.base_prefix`: another directory than `prefix` in a virtualenv.
    pub base_prefix: Option<String>,
    /// The importable distributions, by normalised name (PEP 503), with their versions.
    pub packages: BTreeMap<String, String>,
    /// Why the interpreter could not be read, when it could not.
    pub error: Option<String>,
}

impl Python {
    /// Whether the interpreter runs in a virtualenv.
    pub fn in_virtualenv(&self) -> bool {
        matches!((&self.prefix, &self.base_prefix), (Some(p), Some(b)) if p != b)
    }
}

/// The probe that lists `program`'s distributions.
pub(super) fn probe(program: &Path) -> Probe {
    let mut command = std::process::Command::new(program);
    command.args(["-c", SCRIPT]).env("PYTHONDONTWRITEBYTECODE", "1");
    Probe { command, cap: CAP, timeout: TIMEOUT }
}

/// What the probe of `program` (chosen by `chosen_by`) found.
pub(super) fn read(program: &Path, chosen_by: &str, ran: &Ran) -> Python {
    let mut python =
        Python { program: program.display().to_string(), chosen_by: chosen_by.to_owned(), ..Python::default() };
    let Some(stdout) = ran.success() else {
        python.error = ran.failure();
        return python;
    };
    match parse(stdout) {
        Some(found) => Python { program: python.program, chosen_by: python.chosen_by, ..found },
        None => {
            let text = String::from_utf8_lossy(stdout);
            let head: String = text.trim().chars().take(200).collect();
            python.error = Some(format!("unexpected output: {head}"));
            python
        }
    }
}

/// The script's JSON object.
fn parse(stdout: &[u8]) -> Option<Python> {
    #[derive(Deserialize)]
    struct Printed {
        version: Option<String>,
        implementation: Option<String>,
        executable: Option<String>,
        prefix: Option<String>,
        base_prefix: Option<String>,
        #[serde(default)]
        packages: BTreeMap<String, String>,
    }
    // The last line: a `sitecustomize` may print before it.
    let text = String::from_utf8_lossy(stdout);
    let line = text.lines().rev().find(|l| l.trim_start().starts_with('{'))?;
    let p: Printed = serde_json::from_str(line).ok()?;
    Some(Python {
        executable: p.executable.filter(|e| !e.is_empty()),
        version: p.version,
        implementation: p.implementation,
        prefix: p.prefix,
        base_prefix: p.base_prefix,
        packages: p.packages,
        ..Python::default()
    })
}

/// The interpreter a hunt of `argv` runs, when its program is one (`python3`, `/x/bin/python`).
pub fn interpreter_of(argv: &[String]) -> Option<&str> {
    let program = argv.first()?;
    let name = program.rsplit('/').next().unwrap_or(program);
    let version = name.strip_prefix("python")?;
    version.chars().all(|c| c.is_ascii_digit() || c == '.').then_some(program.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripts_object_is_read_after_anything_printed_before_it() {
        let out = b"hello from sitecustomize\n{\"version\": \"3.11.7\", \"implementation\": \"cpython\", \"executable\": \"/v/bin/python\", \"prefix\": \"/v\", \"base_prefix\": \"/usr\", \"packages\": {\"requests\": \"2.31.0\"}}\n";
        let p = parse(out).unwrap();
        assert_eq!(p.version.as_deref(), Some("3.11.7"));
        assert_eq!(p.packages["requests"], "2.31.0");
        assert!(p.in_virtualenv());
        assert!(parse(b"Traceback (most recent call last):\n").is_none());
    }

    #[test]
    fn interpreters_are_told_by_their_name() {
        let argv = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(interpreter_of(&argv(&["python3", "t.py"])), Some("python3"));
        assert_eq!(interpreter_of(&argv(&["/v/bin/python", "-m", "pytest"])), Some("/v/bin/python"));
        assert_eq!(interpreter_of(&argv(&["python3.11"])), Some("python3.11"));
        assert_eq!(interpreter_of(&argv(&["python3-config"])), None);
        assert_eq!(interpreter_of(&argv(&["pytest"])), None);
        assert_eq!(interpreter_of(&[]), None);
    }

    /// A real interpreter with a distribution of a known version on its path: found with its
    /// normalised name and version, whichever way its metadata is laid out.
    #[test]
    fn a_real_interpreter_lists_the_distributions_on_its_path() {
        let Some(python) = ["python3", "/usr/bin/python3"]
            .into_iter()
            .find(|p| std::process::Command::new(p).arg("-c").arg("").output().is_ok_and(|o| o.status.success()))
        else {
            eprintln!("skipped: no python3 here");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("Flaky_Thing-1.2.3.dist-info")).unwrap();
        std::fs::write(dir.path().join("Flaky_Thing-1.2.3.dist-info/METADATA"), "Name: Flaky_Thing\nVersion: 1.2.3\n")
            .unwrap();
        // A development install's egg-info: no version in its name.
        std::fs::create_dir_all(dir.path().join("local_pkg.egg-info")).unwrap();
        std::fs::write(
            dir.path().join("local_pkg.egg-info/PKG-INFO"),
            "Metadata-Version: 2.1\nName: local.pkg\nVersion: 0.0.1.dev0\n\nlong description\nVersion: 9\n",
        )
        .unwrap();
        let mut probe = probe(Path::new(python));
        probe.command.env("PYTHONPATH", dir.path());
        let ran = super::super::commands::run_all(vec![probe], None, None);
        let found = read(Path::new(python), "PATH", &ran[0]);
        assert_eq!(found.error, None);
        assert_eq!(found.packages.get("flaky-thing").map(String::as_str), Some("1.2.3"), "{found:?}");
        assert_eq!(found.packages.get("local-pkg").map(String::as_str), Some("0.0.1.dev0"), "{found:?}");
        assert!(found.version.is_some());
    }
}
