//! Small facts about the host read on the hunt's hot path.

/// The one-minute load average, from `/proc/loadavg`.
pub fn load_average_1m() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// The host name (`uname -n`).
pub fn hostname() -> String {
    rustix::system::uname().nodename().to_string_lossy().into_owned()
}
