//! The largest values a hunt may ask for: counts of threads and processes bounded by what this
//! machine can run, durations bounded so that no clock arithmetic can overflow. Every option and
//! configuration value that becomes a thread, a process or a deadline is checked here, so a
//! typo (`noise-threads = 100000000`, `--timeout 18446744073709551615s`) is refused with one
//! line instead of bringing the machine down or panicking. Main type: [`Machine`].

use std::sync::LazyLock;
use std::time::{Duration, Instant};

/// The longest duration any option may give: a year. Longer is surely a mistake, and it keeps
/// `Instant + duration` far from overflowing.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

/// The most runs any count may ask for (`--runs`, a fire level's runs): a billion attempts of a
/// millisecond each take eleven days, and sums of such counts cannot overflow.
pub const MAX_RUNS: u64 = 1_000_000_000;

/// The most cells a matrix may have, even with `--yes`: each is kept in the manifest and run
/// `--runs` times, and the grid is built in memory before the first attempt.
pub const MAX_CELLS: u64 = 1_000_000;

/// Competitor threads per CPU beyond which noise only adds scheduler overhead: each CPU is
/// already contended many times over.
const NOISE_PER_CPU: u64 = 16;

/// A value outside what flakehunt accepts. The message names the value, the limit and where the
/// limit comes from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} = {value}: {why}")]
pub struct BoundError {
    /// The option or key.
    pub what: String,
    /// The value given.
    pub value: String,
    /// The limit and what to do.
    pub why: String,
}

impl crate::error_class::Classify for BoundError {
    fn class(&self) -> crate::error_class::ErrorClass {
        let Self { .. } = self;
        crate::error_class::ErrorClass::Usage
    }
}

/// What this machine can run at once, read once per process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Machine {
    /// CPUs this process may use.
    pub cpus: u64,
    /// Tasks (processes and threads) this user may have: the least of `RLIMIT_NPROC`,
    /// `/proc/sys/kernel/threads-max` and `/proc/sys/kernel/pid_max`.
    pub tasks: u64,
    /// Which of those three set `tasks`.
    pub tasks_from: &'static str,
}

impl Machine {
    /// This machine, read on first use.
    pub fn get() -> Self {
        static MACHINE: LazyLock<Machine> = LazyLock::new(Machine::read);
        *MACHINE
    }

    fn read() -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
        let proc_value = |path: &str| std::fs::read_to_string(path).ok().and_then(|t| t.trim().parse::<u64>().ok());
        let nproc = rustix::process::getrlimit(rustix::process::Resource::Nproc).current;
        let candidates = [
            (nproc, "RLIMIT_NPROC (ulimit -u)"),
            (proc_value("/proc/sys/kernel/threads-max"), "/proc/sys/kernel/threads-max"),
            (proc_value("/proc/sys/kernel/pid_max"), "/proc/sys/kernel/pid_max"),
        ];
        let (tasks, tasks_from) = candidates
            .iter()
            .filter_map(|(v, from)| v.map(|v| (v, *from)))
            .min_by_key(|(v, _)| *v)
            .unwrap_or((u64::from(u32::MAX), "no limit found"));
        Self { cpus, tasks, tasks_from }
    }

    /// The most attempts that may run at once (`--jobs`, a fire level's workers): each needs a
    /// thread of flakehunt's and at least one process, so half the task limit.
    pub fn max_workers(&self) -> u64 {
        (self.tasks / 2).max(1)
    }

    /// Checks a count of concurrent attempts.
    pub fn check_workers(&self, what: &str, n: u64) -> Result<(), BoundError> {
        let max = self.max_workers();
        if n > max {
            return Err(BoundError {
                what: what.to_owned(),
                value: n.to_string(),
                why: format!(
                    "this machine runs at most {max} at once (half of {}, {}): give at most {max}",
                    self.tasks, self.tasks_from
                ),
            });
        }
        Ok(())
    }

    /// The most noise threads one attempt may start: a fixed number per CPU, and never more than
    /// a quarter of the task limit.
    pub fn max_noise_threads(&self) -> u64 {
        (self.cpus * NOISE_PER_CPU).min(self.tasks / 4).max(1)
    }

    /// Checks a profile's `noise-threads`.
    pub fn check_noise_threads(&self, n: u64) -> Result<(), BoundError> {
        let max = self.max_noise_threads();
        if n > max {
            return Err(BoundError {
                what: "noise-threads".to_owned(),
                value: n.to_string(),
                why: format!(
                    "at most {max} on this machine ({NOISE_PER_CPU} per CPU for its {} CPUs, within {}): give at most {max}, or 0 for one per CPU",
                    self.cpus, self.tasks_from
                ),
            });
        }
        Ok(())
    }
}

/// Checks a count of runs.
pub fn check_runs(what: &str, n: u64) -> Result<(), BoundError> {
    if n > MAX_RUNS {
        return Err(BoundError {
            what: what.to_owned(),
            value: n.to_string(),
            why: format!("more than {MAX_RUNS}, the most flakehunt runs: give fewer (or --budget to stop on time)"),
        });
    }
    Ok(())
}

/// Checks a duration option (`--timeout`, `--grace`, `--budget`, `--leak-timeout`).
pub fn check_duration(what: &str, d: Duration) -> Result<Duration, BoundError> {
    if d > MAX_DURATION {
        return Err(BoundError {
            what: what.to_owned(),
            value: humantime::format_duration(d).to_string(),
            why: "longer than a year, the longest flakehunt accepts: give a shorter duration, e.g. 10m".to_owned(),
        });
    }
    Ok(d)
}

/// A duration from seconds as a record stores them, which a damaged or edited manifest can make
/// negative, NaN, infinite or huge.
pub fn seconds(what: &str, s: f64) -> Result<Duration, BoundError> {
    let err = |why: &str| BoundError { what: what.to_owned(), value: s.to_string(), why: why.to_owned() };
    if !s.is_finite() || s < 0.0 {
        return Err(err("not a duration: give a number of seconds, at least 0"));
    }
    let d = Duration::try_from_secs_f64(s).map_err(|_| err("not a duration"))?;
    check_duration(what, d).map_err(|_| err("longer than a year, the longest flakehunt accepts"))
}

/// `now + d`, or the farthest instant the clock can represent past `now` within
/// [`MAX_DURATION`]: a deadline that cannot overflow, for durations that were not checked.
pub fn deadline(now: Instant, d: Duration) -> Instant {
    now.checked_add(d.min(MAX_DURATION)).or_else(|| now.checked_add(Duration::from_secs(3600))).unwrap_or(now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_or_damaged_durations_are_refused_not_panicked_on() {
        let e = check_duration("--timeout", Duration::from_secs(u64::MAX)).unwrap_err().to_string();
        assert!(e.starts_with("--timeout = ") && e.contains("longer than a year"), "{e}");
        assert_eq!(check_duration("--grace", Duration::from_secs(2)), Ok(Duration::from_secs(2)));
        for bad in [-1.0, f64::NAN, f64::INFINITY, 1e308, 1e20] {
            let e = seconds("timeout_seconds", bad).unwrap_err().to_string();
            assert!(e.starts_with("timeout_seconds = "), "{e}");
        }
        assert_eq!(seconds("grace_seconds", 0.5), Ok(Duration::from_millis(500)));
        assert_eq!(seconds("grace_seconds", 0.0), Ok(Duration::ZERO));
    }

    #[test]
    fn a_deadline_never_overflows() {
        let now = Instant::now();
        assert!(deadline(now, Duration::MAX) > now);
        assert_eq!(deadline(now, Duration::from_secs(1)), now + Duration::from_secs(1));
    }

    #[test]
    fn counts_are_bounded_by_the_machine() {
        let m = Machine { cpus: 2, tasks: 32768, tasks_from: "/proc/sys/kernel/pid_max" };
        assert_eq!(m.max_workers(), 16384);
        assert!(m.check_workers("--jobs", 16384).is_ok());
        let e = m.check_workers("--jobs", 4_000_000_000).unwrap_err().to_string();
        assert_eq!(
            e,
            "--jobs = 4000000000: this machine runs at most 16384 at once (half of 32768, /proc/sys/kernel/pid_max): give at most 16384"
        );
        assert_eq!(m.max_noise_threads(), 32);
        assert!(m.check_noise_threads(32).is_ok());
        let e = m.check_noise_threads(100_000_000).unwrap_err().to_string();
        assert!(e.starts_with("noise-threads = 100000000: at most 32 on this machine"), "{e}");
        // A tight process limit bounds noise below the per-CPU figure.
        let tight = Machine { cpus: 64, tasks: 100, tasks_from: "RLIMIT_NPROC (ulimit -u)" };
        assert_eq!(tight.max_noise_threads(), 25);
        let real = Machine::get();
        assert!(real.cpus >= 1 && real.tasks >= 1);
    }
}
