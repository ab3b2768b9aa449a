//! The process tree below flakehunt: which children are attempts' main processes, and how
//! descendants that escaped their attempt's process group are found and ended.
//! Main type: [`ProcessTree`].
//!
//! flakehunt makes itself a child subreaper, so a descendant whose parent dies is re-parented to
//! flakehunt instead of init. After an attempt's main process has been reaped, every descendant
//! still alive is therefore either in the attempt's process group or below one of flakehunt's
//! direct children that is not an attempt's main process. Such an orphan is attributed to its
//! attempt by its process group or by the `FLAKEHUNT_ATTEMPT` marker in its environment, which a
//! `setsid` or a double fork does not remove. An orphan that has neither (it left the group and
//! cleared its environment, like `setsid env -i daemon`) is attributed to the attempt sweeping
//! when no other attempt is running and the orphan started after that attempt did.

use std::collections::HashSet;
use std::fs;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitOptions};

use super::LeakedProcess;

/// Bookkeeping shared by every worker that spawns attempts.
#[derive(Debug, Default)]
pub struct ProcessTree {
    /// Main processes of running attempts (and helpers such as the watchdog): never reaped
    /// behind their owner's back.
    known: Mutex<HashSet<i32>>,
    /// Spawners hold it shared while a child exists but is not yet in `known`; a sweep that must
    /// decide about an unknown child holds it exclusively, so it never mistakes a fresh main
    /// process for an orphan.
    spawning: RwLock<()>,
    /// Attempts' main processes spawned and not yet reaped.
    attempts: AtomicUsize,
    /// `/proc/PID/task/PID/children`, opened once: every attempt's sweep reads it again from
    /// offset 0, which regenerates it, instead of paying a path lookup, open and close. Locked
    /// while read, so that two sweeps' reads of a long list do not interleave.
    children_file: Mutex<Option<fs::File>>,
}

impl ProcessTree {
    /// Makes this process a child subreaper; returns whether the kernel agreed.
    pub fn become_subreaper() -> bool {
        rustix::process::set_child_subreaper(Some(rustix::process::getpid())).is_ok()
    }

    /// Runs `spawn` so that the child it creates is registered before any sweep can see it.
    pub fn spawn_registered<T, E>(
        &self,
        spawn: impl FnOnce() -> Result<T, E>,
        pid_of: impl Fn(&T) -> u32,
    ) -> Result<T, E> {
        let _shared = self.spawning.read().unwrap_or_else(|e| e.into_inner());
        let child = spawn()?;
        self.known.lock().unwrap_or_else(|e| e.into_inner()).insert(pid_of(&child) as i32);
        self.attempts.fetch_add(1, Ordering::SeqCst);
        Ok(child)
    }

    /// Forgets a main process (spawned by [`Self::spawn_registered`]) once its owner reaped it.
    pub fn forget(&self, pid: u32) {
        if self.known.lock().unwrap_or_else(|e| e.into_inner()).remove(&(pid as i32)) {
            self.attempts.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Registers a pid that is not an attempt but must not be treated as an orphan.
    pub fn register(&self, pid: u32) {
        self.known.lock().unwrap_or_else(|e| e.into_inner()).insert(pid as i32);
    }

    /// Runs `spawn` for a helper of flakehunt's own (a tool version command, not an attempt),
    /// registered before any sweep can see it, so that no attempt takes it for its orphan.
    /// Call [`Self::release`] once it is reaped.
    pub fn spawn_helper<T, E>(&self, spawn: impl FnOnce() -> Result<T, E>, pid_of: impl Fn(&T) -> u32) -> Result<T, E> {
        let _shared = self.spawning.read().unwrap_or_else(|e| e.into_inner());
        let child = spawn()?;
        self.register(pid_of(&child));
        Ok(child)
    }

    /// Forgets a helper registered with [`Self::spawn_helper`] or [`Self::register`] once it
    /// is reaped, so a later process with the same pid is not mistaken for it.
    pub fn release(&self, pid: u32) {
        self.known.lock().unwrap_or_else(|e| e.into_inner()).remove(&(pid as i32));
    }

    /// Finds and kills everything the attempt with process group `pgid` and marker `marker`
    /// (`FLAKEHUNT_ATTEMPT=<value>`) left alive after its main process was reaped; `started` is
    /// when the attempt was spawned, from [`boot_ticks`]. Returns the processes found alive (the
    /// roots of what was left, not every descendant).
    pub fn sweep(&self, pgid: u32, marker: &str, started: u64) -> Vec<LeakedProcess> {
        let mut leaked: Vec<LeakedProcess> = Vec::new();
        // Each round kills what is visible now; the children of what it killed are re-parented
        // to us and show up in the next round. Bounded so a fork bomb cannot keep us here.
        for round in 0..64 {
            if round >= 8 {
                // Signals are delivered asynchronously; back off instead of spinning.
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            let mut ours = Vec::new();
            // Read before taking the lock every spawn and reap needs; this is only a first
            // filter, decided again below under the exclusive spawn lock.
            let children = self.direct_children();
            let candidates: Vec<i32> = {
                let known = self.known.lock().unwrap_or_else(|e| e.into_inner());
                children.into_iter().filter(|p| !known.contains(p)).collect()
            };
            if !candidates.is_empty() {
                let _exclusive = self.spawning.write().unwrap_or_else(|e| e.into_inner());
                let known = self.known.lock().unwrap_or_else(|e| e.into_inner()).clone();
                // With the spawn lock held no attempt can start, so "alone" stays true while we
                // decide; an orphan that started after this attempt did can then only be its own.
                let alone = self.attempts.load(Ordering::SeqCst) == 0;
                for pid in candidates.into_iter().filter(|p| !known.contains(p)) {
                    let Some(stat) = ProcStat::read(pid) else { continue };
                    if stat.state == 'Z' {
                        // Dead already: reap it whoever it belonged to; nobody else will.
                        reap(pid);
                    } else if stat.pgrp == pgid as i32 {
                        ours.push(pid);
                    } else {
                        // The start-time rule is only for processes that cleared their
                        // environment: one that still names an attempt belongs to that attempt,
                        // which may be sweeping right now (another attempt's orphan must never be
                        // taken for ours).
                        // It must also lead a group of its own (it escaped with setsid). The
                        // environment is read once no exec is changing it: midway it reads
                        // empty or cut short, and would make a marked process look unmarked.
                        let Environ::Present(env) = settled_environ(pid) else { continue };
                        match attempt_marker(&env) {
                            Some(found) if found == marker => ours.push(pid),
                            Some(_) => {}
                            None if alone && stat.pgrp == pid && stat.start_ticks >= started => ours.push(pid),
                            None => {}
                        }
                    }
                }
            }
            let group_alive = pgid > 1 && rustix::process::test_kill_process_group(pid(pgid as i32)).is_ok();
            if ours.is_empty() && !group_alive {
                break;
            }
            for &p in &ours {
                if !leaked.iter().any(|l| l.pid == p as u32) {
                    leaked.push(LeakedProcess { pid: p as u32, command: comm(p) });
                }
                kill_subtree(p);
                reap(p);
            }
            if group_alive {
                if leaked.is_empty() {
                    // Members of the group that are not our children yet (their parent is
                    // alive and in the group): name one so the record says what leaked.
                    if let Some(p) = group_members(pgid as i32).into_iter().next() {
                        leaked.push(LeakedProcess { pid: p as u32, command: comm(p) });
                    }
                }
                let _ = rustix::process::kill_process_group(pid(pgid as i32), Signal::KILL);
            }
        }
        leaked
    }

    /// Children of this process's main thread. Orphans are re-parented to the first live thread
    /// of the subreaper, its main thread, while attempts are spawned from worker threads and
    /// listed under those: this one small file holds exactly the candidates (and, with one job,
    /// the attempt just reaped is no longer in it).
    fn direct_children(&self) -> Vec<i32> {
        let mut file = self.children_file.lock().unwrap_or_else(|e| e.into_inner());
        if file.is_none() {
            let me = std::process::id();
            *file = fs::File::open(format!("/proc/{me}/task/{me}/children")).ok();
        }
        let Some(file) = file.as_ref() else { return Vec::new() };
        let mut text = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            match file.read_at(&mut chunk, text.len() as u64) {
                Ok(n) => {
                    text.extend_from_slice(&chunk[..n]);
                    // A seq_file read fills the buffer unless the text ends: a short read is
                    // the end, and saves the read that would return 0.
                    if n < chunk.len() {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        parse_pids(&text)
    }

    /// Kills and reaps every descendant not registered as known: the last resort when a hunt
    /// ends, also used after an interrupted run.
    pub fn kill_all_unknown(&self) {
        for _round in 0..64 {
            let known = self.known.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let all: Vec<i32> =
                children_of(std::process::id() as i32).into_iter().filter(|p| !known.contains(p)).collect();
            if all.is_empty() {
                return;
            }
            for p in all {
                kill_subtree(p);
                reap(p);
            }
        }
    }
}

fn pid(raw: i32) -> Pid {
    Pid::from_raw(raw).expect("pids from the kernel are positive")
}

fn read_children(path: &str) -> Vec<i32> {
    fs::read(path).map(|text| parse_pids(&text)).unwrap_or_default()
}

/// The pids of a `children` file: decimal numbers separated by spaces.
fn parse_pids(text: &[u8]) -> Vec<i32> {
    text.split(|b| b.is_ascii_whitespace()).filter_map(|p| std::str::from_utf8(p).ok()?.parse().ok()).collect()
}

/// Children of one process, of all its threads.
fn children_of(p: i32) -> Vec<i32> {
    let mut out = Vec::new();
    if let Ok(tasks) = fs::read_dir(format!("/proc/{p}/task")) {
        for t in tasks.flatten() {
            out.extend(read_children(&format!("{}/children", t.path().display())));
        }
    }
    out
}

/// Stops the whole subtree first so nothing forks while we walk it, then kills it.
fn kill_subtree(root: i32) {
    let mut seen = vec![root];
    let mut i = 0;
    while i < seen.len() && seen.len() < 100_000 {
        let _ = rustix::process::kill_process(pid(seen[i]), Signal::STOP);
        for c in children_of(seen[i]) {
            if !seen.contains(&c) {
                seen.push(c);
            }
        }
        i += 1;
    }
    for &p in &seen {
        let _ = rustix::process::kill_process(pid(p), Signal::KILL);
    }
}

fn reap(p: i32) {
    // Blocking is fine: the process is dead or was just sent SIGKILL, and it is our child.
    let _ = rustix::process::waitpid(Some(pid(p)), WaitOptions::empty());
}

/// Members of a process group, found by scanning `/proc` (only used when a leak is certain).
fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(dir) = fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&p| ProcStat::read(p).is_some_and(|s| s.pgrp == pgid && s.state != 'Z'))
        .collect()
}

/// Now, in the unit of a process's start time in `/proc/PID/stat`: clock ticks since boot.
pub(crate) fn boot_ticks() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; sysconf has no preconditions.
    let (ok, hz) =
        unsafe { (libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) == 0, libc::sysconf(libc::_SC_CLK_TCK)) };
    if !ok || hz <= 0 {
        return u64::MAX;
    }
    let nanos = ts.tv_sec as u128 * 1_000_000_000 + ts.tv_nsec as u128;
    // The kernel truncates the same way (`nsec_to_clock_t`), so a process started after this
    // call never shows an earlier tick.
    (nanos * hz as u128 / 1_000_000_000) as u64
}

/// `PF_EXITING` in the flags of `/proc/PID/stat`: the process is tearing itself down.
const PF_EXITING: u32 = 0x0000_0004;
/// `PF_KTHREAD` in the flags of `/proc/PID/stat`: a kernel thread, which has no memory of its own.
const PF_KTHREAD: u32 = 0x0020_0000;

/// The fields of `/proc/PID/stat` this module needs.
#[derive(Debug)]
pub(crate) struct ProcStat {
    pub(crate) state: char,
    pub(crate) pgrp: i32,
    /// The kernel's `PF_*` flags.
    pub(crate) flags: u32,
    /// Start time, in clock ticks since boot.
    pub(crate) start_ticks: u64,
    /// Where the environment lies in the process's memory, start and end (both 0 while an exec
    /// sets up the new program, `None` before Linux 3.5).
    pub(crate) env: Option<(u64, u64)>,
}

impl ProcStat {
    pub(crate) fn read(p: i32) -> Option<Self> {
        let text = fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
        // The command name may contain spaces and parentheses: fields start after the last ')'.
        // Numbered as in proc(5): 3 state, 5 pgrp, 9 flags, 22 starttime, 50 env_start, 51 env_end.
        let fields: Vec<&str> = text[text.rfind(')')? + 2..].split_whitespace().collect();
        let field = |n: usize| fields.get(n - 3).copied();
        let number = |n: usize| field(n).and_then(|f| f.parse::<u64>().ok());
        Some(Self {
            state: field(3)?.chars().next()?,
            pgrp: field(5)?.parse().ok()?,
            flags: field(9)?.parse().ok()?,
            start_ticks: number(22)?,
            env: number(50).zip(number(51)),
        })
    }
}

/// Longest flakehunt waits for one process to finish an exec before it reads its environment.
/// An exec takes microseconds to milliseconds; the limit only matters if one never finishes.
const SETTLE_LIMIT: Duration = Duration::from_secs(5);

/// What `/proc/PID/environ` says about a process.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Environ {
    /// Gone, a zombie, a kernel thread, or not ours to read.
    Absent,
    /// In the middle of an exec: the kernel has switched the process to the new program's memory
    /// but not yet copied its environment there (it reads empty), or an exec cut a read short.
    Changing,
    /// The `NAME=VALUE` entries, separated by NUL bytes (empty for `env -i`).
    Present(Vec<u8>),
}

/// Reads the environment of process `p` once.
pub(crate) fn environ(p: i32) -> Environ {
    // Between two looks at where the environment lies, read it. The kernel reads from the memory
    // of the program the process ran when the file was opened; during an exec the new memory's
    // range is still 0 for a moment (the read is empty), and an exec while reading tears the old
    // memory down (the read is cut short). A read is whole when the range stayed put and the read
    // is exactly that long.
    let alive = |s: &ProcStat| !matches!(s.state, 'Z' | 'X') && s.flags & (PF_KTHREAD | PF_EXITING) == 0;
    let Some(before) = ProcStat::read(p).filter(alive) else { return Environ::Absent };
    let Ok(env) = fs::read(format!("/proc/{p}/environ")) else { return Environ::Absent };
    let Some(after) = ProcStat::read(p).filter(alive) else { return Environ::Absent };
    match (before.env, after.env) {
        // A kernel before 3.5 does not show the range: trust the read.
        (None, _) | (_, None) => Environ::Present(env),
        (Some((start, end)), range) if end != 0 && range == Some((start, end)) && env.len() as u64 == end - start => {
            Environ::Present(env)
        }
        _ => Environ::Changing,
    }
}

/// Reads the environment of process `p`, waiting (bounded) for an exec in progress to finish.
pub(crate) fn settled_environ(p: i32) -> Environ {
    let deadline = Instant::now() + SETTLE_LIMIT;
    loop {
        match environ(p) {
            Environ::Changing if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(1)),
            Environ::Changing => return Environ::Absent,
            settled => return settled,
        }
    }
}

/// The `FLAKEHUNT_ATTEMPT=...` entry of an environment, if it has one.
fn attempt_marker(env: &[u8]) -> Option<String> {
    env.split(|&b| b == 0)
        .find(|e| e.starts_with(b"FLAKEHUNT_ATTEMPT="))
        .map(|e| String::from_utf8_lossy(e).into_owned())
}

/// Whether an environment holds the exact `NAME=VALUE` entry `marker`.
pub(crate) fn environ_has(env: &[u8], marker: &str) -> bool {
    env.split(|&b| b == 0).any(|e| e == marker.as_bytes())
}

/// The command name of a process, or `?` once it is gone.
pub(crate) fn comm(p: i32) -> String {
    fs::read_to_string(format!("/proc/{p}/comm")).map(|s| s.trim_end().to_owned()).unwrap_or_else(|_| "?".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_start_time_lies_between_ticks_read_before_and_after_spawning_it() {
        let before = boot_ticks();
        let mut child = std::process::Command::new("sleep").arg("10").spawn().expect("sleep starts");
        let after = boot_ticks();
        let stat = ProcStat::read(child.id() as i32).expect("the child's stat is readable");
        let _ = child.kill();
        let _ = child.wait();
        assert!(before <= stat.start_ticks && stat.start_ticks <= after, "{before} <= {} <= {after}", stat.start_ticks);
        assert_eq!(stat.pgrp, rustix::process::getpgrp().as_raw_nonzero().get());
    }

    #[test]
    fn an_environment_is_never_read_in_the_middle_of_an_exec() {
        // A shell that execs itself 300 times, always with the marker in its environment: every
        // settled read must show the marker, though a plain read often catches an exec midway.
        let marker = format!("FLAKEHUNT_TREE_TEST={}", std::process::id());
        let script = r#"n=$1; if [ "$n" -lt 300 ]; then exec sh -c "$SCRIPT" sh $((n + 1)); fi"#;
        let mut child = std::process::Command::new("sh")
            .args(["-c", script, "sh", "0"])
            .env("SCRIPT", script)
            .env("FLAKEHUNT_TREE_TEST", std::process::id().to_string())
            .spawn()
            .expect("sh starts");
        let p = child.id() as i32;
        let mut reads = 0;
        while child.try_wait().expect("waitpid works").is_none() {
            match settled_environ(p) {
                Environ::Present(env) => assert!(environ_has(&env, &marker), "read {reads}: {env:?}"),
                Environ::Absent => {}
                Environ::Changing => unreachable!("settled_environ waits until the exec is done"),
            }
            reads += 1;
        }
    }

    #[test]
    fn an_empty_environment_is_present_and_a_zombie_is_absent() {
        let mut cleared = std::process::Command::new("/bin/sleep").arg("10").env_clear().spawn().expect("sleep starts");
        let p = cleared.id() as i32;
        // Until sleep is running, the exec may still be under way.
        let deadline = Instant::now() + Duration::from_secs(60);
        while !fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|args| args.starts_with(b"/bin/sleep\0")) {
            assert!(Instant::now() < deadline, "sleep never started");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(environ(p), Environ::Present(Vec::new()));
        let _ = cleared.kill();
        // SIGKILL is asynchronous: once the process is a zombie (waitid with WNOWAIT leaves it
        // one), its environment is absent.
        let _ = rustix::process::waitid(
            rustix::process::WaitId::Pid(pid(p)),
            rustix::process::WaitIdOptions::EXITED | rustix::process::WaitIdOptions::NOWAIT,
        );
        assert_eq!(environ(p), Environ::Absent);
        let _ = cleared.wait();
    }
}
