//! Calibration: what a few plain attempts say about the target on this machine (how long it
//! runs, how CPU-bound it is, its runtime), and the arms derived from that: condition families
//! with levels sized to the target instead of fixed numbers. Main type: [`Calibration`].

use serde::{Deserialize, Serialize};

use crate::plan::CellSpec;
use crate::profile::{BuiltinProfiles, Profile};
use crate::record::{Attempt, Outcome};
pub use crate::schema::adaptive::RuntimeKind;
pub use crate::schema::adaptive::{Calibration, ColdStart, Skipped};

/// What one plain attempt measured.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// Wall-clock seconds.
    pub seconds: f64,
    /// CPU seconds of its processes, when measured.
    pub cpu_seconds: Option<f64>,
    /// The most threads its main process ran, when sampled.
    pub threads: Option<u32>,
    /// How it ended.
    pub outcome: Outcome,
    /// It started cold (a new process): in a hunt whose attempts run warm, what a cold start
    /// adds is measured from such an attempt.
    #[serde(default)]
    pub cold: bool,
}

impl Measurement {
    /// The measurement an attempt record holds: its wall time and outcome, and its CPU time
    /// (wait4's, recorded per attempt; else what its CPU share, `effect.cpu_share`, implies).
    pub fn from_attempt(a: &Attempt) -> Self {
        Self {
            seconds: a.seconds,
            cpu_seconds: a.cpu_seconds.or_else(|| a.effect.cpu_share.map(|share| share * a.seconds)),
            threads: None,
            outcome: a.outcome,
            cold: a.mode == crate::record::Mode::Cold,
        }
    }
}

/// The runtime of an executable, read from its headers.
pub trait RuntimeOfExecutable {
    /// Classifies an executable from its first bytes (the ELF header, program headers and, for
    /// Go, the build-info marker anywhere in the file): pure, so a unit test gives it bytes.
    fn of_executable(bytes: &[u8]) -> Self;
}

impl RuntimeOfExecutable for RuntimeKind {
    fn of_executable(bytes: &[u8]) -> Self {
        if bytes.starts_with(b"#!") {
            let line = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
            let line = String::from_utf8_lossy(line);
            return if line.contains("python") { Self::Python } else { Self::Unknown };
        }
        if !bytes.starts_with(b"\x7fELF") || bytes.len() < 64 {
            return Self::Unknown;
        }
        // Go writes "\xff Go buildinf:" at the start of its build-info section (Go 1.13+).
        if bytes.windows(14).any(|w| w == b"\xff Go buildinf:") {
            return Self::Go;
        }
        match elf_has_interpreter(bytes) {
            Some(true) => Self::Native,
            Some(false) => Self::Static,
            None => Self::Unknown,
        }
    }
}

/// Whether a 64- or 32-bit little-endian ELF file has a `PT_INTERP` program header (a dynamic
/// loader); `None` when the headers are not in `bytes`.
fn elf_has_interpreter(b: &[u8]) -> Option<bool> {
    const PT_INTERP: u32 = 3;
    let le = b.get(5) == Some(&1);
    if !le {
        return None;
    }
    let u16_at = |o: usize| b.get(o..o + 2).map(|s| u16::from_le_bytes([s[0], s[1]]) as usize);
    let u32_at = |o: usize| b.get(o..o + 4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]));
    let u64_at = |o: usize| b.get(o..o + 8).map(|s| u64::from_le_bytes(s.try_into().unwrap_or_default()));
    let (phoff, phentsize, phnum) = match b.get(4) {
        Some(2) => (u64_at(0x20)? as usize, u16_at(0x36)?, u16_at(0x38)?),
        Some(1) => (u32_at(0x1c)? as usize, u16_at(0x2a)?, u16_at(0x2c)?),
        _ => return None,
    };
    let mut found = false;
    for i in 0..phnum {
        found |= u32_at(phoff.checked_add(i.checked_mul(phentsize)?)?)? == PT_INTERP;
    }
    Some(found)
}

/// Why calibration could not conclude.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CalibrationError {
    /// No attempt ran to its end.
    #[error("no calibration attempt ran to its end (all timed out or could not start)")]
    NoMeasurement,
}

/// What an arm costs an attempt, so the hang limit of its attempts can be the baseline's
/// stretched by it until the arm has passed attempts of its own.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cost {
    /// Its attempts run this many times as long as the baseline's (pauses, copies contending
    /// for the CPUs, pinning, idle priority; 1 for the baseline).
    Factor(f64),
    /// A CPU quota of this share of one CPU: an attempt's CPU seconds take this long over it.
    Quota(f64),
    /// This many busy competitors per CPU: the busy part of an attempt takes K + 1 times as long.
    Noise(u32),
    /// Known only from the arm's own attempts: how much a delay at every intercepted call or a
    /// tight switch interval slows a program depends on how often it makes such calls and
    /// switches.
    Unknown,
}

impl Cost {
    /// Expected wall seconds under the arm of an attempt that took `seconds` and `cpu` CPU
    /// seconds (one CPU busy throughout when not measured) without it; none for an unknown cost.
    pub fn expected(self, seconds: f64, cpu: Option<f64>) -> Option<f64> {
        let cpu = cpu.filter(|c| c.is_finite() && *c >= 0.0).unwrap_or(seconds);
        let busy = cpu.min(seconds);
        match self {
            Cost::Factor(k) => Some(seconds * k.max(1.0)),
            // As the quota levels are sized (see `arms`): the busy part takes its CPU seconds
            // over the quota, less the last period that is not waited out.
            Cost::Quota(share) => Some((seconds - busy) + busy.max(cpu / share.max(1e-4) - QUOTA_PERIOD)),
            Cost::Noise(k) => Some(seconds + busy * f64::from(k)),
            Cost::Unknown => None,
        }
    }
}

/// One level of a family: the cell it runs and what calibration expects of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Intensity {
    /// The cell (its name carries the level, e.g. `cpu-starved=4`).
    pub cell: CellSpec,
    /// Expected wall seconds of one attempt under it.
    pub expected_seconds: f64,
    /// Attempts that run at once (`copies=N`), 1 for the others.
    pub copies: u32,
    /// CPUs one attempt is expected to keep busy under it, so the plan runs attempts side by
    /// side only while they fit on the machine's CPUs together.
    pub load: f64,
    /// How it shares the machine with other attempts.
    pub sharing: Sharing,
    /// What it costs an attempt, for its hang limit.
    pub cost: Cost,
}

/// How the attempts of a level may share the machine with other attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// Beside any attempts whose loads fit on the CPUs with its own.
    Shared,
    /// Pinned to one CPU: beside unpinned attempts only (two pinned attempts could be given the
    /// same CPU).
    Pinned,
    /// Alone: its condition is the whole machine (noise threads on every CPU, or its own copies
    /// at once), so nothing may run beside it, nor it beside anything.
    Alone,
}

/// A condition family with its levels, weakest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// The family's name (`cpu-starved`, `pause`, `noisy`, `idle`, `copies`, `jitter`, `tight-gil`,
    /// `one-core`, `one-core-native`; `default` for the baseline).
    pub name: &'static str,
    /// Its levels, weakest first.
    pub levels: Vec<Intensity>,
}

/// The arms of a hunt: the baseline family first, then each family that applies.
#[derive(Debug, Clone, PartialEq)]
pub struct Arms {
    /// Families, `default` first.
    pub families: Vec<Family>,
    /// Families left out, with the reason.
    pub skipped: Vec<Skipped>,
}

/// How much a CPU quota should stretch an attempt, per level.
pub const STRETCHES: [f64; 3] = [3.0, 10.0, 30.0];
/// The lowest quota cgroups accept: `cpu.max` and `cpu.cfs_quota_us` refuse a quota under 1 ms per
/// period, and flakehunt's period is 100 ms (the duty cycle clamps its share to 1 % as well).
pub const MIN_QUOTA_PERCENT: f64 = 1.0;
/// The period of flakehunt's CPU quotas, in seconds (see `profile/quota.rs`).
const QUOTA_PERIOD: f64 = 0.1;
/// Noise threads per CPU, per level.
pub const NOISE_PER_CPU: [u32; 3] = [1, 2, 4];
/// Jitter rates, per level (the first is the built-in `jitter`).
pub const JITTER_RATES: [f64; 3] = [crate::profile::JITTER_RATE, 0.25, 1.0];
/// A stretch below this is no condition worth an arm.
const MIN_STRETCH: f64 = 1.5;
/// The shortest pause the stopper delivers faithfully, in microseconds (timer slack and signal
/// delivery are tens of microseconds), and the shortest gap.
const MIN_PAUSE_US: u64 = 100;
const MIN_GAP_US: u64 = 200;

/// The calibration measured from a hunt's first attempts, and the arms it sizes.
pub trait CalibrationArms: Sized {
    /// Calibration from plain attempts. CPU use is the median over the attempts that measured
    /// it; attempts that timed out or could not start tell nothing of the target's length.
    /// In a hunt whose attempts run warm, the warm attempts size the arms and a cold one, the
    /// cold start.
    fn measure(measurements: &[Measurement], runtime: RuntimeKind, cpus: usize) -> Result<Self, CalibrationError>;

    /// The arms for this target: every family that applies, each with its levels; the others
    /// with the reason they were left out.
    fn arms(&self) -> Arms;
}

impl CalibrationArms for Calibration {
    fn measure(measurements: &[Measurement], runtime: RuntimeKind, cpus: usize) -> Result<Self, CalibrationError> {
        let usable = |m: &&Measurement| {
            !matches!(m.outcome, Outcome::Timeout | Outcome::Slow | Outcome::SpawnError) && m.seconds.is_finite()
        };
        let warm: Vec<&Measurement> = measurements.iter().filter(usable).filter(|m| !m.cold).collect();
        let cold: Vec<&Measurement> = measurements.iter().filter(usable).filter(|m| m.cold).collect();
        let ran = if warm.is_empty() { cold.clone() } else { warm.clone() };
        if ran.is_empty() {
            return Err(CalibrationError::NoMeasurement);
        }
        let median_seconds = median(ran.iter().map(|m| m.seconds).collect()).max(1e-4);
        let shares: Vec<f64> = ran
            .iter()
            .filter_map(|m| m.cpu_seconds.map(|c| c / m.seconds.max(1e-6)))
            .filter(|s| s.is_finite() && *s >= 0.0)
            .collect();
        let cpu_per_wall = (!shares.is_empty()).then(|| median(shares));
        // The cold start over the median warm attempt, from the cold attempt that passed
        // (the slowest, if more did: a limit errs long).
        let cold_start = (!warm.is_empty())
            .then(|| cold.iter().filter(|m| m.outcome == Outcome::Pass).max_by(|a, b| a.seconds.total_cmp(&b.seconds)))
            .flatten()
            .map(|c| {
                let warm_cpu: Vec<f64> = warm.iter().filter_map(|m| m.cpu_seconds).collect();
                ColdStart {
                    seconds: (c.seconds - median_seconds).max(0.0),
                    cpu_seconds: c
                        .cpu_seconds
                        .zip((!warm_cpu.is_empty()).then(|| median(warm_cpu)))
                        .map(|(cold, warm)| (cold - warm).max(0.0)),
                }
            });
        Ok(Self {
            median_seconds,
            cpu_per_wall,
            threads: ran.iter().filter_map(|m| m.threads).max(),
            runtime,
            cpus: cpus.max(1),
            attempts: measurements.len() as u64,
            failures: measurements.iter().filter(|m| m.outcome.is_failure()).count() as u64,
            cold_start,
        })
    }

    fn arms(&self) -> Arms {
        let w = self.median_seconds;
        // The CPUs an attempt keeps busy: its measured CPU seconds per wall second (one CPU
        // throughout when unmeasured), spread over the longer wall time of a stretched level.
        let c = self.cpu_per_wall.unwrap_or(1.0);
        let cpus = self.cpus as f64;
        let busy_over = |seconds: f64| (c * w / seconds.max(1e-6)).min(cpus);
        let mut families = vec![Family {
            name: "default",
            levels: vec![level(Profile::default_profile(), w, 1, w).sharing(busy_over(w), Sharing::Shared)],
        }];
        let mut skipped = Vec::new();
        let mut skip = |family: &str, reason: String| skipped.push(Skipped { family: family.into(), reason });

        // CPU quota: stretch the attempt xK. The target is busy b = min(c, 1) w of its w seconds
        // and uses C = c w CPU-seconds. A quota q of one CPU per period P (100 ms) lets q P run
        // at full speed in each period and stops the group for the rest, so the busy part takes
        // about max(b, C / q - P): the last period is not waited out, and a burst under q P is
        // never slowed (15 % does nothing to 10 ms of work). Solving (w - b) + C / q - P = K w
        // gives q = C / (K w - (w - b) + P): 1/K for a long CPU-bound target, less for one that
        // mostly waits, more for one shorter than a period. Unmeasured CPU use is taken as one
        // CPU busy throughout (the quota is then the mildest that could stretch it that much).
        let (cpu, busy) = (c * w, c.min(1.0) * w);
        if c < 1e-3 {
            skip("cpu-starved", format!("the target used {c:.4} CPU-seconds per second: a quota cannot slow it"));
        } else {
            let mut levels: Vec<Intensity> = Vec::new();
            for k in STRETCHES {
                let wanted = 100.0 * cpu / (k * w - (w - busy) + QUOTA_PERIOD);
                let pct = round_sig(wanted.max(MIN_QUOTA_PERCENT), 2);
                // What the rounded, bounded quota really stretches by.
                let stretch = ((w - busy) + busy.max(cpu / (pct / 100.0) - QUOTA_PERIOD)) / w;
                let duplicate =
                    levels.iter().any(|l| l.cell.profile.as_ref().and_then(|p| p.knobs.cpu_quota) == Some(pct));
                if stretch >= MIN_STRETCH && !duplicate {
                    let load = busy_over(w * stretch).min(pct / 100.0);
                    levels.push(
                        level(Profile::starved(pct), w * stretch, 1, w)
                            .sharing(load, Sharing::Shared)
                            .cost(Cost::Quota(pct / 100.0)),
                    );
                }
            }
            if levels.is_empty() {
                skip(
                    "cpu-starved",
                    format!("the lowest quota ({MIN_QUOTA_PERCENT} %) stretches the target less than x{MIN_STRETCH}"),
                );
            } else {
                families.push(Family { name: "cpu-starved", levels });
            }
        }

        // Pauses scaled to the attempt: short pauses several times per attempt, pauses half its
        // length, then pauses longer than the attempt itself (a deadline inside it expires while
        // it is stopped). Gaps run while the target runs, so it sees about w / (gap / 2) pauses
        // of 3/4 LEN on average: a stretch of 1 + 1.5 LEN / GAP.
        let mut pauses: Vec<Intensity> = Vec::new();
        for (len_frac, gap_frac) in [(0.1, 0.5), (0.5, 0.5), (2.0, 1.0)] {
            let len = nice_us(w * len_frac * 1e6).max(MIN_PAUSE_US);
            let gap = nice_us(w * gap_frac * 1e6).max(MIN_GAP_US);
            let profile = Profile::paused(len, gap);
            if !pauses.iter().any(|l| l.cell.name == profile.name) {
                let seconds = w * (1.0 + 1.5 * len as f64 / gap as f64);
                pauses.push(level(profile, seconds, 1, w).sharing(busy_over(seconds), Sharing::Shared));
            }
        }
        families.push(Family { name: "pause", levels: pauses });

        // Noise: K busy threads per CPU; a target busy c of the time gets 1 / (K + 1) of a CPU
        // while busy.
        let noise = NOISE_PER_CPU
            .iter()
            .map(|&k| {
                level(Profile::noisy(k, self.cpus), w * (1.0 + c.min(1.0) * f64::from(k)), 1, w)
                    .sharing(cpus, Sharing::Alone)
                    .cost(Cost::Noise(k))
            })
            .collect();
        families.push(Family { name: "noisy", levels: noise });

        // Idle priority: the target's tree under SCHED_IDLE beside a busy competitor per two
        // CPUs (sweep's `idle`), so any runnable normal task, the competitor or a neighbour's
        // build, takes its CPU first. How much that stretches it depends on what else wants the
        // CPUs, which no calibration knows: its hang limit assumes the strongest quota's stretch
        // until its own attempts have passed, so a starved attempt is not taken for a hang.
        if c < 1e-3 {
            skip("idle", format!("the target used {c:.4} CPU-seconds per second: a priority cannot slow it"));
        } else if let Some(idle) = Profile::builtin("idle") {
            let stretch = STRETCHES[STRETCHES.len() - 1];
            let level = level(idle, w * stretch, 1, w).sharing(cpus, Sharing::Alone);
            families.push(Family { name: "idle", levels: vec![level] });
        }

        // Concurrent copies: as many as CPUs, then twice that; each copy is an attempt, so the
        // arm runs N attempts per attempt length (slower each when they contend for the CPUs).
        let mut copies: Vec<Intensity> = Vec::new();
        for n in [self.cpus, 2 * self.cpus] {
            let n = n.clamp(2, crate::profile::MAX_COPIES as usize) as u32;
            if !copies.iter().any(|l| l.copies == n) {
                let contention = (f64::from(n) * c.min(1.0) / self.cpus as f64).max(1.0);
                copies.push(level(Profile::copies(n), w * contention, n, w).sharing(cpus, Sharing::Alone));
            }
        }
        families.push(Family { name: "copies", levels: copies });

        // Jitter delays a share of calls by microseconds: the attempt hardly stretches. Whether
        // the library loads at all is known only from the attempts (a static binary behind a
        // script): the bandit retires an arm whose attempts report it inert.
        match self.runtime {
            RuntimeKind::Static => skip("jitter", "statically linked: the jitter library cannot be preloaded".into()),
            RuntimeKind::Go => {
                skip("jitter", "a Go program: its runtime locks with futexes, not the C library's calls".into())
            }
            _ => families.push(Family {
                name: "jitter",
                levels: JITTER_RATES
                    .iter()
                    .map(|&r| {
                        level(Profile::jittered(r), w * (1.0 + r * 0.2), 1, w)
                            .sharing(busy_over(w), Sharing::Shared)
                            .cost(Cost::Unknown)
                    })
                    .collect(),
            }),
        }

        if self.runtime == RuntimeKind::Python {
            let gil = Profile::builtin("tight-gil").unwrap_or_else(Profile::default_profile);
            let tight = level(gil, w * 1.2, 1, w).sharing(busy_over(w), Sharing::Shared).cost(Cost::Unknown);
            families.push(Family { name: "tight-gil", levels: vec![tight] });
        } else {
            skip("tight-gil", "not a Python target".into());
        }

        // Pinning to one CPU: a program busy on c > 1 CPUs runs about c times longer.
        let single_threaded = self.threads == Some(1) && c <= 1.05;
        for name in ["one-core", "one-core-native"] {
            if self.cpus < 2 {
                skip(name, format!("only {} CPU available: pinning to one changes nothing", self.cpus));
            } else if single_threaded {
                skip(name, "single-threaded: pinning it to one CPU changes nothing".into());
            } else if let Some(p) = Profile::builtin(name) {
                let stretch = c.max(1.0);
                families.push(Family { name, levels: vec![level(p, w * stretch, 1, w).sharing(1.0, Sharing::Pinned)] });
            }
        }
        Arms { families, skipped }
    }
}

/// A level whose attempts are expected to run `expected_seconds` against the baseline's `w`:
/// its cost is that factor until said otherwise.
fn level(profile: Profile, expected_seconds: f64, copies: u32, w: f64) -> Intensity {
    Intensity {
        cell: CellSpec::for_profile(profile),
        expected_seconds,
        copies,
        load: 1.0,
        sharing: Sharing::Shared,
        cost: Cost::Factor(expected_seconds / w.max(1e-9)),
    }
}

impl Intensity {
    fn sharing(self, load: f64, sharing: Sharing) -> Self {
        Self { load, sharing, ..self }
    }

    fn cost(self, cost: Cost) -> Self {
        Self { cost, ..self }
    }
}

/// The median of `v` (not empty).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// `x` rounded to `digits` significant digits.
fn round_sig(x: f64, digits: i32) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return x;
    }
    let scale = 10f64.powi(digits - 1 - x.log10().floor() as i32);
    (x * scale).round() / scale
}

/// Microseconds rounded to 1, 2 or 5 times a power of ten, so level names read well
/// (`pause=2ms/10ms`).
fn nice_us(us: f64) -> u64 {
    if us < 1.0 {
        return 1;
    }
    let power = 10f64.powi(us.log10().floor() as i32);
    let m = us / power;
    let nice = if m < 1.5 {
        1.0
    } else if m < 3.5 {
        2.0
    } else if m < 7.5 {
        5.0
    } else {
        10.0
    };
    (nice * power).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(seconds: f64, cpu: Option<f64>) -> Measurement {
        Measurement { seconds, cpu_seconds: cpu, threads: None, outcome: Outcome::Pass, cold: false }
    }

    fn names(arms: &Arms, family: &str) -> Vec<String> {
        arms.families
            .iter()
            .find(|f| f.name == family)
            .map_or(vec![], |f| f.levels.iter().map(|l| l.cell.name.clone()).collect())
    }

    #[test]
    fn a_cpu_bound_20ms_test_gets_quotas_and_sub_millisecond_pauses() {
        let cal = Calibration::measure(
            &[m(0.02, Some(0.02)), m(0.021, Some(0.021)), m(0.019, Some(0.019))],
            RuntimeKind::Native,
            2,
        )
        .unwrap();
        assert_eq!(cal.median_seconds, 0.02);
        assert_eq!(cal.cpu_per_wall, Some(1.0));
        let arms = cal.arms();
        assert_eq!(arms.families[0].name, "default");
        // 20 ms of CPU against quotas that stretch it x3, x10, x30: a burst of 20 ms runs at full
        // speed under any quota above 20 %, so the quotas are lower than 100 / K would say.
        assert_eq!(names(&arms, "cpu-starved"), ["cpu-starved=13", "cpu-starved=6.7", "cpu-starved=2.9"]);
        assert_eq!(names(&arms, "pause"), ["pause=2ms/10ms", "pause=10ms/10ms", "pause=50ms/20ms"]);
        assert_eq!(names(&arms, "noisy"), ["noisy=x1", "noisy=x2", "noisy=x4"]);
        assert_eq!(names(&arms, "copies"), ["copies=2", "copies=4"]);
        assert_eq!(names(&arms, "jitter"), ["jitter", "jitter=0.25", "jitter=1"]);
        assert_eq!(names(&arms, "one-core"), ["one-core"]);
        assert_eq!(names(&arms, "idle"), ["idle"]);
        // What may run beside what: a plain attempt keeps one CPU busy; a quota of 2.9 % keeps
        // 2.9 % of one busy; noise, idle and copies take the machine; one-core is pinned.
        let of = |name: &str| arms.families.iter().flat_map(|f| &f.levels).find(|l| l.cell.name == name).unwrap();
        assert_eq!((of("default").load, of("default").sharing), (1.0, Sharing::Shared));
        assert!((of("cpu-starved=2.9").load - 0.029).abs() < 1e-9);
        for name in ["noisy=x1", "idle", "copies=2"] {
            assert_eq!(of(name).sharing, Sharing::Alone, "{name}");
        }
        assert_eq!(of("one-core").sharing, Sharing::Pinned);
        assert_eq!(arms.skipped, vec![Skipped { family: "tight-gil".into(), reason: "not a Python target".into() }]);
        // Every level's name is one `sweep --profiles` accepts, as the same profile.
        for family in &arms.families {
            for l in &family.levels {
                let p = l.cell.profile.clone().unwrap();
                if family.name != "noisy" {
                    assert_eq!(Profile::builtin(&l.cell.name), Some(p), "{}", l.cell.name);
                }
            }
        }
        let x30 = &arms.families[1].levels[2];
        assert!((x30.expected_seconds / 0.02 - 30.0).abs() < 1.0, "{}", x30.expected_seconds);
        // A long CPU-bound target gets about 100 / K percent.
        let long = Calibration::measure(&[m(20.0, Some(20.0))], RuntimeKind::Native, 2).unwrap().arms();
        assert_eq!(names(&long, "cpu-starved"), ["cpu-starved=33", "cpu-starved=10", "cpu-starved=3.3"]);
        assert_eq!(cal.unlock_after(), 10);
    }

    #[test]
    fn a_mostly_waiting_target_gets_lower_quotas_bounded_at_one_percent() {
        // 0.1 CPU-seconds per second for 1 s: x3 needs 0.1 / (3 - 0.9 + 0.1) = 4.5 %, x10 1.1 %,
        // and x30 0.34 %, bounded to the 1 % cgroups accept (which stretches it x10.8, not x30).
        let cal = Calibration::measure(&[m(1.0, Some(0.1))], RuntimeKind::Unknown, 4).unwrap();
        let arms = cal.arms();
        assert_eq!(names(&arms, "cpu-starved"), ["cpu-starved=4.5", "cpu-starved=1.1", "cpu-starved=1"]);
        assert_eq!(names(&arms, "copies"), ["copies=4", "copies=8"]);
        assert_eq!(cal.unlock_after(), 3);
        // A sleeper: no quota stretches it.
        let idle = Calibration::measure(&[m(1.0, Some(0.0001))], RuntimeKind::Unknown, 2).unwrap().arms();
        assert!(idle.families.iter().all(|f| f.name != "cpu-starved"));
        assert!(idle.skipped.iter().any(|s| s.family == "cpu-starved" && s.reason.contains("cannot slow it")));
    }

    #[test]
    fn families_that_do_not_apply_are_skipped_with_the_reason() {
        let one_thread = Measurement { threads: Some(1), ..m(0.5, Some(0.5)) };
        let arms = Calibration::measure(&[one_thread], RuntimeKind::Static, 2).unwrap().arms();
        let skipped: Vec<&str> = arms.skipped.iter().map(|s| s.family.as_str()).collect();
        assert_eq!(skipped, ["jitter", "tight-gil", "one-core", "one-core-native"]);
        assert!(arms.skipped[0].reason.contains("statically linked"));
        let py = Calibration::measure(&[m(0.3, None)], RuntimeKind::Python, 1).unwrap().arms();
        assert_eq!(names(&py, "tight-gil"), ["tight-gil"]);
        assert!(py.skipped.iter().any(|s| s.family == "one-core" && s.reason.contains("only 1 CPU")));
        // On one CPU, copies are still two at once.
        assert_eq!(names(&py, "copies"), ["copies=2"]);
        let go = Calibration::measure(&[m(0.3, None)], RuntimeKind::Go, 2).unwrap().arms();
        assert!(go.skipped.iter().any(|s| s.family == "jitter" && s.reason.contains("Go")));
    }

    #[test]
    fn a_cold_attempt_of_a_warm_hunt_measures_the_cold_start_not_the_arms() {
        let warm = m(0.02, Some(0.02));
        let cold = Measurement { cold: true, ..m(1.7, Some(1.52)) };
        let cal = Calibration::measure(&[warm, warm, warm, warm, cold], RuntimeKind::Python, 2).unwrap();
        assert_eq!(cal.median_seconds, 0.02);
        let cs = cal.cold_start.unwrap();
        assert!((cs.seconds - 1.68).abs() < 1e-9 && (cs.cpu_seconds.unwrap() - 1.5).abs() < 1e-9, "{cs:?}");
        // A cold hunt has nothing to compare: every attempt is cold, none measures a cold start.
        let all_cold = Calibration::measure(&[cold, cold], RuntimeKind::Python, 2).unwrap();
        assert_eq!((all_cold.median_seconds, all_cold.cold_start), (1.7, None));
        // Nor does a cold attempt that failed.
        let failed = Measurement { outcome: Outcome::Fail, ..cold };
        assert_eq!(Calibration::measure(&[warm, warm, failed], RuntimeKind::Python, 2).unwrap().cold_start, None);
    }

    #[test]
    fn costs_stretch_an_attempt_as_the_levels_are_sized() {
        // A quota: CPU seconds over the share, less the last period; the waiting part as is.
        let q = Cost::Quota(0.1).expected(1.0, Some(0.5)).unwrap();
        assert!((q - (0.5 + 5.0 - QUOTA_PERIOD)).abs() < 1e-9, "{q}");
        // Unmeasured CPU: busy throughout.
        assert!((Cost::Quota(0.5).expected(1.0, None).unwrap() - 1.9).abs() < 1e-9);
        assert_eq!(Cost::Noise(2).expected(1.0, Some(0.25)), Some(1.5));
        assert_eq!(Cost::Factor(3.0).expected(2.0, None), Some(6.0));
        assert_eq!(Cost::Factor(0.5).expected(2.0, None), Some(2.0));
        assert_eq!(Cost::Unknown.expected(1.0, Some(1.0)), None);
        // The levels carry theirs: jitter and the switch interval are known only from their attempts.
        let arms = Calibration::measure(&[m(0.1, Some(0.1))], RuntimeKind::Python, 2).unwrap().arms();
        for family in &arms.families {
            for l in &family.levels {
                let unknown = matches!(family.name, "jitter" | "tight-gil");
                assert_eq!(l.cost == Cost::Unknown, unknown, "{}", l.cell.name);
            }
        }
    }

    #[test]
    fn timeouts_and_spawn_errors_do_not_measure_the_length() {
        let hang = Measurement { outcome: Outcome::Timeout, ..m(600.0, None) };
        let cal = Calibration::measure(&[hang, m(0.2, None), m(0.4, None)], RuntimeKind::Unknown, 2).unwrap();
        assert!((cal.median_seconds - 0.3).abs() < 1e-9);
        assert_eq!((cal.attempts, cal.failures), (3, 1));
        assert_eq!(cal.cpu_per_wall, None);
        assert_eq!(Calibration::measure(&[hang], RuntimeKind::Unknown, 2), Err(CalibrationError::NoMeasurement));
    }

    #[test]
    fn measurements_come_from_attempt_records() {
        let mut a: Attempt = serde_json::from_value(serde_json::json!({
            "id": 0, "cell": "default", "iteration": 1, "started_at": "", "seconds": 2.0,
            "outcome": "pass", "exit_code": 0, "signal": null, "stdout_tail": "", "stderr_tail": "",
        }))
        .unwrap();
        assert_eq!(Measurement::from_attempt(&a), Measurement { cold: true, ..m(2.0, None) });
        a.mode = crate::record::Mode::Warm;
        assert_eq!(Measurement::from_attempt(&a), m(2.0, None));
        a.effect.cpu_share = Some(0.25);
        assert_eq!(Measurement::from_attempt(&a).cpu_seconds, Some(0.5));
    }

    #[test]
    fn executables_are_classified_from_their_headers() {
        assert_eq!(RuntimeKind::of_executable(b"#!/usr/bin/env python3\nprint(1)\n"), RuntimeKind::Python);
        assert_eq!(RuntimeKind::of_executable(b"#!/bin/sh\n"), RuntimeKind::Unknown);
        assert_eq!(RuntimeKind::of_executable(b"not a program"), RuntimeKind::Unknown);
        // A minimal 64-bit little-endian ELF header with two program headers at offset 64.
        let elf = |types: [u32; 2], extra: &[u8]| {
            let mut b = vec![0u8; 64 + 2 * 56];
            b[..4].copy_from_slice(b"\x7fELF");
            b[4] = 2;
            b[5] = 1;
            b[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
            b[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
            b[0x38..0x3a].copy_from_slice(&2u16.to_le_bytes());
            for (i, t) in types.iter().enumerate() {
                b[64 + i * 56..68 + i * 56].copy_from_slice(&t.to_le_bytes());
            }
            b.extend_from_slice(extra);
            b
        };
        assert_eq!(RuntimeKind::of_executable(&elf([6, 3], b"")), RuntimeKind::Native);
        assert_eq!(RuntimeKind::of_executable(&elf([6, 1], b"")), RuntimeKind::Static);
        assert_eq!(RuntimeKind::of_executable(&elf([6, 1], b"..\xff Go buildinf:..")), RuntimeKind::Go);
        // The real thing, where the machine has it.
        if let Ok(sh) = std::fs::read("/bin/sh") {
            assert!(matches!(RuntimeKind::of_executable(&sh), RuntimeKind::Native | RuntimeKind::Static));
        }
    }

    #[test]
    fn rounding_keeps_names_readable() {
        assert_eq!(nice_us(2000.0), 2000);
        assert_eq!(nice_us(2600.0), 2000);
        assert_eq!(nice_us(4000.0), 5000);
        assert_eq!(nice_us(8000.0), 10000);
        assert_eq!(round_sig(33.333, 2), 33.0);
        assert_eq!(round_sig(3.3333, 2), 3.3);
    }
}
