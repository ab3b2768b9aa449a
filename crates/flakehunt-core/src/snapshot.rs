//! A record of the machine a hunt ran on.
//!
//! A flaky test is often flaky *somewhere*: on the CI runner with two CPUs,
//! under a low `nofile` limit, in the `C` locale, inside a memory-limited
//! cgroup. [`Snapshot::capture`] writes down those facts next to every run
//! record (`snapshot.json`) so that "it fails on CI but not on my laptop"
//! can be answered by diffing two files.
//!
//! Besides the machine, it holds what drifts between machines that run the same code: the
//! Python interpreter and its distributions ([`python`]), Go's environment and module list and
//! Rust's compiler and lock file ([`toolchains`]), the kernel's scheduler settings, the CPU
//! frequency policy, the control group's limits and the file systems the work happens on
//! ([`system`]). `flakehunt diff` compares two snapshots ([`crate::drift`]).
//!
//! Capture is best effort throughout: whatever cannot be read (a missing
//! `/proc` file, a non-Linux system, a tool that is not installed) becomes
//! `None` or an empty collection, never an error or a panic. Environment
//! variables (by name and value) and every other text are redacted with
//! [`crate::redact`] before they are stored, because run records get attached
//! to bug reports.

pub(crate) mod commands;
pub mod python;
pub mod system;
mod text;
pub mod toolchains;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::exec::ProcessTree;
use serde::{Deserialize, Serialize};
use text::{non_empty, read, unescape_mount_path};

pub use python::Python;
pub use system::{CgroupLimits, CpuFrequency, Mount};
pub use toolchains::{CargoLock, Go, Rust};

use commands::{Probe, Ran};

/// How long a tool's version command may run before it is killed.
const TOOL_TIMEOUT: Duration = Duration::from_secs(2);

/// Bytes kept from each of a tool's output streams; more is read and
/// discarded so that a chatty tool cannot block on a full pipe.
const TOOL_OUTPUT_CAP: usize = 8 * 1024;

/// Longest tool version line kept, in characters.
const TOOL_LINE_CAP: usize = 200;

pub use crate::redact::REDACTED;

/// cgroup v1 controller names, used to tell controllers apart from mount
/// options (`rw`, `relatime`, ...) in the options column of `/proc/mounts`.
const CGROUP_V1_CONTROLLERS: &[&str] = &[
    "blkio",
    "cpu",
    "cpuacct",
    "cpuset",
    "devices",
    "freezer",
    "hugetlb",
    "memory",
    "misc",
    "net_cls",
    "net_prio",
    "perf_event",
    "pids",
    "rdma",
];

/// The machine, process limits and environment a hunt ran in.
///
/// Every field is optional in spirit: `None`, an empty map or an empty list
/// means "could not be determined". Deserialising tolerates missing fields,
/// so older and newer run records stay readable.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Snapshot {
    /// The node name from `uname`.
    pub hostname: Option<String>,
    /// `PRETTY_NAME` from `/etc/os-release` (or `/usr/lib/os-release`).
    pub os: Option<String>,
    /// `uname` sysname, release and version, space separated.
    pub kernel: Option<String>,
    /// `uname` machine (e.g. `x86_64`), falling back to the architecture
    /// flakehunt was compiled for.
    pub arch: Option<String>,
    /// Number of CPUs online on the machine (not just those this process may
    /// use; see `cpus_allowed`).
    pub cpus_online: Option<usize>,
    /// This process's CPU affinity as a list, e.g. `0-1` or `0,2-3`
    /// (`Cpus_allowed_list` in `/proc/self/status`).
    pub cpus_allowed: Option<String>,
    /// The first `model name` in `/proc/cpuinfo`.
    pub cpu_model: Option<String>,
    /// `MemTotal` from `/proc/meminfo`, in bytes.
    pub memory_total_bytes: Option<u64>,
    /// `MemAvailable` from `/proc/meminfo`, in bytes.
    pub memory_available_bytes: Option<u64>,
    /// 1, 5 and 15 minute load averages from `/proc/loadavg`.
    pub load_average: Option<[f64; 3]>,
    /// Resource limits of this process, by lower-case name (`nofile`,
    /// `nproc`, `stack`, `as`, `core`, `fsize`, `cpu`, `memlock`).
    pub rlimits: BTreeMap<String, LimitPair>,
    /// Locale variables as seen by this process.
    pub locale: Locale,
    /// `TZ`, else `/etc/timezone`, else the zone `/etc/localtime` links to.
    pub timezone: Option<String>,
    /// Control group membership and mounted hierarchies.
    pub cgroup: Cgroup,
    /// For each tool command, the first line it printed, or `None` when it
    /// is missing, failed, or did not finish within 2 seconds.
    pub tools: BTreeMap<String, Option<String>>,
    /// All environment variables, sorted by name, with secrets redacted
    /// (see [`redact`]).
    pub env: BTreeMap<String, String>,
    /// When it was taken (RFC 3339, UTC).
    pub captured_at: Option<String>,
    /// How long taking it took, in seconds.
    pub capture_seconds: Option<f64>,
    /// The working directory it was taken in.
    pub cwd: Option<String>,
    /// The control group's CPU quota and memory limit.
    pub cgroup_limits: CgroupLimits,
    /// The kernel's scheduler-relevant settings ([`system::kernel_settings`]).
    pub kernel_settings: BTreeMap<String, String>,
    /// The CPU frequency policy, where the machine has one.
    pub cpu_frequency: Option<CpuFrequency>,
    /// The file systems of the working directory and of `TMPDIR`, keyed `working directory`
    /// and `TMPDIR`.
    pub mounts: BTreeMap<String, Mount>,
    /// The Python interpreter a hunt runs, and its distributions.
    pub python: Option<Python>,
    /// Go's environment and module list.
    pub go: Option<Go>,
    /// Rust's compiler and lock file.
    pub rust: Option<Rust>,
}

/// What a snapshot reads besides the machine: the tool version lines, and the toolchains of
/// the project (each `None` leaves it out, so a hunt of a shell script runs no interpreter).
#[derive(Debug, Clone, Default)]
pub struct SnapshotRequest {
    /// Commands whose first output line is recorded (`python3 --version`).
    pub tools: Vec<String>,
    /// The Python interpreter to read, and why it is the one (`--python`, `VIRTUAL_ENV`,
    /// `./.venv`, `PATH`, `the target`).
    pub python: Option<(PathBuf, String)>,
    /// The directory to run `go env` and `go list -m all` in.
    pub go: Option<PathBuf>,
    /// The directory to read Rust from (`rustc -vV` there, `Cargo.lock` there or above).
    pub rust: Option<PathBuf>,
}

impl SnapshotRequest {
    /// Everything this machine and project have, for `flakehunt snapshot`: the interpreter
    /// the user means (`python`: `--python`; else `$VIRTUAL_ENV`'s, `./.venv`'s, `python3`),
    /// Go when `go` is on `PATH` (run in `go_dir`, a `--go-test` package's directory, else
    /// here), Rust when a `Cargo.lock` is here or above.
    pub fn everything(tools: Vec<String>, python: Option<&Path>, go_dir: Option<&Path>) -> Result<Self, String> {
        let cwd = std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
        let venv = std::env::var_os("VIRTUAL_ENV");
        let interpreter = crate::exec::python::interpreter(python, venv.as_deref(), &cwd).map_err(|e| e.to_string())?;
        let go = match go_dir {
            Some(dir) if !dir.is_dir() => {
                return Err(format!("--go-test {}: no such directory (give the package's directory)", dir.display()))
            }
            Some(dir) => Some(dir.to_owned()),
            None => on_path("go").then(|| cwd.clone()),
        };
        let rust = cwd.ancestors().any(|d| d.join("Cargo.lock").is_file()).then(|| cwd.clone());
        Ok(Self { tools, python: Some((interpreter.program, source_name(interpreter.source).to_owned())), go, rust })
    }
}

impl SnapshotRequest {
    /// What a hunt of `target` reads (its tool lines are `tools`): the interpreter it runs
    /// when it is a Python target (the adapter's or the command's own, else the one the user
    /// means), Go in the `--go-test` package (or here, for a command that runs `go`), Rust in
    /// the `--cargo-test` package (or here, for a command that runs cargo). A target of none
    /// of them runs no command but its tool lines.
    pub fn for_hunt(
        target: &crate::plan::Target,
        adapter: Option<&crate::record::Adapter>,
        tools: Vec<String>,
    ) -> Self {
        use crate::record::Adapter;
        let here = || target.dir.clone().or_else(|| std::env::current_dir().ok());
        let runs = |tool: &str| tools.iter().any(|t| t == tool);
        let python = match adapter {
            Some(Adapter::Pytest { .. }) => target.argv.first().map(|p| (PathBuf::from(p), "the target".to_owned())),
            _ => match python::interpreter_of(&target.argv) {
                Some(program) => Some((PathBuf::from(program), "the target".to_owned())),
                None if runs("python3 --version") => here().and_then(|cwd| {
                    let venv = std::env::var_os("VIRTUAL_ENV");
                    let chosen = crate::exec::python::interpreter(None, venv.as_deref(), &cwd).ok()?;
                    Some((chosen.program, source_name(chosen.source).to_owned()))
                }),
                None => None,
            },
        };
        let (go, rust) = match adapter {
            Some(Adapter::GoTest { dir, .. }) => (Some(dir.clone()), None),
            Some(Adapter::CargoTest { dir, .. }) => (None, Some(dir.clone())),
            _ => (runs("go version").then(here).flatten(), runs("cargo --version").then(here).flatten()),
        };
        Self { tools, python, go, rust }
    }
}

/// How an interpreter's choice is written in a snapshot.
fn source_name(source: crate::exec::python::Source) -> &'static str {
    use crate::exec::python::Source;
    match source {
        Source::Option => "--python",
        Source::VirtualEnv => "VIRTUAL_ENV",
        Source::ProjectVenv => "./.venv",
        Source::Path => "PATH",
    }
}

/// Whether an executable `name` is on `PATH`.
fn on_path(name: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path)
            .any(|d| std::fs::metadata(d.join(name)).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
    })
}

/// A soft/hard resource limit pair; `None` means unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LimitPair {
    /// The limit enforced now (`rlim_cur`).
    pub soft: Option<u64>,
    /// The ceiling the soft limit may be raised to (`rlim_max`).
    pub hard: Option<u64>,
}

/// Locale-related environment variables, unset ones as `None`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Locale {
    /// `LANG`.
    pub lang: Option<String>,
    /// `LC_ALL`, which overrides every other `LC_*` and `LANG`.
    pub lc_all: Option<String>,
    /// `LC_CTYPE`, the category that decides text encoding.
    pub lc_ctype: Option<String>,
}

/// Which control groups this process is in and which hierarchies exist.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Cgroup {
    /// The lines of `/proc/self/cgroup`, e.g. `0::/user.slice/...` (v2) or
    /// `4:memory:/docker/...` (v1).
    pub membership: Vec<String>,
    /// cgroup v1 controllers that have a mounted hierarchy according to
    /// `/proc/mounts`, sorted (named hierarchies appear as `name=systemd`).
    pub v1_controllers: Vec<String>,
    /// Where the unified (v2) hierarchy is mounted, if it is.
    pub v2_mount: Option<String>,
}

impl Snapshot {
    /// Captures a snapshot of the current machine and process.
    ///
    /// `tools` are commands such as `"python3 --version"`; each is split on
    /// whitespace and run without a shell, all concurrently, with stdin
    /// closed and a 2 second limit, after which its whole process group is
    /// killed. The whole capture therefore takes a little over 2 s at worst.
    /// See [`default_tools`] for a sensible list.
    pub fn capture(tools: &[String]) -> Snapshot {
        Self::capture_in(&SnapshotRequest { tools: tools.to_vec(), ..SnapshotRequest::default() }, None, None)
    }

    /// [`Self::capture`] of what `request` asks for besides the machine, from within a hunt
    /// when `tree` is given: the commands are registered with `tree`, so the orphan sweep of
    /// an attempt running meanwhile never takes one for a leak of its own, and carry the hunt's
    /// `FLAKEHUNT_RUN_ID` (`run_id`), so its watchdog ends them (and their process groups) if
    /// flakehunt dies while they run, as it ends attempts. Every command runs at once: the
    /// capture takes as long as the slowest (5 s at worst, the interpreter's and go's limit).
    pub fn capture_in(request: &SnapshotRequest, tree: Option<&ProcessTree>, run_id: Option<&str>) -> Snapshot {
        let started = Instant::now();
        let captured_at = crate::runner::rfc3339(std::time::SystemTime::now());
        let cwd = std::env::current_dir().ok();
        let (ran, toolchains) = run_commands(request, tree, run_id);
        let uname = rustix::system::uname();
        let text = |c: &std::ffi::CStr| non_empty(c.to_string_lossy().trim());
        let kernel = [uname.sysname(), uname.release(), uname.version()]
            .iter()
            .map(|part| part.to_string_lossy().trim().to_owned())
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join(" ");

        let meminfo = read("/proc/meminfo");
        let cpuinfo = read("/proc/cpuinfo");
        let cpus_online = read("/sys/devices/system/cpu/online")
            .and_then(|list| cpu_list_len(&list))
            .or_else(|| cpuinfo.as_deref().and_then(count_processors));
        let membership: Vec<String> = read("/proc/self/cgroup")
            .map(|s| s.lines().filter(|l| !l.trim().is_empty()).map(str::to_owned).collect())
            .unwrap_or_default();
        let mounts = read("/proc/mounts").unwrap_or_default();
        let version = uname.version().to_string_lossy().into_owned();

        let mut snapshot = Snapshot {
            hostname: text(uname.nodename()),
            os: read("/etc/os-release")
                .or_else(|| read("/usr/lib/os-release"))
                .and_then(|s| os_release_pretty_name(&s)),
            kernel: non_empty(&kernel),
            arch: text(uname.machine()).or_else(|| Some(std::env::consts::ARCH.to_owned())),
            cpus_online,
            cpus_allowed: read("/proc/self/status").and_then(|s| colon_field(&s, "Cpus_allowed_list")),
            cpu_model: cpuinfo.and_then(|s| colon_field(&s, "model name")),
            memory_total_bytes: meminfo.as_deref().and_then(|s| meminfo_bytes(s, "MemTotal")),
            memory_available_bytes: meminfo.as_deref().and_then(|s| meminfo_bytes(s, "MemAvailable")),
            load_average: read("/proc/loadavg").and_then(|s| parse_loadavg(&s)),
            rlimits: rlimits(),
            locale: Locale { lang: env_var("LANG"), lc_all: env_var("LC_ALL"), lc_ctype: env_var("LC_CTYPE") },
            timezone: timezone(),
            cgroup_limits: system::cgroup_limits(&membership, &mounts),
            cgroup: Cgroup { membership, ..cgroup_mounts(&mounts) },
            tools: ran.tools,
            env: std::env::vars_os()
                .map(|(name, value)| (name.to_string_lossy().into_owned(), value.to_string_lossy().into_owned()))
                .collect(),
            captured_at: Some(captured_at),
            capture_seconds: None,
            cwd: cwd.as_ref().map(|c| c.display().to_string()),
            kernel_settings: system::kernel_settings(Some(&version)),
            cpu_frequency: system::cpu_frequency(),
            mounts: system::mounts(cwd.as_deref()),
            python: toolchains.python,
            go: toolchains.go,
            rust: toolchains.rust,
        }
        .redacted();
        snapshot.capture_seconds = Some((started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0);
        snapshot
    }

    /// The snapshot with its secrets redacted, unless `--no-redact`: environment variables by
    /// name and value ([`redact`]), and every other text it holds (a tool's version line, a
    /// cgroup path, the locale) by value. A snapshot read back (written with `--no-redact`, or
    /// by an older flakehunt) goes through it again before it is compared or shown.
    pub fn redacted(mut self) -> Snapshot {
        if !crate::redact::enabled() {
            return self;
        }
        for (name, value) in &mut self.env {
            *value = redact(name, value);
        }
        let texts = [&mut self.hostname, &mut self.os, &mut self.kernel, &mut self.cpu_model, &mut self.timezone];
        texts.into_iter().flatten().for_each(crate::redact::in_place);
        let locale = [&mut self.locale.lang, &mut self.locale.lc_all, &mut self.locale.lc_ctype];
        locale.into_iter().flatten().for_each(crate::redact::in_place);
        self.cgroup.membership.iter_mut().for_each(crate::redact::in_place);
        self.tools.values_mut().flatten().for_each(crate::redact::in_place);
        let tools = std::mem::take(&mut self.tools);
        self.tools =
            tools.into_iter().map(|(command, line)| (crate::redact::text(&command).into_owned(), line)).collect();
        let paths = [&mut self.cwd];
        paths.into_iter().flatten().for_each(crate::redact::in_place);
        self.kernel_settings.values_mut().for_each(crate::redact::in_place);
        for mount in self.mounts.values_mut() {
            for text in [&mut mount.path, &mut mount.mount_point, &mut mount.source] {
                crate::redact::in_place(text);
            }
            mount.options.iter_mut().for_each(crate::redact::in_place);
        }
        if let Some(p) = &mut self.python {
            crate::redact::in_place(&mut p.program);
            let texts = [&mut p.executable, &mut p.prefix, &mut p.base_prefix, &mut p.error];
            texts.into_iter().flatten().for_each(crate::redact::in_place);
            p.packages.values_mut().for_each(crate::redact::in_place);
        }
        if let Some(go) = &mut self.go {
            crate::redact::in_place(&mut go.dir);
            for (name, value) in &mut go.env {
                *value = redact(name, value);
            }
            go.modules.values_mut().for_each(crate::redact::in_place);
            [&mut go.error, &mut go.modules_error].into_iter().flatten().for_each(crate::redact::in_place);
        }
        if let Some(rust) = &mut self.rust {
            [&mut rust.error, &mut rust.toolchain_file].into_iter().flatten().for_each(crate::redact::in_place);
            if let Some(lock) = &mut rust.cargo_lock {
                crate::redact::in_place(&mut lock.path);
                lock.packages.values_mut().for_each(crate::redact::in_place);
            }
        }
        self
    }
}

/// What the commands of a snapshot found: the tool lines, and the toolchains.
struct Toolchains {
    python: Option<Python>,
    go: Option<Go>,
    rust: Option<Rust>,
}

/// The tool lines of a snapshot.
struct ToolLines {
    tools: BTreeMap<String, Option<String>>,
}

/// Runs every command `request` asks for at once: the tool version lines, the interpreter's
/// distributions, `go env` and `go list -m all`, `rustc -vV`.
fn run_commands(
    request: &SnapshotRequest,
    tree: Option<&ProcessTree>,
    run_id: Option<&str>,
) -> (ToolLines, Toolchains) {
    let mut probes: Vec<Probe> = Vec::new();
    let tools: Vec<(String, Option<usize>)> = request
        .tools
        .iter()
        .map(|command| {
            let index = tool_probe(command).map(|probe| {
                probes.push(probe);
                probes.len() - 1
            });
            (command.clone(), index)
        })
        .collect();
    let mut push = |probe: Probe| {
        probes.push(probe);
        probes.len() - 1
    };
    let python = request.python.as_ref().map(|(program, _)| push(python::probe(program)));
    let go = request.go.as_ref().map(|dir| {
        let (env, list) = toolchains::go_probes(dir);
        (push(env), list.map(&mut push))
    });
    let rustc = request.rust.as_ref().map(|dir| push(toolchains::rustc_probe(dir)));
    let ran = commands::run_all(probes, tree, run_id);
    let lines = tools.into_iter().map(|(command, index)| (command, index.and_then(|i| tool_line(&ran[i])))).collect();
    let found = Toolchains {
        python: request.python.as_ref().zip(python).map(|((program, why), i)| python::read(program, why, &ran[i])),
        go: request.go.as_ref().zip(go).map(|(dir, (env, list))| toolchains::go(dir, &ran[env], list.map(|i| &ran[i]))),
        rust: request.rust.as_ref().map(|dir| toolchains::rust(dir, rustc.map(|i| &ran[i]))),
    };
    (ToolLines { tools: lines }, found)
}

/// A tool version command, split on whitespace and run without a shell; `None` for a blank
/// one.
fn tool_probe(command: &str) -> Option<Probe> {
    let mut words = command.split_whitespace();
    let mut cmd = std::process::Command::new(words.next()?);
    cmd.args(words);
    Some(Probe { command: cmd, cap: TOOL_OUTPUT_CAP, timeout: TOOL_TIMEOUT })
}

/// The tool version commands a snapshot records: the configuration's list, or those of the
/// runtimes `hunt`'s target uses (every default one for `flakehunt snapshot`, which has no hunt).
pub fn tools_of(config: &crate::config::Config, hunt: Option<&crate::record::Manifest>) -> Vec<String> {
    if !config.snapshot.tools.is_empty() {
        return config.snapshot.tools.clone();
    }
    match hunt {
        Some(m) => {
            let adapter = m.extra.adapter.as_ref().map(crate::record::Adapter::name);
            tools_for(&m.target, adapter)
        }
        None => default_tools(),
    }
}

/// The version commands a hunt of `target` records: those of the runtimes its command line
/// names (any word of it, or the test runner an adapter stands for, `adapter`), and
/// git's. Every hunt used to run all of [`default_tools`], `java -version` for a Rust test
/// included: CPU taken from the first attempts, and their timing disturbed, for versions that
/// say nothing about the test. `flakehunt snapshot` still lists them all; `snapshot.tools` in the
/// configuration chooses.
pub fn tools_for(target: &crate::plan::Target, adapter: Option<&str>) -> Vec<String> {
    // Every word of the command line (a script given to `sh -c` included), but assignments.
    let words = target.argv.iter().flat_map(|a| a.split_whitespace()).filter(|w| !w.contains('='));
    let names = words.map(|w| w.rsplit('/').next().unwrap_or(w)).chain(adapter);
    let mut tools: Vec<&str> = Vec::new();
    for name in names {
        let runtime: &[&str] = match name {
            n if n.starts_with("python") || n.ends_with(".py") => &["python3 --version"],
            "pytest" | "uv" | "tox" => &["python3 --version"],
            "cargo" | "rustc" | "cargo-test" | "cargo-nextest" => &["cargo --version", "rustc --version"],
            "go" | "go-test" => &["go version"],
            "node" | "npm" | "npx" | "yarn" | "pnpm" => &["node --version"],
            "java" | "mvn" | "mvnw" | "gradle" | "gradlew" | "sbt" => &["java -version"],
            "gcc" | "cc" | "make" | "cmake" | "ctest" => &["gcc --version"],
            _ => &[],
        };
        tools.extend(runtime.iter().filter(|t| !tools.contains(t)).collect::<Vec<_>>());
    }
    tools.push("git --version");
    tools.into_iter().map(str::to_owned).collect()
}

/// The tool version commands recorded by default: the usual language
/// toolchains plus `git`.
///
/// `go` has no `--version` flag (it prints an error), so it is asked with
/// `go version`; Java prints its version to stderr with `-version`.
pub fn default_tools() -> Vec<String> {
    [
        "python3 --version",
        "cargo --version",
        "rustc --version",
        "go version",
        "node --version",
        "java -version",
        "gcc --version",
        "git --version",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect()
}

/// Returns `value` as it may be stored for the environment variable `name`: see
/// [`crate::redact::env_value`]. Over-redacting a harmless name costs a debugging detail; a
/// false negative leaks a secret into a bug report.
pub fn redact(name: &str, value: &str) -> String {
    crate::redact::env_value(name, value).into_owned()
}

/// A set, non-empty environment variable.
fn env_var(name: &str) -> Option<String> {
    std::env::var_os(name).and_then(|v| non_empty(&v.to_string_lossy()))
}

/// `PRETTY_NAME` from os-release(5) content, unquoted.
fn os_release_pretty_name(content: &str) -> Option<String> {
    content.lines().find_map(|line| {
        let value = line.trim().strip_prefix("PRETTY_NAME=")?;
        let value = value.trim();
        let unquoted = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(value);
        non_empty(unquoted)
    })
}

/// The value of the first `key : value` line with the given key, as in
/// `/proc/cpuinfo` and `/proc/self/status`.
fn colon_field(content: &str, key: &str) -> Option<String> {
    content.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| non_empty(v)).flatten()
    })
}

/// Number of `processor` entries in `/proc/cpuinfo`.
fn count_processors(cpuinfo: &str) -> Option<usize> {
    let n = cpuinfo.lines().filter(|l| l.split_once(':').is_some_and(|(k, _)| k.trim() == "processor")).count();
    (n > 0).then_some(n)
}

/// Number of CPUs in a kernel CPU list such as `0-3,8,10-11`.
pub fn cpu_list_len(list: &str) -> Option<usize> {
    let mut total = 0usize;
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let count = match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (a.trim().parse::<usize>().ok()?, b.trim().parse::<usize>().ok()?);
                b.checked_sub(a)?.checked_add(1)?
            }
            None => {
                part.trim().parse::<usize>().ok()?;
                1
            }
        };
        total = total.checked_add(count)?;
    }
    (total > 0).then_some(total)
}

/// A `/proc/meminfo` entry (`MemTotal:  16318712 kB`) in bytes.
fn meminfo_bytes(meminfo: &str, key: &str) -> Option<u64> {
    let value = colon_field(meminfo, key)?;
    let mut parts = value.split_whitespace();
    let number: u64 = parts.next()?.parse().ok()?;
    let multiplier = match parts.next() {
        None => 1,
        Some(unit) if unit.eq_ignore_ascii_case("kB") => 1024,
        Some(unit) if unit.eq_ignore_ascii_case("mB") => 1024 * 1024,
        Some(_) => return None,
    };
    number.checked_mul(multiplier)
}

/// The three load averages from `/proc/loadavg` (`0.52 0.58 0.59 1/467 1234`).
fn parse_loadavg(content: &str) -> Option<[f64; 3]> {
    let mut fields = content.split_whitespace().map(|f| f.parse::<f64>().ok());
    Some([fields.next()??, fields.next()??, fields.next()??])
}

/// Resource limits of this process.
fn rlimits() -> BTreeMap<String, LimitPair> {
    crate::exec::Resource::ALL
        .into_iter()
        .map(|r| {
            let (soft, hard) = r.current();
            (r.name().to_owned(), LimitPair { soft, hard })
        })
        .collect()
}

/// `TZ`, else `/etc/timezone`, else the zone name `/etc/localtime` links to.
fn timezone() -> Option<String> {
    env_var("TZ").or_else(|| read("/etc/timezone").and_then(|s| non_empty(&s))).or_else(|| {
        let target = std::fs::read_link("/etc/localtime").ok()?;
        let target = target.to_string_lossy();
        // `/usr/share/zoneinfo/Europe/Paris` -> `Europe/Paris`.
        match target.split_once("zoneinfo/") {
            Some((_, zone)) => non_empty(zone),
            None => non_empty(&target),
        }
    })
}

/// The cgroup hierarchies mounted according to `/proc/mounts` content
/// (membership is filled in by the caller).
fn cgroup_mounts(mounts: &str) -> Cgroup {
    let mut cgroup = Cgroup::default();
    for line in mounts.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [_, mount_point, fstype, options, ..] = fields[..] else {
            continue;
        };
        match fstype {
            // The first unified mount is the one systemd and runtimes use.
            "cgroup2" if cgroup.v2_mount.is_none() => {
                cgroup.v2_mount = Some(unescape_mount_path(mount_point));
            }
            "cgroup" => {
                for option in options.split(',') {
                    if CGROUP_V1_CONTROLLERS.contains(&option) || option.starts_with("name=") {
                        cgroup.v1_controllers.push(option.to_owned());
                    }
                }
            }
            _ => {}
        }
    }
    cgroup.v1_controllers.sort();
    cgroup.v1_controllers.dedup();
    cgroup
}

/// Runs every tool command at once and returns the first line each one printed, `None` for
/// tools that could not be started, exited unsuccessfully, or were still running after
/// `timeout`.
#[cfg(test)]
fn run_tools(
    tools: &[String],
    timeout: Duration,
    tree: Option<&ProcessTree>,
    run_id: Option<&str>,
) -> BTreeMap<String, Option<String>> {
    let mut probes = Vec::new();
    let index: Vec<Option<usize>> = tools
        .iter()
        .map(|t| {
            tool_probe(t).map(|p| {
                probes.push(Probe { timeout, ..p });
                probes.len() - 1
            })
        })
        .collect();
    let ran = commands::run_all(probes, tree, run_id);
    tools.iter().zip(index).map(|(t, i)| (t.clone(), i.and_then(|i| tool_line(&ran[i])))).collect()
}

/// The first non-empty line of stdout, else of stderr (Java prints its version there), for a
/// tool that exited successfully.
fn tool_line(ran: &Ran) -> Option<String> {
    match ran {
        Ran::Exited { status, stdout, stderr } if status.success() => first_line(stdout).or_else(|| first_line(stderr)),
        _ => None,
    }
}

fn first_line(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(line.chars().take(TOOL_LINE_CAP).collect())
}

#[cfg(test)]
mod tests;
