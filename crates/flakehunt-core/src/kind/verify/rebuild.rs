//! The test binary of a Go or Rust record, built again from the code as it is now: a
//! verification that ran the binary built before the fix would call a fixed test `not-fixed`,
//! or an unchanged one `fixed` if the old binary were gone. Go's goes into the verify record
//! (`go test -c` in the package's directory, with the checks the record's was built with: the
//! goroutine leak check's overlay, the race detector), Rust's where cargo puts it (`cargo test
//! --no-run` where the record's ran). Main function: [`rebuild`].

use std::path::{Path, PathBuf};

use crate::checks::Checks;
use crate::kind::adapter::{go_binary_name, GO_BUILD_DIR};
use crate::kind::suite::setup::SuiteRunner;
use crate::record::{Adapter, Record};
use crate::spec::HuntError;

/// The old binary's path, as the record's commands name it, and the new one's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rebuilt {
    /// The binary the record ran.
    pub old: String,
    /// The one built now.
    pub new: String,
}

impl Rebuilt {
    /// `argv` with the old binary replaced by the new one.
    pub fn apply(&self, argv: &[String]) -> Vec<String> {
        argv.iter().map(|a| if *a == self.old { self.new.clone() } else { a.clone() }).collect()
    }
}

/// Rebuilds the test binary `record` ran, when it ran one (`--go-test`, `--cargo-test`, and
/// their suites), into `into` for Go; none for any other record.
pub fn rebuild(record: &Record, into: &Path) -> Result<Option<Rebuilt>, HuntError> {
    let m = &record.manifest;
    // The checks the record's binary was built with, built into the new one.
    let checks = m.plan.checks;
    let suite = m.extra.suite.as_ref().map(|s| &s.runner);
    match (suite, &m.extra.adapter) {
        (Some(SuiteRunner::Go { go, .. }), Some(Adapter::GoTest { dir, .. })) => {
            go_again(&go.binary, &go.package, &in_hunts_directory(dir, record), checks, into).map(Some)
        }
        (Some(SuiteRunner::Libtest { binary, .. }), _) => {
            cargo_again(binary, None, m.target.dir.as_deref(), record).map(Some)
        }
        (None, Some(Adapter::GoTest { binary, package, dir, test, .. })) => {
            let dir = in_hunts_directory(dir, record);
            let rebuilt = go_again(Path::new(binary), package, &dir, checks, into)?;
            if let Some(test) = test {
                let listed = list(&rebuilt.new, &["-test.list", &format!("^{test}$")], &dir)?;
                still_there(listed.lines().any(|l| l.trim() == test), test, &format!("Go package {package}"))?;
            }
            Ok(Some(rebuilt))
        }
        (None, Some(Adapter::CargoTest { binary, package, dir, test })) => {
            let rebuilt = cargo_again(Path::new(binary), package.as_deref(), Some(dir), record)?;
            let listed = list(&rebuilt.new, &["--list", "--format", "terse"], &in_hunts_directory(dir, record))?;
            let found = crate::kind::adapter::matching_tests(&listed, test).iter().any(|t| t == test);
            still_there(found, test, &format!("the test binary {}", rebuilt.new))?;
            Ok(Some(rebuilt))
        }
        _ => Ok(None),
    }
}

/// What the test binary `binary` lists with `args`, run in `dir`.
fn list(binary: &str, args: &[&str], dir: &Path) -> Result<String, HuntError> {
    let out = std::process::Command::new(binary)
        .args(args)
        .current_dir(dir)
        .stderr(std::process::Stdio::null())
        .output()
        .map_err(|e| HuntError::io(format!("cannot list the tests of {binary}"), e))?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Refuses a verification of `test` when the binary built from the code as it is now has no
/// such test (`found` false, `where` names the binary): renamed or removed, it would run no test
/// at all, and a run of no test passes (Go's `-test.run` that matches nothing exits 0, as does
/// libtest's `--exact` filter), which no verification may count as a fix.
fn still_there(found: bool, test: &str, place: &str) -> Result<(), HuntError> {
    if found {
        return Ok(());
    }
    Err(HuntError::usage(format!(
        "{place} has no test named {test} any more: a run of it would run no test and pass, which proves no fix; verify the record of a hunt of the test under its new name"
    )))
}

/// `dir` as the record's hunt named it: relative to the directory it ran in.
fn in_hunts_directory(dir: &Path, record: &Record) -> PathBuf {
    if dir.is_absolute() {
        return dir.to_owned();
    }
    let cwd = record.snapshot().ok().flatten().and_then(|s| s.get("cwd").and_then(|c| c.as_str()).map(PathBuf::from));
    cwd.map_or_else(|| dir.to_owned(), |c| c.join(dir))
}

fn go_again(old: &Path, package: &str, dir: &Path, checks: Checks, into: &Path) -> Result<Rebuilt, HuntError> {
    let binary = std::path::absolute(into.join(GO_BUILD_DIR).join(go_binary_name(package)))
        .map_err(|e| HuntError::io("cannot name the Go test binary", e))?;
    crate::kind::adapter::go_rebuild(dir, &binary, checks)?;
    Ok(Rebuilt { old: old.display().to_string(), new: binary.display().to_string() })
}

/// Cargo names a test binary `NAME-HASH`: the new one is the one of the same `NAME` (its hash
/// is the same unless the build's settings changed).
fn cargo_again(old: &Path, package: Option<&str>, dir: Option<&Path>, record: &Record) -> Result<Rebuilt, HuntError> {
    let dir = dir.map(|d| in_hunts_directory(d, record));
    let stem = |p: &Path| {
        let name = p.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        name.rsplit_once('-').map_or(name.clone(), |(n, _)| n.to_owned())
    };
    let built = crate::kind::adapter::cargo_build(package, dir.as_deref())?;
    let new =
        built.iter().find(|b| b.executable == old).or_else(|| built.iter().find(|b| stem(&b.executable) == stem(old)));
    let Some(new) = new else {
        return Err(HuntError::usage(format!(
            "`cargo test --no-run` no longer builds a test binary named {}: verify needs the record's test binary rebuilt",
            stem(old)
        )));
    };
    Ok(Rebuilt { old: old.display().to_string(), new: new.executable.display().to_string() })
}
