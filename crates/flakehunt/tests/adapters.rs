//! End-to-end tests of the test-runner adapters against tiny projects in `fixtures/adapters/`:
//! `--cargo-test` builds once and runs the test binary directly; `--pytest` runs one node id.
//! Each fixture fails on chosen iterations, so the counts are exact.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("flakehunt")
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/adapters").join(name)
}

/// Copies a fixture project into a fresh directory, so builds and caches stay out of the tree.
fn copy_project(name: &str, into: &Path) -> PathBuf {
    let to = into.join(name);
    let status = std::process::Command::new("cp").arg("-r").arg(fixture(name)).arg(&to).status().unwrap();
    assert!(status.success());
    to
}

fn run(project: &Path, args: &[&str], env: &[(&str, &Path)]) -> (i32, Value, Value, String) {
    let record = project.join("rec");
    let mut cmd = Command::new(bin());
    cmd.args(["sweep", "--profiles", "default", "--seed", "3", "--json", "--quiet", "--record"])
        .arg(&record)
        .args(args)
        .current_dir(project);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let summary: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("no JSON summary ({e}); stderr: {stderr}"));
    let manifest: Value = serde_json::from_slice(&std::fs::read(record.join("manifest.json")).unwrap()).unwrap();
    (out.status.code().unwrap(), summary, manifest, stderr)
}

#[test]
fn cargo_test_builds_once_and_names_the_test_and_assertion() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_project("cargo-flaky", dir.path());
    let target = dir.path().join("target");
    let (code, summary, manifest, stderr) =
        run(&project, &["--runs", "8", "--cargo-test", "transfer_keeps_the_total"], &[("CARGO_TARGET_DIR", &target)]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(summary["failures"], 2);
    // The attempts ran the test binary, not cargo: built once, resolved to the full test name.
    let argv: Vec<&str> = manifest["target"]["argv"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(argv[0].starts_with(target.to_str().unwrap()), "{argv:?}");
    assert_eq!(&argv[1..], ["ledger::transfer_keeps_the_total", "--exact"]);
    assert_eq!(manifest["extra"]["adapter"]["name"], "cargo-test");
    let sig = summary["signatures"][0]["signature"].as_str().unwrap();
    assert!(sig.starts_with("exit 101: ledger::transfer_keeps_the_total: assertion `left == right` failed"), "{sig}");
    assert_eq!(summary["signatures"][0]["count"], 2);
}

#[test]
fn cargo_test_refuses_an_unknown_test() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_project("cargo-flaky", dir.path());
    let target = dir.path().join("target");
    let out = Command::new(bin())
        .args(["sweep", "--runs", "1", "--cargo-test", "no_such_test"])
        .env("CARGO_TARGET_DIR", &target)
        .current_dir(&project)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no test named 'no_such_test'"));
}

#[test]
fn pytest_runs_one_node_and_names_its_assertion() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_project("pytest-flaky", dir.path());
    let (code, summary, manifest, stderr) = run(
        &project,
        &["--runs", "6", "--pytest", "test_flaky.py::test_balance"],
        &[("PYTHONDONTWRITEBYTECODE", Path::new("1"))],
    );
    if stderr.contains("needs pytest") {
        panic!("pytest is not installed for python3: `python3 -m pip install pytest` (CI needs it)");
    }
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(summary["failures"], 2);
    assert_eq!(manifest["extra"]["adapter"]["name"], "pytest");
    let argv = manifest["target"]["argv"].as_array().unwrap();
    assert!(argv.iter().any(|a| a == "no:randomly"));
    let sig = summary["signatures"][0]["signature"].as_str().unwrap();
    assert_eq!(sig, "exit 1: test_flaky.py::test_balance: assert <n> == <n>");
}
