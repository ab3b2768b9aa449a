//! Warm attempts for Python targets: a parent interpreter imports the target once, and each
//! attempt is a fork of it that runs exactly that attempt. Main types: [`WarmParent`] (one warm
//! parent process) and [`WarmCell`] (a cell's parents, recycled, with the fallback to cold).
//!
//! A `python3 -m pytest ARGS` or `python3 SCRIPT ARGS` target is started once as
//! `python3 parent.py SOCKET KIND -- ARGS` (the program in `parent.py`, written to a private
//! temporary directory), through the same spawn path as attempts, registered in the process
//! tree as a helper (so no sweep takes it for an orphan) and carrying `FLAKEHUNT_RUN_ID` (so the
//! watchdog ends it if flakehunt dies). It connects to a `SOCK_SEQPACKET` socket flakehunt
//! listens on in that directory, warms up (see `parent.py`) and says `{"ready": true}` or
//! `{"refused": "..."}`.
//!
//! Protocol, one message each way per attempt (a message is one JSON line):
//! - request: `{"argv": [...], "set": {...}, "unset": [...], "cwd": "...", "cpus": [..] | null,
//!   "rlimits": [[name, soft, hard]], "nice": n | null, "sched_idle": bool}` with the fds
//!   stdout, stderr, status (write ends of pipes flakehunt reads) and one `cgroup.procs` per
//!   cgroup to join, passed with `SCM_RIGHTS`. `argv` is what follows `-m pytest` (the attempt's
//!   node ids in its order) or the script; `set` and `unset` are how the attempt's whole
//!   environment differs from the one the parent was started with.
//! - reply: `{"pid": N}` with a pidfd of the child, once the child has applied everything, or
//!   `{"error": "...", "errno": N}` when a setting was refused (as a cold start fails).
//! - `{"settled": PID}` (no reply), once flakehunt has read what it measures of the started
//!   child in `/proc` (the profile's CPUs, policy): the parent reaps an exited child only then,
//!   as a cold attempt's exited process stays readable until flakehunt waits for it.
//! - on the status pipe, when the parent has reaped the child: `{"status": WAIT_STATUS, "cpu":
//!   SECONDS}`.
//!
//! The child leads its own process group, so the attempt's timeout, cancellation, pauses and
//! sweep work on it as on a cold attempt: it becomes a [`Running`] like any other (only its
//! reaping differs), with its output read by the same capture code.
//!
//! What differs from a cold start, by construction: the interpreter started once with the
//! parent's environment, so what Python reads at start-up (`PYTHON*` variables, `LD_PRELOAD`)
//! cannot change per attempt (an attempt whose launch changes one runs cold); the hash seed is
//! fixed per parent ([`WarmOptions::recycle_after`] starts a new parent, with a new seed, every N
//! attempts); modules imported at warm-up read their environment then, not per attempt; the
//! pytest header is printed at warm-up, not by each attempt; a child exits as the interpreter
//! would (non-daemon threads joined, atexit handlers run, streams flushed) but without freeing
//! every module, so finalizers run at interpreter shutdown are skipped (freeing what the parent
//! imported would copy its memory page by page). `random` re-seeds itself after
//! fork (`os.register_at_fork(after_in_child=_inst.seed)` in CPython's random.py, checked on
//! 3.11), and the child re-seeds numpy's global generator, which does not.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, IoSlice, IoSliceMut, Read};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage,
    SendFlags, SocketAddrUnix, SocketFlags, SocketType,
};
use rustix::process::{Pid, PidfdFlags, Signal};
use serde::Deserialize;

use crate::exec::{Capture, Launch, ProcessTree, Running, Status};

/// The warm parent's program.
const PARENT_PY: &str = include_str!("parent.py");

/// Variables set per attempt, kept out of the parent's own environment: its children's
/// `/proc/PID/environ` is the parent's, and a sweep must never read one attempt's marker there.
const PER_ATTEMPT: [&str; 5] = [
    "FLAKEHUNT_ATTEMPT",
    "FLAKEHUNT_ITERATION",
    "FLAKEHUNT_WORKER",
    "FLAKEHUNT_SWITCH_REPORT",
    "FLAKEHUNT_SWITCH_INTERVAL",
];

/// The variable that marks the processes a parent's warm-up started: the parent's own directory.
const WARMUP_MARKER: &str = "FLAKEHUNT_WARMUP";

/// Why warm attempts are not (or no longer) available.
#[derive(Debug, thiserror::Error)]
pub enum WarmError {
    /// The target is not one a warm parent serves.
    #[error("warm mode needs `python3 -m pytest ...` or `python3 SCRIPT.py ...`: attempts run cold")]
    Unsupported,
    /// The parent refused during warm-up (a thread started at import, collection failed) or
    /// exited; `output` is the end of what it wrote.
    #[error("{reason}")]
    Refused {
        /// One line saying why.
        reason: String,
        /// The end of the parent's stdout and stderr.
        output: String,
    },
    /// This attempt's launch changes what only a new interpreter could apply; it runs cold.
    #[error("warm mode cannot apply {0} to a fork of the warm parent: attempts with it run cold")]
    NotServed(String),
    /// The parent stopped answering; this and later attempts run cold.
    #[error("the warm parent is gone ({0}): attempts run cold")]
    Gone(String),
    /// The parent died after it was sent the attempt, before it replied: its fork may have run
    /// the target (and may be what killed it), so this attempt is run again cold, said so.
    #[error("{0}")]
    Lost(String),
    /// The child could not be set up as asked (a refused setting), as a cold start can fail.
    #[error("{0}")]
    Start(io::Error),
    /// Setting up the parent failed.
    #[error("cannot start the warm parent ({0}): attempts run cold")]
    Io(#[from] io::Error),
}

/// Settings of warm attempts.
#[derive(Debug, Clone)]
pub struct WarmOptions {
    /// A new parent (with a new hash seed) after this many attempts of one parent, so that
    /// hash-order flakiness is still met; `None` keeps one parent. The new one is started while
    /// the old one serves its last attempts (see [`WarmParent::launch`]), so attempts do not
    /// wait for its warm-up.
    pub recycle_after: Option<u64>,
    /// How long warm-up may take before the parent is refused.
    pub warmup_timeout: Duration,
    /// Every Nth attempt of a cell runs cold, so that a hunt compares the two modes' failure
    /// rates (a failure met only cold is a start-up race); `None`: none does.
    pub cold_every: Option<u64>,
    /// What the parents run when it is not the first attempt's target: a suite's fixed
    /// arguments ([`WarmTarget::Suite`]), which every attempt of the suite runs a part of.
    pub target: Option<WarmTarget>,
    /// Tells the watchdog about each parent's temporary directory, so that a killed flakehunt
    /// leaves none behind.
    pub dirs: Option<crate::exec::DirTracker>,
}

impl Default for WarmOptions {
    fn default() -> Self {
        Self {
            recycle_after: Some(DEFAULT_RECYCLE),
            warmup_timeout: Duration::from_secs(300),
            cold_every: None,
            target: None,
            dirs: None,
        }
    }
}

impl WarmOptions {
    /// The options a hunt's plan records.
    pub fn of_plan(plan: &crate::plan::WarmPlan) -> Self {
        let some = |n: u64| (n > 0).then_some(n);
        Self { recycle_after: some(plan.recycle_after), cold_every: some(plan.cold_every), ..Self::default() }
    }
}

/// Attempts per parent by default: a 1,000-attempt hunt meets 20 hash seeds. A warm-up costs
/// about one cold attempt, of CPU rather than of waiting (the successor warms up beside the
/// attempts), so this spends about 2% of a hunt's CPU on warm-ups.
pub const DEFAULT_RECYCLE: u64 = 50;

/// The warm plan of a new hunt: on when asked (`asked`, else `by_default`) for a target a warm
/// parent serves. The line is what to say, once, when `--warm` was given for a target that it
/// cannot serve (which then runs cold).
pub fn plan(
    asked: Option<bool>,
    by_default: bool,
    target: &crate::plan::Target,
    config: &crate::config::WarmConfig,
) -> (Option<crate::plan::WarmPlan>, Option<String>) {
    if !asked.unwrap_or(by_default) {
        return (None, None);
    }
    let (program, args) = target.program_and_args(&[]);
    if target.shell || WarmTarget::of(&Launch { program, args, ..Launch::default() }).is_none() {
        return (None, (asked == Some(true)).then(|| WarmError::Unsupported.to_string()));
    }
    (Some(configured(config)), None)
}

/// The warm plan `config` makes (its recycling and cold attempts, or the defaults).
pub fn configured(config: &crate::config::WarmConfig) -> crate::plan::WarmPlan {
    let recycle_after = config.recycle_after.unwrap_or(DEFAULT_RECYCLE);
    crate::plan::WarmPlan { recycle_after, cold_every: config.cold_every.unwrap_or(0) }
}

/// What a warm parent runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WarmTarget {
    /// `python3 -m pytest ARGS`.
    Pytest {
        /// What follows `-m pytest`.
        args: Vec<String>,
    },
    /// `python3 SCRIPT ARGS`.
    Script {
        /// The script as given.
        path: String,
        /// Its arguments.
        args: Vec<String>,
    },
    /// `python3 -m pytest OPTIONS IDS...` of `flakehunt suite`: each attempt runs any of the
    /// node ids, in its own order, with the same options and a junit xml file of its own
    /// (`--junitxml PATH`, anywhere in its arguments). The parent is started with a placeholder
    /// xml path, so that pytest's junitxml plugin is set up for the children to point at theirs.
    Suite {
        /// What follows `-m pytest` in every attempt, before its node ids.
        options: Vec<String>,
        /// The collected node ids.
        ids: BTreeSet<String>,
    },
}

impl WarmTarget {
    /// The warm target of a launch, if a warm parent can serve it: a Python interpreter by name
    /// (`python`, `python3`, `python3.11`, with or without a directory) running `-m pytest` or a
    /// `.py` file, with no interpreter option before it.
    pub fn of(launch: &Launch) -> Option<Self> {
        let program = Path::new(&launch.program).file_name()?.to_str()?;
        let version = program.strip_prefix("python")?;
        if !version.chars().all(|c| c.is_ascii_digit() || c == '.') {
            return None;
        }
        let args: Vec<String> = launch.args.iter().map(|a| a.to_str().map(str::to_owned)).collect::<Option<_>>()?;
        match args.as_slice() {
            [m, pytest, rest @ ..] if m == "-m" && pytest == "pytest" => Some(Self::Pytest { args: rest.to_vec() }),
            [script, rest @ ..] if script.ends_with(".py") && !script.starts_with('-') => {
                Some(Self::Script { path: script.clone(), args: rest.to_vec() })
            }
            _ => None,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Self::Pytest { .. } | Self::Suite { .. } => "pytest",
            Self::Script { .. } => "script",
        }
    }

    /// The parent's arguments after `--`; `placeholder` is a suite parent's junit xml file.
    fn parent_args(&self, placeholder: &Path) -> Vec<String> {
        match self {
            Self::Pytest { args } => args.clone(),
            Self::Script { path, args } => std::iter::once(path.clone()).chain(args.iter().cloned()).collect(),
            Self::Suite { options, ids } => {
                let junit = ["--junitxml".to_owned(), placeholder.display().to_string()];
                options.iter().cloned().chain(junit).chain(ids.iter().cloned()).collect()
            }
        }
    }

    /// The child's `argv` for another launch of the same target (the attempt's node ids), and
    /// for a suite parent its junit xml file (`Some(None)`: the attempt writes none), or why it
    /// is not the same target.
    fn attempt_argv(&self, other: &WarmTarget) -> Result<(Vec<String>, Option<Option<String>>), WarmError> {
        if let (Self::Suite { options, ids }, Self::Pytest { args }) = (self, other) {
            // The parent's session collected every id with these options: an attempt may run
            // any of the ids in any order, with no option of its own but its xml file.
            let (args, junit) = without_junitxml(args);
            let served = args.starts_with(options) && args[options.len()..].iter().all(|a| ids.contains(a));
            return if served {
                Ok((args, Some(junit)))
            } else {
                Err(WarmError::NotServed("pytest options other than the suite's".into()))
            };
        }
        let argv = match (self, other) {
            // The parent's session collected for its arguments: an attempt may reorder them
            // (its node ids in its order), nothing else.
            (Self::Pytest { args: mine }, Self::Pytest { args }) => {
                let (mut a, mut b) = (mine.clone(), args.clone());
                a.sort();
                b.sort();
                if a == b {
                    Ok(args.clone())
                } else {
                    Err(WarmError::NotServed("other pytest arguments".into()))
                }
            }
            (Self::Script { path, .. }, Self::Script { path: p, args }) if path == p => Ok(args.clone()),
            _ => Err(WarmError::NotServed("another program".into())),
        };
        argv.map(|a| (a, None))
    }
}

/// pytest arguments without their `--junitxml PATH` (or `--junit-xml`, or `=PATH`), and the
/// last such path.
fn without_junitxml(args: &[String]) -> (Vec<String>, Option<String>) {
    let (mut rest, mut junit) = (Vec::with_capacity(args.len()), None);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if let Some(path) = a.strip_prefix("--junitxml=").or_else(|| a.strip_prefix("--junit-xml=")) {
            junit = Some(path.to_owned());
        } else if a == "--junitxml" || a == "--junit-xml" {
            junit = it.next().cloned();
        } else {
            rest.push(a.clone());
        }
    }
    (rest, junit)
}

/// One warm parent process.
pub struct WarmParent<'t> {
    inner: Arc<Inner<'t>>,
    target: WarmTarget,
    /// The parent's whole environment, which an attempt's request changes; what Python or the
    /// dynamic loader read of it at start-up no attempt may change.
    parent_env: BTreeMap<String, String>,
    served: AtomicU64,
    /// What the program's start-up changed of the parent that an attempt may set again: such an
    /// attempt runs cold, since a cold start applies the setting before the program's change and
    /// a fork after it.
    changed: Vec<String>,
    /// The parent's working directory as started (an attempt in another runs cold when the
    /// program's start-up changed directory).
    cwd: Option<std::path::PathBuf>,
    /// From its start to its ready line.
    warmup: Duration,
    ready_at: Instant,
}

/// A warm parent that is warming up: see [`WarmParent::launch`]. Dropped before it is ready, it
/// is ended at once (it never connected, so nothing else would tell it to end).
pub struct Pending<'t> {
    inner: Inner<'t>,
    listener: OwnedFd,
    /// Its stdout and stderr, read while it warms up.
    output: (File, File),
    launched: Instant,
    timeout: Duration,
    target: WarmTarget,
    parent_env: BTreeMap<String, String>,
    cwd: Option<std::path::PathBuf>,
}

impl<'t> Pending<'t> {
    /// Waits for the parent's warm-up (what is left of it) and returns the ready parent, or its
    /// refusal (one line).
    pub fn ready(self) -> Result<WarmParent<'t>, WarmError> {
        let Self { inner, listener, output: (stdout, stderr), launched, timeout, target, parent_env, cwd } = self;
        let deadline = crate::bounds::deadline(launched, timeout);
        let (conn, hello) = warm_up(&inner, &listener, stdout, stderr, deadline, timeout)?;
        *inner.conn.lock().unwrap_or_else(|e| e.into_inner()) = Some(conn);
        Ok(WarmParent {
            inner: Arc::new(inner),
            target,
            parent_env,
            served: AtomicU64::new(0),
            changed: hello.changed,
            cwd,
            warmup: launched.elapsed(),
            ready_at: Instant::now(),
        })
    }
}

/// The parent process and its socket; dropped when the last attempt it forked has been reaped.
struct Inner<'t> {
    /// The connection, once the parent has connected; closed to end the parent.
    conn: Mutex<Option<OwnedFd>>,
    pid: u32,
    pidfd: OwnedFd,
    tree: &'t ProcessTree,
    /// How the parent died while an attempt of it ran, once an attempt has found it dead.
    died: Mutex<Option<String>>,
    /// Holds `parent.py` and the socket; removed with the parent (before the watchdog is told
    /// to forget it).
    _dir: tempfile::TempDir,
    _tracked: Option<crate::exec::TrackedDir>,
}

#[derive(Deserialize)]
struct Hello {
    #[serde(default)]
    ready: bool,
    refused: Option<String>,
    /// What the program's start-up changed that an attempt may set again (`cwd`, `cpus`,
    /// `nice`, `rlimit NAME`).
    #[serde(default)]
    changed: Vec<String>,
}

#[derive(Deserialize)]
struct Reply {
    pid: Option<u32>,
    error: Option<String>,
    errno: Option<i32>,
    /// The parent's own failure, said before it exits.
    gone: Option<String>,
}

#[derive(Deserialize)]
struct Exit {
    status: i32,
    cpu: Option<f64>,
}

impl<'t> WarmParent<'t> {
    /// Starts a warm parent for the target of `launch` (a launch of the cell, e.g. its first
    /// attempt's: its per-attempt `FLAKEHUNT_*` variables and settings are left out) and waits
    /// for its warm-up. A refusal is [`WarmError::Refused`] with one line saying why.
    pub fn start(launch: &Launch, tree: &'t ProcessTree, options: &WarmOptions) -> Result<Self, WarmError> {
        Self::launch(launch, tree, options)?.ready()
    }

    /// Starts a warm parent as [`Self::start`] does, without waiting for its warm-up: it warms
    /// up by itself meanwhile (a cell starts its next parent while the current one serves its
    /// last attempts), and [`Pending::ready`] waits for what is left of it.
    pub fn launch(launch: &Launch, tree: &'t ProcessTree, options: &WarmOptions) -> Result<Pending<'t>, WarmError> {
        let target = match (WarmTarget::of(launch), &options.target) {
            (Some(WarmTarget::Pytest { .. }), Some(fixed)) => fixed.clone(),
            (target, _) => target.ok_or(WarmError::Unsupported)?,
        };
        if launch.env.iter().any(|(name, _)| name == "FLAKEHUNT_JITTER_REPORT") {
            // The preloaded library reads its seed and report path once, at the parent's start,
            // and reports at a process's exit, which a fork skips.
            return Err(WarmError::NotServed("the jitter library (preloaded, set up at start-up)".into()));
        }
        let dir = tempfile::Builder::new().prefix("flakehunt-warm-").tempdir()?;
        let program = dir.path().join("parent.py");
        std::fs::write(&program, PARENT_PY)?;
        let socket_path = dir.path().join("socket");
        let listener = rustix::net::socket_with(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None)
            .map_err(io::Error::from)?;
        let address = SocketAddrUnix::new(&socket_path).map_err(io::Error::from)?;
        rustix::net::bind(&listener, &address).map_err(io::Error::from)?;
        rustix::net::listen(&listener, 1).map_err(io::Error::from)?;

        // Removed by the watchdog if flakehunt dies (a parent's directory is its own alone).
        let tracked = options.dirs.as_ref().map(|d| d.track(dir.path()));
        let mut args: Vec<OsString> = vec![program.into(), socket_path.into(), target.kind().into(), "--".into()];
        args.extend(target.parent_args(&dir.path().join("placeholder.xml")).into_iter().map(OsString::from));
        let mut env: Vec<(OsString, Option<OsString>)> =
            launch.env.iter().filter(|(name, _)| !PER_ATTEMPT.iter().any(|p| name == p)).cloned().collect();
        // Marks what the warm-up starts, so that the parent finds a process it left running
        // even once it has left the parent's group and been re-parented (see parent.py).
        env.push((WARMUP_MARKER.into(), Some(dir.path().as_os_str().to_owned())));
        let parent = Launch {
            program: launch.program.clone(),
            args,
            env_clear: launch.env_clear,
            env,
            cwd: launch.cwd.clone(),
            setup: Default::default(),
        };
        let parent_env =
            full_env(&parent).ok_or_else(|| WarmError::NotServed("a variable that is not UTF-8".into()))?;
        let spawned = tree.spawn_helper(|| parent.spawn(), |c| c.pid)?;
        let pid = spawned.pid;
        let pidfd = match spawned.pidfd {
            Some(fd) => fd,
            None => match rustix::process::pidfd_open(raw_pid(pid), PidfdFlags::empty()) {
                Ok(fd) => fd,
                Err(e) => {
                    let _ = rustix::process::kill_process_group(raw_pid(pid), Signal::KILL);
                    waitpid(pid);
                    tree.release(pid);
                    return Err(WarmError::Io(e.into()));
                }
            },
        };
        let inner =
            Inner { conn: Mutex::new(None), pid, pidfd, tree, died: Mutex::new(None), _dir: dir, _tracked: tracked };
        // From here on, dropping `inner` ends and reaps the parent.
        Ok(Pending {
            inner,
            listener,
            output: (spawned.stdout, spawned.stderr),
            launched: Instant::now(),
            timeout: options.warmup_timeout,
            target,
            parent_env,
            cwd: launch.cwd.clone(),
        })
    }

    /// The parent's pid (also its process group).
    pub fn pid(&self) -> u32 {
        self.inner.pid
    }

    /// What the program's start-up changed of the parent's settings that an attempt may set
    /// again (`cwd`, `cpus`, `nice`, `rlimit NAME`).
    pub fn changed(&self) -> &[String] {
        &self.changed
    }

    /// Attempts this parent has forked.
    pub fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }

    /// Whether this parent, replaced after `recycle_after` attempts, is due to be replaced soon
    /// enough that its successor should start warming up now: once it has served half its
    /// attempts, or earlier when the rest, at the pace it has served them so far, take less
    /// than twice its own warm-up. Then no attempt after the cell's first waits for a warm-up.
    fn due_within(&self, recycle_after: u64) -> bool {
        let served = self.served();
        if served == 0 {
            return false;
        }
        let left = recycle_after.saturating_sub(served);
        if left * 2 <= recycle_after {
            return true;
        }
        let per_attempt = self.ready_at.elapsed().as_secs_f64() / served as f64;
        left as f64 * per_attempt <= 2.0 * self.warmup.as_secs_f64()
    }

    /// What of the attempt's launch would undo a change the program's own start-up made (a
    /// module that raises its open-file limit, pins itself, or changes directory at import): a
    /// cold start applies the attempt's setting before the program changes it, a fork after.
    fn undoes_start_up(&self, launch: &Launch) -> Option<String> {
        let changed = |what: &str| self.changed.iter().any(|c| c == what);
        let setup = &launch.setup;
        let mut undone = Vec::new();
        if setup.cpus.is_some() && changed("cpus") {
            undone.push("a CPU affinity".to_owned());
        }
        if (setup.nice.is_some() || setup.sched_idle) && changed("nice") {
            undone.push("a priority".to_owned());
        }
        for limit in &setup.rlimits {
            if changed(&format!("rlimit {}", limit.resource.name())) {
                undone.push(format!("RLIMIT_{}", limit.resource.name().to_ascii_uppercase()));
            }
        }
        if changed("cwd") && launch.cwd != self.cwd {
            undone.push("another working directory".to_owned());
        }
        (!undone.is_empty()).then(|| format!("{}, which the target's own start-up changes", undone.join(", ")))
    }

    /// Starts one attempt as a fork of this parent: `launch` is the attempt's launch as a cold
    /// attempt would spawn it (profile applied), `marker` as for [`Running::spawn`]. The result
    /// is waited for like a cold attempt. [`WarmError::Start`] is a refused setting (record it as
    /// a cold spawn error); the other errors mean "run this attempt cold".
    pub fn start_attempt(&self, launch: &Launch, marker: String) -> Result<Running<'t>, WarmError> {
        let other = WarmTarget::of(launch).ok_or(WarmError::NotServed("another program".into()))?;
        let (argv, junitxml) = self.target.attempt_argv(&other)?;
        let env = full_env(launch).ok_or_else(|| WarmError::NotServed("a variable that is not UTF-8".into()))?;
        let parent = &self.parent_env;
        let changed = |n: &&String| env.get(*n) != parent.get(*n);
        let read_at_start: BTreeSet<&str> = env
            .keys()
            .chain(parent.keys())
            .filter(|n| read_at_startup(n))
            .filter(changed)
            .map(String::as_str)
            .collect();
        if !read_at_start.is_empty() {
            return Err(WarmError::NotServed(read_at_start.into_iter().collect::<Vec<_>>().join(", ")));
        }
        if let Some(undone) = self.undoes_start_up(launch) {
            return Err(WarmError::NotServed(undone));
        }
        // Absolute: the parent already runs in a relative one (a suite's rootdir below where the
        // hunt started), and the fork would look for it again from there.
        let cwd = match &launch.cwd {
            Some(dir) => std::path::absolute(dir).map_err(WarmError::Start)?,
            None => std::env::current_dir().map_err(WarmError::Start)?,
        };
        let setup = &launch.setup;
        // What the attempt's environment changes in the parent's: a few names, not the whole
        // environment (the fork writes only these, and each write copies a shared page).
        let unset: Vec<&String> = parent.keys().filter(|n| !env.contains_key(*n)).collect();
        let set: serde_json::Map<String, serde_json::Value> =
            env.iter().filter(|(n, _)| changed(n)).map(|(n, v)| (n.clone(), v.as_str().into())).collect();
        let mut request = serde_json::json!({
            "argv": argv,
            "set": set,
            "unset": unset,
            "cwd": cwd.to_str().ok_or_else(|| WarmError::NotServed("a directory that is not UTF-8".into()))?,
            "cpus": setup.cpus,
            "rlimits": setup.rlimits.iter().map(|l| (l.resource.name(), l.soft, l.hard)).collect::<Vec<_>>(),
            "nice": setup.nice,
            "sched_idle": setup.sched_idle,
        });
        if let Some(path) = junitxml {
            request["junitxml"] = path.into();
        }
        let mut line = serde_json::to_vec(&request).expect("a JSON value serialises");
        line.push(b'\n');

        let started_at = SystemTime::now();
        let started = Instant::now();
        let started_ticks = crate::exec::boot_ticks();
        let (out_read, out_write) = pipe().map_err(WarmError::Start)?;
        let (err_read, err_write) = pipe().map_err(WarmError::Start)?;
        let (status_read, status_write) = pipe().map_err(WarmError::Start)?;
        let mut fds: Vec<BorrowedFd<'_>> = vec![out_write.as_fd(), err_write.as_fd(), status_write.as_fd()];
        fds.extend(setup.cgroup_procs.iter().map(|fd| fd.as_fd()));

        let (pid, pidfd) = self.inner.tree.spawn_registered(
            || {
                let conn = self.inner.conn.lock().unwrap_or_else(|e| e.into_inner());
                let conn = conn.as_ref().ok_or_else(|| WarmError::Gone("not connected".into()))?;
                send(conn, &line, &fds).map_err(|e| WarmError::Gone(format!("sending a request: {e}")))?;
                // Sent: from here on its fork may be running the target.
                let lost = |_| WarmError::Lost(self.inner.death());
                let (reply, pidfd) = receive(conn).map_err(lost)?;
                let reply: Reply =
                    serde_json::from_slice(&reply).map_err(|e| WarmError::Gone(format!("an unreadable reply: {e}")))?;
                if let Some(why) = reply.gone {
                    return Err(WarmError::Gone(format!("it failed: {why}")));
                }
                match (reply.pid, pidfd, reply.error) {
                    (Some(pid), Some(pidfd), _) => Ok((pid, pidfd)),
                    (_, _, Some(error)) => Err(WarmError::Start(match reply.errno {
                        Some(n) => io::Error::from_raw_os_error(n),
                        None => io::Error::other(error),
                    })),
                    _ => Err(WarmError::Gone("a reply without a pid".into())),
                }
            },
            |(pid, _)| *pid,
        )?;
        drop((out_write, err_write, status_write));
        self.served.fetch_add(1, Ordering::Relaxed);
        let reaped =
            Reaped { status: File::from(status_read), parent: Arc::clone(&self.inner), pid, settled: false.into() };
        Ok(Running::adopt(
            pid,
            pidfd,
            (File::from(out_read), File::from(err_read)),
            (started, started_at, started_ticks),
            self.inner.tree,
            marker,
            Box::new(reaped),
        ))
    }
}

/// How a warm child's end is learned: the status its parent writes once it has reaped it. Holds
/// the parent, which is ended only once no child of it is left.
pub(crate) struct Reaped<'t> {
    status: File,
    parent: Arc<Inner<'t>>,
    pid: u32,
    /// The parent has been told it may reap the child.
    settled: std::sync::atomic::AtomicBool,
}

impl crate::exec::ForeignReap for Reaped<'_> {
    /// Tells the parent it may reap the child once it exits (once: later calls do nothing).
    fn settle(&self) {
        if self.settled.swap(true, Ordering::Relaxed) {
            return;
        }
        let line = format!("{{\"settled\": {}}}\n", self.pid);
        let conn = self.parent.conn.lock().unwrap_or_else(|e| e.into_inner());
        // A parent that is gone has nothing left to reap.
        if let Some(conn) = conn.as_ref() {
            let _ = send(conn, line.as_bytes(), &[]);
        }
    }

    /// The child's end and CPU time, as the parent reports them. Called once the child has
    /// exited (its pidfd is readable): the parent reaps it at once and writes the line. `Err`
    /// says how the parent died before it could: the child's end is then unknown, and says
    /// nothing of the target (flakehunt's own helper is gone).
    fn status(mut self: Box<Self>) -> Result<(Status, Option<f64>), String> {
        self.settle();
        let mut text = Vec::new();
        let _ = self.status.read_to_end(&mut text);
        let Ok(exit) = serde_json::from_slice::<Exit>(text.trim_ascii()) else {
            let why = self.parent.death();
            // Re-parented to flakehunt when it is the subreaper: reaped here, so that no zombie
            // is left (a no-op when it is another process's child).
            // SAFETY: a non-blocking wait for one pid; a null status pointer is allowed.
            unsafe { libc::waitpid(self.pid as i32, std::ptr::null_mut(), libc::WNOHANG) };
            return Err(why);
        };
        let st = exit.status;
        let status = if libc::WIFEXITED(st) {
            Status::Exited(libc::WEXITSTATUS(st))
        } else if libc::WIFSIGNALED(st) {
            Status::Signaled(libc::WTERMSIG(st))
        } else {
            Status::Exited(-1)
        };
        Ok((status, exit.cpu))
    }
}

impl Inner<'_> {
    /// How the parent died, found once (by its exit status, left for the drop to reap) and
    /// kept, so that its cell stops using it.
    fn death(&self) -> String {
        let mut died = self.died.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(why) = died.as_ref() {
            return why.clone();
        }
        // Its status pipe reaches end-of-file as its files close, a moment before it has exited.
        let why = if wait_readable(&self.pidfd, Duration::from_secs(5)) {
            match peek_exit(self.pid) {
                Some(Status::Signaled(sig)) => {
                    format!("the warm parent died (killed by {})", crate::schema::process::signal_name(sig))
                }
                Some(Status::Exited(code)) => format!("the warm parent died (exit code {code})"),
                None => "the warm parent died".to_owned(),
            }
        } else {
            "the warm parent did not report an attempt's end".to_owned()
        };
        *died = Some(why.clone());
        why
    }

    fn dead(&self) -> Option<String> {
        self.died.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The exit status of an exited child, leaving it to be reaped.
fn peek_exit(pid: u32) -> Option<Status> {
    // SAFETY: siginfo_t is plain data that waitid fills; zeroed is a valid initial value.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let flags = libc::WEXITED | libc::WNOWAIT | libc::WNOHANG;
    // SAFETY: a pointer to a live local; pid is our child.
    if unsafe { libc::waitid(libc::P_PID, pid, &mut info, flags) } != 0 {
        return None;
    }
    // SAFETY: waitid filled a child's status.
    let (code, status) = (info.si_code, unsafe { info.si_status() });
    match code {
        libc::CLD_EXITED => Some(Status::Exited(status)),
        libc::CLD_KILLED | libc::CLD_DUMPED => Some(Status::Signaled(status)),
        _ => None,
    }
}

impl Drop for Inner<'_> {
    fn drop(&mut self) {
        // Closing the socket tells the parent to exit; it has no child left (each holds this).
        // One that never connected (still warming up, or refused) is told nothing: ended at once.
        let told = self.conn.get_mut().unwrap_or_else(|e| e.into_inner()).take().is_some();
        if !told || !wait_readable(&self.pidfd, Duration::from_secs(5)) {
            let _ = rustix::process::kill_process_group(raw_pid(self.pid), Signal::KILL);
        }
        waitpid(self.pid);
        self.tree.release(self.pid);
    }
}

/// Accepts the parent's connection and reads its first line, capturing its output meanwhile.
fn warm_up(
    inner: &Inner<'_>,
    listener: &OwnedFd,
    stdout: File,
    stderr: File,
    deadline: Instant,
    timeout: Duration,
) -> Result<(OwnedFd, Hello), WarmError> {
    let mut out = Capture::new(0, 2048);
    let mut err = Capture::new(0, 2048);
    let mut streams = [Some(stdout), Some(stderr)];
    let mut conn: Option<OwnedFd> = None;
    let mut buf = vec![0u8; 16 * 1024];
    let refused = |reason: String, out: &Capture, err: &Capture| WarmError::Refused {
        reason,
        output: format!("{}{}", out.tail_text(), err.tail_text()),
    };
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(refused(
                format!("warm mode refused: warm-up took longer than {}s; attempts run cold", timeout.as_secs()),
                &out,
                &err,
            ));
        }
        let socket = conn.as_ref().map_or(listener.as_fd(), |c| c.as_fd());
        let mut fds = vec![PollFd::new(&inner.pidfd, PollFlags::IN), PollFd::from_borrowed_fd(socket, PollFlags::IN)];
        for s in streams.iter().flatten() {
            fds.push(PollFd::from_borrowed_fd(s.as_fd(), PollFlags::IN));
        }
        match rustix::event::poll(&mut fds, Some(&timespec(left))) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(WarmError::Io(e.into())),
        }
        let ready: Vec<bool> = fds.iter().map(|f| !f.revents().is_empty()).collect();
        drop(fds);
        let mut next = 2;
        for (i, capture) in [&mut out, &mut err].into_iter().enumerate() {
            if let Some(stream) = streams[i].as_mut() {
                if ready[next] {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => streams[i] = None,
                        Ok(n) => capture.push(&buf[..n]),
                    }
                }
                next += 1;
            }
        }
        if ready[1] {
            match &conn {
                None => conn = Some(rustix::net::accept_with(listener, SocketFlags::CLOEXEC).map_err(io::Error::from)?),
                Some(c) => {
                    let (line, _) = receive(c)?;
                    let hello: Hello = serde_json::from_slice(&line).unwrap_or(Hello {
                        ready: false,
                        refused: Some(
                            "warm mode refused: the warm parent ended during warm-up; attempts run cold".into(),
                        ),
                        changed: Vec::new(),
                    });
                    if hello.ready {
                        return Ok((conn.take().expect("connected"), hello));
                    }
                    let reason = hello.refused.unwrap_or_default();
                    // Its last words, for the message: it exits right after refusing.
                    let _ = wait_readable(&inner.pidfd, Duration::from_secs(5));
                    for (i, capture) in [&mut out, &mut err].into_iter().enumerate() {
                        if let Some(s) = streams[i].as_mut() {
                            let mut rest = Vec::new();
                            let _ = s.read_to_end(&mut rest);
                            capture.push(&rest);
                        }
                    }
                    return Err(refused(reason, &out, &err));
                }
            }
        } else if ready[0] && conn.is_none() {
            // Exited before it connected (an interpreter that cannot start the program).
            return Err(refused(
                "warm mode refused: the warm parent exited before warm-up; attempts run cold".into(),
                &out,
                &err,
            ));
        }
    }
}

/// One cell's warm parents: the current one, replaced every [`WarmOptions::recycle_after`]
/// attempts, and the fallback to cold attempts, each reason said once.
pub struct WarmCell<'t> {
    tree: &'t ProcessTree,
    options: WarmOptions,
    state: Mutex<CellState<'t>>,
}

struct CellState<'t> {
    parent: Option<Arc<WarmParent<'t>>>,
    /// The parent that replaces it once it is worn, started early enough to be warm by then.
    next: Option<Pending<'t>>,
    /// Why warm attempts are off for the cell, once they are.
    off: Option<String>,
    /// Reasons already said.
    said: BTreeSet<String>,
    /// Attempts asked for, for [`WarmOptions::cold_every`].
    asked: u64,
}

/// How an attempt of a [`WarmCell`] starts.
pub enum Start<'t> {
    /// As a fork of the warm parent, to be waited for like any attempt.
    Warm(Running<'t>),
    /// Cold: the caller spawns it. `say` is the reason, the first time it applies.
    Cold {
        /// One line to show, the first time.
        say: Option<String>,
        /// How the warm parent died while this attempt was being started in it: the attempt is
        /// run again cold, recorded with this reason.
        lost: Option<String>,
    },
}

impl<'t> WarmCell<'t> {
    /// A cell with no parent yet: the first attempt starts one.
    pub fn new(tree: &'t ProcessTree, options: WarmOptions) -> Self {
        Self {
            tree,
            options,
            state: Mutex::new(CellState { parent: None, next: None, off: None, said: BTreeSet::new(), asked: 0 }),
        }
    }

    /// Starts one attempt warm if the cell can, else says to run it cold. `Err` is a refused
    /// setting of the attempt, as [`Running::spawn`] returns it.
    pub fn start(&self, launch: &Launch, marker: String) -> io::Result<Start<'t>> {
        let parent = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            if state.off.is_some() {
                return Ok(Start::Cold { say: None, lost: None });
            }
            state.asked += 1;
            if self.options.cold_every.is_some_and(|n| state.asked % n == 0) {
                return Ok(Start::Cold { say: None, lost: None });
            }
            if let Some(why) = state.parent.as_ref().and_then(|p| p.inner.dead()) {
                // It died while an attempt ran (that attempt is run again cold): whatever killed
                // it may kill the next, so the cell runs cold from here on.
                let reason = format!("{why}: attempts run cold");
                state.parent = None;
                state.off = Some(reason.clone());
                return Ok(Start::Cold { say: Some(reason), lost: None });
            }
            let worn = |p: &WarmParent<'_>| self.options.recycle_after.is_some_and(|n| p.served() >= n);
            if state.parent.as_deref().is_none_or(worn) {
                // The worn parent lives on until its last attempt has been reaped.
                state.parent = None;
                let next = match state.next.take() {
                    Some(pending) => Ok(pending),
                    None => WarmParent::launch(launch, self.tree, &self.options),
                };
                match next.and_then(Pending::ready) {
                    Ok(p) => state.parent = Some(Arc::new(p)),
                    Err(e) => {
                        let reason = e.to_string();
                        state.off = Some(reason.clone());
                        return Ok(Start::Cold { say: Some(reason), lost: None });
                    }
                }
            }
            let parent = Arc::clone(state.parent.as_ref().expect("started above"));
            if state.next.is_none() && self.options.recycle_after.is_some_and(|n| parent.due_within(n)) {
                // A failure to start it is met (and said) when the parent is needed.
                state.next = WarmParent::launch(launch, self.tree, &self.options).ok();
            }
            parent
        };
        match parent.start_attempt(launch, marker) {
            Ok(running) => Ok(Start::Warm(running)),
            Err(WarmError::Start(e)) => Err(e),
            Err(WarmError::Lost(why)) => {
                let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
                state.off = Some(format!("{why}: attempts run cold"));
                state.parent = None;
                Ok(Start::Cold { say: None, lost: Some(why) })
            }
            Err(e) => {
                let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
                if matches!(e, WarmError::Gone(_)) {
                    state.off = Some(e.to_string());
                    state.parent = None;
                }
                let reason = e.to_string();
                let say = state.said.insert(reason.clone()).then_some(reason);
                Ok(Start::Cold { say, lost: None })
            }
        }
    }

    /// Why warm attempts are off for this cell, once they are.
    pub fn off(&self) -> Option<String> {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).off.clone()
    }
}

/// The attempt's whole environment as its exec would get it, or `None` when a name or value is
/// not UTF-8 (JSON strings cannot carry it).
fn full_env(launch: &Launch) -> Option<BTreeMap<String, String>> {
    let mut env: BTreeMap<OsString, OsString> =
        if launch.env_clear { BTreeMap::new() } else { std::env::vars_os().collect() };
    for (name, value) in &launch.env {
        match value {
            Some(v) => env.insert(name.clone(), v.clone()),
            None => env.remove(name),
        };
    }
    env.into_iter().map(|(n, v)| Some((n.into_string().ok()?, v.into_string().ok()?))).collect()
}

/// Whether the interpreter or the dynamic loader reads the variable `name` at start-up.
fn read_at_startup(name: &str) -> bool {
    name.starts_with("PYTHON") || name.starts_with("LD_")
}

fn send(conn: &OwnedFd, line: &[u8], fds: &[BorrowedFd<'_>]) -> io::Result<()> {
    let mut space = vec![MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(fds.len()))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(io::Error::other("too many fds for one message"));
    }
    let sent = loop {
        match rustix::net::sendmsg(conn, &[IoSlice::new(line)], &mut control, SendFlags::NOSIGNAL) {
            Err(rustix::io::Errno::INTR) => continue,
            other => break other?,
        }
    };
    if sent != line.len() {
        return Err(io::Error::other("a request was cut short"));
    }
    Ok(())
}

/// One message and the fd it carries, if any. End-of-file is an error.
fn receive(conn: &OwnedFd) -> io::Result<(Vec<u8>, Option<OwnedFd>)> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(4))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = loop {
        match rustix::net::recvmsg(conn, &mut [IoSliceMut::new(&mut buf)], &mut control, RecvFlags::CMSG_CLOEXEC) {
            Err(rustix::io::Errno::INTR) => continue,
            other => break other?,
        }
    };
    if got.bytes == 0 {
        return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
    }
    let mut fd = None;
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(fds) = message {
            for received in fds {
                fd.get_or_insert(received);
            }
        }
    }
    buf.truncate(got.bytes);
    Ok((buf, fd))
}

/// A pipe with both ends close-on-exec (the parent receives its end over the socket).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?)
}

fn wait_readable(fd: &OwnedFd, limit: Duration) -> bool {
    let end = crate::bounds::deadline(Instant::now(), limit);
    loop {
        let left = end.saturating_duration_since(Instant::now());
        let mut fds = [PollFd::new(fd, PollFlags::IN)];
        match rustix::event::poll(&mut fds, Some(&timespec(left))) {
            Ok(n) if n > 0 => return true,
            Err(rustix::io::Errno::INTR) => {}
            _ if left.is_zero() => return false,
            _ => {}
        }
    }
}

fn waitpid(pid: u32) {
    // SAFETY: waits for our own child; a null status pointer is allowed.
    while unsafe { libc::waitpid(pid as i32, std::ptr::null_mut(), 0) } == -1
        && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
    {}
}

fn raw_pid(pid: u32) -> Pid {
    Pid::from_raw(pid as i32).expect("child pids are positive")
}

fn timespec(d: Duration) -> Timespec {
    Timespec { tv_sec: d.as_secs().min(i64::MAX as u64) as i64, tv_nsec: d.subsec_nanos() as _ }
}

mod cells;
pub use cells::{WarmCells, WarmStart};

#[cfg(test)]
mod tests;
