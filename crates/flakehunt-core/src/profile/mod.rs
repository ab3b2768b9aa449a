//! Scheduling profiles: named compositions of mechanisms (CPU affinity, runtime thread-count
//! hints, environment, resource limits, niceness...) applied to an attempt's whole process tree,
//! each measuring its own effect. Main type: [`Profile`].

pub mod cgroup;
mod knobs;

pub use knobs::Knobs;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::exec::{Launch, Limit};
use crate::record::Effect;

/// A named profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// The name users select it by.
    pub name: String,
    /// One line on what it does.
    pub summary: String,
    /// The mechanisms it composes.
    pub knobs: Knobs,
}

/// What the runner knows when it applies a profile to one attempt.
#[derive(Debug, Clone)]
pub struct ApplyContext {
    /// CPUs this process may run on (the machine as the hunt sees it).
    pub cpus: Vec<usize>,
    /// Index of the worker running the attempt, so pinned attempts of parallel workers spread
    /// over the CPUs instead of piling onto one.
    pub worker: usize,
}

impl ApplyContext {
    /// The context of this process as it runs now.
    pub fn current(worker: usize) -> Self {
        Self { cpus: allowed_cpus(), worker }
    }
}

/// A profile prepared for one attempt: the launch is set up, and after spawn `effect` reads
/// back what really applied.
#[derive(Debug, Default)]
pub struct Prepared {
    /// Runtime hints and variables that were set, for the record.
    pub hints: BTreeMap<String, String>,
    /// Whether to read the child's CPU list back after spawn.
    pub read_cpus: bool,
    /// Why this profile cannot act here, if it cannot.
    pub inert: Option<String>,
}

impl Profile {
    /// The profile that changes nothing.
    pub fn default_profile() -> Self {
        Self { name: "default".into(), summary: "nothing changed: the baseline".into(), knobs: Knobs::default() }
    }

    /// Built-in profiles, in the order they are listed and run.
    pub fn builtins() -> Vec<Profile> {
        vec![
            Self::default_profile(),
            Self {
                name: "one-core".into(),
                summary: "pinned to one CPU; runtimes are told the unpinned CPU count, so a multi-threaded program stays multi-threaded".into(),
                knobs: Knobs { cpus: Some(1), runtime_hints: Some(true), ..Knobs::default() },
            },
            Self {
                name: "one-core-native".into(),
                summary: "pinned to one CPU; runtimes size their thread pools from it (Go, OpenMP, tokio, rayon run single-threaded)".into(),
                knobs: Knobs { cpus: Some(1), runtime_hints: Some(false), ..Knobs::default() },
            },
        ]
    }

    /// Whether this profile is the baseline (changes nothing).
    pub fn is_default(&self) -> bool {
        self.knobs == Knobs::default()
    }

    /// Applies the profile's before-exec parts to `launch`.
    pub fn prepare(&self, launch: &mut Launch, ctx: &ApplyContext) -> Prepared {
        let mut prepared = Prepared::default();
        let k = &self.knobs;
        if let Some(n) = k.cpus {
            let n = n.max(1) as usize;
            if ctx.cpus.len() <= n {
                prepared.inert =
                    Some(format!("only {} CPU(s) available, pinning to {n} changes nothing", ctx.cpus.len()));
            } else {
                // Spread parallel workers over different CPUs.
                let start = (ctx.worker * n) % ctx.cpus.len();
                let chosen: Vec<usize> = (0..n).map(|i| ctx.cpus[(start + i) % ctx.cpus.len()]).collect();
                launch.setup.cpus = Some(chosen);
                prepared.read_cpus = true;
                if k.runtime_hints == Some(true) {
                    for (name, value) in runtime_hints(ctx.cpus.len(), launch) {
                        prepared.hints.insert(name.clone(), value.clone());
                        launch.env.push((name.into(), Some(value.into())));
                    }
                }
            }
        }
        for (name, value) in &k.env {
            prepared.hints.insert(name.clone(), value.clone());
            launch.env.push((name.into(), Some(value.into())));
        }
        for (name, value) in &k.rlimits {
            if let Some(resource) = crate::exec::Resource::from_name(name) {
                launch.setup.rlimits.push(Limit {
                    resource,
                    soft: Some(*value),
                    hard: resource.current().1.map(|h| h.max(*value)),
                });
            }
        }
        if let Some(nice) = k.nice {
            launch.setup.nice = Some(nice);
        }
        prepared
    }
}

impl Prepared {
    /// Called right after the child `pid` started: reads back what applied before exec and
    /// starts the mechanisms that act while the attempt runs.
    pub fn start(self, pid: u32) -> Active {
        let mut effect = Effect { hints: self.hints, inert: self.inert, ..Effect::default() };
        if self.read_cpus {
            effect.cpus = read_status_field(pid, "Cpus_allowed_list:");
        }
        Active { effect }
    }
}

/// A profile acting on a running attempt.
#[derive(Debug)]
pub struct Active {
    effect: Effect,
}

impl Active {
    /// Stops the running mechanisms once the attempt ended and returns what was measured.
    pub fn finish(self) -> Effect {
        self.effect
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
