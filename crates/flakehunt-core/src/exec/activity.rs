//! What an attempt's processes are doing, sampled when a limit flakehunt set is reached: a hang
//! (every thread asleep, no CPU time, no output) is evidence about the target; an attempt still
//! at work (using CPU, printing, runnable, starting or ending processes) is only slow, and its
//! end says nothing. Main type: [`Activity`].

use std::collections::BTreeSet;
use std::fs;

/// One look at an attempt's processes: the main process, its descendants and the members of its
/// process group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Activity {
    /// CPU time of their live threads, in nanoseconds (`/proc/PID/task/TID/schedstat`).
    thread_ns: u64,
    /// CPU time of the processes, their dead threads and the children they reaped, in clock
    /// ticks (`/proc/PID/stat`): coarse, but it also counts what has gone since the last look.
    ticks: u64,
    /// The threads seen, as (pid, tid): a thread or process that starts or ends is work.
    tasks: BTreeSet<(i32, i32)>,
    /// A thread was running or waiting for a CPU (`R`), or in an uninterruptible wait (`D`,
    /// usually paging or disk): not asleep.
    runnable: bool,
    /// Bytes the attempt had written to its stdout and stderr.
    output: u64,
}

/// CPU time over a window below this share of it is no work: a hung runtime's timer threads
/// wake now and then (Go's sysmon, a JVM's), a busy thread starved to a 1 % quota still shows.
const IDLE_CPU_SHARE: f64 = 0.005;

impl Activity {
    /// Looks at the processes of the attempt whose main process is `pid` (also its process
    /// group), which had written `output` bytes so far.
    pub fn sample(pid: u32, output: u64) -> Self {
        let mut processes: Vec<i32> = Vec::new();
        let mut todo = vec![pid as i32];
        while let Some(p) = todo.pop() {
            if processes.contains(&p) || processes.len() >= 4096 {
                continue;
            }
            processes.push(p);
            todo.extend(children_of(p));
        }
        // Members of the group its descendants left (a parent that exited: they were reparented).
        if let Ok(dir) = fs::read_dir("/proc") {
            for p in dir.flatten().filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok()) {
                if !processes.contains(&p)
                    && stat_fields(&format!("/proc/{p}/stat")).is_some_and(|f| f.pgrp == pid as i32)
                {
                    processes.push(p);
                }
            }
        }
        let mut a = Self { thread_ns: 0, ticks: 0, tasks: BTreeSet::new(), runnable: false, output };
        for p in processes {
            let Some(stat) = stat_fields(&format!("/proc/{p}/stat")) else { continue };
            if stat.state == 'Z' || stat.state == 'X' {
                continue;
            }
            a.ticks += stat.ticks;
            let Ok(tasks) = fs::read_dir(format!("/proc/{p}/task")) else { continue };
            for t in tasks.flatten().filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok()) {
                let Some(task) = stat_fields(&format!("/proc/{p}/task/{t}/stat")) else { continue };
                a.tasks.insert((p, t));
                a.runnable |= matches!(task.state, 'R' | 'D');
                a.thread_ns += fs::read_to_string(format!("/proc/{p}/task/{t}/schedstat"))
                    .ok()
                    .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
                    .unwrap_or(task.own_ticks.saturating_mul(nanos_per_tick()));
            }
        }
        a
    }

    /// Whether the attempt was idle from `earlier` to this look, `window_seconds` apart: the same
    /// threads, none runnable at either look, no output, and CPU time below a sliver of the window.
    pub fn idle_since(&self, earlier: &Self, window_seconds: f64) -> bool {
        let quiet_ns = (IDLE_CPU_SHARE * window_seconds.max(0.0) * 1e9) as u64;
        self.tasks == earlier.tasks
            && !self.runnable
            && !earlier.runnable
            && self.output == earlier.output
            && self.thread_ns.saturating_sub(earlier.thread_ns) <= quiet_ns
            // Two ticks: one can be a rounding of the same nanoseconds.
            && self.ticks.saturating_sub(earlier.ticks) < 2
    }
}

/// The fields of a `stat` file this module reads.
struct StatFields {
    state: char,
    pgrp: i32,
    /// utime + stime (the process's whole, dead threads included; a thread's own).
    own_ticks: u64,
    /// own_ticks + cutime + cstime.
    ticks: u64,
}

fn stat_fields(path: &str) -> Option<StatFields> {
    let text = fs::read_to_string(path).ok()?;
    // Fields after the command name, which may hold spaces and parentheses; numbered as in
    // proc(5): 3 state, 5 pgrp, 14 utime, 15 stime, 16 cutime, 17 cstime.
    let fields: Vec<&str> = text[text.rfind(')')? + 2..].split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3).copied();
    let number = |n: usize| field(n).and_then(|f| f.parse::<i64>().ok()).map_or(0, |v| v.max(0) as u64);
    let own_ticks = number(14) + number(15);
    Some(StatFields {
        state: field(3)?.chars().next()?,
        pgrp: field(5)?.parse().ok()?,
        own_ticks,
        ticks: own_ticks + number(16) + number(17),
    })
}

fn children_of(p: i32) -> Vec<i32> {
    let mut out = Vec::new();
    if let Ok(tasks) = fs::read_dir(format!("/proc/{p}/task")) {
        for t in tasks.flatten() {
            if let Ok(text) = fs::read_to_string(t.path().join("children")) {
                out.extend(text.split_whitespace().filter_map(|c| c.parse::<i32>().ok()));
            }
        }
    }
    out
}

fn nanos_per_tick() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        1_000_000_000 / hz as u64
    } else {
        10_000_000
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};
    use std::time::Duration;

    fn spawn(script: &str) -> std::process::Child {
        use std::os::unix::process::CommandExt;
        Command::new("sh").args(["-c", script]).process_group(0).stdout(Stdio::null()).spawn().unwrap()
    }

    /// Two looks `gap` apart at a process started from `script`.
    fn looks(script: &str, gap: Duration) -> (Activity, Activity) {
        let mut child = spawn(script);
        // Let it get to its steady state (a shell that has started its loop or its sleep).
        std::thread::sleep(Duration::from_millis(300));
        let first = Activity::sample(child.id(), 0);
        std::thread::sleep(gap);
        let second = Activity::sample(child.id(), 0);
        let _ = rustix::process::kill_process_group(
            rustix::process::Pid::from_raw(child.id() as i32).unwrap(),
            rustix::process::Signal::KILL,
        );
        let _ = child.wait();
        (first, second)
    }

    #[test]
    fn a_sleeping_process_is_idle_and_a_busy_one_is_not() {
        let gap = Duration::from_millis(400);
        let (a, b) = looks("exec sleep 30", gap);
        assert!(!a.tasks.is_empty());
        assert!(b.idle_since(&a, gap.as_secs_f64()), "{a:?} {b:?}");
        // A busy loop is runnable whenever it is looked at, however loaded the machine.
        let (a, b) = looks("while :; do :; done", gap);
        assert!(!b.idle_since(&a, gap.as_secs_f64()), "{a:?} {b:?}");
    }

    #[test]
    fn output_a_new_process_or_cpu_time_is_work() {
        let base = Activity { thread_ns: 1000, ticks: 3, tasks: [(1, 1)].into(), runnable: false, output: 10 };
        assert!(base.idle_since(&base, 1.0));
        assert!(!Activity { output: 11, ..base.clone() }.idle_since(&base, 1.0));
        assert!(!Activity { tasks: [(1, 1), (2, 2)].into(), ..base.clone() }.idle_since(&base, 1.0));
        // 1 % of a CPU over a second (a starved busy loop) is work; 0.1 % (a timer thread) is not.
        assert!(!Activity { thread_ns: 1000 + 10_000_000, ..base.clone() }.idle_since(&base, 1.0));
        assert!(Activity { thread_ns: 1000 + 1_000_000, ..base.clone() }.idle_since(&base, 1.0));
        assert!(!Activity { ticks: 5, ..base.clone() }.idle_since(&base, 1.0));
        assert!(!Activity { runnable: true, ..base.clone() }.idle_since(&base, 1.0));
    }
}
