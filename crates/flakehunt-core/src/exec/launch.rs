//! What to start for one attempt: program, arguments, environment, working directory, and the
//! settings applied between fork and exec. Main type: [`Launch`].

use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::stdio::dev_null_stdio;

/// One process to start.
#[derive(Debug, Clone, Default)]
pub struct Launch {
    /// The program (looked up in `PATH` when it has no slash).
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Start from an empty environment (a clean room) before applying `env`.
    pub env_clear: bool,
    /// Variables to set (`Some`) or remove (`None`), in order.
    pub env: Vec<(OsString, Option<OsString>)>,
    /// Working directory; flakehunt's own when `None`.
    pub cwd: Option<PathBuf>,
    /// Settings applied in the child before exec.
    pub setup: ChildSetup,
}

/// A resource limit the child gets, soft and hard (`None`: unlimited).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limit {
    /// Which resource.
    pub resource: Resource,
    /// Soft limit.
    pub soft: Option<u64>,
    /// Hard limit.
    pub hard: Option<u64>,
}

impl Limit {
    /// `soft` for `resource`, keeping this process's hard limit unless the soft limit needs more,
    /// which only a privileged user may grant (an unprivileged attempt then fails to start; the
    /// matrix validates limits before running). `None` is unlimited.
    pub fn with_soft(resource: Resource, soft: Option<u64>) -> Self {
        let hard = match (resource.current().1, soft) {
            (None, _) | (_, None) => None,
            (Some(h), Some(s)) => Some(h.max(s)),
        };
        Self { resource, soft, hard }
    }

    /// [`Self::with_soft`] for the resource users call `name` (`nofile`); `None` for a name
    /// flakehunt does not know (configuration and options are checked before a hunt).
    pub fn named(name: &str, soft: Option<u64>) -> Option<Self> {
        Resource::from_name(name).map(|resource| Self::with_soft(resource, soft))
    }
}

/// Resource limits flakehunt knows by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Resource {
    /// Open files.
    Nofile,
    /// Processes of the user.
    Nproc,
    /// Stack size in bytes.
    Stack,
    /// Address space in bytes.
    As,
    /// Core file size in bytes.
    Core,
    /// File size in bytes.
    Fsize,
    /// CPU time in seconds.
    Cpu,
    /// Locked memory in bytes.
    Memlock,
}

impl Resource {
    /// Every resource, in the order they are listed to users.
    pub const ALL: [Resource; 8] = [
        Resource::Nofile,
        Resource::Nproc,
        Resource::Stack,
        Resource::As,
        Resource::Core,
        Resource::Fsize,
        Resource::Cpu,
        Resource::Memlock,
    ];

    /// The lowercase name users write (`nofile`).
    pub fn name(self) -> &'static str {
        match self {
            Resource::Nofile => "nofile",
            Resource::Nproc => "nproc",
            Resource::Stack => "stack",
            Resource::As => "as",
            Resource::Core => "core",
            Resource::Fsize => "fsize",
            Resource::Cpu => "cpu",
            Resource::Memlock => "memlock",
        }
    }

    /// Parses a name users write.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.name() == name)
    }

    fn to_rustix(self) -> rustix::process::Resource {
        use rustix::process::Resource as R;
        match self {
            Resource::Nofile => R::Nofile,
            Resource::Nproc => R::Nproc,
            Resource::Stack => R::Stack,
            Resource::As => R::As,
            Resource::Core => R::Core,
            Resource::Fsize => R::Fsize,
            Resource::Cpu => R::Cpu,
            Resource::Memlock => R::Memlock,
        }
    }

    /// This process's current (soft, hard) limit; `None` means unlimited.
    pub fn current(self) -> (Option<u64>, Option<u64>) {
        let l = rustix::process::getrlimit(self.to_rustix());
        (l.current, l.maximum)
    }
}

/// Settings that only the child itself can apply before exec, so that its first instruction
/// already runs under them.
#[derive(Debug, Clone, Default)]
pub struct ChildSetup {
    /// CPUs to pin the child to.
    pub cpus: Option<Vec<usize>>,
    /// Resource limits.
    pub rlimits: Vec<Limit>,
    /// Nice value.
    pub nice: Option<i32>,
    /// Run under `SCHED_IDLE`.
    pub sched_idle: bool,
    /// Open `cgroup.procs` files the child writes its own pid into (one per hierarchy).
    pub cgroup_procs: Vec<Arc<OwnedFd>>,
}

impl ChildSetup {
    /// Whether nothing needs to happen before exec.
    pub fn is_empty(&self) -> bool {
        self.cpus.is_none()
            && self.rlimits.is_empty()
            && self.nice.is_none()
            && !self.sched_idle
            && self.cgroup_procs.is_empty()
    }

    /// The settings prepared for the child (see [`ReadySetup`]).
    pub(crate) fn ready(&self) -> ReadySetup {
        let cpus = self.cpus.as_ref().map(|cpus| {
            let mut set = rustix::thread::CpuSet::new();
            cpus.iter().for_each(|&cpu| set.set(cpu));
            set
        });
        ReadySetup {
            cgroup_procs: self.cgroup_procs.clone(),
            cpus,
            rlimits: self.rlimits.clone(),
            sched_idle: self.sched_idle,
            nice: self.nice,
        }
    }
}

/// What Go's test flags in `GOFLAGS` get in every attempt: `go test` replays a package's cached
/// pass without running its tests when nothing it reads changed (the iteration is not in its
/// cache key unless a test reads it), so after the first pass every attempt of a flaky test
/// would pass unrun. Other go commands ignore it.
const GO_TEST_UNCACHED: &str = "-count=1";

impl Launch {
    /// Makes any `go test` the attempt runs run its tests (see [`GO_TEST_UNCACHED`]): `GOFLAGS`
    /// as the attempt gets it (the last setting in [`Self::env`], else flakehunt's own unless
    /// the environment starts empty) with `-count=1` added, unless it sets a count already (a
    /// count on the command line wins over `GOFLAGS` anyway).
    pub fn uncache_go_tests(&mut self) {
        let set = self.env.iter().rev().find(|(k, _)| k == "GOFLAGS").map(|(_, v)| v.clone());
        // flakehunt's own, read once: its environment does not change while it runs.
        static INHERITED: std::sync::LazyLock<Option<OsString>> =
            std::sync::LazyLock::new(|| std::env::var_os("GOFLAGS"));
        let given = match set {
            Some(value) => value,
            None if self.env_clear => None,
            None => INHERITED.clone(),
        };
        let given = given.map(|v| v.to_string_lossy().into_owned()).unwrap_or_default();
        if given.split_whitespace().any(|f| f.trim_start_matches('-').starts_with("count")) {
            return;
        }
        let flags = format!("{given} {GO_TEST_UNCACHED}").trim_start().to_owned();
        self.env.push(("GOFLAGS".into(), Some(flags.into())));
    }

    /// The `std` command for this launch, starting `program` (the resolved path of
    /// [`Self::program`]): its own process group, stdin from `/dev/null`, output piped to
    /// flakehunt, and the `pre_exec` hook for [`Self::setup`].
    pub(crate) fn command(&self, program: &std::ffi::OsStr) -> Command {
        let mut cmd = Command::new(program);
        cmd.args(&self.args).process_group(0).stdin(dev_null_stdio()).stdout(Stdio::piped()).stderr(Stdio::piped());
        if self.env_clear {
            cmd.env_clear();
        }
        for (name, value) in &self.env {
            match value {
                Some(v) => cmd.env(name, v),
                None => cmd.env_remove(name),
            };
        }
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        if !self.setup.is_empty() {
            let ready = self.setup.ready();
            // SAFETY: `apply` makes only async-signal-safe system calls and allocates nothing.
            unsafe { cmd.pre_exec(move || ready.apply()) };
        }
        cmd
    }
}

/// A [`ChildSetup`] prepared for the child: applying it allocates nothing, so it can run between
/// fork (or a vfork-style clone) and exec.
#[derive(Debug)]
pub(crate) struct ReadySetup {
    cgroup_procs: Vec<Arc<OwnedFd>>,
    cpus: Option<rustix::thread::CpuSet>,
    rlimits: Vec<Limit>,
    sched_idle: bool,
    nice: Option<i32>,
}

impl ReadySetup {
    /// Applies the settings to the calling process, which is about to exec. Only
    /// async-signal-safe system calls; nothing is allocated.
    pub(crate) fn apply(&self) -> std::io::Result<()> {
        for fd in &self.cgroup_procs {
            write_own_pid(fd.as_raw_fd())?;
        }
        if let Some(cpus) = &self.cpus {
            rustix::thread::sched_setaffinity(None, cpus)?;
        }
        for limit in &self.rlimits {
            let new = rustix::process::Rlimit { current: limit.soft, maximum: limit.hard };
            rustix::process::setrlimit(limit.resource.to_rustix(), new)?;
        }
        // SAFETY: plain system calls on the calling process with valid parameters.
        unsafe {
            if self.sched_idle {
                let param = libc::sched_param { sched_priority: 0 };
                if libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) != 0 {
                    // Refused (e.g. by a container policy): the profile falls back to nice 19,
                    // and the effect read back says which one applied.
                    let _ = libc::setpriority(libc::PRIO_PROCESS, 0, 19);
                }
            }
            if let Some(nice) = self.nice {
                if libc::setpriority(libc::PRIO_PROCESS, 0, nice) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
        }
        Ok(())
    }
}

/// Writes this process's pid in decimal to `fd` without allocating.
fn write_own_pid(fd: i32) -> std::io::Result<()> {
    let mut pid = rustix::process::getpid().as_raw_nonzero().get() as u32;
    let mut buf = [0u8; 12];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (pid % 10) as u8;
        pid /= 10;
        if pid == 0 {
            break;
        }
    }
    // SAFETY: `fd` is open for the lifetime of the launch and `buf[i..]` is initialised.
    let n = unsafe { libc::write(fd, buf[i..].as_ptr().cast(), buf.len() - i) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Puts the calling thread, and what it starts from now on, under `SCHED_IDLE` (nice 19 where
/// refused): for flakehunt's own background work beside attempts that are being measured.
pub fn idle_priority() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: plain system calls on the calling thread (pid 0) with valid parameters.
    unsafe {
        if libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) != 0 {
            let _ = libc::setpriority(libc::PRIO_PROCESS, 0, 19);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn goflags(launch: &Launch) -> Option<String> {
        let last = launch.env.iter().rev().find(|(k, _)| k == "GOFLAGS")?;
        last.1.as_ref().map(|v| v.to_string_lossy().into_owned())
    }

    #[test]
    fn go_tests_run_uncached_with_the_flags_the_attempt_has() {
        let mut clean = Launch { env_clear: true, ..Launch::default() };
        clean.uncache_go_tests();
        assert_eq!(goflags(&clean).as_deref(), Some("-count=1"));
        // A cell's GOFLAGS (a matrix overlay) keeps its flags.
        let mut race = Launch { env: vec![("GOFLAGS".into(), Some("-race -mod=mod".into()))], ..Launch::default() };
        race.uncache_go_tests();
        assert_eq!(goflags(&race).as_deref(), Some("-race -mod=mod -count=1"));
        // A count given is the user's.
        for count in ["-count=5", "--count=1"] {
            let mut counted = Launch { env: vec![("GOFLAGS".into(), Some(count.into()))], ..Launch::default() };
            counted.uncache_go_tests();
            assert_eq!(counted.env.len(), 1, "{count}");
        }
        // Removed by a cell: none given.
        let mut removed = Launch { env: vec![("GOFLAGS".into(), None)], ..Launch::default() };
        removed.uncache_go_tests();
        assert_eq!(goflags(&removed).as_deref(), Some("-count=1"));
    }
}
