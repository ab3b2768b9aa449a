//! Scheduling profiles: named compositions of mechanisms (CPU affinity, runtime thread-count
//! hints, CPU quota, noise, idle policy, chaos pauses, Python switch interval, environment,
//! resource limits) applied to an attempt's whole process tree, each measuring its own effect so
//! a profile that does nothing is reported inert instead of silently counted. Main type:
//! [`Profile`].

mod gil;
mod jitter;
mod knobs;
mod noise;
mod quota;
mod stopper;

pub use gil::GilHook;
pub use jitter::{JitterLib, JitterReport};
pub use knobs::{Knobs, Pause, Policy, ValidateKnobs, MAX_COPIES, MIN_PAUSE_MS};
pub use noise::Noise;
pub use quota::{QuotaBackend, QuotaGroup};
pub use stopper::{PauseSchedule, Stopper, Stops};

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use crate::exec::{Launch, Limit};
use crate::record::Effect;
pub use crate::schema::profile::Profile;

/// Share of intercepted calls the built-in `jitter` profile delays.
pub const JITTER_RATE: f64 = 0.05;

/// Default CPU share of `cpu-starved`, in percent of one CPU.
pub const STARVED_PERCENT: f64 = 15.0;

/// The built-in profiles and their levelled variants (`cpu-starved=PCT`, `noisy=xK`...).
pub trait BuiltinProfiles {
    /// Built-in profiles, in the order they are listed and run.
    fn builtins() -> Vec<Profile>;

    /// `cpu-starved` at `percent` of one CPU (`cpu-starved=PCT` on the command line).
    fn starved(percent: f64) -> Self;

    /// `noisy` at `per_cpu` busy competitors per CPU flakehunt may use (`noisy=xK`); `cpus` is
    /// that CPU count, so the profile records the threads it starts.
    fn noisy(per_cpu: u32, cpus: usize) -> Self;

    /// `pause` scaled to a target (`pause=LEN/GAP`): pauses of LEN/2 to LEN after gaps of 0 to
    /// GAP, both in whole microseconds (the stopper's resolution), LEN at least
    /// [`MIN_PAUSE_MS`].
    fn paused(len_us: u64, gap_us: u64) -> Self;

    /// `jitter` delaying `rate` of intercepted calls (`jitter=RATE`; the built-in rate is named
    /// plain `jitter`).
    fn jittered(rate: f64) -> Self;

    /// `n` attempts of the cell at once (`copies=N`): concurrent copies of the target, the
    /// condition plain parallel re-running creates without saying so.
    fn copies(n: u32) -> Self;

    /// Looks up a built-in by name, including the levelled names `cpu-starved=PCT`,
    /// `noisy=xK`, `pause=LEN/GAP` (durations with `us`, `ms` or `s`), `jitter=RATE` and
    /// `copies=N`. `None` for an unknown name or a level out of range.
    fn builtin(name: &str) -> Option<Profile>;
}

impl BuiltinProfiles for Profile {
    fn builtins() -> Vec<Profile> {
        let p = |name: &str, summary: &str, knobs: Knobs| Profile { name: name.into(), summary: summary.into(), knobs };
        vec![
            Self::default_profile(),
            p(
                "one-core",
                "pinned to one CPU; runtimes (Go, OpenMP, rayon, tokio, JVM) are told the unpinned CPU count, so a multi-threaded program stays multi-threaded and is preempted instead",
                Knobs { cpus: Some(1), runtime_hints: Some(true), ..Knobs::default() },
            ),
            p(
                "one-core-native",
                "pinned to one CPU; runtimes size their thread pools from it (Go, OpenMP, tokio, rayon run single-threaded)",
                Knobs { cpus: Some(1), runtime_hints: Some(false), ..Knobs::default() },
            ),
            Self::starved(STARVED_PERCENT),
            p(
                "noisy",
                "busy competitor threads on every CPU the attempt may use, for its lifetime",
                Knobs { noise_threads: Some(0), ..Knobs::default() },
            ),
            p(
                "idle",
                "SCHED_IDLE (nice 19 where refused) for the process tree, with one busy competitor per two CPUs",
                Knobs { policy: Some(Policy::Idle), noise_threads: Some(u32::MAX), ..Knobs::default() },
            ),
            p(
                "pause",
                "chaos: seeded random SIGSTOP/SIGCONT pauses of 1-50 ms every 0-100 ms",
                Knobs { pause: Some(Pause::default()), ..Knobs::default() },
            ),
            p(
                "tight-gil",
                "Python: sys.setswitchinterval(1e-6) through a generated sitecustomize, no test edits",
                Knobs { python_switch_interval: Some(1e-6), ..Knobs::default() },
            ),
            p(
                "jitter",
                "native code: a preloaded library yields or sleeps 1-20 us around 5 % of mutex, condvar, yield, read/write and nanosleep calls (seeded); inert for static binaries",
                Knobs { jitter: Some(JITTER_RATE), ..Knobs::default() },
            ),
        ]
    }

    fn starved(percent: f64) -> Self {
        let name = if percent == STARVED_PERCENT { "cpu-starved".to_owned() } else { format!("cpu-starved={percent}") };
        Profile {
            name,
            summary: format!(
                "CPU quota of {percent} % of one CPU (cgroup v2 or v1; else a SIGSTOP/SIGCONT duty cycle)"
            ),
            knobs: Knobs { cpu_quota: Some(percent), ..Knobs::default() },
        }
    }

    fn noisy(per_cpu: u32, cpus: usize) -> Self {
        let threads = (per_cpu as usize * cpus.max(1)).min(u32::MAX as usize - 1) as u32;
        Profile {
            name: format!("noisy=x{per_cpu}"),
            summary: format!(
                "{per_cpu} busy competitor thread(s) per CPU ({threads} in all), for the attempt's lifetime"
            ),
            knobs: Knobs { noise_threads: Some(threads), ..Knobs::default() },
        }
    }

    fn paused(len_us: u64, gap_us: u64) -> Self {
        let min_us = (len_us / 2).max((MIN_PAUSE_MS * 1000.0) as u64);
        let len_us = len_us.max(min_us);
        let (min, len, gap) = (min_us as f64 / 1000.0, len_us as f64 / 1000.0, gap_us as f64 / 1000.0);
        Profile {
            name: format!("pause={}/{}", format_us(len_us), format_us(gap_us)),
            summary: format!("chaos: seeded random SIGSTOP/SIGCONT pauses of {min}-{len} ms every 0-{gap} ms"),
            knobs: Knobs { pause: Some(Pause { min_ms: min, max_ms: len, every_max_ms: gap }), ..Knobs::default() },
        }
    }

    fn jittered(rate: f64) -> Self {
        let name = if rate == JITTER_RATE { "jitter".to_owned() } else { format!("jitter={rate}") };
        Profile {
            name,
            summary: format!(
                "native code: a preloaded library yields or sleeps 1-20 us around {} % of mutex, condvar, yield, read/write and nanosleep calls (seeded); inert for static binaries",
                rate * 100.0
            ),
            knobs: Knobs { jitter: Some(rate), ..Knobs::default() },
        }
    }

    fn copies(n: u32) -> Self {
        Profile {
            name: format!("copies={n}"),
            summary: format!("{n} copies of the target run at once, each its own attempt"),
            knobs: Knobs { copies: Some(n), ..Knobs::default() },
        }
    }

    fn builtin(name: &str) -> Option<Profile> {
        if let Some((family, level)) = name.split_once('=') {
            return match family {
                "cpu-starved" => {
                    let pct: f64 = level.trim_end_matches('%').parse().ok()?;
                    (pct > 0.0 && pct <= 100.0).then(|| Self::starved(pct))
                }
                "noisy" => {
                    let k: u32 = level.strip_prefix('x')?.parse().ok()?;
                    (1..=64).contains(&k).then(|| Self::noisy(k, allowed_cpus().len()))
                }
                "pause" => {
                    let (len, gap) = level.split_once('/')?;
                    let (len, gap) = (parse_us(len)?, parse_us(gap)?);
                    let valid = len >= (MIN_PAUSE_MS * 1000.0) as u64 && len <= 3_600_000_000 && gap <= 3_600_000_000;
                    valid.then(|| Self::paused(len, gap))
                }
                "jitter" => {
                    let rate = match level.strip_suffix('%') {
                        Some(pct) => pct.parse::<f64>().ok()? / 100.0,
                        None => level.parse().ok()?,
                    };
                    (rate > 0.0 && rate <= 1.0).then(|| Self::jittered(rate))
                }
                "copies" => {
                    let n: u32 = level.parse().ok()?;
                    (2..=MAX_COPIES).contains(&n).then(|| Self::copies(n))
                }
                _ => None,
            };
        }
        Self::builtins().into_iter().find(|p| p.name == name)
    }
}

/// A profile applied to an attempt, and why it cannot be on this machine.
pub trait ApplyProfile {
    /// Why this profile cannot act on this machine at all, if it cannot (checked before a hunt).
    fn unapplicable(&self, env: &ProfileEnv) -> Option<String>;

    /// Applies the profile's before-exec parts to `launch` for attempt `attempt` of `worker`.
    fn prepare(&self, launch: &mut Launch, env: &ProfileEnv, worker: usize, attempt: u64) -> Prepared;
}

impl ApplyProfile for Profile {
    fn unapplicable(&self, env: &ProfileEnv) -> Option<String> {
        let k = &self.knobs;
        if let Some(n) = k.cpus {
            if env.cpus.len() <= n as usize {
                return Some(format!(
                    "only {} CPU(s) available to flakehunt: pinning to {n} changes nothing",
                    env.cpus.len()
                ));
            }
        }
        if k.python_switch_interval.is_some() && env.gil().is_none() {
            return Some("cannot create the sitecustomize directory".into());
        }
        if k.jitter.is_some() && env.jitter().is_none() {
            return Some(format!("cannot build the jitter library: {}", env.jitter_error().unwrap_or_default()));
        }
        if let Some(n) = k.copies.filter(|&n| n > 1 && !env.copies_scheduled) {
            return Some(format!(
                "copies={n} needs {n} attempts of the cell at once, which only an adaptive hunt or a sweep schedules; here each attempt ran alone"
            ));
        }
        None
    }

    fn prepare(&self, launch: &mut Launch, env: &ProfileEnv, worker: usize, attempt: u64) -> Prepared {
        let mut prepared = Prepared { attempt, ..Prepared::default() };
        let k = &self.knobs;
        if let Some(reason) = self.unapplicable(env) {
            prepared.inert = Some(reason);
        }
        if let Some(n) = k.cpus.filter(|_| prepared.inert.is_none()) {
            let n = n as usize;
            // Spread parallel workers over different CPUs.
            let start = (worker * n) % env.cpus.len();
            let chosen: Vec<usize> = (0..n).map(|i| env.cpus[(start + i) % env.cpus.len()]).collect();
            launch.setup.cpus = Some(chosen.clone());
            prepared.pinned = chosen;
            prepared.read_cpus = true;
            if k.runtime_hints == Some(true) {
                for (name, value) in runtime_hints(env.cpus.len(), launch) {
                    prepared.hints.insert(name.clone(), value.clone());
                    launch.env.push((name.into(), Some(value.into())));
                }
            }
        }
        for (name, value) in &k.env {
            prepared.hints.insert(name.clone(), value.clone());
            launch.env.push((name.into(), Some(value.into())));
        }
        for (name, value) in &k.rlimits {
            launch.setup.rlimits.extend(Limit::named(name, Some(*value)));
        }
        if let Some(nice) = k.nice {
            launch.setup.nice = Some(nice);
            prepared.read_policy = true;
        }
        if k.policy == Some(Policy::Idle) {
            launch.setup.sched_idle = true;
            prepared.read_policy = true;
        }
        if let Some(pct) = k.cpu_quota {
            match env.quota() {
                QuotaBackend::Unavailable(_) => prepared.duty_cycle = Some(pct / 100.0),
                backend => match QuotaGroup::create(backend, &format!("flakehunt-{}-{attempt}", env.run_id), pct) {
                    Ok(group) => {
                        launch.setup.cgroup_procs.extend(group.procs().iter().cloned());
                        prepared.quota = Some(group);
                    }
                    Err(_) => prepared.duty_cycle = Some(pct / 100.0),
                },
            }
            prepared.mechanism = Some(match (&prepared.quota, env.quota()) {
                (Some(_), backend) => backend.mechanism().to_owned(),
                (None, _) => "duty-cycle".to_owned(),
            });
        }
        if let Some(n) = k.noise_threads {
            // 0 means one per CPU the attempt may use; u32::MAX one per two CPUs.
            let cpus = if prepared.pinned.is_empty() { env.cpus.clone() } else { prepared.pinned.clone() };
            prepared.noise = Some((
                match n {
                    0 => cpus.len() as u32,
                    u32::MAX => (cpus.len() as u32 / 2).max(1),
                    n => n,
                },
                cpus,
            ));
        }
        if let Some(p) = k.pause {
            prepared.pause = Some(PauseSchedule::Chaos(p, crate::rng::Rng::stream(env.seed, attempt).next_u64()));
        }
        if let Some(interval) = k.python_switch_interval {
            if let Some(hook) = env.gil() {
                // Chains the launch's own PYTHONPATH (a suite run's plugins), else the user's.
                let given = launch.env.iter().rev().find(|(k, _)| k == "PYTHONPATH").map(|(_, v)| v.clone());
                launch.env.push(("PYTHONPATH".into(), Some(hook.pythonpath(given))));
                launch.env.push(("FLAKEHUNT_SWITCH_INTERVAL".into(), Some(interval.to_string().into())));
                launch.env.push(("FLAKEHUNT_SWITCH_REPORT".into(), Some(hook.report_prefix(attempt).into_os_string())));
                prepared.gil = Some(interval);
                prepared.python = env.python_target;
            }
        }
        // Only a profile with jitter may build the library: `env.jitter()` compiles it.
        if let Some((rate, lib)) = k.jitter.and_then(|rate| Some((rate, env.jitter()?))) {
            let existing = launch
                .env
                .iter()
                .rev()
                .find(|(n, _)| n == "LD_PRELOAD")
                .map(|(_, v)| v.as_ref().map(|v| v.to_string_lossy().into_owned()))
                .unwrap_or_else(|| std::env::var("LD_PRELOAD").ok());
            let seed = crate::rng::Rng::stream(env.seed ^ 0x6a17, attempt).next_u64();
            launch.env.push(("LD_PRELOAD".into(), Some(lib.ld_preload(existing.as_deref()).into())));
            launch.env.push(("FLAKEHUNT_JITTER_RATE".into(), Some(rate.to_string().into())));
            if let Some([min, max]) = k.jitter_sleep_us {
                launch.env.push(("FLAKEHUNT_JITTER_SLEEP_US".into(), Some(format!("{min}-{max}").into())));
            }
            launch.env.push(("FLAKEHUNT_JITTER_SEED".into(), Some(seed.to_string().into())));
            launch.env.push(("FLAKEHUNT_JITTER_REPORT".into(), Some(lib.report_path(attempt).into_os_string())));
            prepared.jitter = true;
        }
        prepared
    }
}

/// What a hunt's profiles share: detected once, cleaned up with the hunt.
#[derive(Debug)]
pub struct ProfileEnv {
    /// CPUs flakehunt may run on.
    pub cpus: Vec<usize>,
    /// Seed of seeded mechanisms.
    pub seed: u64,
    /// The hunt's run id (names cgroups).
    pub run_id: String,
    /// Whether the target looks like Python (a silent switch interval is then inert).
    pub python_target: bool,
    /// Whether the plan runs a `copies=N` cell's attempts N at once (false: such a cell is
    /// inert, said so, rather than counted as if its copies had run).
    pub copies_scheduled: bool,
    quota: OnceLock<QuotaBackend>,
    gil: OnceLock<Option<GilHook>>,
    /// The library, or why it could not be built (said by `unapplicable`).
    jitter: OnceLock<Result<JitterLib, String>>,
    /// Tells the watchdog about the helpers' temporary directories, so that a killed flakehunt
    /// leaves none behind.
    tracker: Option<crate::exec::DirTracker>,
    /// Declared after the helpers: dropped once their directories are removed.
    tracked: std::sync::Mutex<Vec<crate::exec::TrackedDir>>,
}

impl ProfileEnv {
    /// The environment of a hunt.
    pub fn new(run_id: &str, seed: u64, python_target: bool) -> Self {
        Self {
            cpus: allowed_cpus(),
            seed,
            run_id: run_id.to_owned(),
            python_target,
            copies_scheduled: false,
            quota: OnceLock::new(),
            gil: OnceLock::new(),
            jitter: OnceLock::new(),
            tracker: None,
            tracked: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Has the watchdog remove the helpers' temporary directories if flakehunt dies.
    pub fn with_tracker(mut self, tracker: Option<crate::exec::DirTracker>) -> Self {
        self.tracker = tracker;
        self
    }

    fn track(&self, dir: &std::path::Path) {
        if let Some(t) = &self.tracker {
            self.tracked.lock().unwrap_or_else(|e| e.into_inner()).push(t.track(dir));
        }
    }

    /// The quota backend, detected on first use.
    pub fn quota(&self) -> &QuotaBackend {
        self.quota.get_or_init(QuotaBackend::detect)
    }

    /// The jitter library, compiled on first use.
    pub fn jitter(&self) -> Option<&JitterLib> {
        self.jitter_built().as_ref().ok()
    }

    /// Why the jitter library could not be built, if it could not.
    pub fn jitter_error(&self) -> Option<String> {
        self.jitter_built().as_ref().err().cloned()
    }

    fn jitter_built(&self) -> &Result<JitterLib, String> {
        self.jitter.get_or_init(|| {
            let lib = JitterLib::create();
            if let Ok(l) = &lib {
                self.track(l.dir());
            }
            lib
        })
    }

    /// Makes every helper a profile may use now (each is otherwise made on first use).
    pub fn make_helpers(&self) {
        self.quota();
        self.jitter_built();
        if self.python_target {
            self.gil();
        }
    }

    /// The Python hook, created on first use.
    pub fn gil(&self) -> Option<&GilHook> {
        self.gil
            .get_or_init(|| {
                let hook = GilHook::create().ok();
                if let Some(h) = &hook {
                    self.track(h.path());
                }
                hook
            })
            .as_ref()
    }
}

/// A profile prepared for one attempt: the launch is set up; after spawn, [`Prepared::start`]
/// reads back what applied and starts what acts while the attempt runs.
#[derive(Debug, Default)]
pub struct Prepared {
    attempt: u64,
    hints: BTreeMap<String, String>,
    pinned: Vec<usize>,
    read_cpus: bool,
    read_policy: bool,
    inert: Option<String>,
    mechanism: Option<String>,
    quota: Option<QuotaGroup>,
    duty_cycle: Option<f64>,
    noise: Option<(u32, Vec<usize>)>,
    pause: Option<PauseSchedule>,
    /// The switch interval asked for, when the hook is set.
    gil: Option<f64>,
    python: bool,
    jitter: bool,
}

impl Prepared {
    /// Called right after the child `pid` started.
    pub fn start(self, pid: u32, cancel: &crate::exec::Cancel) -> Active {
        let mut effect =
            Effect { hints: self.hints, inert: self.inert, mechanism: self.mechanism, ..Effect::default() };
        if self.read_cpus {
            effect.cpus = read_status_field(pid, "Cpus_allowed_list:");
        }
        if self.read_policy {
            let (policy, nice) = read_policy(pid);
            effect.policy = policy;
            effect.nice = nice;
        }
        let cpu_before = self.quota.as_ref().and_then(QuotaGroup::cpu_seconds);
        let stopper = match (self.duty_cycle, self.pause) {
            (Some(share), _) => Some(Stopper::start(pid, PauseSchedule::DutyCycle(share))),
            (None, Some(schedule)) => Some(Stopper::start(pid, schedule)),
            (None, None) => None,
        };
        let noise = self.noise.map(|(n, cpus)| Noise::start(n, &cpus, cancel));
        Active {
            effect,
            quota: self.quota,
            cpu_before,
            stopper,
            duty_cycle: self.duty_cycle.is_some(),
            noise,
            gil: self.gil,
            python: self.python,
            jitter: self.jitter,
            attempt: self.attempt,
        }
    }

    /// Directories created for this attempt (cgroups), for the watchdog.
    pub fn cgroups(&self) -> Vec<PathBuf> {
        self.quota.as_ref().map(|q| q.dirs().to_vec()).unwrap_or_default()
    }
}

/// A profile acting on a running attempt. Dropping it (also in a panic) stops the noise,
/// continues stopped processes and removes cgroups.
#[derive(Debug)]
pub struct Active {
    effect: Effect,
    quota: Option<QuotaGroup>,
    cpu_before: Option<f64>,
    stopper: Option<Stopper>,
    duty_cycle: bool,
    noise: Option<Noise>,
    gil: Option<f64>,
    python: bool,
    jitter: bool,
    attempt: u64,
}

impl Active {
    /// Stops the running mechanisms once the attempt ended and returns what was measured.
    /// `cpu_seconds` is the CPU time of the main process and its reaped children (from wait4),
    /// used when no cgroup accounts for the whole tree.
    pub fn finish(mut self, env: &ProfileEnv, wall_seconds: f64, cpu_seconds: Option<f64>) -> Effect {
        let mut effect = std::mem::take(&mut self.effect);
        if let Some(stopper) = self.stopper.take() {
            let stops = stopper.finish();
            if self.duty_cycle {
                effect.cpu_share = cpu_seconds.map(|c| c / wall_seconds.max(1e-6));
                if stops.count == 0 && effect.inert.is_none() {
                    effect.inert = Some("the attempt ended before the duty cycle stopped it once".into());
                }
            } else {
                effect.pauses = Some(stops.count);
                effect.paused_seconds = Some(stops.seconds);
            }
        }
        if let Some(q) = self.quota.take() {
            let used = q.cpu_seconds().zip(self.cpu_before).map(|(after, before)| after - before).or(cpu_seconds);
            effect.cpu_share = used.map(|c| c / wall_seconds.max(1e-6));
            effect.throttled = q.throttled();
            drop(q);
        }
        if let Some(noise) = self.noise.take() {
            effect.noise_cpu_seconds = Some(noise.finish());
        }
        if let Some(asked) = self.gil {
            match env.gil().and_then(|h| h.take_report(self.attempt)) {
                Some(interval) => {
                    effect.switch_interval = Some(interval);
                    // The interval is read back once the program has run (at its exit): a
                    // program that sets its own overrides the profile, which then did nothing.
                    // CPython keeps the interval in whole microseconds.
                    if (interval - asked).abs() > 1e-6 + asked * 1e-3 && effect.inert.is_none() {
                        effect.inert = Some(format!(
                            "the program sets its own switch interval ({interval:e} s), which overrides the profile's {asked:e} s"
                        ));
                    }
                }
                None if self.python && effect.inert.is_none() => {
                    effect.inert = Some("no Python process reported its switch interval (is PYTHONPATH reset, python run with -S/-I, or not CPython?)".into());
                }
                None => {}
            }
        }
        if self.jitter {
            match env.jitter().and_then(|j| j.take_report(self.attempt)) {
                // Its processes were killed before they could say (a timeout): nothing known.
                Some(report) if report.exited == 0 => {}
                Some(report) => effect.jitter_delays = Some(report.delays),
                None if effect.inert.is_none() => {
                    effect.inert = Some(
                        "no process loaded the jitter library: a statically linked program, or one that resets LD_PRELOAD"
                            .into(),
                    );
                }
                None => {}
            }
        }
        effect
    }
}

/// The variables that tell common runtimes how many threads to use, set to `count` unless the
/// user already set them: they would otherwise size themselves from the pinned affinity.
fn runtime_hints(count: usize, launch: &Launch) -> Vec<(String, String)> {
    let user_set = |name: &str| launch.env.iter().any(|(n, _)| n == name) || std::env::var_os(name).is_some();
    let mut out = Vec::new();
    for name in ["GOMAXPROCS", "OMP_NUM_THREADS", "RAYON_NUM_THREADS", "TOKIO_WORKER_THREADS", "UV_THREADPOOL_SIZE"] {
        if !user_set(name) {
            out.push((name.to_owned(), count.to_string()));
        }
    }
    let java = format!("-XX:ActiveProcessorCount={count}");
    match std::env::var("JAVA_TOOL_OPTIONS") {
        Ok(existing) if existing.contains("ActiveProcessorCount") => {}
        Ok(existing) => out.push(("JAVA_TOOL_OPTIONS".into(), format!("{existing} {java}"))),
        Err(_) => out.push(("JAVA_TOOL_OPTIONS".into(), java)),
    }
    out
}

/// A duration in whole microseconds as a level name writes it: `500us`, `2ms`, `1.5ms`, `3s`.
pub fn format_us(us: u64) -> String {
    if us >= 1_000_000 && us % 1_000_000 == 0 {
        format!("{}s", us / 1_000_000)
    } else if us < 1000 {
        format!("{us}us")
    } else {
        format!("{}ms", us as f64 / 1000.0)
    }
}

/// Parses `500us` (or `500µs`), `2ms`, `1.5ms`, `3s` into whole microseconds.
fn parse_us(text: &str) -> Option<u64> {
    let (number, scale) = if let Some(n) = text.strip_suffix("us").or_else(|| text.strip_suffix("µs")) {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix("ms") {
        (n, 1e3)
    } else {
        (text.strip_suffix('s')?, 1e6)
    };
    let value: f64 = number.parse().ok()?;
    (value.is_finite() && value >= 0.0).then(|| (value * scale).round() as u64)
}

/// CPUs this process may run on, from its affinity mask.
pub fn allowed_cpus() -> Vec<usize> {
    match rustix::thread::sched_getaffinity(None) {
        Ok(set) => (0..rustix::thread::CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect(),
        Err(_) => (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect(),
    }
}

/// One field of `/proc/PID/status`, trimmed.
pub(crate) fn read_status_field(pid: u32, field: &str) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix(field)).map(|v| v.trim().to_owned())
}

/// Scheduling policy name and nice value of a process.
fn read_policy(pid: u32) -> (Option<String>, Option<i32>) {
    // SAFETY: sched_getscheduler has no memory preconditions; a gone pid returns -1.
    let policy = unsafe { libc::sched_getscheduler(pid as i32) };
    let name = match policy {
        libc::SCHED_OTHER => Some("other"),
        libc::SCHED_IDLE => Some("idle"),
        libc::SCHED_BATCH => Some("batch"),
        libc::SCHED_FIFO => Some("fifo"),
        libc::SCHED_RR => Some("rr"),
        _ => None,
    };
    // Field 19 of /proc/PID/stat, counted after the parenthesised command name.
    let nice = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s[s.rfind(')')? + 2..].split(' ').nth(16).and_then(|n| n.parse().ok()));
    (name.map(str::to_owned), nice)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levelled_names_parse_and_name_themselves() {
        for name in [
            "cpu-starved=4",
            "cpu-starved=3.3",
            "noisy=x2",
            "pause=2ms/10ms",
            "pause=200us/1ms",
            "pause=1.5ms/3s",
            "jitter=0.25",
            "copies=4",
        ] {
            let p = Profile::builtin(name).unwrap_or_else(|| panic!("{name} does not parse"));
            assert_eq!(p.name, name);
            assert_eq!(p.knobs.validate(), Ok(()), "{name}");
            assert_eq!(Profile::builtin(&p.name), Some(p.clone()), "{name} round-trips");
        }
        // Existing meanings stay: the default level of cpu-starved and jitter keep their names.
        assert_eq!(Profile::builtin("cpu-starved=15").unwrap().name, "cpu-starved");
        assert_eq!(Profile::builtin("cpu-starved=4%").unwrap().knobs.cpu_quota, Some(4.0));
        assert_eq!(Profile::builtin("jitter=5%").unwrap().name, "jitter");
    }

    #[test]
    fn levels_set_their_mechanism() {
        let pause = Profile::builtin("pause=2ms/10ms").unwrap().knobs.pause.unwrap();
        assert_eq!((pause.min_ms, pause.max_ms, pause.every_max_ms), (1.0, 2.0, 10.0));
        let short = Profile::builtin("pause=200us/1ms").unwrap().knobs.pause.unwrap();
        assert_eq!((short.min_ms, short.max_ms, short.every_max_ms), (0.1, 0.2, 1.0));
        // Half of the shortest pause allowed is below the floor: the floor holds.
        let floor = Profile::paused(60, 500).knobs.pause.unwrap();
        assert_eq!((floor.min_ms, floor.max_ms), (0.05, 0.06));
        assert_eq!(Profile::noisy(2, 3).knobs.noise_threads, Some(6));
        assert_eq!(Profile::builtin("noisy=x1").unwrap().knobs.noise_threads, Some(allowed_cpus().len() as u32));
        assert_eq!(Profile::builtin("copies=4").unwrap().knobs.copies, Some(4));
        assert_eq!(Profile::builtin("jitter=0.25").unwrap().knobs.jitter, Some(0.25));
    }

    #[test]
    fn levels_out_of_range_or_malformed_are_unknown() {
        for name in [
            "cpu-starved=0",
            "cpu-starved=101",
            "noisy=2",
            "noisy=x0",
            "pause=10us/1ms",
            "pause=2ms",
            "pause=2/10",
            "pause=-1ms/2ms",
            "jitter=0",
            "jitter=1.5",
            "copies=1",
            "copies=x",
            "tight-gil=2",
        ] {
            assert_eq!(Profile::builtin(name), None, "{name}");
        }
    }

    #[test]
    fn durations_format_in_the_unit_that_reads_best() {
        assert_eq!(format_us(500), "500us");
        assert_eq!(format_us(2000), "2ms");
        assert_eq!(format_us(1500), "1.5ms");
        assert_eq!(format_us(3_000_000), "3s");
        assert_eq!(format_us(2_500_000), "2500ms");
        assert_eq!(parse_us("500µs"), Some(500));
        assert_eq!(parse_us("1.5ms"), Some(1500));
        assert_eq!(parse_us("3s"), Some(3_000_000));
        assert_eq!(parse_us("3"), None);
    }

    #[test]
    fn copies_are_inert_where_the_plan_does_not_run_them_together() {
        let mut env = ProfileEnv::new("t", 0, false);
        let copies = Profile::copies(4);
        assert!(copies.unapplicable(&env).is_some_and(|r| r.contains("only an adaptive hunt")));
        env.copies_scheduled = true;
        assert_eq!(copies.unapplicable(&env), None);
    }
}
