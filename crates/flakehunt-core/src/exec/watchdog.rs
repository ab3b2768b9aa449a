//! A separate process that ends what a hunt started if flakehunt itself dies, even by SIGKILL.
//! Main type: [`Watchdog`].
//!
//! Attempts lead their own process groups, so they do not die with flakehunt. Rather than a
//! `PR_SET_PDEATHSIG` hook in every spawn (which needs fork+exec and follows the spawning
//! thread), one watchdog per hunt holds the read end of a pipe whose only writer is flakehunt.
//! End-of-file without a clean `done` means flakehunt died: the watchdog then kills every process
//! that carries the hunt's `FLAKEHUNT_RUN_ID` in its environment and the process group of each
//! (which catches a group member that cleared its environment), plus the cgroups flakehunt
//! told it about, and removes those, then removes the temporary directories (clean rooms,
//! sandboxes) flakehunt told it about. Attempts are found by their environment
//! rather than announced, so the watchdog costs nothing per attempt.
//!
//! The protocol is one line per message: `+c PATH` / `-c PATH` for a cgroup, `+d HEX` / `-d HEX`
//! for a directory tree to remove (its path's bytes in hexadecimal, so that no byte of a path,
//! a newline included, can forge another message), and `done`.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};

use rustix::process::{Pid, Signal};

use super::tree::{environ_has, settled_environ, Environ};

/// The flakehunt side of the watchdog.
#[derive(Debug)]
pub struct Watchdog {
    pipe: Arc<Pipe>,
    pid: u32,
}

/// The write end of the watchdog's pipe, shared with the [`TrackedDir`]s.
#[derive(Debug)]
struct Pipe(Mutex<Option<ChildStdin>>);

impl Pipe {
    fn send(&self, line: &str) {
        let mut pipe = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = pipe.as_mut() {
            // One write per message; a dead watchdog (EPIPE) is not the attempt's problem.
            if p.write_all(line.as_bytes()).is_err() {
                *pipe = None;
            }
        }
    }
}

/// A handle that tells the watchdog about temporary directories, for owners that outlive a
/// borrow of the [`Watchdog`] (the profiles' shared helpers).
#[derive(Debug, Clone)]
pub struct DirTracker(Arc<Pipe>);

impl DirTracker {
    /// As [`Watchdog::track_dir`].
    pub fn track(&self, path: &Path) -> TrackedDir {
        self.0.send(&format!("+d {}\n", hex(path)));
        TrackedDir { pipe: Arc::clone(&self.0), path: path.to_owned() }
    }
}

/// A temporary directory the watchdog removes if flakehunt dies; dropping this (once the
/// directory is removed, or when it is to be kept) tells the watchdog to forget it.
#[derive(Debug)]
pub struct TrackedDir {
    pipe: Arc<Pipe>,
    path: PathBuf,
}

impl Drop for TrackedDir {
    fn drop(&mut self) {
        self.pipe.send(&format!("-d {}\n", hex(&self.path)));
    }
}

fn hex(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    path.as_os_str().as_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    if text.len() % 2 != 0 {
        return None;
    }
    let bytes = (0..text.len())
        .step_by(2)
        .map(|i| text.get(i..i + 2).and_then(|b| u8::from_str_radix(b, 16).ok()))
        .collect::<Option<Vec<u8>>>()?;
    Some(PathBuf::from(std::ffi::OsString::from_vec(bytes)))
}

impl Watchdog {
    /// Starts `exe` (flakehunt itself) as the watchdog of the hunt `run_id` (its hidden
    /// subcommand) in a process group of its own, so a Ctrl-C in the terminal does not reach it.
    /// flakehunt's own process group, the user's shell job, is passed on the command line: the
    /// watchdog must never kill it, and cannot learn it from its parent if flakehunt is killed
    /// before the watchdog has started.
    pub fn spawn(exe: &Path, run_id: &str) -> std::io::Result<Self> {
        let group = rustix::process::getpgrp().as_raw_nonzero().get().to_string();
        let mut child = Command::new(exe)
            .args(["__watchdog", run_id, "--protect", &group])
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()?;
        let pipe = child.stdin.take();
        Ok(Self { pipe: Arc::new(Pipe(Mutex::new(pipe))), pid: child.id() })
    }

    /// The watchdog's pid (a child of flakehunt that is not an attempt).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    fn send(&self, line: &str) {
        self.pipe.send(line);
    }

    /// The directory `path` now exists and is flakehunt's alone: the watchdog removes it if
    /// flakehunt dies before the returned guard is dropped. `path` must be absolute.
    pub fn track_dir(&self, path: &Path) -> TrackedDir {
        self.tracker().track(path)
    }

    /// A handle to track directories with, that does not borrow the watchdog.
    pub fn tracker(&self) -> DirTracker {
        DirTracker(Arc::clone(&self.pipe))
    }

    /// A cgroup directory now exists.
    pub fn track_cgroup(&self, path: &Path) {
        self.send(&format!("+c {}\n", path.display()));
    }

    /// A cgroup directory has been removed.
    pub fn untrack_cgroup(&self, path: &Path) {
        self.send(&format!("-c {}\n", path.display()));
    }

    /// Tells the watchdog the hunt ended cleanly, and lets it go.
    pub fn finish(&self) {
        self.send("done\n");
        self.pipe.0.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

/// Waits, at most `limit`, until no watchdog of the hunt `run_id` is left from an earlier run
/// of it (a `--resume` right after flakehunt was killed): that watchdog kills every process
/// carrying the run id and removes the directories it was told of, which are the resumed run's
/// too. True when none is left.
pub fn wait_for_previous(run_id: &str, limit: std::time::Duration) -> bool {
    let started = std::time::Instant::now();
    let own = std::process::id();
    let alive = |pid: u32| {
        // A zombie has done its work; only its parent's wait is missing.
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z')))
    };
    let previous: Vec<u32> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != own)
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let mut args = cmdline.split(|&b| b == 0).skip(1);
            args.next() == Some(b"__watchdog".as_slice()) && args.next() == Some(run_id.as_bytes())
        })
        .collect();
    for pid in previous {
        while alive(pid) {
            if started.elapsed() >= limit {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    true
}

/// The watchdog's own main loop: reads messages from `input` until end-of-file, then cleans up
/// unless told `done`. `run_id` is the hunt's `FLAKEHUNT_RUN_ID`; the process groups in
/// `protect` (flakehunt's) are never killed.
pub fn serve(input: impl Read, run_id: &str, protect: &[i32]) {
    // The terminal's hangup or interrupt must not take the watchdog down before it did its job.
    // SAFETY: setting a signal disposition to SIG_IGN has no preconditions.
    unsafe {
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
        libc::signal(libc::SIGINT, libc::SIG_IGN);
    }
    // Never kill the group of the watchdog itself or of flakehunt, which is the user's shell job
    // (the test runner's, CI's): a process of the hunt may have joined it (a clean room's setup
    // runs there). flakehunt passes its group; its parent's is read too, for a caller that did
    // not. Read from the parent alone it would be lost when flakehunt is killed before this
    // line runs: the parent is then init, and the shell job was killed with the setup.
    // libc rather than rustix here: when flakehunt is already gone the parent may be a process
    // whose group id is 0 (init outside our namespace), which rustix treats as impossible.
    // SAFETY: getppid and getpgid have no memory preconditions.
    let parent_group = unsafe { libc::getpgid(libc::getppid()) };
    let protected = [rustix::process::getpgrp().as_raw_nonzero().get(), parent_group]
        .into_iter()
        .chain(protect.iter().copied())
        .filter(|&g| g > 0)
        .collect::<Vec<i32>>();
    let mut cgroups: Vec<PathBuf> = Vec::new();
    let mut dirs: Vec<PathBuf> = Vec::new();
    for line in BufReader::new(input).lines() {
        let Ok(line) = line else { break };
        match line.split_once(' ') {
            Some(("+c", c)) => cgroups.push(PathBuf::from(c)),
            Some(("-c", c)) => cgroups.retain(|x| x != Path::new(c)),
            Some(("+d", d)) => dirs.extend(unhex(d).filter(|d| d.is_absolute())),
            Some(("-d", d)) => {
                if let Some(d) = unhex(d) {
                    dirs.retain(|x| *x != d);
                }
            }
            _ if line == "done" => return,
            _ => {}
        }
    }
    cleanup(&cgroups, run_id, &protected);
    // After the processes are gone, so none is still writing into a room.
    for dir in &dirs {
        let _ = crate::copy::remove_tree(dir);
    }
}

fn cleanup(cgroups: &[PathBuf], run_id: &str, protected: &[i32]) {
    let marker = format!("FLAKEHUNT_RUN_ID={run_id}");
    // Each round kills what it finds; a round that finds nothing ends the cleanup. A process of
    // the hunt in the middle of an exec reads an empty environment for a moment, so each
    // process's environment is read once its exec finished (`settled_environ`), never in that
    // moment. Bounded so a fork bomb cannot keep the watchdog here.
    for _round in 0..16 {
        let mut found = false;
        for cg in cgroups {
            found |= crate::exec::cgroup::kill_all(cg);
        }
        if let Ok(dir) = std::fs::read_dir("/proc") {
            for p in dir.flatten().filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok()) {
                if p as u32 == std::process::id() {
                    continue;
                }
                let Environ::Present(env) = settled_environ(p) else { continue };
                if environ_has(&env, &marker) {
                    let group =
                        super::tree::ProcStat::read(p).map(|s| s.pgrp).filter(|g| *g > 1 && !protected.contains(g));
                    if let Some(g) = group.and_then(Pid::from_raw) {
                        found |= rustix::process::kill_process_group(g, Signal::KILL).is_ok();
                    }
                    if let Some(pid) = Pid::from_raw(p) {
                        found |= rustix::process::kill_process(pid, Signal::KILL).is_ok();
                    }
                }
            }
        }
        if !found {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for cg in cgroups {
        let _ = std::fs::remove_dir(cg);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_paths_cross_the_pipe_byte_for_byte() {
        use std::os::unix::ffi::OsStringExt;
        let hostile = PathBuf::from(std::ffi::OsString::from_vec(b"/tmp/a b\n+d 2f\xff".to_vec()));
        let line = hex(&hostile);
        assert!(line.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(unhex(&line), Some(hostile));
        assert_eq!(unhex("2"), None);
        assert_eq!(unhex("zz"), None);
    }
}
