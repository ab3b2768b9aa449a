//! Tests of the comparison: two snapshots with known differences, each found in its group with
//! the right applicability, and what is never compared.

use super::*;
use crate::snapshot::{LimitPair, Python};

fn here() -> Here {
    Here {
        cpus: 8,
        hard_limits: [("nofile".to_owned(), Some(65536)), ("nproc".to_owned(), Some(1000))].into_iter().collect(),
        locales: Some(["c", "c.utf8", "posix", "en_US.utf8"].into_iter().map(str::to_owned).collect()),
        zoneinfo: None,
    }
}

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// This machine: 8 CPUs, nofile 65536, Europe-less, requests 2.31.0.
fn local() -> Snapshot {
    Snapshot {
        cpus_online: Some(8),
        cpus_allowed: Some("0-7".into()),
        rlimits: [
            ("nofile".to_owned(), LimitPair { soft: Some(65536), hard: Some(65536) }),
            ("nproc".to_owned(), LimitPair { soft: Some(1000), hard: Some(1000) }),
            ("stack".to_owned(), LimitPair { soft: Some(8 << 20), hard: None }),
        ]
        .into_iter()
        .collect(),
        timezone: Some("Etc/UTC".into()),
        env: env(&[
            ("PATH", "/usr/bin:/bin"),
            ("HOME", "/"),
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C.UTF-8"),
            ("SHLVL", "1"),
            ("LOCAL_ONLY", "x"),
            ("FLAKEHUNT_CELL", "baseline"),
        ]),
        python: Some(Python {
            program: "python3".into(),
            version: Some("3.11.7".into()),
            implementation: Some("cpython".into()),
            packages: env(&[("requests", "2.31.0"), ("pytest", "8.0.0"), ("local-tool", "1.0")]),
            ..Python::default()
        }),
        ..Snapshot::default()
    }
}

/// The CI machine: 2 CPUs, nofile 1024, LC_ALL=C, TZ America/New_York, a fixture variable,
/// a redacted token, a path that does not exist here, requests 2.28.2.
fn ci() -> Snapshot {
    let mut ci = local();
    ci.cpus_online = Some(2);
    ci.cpus_allowed = Some("0-1".into());
    ci.rlimits.insert("nofile".into(), LimitPair { soft: Some(1024), hard: Some(65536) });
    ci.rlimits.insert("nproc".into(), LimitPair { soft: Some(1000), hard: Some(4000) });
    ci.rlimits.insert("stack".into(), LimitPair { soft: None, hard: None });
    ci.timezone = Some("America/New_York".into());
    ci.env = env(&[
        ("PATH", "/opt/hostedtoolcache/flakehunt-nowhere/bin:/usr/bin"),
        ("HOME", "/"),
        ("LANG", "C.UTF-8"),
        ("LC_ALL", "de_DE.UTF-8"),
        ("LC_MESSAGES", "C"),
        ("SHLVL", "3"),
        ("FIXTURE_MODE", "ci"),
        ("GITHUB_TOKEN", "<redacted>"),
        ("TZ", "America/New_York"),
        ("PYTHONHASHSEED", "0"),
        ("FLAKEHUNT_CELL", "other"),
    ]);
    let python = ci.python.as_mut().unwrap();
    python.packages = env(&[("requests", "2.28.2"), ("pytest", "8.0.0"), ("urllib3", "1.26.18")]);
    ci
}

fn find<'a>(drift: &'a Drift, name: &str) -> &'a Difference {
    drift.differences.iter().find(|d| d.name == name).unwrap_or_else(|| panic!("no difference {name}: {drift:#?}"))
}

#[test]
fn each_known_difference_is_in_its_group_with_its_applicability() {
    let drift = compare(&local(), &ci(), &Here { zoneinfo: Some(zoneinfo()), ..here() });
    let fixture = find(&drift, "FIXTURE_MODE");
    assert_eq!(fixture.group, Group::Environment);
    assert_eq!(fixture.change, Some(Change::Env { name: "FIXTURE_MODE".into(), value: Some("ci".into()) }));
    let local_only = find(&drift, "LOCAL_ONLY");
    assert_eq!(local_only.change, Some(Change::Env { name: "LOCAL_ONLY".into(), value: None }), "unset there");

    let nofile = find(&drift, "nofile");
    assert_eq!(nofile.group, Group::Limits);
    assert_eq!(nofile.change, Some(Change::Rlimit { name: "nofile".into(), value: Some(1024) }));
    let nproc = find(&drift, "nproc");
    assert!(!nproc.applicable(), "only the hard limit differs");
    let stack = find(&drift, "stack");
    assert_eq!(
        stack.change,
        Some(Change::Rlimit { name: "stack".into(), value: None }),
        "unlimited fits an unlimited hard limit"
    );

    let tz = find(&drift, "TZ");
    assert_eq!(tz.group, Group::LocaleTime);
    assert_eq!(tz.change, Some(Change::Env { name: "TZ".into(), value: Some("America/New_York".into()) }));
    let lc_all = find(&drift, "LC_ALL");
    assert_eq!(lc_all.group, Group::LocaleTime);
    assert!(!lc_all.applicable(), "de_DE.UTF-8 is not installed here");
    assert!(lc_all.advice.as_deref().unwrap().contains("locale-gen de_DE.UTF-8"), "{lc_all:?}");
    let messages = find(&drift, "LC_MESSAGES");
    assert_eq!(messages.change, Some(Change::Env { name: "LC_MESSAGES".into(), value: Some("C".into()) }));

    let cpus = find(&drift, "CPUs");
    assert_eq!(cpus.group, Group::CpusMemory);
    assert_eq!(cpus.change, Some(Change::Cpus { count: 2 }));

    let requests = find(&drift, "requests");
    assert_eq!(requests.group, Group::Python);
    assert!(!requests.applicable());
    assert_eq!((requests.a.as_deref(), requests.b.as_deref()), (Some("2.31.0"), Some("2.28.2")));
    assert!(!find(&drift, "urllib3").applicable());
    let pip = drift.remedies.iter().find(|r| r.group == Group::Python).expect("a pip line");
    assert!(pip.text.contains("python3.11 -m venv"), "{}", pip.text);
    assert!(pip.text.contains("pip install 'requests==2.28.2' 'urllib3==1.26.18'"), "{}", pip.text);
    assert!(pip.text.contains("pip uninstall -y local-tool"), "{}", pip.text);
    let seed = find(&drift, "PYTHONHASHSEED");
    assert_eq!((seed.group, seed.applicable()), (Group::Python, true));

    let path = find(&drift, "PATH");
    assert!(!path.applicable());
    assert!(path.advice.as_deref().unwrap().contains("/opt/hostedtoolcache/flakehunt-nowhere/bin"), "{path:?}");
    let token = find(&drift, "GITHUB_TOKEN");
    assert!(!token.applicable(), "a redacted value cannot be applied");

    for never in ["SHLVL", "FLAKEHUNT_CELL", "HOME", "LANG", "pytest"] {
        assert!(drift.differences.iter().all(|d| d.name != never), "{never} is not a difference");
    }
    let groups: Vec<Group> = drift.differences.iter().map(|d| d.group).collect();
    assert!(groups.windows(2).all(|w| w[0] <= w[1]), "grouped in order");
}

/// A time zone database with the zones the tests name.
fn zoneinfo() -> std::path::PathBuf {
    static DB: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let db = DB.get_or_init(|| {
        let db = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(db.path().join("America")).unwrap();
        std::fs::write(db.path().join("America/New_York"), "TZif").unwrap();
        db
    });
    db.path().to_owned()
}

#[test]
fn what_this_machine_cannot_do_is_not_applicable_with_what_to_do_instead() {
    let mut ci = ci();
    ci.cpus_online = Some(16);
    ci.cpus_allowed = Some("0-15".into());
    ci.rlimits.insert("nofile".into(), LimitPair { soft: Some(1 << 20), hard: Some(1 << 20) });
    ci.timezone = Some("Mars/Olympus_Mons".into());
    let drift = compare(&local(), &ci, &Here { zoneinfo: Some(zoneinfo()), ..here() });
    let cpus = find(&drift, "CPUs");
    assert!(!cpus.applicable() && cpus.advice.as_deref().unwrap().contains("more CPUs"), "{cpus:?}");
    let nofile = find(&drift, "nofile");
    assert!(!nofile.applicable() && nofile.advice.as_deref().unwrap().contains("hard limit (65536)"), "{nofile:?}");
    let tz = find(&drift, "TZ");
    assert!(!tz.applicable() && tz.advice.as_deref().unwrap().contains("tzdata"), "{tz:?}");
}

#[test]
fn a_snapshot_compared_with_itself_has_no_difference_and_utc_has_many_names() {
    let drift = compare(&local(), &local(), &here());
    assert!(drift.differences.is_empty(), "{drift:#?}");
    let mut utc = local();
    utc.timezone = Some("UTC".into());
    assert!(compare(&local(), &utc, &here()).differences.is_empty(), "Etc/UTC and UTC are one zone");
    assert!(render::text(&drift, "a", "b").contains("no differences"));
}

#[test]
fn a_quota_below_the_cpu_count_is_what_the_other_could_use() {
    let mut ci = local();
    ci.cgroup_limits.cpu_quota = Some(1.5);
    let drift = compare(&local(), &ci, &here());
    let cpus = find(&drift, "CPUs");
    assert_eq!(cpus.change, Some(Change::Cpus { count: 2 }));
    assert!(cpus.advice.as_deref().unwrap().contains("CPUQuota=150%"), "{cpus:?}");
}

#[test]
fn the_renderings_mark_each_difference_and_count_them() {
    let drift = compare(&local(), &ci(), &Here { zoneinfo: Some(zoneinfo()), ..here() });
    let text = render::text(&drift, "local.json", "ci.json");
    assert!(text.starts_with("A: local.json\nB: ci.json\n"), "{text}");
    assert!(text.contains("\nlimits ("), "{text}");
    assert!(text.contains("  + nofile"), "{text}");
    assert!(text.contains("  - LC_ALL"), "{text}");
    assert!(text.contains("not applicable here: locale de_DE.UTF-8 is not installed here"), "{text}");
    assert!(text.contains("(unset) -> "), "{text}");
    let json = render::json(&drift, "local.json", "ci.json");
    let total = json["differences"].as_u64().unwrap();
    assert_eq!(json["applicable"].as_u64().unwrap() + json["not_applicable"].as_u64().unwrap(), total);
    let limits = json["groups"].as_array().unwrap().iter().find(|g| g["group"] == "limits").unwrap();
    let nofile = limits["differences"].as_array().unwrap().iter().find(|d| d["name"] == "nofile").unwrap();
    assert_eq!(nofile["applicable"], true);
    assert_eq!(nofile["change"], serde_json::json!({"kind": "rlimit", "name": "nofile", "value": 1024}));
}

#[test]
fn snapshots_are_read_from_files_and_records_and_anything_else_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ci.json");
    std::fs::write(&file, serde_json::to_string(&ci()).unwrap()).unwrap();
    assert_eq!(read_snapshot(&file).unwrap(), ci());
    let record = dir.path().join("rec");
    std::fs::create_dir(&record).unwrap();
    assert!(matches!(read_snapshot(&record), Err(ReadError::NoSnapshot(_))));
    std::fs::copy(&file, record.join("snapshot.json")).unwrap();
    assert_eq!(read_snapshot(&record).unwrap(), ci());
    std::fs::write(&file, "{\"cells\": []}").unwrap();
    assert!(matches!(read_snapshot(&file), Err(ReadError::NotSnapshot(_))));
    std::fs::write(&file, "not json").unwrap();
    assert!(matches!(read_snapshot(&file), Err(ReadError::NotSnapshot(_))));
    assert!(matches!(read_snapshot(&dir.path().join("missing.json")), Err(ReadError::Io { .. })));
}
