//! Profiles for a hunt: which ones a sweep compares ([`select`]), and `flakehunt probe`, which
//! runs a small built-in workload under each profile and shows what each really does on this
//! machine (applied or not, the mechanism, CPU share, CPUs seen, the longest stall a busy loop
//! observed, the Python switch interval), before anyone spends an hour on a sweep. Also the
//! hidden workload itself, and the `--strict` check of sweep.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::config::Config;
use crate::exec::{Cancel, Limits, ProcessTree};
use crate::plan::{AttemptSpec, CellSpec, Target};
use crate::profile::{ApplyProfile, BuiltinProfiles, Profile, ProfileEnv};
use crate::runner::{AttemptRunner, Slot};
use crate::spec::HuntError;

/// What one profile did to the probe workload.
#[derive(Debug, Serialize)]
pub struct ProbeResult {
    /// The profile.
    pub profile: String,
    /// Whether it took effect.
    pub applied: bool,
    /// Why not, when it did not.
    pub inert_reason: Option<String>,
    /// The mechanism used.
    pub mechanism: Option<String>,
    /// CPUs the workload saw.
    pub cpus_seen: Option<String>,
    /// Share of one CPU the workload got.
    pub cpu_share: Option<f64>,
    /// Longest gap between two iterations of the workload's busy loop, in milliseconds.
    pub longest_stall_ms: Option<f64>,
    /// Pauses delivered.
    pub pauses: Option<u64>,
    /// CPU seconds the noise used.
    pub noise_cpu_seconds: Option<f64>,
    /// Scheduling policy read back.
    pub policy: Option<String>,
    /// Nice value read back.
    pub nice: Option<i32>,
    /// Python switch interval reported.
    pub switch_interval: Option<f64>,
    /// Variables set.
    pub hints: std::collections::BTreeMap<String, String>,
}

/// The workload's report, printed as JSON on its stdout.
#[derive(Debug, Serialize, serde::Deserialize)]
struct WorkloadReport {
    cpus: String,
    longest_stall_ms: f64,
    cpu_seconds: f64,
    wall_seconds: f64,
}

/// The hidden workload: a busy loop of `millis` wall-clock milliseconds that records the CPUs it
/// may use, the longest stall between two iterations and its own CPU share; returns the line
/// of JSON it prints.
pub fn workload(millis: u64) -> String {
    let cpus = crate::profile::allowed_cpus();
    let start = Instant::now();
    let mut last = start;
    let mut longest = Duration::ZERO;
    while start.elapsed() < Duration::from_millis(millis) {
        let now = Instant::now();
        longest = longest.max(now - last);
        last = now;
    }
    let cpu = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    let report = WorkloadReport {
        cpus: compress(&cpus),
        longest_stall_ms: longest.as_secs_f64() * 1000.0,
        cpu_seconds: cpu.tv_sec as f64 + cpu.tv_nsec as f64 * 1e-9,
        wall_seconds: start.elapsed().as_secs_f64(),
    };
    serde_json::to_string(&report).unwrap_or_default()
}

/// `0,1,2,5` -> `0-2,5`.
fn compress(cpus: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j { cpus[i].to_string() } else { format!("{}-{}", cpus[i], cpus[j]) });
        i = j + 1;
    }
    parts.join(",")
}

/// Runs the probe workload under each profile.
pub fn probe(profiles: &[Profile]) -> Result<Vec<ProbeResult>, HuntError> {
    probe_in(profiles, false)
}

/// [`probe`] for a hunt whose plan runs `copies=N` cells N at once when `copies_scheduled`.
fn probe_in(profiles: &[Profile], copies_scheduled: bool) -> Result<Vec<ProbeResult>, HuntError> {
    let exe = std::env::current_exe().map_err(|e| HuntError::io("cannot find flakehunt's own executable", e))?;
    let python = which("python3");
    let tree = ProcessTree::default();
    ProcessTree::become_subreaper();
    let cancel = Cancel::new().map_err(|e| HuntError::io("cannot create the cancellation pipe", e))?;
    let mut env = ProfileEnv::new(&format!("probe-{}", std::process::id()), 1, true);
    env.copies_scheduled = copies_scheduled;
    let mut results = Vec::new();
    for (i, profile) in profiles.iter().enumerate() {
        let target = if profile.is_python_only() {
            match &python {
                Some(py) => Target::argv(vec![
                    py.clone(),
                    "-c".into(),
                    "import time\nt = time.time()\nwhile time.time() - t < 0.2: pass".into(),
                ]),
                None => {
                    results.push(unapplied(profile, "python3 is not on PATH".into()));
                    continue;
                }
            }
        } else {
            Target::argv(vec![exe.display().to_string(), "__probe-workload".into(), "300".into()])
        };
        if let Some(reason) = profile.unapplicable(&env) {
            results.push(unapplied(profile, reason));
            continue;
        }
        let runner = AttemptRunner {
            run_id: env.run_id.clone(),
            target,
            limits: Limits { timeout: Duration::from_secs(30), ..Limits::default() },
            env: Vec::new(),
            env_clear: false,
            cwd: None,
            tree: &tree,
            watchdog: None,
            cancel: &cancel,
            profiles: &env,
            rooms: &Default::default(),
            oracle: None,
            warm: None,
            checks: None,
            stops_on_no_test: false,
        };
        let spec = AttemptSpec { id: i as u64, cell: i, iteration: 1, phase: None, cold: false };
        let finished = runner
            .run(&spec, &CellSpec::for_profile(profile.clone()), 0, Slot::default(), &[])
            .map_err(|e| HuntError::io(format!("cannot start the probe workload {}", exe.display()), e))?;
        let e = &finished.attempt.effect;
        let report: Option<WorkloadReport> = serde_json::from_str(finished.attempt.stdout_tail.trim()).ok();
        let mut inert = e.inert.clone();
        if inert.is_none() {
            inert = measured_inert(profile, e, report.as_ref());
        }
        results.push(ProbeResult {
            profile: profile.name.clone(),
            applied: inert.is_none(),
            inert_reason: inert,
            mechanism: e.mechanism.clone(),
            cpus_seen: report.as_ref().map(|r| r.cpus.clone()).or_else(|| e.cpus.clone()),
            cpu_share: e.cpu_share.or_else(|| report.as_ref().map(|r| r.cpu_seconds / r.wall_seconds.max(1e-6))),
            longest_stall_ms: report.as_ref().map(|r| r.longest_stall_ms),
            pauses: e.pauses,
            noise_cpu_seconds: e.noise_cpu_seconds,
            policy: e.policy.clone(),
            nice: e.nice,
            switch_interval: e.switch_interval,
            hints: e.hints.clone(),
        });
    }
    tree.kill_all_unknown();
    Ok(results)
}

/// Judges from the workload's own measurements whether a profile did anything.
fn measured_inert(profile: &Profile, e: &crate::record::Effect, r: Option<&WorkloadReport>) -> Option<String> {
    let k = &profile.knobs;
    if let (Some(q), Some(share)) = (k.cpu_quota, e.cpu_share) {
        if share > (q / 100.0 * 2.0).max(q / 100.0 + 0.3).min(0.9) {
            return Some(format!("the workload got {:.0} % of a CPU under a {q} % quota", share * 100.0));
        }
    }
    if k.pause.is_some() && e.pauses == Some(0) {
        return Some("no pause was delivered during the 300 ms workload".into());
    }
    if let (Some(n), Some(r)) = (k.cpus, r) {
        let seen = crate::analysis::summary::cpu_count(&r.cpus);
        if seen > n as usize {
            return Some(format!("the workload could still run on CPUs {}", r.cpus));
        }
    }
    if k.noise_threads.is_some() && e.noise_cpu_seconds.is_some_and(|s| s < 0.01) {
        return Some("the noise threads got no CPU time".into());
    }
    if k.python_switch_interval.is_some() && e.switch_interval.is_none() {
        return Some("python3 did not report its switch interval".into());
    }
    if k.jitter.is_some() && e.jitter_delays == Some(0) {
        return Some(
            "the jitter library loaded, but the spinning workload makes too few intercepted calls to be delayed (C/C++ programs that lock make many)"
                .into(),
        );
    }
    None
}

fn unapplied(profile: &Profile, reason: String) -> ProbeResult {
    ProbeResult {
        profile: profile.name.clone(),
        applied: false,
        inert_reason: Some(reason),
        mechanism: None,
        cpus_seen: None,
        cpu_share: None,
        longest_stall_ms: None,
        pauses: None,
        noise_cpu_seconds: None,
        policy: None,
        nice: None,
        switch_interval: None,
        hints: Default::default(),
    }
}

fn which(program: &str) -> Option<String> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(program)).find(|p| p.is_file()).map(|p| p.display().to_string())
}

/// The table `flakehunt probe` prints.
pub fn probe_table(results: &[ProbeResult]) -> String {
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::NOTHING);
    table.set_header(vec!["profile", "applied", "mechanism", "cpus seen", "cpu share", "longest stall", "measured"]);
    for r in results {
        let mut measured = Vec::new();
        if let Some(n) = r.pauses {
            measured.push(format!("{n} pauses"));
        }
        if let Some(s) = r.noise_cpu_seconds {
            measured.push(format!("noise {s:.2} cpu-s"));
        }
        if let Some(p) = &r.policy {
            measured.push(format!("policy {p}, nice {}", r.nice.unwrap_or(0)));
        }
        if let Some(s) = r.switch_interval {
            measured.push(format!("switch interval {s:e} s"));
        }
        if let Some(reason) = &r.inert_reason {
            measured.push(reason.clone());
        }
        table.add_row(vec![
            r.profile.clone(),
            if r.applied {
                "yes".into()
            } else if r.profile == "default" {
                "-".into()
            } else {
                "NO".into()
            },
            r.mechanism.clone().unwrap_or_default(),
            r.cpus_seen.clone().unwrap_or_default(),
            r.cpu_share.map(|s| format!("{:.0}%", s * 100.0)).unwrap_or_default(),
            r.longest_stall_ms.map(|s| format!("{s:.1} ms")).unwrap_or_default(),
            measured.join("; "),
        ]);
    }
    table.to_string().lines().map(|l| format!("{}\n", l.trim_end())).collect()
}

/// `--strict`: refuses (exit 3) before any attempt when a profile cannot act here (`copies=N`
/// acts where the plan of the hunt, of `kind`, runs its copies together).
pub fn refuse_inert(profiles: &[Profile], kind: crate::record::Kind) -> Result<(), HuntError> {
    let to_check: Vec<Profile> = profiles.iter().filter(|p| !p.is_default()).cloned().collect();
    let results = probe_in(&to_check, crate::plan::schedules_copies(kind))?;
    let bad: Vec<String> = results
        .iter()
        .filter(|r| !r.applied)
        .map(|r| format!("{} ({})", r.profile, r.inert_reason.as_deref().unwrap_or("inert")))
        .collect();
    if bad.is_empty() {
        return Ok(());
    }
    Err(HuntError::Refused(format!("--strict: profile(s) with no effect on this machine: {}", bad.join("; "))))
}

/// The table `flakehunt profiles` prints: built-in and configured profiles.
pub fn profiles_table(config: &Config) -> String {
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::NOTHING);
    table.set_header(vec!["profile", "source", "what it does"]);
    for p in Profile::builtins() {
        table.add_row(vec![p.name.clone(), "built-in".into(), p.summary.clone()]);
    }
    for p in config.user_profiles() {
        table.add_row(vec![p.name.clone(), "flakehunt.toml".into(), p.summary.clone()]);
    }
    let mut out: String = table.to_string().lines().map(|l| format!("{}\n", l.trim_end())).collect();
    out.push_str("Also: cpu-starved=PCT for another quota. Default sweep: every built-in that applies here except one-core-native and jitter (tight-gil only for Python targets).\n");
    out
}

/// The profiles named by `--profiles` (built-in, `cpu-starved=PCT`, or from the configuration),
/// or every built-in that applies on this machine. The baseline `default` comes first unless
/// the list names its own first profile.
pub fn select(names: &[String], config: &Config, target: &Target) -> Result<Vec<Profile>, HuntError> {
    let user = config.user_profiles();
    if names.is_empty() {
        let env = ProfileEnv::new("select", 0, target.looks_like_python());
        let defaults = Profile::builtins()
            .into_iter()
            // Opt-in: plain pinning hides multi-threading, and jitter only acts on native code.
            .filter(|p| p.name != "one-core-native" && p.name != "jitter")
            .filter(|p| !p.is_python_only() || target.looks_like_python())
            .filter(|p| p.unapplicable(&env).is_none())
            .collect();
        return Ok(defaults);
    }
    let mut out: Vec<Profile> = Vec::new();
    for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        let profile =
            Profile::builtin(name).or_else(|| user.iter().find(|p| p.name == name).cloned()).ok_or_else(|| {
                let mut known: Vec<String> = Profile::builtins().into_iter().map(|p| p.name).collect();
                known.extend(user.iter().map(|p| p.name.clone()));
                HuntError::usage(format!(
                    "unknown profile '{name}': choose from {}, or a level: cpu-starved=PCT, noisy=xK, pause=LEN/GAP, jitter=RATE, copies=N (see `flakehunt profiles`)",
                    known.join(", ")
                ))
            })?;
        if out.iter().any(|c| c.name == profile.name) {
            return Err(HuntError::usage(format!("profile '{name}' is listed twice in --profiles")));
        }
        out.push(profile);
    }
    Ok(out)
}
