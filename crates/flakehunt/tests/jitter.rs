//! End-to-end tests of the `jitter` profile: the preload library injects delays into a
//! dynamically linked pthread program and says so in the effect, and a statically linked one is
//! reported inert. The bounds cannot flake: thousands of intercepted calls at a 5 % rate.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("flakehunt")
}

fn compile(dir: &Path, name: &str, extra: &[&str]) -> Option<String> {
    let exe = dir.join(name);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/jitter/locker.c");
    let status = std::process::Command::new("cc")
        .args(["-O1", "-pthread"])
        .args(extra)
        .arg("-o")
        .arg(&exe)
        .arg(src)
        .status()
        .expect("a C compiler (cc) is needed for this test");
    status.success().then(|| exe.display().to_string())
}

fn sweep(dir: &Path, exe: &str) -> (Value, Vec<Value>) {
    let record = dir.join(format!("rec-{}", Path::new(exe).file_name().unwrap().to_string_lossy()));
    let out = Command::new(bin())
        .args(["sweep", "--profiles", "default,jitter", "--runs", "3", "--json", "--quiet", "--record"])
        .arg(&record)
        .arg("--")
        .arg(exe)
        .output()
        .unwrap();
    let summary: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON summary ({e}); stderr: {}", String::from_utf8_lossy(&out.stderr)));
    let attempts = std::fs::read_to_string(record.join("attempts.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (summary, attempts)
}

fn cell<'a>(summary: &'a Value, name: &str) -> &'a Value {
    summary["cells"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap()
}

#[test]
fn jitter_delays_a_dynamic_pthread_program_and_counts_the_delays() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), "locker", &[]).unwrap();
    let (summary, attempts) = sweep(dir.path(), &exe);
    let jitter = cell(&summary, "jitter");
    assert_eq!(jitter["inert"], false, "{jitter}");
    assert_eq!(jitter["failures"], 0);
    for a in attempts.iter().filter(|a| a["cell"] == "jitter") {
        // 40,000 intercepted lock/unlock calls at 5 %: about 2,000 delays.
        let delays = a["effect"]["jitter_delays"].as_u64().unwrap();
        assert!(delays > 100, "{a}");
        assert_eq!(a["stdout_tail"], "count=20000\n");
    }
    assert!(jitter["effect"]["jitter_delays"].as_u64().unwrap() > 300);
}

#[test]
fn jitter_is_inert_for_a_static_binary() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = compile(dir.path(), "locker-static", &["-static"]) else {
        eprintln!("skipped: this toolchain cannot link statically (no libc.a)");
        return;
    };
    let (summary, _) = sweep(dir.path(), &exe);
    let jitter = cell(&summary, "jitter");
    assert_eq!(jitter["inert"], true, "{jitter}");
    assert!(jitter["inert_reason"].as_str().unwrap().contains("statically linked"), "{jitter}");
}
