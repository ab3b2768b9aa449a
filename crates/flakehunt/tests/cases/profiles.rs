//! End-to-end tests of the scheduling profiles: each mechanism's measured effect (with generous
//! bounds), fixtures whose failure depends on a mechanism, inert detection, `--strict`,
//! `flakehunt.toml` errors, `probe`, and cleanup of cgroups and stopped processes.

use serde_json::Value;

use crate::harness::{attempts_in, bin, cell, flakehunt, has_cpus, summary_of};

/// Runs a sweep with `--json` into a fresh record; returns (exit code, summary, attempts).
fn sweep(args: &[&str], target: &[&str]) -> (i32, Value, Vec<Value>) {
    sweep_env(args, target, &[])
}

fn sweep_env(args: &[&str], target: &[&str], env: &[(&str, &str)]) -> (i32, Value, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("rec");
    let out = flakehunt()
        .envs(env.iter().copied())
        .arg("sweep")
        .args(args)
        .args(["--json", "--quiet", "--record"])
        .arg(&record)
        .arg("--")
        .args(target)
        .current_dir(dir.path())
        .output();
    let summary = summary_of(&out);
    let attempts = attempts_in(&record);
    (out.status.code().unwrap(), summary, attempts)
}

fn effects<'a>(attempts: &'a [Value], cell: &str) -> Vec<&'a Value> {
    attempts.iter().filter(|a| a["cell"] == cell).map(|a| &a["effect"]).collect()
}

fn workload(ms: u32) -> Vec<String> {
    vec![bin().display().to_string(), "__probe-workload".into(), ms.to_string()]
}

#[test]
fn cpu_starved_limits_a_busy_child_well_below_half_a_cpu() {
    let w = workload(600);
    let target: Vec<&str> = w.iter().map(String::as_str).collect();
    let (_, summary, attempts) = sweep(&["--profiles", "default,cpu-starved", "--runs", "2"], &target);
    for e in effects(&attempts, "cpu-starved") {
        let mechanism = e["mechanism"].as_str().unwrap();
        assert!(["cgroup-v2", "cgroup-v1", "duty-cycle"].contains(&mechanism), "{mechanism}");
        let share = e["cpu_share"].as_f64().expect("the share is measured");
        // 15 % quota; a generous bound that a loaded machine cannot break.
        assert!(share < 0.5, "share {share} under a 15 % quota");
    }
    assert_eq!(cell(&summary, "cpu-starved")["inert"], false);
    // Every cgroup made for an attempt is gone.
    for root in ["/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup"] {
        if let Ok(entries) = std::fs::read_dir(root) {
            let run_id = summary["run_id"].as_str().unwrap();
            let left: Vec<_> = entries.flatten().filter(|e| e.file_name().to_string_lossy().contains(run_id)).collect();
            assert!(left.is_empty(), "cgroups left in {root}: {left:?}");
        }
    }
}

#[test]
fn one_core_pins_and_tells_runtimes_the_unpinned_count() {
    let cpus = std::thread::available_parallelism().unwrap().get();
    let (_, summary, attempts) =
        sweep(&["--profiles", "default,one-core,one-core-native", "--runs", "2"], &["sh", "-c", "echo $GOMAXPROCS"]);
    if !has_cpus(2, "one_core_pins_and_tells_runtimes_the_unpinned_count (pinning)") {
        assert_eq!(cell(&summary, "one-core")["inert"], true);
        return;
    }
    for e in effects(&attempts, "one-core") {
        assert!(!e["cpus"].as_str().unwrap().contains([',', '-']), "one CPU: {}", e["cpus"]);
        assert_eq!(e["hints"]["GOMAXPROCS"], cpus.to_string());
    }
    for e in effects(&attempts, "one-core-native") {
        assert!(e.get("hints").is_none(), "native pinning sets no hints: {e}");
    }
}

#[test]
fn a_failure_that_needs_one_cpu_makes_one_core_sensitive() {
    if !has_cpus(2, "a_failure_that_needs_one_cpu_makes_one_core_sensitive") {
        return;
    }
    let script = crate::harness::fixture("fail-when.sh");
    let (code, summary, _) = sweep(
        &["--profiles", "default,one-core", "--runs", "12"],
        // One CPU in the affinity list: no ',' and no '-' (`nproc` would honour OMP_NUM_THREADS).
        &[script.to_str().unwrap(), "grep -q '^Cpus_allowed_list:[[:space:]]*[0-9]*$' /proc/self/status"],
    );
    assert_eq!(code, 1);
    assert_eq!(summary["verdict"], "condition-sensitive");
    let one = cell(&summary, "one-core");
    assert_eq!(one["failures"], 12);
    assert_eq!(one["sensitive"], true);
    assert_eq!(one["direction"], "amplifies");
    assert_eq!(cell(&summary, "default")["failures"], 0);
}

#[test]
fn tight_gil_reports_the_interval_and_flags_a_switch_interval_bug() {
    let check = "import sys\nassert sys.getswitchinterval() >= 1e-3, 'switch interval %g' % sys.getswitchinterval()";
    let (code, summary, attempts) =
        sweep(&["--profiles", "default,tight-gil", "--runs", "10"], &["python3", "-c", check]);
    assert_eq!(code, 1);
    for e in effects(&attempts, "tight-gil") {
        assert_eq!(e["switch_interval"].as_f64(), Some(1e-6));
    }
    let gil = cell(&summary, "tight-gil");
    assert_eq!(gil["failures"], 10);
    assert_eq!(gil["sensitive"], true);
    assert_eq!(gil["inert"], false);
    assert_eq!(summary["verdict"], "condition-sensitive");
}

#[test]
fn tight_gil_keeps_an_existing_sitecustomize_working() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("sitecustomize.py"), "import builtins\nbuiltins.USER_HOOK = 'ran'\n").unwrap();
    let check = "import builtins, sys\nassert getattr(builtins, 'USER_HOOK', None) == 'ran'\nassert sys.getswitchinterval() < 1e-3";
    let user_path = dir.path().display().to_string();
    let (code, summary, _) = sweep_env(
        &["--profiles", "tight-gil", "--runs", "2"],
        &["python3", "-c", check],
        &[("PYTHONPATH", &user_path)],
    );
    assert_eq!(code, 0, "{summary}");
}

#[test]
fn noise_idle_and_pause_record_what_they_did() {
    let w = workload(400);
    let target: Vec<&str> = w.iter().map(String::as_str).collect();
    let (_, summary, attempts) = sweep(&["--profiles", "default,noisy,idle,pause", "--runs", "2"], &target);
    for e in effects(&attempts, "noisy") {
        assert!(e["noise_cpu_seconds"].as_f64().unwrap() > 0.0, "{e}");
    }
    for e in effects(&attempts, "idle") {
        assert!(e["policy"] == "idle" || e["nice"] == 19, "{e}");
    }
    let pauses: u64 = effects(&attempts, "pause").iter().map(|e| e["pauses"].as_u64().unwrap()).sum();
    assert!(pauses >= 1, "a 400 ms workload with pauses every 0-100 ms got none");
    for name in ["noisy", "idle", "pause"] {
        assert_eq!(cell(&summary, name)["inert"], false, "{name}");
    }
}

#[test]
fn a_profile_without_effect_is_inert_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    // Gaps before the first pause are drawn from 0 to 10^12 ms (32 years), seeded: however long
    // a loaded machine takes to run `true`, no pause can land (a gap under a second has a chance
    // of 1 in 10^9 per attempt; a gap of 0-60 s let a slow `true` meet one).
    std::fs::write(
        dir.path().join("flakehunt.toml"),
        "[profiles.late]\npause = { min-ms = 1, max-ms = 2, every-max-ms = 1000000000000 }\n",
    )
    .unwrap();
    let out = flakehunt()
        .args(["sweep", "--profiles", "default,late", "--runs", "3", "--seed", "1", "--json", "-q", "--record", "rec"])
        .args(["--", "true"])
        .current_dir(dir.path())
        .output();
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    let late = cell(&summary, "late");
    assert_eq!(late["inert"], true);
    assert!(late["inert_reason"].as_str().unwrap().contains("no pause"), "{late}");
}

#[test]
fn strict_refuses_an_unapplicable_profile_before_any_attempt() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("flakehunt.toml"), "[profiles.wide]\ncpus = 4096\n").unwrap();
    let out = flakehunt()
        .args(["sweep", "--strict", "--profiles", "default,wide", "--runs", "2", "--record", "rec", "--", "true"])
        .current_dir(dir.path())
        .output();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("wide"), "{stderr}");
    assert!(!dir.path().join("rec").exists(), "no record before any attempt");
}

#[test]
fn user_profiles_compose_primitives_and_bad_ones_name_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("flakehunt.toml"), "[profiles.go1]\ncpus = 1\nenv = { MARK = \"set\" }\n").unwrap();
    let out = flakehunt()
        .args(["sweep", "--profiles", "default,go1", "--runs", "2", "--json", "-q", "--record", "rec", "--"])
        .args([crate::harness::fixture("fail-when.sh").to_str().unwrap(), "[ \"$MARK\" = set ]"])
        .current_dir(dir.path())
        .output();
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cell(&summary, "go1")["failures"], 2);
    assert_eq!(cell(&summary, "default")["failures"], 0);

    std::fs::write(dir.path().join("flakehunt.toml"), "[profiles.x]\ncpus = 1\nnoise = 2\n").unwrap();
    let out = flakehunt().args(["sweep", "--runs", "1", "--", "true"]).current_dir(dir.path()).output();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("flakehunt.toml:3:") && stderr.contains("noise-threads"), "{stderr}");
}

#[test]
fn probe_reports_every_profile() {
    let out = flakehunt().args(["probe", "--profiles", "default,one-core,pause", "--json"]).output();
    let results: Value = serde_json::from_slice(&out.stdout).unwrap();
    let results = results.as_array().unwrap();
    assert_eq!(results.len(), 3);
    let pause = results.iter().find(|r| r["profile"] == "pause").unwrap();
    assert_eq!(pause["applied"], true, "{pause}");
    assert!(pause["pauses"].as_u64().unwrap() >= 1);
    assert!(results.iter().all(|r| r["longest_stall_ms"].as_f64().is_some()));
}

#[test]
fn unknown_profile_is_a_usage_error() {
    let out = flakehunt().args(["sweep", "--profiles", "default,bogus", "--", "true"]).output();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown profile 'bogus'"));
}

#[test]
fn one_core_keeps_a_multi_threaded_runtime_racing_while_native_pinning_hides_it() {
    if !has_cpus(2, "one_core_keeps_a_multi_threaded_runtime_racing_while_native_pinning_hides_it") {
        return;
    }
    let fixture = crate::harness::fixture("threads-race.py");
    let (code, summary, _) = sweep_env(
        &["--profiles", "default,one-core,one-core-native", "--runs", "20"],
        &["python3", fixture.to_str().unwrap()],
        &[],
    );
    assert_eq!(code, 1);
    // Pinned, but told the unpinned count: still two workers, still racing.
    assert_eq!(cell(&summary, "one-core")["failures"], 10);
    assert_eq!(cell(&summary, "default")["failures"], 10);
    // Plain pinning shrinks the pool to one worker: the race disappears, and the summary says why.
    let native = cell(&summary, "one-core-native");
    assert_eq!(native["failures"], 0);
    assert_eq!(native["sensitive"], true);
    assert_eq!(native["direction"], "suppresses");
    assert!(native["meaning"].as_str().unwrap().contains("two CPUs truly in parallel"), "{native}");
}
