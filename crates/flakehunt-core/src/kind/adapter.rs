//! Test-runner adapters: resolve one test once (build its binary, find it), so that each attempt
//! runs the test directly instead of re-running a build and a test plan. Main function: [`target`].

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::checks::Checks;
use crate::plan::Target;
use crate::record::Adapter;
use crate::spec::{HuntError, TargetRequest};

/// What a build applied of the checks asked of it, and the line that says why one was left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Built {
    /// The checks the attempts of this target run with.
    pub checks: Checks,
    /// Why a check asked for is not applied (a package's own `TestMain`), to say once.
    pub note: Option<String>,
}

impl Built {
    /// What applies of `asked` to a command given as it is: the thread check, when it looks
    /// like Python, or when `--thread-check` was `given` for a command that may start Python
    /// (`make test`, a shell script): its hook is loaded by any Python interpreter the command
    /// starts, through `PYTHONPATH`, and does nothing to anything else. A Rust test binary is
    /// checked through `--cargo-test`, which runs it with the option that shows its threads'
    /// panics.
    pub fn of_command(target: &Target, asked: Checks, given: bool) -> Self {
        let python = target.looks_like_python();
        let thread_exceptions = asked.thread_exceptions && (python || given);
        let note = (thread_exceptions && !python).then(|| {
            format!(
                "--thread-check: {} does not look like Python: the thread check's hooks are on PYTHONPATH for any Python it starts, and nothing else is checked",
                target.display()
            )
        });
        Self { checks: Checks { thread_exceptions, ..Checks::default() }, note }
    }
}

/// The plugins that alter re-runs or order, disabled for `--pytest` (a `-p no:X` for a plugin
/// that is not installed is accepted by pytest).
pub const PYTEST_NO_PLUGINS: [&str; 4] = ["randomly", "rerunfailures", "flaky", "cacheprovider"];

/// The target an adapter option asks for and what the manifest records about it (`extra.adapter`),
/// or none when no adapter option is given. A binary an adapter builds goes into the `record`
/// directory, with the checks of `asked` its runner takes (see [`go_test`]); collecting
/// (`--pytest`) or checking a subtest's name (`--go-test`) is bounded by `timeout`.
pub fn target(
    args: &TargetRequest,
    record: &Path,
    asked: Checks,
    timeout: Duration,
) -> Result<Option<(Target, Adapter, Built)>, HuntError> {
    if let Some(name) = &args.cargo_test {
        return cargo_test(name, args.package.as_deref(), asked).map(Some);
    }
    if !args.go_test.is_empty() {
        return go_test(&args.go_test, record, asked, Some(timeout)).map(Some);
    }
    if let Some(nodes) = &args.pytest {
        let [node] = nodes.as_slice() else {
            return Err(HuntError::usage(
                "--pytest takes one node id here (flakehunt suite takes the paths to collect)",
            ));
        };
        return pytest(node, args.python.as_deref(), asked, timeout).map(Some);
    }
    Ok(None)
}

/// `--cargo-test NAME [-p PKG]`: `cargo test --no-run --message-format=json` once, then the test
/// binary that lists NAME, run as `BIN NAME --exact` in its package's directory, as `cargo test`
/// runs it (tests open their data files by paths relative to it). The thread check of `asked`
/// adds `--show-output`, which prints what a passing test's threads printed (see
/// [`crate::checks::rust`]).
fn cargo_test(name: &str, package: Option<&str>, asked: Checks) -> Result<(Target, Adapter, Built), HuntError> {
    if name.is_empty() {
        return Err(HuntError::usage(
            "--cargo-test takes the NAME of one test here (flakehunt suite takes the whole suite)",
        ));
    }
    let binaries = cargo_build(package, None)?;
    let mut found: Vec<(&TestBinary, String)> = Vec::new();
    for bin in &binaries {
        let list = Command::new(&bin.executable)
            .args(["--list", "--format", "terse"])
            .stderr(Stdio::null())
            .output()
            .map_err(|e| HuntError::io(format!("cannot list the tests of {}", bin.executable.display()), e))?;
        for test in matching_tests(&String::from_utf8_lossy(&list.stdout), name) {
            found.push((bin, test));
        }
    }
    let (bin, test) = match found.len() {
        0 => {
            return Err(HuntError::usage(format!(
                "no test named '{name}' in the {} test binaries `cargo test --no-run` built{}",
                binaries.len(),
                if package.is_none() { " (name the package with -p PKG?)" } else { "" }
            )))
        }
        1 => found.remove(0),
        _ => {
            let places: Vec<String> =
                found.iter().map(|(b, t)| format!("{t} in {}", file_name(&b.executable))).collect();
            return Err(HuntError::usage(format!(
                "'{name}' names {} tests ({}): give the full path of one, or -p PKG",
                found.len(),
                places.join(", ")
            )));
        }
    };
    let binary = bin.executable.display().to_string();
    let dir = relative_to_cwd(&bin.package_dir)?;
    let mut argv = vec![binary.clone(), test.clone(), "--exact".into()];
    let mut built = Built::default();
    if asked.thread_panics {
        argv.push(crate::checks::rust::SHOW_OUTPUT.into());
        built.checks.thread_panics = true;
    }
    let target = Target::argv(argv).in_dir(dir.clone());
    Ok((target, Adapter::CargoTest { test, binary, package: package.map(str::to_owned), dir }, built))
}

/// `cargo test --no-run --message-format=json [-p PKG]` once (in `dir`, else here): the test
/// executables it built.
pub(crate) fn cargo_build(package: Option<&str>, dir: Option<&Path>) -> Result<Vec<TestBinary>, HuntError> {
    let mut build = Command::new("cargo");
    build.args(["test", "--no-run", "--message-format=json"]);
    if let Some(dir) = dir {
        build.current_dir(dir);
    }
    if let Some(p) = package {
        build.args(["-p", p]);
    }
    // Cargo's own progress goes to our stderr, so a long build is visible.
    let output =
        build.stderr(Stdio::inherit()).output().map_err(|e| HuntError::io("cannot run `cargo test --no-run`", e))?;
    if !output.status.success() {
        return Err(HuntError::usage(format!("`cargo test --no-run` failed ({}): fix the build first", output.status)));
    }
    let binaries = test_executables(&String::from_utf8_lossy(&output.stdout));
    if binaries.is_empty() {
        return Err(HuntError::usage("`cargo test --no-run` built no test binary"));
    }
    Ok(binaries)
}

/// A test executable cargo built, and the directory of the package it tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestBinary {
    /// The executable.
    pub executable: PathBuf,
    /// The directory of the package's `Cargo.toml`, where `cargo test` runs it.
    pub package_dir: PathBuf,
}

/// The test executables in cargo's JSON messages: `compiler-artifact`s built with `profile.test`.
pub fn test_executables(messages: &str) -> Vec<TestBinary> {
    let mut out: Vec<TestBinary> = messages
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["profile"]["test"] == true)
        .filter_map(|m| {
            let executable = PathBuf::from(m["executable"].as_str()?);
            let package_dir = Path::new(m["manifest_path"].as_str()?).parent()?.to_owned();
            Some(TestBinary { executable, package_dir })
        })
        .collect();
    out.dedup();
    out
}

/// `dir` relative to the hunt's working directory when inside it, so that a clean room runs in
/// its own copy; absolute otherwise.
pub(crate) fn relative_to_cwd(dir: &Path) -> Result<PathBuf, HuntError> {
    let cwd = std::env::current_dir().map_err(|e| HuntError::io("cannot read the current directory", e))?;
    Ok(match dir.strip_prefix(&cwd) {
        Ok(rel) if rel.as_os_str().is_empty() => PathBuf::from("."),
        Ok(rel) => rel.to_owned(),
        Err(_) => dir.to_owned(),
    })
}

/// The tests of a libtest `--list` output that NAME names: exactly, or as the last part of
/// their path (`flaky` names `tests::flaky`). An exact name wins over suffixes.
pub fn matching_tests(list: &str, name: &str) -> Vec<String> {
    let tests: Vec<&str> = list.lines().filter_map(|l| l.strip_suffix(": test")).collect();
    if tests.contains(&name) {
        return vec![name.to_owned()];
    }
    let suffix = format!("::{name}");
    tests.into_iter().filter(|t| t.ends_with(&suffix)).map(str::to_owned).collect()
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// The directory of a record that holds the Go test binary, so `--resume` finds it.
pub const GO_BUILD_DIR: &str = "go-test";

/// Removes what an adapter built into a record that is being discarded.
pub fn discard_build(record: &Path) {
    let dir = record.join(GO_BUILD_DIR);
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().ends_with(".test") {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    let _ = std::fs::remove_dir(&dir);
}

/// Splits the values of `--go-test`: `PKG`, or `PKG -run NAME`.
pub fn go_args(values: &[String]) -> Result<(String, Option<String>), String> {
    // go reads a leading '-' as a flag, and `go test -c -- PKG` builds the current directory.
    if values.first().is_some_and(|p| p.starts_with('-')) {
        return Err(format!("--go-test takes the package first (PKG -run NAME), not '{}'", values.join(" ")));
    }
    match values {
        [pkg] => Ok((pkg.clone(), None)),
        [pkg, flag, name] if matches!(flag.as_str(), "-run" | "--run" | "-test.run") => {
            Ok((pkg.clone(), Some(name.clone())))
        }
        _ => Err(format!("--go-test takes PKG or PKG -run NAME, not '{}'", values.join(" "))),
    }
}

/// One Go package as `go list` describes it.
#[derive(Debug, PartialEq, Eq)]
pub struct GoPackage {
    /// The import path (`example.com/ledger/pkg/ledger`).
    pub import_path: String,
    /// Its source directory, where `go test` runs its tests.
    pub dir: PathBuf,
    /// Whether it has `_test.go` files (in the package or an external `_test` package).
    pub has_tests: bool,
    /// The package's name (its package clause).
    pub name: String,
    /// Its test files (of the package, then of the external `_test` package), in `dir`.
    pub test_files: Vec<String>,
}

/// The `-f` template of `go list` that [`parse_go_list`] reads.
const GO_LIST_FORMAT: &str =
    "{{.ImportPath}}\t{{.Dir}}\t{{.Name}}\t{{join .TestGoFiles \"/\"}}\t{{join .XTestGoFiles \"/\"}}";

/// Reads `go list -f GO_LIST_FORMAT` output: one package per line (file names hold no `/`).
pub fn parse_go_list(text: &str) -> Vec<GoPackage> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split('\t');
            let (path, dir, name, tests, xtests) = (f.next()?, f.next()?, f.next()?, f.next()?, f.next()?);
            let test_files: Vec<String> =
                tests.split('/').chain(xtests.split('/')).filter(|f| !f.is_empty()).map(str::to_owned).collect();
            Some(GoPackage {
                import_path: path.to_owned(),
                dir: PathBuf::from(dir),
                has_tests: !test_files.is_empty(),
                name: name.to_owned(),
                test_files,
            })
        })
        .collect()
}

/// The binary name for a package: its import path with separators made safe.
pub fn go_binary_name(import_path: &str) -> String {
    let stem: String =
        import_path.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    format!("{}.test", if stem.is_empty() { "pkg" } else { &stem })
}

/// What `-run NAME` names among the top-level tests `-test.list` printed: NAME itself when a
/// test has that name, else the tests NAME (a Go regular expression, as for `go test -run`)
/// matched, which `matched` gives (the test binary's own `-test.list NAME`).
pub fn go_resolve(all: &str, matched: &str, name: &str) -> Vec<String> {
    let tests = |text: &str| -> Vec<String> {
        text.lines().map(str::trim).filter(|l| l.starts_with("Test")).map(str::to_owned).collect()
    };
    if tests(all).iter().any(|t| t == name) {
        return vec![name.to_owned()];
    }
    tests(matched)
}

/// The per-attempt argv: the test binary, with `-test.run ^NAME$` (and the subtest part of the
/// name, if any) when one test was named, and `-test.paniconexit0` as `go test` gives it (a test
/// that calls `os.Exit(0)` fails instead of ending the attempt as a pass).
pub fn go_argv(binary: &str, test: Option<&str>, subtests: Option<&str>) -> Vec<String> {
    let mut argv = vec![binary.to_owned(), "-test.paniconexit0".to_owned()];
    if let Some(name) = test {
        let pattern = match subtests {
            Some(rest) => format!("^{name}$/{rest}"),
            None => format!("^{name}$"),
        };
        argv.extend(["-test.run".into(), pattern]);
    }
    argv
}

/// `go test -c -o BINARY .` in the package directory `dir`: the test binary of the package's
/// code as it is now (`verify` after a fix), into `binary`, with the `checks` the verified
/// record's binary was built with (the goroutine leak check's overlay, the race detector): a
/// binary without the check that found a leak would pass that leak unseen, so a check that
/// cannot be built in any more refuses the rebuild. Go's own messages go to our stderr.
pub(crate) fn go_rebuild(dir: &Path, binary: &Path, checks: Checks) -> Result<(), HuntError> {
    let cache = go_cache()?;
    if let Some(parent) = binary.parent() {
        std::fs::create_dir_all(parent).map_err(|e| HuntError::io(format!("cannot create {}", parent.display()), e))?;
    }
    let list = go_command(cache.as_ref())
        .args(["list", "-f", GO_LIST_FORMAT, "."])
        .current_dir(dir)
        .output()
        .map_err(|e| HuntError::io("cannot run `go list`", e))?;
    let package = parse_go_list(&String::from_utf8_lossy(&list.stdout)).into_iter().next();
    let Some(package) = package.filter(|_| list.status.success()) else {
        return Err(HuntError::usage(format!(
            "no Go package in {} to build the test binary of: {}",
            dir.display(),
            first_line(&list.stderr)
        )));
    };
    let needed = |why: String| {
        HuntError::usage(format!(
            "the verified record's test binary ran with the goroutine leak check, which {why}: without it a leak would pass unseen, so verify needs it"
        ))
    };
    if let Some(at) =
        crate::checks::go::own_test_main(&package.dir, &package.test_files).filter(|_| checks.goroutine_leaks)
    {
        return Err(needed(format!(
            "cannot wrap the TestMain {} has now ({at}): end that TestMain with a check of your own (go.uber.org/goleak's goleak.VerifyTestMain(m) in place of os.Exit(m.Run())) and hunt again",
            package.import_path
        )));
    }
    let (status, built) = go_build(cache.as_ref(), &package, ".", Some(dir), binary, checks)?;
    if !status.success() {
        return Err(HuntError::usage(format!(
            "`go test -c` failed in {} ({status}): fix the build first",
            dir.display()
        )));
    }
    if checks.goroutine_leaks && !built.checks.goroutine_leaks {
        return Err(needed(built.note.unwrap_or_else(|| "could not be built in".into())));
    }
    Ok(())
}

/// `go test -c` of `package` (named `pkg` from `cwd`, or from here) into `binary`, with the
/// checks of `asked`: the goroutine leak check comes in through `-overlay` (see
/// [`crate::checks::go`]) unless the package has a `TestMain` of its own, or the check cannot be
/// built into it (then [`Built::note`] says so); the race detector is `-race`. Go's own
/// messages (compile errors) go to our stderr.
fn go_build(
    cache: Option<&tempfile::TempDir>,
    package: &GoPackage,
    pkg: &str,
    cwd: Option<&Path>,
    binary: &Path,
    asked: Checks,
) -> Result<(std::process::ExitStatus, Built), HuntError> {
    let mut built = Built { checks: Checks { race: asked.race, ..Checks::default() }, note: None };
    let overlay = if asked.goroutine_leaks {
        match crate::checks::go::own_test_main(&package.dir, &package.test_files) {
            Some(at) => {
                built.note = Some(crate::checks::go::own_test_main_line(&package.import_path, &at));
                None
            }
            None => Some(
                crate::checks::go::Overlay::write(
                    &package.name,
                    &std::path::absolute(&package.dir).unwrap_or_default(),
                )
                .map_err(|e| HuntError::io("cannot write the goroutine leak check", e))?,
            ),
        }
    } else {
        None
    };
    let build = |overlay: Option<&crate::checks::go::Overlay>, stderr: Stdio| {
        let mut cmd = go_command(cache);
        cmd.args(["test", "-c"]);
        if let Some(o) = overlay {
            // vet does not read overlays (go 1.19): it would look for the added file on disk.
            cmd.arg("-vet=off").arg(format!("-overlay={}", o.file().display()));
        }
        if asked.race {
            cmd.arg("-race");
        }
        if let Some(dir) = cwd {
            cmd.current_dir(dir);
        }
        cmd.arg("-o").arg(binary).arg(pkg).stdout(Stdio::inherit()).stderr(stderr).output()
    };
    // go's own messages (compile errors) go to our stderr: the user needs all of them. With the
    // leak check they are kept until a build without it shows whether they are the check's.
    let status = match &overlay {
        Some(o) => {
            let with = build(Some(o), Stdio::piped()).map_err(|e| HuntError::io("cannot run `go test -c`", e))?;
            if with.status.success() {
                built.checks.goroutine_leaks = true;
                with.status
            } else {
                let without = build(None, Stdio::inherit()).map_err(|e| HuntError::io("cannot run `go test -c`", e))?;
                if without.status.success() {
                    built.note = Some(format!(
                        "the goroutine leak check could not be built into {} ({}): attempts run without it",
                        package.import_path,
                        first_line(&with.stderr)
                    ));
                }
                without.status
            }
        }
        None => build(None, Stdio::inherit()).map_err(|e| HuntError::io("cannot run `go test -c`", e))?.status,
    };
    drop(overlay);
    Ok((status, built))
}

/// `go test -c` of the package in `dir` into `binary`, with the file `add` (its source given
/// the package's name, from `go list`) added into the package's directory through `-overlay`
/// (vet off: it does not read overlays): a Go suite's state search builds its state test in
/// this way, touching nothing of the user's tree. Err: why not, in one line.
pub(crate) fn go_build_with(
    dir: &Path,
    binary: &Path,
    add: &str,
    source: impl FnOnce(&str) -> String,
) -> Result<(), String> {
    let cache = go_cache().map_err(|e| e.to_string())?;
    let list = go_command(cache.as_ref())
        .args(["list", "-f", GO_LIST_FORMAT, "."])
        .current_dir(dir)
        .output()
        .map_err(|e| format!("cannot run `go list`: {e}"))?;
    let package = parse_go_list(&String::from_utf8_lossy(&list.stdout)).into_iter().next();
    let Some(package) = package.filter(|_| list.status.success()) else {
        return Err(format!("no Go package in {}: {}", dir.display(), first_line(&list.stderr)));
    };
    let files = tempfile::Builder::new().prefix("flakehunt-go-overlay-").tempdir().map_err(|e| e.to_string())?;
    let added = files.path().join(add);
    std::fs::write(&added, source(&package.name)).map_err(|e| e.to_string())?;
    let package_dir = std::path::absolute(&package.dir).map_err(|e| e.to_string())?;
    let replace =
        serde_json::json!({ "Replace": { package_dir.join(add).display().to_string(): added.display().to_string() } });
    let overlay = files.path().join("overlay.json");
    std::fs::write(&overlay, replace.to_string()).map_err(|e| e.to_string())?;
    let built = go_command(cache.as_ref())
        .args(["test", "-c", "-vet=off"])
        .arg(format!("-overlay={}", overlay.display()))
        .arg("-o")
        .arg(binary)
        .arg(".")
        .current_dir(dir)
        .output()
        .map_err(|e| format!("cannot run `go test -c`: {e}"))?;
    if !built.status.success() {
        return Err(format!("`go test -c` with it failed ({}): {}", built.status, first_line(&built.stderr)));
    }
    Ok(())
}

/// A `go` command with a usable build cache: without `GOCACHE`, `HOME` and `XDG_CACHE_HOME`, go
/// refuses to build, so the build then gets a temporary cache (removed with `cache`).
fn go_command(cache: Option<&tempfile::TempDir>) -> Command {
    let mut cmd = Command::new("go");
    if let Some(c) = cache {
        cmd.env("GOCACHE", c.path());
    }
    cmd
}

/// A temporary build cache when go has none (it says `off`).
fn go_cache() -> Result<Option<tempfile::TempDir>, HuntError> {
    let out = match Command::new("go").args(["env", "GOCACHE"]).stderr(Stdio::null()).output() {
        Ok(out) => out,
        Err(cause) => {
            let what = "--go-test cannot run `go`".to_owned();
            return Err(HuntError::Tool { what, cause, advice: "is Go installed?" });
        }
    };
    let cache = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if out.status.success() && !cache.is_empty() && cache != "off" {
        return Ok(None);
    }
    let dir = tempfile::Builder::new()
        .prefix("flakehunt-gocache-")
        .tempdir()
        .map_err(|e| HuntError::io("cannot create a Go build cache", e))?;
    Ok(Some(dir))
}

/// The first line of a command's error output, for a one-line message.
fn first_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("no output").to_owned()
}

/// `--go-test PKG [-run NAME]`: `go list` checks PKG is one package with tests, `go test -c`
/// builds its test binary once into the record, and NAME is resolved to one top-level test with
/// the binary's `-test.list`; a subtest part (`TestA/sub`), which no list shows, is checked
/// with one run of the test with `-test.v` within `check` (none: not checked). Attempts run the
/// binary in the package's directory, as `go test` does. The checks of `asked` shape the build:
/// the goroutine leak check comes in through `-overlay` (see [`crate::checks::go`]) unless the
/// package has a `TestMain` of its own, or the check cannot be built into it (then
/// [`Built::note`] says so); the race detector is `-race`.
pub(crate) fn go_test(
    values: &[String],
    record: &Path,
    asked: Checks,
    check: Option<Duration>,
) -> Result<(Target, Adapter, Built), HuntError> {
    let (pkg, run) = go_args(values).map_err(HuntError::usage)?;
    let cache = go_cache()?;
    let list = go_command(cache.as_ref())
        .args(["list", "-f", GO_LIST_FORMAT, &pkg])
        .output()
        .map_err(|e| HuntError::io("cannot run `go list`", e))?;
    if !list.status.success() {
        return Err(HuntError::usage(format!("--go-test: no Go package '{pkg}': {}", first_line(&list.stderr))));
    }
    let mut packages = parse_go_list(&String::from_utf8_lossy(&list.stdout));
    let package = match packages.len() {
        1 => packages.remove(0),
        0 => return Err(HuntError::usage(format!("--go-test: '{pkg}' names no Go package"))),
        n => {
            return Err(HuntError::usage(format!(
                "--go-test: '{pkg}' names {n} packages: give one (go test -c builds one test binary)"
            )))
        }
    };
    if !package.has_tests {
        return Err(HuntError::usage(format!("--go-test: Go package {} has no test files", package.import_path)));
    }

    let out_dir = record.join(GO_BUILD_DIR);
    let new_record = !record.exists();
    std::fs::create_dir_all(&out_dir).map_err(|e| HuntError::io(format!("cannot create {}", out_dir.display()), e))?;
    let binary = std::path::absolute(out_dir.join(go_binary_name(&package.import_path)))
        .map_err(|e| HuntError::io("cannot name the Go test binary", e))?;
    let started = std::time::Instant::now();
    let (status, built) = go_build(cache.as_ref(), &package, &pkg, None, &binary, asked)?;
    let build_seconds = started.elapsed().as_secs_f64();
    drop(cache);
    let refuse = |message: String| {
        discard_build(record);
        if new_record {
            let _ = std::fs::remove_dir(record);
        }
        Err(HuntError::Usage(message))
    };
    if !status.success() || !binary.exists() {
        if asked.race {
            return refuse(format!(
                "--go-test --race: `go test -c -race {pkg}` failed ({status}): fix the build first (the race detector needs cgo, CGO_ENABLED=1, and a C compiler)"
            ));
        }
        return refuse(format!("--go-test: `go test -c {pkg}` failed ({status}): fix the build first"));
    }

    let (test, subtests) = match run.as_deref().map(|r| r.split_once('/').map_or((r, None), |(t, s)| (t, Some(s)))) {
        None => (None, None),
        Some((top, subtests)) => {
            let list = |pattern: &str| -> Result<String, HuntError> {
                let out = Command::new(&binary)
                    .args(["-test.list", pattern])
                    .current_dir(&package.dir)
                    .stderr(Stdio::null())
                    .output()
                    .map_err(|e| HuntError::io("cannot list the tests of the Go test binary", e))?;
                Ok(String::from_utf8_lossy(&out.stdout).into_owned())
            };
            let all = list(".*")?;
            let found = go_resolve(&all, &list(top)?, top);
            match found.as_slice() {
                [one] => (Some(one.clone()), subtests),
                [] => return refuse(format!("--go-test: no test named '{top}' in Go package {}", package.import_path)),
                many => {
                    return refuse(format!(
                        "--go-test: '{top}' matches {} tests ({}): give the name of one",
                        many.len(),
                        many.join(", ")
                    ))
                }
            }
        }
    };

    if let (Some(top), Some(sub), Some(timeout)) = (test.as_deref(), subtests, check) {
        let mut command = Command::new(&binary);
        command
            .args(go_argv(&binary.display().to_string(), Some(top), Some(sub))[1..].iter())
            .arg("-test.v")
            .current_dir(&package.dir);
        let probe = crate::snapshot::commands::Probe { command, cap: 16 << 20, timeout };
        let ran = crate::snapshot::commands::run_all(vec![probe], None, None).pop();
        let started = match &ran {
            Some(crate::snapshot::commands::Ran::Exited { stdout, .. }) => {
                let prefix = format!("=== RUN   {top}/");
                String::from_utf8_lossy(stdout).lines().any(|l| l.trim_start().starts_with(&prefix))
            }
            _ => true,
        };
        if !started {
            return refuse(format!(
                "--go-test: '{top}/{sub}' names no subtest of {top} (one run of {top} with -test.v started none)"
            ));
        }
    }

    let binary = binary.display().to_string();
    let argv = go_argv(&binary, test.as_deref(), subtests);
    let dir = relative_to_cwd(&package.dir)?;
    let adapter = Adapter::GoTest {
        package: package.import_path,
        test,
        binary,
        dir: dir.clone(),
        build_seconds: (build_seconds * 1000.0).round() / 1000.0,
    };
    Ok((Target::argv(argv).in_dir(dir), adapter, built))
}

/// The per-attempt argv of `--pytest NODEID` with the interpreter `python`.
pub fn pytest_argv(python: &str, node: &str) -> Vec<String> {
    let mut argv: Vec<String> = [python, "-m", "pytest", "-q"].map(String::from).to_vec();
    for plugin in PYTEST_NO_PLUGINS {
        argv.extend(["-p".into(), format!("no:{plugin}")]);
    }
    argv.push(node.to_owned());
    argv
}

/// `--pytest NODEID`, with the interpreter the user means (`--python`, `$VIRTUAL_ENV`,
/// `./.venv`, `python3`), after checking that it can import pytest and that NODEID names at
/// least one test (collected as the suite collects, within `timeout`). The thread check of
/// `asked` makes pytest's warnings about exceptions in threads errors, as far as that pytest has them.
fn pytest(
    node: &str,
    explicit: Option<&Path>,
    asked: Checks,
    timeout: Duration,
) -> Result<(Target, Adapter, Built), HuntError> {
    let cwd = std::env::current_dir().map_err(|e| HuntError::io("cannot read the current directory", e))?;
    let venv = std::env::var_os("VIRTUAL_ENV");
    let python = crate::exec::python::interpreter(explicit, venv.as_deref(), &cwd)?;
    let program = python.program.display().to_string();
    let ok = Command::new(&python.program)
        .args(["-m", "pytest", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return Err(HuntError::usage(format!(
            "--pytest needs pytest for {program}: `{program} -m pip install pytest`, or give another interpreter with --python PATH"
        )));
    }
    let scratch = tempfile::Builder::new()
        .prefix("flakehunt-collect-")
        .tempdir()
        .map_err(|e| HuntError::io("cannot create a directory for the collection", e))?;
    crate::kind::suite::pytestlog::write_plugin(scratch.path())
        .map_err(|e| HuntError::io("cannot write flakehunt's pytest plugin", e))?;
    let pytest = crate::kind::suite::order::Pytest::new(program.clone());
    let collected = crate::kind::suite::collect::collect_pytest(
        &python.program,
        &pytest,
        &[node.to_owned()],
        scratch.path(),
        timeout,
    )?;
    if collected.items.is_none_or(|items| items.is_empty()) {
        return Err(HuntError::usage(format!("--pytest: '{node}' names no test (pytest collected none for it)")));
    }
    let mut argv = pytest_argv(&program, node);
    let mut built = Built::default();
    if asked.thread_exceptions {
        let support = crate::checks::python::PytestSupport::of(&python.program);
        let at = argv.len() - 1;
        argv.splice(at..at, support.options);
        built = Built { checks: Checks { thread_exceptions: true, ..Checks::default() }, note: support.note };
    }
    Ok((Target::argv(argv), Adapter::Pytest { node: node.to_owned() }, built))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_executables_from_cargo_messages() {
        let messages = r#"{"reason":"compiler-artifact","profile":{"test":false},"executable":null,"manifest_path":"/p/Cargo.toml"}
{"reason":"compiler-artifact","profile":{"test":true},"executable":"/t/debug/deps/flaky-1","manifest_path":"/p/Cargo.toml"}
{"reason":"compiler-artifact","profile":{"test":true},"executable":"/t/debug/deps/it-2","manifest_path":"/p/q/Cargo.toml"}
{"reason":"build-finished","success":true}
not json"#;
        let bin = |e: &str, d: &str| TestBinary { executable: e.into(), package_dir: d.into() };
        assert_eq!(test_executables(messages), [bin("/t/debug/deps/flaky-1", "/p"), bin("/t/debug/deps/it-2", "/p/q")]);
    }

    #[test]
    fn matching_tests_prefers_exact_names() {
        let list = "flaky: test\ntests::flaky: test\nother::flaky_too: test\nbench_x: benchmark\n";
        assert_eq!(matching_tests(list, "flaky"), ["flaky"]);
        assert_eq!(matching_tests("a::flaky: test\nb::flaky: test\n", "flaky"), ["a::flaky", "b::flaky"]);
        assert!(matching_tests(list, "bench_x").is_empty());
    }

    #[test]
    fn go_args_packages_and_names() {
        assert_eq!(go_args(&["./p".into(), "-run".into(), "TestA".into()]), Ok(("./p".into(), Some("TestA".into()))));
        assert_eq!(go_args(&["./p".into()]), Ok(("./p".into(), None)));
        assert!(go_args(&["./p".into(), "--runs".into(), "5".into()]).is_err());
        assert!(go_args(&["-run".into(), "TestA".into(), "./p".into()]).is_err());
    }

    #[test]
    fn go_list_lines_and_binary_names() {
        let text = "example.com/a\t/src/a\ta\ta_test.go\t\nexample.com/a/b\t/src/a/b\tb\t\t\nexample.com/c\t/src/c\tc\t\tx_test.go/y_test.go\n";
        let p = parse_go_list(text);
        assert_eq!(p.len(), 3);
        assert_eq!(
            p[0],
            GoPackage {
                import_path: "example.com/a".into(),
                dir: "/src/a".into(),
                has_tests: true,
                name: "a".into(),
                test_files: vec!["a_test.go".into()]
            }
        );
        assert_eq!(p[2].test_files, ["x_test.go", "y_test.go"]);
        assert!(!p[1].has_tests);
        assert!(p[2].has_tests, "an external _test package counts");
        assert_eq!(go_binary_name("example.com/a/b"), "example_com_a_b.test");
    }

    #[test]
    fn go_names_resolve_exactly_before_matching() {
        let all = "TestTransfer\nTestTransferLog\nTestSteady\nExampleX\nok  \texample.com/a\t0.001s\n";
        assert_eq!(go_resolve(all, "TestTransfer\nTestTransferLog\n", "TestTransfer"), ["TestTransfer"]);
        assert_eq!(go_resolve(all, "TestTransferLog\n", "Log"), ["TestTransferLog"]);
        assert_eq!(go_resolve(all, "TestTransfer\nTestTransferLog\n", "Transfer").len(), 2);
        assert!(go_resolve(all, "", "TestNope").is_empty());
        let exit0 = "-test.paniconexit0";
        assert_eq!(go_argv("/r/p.test", Some("TestA"), None), ["/r/p.test", exit0, "-test.run", "^TestA$"]);
        assert_eq!(
            go_argv("/r/p.test", Some("TestA"), Some("case_1")),
            ["/r/p.test", exit0, "-test.run", "^TestA$/case_1"]
        );
        assert_eq!(go_argv("/r/p.test", None, None), ["/r/p.test", exit0]);
    }

    #[test]
    fn pytest_argv_disables_rerun_plugins() {
        assert_eq!(
            pytest_argv("python3", "t.py::test_x").join(" "),
            "python3 -m pytest -q -p no:randomly -p no:rerunfailures -p no:flaky -p no:cacheprovider t.py::test_x"
        );
    }
}
