//! The primitive mechanisms a profile composes, as written in `flakehunt.toml`. Main type:
//! [`Knobs`].

pub use crate::schema::profile::{Knobs, Pause, Policy};

/// The longest jitter sleep a profile may ask for (one second): longer would stall, not jitter.
pub const MAX_JITTER_SLEEP_US: u64 = 1_000_000;

/// The shortest pause a profile may ask for, in milliseconds (50 us): the stopper ends a pause
/// with a timed wait, which the kernel's default timer slack (50 us) may lengthen by as much, so a
/// shorter pause would be mostly slack. Delivered lengths are measured and recorded either way.
pub const MIN_PAUSE_MS: f64 = 0.05;

/// The most concurrent copies a profile may ask for.
pub const MAX_COPIES: u32 = 1024;

/// The values of a profile's knobs that parse but make no sense.
pub trait ValidateKnobs {
    /// Checks values that parse but make no sense; the message names the key and what is allowed.
    fn validate(&self) -> Result<(), String>;
}

impl ValidateKnobs for Knobs {
    fn validate(&self) -> Result<(), String> {
        if self.cpus == Some(0) {
            return Err("cpus must be at least 1".into());
        }
        if let Some(q) = self.cpu_quota {
            if !(q > 0.0 && q <= 100.0 * 1024.0) {
                return Err(format!("cpu-quota = {q}: give a percentage of one CPU above 0, e.g. 15"));
            }
        }
        // 0 (one per CPU) and u32::MAX (one per two CPUs) are counts the profile derives itself.
        if let Some(n) = self.noise_threads.filter(|&n| n != 0 && n != u32::MAX) {
            crate::bounds::Machine::get().check_noise_threads(u64::from(n)).map_err(|e| e.to_string())?;
        }
        if let Some(n) = self.nice {
            if !(-20..=19).contains(&n) {
                return Err(format!("nice = {n}: allowed -20 to 19"));
            }
        }
        if let Some(p) = self.pause {
            if !(p.min_ms >= MIN_PAUSE_MS && p.min_ms <= p.max_ms && p.max_ms.is_finite()) {
                return Err(format!(
                    "pause: min-ms ({}) must be at least {MIN_PAUSE_MS} and at most max-ms ({})",
                    p.min_ms, p.max_ms
                ));
            }
            if !(p.every_max_ms >= 0.0 && p.every_max_ms.is_finite()) {
                return Err(format!("pause: every-max-ms ({}) must be 0 or more", p.every_max_ms));
            }
        }
        if let Some(n) = self.copies {
            if !(1..=MAX_COPIES).contains(&n) {
                return Err(format!("copies = {n}: give 1 to {MAX_COPIES} concurrent copies of the target"));
            }
        }
        if let Some(s) = self.python_switch_interval {
            if !(s > 0.0 && s <= 1.0) {
                return Err(format!("python-switch-interval = {s}: give seconds above 0, e.g. 1e-6"));
            }
        }
        if let Some(r) = self.jitter {
            if !(r > 0.0 && r <= 1.0) {
                return Err(format!(
                    "jitter = {r}: give the share of calls to delay, above 0 and at most 1, e.g. 0.05"
                ));
            }
        }
        if let Some([min, max]) = self.jitter_sleep_us {
            if self.jitter.is_none() {
                return Err(
                    "jitter-sleep-us needs jitter = RATE, the share of calls to delay (1 delays every call)".into()
                );
            }
            if !(min >= 1 && min <= max && max <= MAX_JITTER_SLEEP_US) {
                return Err(format!(
                    "jitter-sleep-us = [{min}, {max}]: give [MIN, MAX] microseconds, 1 <= MIN <= MAX <= {MAX_JITTER_SLEEP_US}, e.g. [20, 50]"
                ));
            }
        }
        for (name, value) in &self.env {
            if name.is_empty() || name.contains(['=', '\0']) {
                return Err(format!("env name {name:?}: a variable name cannot be empty or hold '=' or a NUL byte"));
            }
            if value.contains('\0') {
                return Err(format!("env {name} holds a NUL byte, which no program can be given: remove it"));
            }
        }
        for name in self.rlimits.keys() {
            if crate::exec::Resource::from_name(name).is_none() {
                let known: Vec<&str> = crate::exec::Resource::ALL.iter().map(|r| r.name()).collect();
                return Err(format!("unknown rlimit '{name}': allowed {}", known.join(", ")));
            }
        }
        Ok(())
    }
}
