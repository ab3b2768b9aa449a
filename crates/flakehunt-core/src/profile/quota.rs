//! CPU quotas through cgroups: v2 `cpu.max` where a cpu controller is delegated to us, else v1
//! `cpu.cfs_quota_us` (with `cpuacct` for accounting), else nothing, and the caller falls back to
//! a SIGSTOP/SIGCONT duty cycle. Main types: [`QuotaBackend`] (detected once per hunt) and
//! [`QuotaGroup`] (one cgroup per attempt, removed when dropped).

use std::fs;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where per-attempt cgroups with a CPU quota can be created on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuotaBackend {
    /// A cgroup v2 directory whose children get the cpu controller.
    V2(PathBuf),
    /// cgroup v1: the cpu hierarchy directory, and the cpuacct one for accounting (which may be
    /// the same mount, as in `cpu,cpuacct`).
    V1 {
        /// Directory under the `cpu` hierarchy.
        cpu: PathBuf,
        /// Directory under the `cpuacct` hierarchy.
        cpuacct: Option<PathBuf>,
    },
    /// No writable cgroup with a CPU controller; the reason, for the record.
    Unavailable(String),
}

impl QuotaBackend {
    /// Finds the best backend for this process.
    pub fn detect() -> Self {
        let mounts = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
        let membership = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let mut reasons = Vec::new();
        // cgroup v2: our own cgroup must offer cpu to its children.
        if let Some(mount) = mounts.lines().find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(2) == Some(&"cgroup2")).then(|| PathBuf::from(f[1]))
        }) {
            let own = membership.lines().find_map(|l| l.strip_prefix("0::")).unwrap_or("/");
            let dir = mount.join(own.trim_start_matches('/'));
            let controllers = fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
            if controllers.split_whitespace().any(|c| c == "cpu") {
                let subtree = dir.join("cgroup.subtree_control");
                let enabled = fs::read_to_string(&subtree).unwrap_or_default().split_whitespace().any(|c| c == "cpu");
                if enabled || fs::write(&subtree, "+cpu").is_ok() {
                    if probe_dir(&dir) {
                        return Self::V2(dir);
                    }
                    reasons.push(format!("cannot create cgroups in {}", dir.display()));
                } else {
                    reasons.push(format!(
                        "the cgroup v2 cpu controller is not delegated to {} (processes in it block enabling it)",
                        dir.display()
                    ));
                }
            } else {
                reasons.push(format!("no cgroup v2 cpu controller at {}", dir.display()));
            }
        }
        // cgroup v1: a hierarchy with the cpu controller.
        let v1 = |controller: &str| -> Option<PathBuf> {
            mounts.lines().find_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let has =
                    f.get(2) == Some(&"cgroup") && f.get(3).is_some_and(|o| o.split(',').any(|x| x == controller));
                has.then(|| {
                    let own = membership
                        .lines()
                        .find_map(|m| {
                            let mut parts = m.splitn(3, ':');
                            let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
                            ctrls.split(',').any(|c| c == controller).then(|| path.to_owned())
                        })
                        .unwrap_or_else(|| "/".into());
                    PathBuf::from(f[1]).join(own.trim_start_matches('/'))
                })
            })
        };
        match v1("cpu") {
            Some(cpu) if probe_dir(&cpu) => {
                let cpuacct = v1("cpuacct").filter(|d| probe_dir(d));
                return Self::V1 { cpu, cpuacct };
            }
            Some(cpu) => reasons.push(format!("cannot create cgroups in {}", cpu.display())),
            None => reasons.push("no cgroup v1 cpu hierarchy".into()),
        }
        Self::Unavailable(reasons.join("; "))
    }

    /// The mechanism's name for the record.
    pub fn mechanism(&self) -> &'static str {
        match self {
            Self::V2(_) => "cgroup-v2",
            Self::V1 { .. } => "cgroup-v1",
            Self::Unavailable(_) => "duty-cycle",
        }
    }
}

/// Whether a child cgroup can be created (and removed) in `dir`.
fn probe_dir(dir: &Path) -> bool {
    let probe = dir.join(format!("flakehunt-probe-{}", std::process::id()));
    let ok = fs::create_dir(&probe).is_ok();
    let _ = fs::remove_dir(&probe);
    ok
}

/// One attempt's cgroup(s) with a CPU quota.
#[derive(Debug)]
pub struct QuotaGroup {
    dirs: Vec<PathBuf>,
    procs: Vec<Arc<OwnedFd>>,
    version: u8,
}

impl QuotaGroup {
    /// Creates the cgroup for attempt `name` with `percent` of one CPU. The returned files are
    /// written with the child's pid between fork and exec.
    pub fn create(backend: &QuotaBackend, name: &str, percent: f64) -> std::io::Result<Self> {
        let period: u64 = 100_000;
        let quota = ((percent / 100.0) * period as f64).round().max(1000.0) as u64;
        let mut group = Self { dirs: Vec::new(), procs: Vec::new(), version: 0 };
        match backend {
            QuotaBackend::V2(parent) => {
                let dir = parent.join(name);
                fs::create_dir(&dir)?;
                group.dirs.push(dir.clone());
                group.version = 2;
                fs::write(dir.join("cpu.max"), format!("{quota} {period}"))?;
                group.procs.push(Arc::new(open_append(&dir.join("cgroup.procs"))?));
            }
            QuotaBackend::V1 { cpu, cpuacct } => {
                let dir = cpu.join(name);
                fs::create_dir(&dir)?;
                group.dirs.push(dir.clone());
                group.version = 1;
                fs::write(dir.join("cpu.cfs_period_us"), period.to_string())?;
                fs::write(dir.join("cpu.cfs_quota_us"), quota.to_string())?;
                group.procs.push(Arc::new(open_append(&dir.join("cgroup.procs"))?));
                if let Some(acct) = cpuacct.as_ref().filter(|a| *a != cpu) {
                    let adir = acct.join(name);
                    if fs::create_dir(&adir).is_ok() {
                        group.dirs.push(adir.clone());
                        group.procs.push(Arc::new(open_append(&adir.join("cgroup.procs"))?));
                    }
                }
            }
            QuotaBackend::Unavailable(reason) => return Err(std::io::Error::other(reason.clone())),
        }
        Ok(group)
    }

    /// The `cgroup.procs` files the child joins.
    pub fn procs(&self) -> &[Arc<OwnedFd>] {
        &self.procs
    }

    /// The directories created (for the watchdog).
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// CPU seconds used by the group's processes so far.
    pub fn cpu_seconds(&self) -> Option<f64> {
        if self.version == 2 {
            let stat = fs::read_to_string(self.dirs[0].join("cpu.stat")).ok()?;
            let usec: f64 = stat.lines().find_map(|l| l.strip_prefix("usage_usec "))?.trim().parse().ok()?;
            return Some(usec / 1e6);
        }
        self.dirs
            .iter()
            .find_map(|d| fs::read_to_string(d.join("cpuacct.usage")).ok())
            .and_then(|ns| ns.trim().parse::<f64>().ok())
            .map(|ns| ns / 1e9)
    }

    /// Periods in which the quota throttled the group.
    pub fn throttled(&self) -> Option<u64> {
        let stat = fs::read_to_string(self.dirs[0].join("cpu.stat")).ok()?;
        stat.lines().find_map(|l| l.strip_prefix("nr_throttled "))?.trim().parse().ok()
    }
}

impl Drop for QuotaGroup {
    fn drop(&mut self) {
        self.procs.clear();
        for dir in &self.dirs {
            // Members are gone by now (the attempt was reaped and swept); if not, end them so the
            // directory can go.
            for _ in 0..50 {
                if fs::remove_dir(dir).is_ok() || !dir.exists() {
                    break;
                }
                crate::exec::cgroup::kill_all(dir);
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
    }
}

fn open_append(path: &Path) -> std::io::Result<OwnedFd> {
    Ok(fs::OpenOptions::new().append(true).open(path)?.into())
}
