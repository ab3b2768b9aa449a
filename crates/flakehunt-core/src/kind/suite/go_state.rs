//! The state a Go suite's order-dependent or non-idempotent test may trip over, as far as it
//! shows outside the tests' code: the process's environment and working directory after the
//! polluters, read by a test flakehunt adds to the package through `go test -overlay`
//! (`flakehunt_state.go`), and the files they leave in `TMPDIR` and the package's directory.
//! Package variables and other in-memory state are not examined, and nothing is put back to
//! show what matters: the finding names what differs. Main type: [`Built`].

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::state::{Against, StateDiff, StateFinding};
use super::TestId;

use crate::kind::suite::state::StateFindings;

/// The state test's source; `PACKAGE` is the package's name.
const SOURCE: &str = include_str!("flakehunt_state.go");
/// Its file name in the package: it sorts after the package's own test files, so it runs last.
const FILE_NAME: &str = "zzzz_flakehunt_state_test.go";
/// Its test's name.
pub const STATE_TEST: &str = "TestFlakehuntProcessState";
/// The variable that names the file it writes.
const OUT_VAR: &str = "FLAKEHUNT_STATE_OUT";
/// Files a directory's listing reads at most.
const MAX_FILES: usize = 20_000;
/// Bytes of a file that its digest covers.
const MAX_HASHED: u64 = 1 << 20;
/// Files up to this size are kept, so that those the polluters change can be put back.
const KEEP: u64 = 1 << 16;
/// Directories no listing goes into: nothing a test leaves there is shared state worth naming.
const SKIPPED: [&str; 3] = [".git", "vendor", "node_modules"];

/// The package's test binary with the state test built in, built at the first search of a hunt.
#[derive(Default)]
pub(crate) struct Built {
    binary: Option<Result<(tempfile::TempDir, PathBuf), String>>,
}

/// A run of the test binary as the search reads it: the head of its stdout, and how it ended
/// (as [`super::setup::how_it_ended`] says it).
pub(crate) struct Ran {
    pub stdout: Vec<u8>,
    pub how: String,
}

/// Runs an argv with variables set, in the package's directory; none when cancelled.
pub(crate) type Runner<'r> = dyn FnMut(Vec<String>, &[(String, String)]) -> io::Result<Option<Ran>> + 'r;

/// What the state test wrote.
#[derive(Debug, serde::Deserialize)]
struct Dump {
    env: Vec<String>,
    cwd: String,
}

impl Built {
    /// The process-level state that differs after `polluters` (a non-idempotent test's: its own
    /// first run) in the package in `dir`, its runs made by `run` with their files under
    /// `scratch`; none when cancelled.
    pub fn search(
        &mut self,
        dir: &Path,
        scratch: &Path,
        run: &mut Runner<'_>,
        test: &TestId,
        polluters: &[TestId],
        against: Against,
    ) -> io::Result<Option<StateFinding>> {
        let mut finding = StateFinding::process(test.clone(), polluters.to_vec(), against);
        let built = self.binary.get_or_insert_with(|| build(dir, scratch));
        let binary = match built {
            Ok((_, binary)) => binary.clone(),
            Err(why) => {
                finding.verdict = Some(format!("the state test could not be built into the package: {why}"));
                return Ok(Some(finding));
            }
        };
        let work = tempfile::Builder::new().prefix("flakehunt-state-").tempdir_in(scratch)?;
        let tmp = work.path().join("tmp");
        std::fs::create_dir(&tmp)?;
        let out = work.path().join("state.json");
        let env = [("TMPDIR".to_owned(), tmp.display().to_string()), (OUT_VAR.to_owned(), out.display().to_string())];
        let argv = |tests: &[TestId]| {
            let names: Vec<String> = tests
                .iter()
                .map(|t| regex::escape(t.split('/').next().unwrap_or(t)))
                .chain([STATE_TEST.to_owned()])
                .collect();
            vec![binary.display().to_string(), "-test.v".into(), format!("-test.run=^({})$", names.join("|"))]
        };
        let Some(alone) = run(argv(&[]), &env)? else { return Ok(None) };
        let base = read_dump(&out);
        let _ = std::fs::remove_file(&out);
        let package_before = files(dir);
        let tmp_before = files(&tmp);
        let started = SystemTime::now() - Duration::from_secs(1);
        let tests = if against == Against::FirstRun { vec![test.clone()] } else { polluters.to_vec() };
        let after_run = run(argv(&tests), &env)?;
        let package_after = files(dir);
        put_back(dir, &package_before, &package_after, started);
        let Some(after_run) = after_run else { return Ok(None) };
        let after = read_dump(&out);
        match (base, after) {
            (None, _) => {
                finding.verdict = Some(format!("the state test did not run on its own: the binary {}", alone.how))
            }
            (_, None) => {
                finding.verdict =
                    Some(format!("the state test did not run after {}: the binary {}", tests.join(", "), after_run.how))
            }
            (Some(base), Some(after)) => match ran_before(&String::from_utf8_lossy(&after_run.stdout), &tests) {
                Some(early) => {
                    finding.verdict = Some(format!(
                        "the state test ran before {early} (a parallel test, or a test file named after it)"
                    ))
                }
                None => {
                    finding.state = environment(&base, &after);
                    finding.state.extend(changed(
                        &tmp_before,
                        &files(&tmp),
                        "$TMPDIR/",
                        "file in the temporary directory",
                    ));
                    finding.state.extend(changed(
                        &package_before,
                        &package_after,
                        "",
                        "file in the package's directory",
                    ));
                }
            },
        }
        Ok(Some(finding))
    }
}

/// Builds the package in `dir` with the state test into a directory under `into`.
fn build(dir: &Path, into: &Path) -> Result<(tempfile::TempDir, PathBuf), String> {
    let out = tempfile::Builder::new().prefix("flakehunt-state-go-").tempdir_in(into).map_err(|e| e.to_string())?;
    let binary = out.path().join("state.test");
    crate::kind::adapter::go_build_with(dir, &binary, FILE_NAME, |name| {
        SOURCE.replacen("\npackage PACKAGE_test\n", &format!("\npackage {name}_test\n"), 1)
    })?;
    Ok((out, binary))
}

fn read_dump(path: &Path) -> Option<Dump> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// The first of `tests` whose run started after the state test's in a `-test.v` output.
fn ran_before(stdout: &str, tests: &[TestId]) -> Option<String> {
    let started: Vec<&str> =
        stdout.lines().filter_map(|l| l.trim_start().strip_prefix("=== RUN")).map(str::trim).collect();
    let at = started.iter().position(|t| *t == STATE_TEST)?;
    tests.iter().find(|t| started[at..].contains(&t.split('/').next().unwrap_or(t))).cloned()
}

/// The variables and the working directory that differ between `base` and `after`; flakehunt's
/// own variables, which differ from attempt to attempt, left out.
fn environment(base: &Dump, after: &Dump) -> Vec<StateDiff> {
    let vars = |d: &Dump| -> BTreeMap<String, String> {
        d.env
            .iter()
            .filter_map(|kv| kv.split_once('='))
            .filter(|(k, _)| !k.starts_with("FLAKEHUNT_"))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    };
    let (b, a) = (vars(base), vars(after));
    let mut keys: Vec<&String> = b.keys().chain(a.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut diffs: Vec<StateDiff> = keys
        .into_iter()
        .filter(|k| b.get(*k) != a.get(*k))
        .map(|k| StateDiff {
            path: format!("os.Getenv({k:?})"),
            kind: "environment variable".into(),
            before: b.get(k).map(|v| format!("{v:?}")),
            after: a.get(k).map(|v| format!("{v:?}")),
        })
        .collect();
    if base.cwd != after.cwd {
        diffs.push(StateDiff {
            path: "os.Getwd()".into(),
            kind: "working directory".into(),
            before: Some(format!("{:?}", base.cwd)),
            after: Some(format!("{:?}", after.cwd)),
        });
    }
    diffs
}

/// A file as a listing sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    /// A regular file: its size, the digest of its first [`MAX_HASHED`] bytes, and its bytes
    /// when it is small.
    File { len: u64, digest: [u8; 32], bytes: Option<Vec<u8>> },
    /// A symbolic link, by its target.
    Link(PathBuf),
    /// Anything else (a FIFO, a socket), never read.
    Other,
}

impl Seen {
    fn said(&self) -> String {
        match self {
            Seen::File { len, .. } => format!("{len} bytes"),
            Seen::Link(to) => format!("a link to {}", to.display()),
            Seen::Other => "a special file".into(),
        }
    }
}

/// The files under `root`, by their path relative to it (at most [`MAX_FILES`]).
fn files(root: &Path) -> BTreeMap<PathBuf, Seen> {
    let mut found = BTreeMap::new();
    let mut dirs = vec![PathBuf::new()];
    while let Some(rel) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&rel)) else { continue };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            if found.len() >= MAX_FILES {
                return found;
            }
            let path = rel.join(entry.file_name());
            let Ok(meta) = std::fs::symlink_metadata(root.join(&path)) else { continue };
            if meta.is_dir() {
                if !SKIPPED.iter().any(|s| entry.file_name() == *s) {
                    dirs.push(path);
                }
            } else if meta.file_type().is_symlink() {
                let to = std::fs::read_link(root.join(&path)).unwrap_or_default();
                found.insert(path, Seen::Link(to));
            } else if meta.is_file() {
                if let Some(seen) = read(&root.join(&path)) {
                    found.insert(path, seen);
                }
            } else {
                found.insert(path, Seen::Other);
            }
        }
    }
    found
}

/// A regular file's [`Seen`], read without following a link or blocking on a special file.
fn read(path: &Path) -> Option<Seen> {
    let mut f =
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path).ok()?;
    let meta = f.metadata().ok()?;
    if !meta.is_file() {
        return Some(Seen::Other);
    }
    let mut head = Vec::new();
    (&mut f).take(MAX_HASHED).read_to_end(&mut head).ok()?;
    let digest = *blake3::hash(&head).as_bytes();
    let bytes = (meta.len() <= KEEP).then_some(head);
    Some(Seen::File { len: meta.len(), digest, bytes })
}

/// What differs between two listings of one directory, each path said with `prefix`.
fn changed(
    before: &BTreeMap<PathBuf, Seen>,
    after: &BTreeMap<PathBuf, Seen>,
    prefix: &str,
    kind: &str,
) -> Vec<StateDiff> {
    let mut paths: Vec<&PathBuf> = before.keys().chain(after.keys()).collect();
    paths.sort();
    paths.dedup();
    paths
        .into_iter()
        .filter(|p| before.get(*p) != after.get(*p))
        .map(|p| StateDiff {
            path: format!("file {prefix}{}", p.display()),
            kind: kind.into(),
            before: before.get(p).map(Seen::said),
            after: after.get(p).map(Seen::said),
        })
        .collect()
}

/// Puts the directory `root` back as `before` lists it, where the polluters' run changed it
/// (`after`): removes the files written since `started`, writes back the small ones changed or
/// removed, and links as they were.
fn put_back(root: &Path, before: &BTreeMap<PathBuf, Seen>, after: &BTreeMap<PathBuf, Seen>, started: SystemTime) {
    for (rel, seen) in after {
        let path = root.join(rel);
        match before.get(rel) {
            None => {
                let written = std::fs::symlink_metadata(&path).and_then(|m| m.modified()).is_ok_and(|t| t >= started);
                if written {
                    let _ = std::fs::remove_file(&path);
                }
            }
            Some(was) if was != seen => restore(&path, was),
            Some(_) => {}
        }
    }
    for (rel, was) in before {
        if !after.contains_key(rel) {
            restore(&root.join(rel), was);
        }
    }
}

fn restore(path: &Path, was: &Seen) {
    match was {
        Seen::File { bytes: Some(bytes), .. } => {
            if std::fs::symlink_metadata(path).is_ok_and(|m| !m.is_file()) {
                let _ = std::fs::remove_file(path);
            }
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(path)
                .and_then(|mut f| std::io::Write::write_all(&mut f, bytes));
        }
        Seen::Link(to) => {
            let _ = std::fs::remove_file(path);
            let _ = std::os::unix::fs::symlink(to, path);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_that_ran_after_the_state_test_is_named() {
        let out =
            "=== RUN   TestPolluter\n--- PASS: TestPolluter\n=== RUN   TestFlakehuntProcessState\n=== RUN   TestLate\n";
        assert_eq!(ran_before(out, &["TestPolluter".into()]), None);
        assert_eq!(ran_before(out, &["TestPolluter".into(), "TestLate".into()]).as_deref(), Some("TestLate"));
    }

    #[test]
    fn the_environment_differs_by_variable_and_flakehunts_own_are_left_out() {
        let dump = |env: &[&str], cwd: &str| Dump { env: env.iter().map(|s| s.to_string()).collect(), cwd: cwd.into() };
        let base = dump(&["A=1", "FLAKEHUNT_ATTEMPT=r.1", "GONE=x"], "/p");
        let after = dump(&["A=2", "FLAKEHUNT_ATTEMPT=r.2", "NEW=y=z"], "/p/sub");
        let d: Vec<(String, Option<String>, Option<String>)> =
            environment(&base, &after).into_iter().map(|d| (d.path, d.before, d.after)).collect();
        assert_eq!(
            d,
            [
                ("os.Getenv(\"A\")".into(), Some("\"1\"".into()), Some("\"2\"".into())),
                ("os.Getenv(\"GONE\")".into(), Some("\"x\"".into()), None),
                ("os.Getenv(\"NEW\")".into(), None, Some("\"y=z\"".into())),
                ("os.Getwd()".into(), Some("\"/p\"".into()), Some("\"/p/sub\"".into())),
            ]
        );
    }

    #[test]
    fn files_written_changed_and_removed_are_named_and_put_back() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::write(p.join("kept"), "same").unwrap();
        std::fs::write(p.join("changed"), "before").unwrap();
        std::fs::write(p.join("removed"), "gone").unwrap();
        std::fs::create_dir(p.join(".git")).unwrap();
        let before = files(p);
        let started = SystemTime::now() - Duration::from_secs(1);
        std::fs::write(p.join("changed"), "after!").unwrap();
        std::fs::remove_file(p.join("removed")).unwrap();
        std::fs::write(p.join("new"), "x").unwrap();
        std::fs::write(p.join(".git").join("ignored"), "x").unwrap();
        let after = files(p);
        let named: Vec<String> = changed(&before, &after, "", "f").into_iter().map(|d| d.path).collect();
        assert_eq!(named, ["file changed", "file new", "file removed"]);
        put_back(p, &before, &after, started);
        assert_eq!(files(p), before);
        assert_eq!(std::fs::read_to_string(p.join("changed")).unwrap(), "before");
    }
}
