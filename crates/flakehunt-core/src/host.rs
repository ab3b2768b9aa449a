//! Small facts about the host read on the hunt's hot path.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The one-minute load average, from `/proc/loadavg`. The kernel updates it every 5 seconds, so
/// a reading is reused for half a second rather than read again for every attempt.
pub fn load_average_1m() -> Option<f64> {
    // Last reading (f64 bits) and when it was taken (milliseconds since the epoch; 0: never).
    static VALUE: AtomicU64 = AtomicU64::new(0);
    static TAKEN_MS: AtomicU64 = AtomicU64::new(0);
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    let taken = TAKEN_MS.load(Ordering::Relaxed);
    if taken != 0 && now.saturating_sub(taken) < 500 {
        return Some(f64::from_bits(VALUE.load(Ordering::Relaxed)));
    }
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let value: f64 = text.split_whitespace().next()?.parse().ok()?;
    VALUE.store(value.to_bits(), Ordering::Relaxed);
    TAKEN_MS.store(now.max(1), Ordering::Relaxed);
    Some(value)
}

/// The host name (`uname -n`).
pub fn hostname() -> String {
    rustix::system::uname().nodename().to_string_lossy().into_owned()
}
