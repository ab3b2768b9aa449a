//! "Fails there, passes here": what differs between two snapshots, grouped, and for each
//! difference whether flakehunt can make this machine look like the other one (an environment
//! variable, a soft limit, the locale, the time zone, fewer CPUs, `PYTHONHASHSEED`: a
//! [`Change`]) or what the user could do instead. `flakehunt diff` prints it; `matrix --against`
//! hunts over its changes. Pure but for [`Here`], the facts of this machine it is given. Main
//! function: [`compare`]; main types: [`Drift`], [`Difference`].

pub mod here;
pub mod render;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use here::Here;

use crate::plan::Setting;
pub use crate::schema::against::Change;
use crate::snapshot::{LimitPair, Snapshot};

/// The groups differences are shown in, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Group {
    /// Environment variables (but the locale's, `TZ` and `PYTHONHASHSEED`).
    Environment,
    /// Resource limits.
    Limits,
    /// The locale variables and the time zone.
    LocaleTime,
    /// CPUs and memory.
    CpusMemory,
    /// The Python interpreter, its distributions, `PYTHONHASHSEED`.
    Python,
    /// Go, Rust and the tool version lines.
    Toolchains,
    /// The kernel, its settings, the OS, the CPU frequency policy.
    Kernel,
    /// The file systems of the working directory and `TMPDIR`.
    FileSystems,
    /// The machine itself (its CPU model).
    Machine,
}

impl Group {
    /// The group's heading.
    pub fn title(self) -> &'static str {
        match self {
            Group::Environment => "environment variables",
            Group::Limits => "limits",
            Group::LocaleTime => "locale and time zone",
            Group::CpusMemory => "CPUs and memory",
            Group::Python => "interpreter and packages",
            Group::Toolchains => "toolchains",
            Group::Kernel => "kernel",
            Group::FileSystems => "file systems",
            Group::Machine => "machine",
        }
    }
}

/// A machine difference as the setting a matrix cell applies, and as a cell's name writes it.
pub trait ChangeSetting {
    /// How the change is written in a cell's name (`TZ=UTC`, `nofile=1024`, `cpus=2`).
    fn text(&self) -> String;

    /// The overlay setting it is, for the changes an overlay holds.
    fn setting(&self) -> Option<Setting>;
}

impl ChangeSetting for Change {
    fn text(&self) -> String {
        match self {
            Change::Env { .. } | Change::Rlimit { .. } => {
                let s = self.setting().expect("an env or rlimit change is a setting");
                format!("{}={}", s.name(), s.value_text())
            }
            Change::Cpus { count } => format!("cpus={count}"),
        }
    }

    fn setting(&self) -> Option<Setting> {
        match self {
            Change::Env { name, value } => Some(Setting::Env { name: name.clone(), value: value.clone() }),
            Change::Rlimit { name, value } => Some(Setting::Rlimit { name: name.clone(), value: *value }),
            Change::Cpus { .. } => None,
        }
    }
}

/// One thing that differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Difference {
    /// Its group.
    pub group: Group,
    /// What differs (`TZ`, `nofile`, `requests`, `CPUs`).
    pub name: String,
    /// Its value in the first snapshot (`None`: absent there).
    pub a: Option<String>,
    /// Its value in the second.
    pub b: Option<String>,
    /// How flakehunt applies the second's value here; `None`: not applicable here.
    pub change: Option<Change>,
    /// Why it is not applicable and what to do instead, or a note on how it is applied.
    pub advice: Option<String>,
}

impl Difference {
    /// Whether flakehunt can apply it here.
    pub fn applicable(&self) -> bool {
        self.change.is_some()
    }
}

/// What to do about a group's differences as a whole (the `pip install` line of a scratch
/// virtualenv with the other machine's versions).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Remedy {
    /// The group it is for.
    pub group: Group,
    /// What to do, with the commands.
    pub text: String,
}

/// Everything that differs between two snapshots, A (the machine to change: normally this one)
/// and B (the machine to look like).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Drift {
    /// The differences, by group, then in the order found.
    pub differences: Vec<Difference>,
    /// What to do about groups as a whole.
    pub remedies: Vec<Remedy>,
}

impl Drift {
    /// The applicable differences.
    pub fn applicable(&self) -> impl Iterator<Item = &Difference> {
        self.differences.iter().filter(|d| d.applicable())
    }
}

/// Why a snapshot could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be read.
    #[error("cannot read {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is no snapshot.
    #[error("{0} is not a flakehunt snapshot: give a file `flakehunt snapshot --output` wrote, or a record directory")]
    NotSnapshot(PathBuf),
    /// A record directory without a snapshot.
    #[error("{0} holds no snapshot.json (a hunt writes it when it ends): give another record, or a snapshot file")]
    NoSnapshot(PathBuf),
}

impl crate::error_class::Classify for ReadError {
    fn class(&self) -> crate::error_class::ErrorClass {
        use crate::error_class::ErrorClass;
        match self {
            ReadError::Io { source, .. } => ErrorClass::of_named_input(source),
            ReadError::NotSnapshot(_) | ReadError::NoSnapshot(_) => ErrorClass::Usage,
        }
    }
}

/// The snapshot at `path`: a file `flakehunt snapshot` wrote, or a record directory's
/// `snapshot.json`.
pub fn read_snapshot(path: &Path) -> Result<Snapshot, ReadError> {
    let file = if path.is_dir() {
        let file = path.join(crate::record::SNAPSHOT_FILE);
        if !file.is_file() {
            return Err(ReadError::NoSnapshot(path.to_owned()));
        }
        file
    } else {
        path.to_owned()
    };
    let text = std::fs::read_to_string(&file).map_err(|source| ReadError::Io { path: file.clone(), source })?;
    // Every field of a snapshot is optional, so any object would read as one: it must have
    // what every snapshot has.
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|_| ReadError::NotSnapshot(file.clone()))?;
    let known = ["rlimits", "env", "kernel", "hostname"];
    if !value.as_object().is_some_and(|o| known.iter().any(|k| o.contains_key(*k))) {
        return Err(ReadError::NotSnapshot(file));
    }
    let snapshot: Snapshot = serde_json::from_value(value).map_err(|_| ReadError::NotSnapshot(file))?;
    Ok(snapshot.redacted())
}

/// Environment variables never compared: the shell's and the session's own bookkeeping, which
/// differs between any two shells and says nothing about a run.
const SESSION_VARIABLES: &[&str] = &[
    "_",
    "SHLVL",
    "PWD",
    "OLDPWD",
    "PS1",
    "PS2",
    "PROMPT_COMMAND",
    "COLUMNS",
    "LINES",
    "HISTFILE",
    "HISTSIZE",
    "HISTFILESIZE",
    "MAIL",
    "LS_COLORS",
    "TERM_SESSION_ID",
    "WINDOWID",
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "SSH_CLIENT",
    "SSH_CONNECTION",
    "SSH_TTY",
    "DBUS_SESSION_BUS_ADDRESS",
    "XDG_SESSION_ID",
    "INVOCATION_ID",
    "JOURNAL_STREAM",
    "TMUX",
    "TMUX_PANE",
    "STY",
];

/// `go env` variables that are environment variables too, so setting one for the target
/// changes what `go` does there.
const GO_SETTABLE: &[&str] = &["GOFLAGS", "CGO_ENABLED", "GOEXPERIMENT", "GOAMD64", "GOARM", "GOARM64"];

/// `go env` variables not compared: paths that differ wherever Go is installed.
const GO_PATHS: &[&str] = &["GOROOT", "GOMOD"];

/// Names of time zones that are all UTC.
const UTC_NAMES: &[&str] = &["UTC", "Etc/UTC", "Etc/Universal", "Universal", "Zulu", "Etc/Zulu", "UCT", "Etc/UCT"];

/// What differs between `a` and `b`, and what flakehunt can do here (`here`) about each.
pub fn compare(a: &Snapshot, b: &Snapshot, here: &Here) -> Drift {
    let mut drift = Drift::default();
    environment(a, b, &mut drift);
    limits(a, b, here, &mut drift);
    locale_and_time(a, b, here, &mut drift);
    cpus_and_memory(a, b, here, &mut drift);
    python(a, b, &mut drift);
    toolchains(a, b, &mut drift);
    kernel(a, b, &mut drift);
    file_systems(a, b, &mut drift);
    machine(a, b, &mut drift);
    drift.differences.sort_by_key(|d| d.group);
    drift
}

/// Whether `name` is one of the locale's variables.
fn is_locale(name: &str) -> bool {
    name == "LANG" || name == "LANGUAGE" || name.starts_with("LC_")
}

/// The environment variables of a snapshot that are compared as variables.
fn compared_env(s: &Snapshot) -> impl Iterator<Item = (&String, &String)> {
    s.env.iter().filter(|(name, _)| {
        !name.starts_with("FLAKEHUNT_")
            && !SESSION_VARIABLES.contains(&name.as_str())
            && !is_locale(name)
            && *name != "TZ"
            && *name != "PYTHONHASHSEED"
    })
}

fn environment(a: &Snapshot, b: &Snapshot, drift: &mut Drift) {
    let a_env: BTreeMap<&String, &String> = compared_env(a).collect();
    let b_env: BTreeMap<&String, &String> = compared_env(b).collect();
    let names: BTreeSet<&String> = a_env.keys().chain(b_env.keys()).copied().collect();
    for name in names {
        let (va, vb) = (a_env.get(name).copied(), b_env.get(name).copied());
        if va == vb {
            continue;
        }
        drift.differences.push(env_difference(Group::Environment, name, va, vb));
    }
}

/// A difference in an environment variable: applicable unless the other's value is redacted
/// or names a path this machine does not have.
fn env_difference(group: Group, name: &str, a: Option<&String>, b: Option<&String>) -> Difference {
    let mut d = Difference { group, name: name.to_owned(), a: a.cloned(), b: b.cloned(), change: None, advice: None };
    match b {
        None => d.change = Some(Change::Env { name: name.to_owned(), value: None }),
        Some(v) if v.contains(crate::redact::REDACTED) => {
            d.advice =
                Some("its value is redacted in the snapshot: give it yourself as a matrix dimension (-D)".to_owned());
        }
        Some(v) => match missing_path(v) {
            Some(path) => {
                d.advice = Some(format!(
                    "names {path}, which does not exist here: try a local equivalent with `flakehunt matrix -D {name}=VALUE`"
                ));
            }
            None => d.change = Some(Change::Env { name: name.to_owned(), value: Some(v.clone()) }),
        },
    }
    d
}

/// The first absolute path in `value` (the whole value, or an item of a `:`-separated list)
/// that does not exist here.
fn missing_path(value: &str) -> Option<&str> {
    value
        .split(':')
        .map(str::trim)
        .filter(|p| p.starts_with('/') && !p.starts_with("//"))
        .find(|p| std::fs::symlink_metadata(p).is_err())
}

fn limit_text(l: &LimitPair) -> String {
    let one = |v: Option<u64>| v.map_or_else(|| "unlimited".to_owned(), |v| v.to_string());
    format!("soft {}, hard {}", one(l.soft), one(l.hard))
}

fn limits(a: &Snapshot, b: &Snapshot, here: &Here, drift: &mut Drift) {
    for (name, lb) in &b.rlimits {
        let Some(la) = a.rlimits.get(name) else { continue };
        if la == lb {
            continue;
        }
        let mut d = Difference {
            group: Group::Limits,
            name: name.clone(),
            a: Some(limit_text(la)),
            b: Some(limit_text(lb)),
            change: None,
            advice: None,
        };
        if la.soft == lb.soft {
            d.advice = Some(format!(
                "only the hard limit differs; flakehunt sets soft limits: a program that raises its own (Go raises nofile to the hard limit) sees the other's with `prlimit --{name}={}:{} -- COMMAND`",
                lb.soft.map_or("unlimited".into(), |v| v.to_string()),
                lb.hard.map_or("unlimited".into(), |v| v.to_string())
            ));
        } else {
            let hard = here.hard_limits.get(name).copied().flatten();
            let fits = match (lb.soft, hard) {
                (_, None) => true,
                (Some(soft), Some(hard)) => soft <= hard,
                (None, Some(_)) => false,
            };
            if fits {
                d.change = Some(Change::Rlimit { name: name.clone(), value: lb.soft });
            } else {
                d.advice = Some(format!(
                    "the other's soft limit is above this machine's hard limit ({}): raise it as root (`ulimit -H`, /etc/security/limits.conf)",
                    hard.map_or("unlimited".into(), |h| h.to_string())
                ));
            }
        }
        drift.differences.push(d);
    }
}

/// The locale variables of a snapshot: its environment's, else the fields older snapshots
/// hold.
fn locale_env(s: &Snapshot) -> BTreeMap<String, String> {
    let mut vars: BTreeMap<String, String> =
        s.env.iter().filter(|(n, _)| is_locale(n)).map(|(n, v)| (n.clone(), v.clone())).collect();
    for (name, value) in [("LANG", &s.locale.lang), ("LC_ALL", &s.locale.lc_all), ("LC_CTYPE", &s.locale.lc_ctype)] {
        if let Some(v) = value {
            vars.entry(name.to_owned()).or_insert_with(|| v.clone());
        }
    }
    vars
}

fn locale_and_time(a: &Snapshot, b: &Snapshot, here: &Here, drift: &mut Drift) {
    let (la, lb) = (locale_env(a), locale_env(b));
    let names: BTreeSet<&String> = la.keys().chain(lb.keys()).collect();
    for name in names {
        let (va, vb) = (la.get(name), lb.get(name));
        if va == vb {
            continue;
        }
        let mut d = env_difference(Group::LocaleTime, name, va, vb);
        if let (Some(Change::Env { value: Some(v), .. }), false) = (d.change.clone(), name == "LANGUAGE") {
            if here.has_locale(&v) == Some(false) {
                d.change = None;
                d.advice = Some(format!(
                    "locale {v} is not installed here: install it (Debian: `locale-gen {v}` after adding it to /etc/locale.gen, or the locales-all package)"
                ));
            }
        }
        drift.differences.push(d);
    }
    let zone =
        |s: &Snapshot| s.timezone.clone().map(|z| if UTC_NAMES.contains(&z.as_str()) { "UTC".to_owned() } else { z });
    let (Some(za), Some(zb)) = (zone(a), zone(b)) else { return };
    if za == zb {
        return;
    }
    let mut d = Difference {
        group: Group::LocaleTime,
        name: "TZ".to_owned(),
        a: a.timezone.clone(),
        b: b.timezone.clone(),
        change: None,
        advice: None,
    };
    let tz = b.timezone.clone().unwrap_or(zb);
    if tz.contains(crate::redact::REDACTED) {
        d.advice = Some("the other's time zone is redacted in its snapshot".to_owned());
    } else if here.has_zone(&tz) {
        d.change = Some(Change::Env { name: "TZ".to_owned(), value: Some(tz) });
    } else {
        d.advice = Some(format!("no time zone {tz} here: install the time zone database (Debian: tzdata)"));
    }
    drift.differences.push(d);
}

/// The CPUs a snapshot's process could use: its affinity, capped by its control group's
/// quota (rounded up), and the quota itself.
fn usable_cpus(s: &Snapshot) -> Option<(u32, Option<f64>)> {
    let allowed = s.cpus_allowed.as_deref().and_then(crate::snapshot::cpu_list_len).or(s.cpus_online)?;
    let allowed = u32::try_from(allowed).ok()?;
    let quota = s.cgroup_limits.cpu_quota.filter(|q| *q < f64::from(allowed));
    let usable = quota.map_or(allowed, |q| (q.ceil() as u32).max(1));
    Some((usable, quota))
}

fn cpus_text(usable: u32, quota: Option<f64>) -> String {
    match quota {
        Some(q) => format!("{usable} (a quota of {q} CPUs)"),
        None => usable.to_string(),
    }
}

fn cpus_and_memory(a: &Snapshot, b: &Snapshot, here: &Here, drift: &mut Drift) {
    if let (Some((ua, qa)), Some((ub, qb))) = (usable_cpus(a), usable_cpus(b)) {
        if (ua, qa) != (ub, qb) {
            let mut d = Difference {
                group: Group::CpusMemory,
                name: "CPUs".to_owned(),
                a: Some(cpus_text(ua, qa)),
                b: Some(cpus_text(ub, qb)),
                change: None,
                advice: None,
            };
            let here_cpus = u32::try_from(here.cpus).unwrap_or(u32::MAX);
            if ub < here_cpus {
                d.change = Some(Change::Cpus { count: ub });
                d.advice = Some(match qb {
                    Some(q) if q.fract() != 0.0 => format!(
                        "pinned to {ub} CPUs; for the quota's fraction run flakehunt under `systemd-run --user --scope -p CPUQuota={}% --`",
                        (q * 100.0).round()
                    ),
                    _ => format!("pinned to {ub} CPUs, so runtimes size their thread pools as they do there"),
                });
            } else if ub > here_cpus {
                d.advice = Some(format!("the other has more CPUs than the {here_cpus} this machine lets flakehunt use: run there, or on a larger machine"));
            } else {
                d.advice = Some(format!("this machine already lets flakehunt use {here_cpus} CPUs"));
            }
            drift.differences.push(d);
        }
    }
    let memory = |s: &Snapshot| match (s.memory_total_bytes, s.cgroup_limits.memory_limit_bytes) {
        (Some(t), Some(l)) => Some(t.min(l)),
        (t, l) => t.or(l),
    };
    if let (Some(ma), Some(mb)) = (memory(a), memory(b)) {
        // Totals differ by a few pages between boots; a tenth is a different machine.
        if ma.abs_diff(mb) > ma.max(mb) / 10 {
            let advice = if mb < ma {
                format!(
                    "flakehunt does not limit memory: run it under `systemd-run --user --scope -p MemoryMax={mb} --`"
                )
            } else {
                "the other has more memory: run there, or on a larger machine".to_owned()
            };
            drift.differences.push(Difference {
                group: Group::CpusMemory,
                name: "memory".to_owned(),
                a: Some(gib(ma)),
                b: Some(gib(mb)),
                change: None,
                advice: Some(advice),
            });
        }
    }
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

fn python(a: &Snapshot, b: &Snapshot, drift: &mut Drift) {
    let seed = |s: &Snapshot| s.env.get("PYTHONHASHSEED").cloned();
    if seed(a) != seed(b) {
        let mut d = env_difference(Group::Python, "PYTHONHASHSEED", seed(a).as_ref(), seed(b).as_ref());
        if seed(b).is_none() {
            d.advice = Some("unset there: each interpreter hashes strings with a random seed".to_owned());
        }
        drift.differences.push(d);
    }
    // A snapshot that did not look (a hunt of a shell script reads no interpreter) says
    // nothing about Python; one that looked and found none, or a broken one, does.
    let (Some(pa), Some(pb)) = (&a.python, &b.python) else { return };
    let (pa, pb) = (Some(pa).filter(|p| p.error.is_none()), Some(pb).filter(|p| p.error.is_none()));
    let (pa, pb) = match (pa, pb) {
        (Some(pa), Some(pb)) => (pa, pb),
        (None, None) => return,
        (pa, pb) => {
            let text = |p: Option<&crate::snapshot::Python>| {
                p.map(|p| format!("{} {}", p.program, p.version.clone().unwrap_or_default()))
            };
            drift.differences.push(Difference {
                group: Group::Python,
                name: "interpreter".to_owned(),
                a: text(pa),
                b: text(pb),
                change: None,
                advice: Some("only one machine has a Python interpreter that could be read".to_owned()),
            });
            return;
        }
    };
    let mut push = |name: &str, va: Option<String>, vb: Option<String>, advice: Option<String>| {
        drift.differences.push(Difference {
            group: Group::Python,
            name: name.to_owned(),
            a: va,
            b: vb,
            change: None,
            advice,
        });
    };
    if pa.version != pb.version || pa.implementation != pb.implementation {
        let version = pb.version.clone().unwrap_or_default();
        push(
            "Python",
            pa.version.as_ref().map(|v| format!("{} {v}", pa.implementation.clone().unwrap_or_default())),
            pb.version.as_ref().map(|v| format!("{} {v}", pb.implementation.clone().unwrap_or_default())),
            Some(format!(
                "run that interpreter: `pyenv install {version}`, then give it with --python $(pyenv root)/versions/{version}/bin/python"
            )),
        );
    }
    let names: BTreeSet<&String> = pa.packages.keys().chain(pb.packages.keys()).collect();
    let (mut pins, mut removals) = (Vec::new(), Vec::new());
    for name in names {
        let (va, vb) = (pa.packages.get(name), pb.packages.get(name));
        if va == vb {
            continue;
        }
        match vb {
            Some(v) if !v.contains(crate::redact::REDACTED) => pins.push(format!("'{name}=={v}'")),
            Some(_) => {}
            None => removals.push(name.clone()),
        }
        push(name, va.cloned(), vb.cloned(), None);
    }
    if !pins.is_empty() || !removals.is_empty() {
        let python = match pb.version.as_deref().and_then(|v| v.rsplit_once('.')) {
            Some((minor, _)) => format!("python{minor}"),
            None => "python3".to_owned(),
        };
        let venv = "/tmp/flakehunt-other";
        let mut text = format!(
            "packages cannot be changed under a running hunt; to try the other's versions, install your project into a scratch virtualenv as that machine does, then pin them: `{python} -m venv {venv}`"
        );
        if !pins.is_empty() {
            text.push_str(&format!(" && `{venv}/bin/pip install {}`", pins.join(" ")));
        }
        if !removals.is_empty() {
            text.push_str(&format!(" && `{venv}/bin/pip uninstall -y {}`", removals.join(" ")));
        }
        text.push_str(&format!(", and hunt with --python {venv}/bin/python"));
        drift.remedies.push(Remedy { group: Group::Python, text });
    }
}

fn toolchains(a: &Snapshot, b: &Snapshot, drift: &mut Drift) {
    let mut push =
        |name: &str, va: Option<String>, vb: Option<String>, change: Option<Change>, advice: Option<String>| {
            drift.differences.push(Difference {
                group: Group::Toolchains,
                name: name.to_owned(),
                a: va,
                b: vb,
                change,
                advice,
            });
        };
    if let (Some(ga), Some(gb)) = (&a.go, &b.go) {
        let names: BTreeSet<&String> = ga.env.keys().chain(gb.env.keys()).collect();
        for name in names.into_iter().filter(|n| !GO_PATHS.contains(&n.as_str())) {
            let (va, vb) = (ga.env.get(name), gb.env.get(name));
            if va == vb {
                continue;
            }
            // Set there in the environment: the environment's group has it already.
            if b.env.contains_key(name) || a.env.contains_key(name) {
                continue;
            }
            let redacted = vb.is_some_and(|v| v.contains(crate::redact::REDACTED));
            if GO_SETTABLE.contains(&name.as_str()) && !redacted {
                push(
                    name,
                    va.cloned(),
                    vb.cloned(),
                    Some(Change::Env { name: name.clone(), value: vb.cloned() }),
                    Some("set in the target's environment: takes effect where the target runs go (go test, go run); a --go-test binary is built before".to_owned()),
                );
            } else {
                let advice = match name.as_str() {
                    "GOVERSION" => {
                        vb.map(|v| format!("use that Go: `go install golang.org/dl/{v}@latest && {v} download`"))
                    }
                    _ => None,
                };
                push(name, va.cloned(), vb.cloned(), None, advice);
            }
        }
        let modules: BTreeSet<&String> = ga.modules.keys().chain(gb.modules.keys()).collect();
        let mut gets = Vec::new();
        for module in modules {
            let (va, vb) = (ga.modules.get(module), gb.modules.get(module));
            if va == vb {
                continue;
            }
            if let Some(v) = vb.and_then(|v| v.split_whitespace().next()) {
                gets.push(format!("{module}@{v}"));
            }
            push(module, va.cloned(), vb.cloned(), None, None);
        }
        if !gets.is_empty() {
            drift.remedies.push(Remedy {
                group: Group::Toolchains,
                text: format!(
                    "Go modules cannot be changed under a running hunt; to try the other's versions in a scratch copy: `git worktree add /tmp/flakehunt-other && cd /tmp/flakehunt-other && go get {}`",
                    gets.join(" ")
                ),
            });
        }
    }
    if let (Some(ra), Some(rb)) = (&a.rust, &b.rust) {
        if ra.release.is_some() && rb.release.is_some() && (ra.release != rb.release || ra.host != rb.host) {
            let text = |r: &crate::snapshot::Rust| {
                Some(format!("{} {}", r.release.clone().unwrap_or_default(), r.host.clone().unwrap_or_default()))
            };
            let release = rb.release.clone().unwrap_or_default();
            push(
                "rustc",
                text(ra),
                text(rb),
                None,
                Some(format!("use that compiler: `rustup toolchain install {release}`, then `cargo +{release} test`")),
            );
        }
        if let (Some(la), Some(lb)) = (&ra.cargo_lock, &rb.cargo_lock) {
            if la.digest != lb.digest {
                let names: BTreeSet<&String> = la.packages.keys().chain(lb.packages.keys()).collect();
                let mut updates = Vec::new();
                let mut any = false;
                for name in names {
                    let (va, vb) = (la.packages.get(name), lb.packages.get(name));
                    if va == vb {
                        continue;
                    }
                    any = true;
                    if let Some(v) = vb.filter(|v| !v.contains(',') && !v.contains(' ')) {
                        updates.push(format!("cargo update -p {name} --precise {v}"));
                    }
                    push(name, va.cloned(), vb.cloned(), None, None);
                }
                if !any {
                    push(
                        "Cargo.lock",
                        Some(la.digest[..12].to_owned()),
                        Some(lb.digest[..12].to_owned()),
                        None,
                        Some("the lock files differ, though not in any dependency's version".to_owned()),
                    );
                }
                if !updates.is_empty() {
                    drift.remedies.push(Remedy {
                        group: Group::Toolchains,
                        text: format!(
                            "crates cannot be changed under a running hunt; to try the other's versions in a scratch copy of the project: `{}` (or copy its Cargo.lock)",
                            updates.join(" && ")
                        ),
                    });
                }
            }
        }
    }
    let tools: BTreeSet<&String> = a.tools.keys().filter(|t| b.tools.contains_key(*t)).collect();
    for tool in tools {
        let (va, vb) = (&a.tools[tool], &b.tools[tool]);
        if va != vb && va.is_some() && vb.is_some() {
            push(tool, va.clone(), vb.clone(), None, None);
        }
    }
}

fn kernel(a: &Snapshot, b: &Snapshot, drift: &mut Drift) {
    let mut push = |name: &str, va: Option<String>, vb: Option<String>, advice: Option<String>| {
        drift.differences.push(Difference {
            group: Group::Kernel,
            name: name.to_owned(),
            a: va,
            b: vb,
            change: None,
            advice,
        });
    };
    let other = "a different system: run on a machine with the other's".to_owned();
    for (name, va, vb) in [("kernel", &a.kernel, &b.kernel), ("OS", &a.os, &b.os), ("architecture", &a.arch, &b.arch)] {
        if va != vb && va.is_some() && vb.is_some() {
            push(name, va.clone(), vb.clone(), Some(other.clone()));
        }
    }
    let names: BTreeSet<&String> = a.kernel_settings.keys().chain(b.kernel_settings.keys()).collect();
    for name in names {
        let (va, vb) = (a.kernel_settings.get(name), b.kernel_settings.get(name));
        if va == vb || va.is_none() || vb.is_none() {
            continue;
        }
        let v = vb.cloned().unwrap_or_default();
        let advice = match name.as_str() {
            "transparent_hugepage" => format!("as root: `echo {v} > /sys/kernel/mm/transparent_hugepage/enabled`"),
            "smt" => format!("as root: `echo {v} > /sys/devices/system/cpu/smt/control`"),
            "clocksource" => {
                format!("as root: `echo {v} > /sys/devices/system/clocksource/clocksource0/current_clocksource`")
            }
            "preempt" => "another preemption model: a kernel built (or booted, with preempt=) otherwise".to_owned(),
            sysctl => format!("as root: `sysctl -w {sysctl}={v}`"),
        };
        push(name, va.cloned(), vb.cloned(), Some(advice));
    }
    if let (Some(fa), Some(fb)) = (&a.cpu_frequency, &b.cpu_frequency) {
        if fa.governors != fb.governors {
            let governor = fb.governors.first().cloned().unwrap_or_default();
            push(
                "CPU frequency governor",
                Some(fa.governors.join(", ")),
                Some(fb.governors.join(", ")),
                Some(format!("as root: `cpupower frequency-set -g {governor}`")),
            );
        }
        if fa.boost != fb.boost && fa.boost.is_some() && fb.boost.is_some() {
            let on = |b: Option<bool>| Some(if b == Some(true) { "on" } else { "off" }.to_owned());
            push(
                "CPU boost",
                on(fa.boost),
                on(fb.boost),
                Some("as root: /sys/devices/system/cpu/cpufreq/boost (or intel_pstate/no_turbo)".to_owned()),
            );
        }
    }
}

/// Mount options that change what a test sees.
const MOUNT_FLAGS: &[&str] =
    &["ro", "noexec", "nosuid", "nodev", "sync", "dirsync", "noatime", "relatime", "strictatime", "lazytime"];

fn file_systems(a: &Snapshot, b: &Snapshot, drift: &mut Drift) {
    for (role, mb) in &b.mounts {
        let Some(ma) = a.mounts.get(role) else { continue };
        let flags = |m: &crate::snapshot::Mount| {
            m.options.iter().filter(|o| MOUNT_FLAGS.contains(&o.as_str())).cloned().collect::<Vec<_>>()
        };
        let text = |m: &crate::snapshot::Mount| {
            let f = flags(m);
            if f.is_empty() {
                m.fstype.clone()
            } else {
                format!("{} ({})", m.fstype, f.join(","))
            }
        };
        if ma.fstype == mb.fstype && flags(ma) == flags(mb) {
            continue;
        }
        let advice = if role == "TMPDIR" {
            match mb.fstype.as_str() {
                "tmpfs" => "give TMPDIR a directory on a tmpfs, e.g. `TMPDIR=$(mktemp -d -p /dev/shm) flakehunt ...`"
                    .to_owned(),
                fs => format!("give TMPDIR a directory on a {fs} file system"),
            }
        } else {
            format!("run from a checkout on a {} file system", mb.fstype)
        };
        drift.differences.push(Difference {
            group: Group::FileSystems,
            name: role.clone(),
            a: Some(text(ma)),
            b: Some(text(mb)),
            change: None,
            advice: Some(advice),
        });
    }
}

fn machine(a: &Snapshot, b: &Snapshot, drift: &mut Drift) {
    if a.cpu_model != b.cpu_model && a.cpu_model.is_some() && b.cpu_model.is_some() {
        drift.differences.push(Difference {
            group: Group::Machine,
            name: "CPU model".to_owned(),
            a: a.cpu_model.clone(),
            b: b.cpu_model.clone(),
            change: None,
            advice: Some("another CPU: run on one like it".to_owned()),
        });
    }
}

#[cfg(test)]
mod tests;
