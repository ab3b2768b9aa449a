//! End-to-end tests of the test-runner adapters against tiny projects in `fixtures/adapters/`:
//! `--cargo-test` and `--go-test` build once and run the test binary directly; `--pytest` runs
//! one node id. Each fixture fails on chosen iterations, so the counts are exact.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::harness::flakehunt;

/// Copies a fixture project into a fresh directory, so builds and caches stay out of the tree.
fn copy_project(name: &str, into: &Path) -> PathBuf {
    let to = into.join(name);
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(crate::harness::fixture(&format!("adapters/{name}")))
        .arg(&to)
        .status()
        .unwrap();
    assert!(status.success());
    to
}

fn run(project: &Path, args: &[&str], env: &[(&str, &Path)]) -> (i32, Value, Value, String) {
    let record = project.join("rec");
    let mut cmd = flakehunt();
    cmd.args(["sweep", "--profiles", "default", "--seed", "3", "--json", "--quiet", "--record"])
        .arg(&record)
        .args(args)
        .current_dir(project);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output();
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
    // Started below the package root, as from a workspace member's subdirectory: the test
    // binary must still run in the package's directory, where its data files are.
    let (code, summary, manifest, stderr) = run(
        &project.join("src"),
        &["--runs", "8", "--cargo-test", "transfer_keeps_the_total"],
        &[("CARGO_TARGET_DIR", &target)],
    );
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(summary["failures"], 2, "{summary:#}");
    assert_eq!(manifest["target"]["dir"], project.display().to_string());
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
    let out = flakehunt()
        .args(["sweep", "--runs", "1", "--cargo-test", "no_such_test"])
        .env("CARGO_TARGET_DIR", &target)
        .current_dir(&project)
        .output();
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

/// The real `go`, found on PATH.
fn real_go() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("go"))
        .find(|p| p.is_file())
        .expect("Go is not installed: `apt-get install golang-go` (CI installs it)")
}

/// A Go environment inside `dir`: its own build cache and GOPATH (nothing written to the user's),
/// no network, no toolchain switching, and a `go` first on PATH that logs each invocation to
/// `go-calls` before running the real one, so a test can count the builds.
fn go_env(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let wrapper = bin.join("go");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
            dir.join("go-calls").display(),
            real_go().display()
        ),
    )
    .unwrap();
    std::process::Command::new("chmod").arg("+x").arg(&wrapper).status().unwrap();
    let path =
        std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())))
            .unwrap();
    vec![
        ("PATH", PathBuf::from(path)),
        ("GOCACHE", dir.join("gocache")),
        ("GOPATH", dir.join("gopath")),
        ("GOTOOLCHAIN", "local".into()),
        ("GOPROXY", "off".into()),
        ("GOFLAGS", "".into()),
    ]
}

fn go_calls(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("go-calls")).unwrap_or_default().lines().map(str::to_owned).collect()
}

#[test]
fn go_test_builds_once_runs_in_the_package_dir_and_names_the_test_and_assertion() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_project("go-flaky", dir.path());
    let env = go_env(dir.path());
    let env: Vec<(&str, &Path)> = env.iter().map(|(k, v)| (*k, v.as_path())).collect();
    let (code, summary, manifest, stderr) =
        run(&project, &["--runs", "8", "--go-test", "./ledger", "-run", "TestTransferKeepsTheTotal"], &env);
    assert_eq!(code, 1, "{stderr}");
    // Iterations 4 and 8 fail on the assertion; none fails to read testdata/, which a test
    // binary finds only when it runs in the package directory, as `go test` runs it.
    assert_eq!(summary["failures"], 2, "{summary}");
    let sig = summary["signatures"][0]["signature"].as_str().unwrap();
    assert_eq!(sig, "exit 1: TestTransferKeepsTheTotal: ledger_test.go:<n>: total <n>, want <n>");
    assert_eq!(summary["signatures"][0]["count"], 2);
    // Built once into the record; the attempts ran the test binary, never `go`.
    let calls = go_calls(dir.path());
    assert_eq!(calls.iter().filter(|c| c.starts_with("test -c")).count(), 1, "{calls:?}");
    // Besides the build: `go env` and `go list` before it, and `go version` for the record's
    // environment snapshot.
    let setup = ["env ", "list ", "test -c ", "version"];
    assert!(calls.iter().all(|c| setup.iter().any(|s| c.starts_with(s))), "{calls:?}");
    let argv: Vec<&str> = manifest["target"]["argv"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    let binary = Path::new(argv[0]);
    assert!(binary.starts_with(project.join("rec").join("go-test")) && binary.is_file(), "{argv:?}");
    // The name is anchored: -run is a regular expression, and TestTransferKeepsTheTotalX would match
    // too; os.Exit(0) in the test fails it, as under `go test`.
    assert_eq!(&argv[1..], ["-test.paniconexit0", "-test.run", "^TestTransferKeepsTheTotal$"]);
    assert_eq!(manifest["target"]["dir"], "ledger");
    let adapter = &manifest["extra"]["adapter"];
    assert_eq!(adapter["name"], "go-test");
    assert_eq!(adapter["package"], "example.com/goflaky/ledger");
    assert_eq!(adapter["test"], "TestTransferKeepsTheTotal");
    eprintln!("go test -c took {} s", adapter["build_seconds"]);
}

/// A `go test` command replays a package's cached pass without running its tests when nothing
/// it reads changed; its test reads the iteration where the cache cannot see it. Every attempt
/// runs the test (`-count=1` in `GOFLAGS`), or 2 of 6 failing iterations would pass unrun and
/// the hunt say "not reproduced in 6 attempts". A count the user gives is theirs; a replay that
/// happens all the same stops the hunt.
#[test]
fn a_go_test_command_runs_its_tests_in_every_attempt_never_a_cached_pass() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_project("go-cached", dir.path());
    let env = go_env(dir.path());
    let env: Vec<(&str, &Path)> = env.iter().map(|(k, v)| (*k, v.as_path())).collect();
    let (code, summary, _, stderr) = run(&project, &["--runs", "6", "--", "go", "test", "."], &env);
    assert_eq!((code, summary["failures"].as_u64()), (1, Some(2)), "{stderr}");
    for attempt in crate::harness::attempts_in(&project.join("rec")) {
        assert!(!attempt["stdout_tail"].as_str().unwrap().contains("(cached)"), "{attempt}");
    }
    // The user's own count (here through GOFLAGS) is left as it is.
    std::fs::remove_dir_all(project.join("rec")).unwrap();
    let counted: Vec<(&str, &Path)> =
        env.iter().map(|(k, v)| if *k == "GOFLAGS" { (*k, Path::new("-count=2")) } else { (*k, *v) }).collect();
    let (code, summary, _, stderr) = run(&project, &["--runs", "3", "--", "go", "test", "-v", "."], &counted);
    assert_eq!((code, summary["failures"].as_u64()), (1, Some(1)), "{stderr}");
    let third = crate::harness::attempts_in(&project.join("rec")).into_iter().find(|a| a["iteration"] == 3).unwrap();
    assert_eq!(third["stdout_tail"].as_str().unwrap().matches("=== RUN   TestCounter").count(), 2, "{third}");
    // A script that clears GOFLAGS gets the cached pass back: the attempt that replays it ran no
    // test, and the hunt stops there (exit 2) rather than count it clean.
    std::fs::remove_dir_all(project.join("rec")).unwrap();
    let out = flakehunt()
        .args(["sweep", "--profiles", "default", "--runs", "6", "--quiet", "--record", "rec"])
        .args(["--shell", "GOFLAGS= go test ."])
        .envs(env.iter().copied())
        .current_dir(&project)
        .output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("ran no test") && stderr.contains("(cached)") && stderr.contains("-count=1"), "{stderr}");
    let attempts = crate::harness::attempts_in(&project.join("rec"));
    assert_eq!(attempts.len(), 1, "the run recorded, not its replay: {attempts:?}");
}

/// A hunt or sweep of a command that runs no test (a `-run` pattern that matches none, a file
/// whose tests all skip here) passes every attempt: "not reproduced in N attempts" with a
/// bound would be said of a test never run. The first such attempt stops it (exit 2) and is not
/// recorded; the same commands selecting a test that runs hunt as before.
#[test]
fn a_command_that_runs_no_test_is_not_hunted() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_project("go-cached", dir.path());
    let env = go_env(dir.path());
    std::fs::write(
        project.join("skipped_test.py"),
        "import pytest\n\n\n@pytest.mark.skip(reason=\"not here\")\ndef test_skipped():\n    pass\n",
    )
    .unwrap();
    let sweep = |record: &str, command: &[&str]| {
        let out = flakehunt()
            .args(["sweep", "--profiles", "default", "--runs", "3", "--quiet", "--record", record, "--"])
            .args(command)
            .envs(env.iter().cloned())
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .current_dir(&project)
            .output();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let no_test: [&[&str]; 2] = [
        &["go", "test", "-run", "TestCountr", "."],
        &["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "skipped_test.py"],
    ];
    for (i, command) in no_test.iter().enumerate() {
        let (code, stderr) = sweep(&format!("none{i}"), command);
        assert_eq!(code, Some(2), "{command:?}: {stderr}");
        assert!(stderr.contains("ran no test") && stderr.contains("says no test ran"), "{command:?}: {stderr}");
    }
    // Negative controls: a test that runs, and a command that is no test runner.
    let (code, stderr) = sweep("some", &["go", "test", "-run", "TestCounter", "."]);
    assert_eq!(code, Some(1), "iteration 3 fails: {stderr}");
    let (code, stderr) = sweep("plain", &["true"]);
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn go_test_refuses_an_unknown_test_or_package_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_project("go-flaky", dir.path());
    let env = go_env(dir.path());
    let refuse = |go_test: &[&str], expected: &str| {
        let record = dir.path().join("rec");
        let out = flakehunt()
            .args(["sweep", "--profiles", "default", "--runs", "1", "--record"])
            .arg(&record)
            .arg("--go-test")
            .args(go_test)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .current_dir(&project)
            .output();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{go_test:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{go_test:?}: {stderr}");
        assert!(stderr.contains(expected), "{go_test:?}: {stderr}");
        assert!(!record.exists(), "{go_test:?}: a refused hunt leaves no record (nor test binary)");
    };
    refuse(&["./ledger", "-run", "TestNope"], "no test named 'TestNope' in Go package example.com/goflaky/ledger");
    // An unanchored pattern that names two tests is ambiguous, not both.
    refuse(&["./ledger", "-run", "TestTransfer"], "matches 2 tests (TestTransferKeepsTheTotal, TestTransferLog)");
    refuse(&["./nope", "-run", "TestTransferKeepsTheTotal"], "no Go package './nope'");
}
