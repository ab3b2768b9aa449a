//! Test-runner adapters: resolve one test once (build its binary, find it), so that each attempt
//! runs the test directly instead of re-running a build and a test plan. Main function: [`target`].

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context;
use flakehunt_core::plan::Target;

use crate::cli::HuntArgs;
use crate::exit;

/// The plugins that alter re-runs or order, disabled for `--pytest` (a `-p no:X` for a plugin
/// that is not installed is accepted by pytest).
pub const PYTEST_NO_PLUGINS: [&str; 4] = ["randomly", "rerunfailures", "flaky", "cacheprovider"];

/// The target an adapter option asks for and what the manifest records about it (`extra.adapter`),
/// or none when no adapter option is given.
pub fn target(args: &HuntArgs) -> anyhow::Result<Option<(Target, serde_json::Value)>> {
    if let Some(name) = &args.cargo_test {
        return cargo_test(name, args.package.as_deref()).map(Some);
    }
    if !args.go_test.is_empty() {
        return go_test(&args.go_test).map(Some);
    }
    if let Some(node) = &args.pytest {
        return pytest(node).map(Some);
    }
    Ok(None)
}

/// `--cargo-test NAME [-p PKG]`: `cargo test --no-run --message-format=json` once, then the test
/// binary that lists NAME, run as `BIN NAME --exact`.
fn cargo_test(name: &str, package: Option<&str>) -> anyhow::Result<(Target, serde_json::Value)> {
    let mut build = Command::new("cargo");
    build.args(["test", "--no-run", "--message-format=json"]);
    if let Some(p) = package {
        build.args(["-p", p]);
    }
    // Cargo's own progress goes to our stderr, so a long build is visible.
    let output = build.stderr(Stdio::inherit()).output().context("cannot run `cargo test --no-run`")?;
    if !output.status.success() {
        return Err(exit::usage(format!("`cargo test --no-run` failed ({}): fix the build first", output.status)));
    }
    let binaries = test_executables(&String::from_utf8_lossy(&output.stdout));
    if binaries.is_empty() {
        return Err(exit::usage("`cargo test --no-run` built no test binary"));
    }
    let mut found: Vec<(PathBuf, String)> = Vec::new();
    for bin in &binaries {
        let list = Command::new(bin)
            .args(["--list", "--format", "terse"])
            .stderr(Stdio::null())
            .output()
            .with_context(|| format!("cannot list the tests of {}", bin.display()))?;
        for test in matching_tests(&String::from_utf8_lossy(&list.stdout), name) {
            found.push((bin.clone(), test));
        }
    }
    let (bin, test) = match found.len() {
        0 => {
            return Err(exit::usage(format!(
                "no test named '{name}' in the {} test binaries `cargo test --no-run` built{}",
                binaries.len(),
                if package.is_none() { " (name the package with -p PKG?)" } else { "" }
            )))
        }
        1 => found.remove(0),
        _ => {
            let places: Vec<String> = found.iter().map(|(b, t)| format!("{t} in {}", file_name(b))).collect();
            return Err(exit::usage(format!(
                "'{name}' names {} tests ({}): give the full path of one, or -p PKG",
                found.len(),
                places.join(", ")
            )));
        }
    };
    let binary = bin.display().to_string();
    let adapter = serde_json::json!({ "name": "cargo-test", "test": test, "binary": binary, "package": package });
    Ok((Target::argv(vec![binary, test, "--exact".into()]), adapter))
}

/// The test executables in cargo's JSON messages: `compiler-artifact`s built with `profile.test`.
pub fn test_executables(messages: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = messages
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["profile"]["test"] == true)
        .filter_map(|m| m["executable"].as_str().map(PathBuf::from))
        .collect();
    out.dedup();
    out
}

/// The tests of a libtest `--list` output that NAME names: exactly, or as the last part of
/// their path (`flaky` names `tests::flaky`). An exact name wins over suffixes.
pub fn matching_tests(list: &str, name: &str) -> Vec<String> {
    let tests: Vec<&str> = list.lines().filter_map(|l| l.strip_suffix(": test")).collect();
    if tests.contains(&name) {
        return vec![name.to_owned()];
    }
    let suffix = format!("::{name}");
    tests.into_iter().filter(|t| t.ends_with(&suffix)).map(str::to_owned).collect()
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// The `go test -c` command and the per-attempt argv of `--go-test PKG [-run NAME]`.
pub fn go_commands(pkg: &str, run: Option<&str>, out_dir: &Path) -> (Vec<String>, Vec<String>) {
    let stem: String = pkg.trim_matches(|c| c == '.' || c == '/').replace(['/', '.'], "_");
    let binary = out_dir.join(format!("{}.test", if stem.is_empty() { "pkg" } else { &stem })).display().to_string();
    let build = vec!["go".into(), "test".into(), "-c".into(), "-o".into(), binary.clone(), pkg.to_owned()];
    let mut argv = vec![binary];
    if let Some(name) = run {
        argv.extend(["-test.run".into(), name.to_owned()]);
    }
    argv.push("-test.count=1".into());
    (build, argv)
}

/// Splits the values of `--go-test`: `PKG`, or `PKG -run NAME`.
pub fn go_args(values: &[String]) -> Result<(String, Option<String>), String> {
    match values {
        [pkg] => Ok((pkg.clone(), None)),
        [pkg, flag, name] if matches!(flag.as_str(), "-run" | "--run" | "-test.run") => {
            Ok((pkg.clone(), Some(name.clone())))
        }
        _ => Err(format!("--go-test takes PKG or PKG -run NAME, not '{}'", values.join(" "))),
    }
}

/// `--go-test PKG -run NAME`: `go test -c -o <tmp>/PKG.test PKG` once, then that binary.
fn go_test(values: &[String]) -> anyhow::Result<(Target, serde_json::Value)> {
    let (pkg, run) = go_args(values).map_err(exit::usage)?;
    let dir = std::env::temp_dir().join(format!("flakehunt-go-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let (build, argv) = go_commands(&pkg, run.as_deref(), &dir);
    let status = Command::new(&build[0]).args(&build[1..]).stdout(Stdio::inherit()).status();
    if !status.as_ref().is_ok_and(|s| s.success()) {
        let _ = std::fs::remove_dir(&dir);
    }
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => return Err(exit::usage(format!("`{}` failed ({s}): fix the build first", build.join(" ")))),
        Err(e) => return Err(exit::usage(format!("cannot run `{}`: {e} (is Go installed?)", build.join(" ")))),
    }
    let adapter = serde_json::json!({ "name": "go-test", "package": pkg, "run": run, "binary": argv[0] });
    Ok((Target::argv(argv), adapter))
}

/// The per-attempt argv of `--pytest NODEID`.
pub fn pytest_argv(node: &str) -> Vec<String> {
    let mut argv: Vec<String> = ["python3", "-m", "pytest", "-q"].map(String::from).to_vec();
    for plugin in PYTEST_NO_PLUGINS {
        argv.extend(["-p".into(), format!("no:{plugin}")]);
    }
    argv.push(node.to_owned());
    argv
}

/// `--pytest NODEID`, after checking that pytest can be imported.
fn pytest(node: &str) -> anyhow::Result<(Target, serde_json::Value)> {
    let ok = Command::new("python3")
        .args(["-m", "pytest", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return Err(exit::usage("--pytest needs pytest for python3: `python3 -m pip install pytest`"));
    }
    let adapter = serde_json::json!({ "name": "pytest", "node": node });
    Ok((Target::argv(pytest_argv(node)), adapter))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_executables_from_cargo_messages() {
        let messages = r#"{"reason":"compiler-artifact","profile":{"test":false},"executable":null}
{"reason":"compiler-artifact","profile":{"test":true},"executable":"/t/debug/deps/flaky-1"}
{"reason":"compiler-artifact","profile":{"test":true},"executable":"/t/debug/deps/it-2"}
{"reason":"build-finished","success":true}
not json"#;
        assert_eq!(test_executables(messages), [PathBuf::from("/t/debug/deps/flaky-1"), "/t/debug/deps/it-2".into()]);
    }

    #[test]
    fn matching_tests_prefers_exact_names() {
        let list = "flaky: test\ntests::flaky: test\nother::flaky_too: test\nbench_x: benchmark\n";
        assert_eq!(matching_tests(list, "flaky"), ["flaky"]);
        assert_eq!(matching_tests("a::flaky: test\nb::flaky: test\n", "flaky"), ["a::flaky", "b::flaky"]);
        assert!(matching_tests(list, "bench_x").is_empty());
    }

    #[test]
    fn go_commands_build_once_then_run_the_binary() {
        let (build, argv) = go_commands("./pkg/ledger", Some("TestTransfer"), Path::new("/tmp/fh"));
        assert_eq!(build, ["go", "test", "-c", "-o", "/tmp/fh/pkg_ledger.test", "./pkg/ledger"]);
        assert_eq!(argv, ["/tmp/fh/pkg_ledger.test", "-test.run", "TestTransfer", "-test.count=1"]);
        let (_, argv) = go_commands(".", None, Path::new("/x"));
        assert_eq!(argv, ["/x/pkg.test", "-test.count=1"]);
        assert_eq!(go_args(&["./p".into(), "-run".into(), "TestA".into()]), Ok(("./p".into(), Some("TestA".into()))));
        assert!(go_args(&["./p".into(), "--runs".into(), "5".into()]).is_err());
    }

    #[test]
    fn pytest_argv_disables_rerun_plugins() {
        assert_eq!(
            pytest_argv("t.py::test_x").join(" "),
            "python3 -m pytest -q -p no:randomly -p no:rerunfailures -p no:flaky -p no:cacheprovider t.py::test_x"
        );
    }
}
