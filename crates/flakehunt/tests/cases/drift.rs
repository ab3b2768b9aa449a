//! End-to-end tests of "fails there, passes here": `flakehunt snapshot` (the interpreter's
//! distributions, Go's modules, Rust's lock file, the kernel and file systems, redacted).

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::harness::{bin, flakehunt, read_json, skip};

/// A virtualenv (no pip: made in a moment) whose site-packages holds `packages` laid out as
/// pip lays them out: a `NAME-VERSION.dist-info` with its `METADATA`.
fn virtualenv(root: &Path, packages: &[(&str, &str)]) -> Option<PathBuf> {
    let dir = root.join("venv");
    let made = Command::new("python3").args(["-m", "venv", "--without-pip"]).arg(&dir).status();
    if !made.is_ok_and(|s| s.success()) {
        return None;
    }
    let lib = std::fs::read_dir(dir.join("lib")).ok()?.flatten().next()?.path().join("site-packages");
    for (name, version) in packages {
        let info = lib.join(format!("{}-{version}.dist-info", name.replace('-', "_")));
        std::fs::create_dir_all(&info).unwrap();
        std::fs::write(info.join("METADATA"), format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"))
            .unwrap();
    }
    Some(dir.join("bin/python"))
}

/// A Go module in `dir` that requires a module replaced by a local directory, so that its
/// module list is complete offline.
fn go_module(dir: &Path) {
    std::fs::create_dir_all(dir.join("dep")).unwrap();
    std::fs::write(
        dir.join("go.mod"),
        "module example.com/app\n\ngo 1.19\n\nrequire example.com/dep v1.2.3\n\nreplace example.com/dep => ./dep\n",
    )
    .unwrap();
    std::fs::write(dir.join("dep/go.mod"), "module example.com/dep\n\ngo 1.19\n").unwrap();
}

fn has_go() -> bool {
    Command::new("go").arg("version").output().is_ok_and(|o| o.status.success())
}

#[test]
fn a_snapshot_holds_the_interpreters_distributions_gos_modules_and_the_lock_file_and_no_secret() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(python) = virtualenv(tmp.path(), &[("requests", "2.31.0"), ("typing-extensions", "4.9.0")]) else {
        return skip("snapshot distributions", "python3 -m venv does not work here");
    };
    let project = tmp.path().join("project");
    go_module(&project);
    std::fs::write(
        project.join("Cargo.lock"),
        "version = 3\n\n[[package]]\nname = \"serde\"\nversion = \"1.0.200\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\n",
    )
    .unwrap();
    let out = flakehunt()
        .args(["snapshot", "--output", "ci-env.json", "--python"])
        .arg(&python)
        .current_dir(&project)
        .env("SECRET_TOKEN", "hunter2")
        .env("GOPROXY", "https://ci:hunter2@proxy.example/go")
        .env("TMPDIR", tmp.path())
        .output();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty(), "--output writes the file, not stdout");
    let text = std::fs::read_to_string(project.join("ci-env.json")).unwrap();
    assert!(!text.contains("hunter2"), "a secret reached the snapshot");
    let s: Value = serde_json::from_str(&text).unwrap();

    let py = &s["python"];
    assert_eq!(py["chosen_by"], "--python");
    assert_eq!(py["packages"]["requests"], "2.31.0", "{py}");
    assert_eq!(py["packages"]["typing-extensions"], "4.9.0", "{py}");
    assert!(py["version"].as_str().is_some_and(|v| v.starts_with('3')), "{py}");
    assert_ne!(py["prefix"], py["base_prefix"], "a virtualenv's prefix is its own");

    let lock = &s["rust"]["cargo_lock"];
    assert_eq!(lock["packages"]["serde"], "1.0.200");
    assert_eq!(lock["digest"].as_str().map(str::len), Some(64));

    assert!(s["kernel_settings"].as_object().is_some_and(|k| !k.is_empty()), "{}", s["kernel_settings"]);
    for role in ["working directory", "TMPDIR"] {
        assert!(s["mounts"][role]["fstype"].as_str().is_some_and(|f| !f.is_empty()), "{}", s["mounts"]);
    }
    assert!(s["capture_seconds"].as_f64().is_some_and(|t| t > 0.0));
    assert_eq!(s["env"]["SECRET_TOKEN"], "<redacted>");

    if has_go() {
        let go = &s["go"];
        assert_eq!(go["modules"]["example.com/dep"], "v1.2.3 => ./dep", "{go}");
        assert!(go["env"]["GOVERSION"].as_str().is_some_and(|v| v.starts_with("go")), "{go}");
        assert_eq!(go["env"]["GOPROXY"], "https://ci:<redacted>@proxy.example/go", "a URL's password: {go}");
    } else {
        skip("snapshot go modules", "go is not installed");
    }
}

#[test]
fn a_module_list_that_needs_the_network_is_said_to_be_missing_offline() {
    if !has_go() {
        return skip("snapshot offline go modules", "go is not installed");
    }
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(tmp.path().join("go.mod"), "module example.com/app\n\ngo 1.19\n\nrequire example.com/gone v1.0.0\n")
        .unwrap();
    let out = flakehunt().args(["snapshot", "--go-test"]).arg(&pkg).current_dir(tmp.path()).output();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    let error = s["go"]["modules_error"].as_str().unwrap_or_default();
    assert!(error.contains("did not work offline"), "{}", s["go"]);
    assert!(s["go"]["dir"].as_str().is_some_and(|d| d.ends_with("pkg")), "{}", s["go"]);

    let missing = flakehunt().args(["snapshot", "--go-test", "no/such/dir"]).output();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("--go-test no/such/dir: no such directory"));
}

#[test]
fn a_hunts_snapshot_reads_the_interpreter_it_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(python) = virtualenv(tmp.path(), &[("flaky-dep", "0.3.1")]) else {
        return skip("hunt snapshot python", "python3 -m venv does not work here");
    };
    let record = tmp.path().join("rec");
    let out = flakehunt()
        .args(["sweep", "--runs", "1", "--profiles", "default", "-q", "--record"])
        .arg(&record)
        .arg("--")
        .arg(&python)
        .args(["-c", "pass"])
        .output();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let s = read_json(&record.join("snapshot.json"));
    assert_eq!(s["python"]["chosen_by"], "the target");
    assert_eq!(s["python"]["packages"]["flaky-dep"], "0.3.1", "{}", s["python"]);
    assert!(s["go"].is_null(), "a Python hunt runs no go command");
}

/// Runs `flakehunt snapshot --output FILE` in `dir` through `sh -c 'ulimit -n NOFILE; ...'`
/// with `env` added and `python` as the interpreter, pinned to `cpus` when given.
fn snapshot_with(dir: &Path, file: &str, nofile: u32, env: &[(&str, &str)], python: Option<&Path>, cpus: Option<&str>) {
    let python_option = if python.is_some() { " --python \"$1\"" } else { "" };
    let script = format!("ulimit -n {nofile} && exec \"$0\" snapshot --output {file}{python_option}");
    let mut command = match cpus {
        Some(list) => {
            let mut c = Command::new("taskset");
            c.args(["-c", list, "sh", "-c", &script]);
            c
        }
        None => {
            let mut c = Command::new("sh");
            c.args(["-c", &script]);
            c
        }
    };
    command.arg(bin()).args(python).current_dir(dir).env_remove("TZ").env_remove("LC_ALL").env_remove("LC_TIME");
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

fn locale_installed(name: &str) -> bool {
    let list = Command::new("locale").arg("-a").output().map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    let normal = |l: &str| l.to_ascii_lowercase().replace('-', "");
    list.is_ok_and(|l| l.lines().any(|x| normal(x) == normal(name)))
}

fn difference<'a>(diff: &'a Value, group: &str, name: &str) -> &'a Value {
    let group = diff["groups"].as_array().unwrap().iter().find(|g| g["group"] == group);
    let group = group.unwrap_or_else(|| panic!("no group {group:?} in {diff:#}"));
    group["differences"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {group:#}"))
}

#[test]
fn diff_lists_each_known_difference_in_its_group_with_its_applicability_and_no_secret() {
    let tmp = tempfile::tempdir().unwrap();
    let here_dir = tmp.path().join("here");
    let ci_dir = tmp.path().join("ci");
    std::fs::create_dir_all(&here_dir).unwrap();
    std::fs::create_dir_all(&ci_dir).unwrap();
    let (Some(here_py), Some(ci_py)) =
        (virtualenv(&here_dir, &[("requests", "2.31.0")]), virtualenv(&ci_dir, &[("requests", "2.28.2")]))
    else {
        return skip("diff", "python3 -m venv does not work here");
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pin = (cpus > 1).then_some("0");
    snapshot_with(tmp.path(), "here.json", 4096, &[], Some(&here_py), None);
    snapshot_with(
        tmp.path(),
        "ci.json",
        1024,
        &[
            ("FIXTURE_MODE", "ci"),
            ("TZ", "America/New_York"),
            ("LC_ALL", "C"),
            ("LC_TIME", "de_DE.UTF-8"),
            ("SECRET_TOKEN", "hunter2"),
            ("DATABASE_URL", "postgres://app:hunter2@db/app"),
        ],
        Some(&ci_py),
        pin,
    );
    let out = flakehunt().args(["diff", "--json", "here.json", "ci.json"]).current_dir(tmp.path()).output();
    assert_eq!(out.status.code(), Some(1), "they differ: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!text.contains("hunter2"), "a secret reached the output");
    let diff: Value = serde_json::from_str(&text).unwrap();

    let fixture = difference(&diff, "environment", "FIXTURE_MODE");
    assert_eq!((fixture["applicable"].as_bool(), fixture["b"].as_str()), (Some(true), Some("ci")));
    let nofile = difference(&diff, "limits", "nofile");
    assert_eq!(nofile["applicable"], true);
    assert_eq!(nofile["change"], serde_json::json!({"kind": "rlimit", "name": "nofile", "value": 1024}));
    let tz = difference(&diff, "locale-time", "TZ");
    assert_eq!(tz["change"], serde_json::json!({"kind": "env", "name": "TZ", "value": "America/New_York"}));
    assert_eq!(difference(&diff, "locale-time", "LC_ALL")["applicable"], true, "C is always installed");
    let lc_time = difference(&diff, "locale-time", "LC_TIME");
    assert_eq!(lc_time["applicable"].as_bool(), Some(locale_installed("de_DE.UTF-8")), "{lc_time}");
    let requests = difference(&diff, "python", "requests");
    assert_eq!((requests["a"].as_str(), requests["b"].as_str()), (Some("2.31.0"), Some("2.28.2")));
    assert_eq!(requests["applicable"], false);
    let pip = diff["remedies"].as_array().unwrap().iter().find(|r| r["group"] == "python").expect("a pip line");
    assert!(pip["text"].as_str().unwrap().contains("pip install 'requests==2.28.2'"), "{pip}");
    assert_eq!(difference(&diff, "environment", "SECRET_TOKEN")["applicable"], false, "its value is redacted");
    if pin.is_some() {
        let cpus = difference(&diff, "cpus-memory", "CPUs");
        assert_eq!(cpus["change"], serde_json::json!({"kind": "cpus", "count": 1}));
    } else {
        skip("diff CPUs", "this machine has one CPU");
    }

    let out = flakehunt().args(["diff", "here.json", "ci.json"]).current_dir(tmp.path()).output();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("hunter2"));
    assert!(text.contains("  + nofile") && text.contains("  - requests"), "{text}");
    assert!(text.contains("not applicable here"), "{text}");

    let same = flakehunt().args(["diff", "here.json", "here.json"]).current_dir(tmp.path()).output();
    assert_eq!(same.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&same.stdout).contains("no differences"));
}

#[test]
fn diff_refuses_what_is_not_a_snapshot_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("x.json"), "{\"cells\": []}").unwrap();
    let out = flakehunt().args(["diff", "x.json", "x.json"]).current_dir(tmp.path()).output();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("x.json is not a flakehunt snapshot"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let out = flakehunt().args(["diff", "missing.json"]).current_dir(tmp.path()).output();
    assert_eq!(
        out.status.code(),
        Some(2),
        "a path named that does not exist: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A target that fails only with the other machine's `TZ` and a `nofile` of 1024 or less.
const TZ_AND_NOFILE: &str = "[ \"$TZ\" = America/New_York ] && [ \"$(ulimit -n)\" -le 1024 ]";

/// Writes the CI's snapshot into `dir/ci.json`: `TZ`, `nofile` 1024, `LC_ALL=C`, CI variables,
/// an unrelated variable, a secret, one CPU when there are more, and a distribution's version
/// (through a virtualenv) where `python3 -m venv` works.
fn ci_snapshot(dir: &Path) {
    let ci = dir.join("ci-venv");
    std::fs::create_dir_all(&ci).unwrap();
    let python = virtualenv(&ci, &[("requests", "2.28.2")]);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    snapshot_with(
        dir,
        "ci.json",
        1024,
        &[
            ("TZ", "America/New_York"),
            ("LC_ALL", "C"),
            ("CI", "true"),
            ("GITHUB_ACTIONS", "true"),
            ("FIXTURE_UNRELATED", "1"),
            ("SECRET_TOKEN", "hunter2"),
            ("DATABASE_URL", "postgres://app:hunter2@db/app"),
        ],
        python.as_deref(),
        (cpus > 1).then_some("0"),
    );
}

/// `flakehunt matrix --against SNAPSHOT --json ARGS -- fail-when.sh COND`, in `dir`, with
/// `nofile` raised above 1024 first (the hunt's own machine).
fn against(dir: &Path, snapshot: &str, args: &[&str], cond: &str) -> (i32, Value, String) {
    let script = "ulimit -n 4096 && exec \"$@\"";
    let out = Command::new("sh")
        .args(["-c", script, "sh"])
        .arg(bin())
        .args(["matrix", "--against", snapshot, "--json", "-q"])
        .args(args)
        .arg("--")
        .arg(crate::harness::fixture("fail-when.sh"))
        .arg(cond)
        .current_dir(dir)
        .env_remove("TZ")
        .env_remove("LC_ALL")
        // The snapshots' CI variables differ from this machine's wherever the tests run.
        .env_remove("CI")
        .env_remove("GITHUB_ACTIONS")
        .env("OTHER_PASSWORD", "hunter2-here")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let summary = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), summary, stderr)
}

/// Every file of a record, as text, to look for secrets in.
fn record_text(dir: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            text.push_str(&record_text(&path));
        } else {
            text.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()));
        }
    }
    text
}

#[test]
fn matrix_against_the_ci_finds_exactly_tz_and_nofile_as_the_smallest_overlay() {
    let tmp = tempfile::tempdir().unwrap();
    ci_snapshot(tmp.path());
    let (code, s, stderr) =
        against(tmp.path(), "ci.json", &["--runs", "3", "-j", "2", "--record", "rec"], TZ_AND_NOFILE);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(s["verdict"], "reproduced", "{s:#}");
    let d = &s["details"]["against"];
    assert_eq!(d["outcome"], "minimal", "{d:#}");
    assert_eq!(d["minimal_overlay"], serde_json::json!({"TZ": "America/New_York", "nofile": "1024"}));
    let text = s["verdict_text"].as_str().unwrap();
    assert!(text.contains("fails with nofile=1024 and TZ=America/New_York together"), "{text}");
    // The smallest overlay's cell failed twice: the twice rule, not one lucky failure.
    let minimal = s["cells"].as_array().unwrap().iter().find(|c| c["minimal_overlay"].is_object()).unwrap();
    assert!(minimal["failures"].as_u64().unwrap() >= 2, "{minimal:#}");
    assert_eq!(minimal["reproduced"], true);
    assert_eq!(s["cells"][0]["name"], "baseline");
    assert_eq!(s["cells"][0]["failures"], 0, "this machine as it is passes");
    // What was tried and what could not be.
    let tried: Vec<&str> = d["tried"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    for name in ["TZ", "nofile", "LC_ALL", "CI", "FIXTURE_UNRELATED"] {
        assert!(tried.contains(&name), "{name} was tried: {tried:?}");
    }
    let untried: Vec<&str> = d["untried"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(untried.contains(&"SECRET_TOKEN"), "a redacted value cannot be tried: {untried:?}");
    assert!(!tried.contains(&"SECRET_TOKEN"));
    if d["untried"].as_array().unwrap().iter().any(|t| t["name"] == "requests") {
        assert!(s["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("pip install 'requests==2.28.2'")));
    }
    let notes: Vec<&str> = s["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert!(notes.iter().any(|n| n.starts_with("tried: ") && n.contains("TZ (")), "{notes:?}");
    assert!(notes.iter().any(|n| n.starts_with("not tried: SECRET_TOKEN")), "{notes:?}");
    // No secret of either machine in the output or the record.
    let record = record_text(&tmp.path().join("rec"));
    for text in [&stderr, &s.to_string(), &record] {
        assert!(!text.contains("hunter2"), "a secret was written");
    }
    // The search is a pure function of the record: `report` says the same.
    let report =
        Command::new(bin()).args(["report", "rec", "--format", "json"]).current_dir(tmp.path()).output().unwrap();
    let again: Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(again["details"]["against"]["minimal_overlay"], d["minimal_overlay"]);
    assert_eq!(again["verdict_text"], s["verdict_text"]);
}

#[test]
fn matrix_against_a_machine_like_this_one_or_differences_that_do_not_matter_reports_no_reproduction() {
    let tmp = tempfile::tempdir().unwrap();
    // This same machine: the snapshot taken as the hunt runs.
    let out = Command::new("sh")
        .args(["-c", "ulimit -n 4096 && exec \"$0\" snapshot --output same.json"])
        .arg(bin())
        .current_dir(tmp.path())
        .env_remove("TZ")
        .env_remove("LC_ALL")
        // The snapshots' CI variables differ from this machine's wherever the tests run.
        .env_remove("CI")
        .env_remove("GITHUB_ACTIONS")
        .env("OTHER_PASSWORD", "hunter2-here")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let (code, s, stderr) = against(tmp.path(), "same.json", &["--runs", "3", "--record", "same"], TZ_AND_NOFILE);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(s["verdict"], "not-reproduced", "{s:#}");
    assert_eq!(s["details"]["against"]["outcome"], "nothing-to-try", "{:#}", s["details"]["against"]);
    assert_eq!(s["attempts"], 0, "nothing to try runs nothing");

    // Differences that do not matter to the target: tried, and cleared.
    snapshot_with(
        tmp.path(),
        "other.json",
        4096,
        &[("CI", "true"), ("LC_ALL", "C"), ("FIXTURE_UNRELATED", "1"), ("OTHER_PASSWORD", "hunter2-here")],
        None,
        None,
    );
    let (code, s, stderr) = against(tmp.path(), "other.json", &["--runs", "3", "--record", "other"], TZ_AND_NOFILE);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(s["verdict"], "not-reproduced", "{s:#}");
    assert_eq!(s["details"]["against"]["outcome"], "not-reproduced");
    assert!(s["cells"].as_array().unwrap().iter().all(|c| c["failures"] == 0), "{:#}", s["cells"]);
    assert_eq!(s["cells"].as_array().unwrap().len(), 2, "this machine and every difference, no search");
}

#[test]
fn a_killed_matrix_against_resumes_to_the_same_smallest_overlay() {
    let tmp = tempfile::tempdir().unwrap();
    ci_snapshot(tmp.path());
    // Stops (and waits to be killed) on its first attempt past the first two cells'.
    let gate = tmp.path().join("gate");
    let cond = format!(
        "if [ \"$FLAKEHUNT_CELL\" != baseline ] && [ \"${{FLAKEHUNT_CELL#all }}\" = \"$FLAKEHUNT_CELL\" ] && [ ! -e {g} ]; then echo $$ > {g}.tmp && mv {g}.tmp {g} && exec sleep 600; fi; {TZ_AND_NOFILE}",
        g = gate.display()
    );
    let script = "ulimit -n 4096 && exec \"$@\"";
    let mut child = Command::new("sh")
        .args(["-c", script, "sh"])
        .arg(bin())
        .args(["matrix", "--against", "ci.json", "-q", "--runs", "3", "--record", "rec", "--"])
        .arg(crate::harness::fixture("fail-when.sh"))
        .arg(&cond)
        .current_dir(tmp.path())
        .env_remove("TZ")
        .env_remove("LC_ALL")
        // The snapshots' CI variables differ from this machine's wherever the tests run.
        .env_remove("CI")
        .env_remove("GITHUB_ACTIONS")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    crate::harness::poll_until("the gate to be written", crate::harness::POLL_LIMIT, || gate.exists());
    let sleeper: i32 = std::fs::read_to_string(&gate).unwrap().trim().parse().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    crate::harness::poll_until("the sleeping attempt to be ended", crate::harness::POLL_LIMIT, || {
        !Path::new(&format!("/proc/{sleeper}")).exists()
            || std::fs::read_to_string(format!("/proc/{sleeper}/stat")).is_ok_and(|s| s.contains(") Z "))
    });
    let before = crate::harness::attempts_in(&tmp.path().join("rec")).len();
    let out = Command::new("sh")
        .args(["-c", script, "sh"])
        .arg(bin())
        .args(["matrix", "--resume", "rec", "--json", "-q"])
        .current_dir(tmp.path())
        .env_remove("TZ")
        .env_remove("LC_ALL")
        // The snapshots' CI variables differ from this machine's wherever the tests run.
        .env_remove("CI")
        .env_remove("GITHUB_ACTIONS")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["details"]["against"]["minimal_overlay"]["TZ"], "America/New_York", "{s:#}");
    assert_eq!(s["details"]["against"]["minimal_overlay"].as_object().unwrap().len(), 2, "{s:#}");
    let attempts = crate::harness::attempts_in(&tmp.path().join("rec"));
    assert!(attempts.len() > before, "the resumed hunt ran the rest");
    let ids: std::collections::BTreeSet<u64> = attempts.iter().map(|a| a["id"].as_u64().unwrap()).collect();
    assert_eq!(ids.len(), attempts.len(), "no attempt id twice");
    let names: Vec<&str> = s["cells"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    let distinct: std::collections::BTreeSet<&&str> = names.iter().collect();
    assert_eq!(distinct.len(), names.len(), "no cell twice: {names:?}");
}

#[test]
fn matrix_against_refuses_what_it_cannot_do_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    ci_snapshot(tmp.path());
    for args in [&["--shard", "1/2"][..], &["-D", "A=1,2"], &["--clean-room"]] {
        let says = "cannot be used with";
        let out = Command::new(bin())
            .args(["matrix", "--against", "ci.json"])
            .args(args)
            .args(["--", "true"])
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = Command::new(bin())
        .args(["matrix", "--against", "nowhere.json", "--", "true"])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--against") && err.contains("nowhere.json"), "{err}");
    let out = Command::new(bin())
        .args([
            "dispatch",
            "github",
            "--shards",
            "2",
            "--install",
            "true",
            "matrix",
            "--against",
            "ci.json",
            "--",
            "true",
        ])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn snapshot_output_writes_through_a_symlink_and_into_a_fifo_without_replacing_either() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("artifacts")).unwrap();
    // A link into a directory the CI uploads, its target not written yet.
    std::os::unix::fs::symlink("artifacts/ci-env.json", dir.join("link.json")).unwrap();
    let out = Command::new(bin()).args(["snapshot", "--output", "link.json"]).current_dir(dir).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::symlink_metadata(dir.join("link.json")).unwrap().file_type().is_symlink(), "the link stays");
    let written = std::fs::read_to_string(dir.join("artifacts/ci-env.json")).unwrap();
    assert!(serde_json::from_str::<Value>(&written).is_ok(), "the link's target holds the snapshot: {written}");
    // A FIFO someone reads: written into, not replaced by a file.
    let fifo = dir.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let out = Command::new(bin()).args(["snapshot", "--output", "fifo"]).current_dir(dir).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // Had nothing been written into it, this open (and close) ends the reader's wait.
    {
        use std::os::unix::fs::OpenOptionsExt;
        let _ = std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(&fifo);
    }
    let text = reader.join().unwrap();
    assert!(serde_json::from_str::<Value>(&text).is_ok(), "the reader got the snapshot: {text}");
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO stays");
}
