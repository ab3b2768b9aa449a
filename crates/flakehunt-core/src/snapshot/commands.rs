//! The commands a snapshot runs (tool version lines, the interpreter's distributions, `go env`,
//! `go list -m all`), all at once: each in its own process group, stdin closed, its output read
//! through non-blocking pipes up to a cap, and killed with its group at its deadline. Main
//! function: [`run_all`].

use std::io::{ErrorKind, Read};
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::exec::ProcessTree;

/// How often running commands are checked on. Version commands take tens of milliseconds, so
/// a short poll keeps the common case fast.
const POLL: Duration = Duration::from_millis(5);

/// One command to run, with how much of its output to keep and how long it may take.
#[derive(Debug)]
pub(crate) struct Probe {
    /// The command (its stdio and process group are set by [`run_all`]).
    pub command: Command,
    /// Bytes kept from each stream; more is read and discarded, so that a chatty command
    /// cannot block on a full pipe.
    pub cap: usize,
    /// How long it may run before its process group is killed.
    pub timeout: Duration,
}

/// What became of a [`Probe`].
#[derive(Debug)]
pub(crate) enum Ran {
    /// It could not be started (not installed, not executable).
    NotStarted(std::io::Error),
    /// It was still running at its deadline and was killed.
    TimedOut(Duration),
    /// It exited.
    Exited {
        /// Its exit status.
        status: ExitStatus,
        /// Its stdout, up to the cap.
        stdout: Vec<u8>,
        /// Its stderr, up to the cap.
        stderr: Vec<u8>,
    },
}

impl Ran {
    /// Stdout of a command that exited 0.
    pub fn success(&self) -> Option<&[u8]> {
        match self {
            Ran::Exited { status, stdout, .. } if status.success() => Some(stdout),
            _ => None,
        }
    }

    /// Why the command gave nothing usable, in a few words (`None` when it succeeded).
    pub fn failure(&self) -> Option<String> {
        match self {
            Ran::NotStarted(e) => Some(format!("cannot run it: {e}")),
            Ran::TimedOut(after) => Some(format!("did not finish within {} s", after.as_secs_f64())),
            Ran::Exited { status, stderr, .. } if !status.success() => {
                let why = String::from_utf8_lossy(stderr);
                let line = why.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("no message");
                let line: String = line.chars().take(300).collect();
                Some(format!("{status}: {line}"))
            }
            Ran::Exited { .. } => None,
        }
    }
}

/// One command in flight.
struct Running {
    child: Child,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    out: Vec<u8>,
    err: Vec<u8>,
    cap: usize,
    deadline: Instant,
    timeout: Duration,
    status: Option<ExitStatus>,
}

/// Runs every probe at once and returns what became of each, in order.
///
/// Output is read through non-blocking pipes in a polling loop, so neither a silent hung
/// command nor one that floods its output can stall the capture, and no thread is left behind.
/// Each command runs in its own process group so that a timeout also kills anything it spawned.
/// With `tree`, each is registered as flakehunt's own (an attempt's orphan sweep never takes it
/// for a leak); with `run_id`, it carries `FLAKEHUNT_RUN_ID`, so the hunt's watchdog ends it if
/// flakehunt dies.
pub(crate) fn run_all(probes: Vec<Probe>, tree: Option<&ProcessTree>, run_id: Option<&str>) -> Vec<Ran> {
    let mut results: Vec<Option<Ran>> = probes.iter().map(|_| None).collect();
    let mut running: Vec<(usize, Running)> = Vec::new();
    for (i, probe) in probes.into_iter().enumerate() {
        match spawn(probe, tree, run_id) {
            Ok(run) => running.push((i, run)),
            Err(e) => results[i] = Some(Ran::NotStarted(e)),
        }
    }
    while !running.is_empty() {
        for (_, run) in &mut running {
            drain(run);
            if run.status.is_none() {
                run.status = run.child.try_wait().ok().flatten();
            }
        }
        // A command is done once it has exited and its pipes are closed or empty (a lingering
        // grandchild could hold them open forever).
        let now = Instant::now();
        let mut still_running = Vec::with_capacity(running.len());
        for (i, mut run) in running {
            if let Some(status) = run.status {
                drain(&mut run);
                release(tree, &run.child);
                results[i] = Some(Ran::Exited { status, stdout: run.out, stderr: run.err });
            } else if now >= run.deadline {
                kill(&mut run.child);
                release(tree, &run.child);
                results[i] = Some(Ran::TimedOut(run.timeout));
            } else {
                still_running.push((i, run));
            }
        }
        running = still_running;
        if !running.is_empty() {
            std::thread::sleep(POLL);
        }
    }
    results.into_iter().map(|r| r.unwrap_or(Ran::TimedOut(Duration::ZERO))).collect()
}

/// Starts one probe with non-blocking output pipes.
fn spawn(probe: Probe, tree: Option<&ProcessTree>, run_id: Option<&str>) -> std::io::Result<Running> {
    use std::os::unix::process::CommandExt;
    let Probe { mut command, cap, timeout } = probe;
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Own process group, so a timeout can kill the command's children too.
        .process_group(0);
    if let Some(id) = run_id {
        command.env("FLAKEHUNT_RUN_ID", id);
    }
    let mut child = match tree {
        Some(tree) => tree.spawn_helper(|| command.spawn(), Child::id),
        None => command.spawn(),
    }?;
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let nonblocking = stdout.as_ref().is_some_and(|s| rustix::io::ioctl_fionbio(s, true).is_ok())
        && stderr.as_ref().is_some_and(|s| rustix::io::ioctl_fionbio(s, true).is_ok());
    if !nonblocking {
        // Reading would risk blocking past the deadline; give up on it.
        kill(&mut child);
        release(tree, &child);
        return Err(std::io::Error::other("cannot read its output without blocking"));
    }
    let deadline = Instant::now() + timeout;
    Ok(Running { child, stdout, stderr, out: Vec::new(), err: Vec::new(), cap, deadline, timeout, status: None })
}

/// Unregisters a reaped command from the hunt's process tree.
fn release(tree: Option<&ProcessTree>, child: &Child) {
    if let Some(tree) = tree {
        tree.release(child.id());
    }
}

/// Reads whatever is available on both pipes without blocking; a pipe at end of file or in
/// error is closed.
fn drain(run: &mut Running) {
    fn drain_one(pipe: &mut Option<impl Read>, buf: &mut Vec<u8>, cap: usize) {
        let Some(reader) = pipe else { return };
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match reader.read(&mut chunk) {
                Ok(0) => {
                    *pipe = None;
                    return;
                }
                Ok(n) => {
                    let room = cap.saturating_sub(buf.len());
                    buf.extend_from_slice(&chunk[..n.min(room)]);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(_) => {
                    *pipe = None;
                    return;
                }
            }
        }
    }
    drain_one(&mut run.stdout, &mut run.out, run.cap);
    drain_one(&mut run.stderr, &mut run.err, run.cap);
}

/// Kills a command's process group (falling back to the command alone) and reaps it.
fn kill(child: &mut Child) {
    let group = i32::try_from(child.id()).ok().and_then(rustix::process::Pid::from_raw);
    let killed_group =
        group.is_some_and(|pid| rustix::process::kill_process_group(pid, rustix::process::Signal::KILL).is_ok());
    if !killed_group {
        let _ = child.kill();
    }
    let _ = child.wait();
}
