//! How a hunt runs its attempts: counts, parallelism, limits and stop rules. Main type:
//! [`Settings`].

use std::time::Duration;

use crate::bounds::{self, BoundError, Machine};
pub use crate::schema::plan::{Settings, Shard, WarmPlan};

/// The plan's durations, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Durations {
    /// Per-attempt timeout.
    pub timeout: Duration,
    /// Time between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Stop starting attempts after this long.
    pub budget: Option<Duration>,
}

/// The bounds of a manifest's settings, which the record's format alone does not check.
pub trait CheckSettings {
    /// Checks the numbers as a manifest holds them, which an edited or damaged record can make
    /// anything JSON allows (a negative or huge timeout, zero jobs, a billion workers), and
    /// returns its durations. Each error names the manifest's field.
    fn check(&self) -> Result<Durations, BoundError>;
}

impl CheckSettings for Settings {
    fn check(&self) -> Result<Durations, BoundError> {
        let field = |what: &str, value: String, why: &str| BoundError { what: what.into(), value, why: why.into() };
        if self.runs == 0 {
            return Err(field("runs", "0".into(), "at least 1"));
        }
        if self.jobs == 0 {
            return Err(field("jobs", "0".into(), "at least 1"));
        }
        Machine::get().check_workers("jobs", u64::from(self.jobs))?;
        bounds::check_runs("runs", self.runs)?;
        let timeout = bounds::seconds("timeout_seconds", self.timeout_seconds)?;
        if timeout.is_zero() {
            return Err(field("timeout_seconds", "0".into(), "must be longer than 0"));
        }
        let grace = bounds::seconds("grace_seconds", self.grace_seconds)?;
        let budget = self.budget_seconds.map(|b| bounds::seconds("budget_seconds", b)).transpose()?;
        Ok(Durations { timeout, grace, budget })
    }
}

/// Parses `1MiB`, `4096`, `64KiB`, `2MB`.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| format!("invalid size '{s}': write e.g. 4096, 64KiB, 1MiB"))?;
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1000,
        "kib" => 1 << 10,
        "m" | "mb" => 1_000_000,
        "mib" => 1 << 20,
        "g" | "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        _ => return Err(format!("invalid size unit in '{s}': use B, KiB, MiB or GiB")),
    };
    n.checked_mul(mult).ok_or_else(|| format!("size '{s}' is too large"))
}
