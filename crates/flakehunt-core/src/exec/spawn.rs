//! Starting an attempt's process, the one step every attempt pays for. Main function:
//! [`Launch::spawn`].
//!
//! An attempt needs little between fork and exec: its process group, its standard streams, its
//! directory, and a profile's settings. It starts from `clone(CLONE_VM | CLONE_VFORK |
//! CLONE_PIDFD)` on a stack kept per thread, with a child that makes only those few system
//! calls before `execve`. `std::process::Command` does more on every spawn, all of it while the
//! spawning thread waits (through `posix_spawn`; a `pre_exec` hook even forks the whole
//! process): it reads and sorts this process's whole environment, maps and unmaps a stack, has
//! the child reset all 64 signal dispositions one system call at a time and, for a bare program
//! name, try every `PATH` directory in turn; and flakehunt then needs `pidfd_open` on top. Here
//! the environment is read once per hunt, a program name is looked up once per `PATH`, the
//! child resets only the signals flakehunt handles, and the kernel returns the pidfd with the
//! pid. `Command`, with a profile's settings in a `pre_exec` hook, remains for where the clone
//! cannot be used.

use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};

use super::launch::ReadySetup;
use super::stdio::{above_stdio, dev_null};
use super::Launch;

/// A started child: its pid (which is also its process group) and the read ends of its output.
#[derive(Debug)]
pub(crate) struct Spawned {
    /// Pid and process group id.
    pub pid: u32,
    /// Its standard output.
    pub stdout: File,
    /// Its standard error.
    pub stderr: File,
    /// A pidfd for it, when the spawn returned one.
    pub pidfd: Option<OwnedFd>,
}

impl Launch {
    /// Starts the process in its own process group, stdin from `/dev/null`, stdout and stderr
    /// piped to flakehunt. A program without a slash is looked up in the `PATH` the child gets.
    pub(crate) fn spawn(&self) -> io::Result<Spawned> {
        let env = Environment::of(self)?;
        let program = resolve(&self.program, env.path(), self.cwd.as_deref())?;
        if CLONE_WORKS.load(Ordering::Relaxed) && *CLONE_IS_SAFE {
            match self.clone_vfork(&program, &env) {
                // Refused by a sandbox (seccomp, gVisor, an emulator): `Command` from now on.
                Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS | libc::EPERM)) => {
                    CLONE_WORKS.store(false, Ordering::Relaxed);
                }
                started => return started,
            }
        }
        self.spawn_forked(&program)
    }

    /// Through `Command`, where the clone cannot be used. `program` is the resolved path; the
    /// child's `argv[0]` stays as given.
    fn spawn_forked(&self, program: &CString) -> io::Result<Spawned> {
        let mut child = self.command(OsStr::from_bytes(program.as_bytes())).arg0(&self.program).spawn()?;
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            unreachable!("both streams are piped")
        };
        Ok(Spawned {
            pid: child.id(),
            stdout: File::from(OwnedFd::from(stdout)),
            stderr: File::from(OwnedFd::from(stderr)),
            pidfd: None,
        })
    }

    /// Starts the child on a vfork-style clone: see the module's documentation.
    fn clone_vfork(&self, program: &CString, env: &Environment) -> io::Result<Spawned> {
        let argv =
            std::iter::once(&self.program).chain(&self.args).map(|a| c_string(a)).collect::<io::Result<Vec<_>>>()?;
        let mut argp: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
        argp.push(std::ptr::null());
        let mut envp: Vec<*const libc::c_char> = env.entries().map(|e| e.as_ptr()).collect();
        envp.push(std::ptr::null());
        let cwd = self.cwd.as_deref().map(|d| c_string(d.as_os_str())).transpose()?;
        let setup = (!self.setup.is_empty()).then(|| self.setup.ready());
        let (out_read, out_write) = pipe()?;
        let (err_read, err_write) = pipe()?;
        let mut child = ChildArgs {
            program: program.as_ptr(),
            argv: argp.as_ptr(),
            envp: envp.as_ptr(),
            cwd: cwd.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
            stdin: dev_null()?.as_raw_fd(),
            stdout: out_write.as_raw_fd(),
            stderr: err_write.as_raw_fd(),
            setup: setup.as_ref().map_or(std::ptr::null(), |s| s as *const ReadySetup),
            reset: handled_signals() | 1 << (libc::SIGPIPE - 1),
            failed: 0,
        };
        let mut pidfd: libc::c_int = -1;
        let pid = STACK.with_borrow_mut(|stack| {
            // The child starts with every signal blocked, so that no handler of flakehunt's ever
            // runs on the memory it shares with this thread; it unblocks them just before exec.
            let blocked = block_all_signals();
            let top = stack.as_mut_ptr_range().end as usize & !15;
            // SAFETY: `child_main` makes only async-signal-safe system calls on the data behind
            // `child`, which lives until `clone` returns: with CLONE_VFORK this thread sleeps
            // until the child has called `execve` or `_exit`. Its stack is this thread's, used by
            // nothing else meanwhile, 16-byte aligned.
            let pid = unsafe {
                libc::clone(
                    child_main,
                    top as *mut libc::c_void,
                    libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD | libc::SIGCHLD,
                    (&raw mut child).cast(),
                    &raw mut pidfd,
                )
            };
            let error = io::Error::last_os_error();
            restore_signals(&blocked);
            if pid < 0 {
                Err(error)
            } else {
                Ok(pid)
            }
        })?;
        // SAFETY: CLONE_PIDFD stored a new pidfd, ours to own.
        let pidfd = (pidfd >= 0).then(|| unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(pidfd) });
        if child.failed != 0 {
            // The exec failed and the child is gone: reap it.
            let mut status = 0;
            // SAFETY: waits for our own child.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            return Err(io::Error::from_raw_os_error(child.failed));
        }
        Ok(Spawned { pid: pid as u32, stdout: File::from(out_read), stderr: File::from(err_read), pidfd })
    }
}

/// What the cloned child needs, prepared by the parent: no allocation happens in the child.
#[repr(C)]
struct ChildArgs {
    program: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    /// Null for flakehunt's own directory.
    cwd: *const libc::c_char,
    stdin: libc::c_int,
    stdout: libc::c_int,
    stderr: libc::c_int,
    /// A profile's settings; null for none.
    setup: *const ReadySetup,
    /// Signals (bit `n - 1` for signal `n`) whose disposition goes back to the default.
    reset: u64,
    /// Set by the child to the `errno` of the step that failed.
    failed: libc::c_int,
}

/// The cloned child: takes its own process group, its streams and its directory, applies the
/// profile's settings, resets the signals flakehunt handles or ignores, unblocks signals and
/// execs. Runs on the parent's memory while the parent sleeps, so it calls nothing that
/// allocates, locks or unwinds.
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's `ChildArgs`, alive until this child execs or exits; each
    // call is a plain system call wrapper.
    unsafe {
        let a = &mut *arg.cast::<ChildArgs>();
        let ok = libc::setpgid(0, 0) == 0
            && libc::dup2(a.stdin, 0) == 0
            && libc::dup2(a.stdout, 1) == 1
            && libc::dup2(a.stderr, 2) == 2
            && (a.cwd.is_null() || libc::chdir(a.cwd) == 0);
        let mut applied = ok;
        if applied && !a.setup.is_null() {
            if let Err(e) = (*a.setup).apply() {
                a.failed = e.raw_os_error().unwrap_or(0);
                applied = false;
            }
        }
        if applied {
            for sig in 1..=64 {
                if a.reset & 1 << (sig - 1) != 0 {
                    libc::signal(sig, libc::SIG_DFL);
                }
            }
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            libc::execve(a.program, a.argv, a.envp);
        }
        if a.failed == 0 {
            a.failed = *libc::__errno_location();
        }
        if a.failed == 0 {
            a.failed = libc::EINVAL;
        }
        libc::_exit(127)
    }
}

/// Cleared when the kernel or a sandbox refuses the clone.
static CLONE_WORKS: AtomicBool = AtomicBool::new(true);

/// Whether this C library's `clone` wrapper leaves the calling thread's cached thread id alone
/// for a child that shares its memory: glibc before 2.24 overwrote it (glibc bug 19957), which
/// breaks `raise` and recursive locks on the spawning thread afterwards.
static CLONE_IS_SAFE: LazyLock<bool> = LazyLock::new(|| {
    #[cfg(target_env = "gnu")]
    {
        // SAFETY: returns a static NUL-terminated string.
        let version = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
        let mut parts = version.to_str().unwrap_or("0.0").split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
        (major, minor) >= (2, 24)
    }
    #[cfg(not(target_env = "gnu"))]
    true
});

thread_local! {
    /// The stack the cloned child runs on until it execs: it needs well under a page.
    static STACK: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0; 64 * 1024]);
}

fn block_all_signals() -> libc::sigset_t {
    // SAFETY: plain signal-mask calls on local sets.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        old
    }
}

fn restore_signals(old: &libc::sigset_t) {
    // SAFETY: restores the mask `block_all_signals` saved.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, old, std::ptr::null_mut()) };
}

/// Signals with a handler in this process (bit `n - 1` for signal `n`), which the cloned child
/// resets before exec: read at the first spawn, and again by [`note_signal_handlers`].
fn handled_signals() -> u64 {
    match HANDLED.load(Ordering::Relaxed) {
        UNKNOWN => note_signal_handlers(),
        known => known,
    }
}

static HANDLED: AtomicU64 = AtomicU64::new(UNKNOWN);
const UNKNOWN: u64 = u64::MAX;

/// Reads again which signals have a handler in this process. Call it after installing one, so
/// that attempts started later reset it too. Returns the set.
pub fn note_signal_handlers() -> u64 {
    let mut handled = 0u64;
    for sig in 1..=64 {
        // SAFETY: reads the disposition of `sig` into a local.
        let handler = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut action) != 0 {
                continue;
            }
            action.sa_sigaction
        };
        if handler != libc::SIG_DFL && handler != libc::SIG_IGN {
            handled |= 1 << (sig - 1);
        }
    }
    HANDLED.store(handled, Ordering::Relaxed);
    handled
}

/// The environment an attempt gets: this process's own (read once), or none for a clean room,
/// with the launch's variables set or removed (the last setting of a name wins).
struct Environment {
    /// Whether the child starts from an empty environment.
    clear: bool,
    /// Inherited entries the launch does not override.
    inherited: Vec<&'static CString>,
    /// The launch's own `NAME=VALUE` entries, by name; `None` removes the name.
    set: Vec<(Vec<u8>, Option<CString>)>,
}

impl Environment {
    fn of(launch: &Launch) -> io::Result<Self> {
        let mut set: Vec<(Vec<u8>, Option<CString>)> = Vec::with_capacity(launch.env.len());
        for (name, value) in &launch.env {
            let name = name.as_bytes();
            set.retain(|(n, _)| n != name);
            let entry = match value {
                Some(v) => {
                    let mut e = Vec::with_capacity(name.len() + 1 + v.len());
                    e.extend_from_slice(name);
                    e.push(b'=');
                    e.extend_from_slice(v.as_bytes());
                    // A configuration file can write one ("\u0000").
                    Some(CString::new(e).map_err(|_| {
                        io::Error::new(
                            io::ErrorKind::InvalidInput,
                            format!("the variable {} holds a NUL byte", String::from_utf8_lossy(name)),
                        )
                    })?)
                }
                None => None,
            };
            set.push((name.to_vec(), entry));
        }
        let inherited = if launch.env_clear {
            Vec::new()
        } else {
            INHERITED.iter().filter(|e| !set.iter().any(|(n, _)| *n == e.name())).map(|e| &e.entry).collect()
        };
        Ok(Self { clear: launch.env_clear, inherited, set })
    }

    fn entries(&self) -> impl Iterator<Item = &CString> {
        self.inherited.iter().copied().chain(self.set.iter().filter_map(|(_, e)| e.as_ref()))
    }

    /// The child's `PATH`, if it has one.
    fn path(&self) -> Option<&OsStr> {
        match self.set.iter().find(|(n, _)| n == b"PATH") {
            Some((_, entry)) => entry.as_deref().map(path_value),
            None if self.clear => None,
            None => INHERITED_PATH.as_deref().map(path_value),
        }
    }
}

/// The value of a `PATH=...` entry.
fn path_value(entry: &std::ffi::CStr) -> &OsStr {
    OsStr::from_bytes(&entry.to_bytes()[b"PATH=".len()..])
}

/// One variable of this process's environment.
struct Inherited {
    /// `NAME=VALUE`.
    entry: CString,
    name_len: usize,
}

impl Inherited {
    fn name(&self) -> &[u8] {
        &self.entry.as_bytes()[..self.name_len]
    }
}

/// This process's environment, read at the first spawn: flakehunt never changes its own.
static INHERITED: LazyLock<Vec<Inherited>> = LazyLock::new(|| {
    std::env::vars_os()
        .filter_map(|(name, value)| {
            let name_len = name.len();
            let mut e = name.into_encoded_bytes();
            e.push(b'=');
            e.extend_from_slice(value.as_encoded_bytes());
            CString::new(e).ok().map(|entry| Inherited { entry, name_len })
        })
        .collect()
});

/// This process's `PATH` entry.
static INHERITED_PATH: LazyLock<Option<CString>> =
    LazyLock::new(|| INHERITED.iter().find(|e| e.name() == b"PATH").map(|e| e.entry.clone()));

/// The file a program name runs: as given when it holds a slash, else the first executable
/// regular file named `program` in a directory of `path` (`/bin:/usr/bin` when the child has no
/// `PATH`), as `execvp` finds it. Looked up once per `PATH` when every directory in it is
/// absolute; a relative directory is relative to the child's working directory, `cwd`.
fn resolve(program: &OsStr, path: Option<&OsStr>, cwd: Option<&Path>) -> io::Result<CString> {
    if program.as_bytes().contains(&b'/') {
        return c_string(program);
    }
    // (program, PATH, what it resolved to): a hunt runs one or a few programs.
    static RESOLVED: Mutex<Vec<(OsString, OsString, CString)>> = Mutex::new(Vec::new());
    let path = path.unwrap_or(OsStr::new("/bin:/usr/bin"));
    if let Some((_, _, found)) =
        RESOLVED.lock().unwrap_or_else(|e| e.into_inner()).iter().find(|(p, s, _)| p == program && s == path)
    {
        return Ok(found.clone());
    }
    let dirs: Vec<&Path> = path.as_bytes().split(|&b| b == b':').map(|d| Path::new(OsStr::from_bytes(d))).collect();
    let cacheable = dirs.iter().all(|d| d.is_absolute());
    let mut denied = false;
    for dir in dirs {
        // An empty entry is the working directory, as for the shell.
        let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
        let candidate: PathBuf = dir.join(program);
        let on_disk = match cwd {
            Some(base) if candidate.is_relative() => base.join(&candidate),
            _ => candidate.clone(),
        };
        match std::fs::metadata(&on_disk) {
            Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => {
                if rustix::fs::access(&on_disk, rustix::fs::Access::EXEC_OK).is_ok() {
                    let found = c_string(candidate.as_os_str())?;
                    if cacheable {
                        let mut cache = RESOLVED.lock().unwrap_or_else(|e| e.into_inner());
                        cache.push((program.to_owned(), path.to_owned(), found.clone()));
                    }
                    return Ok(found);
                }
                denied = true;
            }
            Ok(m) if m.is_file() => denied = true,
            _ => {}
        }
    }
    Err(io::Error::from_raw_os_error(if denied { libc::EACCES } else { libc::ENOENT }))
}

fn c_string(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("{} contains a NUL byte", s.to_string_lossy()))
    })
}

/// A pipe, both ends close-on-exec and numbered above the standard streams, so that the
/// child's `dup2` onto 0, 1 and 2 never meets one of them there.
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    Ok((above_stdio(read)?, above_stdio(write)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(program: &str, env: &[(&str, Option<&str>)], env_clear: bool) -> Launch {
        Launch {
            program: program.into(),
            env_clear,
            env: env.iter().map(|(k, v)| (k.into(), v.map(Into::into))).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn the_last_setting_of_a_name_wins_and_none_removes_it() {
        let l = launch("true", &[("A", Some("1")), ("B", Some("2")), ("A", Some("3")), ("B", None)], true);
        let env = Environment::of(&l).unwrap();
        let entries: Vec<&[u8]> = env.entries().map(|e| e.as_bytes()).collect();
        assert_eq!(entries, vec![b"A=3".as_slice()]);
        let nul = launch("true", &[("A", Some("x\0y"))], true);
        assert_eq!(Environment::of(&nul).err().map(|e| e.kind()), Some(io::ErrorKind::InvalidInput));
    }

    #[test]
    fn a_clean_room_inherits_nothing_and_an_override_replaces_the_inherited_value() {
        assert_eq!(Environment::of(&launch("true", &[], true)).unwrap().entries().count(), 0);
        let env = Environment::of(&launch("true", &[("PATH", Some("/nowhere"))], false)).unwrap();
        let paths: Vec<&[u8]> = env.entries().map(|e| e.as_bytes()).filter(|e| e.starts_with(b"PATH=")).collect();
        assert_eq!(paths, vec![b"PATH=/nowhere".as_slice()]);
        assert_eq!(env.path(), Some(OsStr::new("/nowhere")));
        let removed = Environment::of(&launch("true", &[("PATH", None)], false)).unwrap();
        assert_eq!(removed.path(), None);
        assert!(removed.entries().all(|e| !e.as_bytes().starts_with(b"PATH=")));
    }

    #[test]
    fn a_program_is_found_in_the_childs_path_skipping_what_is_not_executable() {
        let dir = tempfile::tempdir().unwrap();
        let (first, second) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(&first).unwrap();
        std::fs::create_dir_all(&second).unwrap();
        // Not executable in the first directory, executable in the second.
        std::fs::write(first.join("prog"), "#!/bin/sh\n").unwrap();
        std::fs::write(second.join("prog"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(second.join("prog"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = std::env::join_paths([&first, &second]).unwrap();
        let found = resolve(OsStr::new("prog"), Some(&path), None).unwrap();
        assert_eq!(found.as_bytes(), second.join("prog").as_os_str().as_bytes());

        let only_first = first.clone().into_os_string();
        let e = resolve(OsStr::new("prog"), Some(&only_first), None).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        let e = resolve(OsStr::new("no-such-program"), Some(&path), None).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        // With a slash the program is taken as given.
        assert_eq!(resolve(OsStr::new("./x"), Some(&path), None).unwrap().as_bytes(), b"./x");
    }

    #[test]
    fn a_relative_path_directory_is_relative_to_the_childs_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("bin")).unwrap();
        std::fs::write(dir.path().join("bin/prog"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(dir.path().join("bin/prog"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let found = resolve(OsStr::new("prog"), Some(OsStr::new("bin")), Some(dir.path())).unwrap();
        // Passed on relative: the child resolves it after changing into its directory.
        assert_eq!(found.as_bytes(), b"bin/prog");
        assert!(resolve(OsStr::new("prog"), Some(OsStr::new("bin")), None).is_err());
    }

    /// Runs `launch` to its end; returns its stdout and exit code.
    fn run(launch: &Launch) -> (String, i32) {
        use std::io::Read;
        let mut child = launch.spawn().unwrap();
        let mut out = String::new();
        child.stdout.read_to_string(&mut out).unwrap();
        let mut status = 0;
        // SAFETY: waits for our own child.
        assert_eq!(unsafe { libc::waitpid(child.pid as i32, &mut status, 0) }, child.pid as i32);
        (out, libc::WEXITSTATUS(status))
    }

    fn sh(script: &str) -> Launch {
        Launch { program: "sh".into(), args: vec!["-c".into(), script.into()], ..Default::default() }
    }

    #[test]
    fn the_child_leads_its_group_reads_dev_null_and_starts_with_no_signal_blocked_or_ignored() {
        // flakehunt ignores SIGPIPE (as every Rust program does) and blocks every signal around
        // the clone: the attempt must see neither. Other ignored signals are inherited, as
        // across any exec (`nohup` relies on it); the C library's own two (32 and 33) are left
        // out of the comparison, because it changes them itself at times.
        let (out, code) =
            run(&sh("grep -E '^Sig(Blk|Ign)' /proc/self/status; ps -o pgid= -p $$; echo $$; readlink /proc/self/fd/0"));
        assert_eq!(code, 0, "{out}");
        let lines: Vec<&str> = out.lines().map(str::trim).collect();
        assert_eq!(lines[0], "SigBlk:\t0000000000000000");
        let libc_own = 0b11 << 31;
        let ignored =
            |line: &str| u64::from_str_radix(line.trim_start_matches("SigIgn:").trim(), 16).unwrap() & !libc_own;
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let ours = ignored(status.lines().find(|l| l.starts_with("SigIgn:")).unwrap());
        assert_eq!(ignored(lines[1]), ours & !(1 << (libc::SIGPIPE - 1)), "{}", lines[1]);
        assert_eq!(lines[2], lines[3], "process group = pid");
        assert_eq!(lines[4], "/dev/null");
    }

    #[test]
    fn the_child_runs_in_its_directory_with_its_environment_and_argv0_as_given() {
        let dir = tempfile::tempdir().unwrap();
        let mut launch = sh("pwd; echo \"$FLAKEHUNT_TEST_VALUE\"; echo $0");
        launch.cwd = Some(dir.path().to_owned());
        launch.env.push(("FLAKEHUNT_TEST_VALUE".into(), Some("a b=c".into())));
        let (out, code) = run(&launch);
        assert_eq!(code, 0);
        let canonical = dir.path().canonicalize().unwrap();
        assert_eq!(out, format!("{}\na b=c\nsh\n", canonical.display()));
    }

    #[test]
    fn a_failed_start_is_an_error_of_its_cause() {
        let missing_dir = Launch { cwd: Some("/no/such/dir".into()), ..sh("true") };
        assert_eq!(missing_dir.spawn().unwrap_err().kind(), io::ErrorKind::NotFound);
        let dir = tempfile::tempdir().unwrap();
        let not_executable = dir.path().join("prog");
        std::fs::write(&not_executable, "#!/bin/sh\n").unwrap();
        let launch = Launch { program: not_executable.into_os_string(), ..Default::default() };
        assert_eq!(launch.spawn().unwrap_err().kind(), io::ErrorKind::PermissionDenied);
    }

    #[test]
    fn a_profiles_settings_apply_in_the_child_before_exec() {
        let mut launch = sh("grep Cpus_allowed_list /proc/self/status; ulimit -n; cut -d' ' -f19 /proc/self/stat");
        launch.setup.cpus = Some(vec![0]);
        launch.setup.rlimits = vec![crate::exec::Limit::with_soft(crate::exec::Resource::Nofile, Some(64))];
        launch.setup.nice = Some(7);
        let (out, code) = run(&launch);
        assert_eq!(code, 0, "{out}");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0].split_whitespace().last(), Some("0"), "{out}");
        assert_eq!(lines[1], "64");
        assert_eq!(lines[2], "7");
        // A setting the kernel refuses fails the start with its cause.
        let mut refused = sh("true");
        refused.setup.nice = Some(-100);
        refused.setup.rlimits =
            vec![crate::exec::Limit { resource: crate::exec::Resource::Nofile, soft: Some(10), hard: Some(5) }];
        assert_eq!(refused.spawn().unwrap_err().raw_os_error(), Some(libc::EINVAL));
    }
}
