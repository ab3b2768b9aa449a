//! The one harness of the integration tests: the binary, the fixtures, a small builder for
//! running `flakehunt sweep` and reading back what it printed and recorded ([`Hunt`], which
//! ends as a [`Run`]), bounded polling, process checks, and skips that say why. The Slurm test
//! cluster is in [`slurm_cluster`].

pub mod slurm_cluster;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

/// Longest a single flakehunt invocation may take before the test gives up on it. Far above
/// what any test needs, so a loaded machine cannot make a test fail, while a hang still ends.
pub const RUN_LIMIT: Duration = Duration::from_secs(180);

/// Longest a test polls for a condition (a pid file to appear, a process to die).
pub const POLL_LIMIT: Duration = Duration::from_secs(60);

/// The path of a fixture in `fixtures/` (`fire/append.sh`, `adapters/go-flaky`...).
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(name)
}

/// The absolute path of a fixture, without `..`, as an argument for a command line.
pub fn fixture_arg(name: &str) -> String {
    let path = fixture(name);
    path.canonicalize().unwrap_or_else(|e| panic!("no fixture {}: {e}", path.display())).display().to_string()
}

/// The `flakehunt` binary under test.
pub fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("flakehunt")
}

/// The summary a `--json` hunt printed on stdout; without one, the test fails showing stderr.
pub fn summary_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON summary ({e}); stderr: {}", String::from_utf8_lossy(&out.stderr)))
}

/// The summary's entry for cell `name`.
pub fn cell<'a>(summary: &'a Value, name: &str) -> &'a Value {
    summary["cells"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("no cell {name}"))
}

/// Whether this machine has at least `cpus` CPUs; if not, says on the test's stderr (which
/// the test runner does not capture) that `test` is skipped and why, so a skip never passes
/// silently.
pub fn has_cpus(cpus: usize, test: &str) -> bool {
    let here = std::thread::available_parallelism().map_or(1, |n| n.get());
    if here < cpus {
        skip(test, &format!("it needs {cpus} CPUs and this machine has {here}"));
        return false;
    }
    true
}

/// Says that `test` is skipped, and why, where the test runner's capture does not hide it.
pub fn skip(test: &str, why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {test}: {why}");
}

/// One invocation of flakehunt with any arguments (`report`, `merge`, a hunt with options the
/// [`Hunt`] builder does not set), built as a [`std::process::Command`] is, with
/// `$GITHUB_STEP_SUMMARY` removed unless set again. What it returns (an [`Output`], a [`Child`],
/// an [`assert_cmd::assert::Assert`]) is what the test reads.
pub struct Invocation {
    cmd: std::process::Command,
    /// Whether stdout goes elsewhere than to the test (assert_cmd would capture it anyway).
    stdout_set: bool,
    /// Longest the invocation may run when its output is captured (none unless given: a
    /// suite on a loaded machine takes minutes, and a bound it passes would make it flaky).
    limit: Option<Duration>,
}

/// `flakehunt` with no arguments yet.
pub fn flakehunt() -> Invocation {
    let mut cmd = std::process::Command::new(bin());
    cmd.env_remove("GITHUB_STEP_SUMMARY");
    Invocation { cmd, stdout_set: false, limit: None }
}

/// `flakehunt ARGS...` run in `dir` to its end.
pub fn run_in(dir: impl AsRef<Path>, args: &[&str]) -> Output {
    flakehunt().args(args).current_dir(dir).output()
}

impl Invocation {
    /// Adds an argument.
    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Self {
        self.cmd.arg(arg);
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(&mut self, args: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.cmd.args(args);
        self
    }

    /// Runs flakehunt in `dir`.
    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.cmd.current_dir(dir);
        self
    }

    /// Sets an environment variable.
    pub fn env(&mut self, name: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Self {
        self.cmd.env(name, value);
        self
    }

    /// Sets environment variables.
    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.cmd.envs(vars);
        self
    }

    /// Removes an environment variable.
    pub fn env_remove(&mut self, name: impl AsRef<OsStr>) -> &mut Self {
        self.cmd.env_remove(name);
        self
    }

    /// Where flakehunt's stdin comes from (default: inherited; captured runs read nothing).
    pub fn stdin(&mut self, stdin: impl Into<Stdio>) -> &mut Self {
        self.cmd.stdin(stdin);
        self
    }

    /// Where flakehunt's stdout goes (default: captured).
    pub fn stdout(&mut self, stdout: impl Into<Stdio>) -> &mut Self {
        self.cmd.stdout(stdout);
        self.stdout_set = true;
        self
    }

    /// Where flakehunt's stderr goes, for [`Self::spawn`].
    pub fn stderr(&mut self, stderr: impl Into<Stdio>) -> &mut Self {
        self.cmd.stderr(stderr);
        self
    }

    /// A bound on a captured run, past which flakehunt is killed (a Slurm job array that
    /// would otherwise wait for a queue forever).
    pub fn timeout(&mut self, limit: Duration) -> &mut Self {
        self.limit = Some(limit);
        self
    }

    /// Limits every file flakehunt (and what it starts) writes to `bytes` (`RLIMIT_FSIZE`), with
    /// `SIGXFSZ` ignored, so a write past it fails with EFBIG ("File too large"): a file system
    /// that fills, simulated without root and without touching the machine's disks.
    pub fn file_size_limit(&mut self, bytes: u64) -> &mut Self {
        use std::os::unix::process::CommandExt;
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            self.cmd.pre_exec(move || {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let limit = libc::rlimit { rlim_cur: bytes, rlim_max: bytes };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        self
    }

    fn take(&mut self) -> std::process::Command {
        std::mem::replace(&mut self.cmd, std::process::Command::new(bin()))
    }

    /// Runs flakehunt to its end (within the bound, if one was given and stdout is captured).
    pub fn output(&mut self) -> Output {
        match self.limit {
            Some(limit) if !self.stdout_set => {
                assert_cmd::Command::from_std(self.take()).timeout(limit).output().expect("flakehunt runs")
            }
            _ => self.cmd.output().expect("flakehunt runs"),
        }
    }

    /// Runs flakehunt to its end (within the bound, if one was given), for assert_cmd's
    /// assertions.
    pub fn assert(&mut self) -> assert_cmd::assert::Assert {
        let mut cmd = assert_cmd::Command::from_std(self.take());
        if let Some(limit) = self.limit {
            cmd.timeout(limit);
        }
        cmd.assert()
    }

    /// Starts flakehunt in the background; the test waits for it (bounded) and kills what it
    /// started if it fails first.
    pub fn spawn(&mut self) -> Child {
        self.cmd.spawn().expect("flakehunt starts")
    }
}

/// Everything `out` wrote on stderr, as text.
pub fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A Go environment inside `dir`: its own build cache and GOPATH (nothing written to the
/// user's), no network, no toolchain switching, the user's GOFLAGS cleared.
pub fn go_env(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    vec![
        ("GOCACHE", dir.join("gocache")),
        ("GOPATH", dir.join("gopath")),
        ("GOTOOLCHAIN", "local".into()),
        ("GOPROXY", "off".into()),
        ("GOFLAGS", "".into()),
    ]
}

/// Whether process `pid` is gone: no longer in `/proc`, or a zombie.
pub fn is_gone(pid: impl std::fmt::Display) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit(')').next().unwrap_or("").split_whitespace().next().unwrap_or("X");
    stat.is_empty() || state == "Z" || state == "X"
}

/// Asserts that `out` exited with `code` having printed exactly one error line, which contains
/// `needle` and no panic; returns that line.
pub fn refused_with(out: &Output, code: i32, needle: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "stderr: {stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("flakehunt: error:")).collect();
    assert_eq!(errors.len(), 1, "one error line expected: {stderr}");
    assert!(errors[0].contains(needle), "'{needle}' not in: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    errors[0].to_owned()
}

/// One invocation of `flakehunt sweep` (or another hunt), recording into a fresh temporary
/// directory.
pub struct Hunt {
    args: Vec<OsString>,
    target: Vec<OsString>,
    tmp: TempDir,
    record: bool,
    json: bool,
    env: Vec<(OsString, OsString)>,
}

impl Hunt {
    /// `flakehunt sweep --record <tmp>/record --json` with nothing else yet.
    pub fn sweep() -> Self {
        Self::of("sweep")
    }

    /// `flakehunt SUBCOMMAND --record <tmp>/record --json` with nothing else yet.
    pub fn of(subcommand: &str) -> Self {
        Self {
            args: vec![subcommand.into()],
            target: Vec::new(),
            tmp: tempfile::tempdir().expect("a temporary directory"),
            record: true,
            json: true,
            env: Vec::new(),
        }
    }

    /// Sets a variable in flakehunt's environment.
    pub fn env(mut self, name: &str, value: impl Into<OsString>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Adds options before `--`.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Only the `default` profile: one cell, so counts are simple.
    pub fn default_only(self) -> Self {
        self.args(["--profiles", "default"])
    }

    /// The command under test: fixture `name` with `args`.
    pub fn fixture(mut self, name: &str, args: &[&str]) -> Self {
        self.target = std::iter::once(fixture(name).into_os_string()).chain(args.iter().map(Into::into)).collect();
        self
    }

    /// The command under test, as a plain argv.
    pub fn command<I, S>(mut self, argv: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.target = argv.into_iter().map(Into::into).collect();
        self
    }

    /// Leaves out `--record`, for tests of arguments that replace it (`--resume`).
    pub fn without_record(mut self) -> Self {
        self.record = false;
        self
    }

    /// Leaves out `--json`, for tests of what a person sees.
    pub fn without_json(mut self) -> Self {
        self.json = false;
        self
    }

    /// A scratch path inside the test's temporary directory (pid files and the like).
    pub fn scratch(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    /// Where the record goes.
    pub fn record_dir(&self) -> PathBuf {
        self.tmp.path().join("record")
    }

    fn argv(&self) -> Vec<OsString> {
        let mut argv = self.args.clone();
        // A sweep without --profiles runs every built-in profile that applies here; these tests
        // are about the runner, so they compare the baseline with one-core unless told otherwise.
        let resuming = argv.iter().any(|a| a == "--resume");
        if argv.first().is_some_and(|a| a == "sweep") && !resuming && !argv.iter().any(|a| a == "--profiles") {
            argv.splice(1..1, ["--profiles".into(), "default,one-core".into()]);
        }
        if self.record {
            argv.push("--record".into());
            argv.push(self.record_dir().into_os_string());
        }
        if self.json {
            argv.push("--json".into());
        }
        if !self.target.is_empty() {
            argv.push("--".into());
            argv.extend(self.target.iter().cloned());
        }
        argv
    }

    /// Runs flakehunt to its end.
    pub fn run(self) -> Run {
        let output = assert_cmd::Command::cargo_bin("flakehunt")
            .expect("the flakehunt binary is built")
            .args(self.argv())
            .envs(self.env.iter().map(|(n, v)| (n, v)))
            .timeout(RUN_LIMIT)
            .output()
            .expect("flakehunt runs");
        Run {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            dir: self.record_dir(),
            _tmp: self.tmp,
        }
    }

    /// Starts flakehunt in the background, for tests that signal it. Its output goes to files,
    /// so it never blocks on a full pipe while the test polls.
    pub fn spawn(self) -> Background {
        let stdout = std::fs::File::create(self.scratch("stdout")).expect("a file for stdout");
        let stderr = std::fs::File::create(self.scratch("stderr")).expect("a file for stderr");
        let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("flakehunt"))
            .args(self.argv())
            .envs(self.env.iter().map(|(n, v)| (n, v)))
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .expect("flakehunt starts");
        Background { child: Some(child), hunt: Some(self) }
    }
}

/// A flakehunt running in the background.
pub struct Background {
    child: Option<Child>,
    /// Taken by `finish`, with the child.
    hunt: Option<Hunt>,
}

impl Background {
    fn hunt(&self) -> &Hunt {
        self.hunt.as_ref().expect("flakehunt has not been collected yet")
    }

    fn child(&mut self) -> &mut Child {
        self.child.as_mut().expect("flakehunt has not been collected yet")
    }

    /// Sends `signal` to flakehunt.
    pub fn signal(&mut self, signal: i32) {
        let pid = self.child().id() as i32;
        // SAFETY: kill has no memory-safety preconditions; the child is not reaped yet, so its
        // pid cannot have been reused.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "cannot signal flakehunt");
    }

    /// Waits (bounded) for flakehunt to exit and collects what it printed.
    pub fn finish(mut self) -> Run {
        let mut child = self.child.take().expect("flakehunt has not been collected yet");
        let mut status = None;
        poll_until("flakehunt to exit", RUN_LIMIT, || {
            status = child.try_wait().expect("waitpid works");
            status.is_some()
        });
        let hunt = self.hunt.take().expect("flakehunt has not been collected yet");
        let read =
            |name: &str| String::from_utf8_lossy(&std::fs::read(hunt.scratch(name)).unwrap_or_default()).into_owned();
        Run {
            code: status.and_then(|s| s.code()),
            stdout: read("stdout"),
            stderr: read("stderr"),
            dir: hunt.record_dir(),
            _tmp: hunt.tmp,
        }
    }

    /// The hunt's `FLAKEHUNT_RUN_ID`, from the manifest written before any attempt starts.
    pub fn run_id(&self) -> String {
        read_json(&self.hunt().record_dir().join("manifest.json"))["run_id"].as_str().expect("a run id").to_owned()
    }

    /// Reads a pid written by a fixture into scratch file `name`, once the file is there, and
    /// waits until that process has exec'd `program` (the fixtures write their pid, then exec).
    pub fn wait_for_pid_file(&mut self, name: &str, program: &str) -> i32 {
        let path = self.hunt().scratch(name);
        let child = self.child();
        poll_until(&format!("{} to appear", path.display()), POLL_LIMIT, || {
            if let Some(status) = child.try_wait().expect("waitpid works") {
                panic!("flakehunt exited ({status}) before the fixture wrote its pid");
            }
            path.exists()
        });
        let text = std::fs::read_to_string(&path).expect("the pid file is readable");
        let pid = text.trim().parse().unwrap_or_else(|_| panic!("not a pid: {text:?}"));
        // The pid file appears while the shell still runs, before its exec; during the exec
        // /proc/PID/environ reads empty for a moment. Wait until the process runs the program
        // that hangs, so what the caller checks next is that program, not the moment before.
        poll_until(&format!("pid {pid} to exec {program}"), POLL_LIMIT, || {
            let args = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            args.split(|&b| b == 0).next() == Some(program.as_bytes())
        });
        pid
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        // A failed assertion must not leave a flakehunt running.
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// What one flakehunt invocation did.
pub struct Run {
    /// Exit code (`None` when a signal ended flakehunt).
    pub code: Option<i32>,
    /// Everything on stdout.
    pub stdout: String,
    /// Everything on stderr.
    pub stderr: String,
    /// The record directory.
    pub dir: PathBuf,
    _tmp: TempDir,
}

impl Run {
    /// Asserts the exit code, showing stderr when it differs.
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, Some(code), "unexpected exit code; stderr:\n{}", self.stderr);
        self
    }

    /// The summary printed on stdout by `--json`.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}\nstderr:\n{}", self.stdout, self.stderr))
    }

    /// `summary.json` of the record.
    pub fn summary(&self) -> Value {
        read_json(&self.dir.join("summary.json"))
    }

    /// `manifest.json` of the record.
    pub fn manifest(&self) -> Value {
        read_json(&self.dir.join("manifest.json"))
    }

    /// The hunt's `FLAKEHUNT_RUN_ID`.
    pub fn run_id(&self) -> String {
        self.manifest()["run_id"].as_str().expect("the manifest has a run id").to_owned()
    }

    /// Every line of `attempts.jsonl`, parsed; each must be a complete JSON object.
    pub fn attempts(&self) -> Vec<Value> {
        attempts_in(&self.dir)
    }

    /// The summary's entry for cell `name`.
    pub fn cell(&self, name: &str) -> Value {
        let summary = self.summary();
        summary["cells"]
            .as_array()
            .expect("cells is an array")
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no cell {name} in {summary:#}"))
            .clone()
    }

    /// The outcomes of cell `name` that happened at least once, as `outcome=count` strings.
    pub fn outcomes(&self, name: &str) -> Vec<String> {
        let cell = self.cell(name);
        let outcomes = cell["outcomes"].as_object().expect("outcomes is an object");
        outcomes.iter().filter(|(_, n)| n.as_u64() != Some(0)).map(|(k, n)| format!("{k}={n}")).collect()
    }

    /// Asserts that no process of this hunt is alive: none carries its run id.
    pub fn expect_nothing_left(&self) {
        let marker = format!("FLAKEHUNT_RUN_ID={}", self.run_id());
        let alive = processes_with(&marker);
        assert!(alive.is_empty(), "processes of the hunt outlived flakehunt: {alive:?}");
    }
}

/// Parses a JSON file.
pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// The attempts of the record in `dir`; every line must parse.
pub fn attempts_in(dir: &Path) -> Vec<Value> {
    let path = dir.join("attempts.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    assert!(text.is_empty() || text.ends_with('\n'), "attempts.jsonl ends in a half line:\n{text}");
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("line {} does not parse ({e}): {line}", i + 1))
        })
        .collect()
}

/// Polls `cond` every 20 ms until it holds; panics naming `what` after `limit`.
pub fn poll_until(what: &str, limit: Duration, cond: impl FnMut() -> bool) {
    poll_until_explained(what, limit, cond, String::new);
}

/// [`poll_until`], adding what `explain` says to the panic (a cluster's logs).
pub fn poll_until_explained(what: &str, limit: Duration, mut cond: impl FnMut() -> bool, explain: impl Fn() -> String) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "gave up after {limit:?} waiting for {what}{}", explain());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether process `pid` is dead: gone from `/proc`, a zombie, or its pid reused by a process
/// that is not part of the hunt `run_id`.
pub fn is_dead(pid: i32, run_id: &str) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return true };
    let state = stat.rfind(')').and_then(|i| stat[i + 1..].split_whitespace().next()).unwrap_or("?");
    if state == "Z" || state == "X" {
        return true;
    }
    let marker = format!("FLAKEHUNT_RUN_ID={run_id}");
    !environ_has(pid, &marker)
}

/// Live processes whose environment holds `marker` (`NAME=VALUE`).
pub fn processes_with(marker: &str) -> Vec<(i32, String)> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&p| environ_has(p, marker))
        .map(|p| (p, std::fs::read_to_string(format!("/proc/{p}/cmdline")).unwrap_or_default().replace('\0', " ")))
        .collect()
}

/// Live (not zombie) processes whose command line, arguments joined by spaces, is `cmdline`.
pub fn processes_running(cmdline: &str) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&p| {
            // A zombie's command line is empty, so it never matches.
            let args = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&args).trim_end_matches('\0').replace('\0', " ") == cmdline
        })
        .collect()
}

fn environ_has(pid: i32, marker: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|env| env.split(|&b| b == 0).any(|entry| entry == marker.as_bytes()))
}

/// The pid a leaking fixture printed as `grandchild PID` on stdout.
pub fn grandchild_pid(attempt: &Value) -> i32 {
    let tail = attempt["stdout_tail"].as_str().expect("stdout_tail is text");
    tail.lines()
        .find_map(|l| l.strip_prefix("grandchild "))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no grandchild pid in {tail:?}"))
}

/// Seconds since the epoch of a record's time (`2026-12-01T00:00:00.000Z`).
pub fn unix_seconds(rfc3339: &str) -> f64 {
    let t = humantime::parse_rfc3339_weak(rfc3339.trim_end_matches('Z')).unwrap();
    t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64()
}
