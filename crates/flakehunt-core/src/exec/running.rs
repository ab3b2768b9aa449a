//! One started attempt process and the loop that waits for it: output capture, timeout with a
//! graceful then forced kill of its process group, cancellation, and the sweep for anything it
//! left behind. Main type: [`Running`], which ends as an [`Execution`].

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant, SystemTime};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::process::{Pid, PidfdFlags, Signal};

use super::{Cancel, Capture, Launch, LeakedProcess, ProcessTree, Termination};

/// Per-attempt limits.
#[derive(Debug, Clone)]
pub struct Limits {
    /// How long the attempt may run before its group gets SIGTERM.
    pub timeout: Duration,
    /// `timeout` is flakehunt's default, not one the user gave: an attempt still at work when
    /// it is reached is only slow ([`Cutoff::Busy`]); the user's own timeout is a failure the
    /// user defined.
    pub judge_timeout: bool,
    /// The limit flakehunt derived for this attempt (the adaptive hunt's hang rule), when
    /// shorter than `timeout`.
    pub hang: Option<HangLimit>,
    /// The hunt's budget ends here: an attempt still running then is ended ([`Cutoff::Budget`]).
    pub stop_at: Option<Instant>,
    /// How long after SIGTERM before SIGKILL.
    pub grace: Duration,
    /// How long to keep reading output after the main process exited, while descendants may
    /// still hold the pipes.
    pub leak_timeout: Duration,
    /// Bytes of each stream kept for the logs.
    pub capture_cap: usize,
    /// Bytes of each stream's end kept in the record.
    pub tail_len: usize,
    /// Masks applied line by line to stdout before it is hashed (`--ignore`).
    pub stdout_mask: Option<std::sync::Arc<super::Mask>>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(600),
            judge_timeout: false,
            hang: None,
            stop_at: None,
            grace: Duration::from_secs(2),
            leak_timeout: Duration::from_millis(100),
            capture_cap: 1 << 20,
            tail_len: 4096,
            stdout_mask: None,
        }
    }
}

/// How the main process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Exited with this code.
    Exited(i32),
    /// Killed by this signal.
    Signaled(i32),
}

/// A limit flakehunt derived for one attempt: reached, the attempt is judged by what its
/// processes are doing (see [`super::Activity`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HangLimit {
    /// From the attempt's start.
    pub limit: Duration,
    /// An attempt idle at `limit` is let run until this longer limit and is hung only if it
    /// stayed idle until then (no hang of its cell confirmed yet); none: hung at `limit`.
    pub confirm: Option<Duration>,
}

/// Why flakehunt ended an attempt itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cutoff {
    /// The user's `--timeout`.
    Timeout,
    /// A limit flakehunt set, reached while the attempt's processes were at work (using CPU,
    /// printing, runnable, starting or ending processes): slow, no evidence.
    Busy,
    /// A limit flakehunt set, reached while they were idle, and idle until the longer limit
    /// when there was one: a hang.
    Hung,
    /// The end of the hunt's budget.
    Budget,
}

/// The end of one attempt's process.
#[derive(Debug)]
pub struct Execution {
    /// Wall-clock start.
    pub started_at: SystemTime,
    /// Wall-clock duration from spawn to the main process's exit.
    pub seconds: f64,
    /// How the main process ended.
    pub status: Status,
    /// Set when the timeout ended the attempt.
    pub timed_out: Option<Termination>,
    /// Which limit, and what flakehunt saw of the attempt then, when one ended it.
    pub cutoff: Option<Cutoff>,
    /// When the attempt reached its hang limit: whether it was idle then.
    pub idle_at_limit: Option<bool>,
    /// When it was idle at its hang limit and let run longer: that longer limit.
    pub confirm_limit: Option<Duration>,
    /// Set when a cancellation (Ctrl-C) ended the attempt before it finished by itself.
    pub cancelled: bool,
    /// Standard output.
    pub stdout: Capture,
    /// Standard error.
    pub stderr: Capture,
    /// Processes found alive after the main process exited (since killed).
    pub leaked: Vec<LeakedProcess>,
    /// CPU seconds of the main process and the children it reaped (from `wait4`).
    pub cpu_seconds: Option<f64>,
    /// Set when flakehunt's own helper died while the attempt ran (the warm parent that forked
    /// it, killed or OOM-killed), saying how: the attempt's end is unknown, and `status` says
    /// nothing of the target. The attempt is run again rather than recorded.
    pub lost: Option<String>,
}

/// A started attempt.
pub struct Running<'t> {
    /// The main process's pid, also its process group.
    pid: u32,
    pidfd: OwnedFd,
    stdout: Option<File>,
    stderr: Option<File>,
    started: Instant,
    started_at: SystemTime,
    tree: &'t ProcessTree,
    marker: String,
    /// When it was spawned, in `/proc` start-time ticks, to recognise its orphans.
    started_ticks: u64,
    /// Who reaps the main process.
    reap: Reap<'t>,
}

/// Who reaps an attempt's main process: flakehunt itself (`wait4`), or, for a fork of a warm
/// parent (a grandchild flakehunt cannot wait for), that parent, which reports the status.
pub(crate) enum Reap<'t> {
    /// flakehunt's own child.
    Own,
    /// Another process's child, whose end that process reports.
    Foreign(Box<dyn ForeignReap + 't>),
}

/// How the end of a process that another process reaps is learned (a warm parent's fork: see
/// `warm::Reaped`). A trait, so that this layer does not depend on the warm parents above it.
pub(crate) trait ForeignReap: Send {
    /// Says that flakehunt has read what it measures of the process (see [`Running::settled`]):
    /// its reaper may reap it once it exits. Later calls do nothing.
    fn settle(&self);

    /// The process's end and CPU seconds, once it has exited; `Err` says how its reaper died
    /// before it could tell.
    fn status(self: Box<Self>) -> Result<(Status, Option<f64>), String>;
}

impl<'t> Running<'t> {
    /// Starts `launch` in its own process group. `marker` is the `NAME=VALUE` environment entry
    /// that identifies this attempt's descendants (it must be among `launch.env`).
    pub fn spawn(launch: &Launch, tree: &'t ProcessTree, marker: String) -> io::Result<Self> {
        let started_at = SystemTime::now();
        let started = Instant::now();
        let started_ticks = super::tree::boot_ticks();
        let child = tree.spawn_registered(|| launch.spawn(), |c| c.pid)?;
        let opened = match child.pidfd {
            Some(fd) => Ok(fd),
            None => rustix::process::pidfd_open(pid(child.pid), PidfdFlags::empty()),
        };
        let pidfd = match opened {
            Ok(fd) => fd,
            Err(e) => {
                let _ = rustix::process::kill_process(pid(child.pid), Signal::KILL);
                wait4(child.pid);
                tree.forget(child.pid);
                return Err(e.into());
            }
        };
        Ok(Self {
            pid: child.pid,
            pidfd,
            stdout: Some(child.stdout),
            stderr: Some(child.stderr),
            started,
            started_at,
            tree,
            marker,
            started_ticks,
            reap: Reap::Own,
        })
    }

    /// An attempt whose main process someone else started and reaps (a warm parent's fork):
    /// its pid (also its process group), a pidfd for it, the read ends of its output, and when
    /// it was asked for (`started`, `started_at`, `started_ticks` as [`Self::spawn`] takes them).
    pub(crate) fn adopt(
        pid: u32,
        pidfd: OwnedFd,
        (stdout, stderr): (File, File),
        (started, started_at, started_ticks): (Instant, SystemTime, u64),
        tree: &'t ProcessTree,
        marker: String,
        reaped: Box<dyn ForeignReap + 't>,
    ) -> Self {
        Self {
            pid,
            pidfd,
            stdout: Some(stdout),
            stderr: Some(stderr),
            started,
            started_at,
            tree,
            marker,
            started_ticks,
            reap: Reap::Foreign(reaped),
        }
    }

    /// The main process's pid, which is also its process group id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Says that flakehunt has read what it measures of the started process in `/proc` (the
    /// profile's CPUs and policy): a warm parent keeps its exited fork unreaped until then, as a
    /// cold attempt's exited process stays readable until flakehunt waits for it.
    pub fn settled(&self) {
        if let Reap::Foreign(reaped) = &self.reap {
            reaped.settle();
        }
    }

    /// Waits for the attempt to end, enforcing `limits` and honouring `cancel`.
    pub fn wait(mut self, limits: &Limits, cancel: &Cancel) -> Execution {
        let _batch = BatchWhileWaiting::begin();
        // Hashing stdout is cheap next to starting a process, and lets the analysis compare
        // outputs (`--oracle majority`) over whole streams, not just what the cap kept.
        let mut out = Capture::hashing(limits.capture_cap, limits.tail_len, limits.stdout_mask.clone());
        let mut err = Capture::new(limits.capture_cap, limits.tail_len);
        // One read buffer per thread, reused by its attempts: zeroing 64 KiB per attempt costs
        // more than the reads of a quiet test.
        let mut buf = READ_BUFFER.with_borrow_mut(std::mem::take);
        buf.resize(READ_BUFFER_LEN, 0);
        let pgid = self.pid;
        let mut deadline = crate::bounds::deadline(self.started, limits.timeout);
        let hard = deadline;
        let mut judged = Judged::first(self.started, limits);
        let (mut cutoff, mut idle_at_limit, mut confirm_limit) = (None, None, None);
        let mut timed_out = None;
        let mut cancelled = false;
        let mut killed = false;
        let mut exited = false;
        let mut watch_stop = true;

        while !exited {
            let now = Instant::now();
            if timed_out.is_none() && !cancelled && !killed {
                // A limit flakehunt set: look at the attempt's processes before it and at it.
                let output = || out.total() + err.total();
                let mut end = None;
                if limits.stop_at.is_some_and(|s| now >= s) {
                    end = Some(Cutoff::Budget);
                } else if now >= hard && !limits.judge_timeout {
                    // The user's own timeout, reached before a longer limit flakehunt set.
                    end = Some(Cutoff::Timeout);
                } else if let Some(j) = judged.as_mut() {
                    if j.before.is_none() && now >= j.probe_at() {
                        j.before = Some((now, super::Activity::sample(pgid, output())));
                    }
                    let looked = j.before.as_ref().map_or(now, |(at, _)| *at);
                    if now >= j.at && now.saturating_duration_since(looked) < j.window / 2 {
                        // Woken late (a loaded machine): the first look was just now, so the
                        // window is measured from it.
                        j.at = looked + j.window;
                    } else if now >= j.at {
                        let seen = super::Activity::sample(pgid, output());
                        let (looked, before) = j.before.take().expect("looked at before the limit");
                        let idle = seen.idle_since(&before, now.saturating_duration_since(looked).as_secs_f64());
                        if j.hang_limit {
                            idle_at_limit = Some(idle);
                        }
                        match (idle, j.confirm) {
                            (false, _) => end = Some(Cutoff::Busy),
                            (true, Some(until)) if until > j.at => {
                                confirm_limit = Some(until.saturating_duration_since(self.started));
                                judged = Some(Judged {
                                    at: until.min(hard),
                                    window: until.saturating_duration_since(now),
                                    before: Some((now, seen)),
                                    confirm: None,
                                    hang_limit: false,
                                });
                            }
                            (true, _) => end = Some(Cutoff::Hung),
                        }
                        if end.is_some() {
                            judged = None;
                        }
                    }
                }
                if let Some(why) = end {
                    cutoff = Some(why);
                    timed_out = Some(Termination::Sigterm);
                    signal_group(pgid, Signal::TERM);
                    deadline = crate::bounds::deadline(now, limits.grace);
                    continue;
                }
            }
            if now >= deadline && !killed {
                if timed_out.is_some() {
                    timed_out = Some(Termination::Sigkill);
                }
                signal_group(pgid, Signal::KILL);
                killed = true;
            }
            let mut wake = deadline;
            if timed_out.is_none() && !cancelled {
                if let Some(j) = &judged {
                    wake = wake.min(if j.before.is_none() { j.probe_at() } else { j.at });
                }
                if let Some(stop) = limits.stop_at {
                    wake = wake.min(stop);
                }
            }
            let wait = if killed { Duration::from_millis(100) } else { wake.saturating_duration_since(now) };
            let mut fds = Vec::with_capacity(5);
            fds.push(PollFd::new(&self.pidfd, PollFlags::IN));
            let out_idx = self.stdout.as_ref().map(|s| {
                fds.push(PollFd::from_borrowed_fd(s.as_fd(), PollFlags::IN));
                fds.len() - 1
            });
            let err_idx = self.stderr.as_ref().map(|s| {
                fds.push(PollFd::from_borrowed_fd(s.as_fd(), PollFlags::IN));
                fds.len() - 1
            });
            let stop_idx = watch_stop.then(|| {
                fds.push(PollFd::from_borrowed_fd(cancel.stop_fd(), PollFlags::IN));
                fds.len() - 1
            });
            let kill_idx = (!killed).then(|| {
                fds.push(PollFd::from_borrowed_fd(cancel.kill_fd(), PollFlags::IN));
                fds.len() - 1
            });
            match rustix::event::poll(&mut fds, Some(&timespec(wait))) {
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => break,
            }
            let ready = |i: Option<usize>| i.is_some_and(|i| !fds[i].revents().is_empty());
            let (out_ready, err_ready) = (ready(out_idx), ready(err_idx));
            let (stop_ready, kill_ready, exit_ready) = (ready(stop_idx), ready(kill_idx), ready(Some(0)));
            drop(fds);
            if out_ready {
                read_into(&mut self.stdout, &mut out, &mut buf);
            }
            if err_ready {
                read_into(&mut self.stderr, &mut err, &mut buf);
            }
            if kill_ready {
                cancelled = true;
                signal_group(pgid, Signal::KILL);
                killed = true;
            } else if stop_ready {
                watch_stop = false;
                if timed_out.is_none() && !cancelled {
                    cancelled = true;
                    signal_group(pgid, Signal::TERM);
                    deadline = crate::bounds::deadline(Instant::now(), limits.grace);
                }
            }
            exited = exit_ready;
        }
        let seconds = self.started.elapsed().as_secs_f64();
        let ((status, cpu_seconds), lost) = match std::mem::replace(&mut self.reap, Reap::Own) {
            Reap::Own => (wait4(self.pid), None),
            Reap::Foreign(reaped) => match reaped.status() {
                Ok(ended) => (ended, None),
                Err(why) => ((Status::Signaled(libc::SIGKILL), None), Some(why)),
            },
        };
        self.tree.forget(pgid);
        if lost.is_none() && !cancelled && !killed && timed_out.is_none() && signalled_from_outside(status) {
            // A batch system ending the job (scancel, a pod's termination) signals every process
            // it tracks: the attempt may die of it a moment before flakehunt's own stop arrives.
            // Its death says nothing about the test, so it is not recorded as a crash.
            cancelled = stop_arrives(cancel, EXTERNAL_STOP_GRACE);
        }

        // Descendants may still hold the pipes; read for a short while, then look for them.
        drain(&mut self.stdout, &mut self.stderr, &mut out, &mut err, &mut buf, limits.leak_timeout);
        let leaked = self.tree.sweep(pgid, &self.marker, self.started_ticks);
        if !leaked.is_empty() {
            // Now killed: the pipes reach end-of-file promptly.
            drain(&mut self.stdout, &mut self.stderr, &mut out, &mut err, &mut buf, Duration::from_secs(1));
        }
        READ_BUFFER.with_borrow_mut(|b| *b = buf);
        Execution {
            started_at: self.started_at,
            seconds,
            status,
            timed_out,
            cutoff,
            idle_at_limit,
            confirm_limit,
            cancelled,
            stdout: out,
            stderr: err,
            leaked,
            cpu_seconds,
            lost,
        }
    }
}

const READ_BUFFER_LEN: usize = 64 * 1024;

/// The next limit at which the attempt is judged by what its processes do.
struct Judged {
    /// When.
    at: Instant,
    /// The last part of the limit over which its work is measured.
    window: Duration,
    /// The look at its processes when that window began, and when it was taken.
    before: Option<(Instant, super::Activity)>,
    /// When idle at `at`, the longer limit it is let run to.
    confirm: Option<Instant>,
    /// Whether `at` is the hang limit itself (its judgement is recorded).
    hang_limit: bool,
}

impl Judged {
    /// The first limit `limits` judges: the hang limit when shorter than the timeout, else the
    /// timeout when it is flakehunt's default.
    fn first(started: Instant, limits: &Limits) -> Option<Self> {
        let at = |d: Duration| crate::bounds::deadline(started, d);
        let (limit, confirm, hang_limit) = match limits.hang {
            Some(h) if h.limit < limits.timeout => (h.limit, h.confirm.map(at), true),
            _ if limits.judge_timeout => (limits.timeout, None, false),
            _ => return None,
        };
        Some(Self { at: at(limit), window: judge_window(limit), before: None, confirm, hang_limit })
    }

    fn probe_at(&self) -> Instant {
        self.at.checked_sub(self.window).unwrap_or(self.at)
    }
}

/// The last quarter of a limit, at least 100 ms (and at most the limit): long enough that a
/// thread at work shows CPU time however it is throttled or paused.
fn judge_window(limit: Duration) -> Duration {
    (limit / 4).max(Duration::from_millis(100)).min(limit)
}

/// The waiting thread's scheduling policy is `SCHED_BATCH` while it waits for an attempt, and
/// back to `SCHED_OTHER` after. A batch thread does not preempt the running task when it wakes
/// up, so the attempt's exit (which closes its stdout, then its stderr, then signals its pidfd)
/// wakes flakehunt once, after the exit, instead of three times in the middle of it; and reading
/// a chatty test's output never preempts the test. Left alone when flakehunt itself was started
/// under another policy (`chrt`), so that it is not lost.
struct BatchWhileWaiting {
    switched: bool,
}

impl BatchWhileWaiting {
    fn begin() -> Self {
        // SAFETY: plain system calls on the calling thread with a valid parameter.
        let switched = unsafe {
            libc::sched_getscheduler(0) == libc::SCHED_OTHER
                && libc::sched_setscheduler(0, libc::SCHED_BATCH, &libc::sched_param { sched_priority: 0 }) == 0
        };
        Self { switched }
    }
}

impl Drop for BatchWhileWaiting {
    fn drop(&mut self) {
        if self.switched {
            // SAFETY: as in `begin`.
            unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &libc::sched_param { sched_priority: 0 }) };
        }
    }
}

/// How long flakehunt waits, after an attempt died of a signal it did not send, for a stop
/// request of its own that would explain the death.
const EXTERNAL_STOP_GRACE: Duration = Duration::from_millis(250);

/// Whether the main process died of a signal that ends jobs from outside (the ones batch
/// systems, `kill` and terminals send), rather than one the program raised itself.
fn signalled_from_outside(status: Status) -> bool {
    matches!(status, Status::Signaled(s) if [libc::SIGTERM, libc::SIGKILL, libc::SIGINT, libc::SIGHUP].contains(&s))
}

/// Whether a stop is requested within `grace` (at once when it already is).
fn stop_arrives(cancel: &Cancel, grace: Duration) -> bool {
    let end = crate::bounds::deadline(Instant::now(), grace);
    while !cancel.is_stopping() {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        let mut fds = [PollFd::from_borrowed_fd(cancel.stop_fd(), PollFlags::IN)];
        let _ = rustix::event::poll(&mut fds, Some(&timespec(left)));
    }
    true
}

thread_local! {
    static READ_BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn pid(raw: u32) -> Pid {
    Pid::from_raw(raw as i32).expect("child pids are positive")
}

fn signal_group(pgid: u32, sig: Signal) {
    let _ = rustix::process::kill_process_group(pid(pgid), sig);
}

fn timespec(d: Duration) -> Timespec {
    Timespec { tv_sec: d.as_secs().min(i64::MAX as u64) as i64, tv_nsec: d.subsec_nanos() as _ }
}

/// Reaps the main process with `wait4`, which also reports its CPU time (std's `wait` does not).
fn wait4(pid: u32) -> (Status, Option<f64>) {
    let mut status = 0;
    // SAFETY: rusage is plain data that wait4 fills; zeroed is a valid initial value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: pointers to live locals; pid is our unreaped child.
        let r = unsafe { libc::wait4(pid as i32, &mut status, 0, &mut usage) };
        if r == -1 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if r == -1 {
            // Only possible if someone else reaped it; report it as killed.
            return (Status::Signaled(libc::SIGKILL), None);
        }
        break;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    let cpu = secs(usage.ru_utime) + secs(usage.ru_stime);
    let st = if libc::WIFEXITED(status) {
        Status::Exited(libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        Status::Signaled(libc::WTERMSIG(status))
    } else {
        Status::Exited(-1)
    };
    (st, Some(cpu))
}

/// Reads what is available; closes the stream at end-of-file or error.
fn read_into<R: Read>(stream: &mut Option<R>, capture: &mut Capture, buf: &mut [u8]) {
    if let Some(s) = stream.as_mut() {
        match s.read(buf) {
            Ok(0) => *stream = None,
            Ok(n) => capture.push(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => *stream = None,
        }
    }
}

/// Reads both streams until both reach end-of-file or `limit` passes.
fn drain(
    stdout: &mut Option<File>,
    stderr: &mut Option<File>,
    out: &mut Capture,
    err: &mut Capture,
    buf: &mut [u8],
    limit: Duration,
) {
    let end = crate::bounds::deadline(Instant::now(), limit);
    while stdout.is_some() || stderr.is_some() {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let mut fds = Vec::with_capacity(2);
        if let Some(s) = stdout.as_ref() {
            fds.push(PollFd::from_borrowed_fd(s.as_fd(), PollFlags::IN));
        }
        if let Some(s) = stderr.as_ref() {
            fds.push(PollFd::from_borrowed_fd(s.as_fd(), PollFlags::IN));
        }
        match rustix::event::poll(&mut fds, Some(&timespec(left))) {
            Ok(0) => break,
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => break,
        }
        let ready: Vec<bool> = fds.iter().map(|f| !f.revents().is_empty()).collect();
        drop(fds);
        let (has_out, has_err) = (stdout.is_some(), stderr.is_some());
        if has_out && ready[0] {
            read_into(stdout, out, buf);
        }
        if has_err && ready[usize::from(has_out)] {
            read_into(stderr, err, buf);
        }
    }
}
