//! cgroup helpers shared by the CPU quota mechanism and the watchdog.

use std::path::Path;

/// Kills every process in the cgroup at `dir`: `cgroup.kill` on v2, else each pid listed in
/// `cgroup.procs`. Returns whether any process was found.
pub fn kill_all(dir: &Path) -> bool {
    let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
    let pids: Vec<i32> = procs.split_whitespace().filter_map(|p| p.parse().ok()).collect();
    if pids.is_empty() {
        return false;
    }
    if std::fs::write(dir.join("cgroup.kill"), "1").is_err() {
        for p in pids {
            if let Some(pid) = rustix::process::Pid::from_raw(p) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    }
    true
}
