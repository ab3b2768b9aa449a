//! What the kernel decides about a run besides the process's own limits: scheduler settings,
//! the CPU frequency policy, the control group's CPU and memory limits, and the file systems
//! the working directory and `TMPDIR` live on. Read from `/proc` and `/sys` only, no command.
//! Main types: [`CpuFrequency`], [`Mount`], [`CgroupLimits`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::text::{non_empty, read, unescape_mount_path};

/// The `/proc/sys` settings that change how a race plays out, by sysctl name: the scheduler's
/// knobs, address-space randomisation, NUMA balancing, memory overcommit, the pid and thread
/// limits. Every `kernel.sched_*` file present is read besides these.
const SYSCTLS: &[&str] = &[
    "kernel.numa_balancing",
    "kernel.randomize_va_space",
    "kernel.pid_max",
    "kernel.threads-max",
    "kernel.yama.ptrace_scope",
    "vm.overcommit_memory",
    "vm.swappiness",
    "fs.inotify.max_user_watches",
    "fs.inotify.max_user_instances",
    "fs.file-max",
];

/// `/sys` files read besides, under the names they are stored as.
const SYSFS: &[(&str, &str)] = &[
    ("transparent_hugepage", "/sys/kernel/mm/transparent_hugepage/enabled"),
    ("clocksource", "/sys/devices/system/clocksource/clocksource0/current_clocksource"),
    ("smt", "/sys/devices/system/cpu/smt/control"),
    // Readable by root only (debugfs); the kernel's version string says PREEMPT otherwise.
    ("preempt", "/sys/kernel/debug/sched/preempt"),
];

/// The kernel's scheduler-relevant settings, by name (`kernel.sched_autogroup_enabled`,
/// `transparent_hugepage`, ...). A setting that cannot be read is left out.
pub(super) fn kernel_settings(kernel_version: Option<&str>) -> BTreeMap<String, String> {
    let mut settings = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir("/proc/sys/kernel") {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("sched_") {
                if let Some(value) = read(entry.path()).and_then(|v| non_empty(&v)) {
                    settings.insert(format!("kernel.{name}"), squeeze(&value));
                }
            }
        }
    }
    for name in SYSCTLS {
        let path = Path::new("/proc/sys").join(name.replace('.', "/"));
        if let Some(value) = read(path).and_then(|v| non_empty(&v)) {
            settings.insert((*name).to_owned(), squeeze(&value));
        }
    }
    for (name, path) in SYSFS {
        if let Some(value) = read(path).and_then(|v| non_empty(&v)) {
            settings.insert((*name).to_owned(), selected(&value));
        }
    }
    if !settings.contains_key("preempt") {
        if let Some(model) = kernel_version.and_then(preempt_model) {
            settings.insert("preempt".to_owned(), model.to_owned());
        }
    }
    settings
}

/// Whitespace runs as one space (`fs.file-nr`-like files separate fields with tabs).
fn squeeze(value: &str) -> String {
    value.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The bracketed choice of a sysfs selection file (`always [madvise] never` -> `madvise`),
/// else the whole value.
fn selected(value: &str) -> String {
    value
        .split_whitespace()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .map_or_else(|| squeeze(value), str::to_owned)
}

/// The preemption model named in a kernel version string (`#1 SMP PREEMPT_DYNAMIC ...`).
fn preempt_model(version: &str) -> Option<&'static str> {
    let words: Vec<&str> = version.split_whitespace().collect();
    if words.contains(&"PREEMPT_RT") {
        Some("rt")
    } else if words.contains(&"PREEMPT_DYNAMIC") {
        Some("dynamic")
    } else if words.contains(&"PREEMPT") {
        Some("full")
    } else {
        None
    }
}

/// How the CPUs' frequency is managed: the same for every CPU on most machines, so each
/// field holds the distinct values found over the cpufreq policies.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CpuFrequency {
    /// `scaling_driver` (`intel_pstate`, `acpi-cpufreq`, `amd-pstate`).
    pub driver: Option<String>,
    /// The distinct `scaling_governor`s (`performance`, `powersave`, `schedutil`).
    pub governors: Vec<String>,
    /// The distinct `energy_performance_preference`s, where the driver has them.
    pub energy_preferences: Vec<String>,
    /// The highest `scaling_max_freq`, in kHz.
    pub max_khz: Option<u64>,
    /// Whether boost (turbo) is on: `cpufreq/boost`, or the inverse of `intel_pstate/no_turbo`.
    pub boost: Option<bool>,
}

/// The frequency policy from `/sys/devices/system/cpu/cpufreq`; `None` where the machine has
/// none (most virtual machines and containers).
pub(super) fn cpu_frequency() -> Option<CpuFrequency> {
    let base = Path::new("/sys/devices/system/cpu/cpufreq");
    let mut policies: Vec<PathBuf> = std::fs::read_dir(base)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("policy")))
        .collect();
    policies.sort();
    let mut freq = CpuFrequency::default();
    let value = |p: &Path, file: &str| read(p.join(file)).and_then(|v| non_empty(&v));
    for policy in &policies {
        freq.driver = freq.driver.take().or_else(|| value(policy, "scaling_driver"));
        for (file, list) in
            [("scaling_governor", &mut freq.governors), ("energy_performance_preference", &mut freq.energy_preferences)]
        {
            if let Some(v) = value(policy, file) {
                if !list.contains(&v) {
                    list.push(v);
                }
            }
        }
        if let Some(khz) = value(policy, "scaling_max_freq").and_then(|v| v.parse::<u64>().ok()) {
            freq.max_khz = Some(freq.max_khz.map_or(khz, |m| m.max(khz)));
        }
    }
    freq.governors.sort();
    freq.energy_preferences.sort();
    freq.boost = read(base.join("boost"))
        .and_then(|v| match v.trim() {
            "1" => Some(true),
            "0" => Some(false),
            _ => None,
        })
        .or_else(|| {
            read("/sys/devices/system/cpu/intel_pstate/no_turbo").and_then(|v| match v.trim() {
                "1" => Some(false),
                "0" => Some(true),
                _ => None,
            })
        });
    (freq != CpuFrequency::default()).then_some(freq)
}

/// The file system a directory lives on.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Mount {
    /// The directory asked about, resolved.
    pub path: String,
    /// Where its file system is mounted.
    pub mount_point: String,
    /// The file system type (`ext4`, `tmpfs`, `overlay`, `btrfs`, `nfs4`).
    pub fstype: String,
    /// The mounted device or source (`/dev/nvme0n1p2`, `overlay`, `server:/export`).
    pub source: String,
    /// Mount options, per-mount and super-block ones together, sorted (`noexec`, `ro`, ...).
    pub options: Vec<String>,
}

/// The mounts of the working directory and of the temporary directory (`TMPDIR`, else
/// `/tmp`), keyed `working directory` and `TMPDIR`.
pub(super) fn mounts(cwd: Option<&Path>) -> BTreeMap<String, Mount> {
    let Some(mountinfo) = read("/proc/self/mountinfo") else { return BTreeMap::new() };
    let table = parse_mountinfo(&mountinfo);
    let mut out = BTreeMap::new();
    let dirs = [("working directory", cwd.map(Path::to_owned)), ("TMPDIR", Some(std::env::temp_dir()))];
    for (role, dir) in dirs {
        let Some(dir) = dir.and_then(|d| std::fs::canonicalize(d).ok()) else { continue };
        if let Some(mount) = mount_of(&table, &dir) {
            out.insert(role.to_owned(), mount);
        }
    }
    out
}

/// One line of `/proc/self/mountinfo`: `36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3
/// /dev/root rw,errors=continue` (proc(5)).
#[derive(Debug, Clone, PartialEq, Eq)]
struct MountLine {
    mount_point: String,
    fstype: String,
    source: String,
    options: Vec<String>,
}

fn parse_mountinfo(text: &str) -> Vec<MountLine> {
    text.lines()
        .filter_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            let fields: Vec<&str> = before.split_whitespace().collect();
            let after: Vec<&str> = after.split_whitespace().collect();
            let (mount_point, mount_options) = (fields.get(4)?, fields.get(5)?);
            let (fstype, source) = (after.first()?, after.get(1).copied().unwrap_or(""));
            let mut options: Vec<String> = mount_options
                .split(',')
                .chain(after.get(2).copied().unwrap_or("").split(','))
                .filter(|o| !o.is_empty())
                .map(str::to_owned)
                .collect();
            options.sort();
            options.dedup();
            Some(MountLine {
                mount_point: unescape_mount_path(mount_point),
                fstype: (*fstype).to_owned(),
                source: unescape_mount_path(source),
                options,
            })
        })
        .collect()
}

/// The mount `dir` is on: the last mounted of those with the longest mount point that
/// contains it (a later mount over the same point hides the earlier).
fn mount_of(table: &[MountLine], dir: &Path) -> Option<Mount> {
    let best = table
        .iter()
        .enumerate()
        .filter(|(_, m)| dir.starts_with(&m.mount_point))
        .max_by_key(|(i, m)| (Path::new(&m.mount_point).components().count(), *i))?
        .1;
    Some(Mount {
        path: dir.display().to_string(),
        mount_point: best.mount_point.clone(),
        fstype: best.fstype.clone(),
        source: best.source.clone(),
        options: best.options.clone(),
    })
}

/// The CPU and memory limits of this process's control group: what a container's `--cpus`
/// and `--memory` set, invisible to `nproc` and `/proc/meminfo`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CgroupLimits {
    /// The CPU quota in CPUs (`cpu.max` `150000 100000` is 1.5); `None` when unlimited.
    pub cpu_quota: Option<f64>,
    /// The memory limit in bytes (`memory.max`, v1 `memory.limit_in_bytes`); `None` when
    /// unlimited.
    pub memory_limit_bytes: Option<u64>,
}

/// The limits of the control group named by `membership` (the lines of `/proc/self/cgroup`),
/// found through `mounts` (`/proc/mounts`).
pub(super) fn cgroup_limits(membership: &[String], mounts: &str) -> CgroupLimits {
    let mut limits = CgroupLimits::default();
    let mount_of = |controller: Option<&str>| -> Option<String> {
        mounts.lines().find_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let [_, point, fstype, options, ..] = f[..] else { return None };
            let fits = match controller {
                None => fstype == "cgroup2",
                Some(c) => fstype == "cgroup" && options.split(',').any(|o| o == c),
            };
            fits.then(|| unescape_mount_path(point))
        })
    };
    for line in membership {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else { continue };
        let path = path.trim_start_matches('/');
        if controllers.is_empty() {
            let Some(root) = mount_of(None) else { continue };
            let dir = Path::new(&root).join(path);
            limits.cpu_quota = limits.cpu_quota.or_else(|| read(dir.join("cpu.max")).and_then(|v| cpu_max(&v)));
            limits.memory_limit_bytes =
                limits.memory_limit_bytes.or_else(|| read(dir.join("memory.max")).and_then(|v| v.trim().parse().ok()));
            continue;
        }
        for controller in controllers.split(',') {
            let Some(root) = mount_of(Some(controller)) else { continue };
            let dir = Path::new(&root).join(path);
            match controller {
                "cpu" => {
                    let quota = read(dir.join("cpu.cfs_quota_us")).and_then(|v| v.trim().parse::<i64>().ok());
                    let period = read(dir.join("cpu.cfs_period_us")).and_then(|v| v.trim().parse::<i64>().ok());
                    if let (Some(q), Some(p)) = (quota, period) {
                        if q > 0 && p > 0 {
                            limits.cpu_quota = Some(q as f64 / p as f64);
                        }
                    }
                }
                "memory" => {
                    // v1 writes "unlimited" as a huge page-aligned number.
                    let limit = read(dir.join("memory.limit_in_bytes")).and_then(|v| v.trim().parse::<u64>().ok());
                    limits.memory_limit_bytes = limits.memory_limit_bytes.or(limit.filter(|&l| l < (1 << 62)));
                }
                _ => {}
            }
        }
    }
    limits
}

/// `cpu.max` (`max 100000` or `150000 100000`) in CPUs.
fn cpu_max(text: &str) -> Option<f64> {
    let mut words = text.split_whitespace();
    let quota: f64 = words.next()?.parse().ok()?;
    let period: f64 = words.next().unwrap_or("100000").parse().ok()?;
    (period > 0.0).then(|| quota / period)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysfs_selections_and_preemption_models() {
        assert_eq!(selected("always [madvise] never\n"), "madvise");
        assert_eq!(selected("tsc\n"), "tsc");
        assert_eq!(preempt_model("#1 SMP PREEMPT_DYNAMIC Debian 6.1.0"), Some("dynamic"));
        assert_eq!(preempt_model("#1 SMP PREEMPT_RT"), Some("rt"));
        assert_eq!(preempt_model("#1 SMP PREEMPT Tue"), Some("full"));
        assert_eq!(preempt_model("#1 SMP Tue"), None);
    }

    #[test]
    fn the_mount_of_a_directory_is_the_longest_prefix_mounted_last() {
        let table = parse_mountinfo(
            "22 1 0:21 / / rw,relatime - ext4 /dev/vda rw\n\
             25 22 0:23 / /tmp rw,nosuid - tmpfs tmpfs rw,size=100k\n\
             26 22 0:24 / /tmp rw - overlay overlay rw,lowerdir=/a\n\
             27 22 0:25 / /tmpfoo rw - xfs /dev/vdb rw\n\
             28 22 0:26 / /with\\040space ro,noexec - nfs4 server:/export rw\n\
             garbage line\n",
        );
        assert_eq!(table.len(), 5);
        let m = mount_of(&table, Path::new("/tmp/x")).unwrap();
        assert_eq!(
            (m.mount_point.as_str(), m.fstype.as_str()),
            ("/tmp", "overlay"),
            "the later mount hides the earlier"
        );
        assert_eq!(mount_of(&table, Path::new("/tmpfo")).unwrap().fstype, "ext4", "a prefix of a name is no parent");
        let nfs = mount_of(&table, Path::new("/with space/d")).unwrap();
        assert_eq!((nfs.fstype.as_str(), nfs.source.as_str()), ("nfs4", "server:/export"));
        assert_eq!(nfs.options, ["noexec", "ro", "rw"]);
    }

    #[test]
    fn cgroup_limits_from_v1_and_v2_files() {
        assert_eq!(cpu_max("max 100000\n"), None);
        assert_eq!(cpu_max("150000 100000\n"), Some(1.5));
        let dir = tempfile::tempdir().unwrap();
        let v2 = dir.path().join("v2");
        std::fs::create_dir_all(v2.join("ci/job")).unwrap();
        std::fs::write(v2.join("ci/job/cpu.max"), "200000 100000\n").unwrap();
        std::fs::write(v2.join("ci/job/memory.max"), "1073741824\n").unwrap();
        let mounts = format!("cgroup2 {} cgroup2 rw 0 0\n", v2.display());
        let limits = cgroup_limits(&["0::/ci/job".to_owned()], &mounts);
        assert_eq!(limits, CgroupLimits { cpu_quota: Some(2.0), memory_limit_bytes: Some(1 << 30) });

        let v1 = dir.path().join("v1");
        std::fs::create_dir_all(v1.join("cpu/docker/c1")).unwrap();
        std::fs::create_dir_all(v1.join("memory/docker/c1")).unwrap();
        std::fs::write(v1.join("cpu/docker/c1/cpu.cfs_quota_us"), "50000\n").unwrap();
        std::fs::write(v1.join("cpu/docker/c1/cpu.cfs_period_us"), "100000\n").unwrap();
        std::fs::write(v1.join("memory/docker/c1/memory.limit_in_bytes"), "9223372036854771712\n").unwrap();
        let mounts =
            format!("cgroup {0}/cpu cgroup rw,cpu,cpuacct 0 0\ncgroup {0}/memory cgroup rw,memory 0 0\n", v1.display());
        let membership = ["3:cpu,cpuacct:/docker/c1".to_owned(), "4:memory:/docker/c1".to_owned()];
        let limits = cgroup_limits(&membership, &mounts);
        assert_eq!(limits, CgroupLimits { cpu_quota: Some(0.5), memory_limit_bytes: None }, "v1's unlimited is none");
    }

    #[test]
    fn kernel_settings_on_this_machine_hold_the_scheduler_files() {
        let settings = kernel_settings(None);
        if Path::new("/proc/sys/kernel/sched_rr_timeslice_ms").exists() {
            assert!(settings.contains_key("kernel.sched_rr_timeslice_ms"), "{settings:?}");
        }
        if Path::new("/proc/sys/kernel/randomize_va_space").exists() {
            assert!(settings.contains_key("kernel.randomize_va_space"), "{settings:?}");
        }
    }
}
