//! Secrets of every family, handed to real hunts through the environment, the target's
//! arguments, `--shell` and `-D` values, and printed by a failing target on both streams: no
//! file of the record, no report and no generated job file may hold one, and `--no-redact`
//! keeps them all. A suite's test ids keep their shape redacted, and the value of a secret-named
//! variable is redacted wherever the target prints it.

use std::path::{Path, PathBuf};
use std::process::Output;

/// Variables whose NAME makes them secret, with plain values nothing else could recognise.
const BY_NAME: &[(&str, &str)] = &[
    ("MYSQL_PWD", "mysqlpwd-7f3k"),
    ("PGPASS", "pgpass-2m9x"),
    ("PGPASSWORD", "pgpassword-8q1z"),
    ("DOCKER_PASS", "dockerpass-4v6n"),
    ("GH_PAT", "ghpat-5t2w"),
    ("JWT", "jwtvalue-3r8p"),
    ("MY_API_KEY", "apikey-6y4u"),
    ("CLIENT_SECRET", "clientsecret-1a2b"),
    ("SESSION_COOKIE", "cookie-9c8d"),
    ("AWS_SECRET_ACCESS_KEY", "awssecret-wJalrXUtnFEMI"),
    ("NPM_CONFIG__AUTH", "npmauth-0e1f"),
    ("APP_CREDENTIALS", "creds-5g6h"),
    ("SENTRY_DSN", "https://sentrykey0123456789abcdef01@o1.ingest.sentry.io/2"),
    ("SLACK_WEBHOOK", "https://hooks.slack.com/services/T0SECRET/B0SECRET/slackhooksecret9"),
    ("DB_PW", "dbpw-2k7d"),
    ("REGISTRY_CREDS", "registrycreds-6j1s"),
];

/// Variables with innocent names whose VALUE holds a secret, and the secret part of it.
const BY_VALUE: &[(&str, &str, &str)] = &[
    (
        "DEPLOY_SSH",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUSECRETPEMBODY1\nAAAAMwAAAAtzc2gtZWQyNTUxOQAAACDd\n-----END OPENSSH PRIVATE KEY-----",
        "SECRETPEMBODY1",
    ),
    ("CONN", "Server=db;Uid=sa;Password=connpw-k2l3;Database=app", "connpw-k2l3"),
    ("DATABASE_URL", "postgres://app:url/pw-m4n5@db/app", "pw-m4n5"),
    ("CALLBACK", "https://h/cb?password=querypw-p6q7&x=1", "querypw-p6q7"),
    ("UPSTREAM", "app:schemeless-r8s9@db.internal", "schemeless-r8s9"),
    ("DEPLOY_ARGS", "--password=argpw-t0u1", "argpw-t0u1"),
    ("GITHUB_THING", "ghp_0123456789abcdefghijSECRETGHPTOKEN01", "SECRETGHPTOKEN01"),
    ("FINE_GRAINED", "github_pat_11ABCDEFG0_finegrainedsecret0123", "finegrainedsecret0123"),
    ("SLACK_BOT", "xoxb-1234567890-slackbotsecret", "slackbotsecret"),
    ("CLOUD_ID", "AKIAIOSFODNN7SECRET1", "IOSFODNN7SECRET1"),
    ("GITLAB", "glpat-gitlabsecret0123456789", "gitlabsecret0123456789"),
    ("STRIPE", "sk_live_stripesecret0123456789", "stripesecret0123456789"),
    ("NPMRC", "npm_npmtokensecret0123456789abcdefghijkl", "npmtokensecret0123456789"),
    ("GOOGLE", "AIzaSyGoogleSecret0123456789abcdefghijk", "SyGoogleSecret0123456789"),
    (
        "SIGNED",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJzZWNyZXRqd3QifQ.jwtsignaturesecret",
        "eyJzdWIiOiJzZWNyZXRqd3QifQ",
    ),
    ("GCLOUD_BEARER", "ya29.a0AfH6SMBgoogleoauthsecret0123456789", "googleoauthsecret0123456789"),
    ("MAILER", "SG.sendgridkeyid0123456.sendgridsecret0123456789abcdefghijklmn", "sendgridsecret0123456789"),
    ("NETRC", "machine api.example.com\n  login bob\n  password netrcpw-8f2g\n", "netrcpw-8f2g"),
    ("FETCH", "curl -fsS -u deploy:curlpw-3h5j https://artifacts.example.com/x", "curlpw-3h5j"),
];

/// Secrets the fixture is given as arguments, or prints itself.
const IN_ARGS: &[&str] = &["--password", "argvpw-c1c1", "--token=argvtok-c2c2", "--api-key", "argvkey-c3c3"];
const ARG_SECRETS: &[&str] = &["argvpw-c1c1", "argvtok-c2c2", "argvkey-c3c3", "fixturepw-x9y8"];

/// Every secret value the tests look for.
fn secrets() -> Vec<&'static str> {
    let mut all: Vec<&str> = BY_NAME.iter().map(|(_, v)| *v).collect();
    // The parts that are secret in the two URL-shaped values, which keep their host.
    all.extend(["sentrykey0123456789abcdef01", "slackhooksecret9"]);
    all.extend(BY_VALUE.iter().map(|(_, _, s)| *s));
    all.extend(ARG_SECRETS);
    all
}

fn fixture() -> PathBuf {
    crate::harness::fixture("leak-secrets.sh")
}

/// Runs flakehunt in `dir` with every secret variable set.
fn run_with_secrets(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = crate::harness::flakehunt();
    cmd.args(args).current_dir(dir);
    for (name, value) in BY_NAME {
        cmd.env(name, value);
    }
    for (name, value, _) in BY_VALUE {
        cmd.env(name, value);
    }
    cmd.output()
}

/// Every file under `dir`, with its content.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push((path.clone(), std::fs::read(&path).unwrap()));
        }
    }
    out
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// The record's files, the hunt's own output and every report format of the record.
fn everything_written(dir: &Path, record: &Path, hunt: &Output) -> Vec<(String, Vec<u8>)> {
    let mut all: Vec<(String, Vec<u8>)> =
        files(record).into_iter().map(|(p, c)| (p.display().to_string(), c)).collect();
    let names: Vec<String> = all.iter().map(|(p, _)| p.clone()).collect();
    for expected in ["manifest.json", "attempts.jsonl", "snapshot.json", "summary.json"] {
        assert!(names.iter().any(|n| n.ends_with(expected)), "no {expected} in {names:?}");
    }
    assert!(names.iter().any(|n| n.contains("/logs/")), "no logs in {names:?}");
    all.push(("hunt stdout".into(), hunt.stdout.clone()));
    all.push(("hunt stderr".into(), hunt.stderr.clone()));
    for format in ["html", "md", "json", "junit", "term"] {
        let out = run_with_secrets(dir, &["report", record.to_str().unwrap(), "--format", format]);
        assert!(out.status.success(), "report --format {format}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(!out.stdout.is_empty(), "report --format {format} is empty");
        all.push((format!("report --format {format}"), out.stdout));
    }
    all
}

#[track_caller]
fn assert_no_secret(written: &[(String, Vec<u8>)]) {
    for secret in secrets() {
        for (name, content) in written {
            assert!(!contains(content, secret), "{secret:?} written in {name}:\n{}", String::from_utf8_lossy(content));
        }
    }
}

fn sweep_args<'a>(extra: &[&'a str], fixture: &'a str) -> Vec<&'a str> {
    let mut args = extra.to_vec();
    args.extend(["sweep", "--profiles", "default", "--runs", "2", "--record", "rec", "--", fixture]);
    args.extend(IN_ARGS);
    args
}

#[test]
fn a_sweep_writes_no_secret_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = fixture();
    let hunt = run_with_secrets(dir.path(), &sweep_args(&[], fixture.to_str().unwrap()));
    assert_eq!(hunt.status.code(), Some(1), "{}", String::from_utf8_lossy(&hunt.stderr));
    let record = dir.path().join("rec");
    let written = everything_written(dir.path(), &record, &hunt);
    assert_no_secret(&written);
    // What is not secret stays readable.
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(record.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["redacted"], true);
    assert_eq!(manifest["target"]["argv"][1], "--password");
    assert_eq!(manifest["target"]["argv"][2], "<redacted>");
    let snapshot = std::fs::read_to_string(record.join("snapshot.json")).unwrap();
    assert!(snapshot.contains("postgres://app:<redacted>@db/app"), "{snapshot}");
    assert!(snapshot.contains("\"PATH\""), "{snapshot}");
    let attempts = std::fs::read_to_string(record.join("attempts.jsonl")).unwrap();
    assert!(attempts.contains("password=<redacted>&user=bob"), "{attempts}");
    // A resumed hunt would run `<redacted>` as the password: refused in one line.
    let resume = run_with_secrets(dir.path(), &["sweep", "--resume", "rec"]);
    assert_eq!(resume.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&resume.stderr);
    assert!(stderr.contains("cannot be resumed") && stderr.lines().count() == 1, "{stderr}");
}

#[test]
fn a_shell_target_is_redacted_in_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let script = format!("MYSQL_PWD=shellpw-e1e1 {} --password shellarg-e2e2", fixture().display());
    let hunt = run_with_secrets(
        dir.path(),
        &["sweep", "--profiles", "default", "--runs", "1", "--record", "rec", "--shell", &script],
    );
    assert_eq!(hunt.status.code(), Some(1), "{}", String::from_utf8_lossy(&hunt.stderr));
    let written = everything_written(dir.path(), &dir.path().join("rec"), &hunt);
    assert_no_secret(&written);
    for secret in ["shellpw-e1e1", "shellarg-e2e2"] {
        for (name, content) in &written {
            assert!(!contains(content, secret), "{secret:?} written in {name}");
        }
    }
}

#[test]
fn a_matrix_of_secret_values_writes_none_of_them() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = fixture();
    let mut args = vec![
        "matrix",
        "-D",
        "API_TOKEN=mtok-d1d1,mtok-d2d2",
        "-D",
        "DB_URL=postgres://u:mpw-d3d3@h/db,postgres://u:mpw-d4d4@h/db",
        "--runs",
        "1",
        "--confirm",
        "0",
        "--record",
        "rec",
        "--",
        fixture.to_str().unwrap(),
    ];
    args.extend(IN_ARGS);
    let hunt = run_with_secrets(dir.path(), &args);
    // Every cell fails, the baseline too: not a condition, whatever the verdict says.
    assert!(matches!(hunt.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&hunt.stderr));
    let written = everything_written(dir.path(), &dir.path().join("rec"), &hunt);
    assert_no_secret(&written);
    for secret in ["mtok-d1d1", "mtok-d2d2", "mpw-d3d3", "mpw-d4d4"] {
        for (name, content) in &written {
            assert!(!contains(content, secret), "{secret:?} written in {name}");
        }
    }
    // Four cells, still told apart, every one of them run.
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("rec/summary.json")).unwrap()).unwrap();
    let cells = summary["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4, "{summary}");
    let mut names: Vec<&str> = cells.iter().map(|c| c["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 4, "{names:?}");
    assert!(names.iter().all(|n| n.contains("API_TOKEN=<redacted>")), "{names:?}");
    assert!(cells.iter().all(|c| c["attempts"] == 1), "{summary}");
}

#[test]
fn no_redact_keeps_every_secret() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = fixture();
    let hunt = run_with_secrets(dir.path(), &sweep_args(&["--no-redact"], fixture.to_str().unwrap()));
    assert_eq!(hunt.status.code(), Some(1), "{}", String::from_utf8_lossy(&hunt.stderr));
    let record = dir.path().join("rec");
    let all: Vec<u8> = files(&record).into_iter().flat_map(|(_, c)| c).collect();
    for secret in secrets() {
        assert!(contains(&all, secret), "{secret:?} is missing from the --no-redact record");
    }
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(record.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["redacted"], false);
    let snapshot = std::fs::read_to_string(record.join("snapshot.json")).unwrap();
    assert!(snapshot.contains("mysqlpwd-7f3k"), "{snapshot}");
    // Its reports are redacted unless asked otherwise.
    let html = run_with_secrets(dir.path(), &["report", "rec", "--format", "html"]);
    assert!(!contains(&html.stdout, "mysqlpwd-7f3k") && !contains(&html.stdout, "SECRETGHPTOKEN01"));
    let raw = run_with_secrets(dir.path(), &["--no-redact", "report", "rec", "--format", "html"]);
    assert!(contains(&raw.stdout, "mysqlpwd-7f3k"));
}

#[test]
fn generated_job_files_refuse_a_secret_argument() {
    let dir = tempfile::tempdir().unwrap();
    let hunts: [&[&str]; 5] = [
        &["slurm-script", "sweep", "--runs", "2", "--slurm", "2", "--", "true", "--password", "hunter2"],
        &[
            "dispatch",
            "github",
            "--shards",
            "2",
            "--install",
            "true",
            "sweep",
            "--runs",
            "2",
            "--",
            "true",
            "--token=hunter2",
        ],
        &[
            "dispatch",
            "k8s",
            "--shards",
            "2",
            "--image",
            "i",
            "--pvc",
            "p",
            "matrix",
            "-D",
            "GH_PAT=hunter2,x",
            "--",
            "true",
        ],
        &["dispatch", "github", "--shards", "2", "--install", "true", "sweep", "--shell", "curl https://u:hunter2@h/"],
        // A dispatch option of its own, not only the hunt's arguments.
        &["dispatch", "github", "--shards", "2", "--install-from-git", "https://u:hunter2@h/r", "sweep", "--", "true"],
    ];
    for args in hunts {
        let out = run_with_secrets(dir.path(), args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(!contains(&out.stdout, "hunter2") && !stderr.contains("hunter2"), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains("holds a secret") && stderr.contains("--no-redact"), "{args:?}: {stderr}");
        // With --no-redact the user gets what was asked, the secret included.
        let mut raw = vec!["--no-redact"];
        raw.extend(args);
        let out = run_with_secrets(dir.path(), &raw);
        assert!(out.status.success(), "{raw:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(contains(&out.stdout, "hunter2"), "{raw:?}");
    }
}

// `hypo list` printed a kill test's secrets on the terminal (the
// hypotheses file keeps the command, which `hypo run` runs), and the text's escape sequences.
#[test]
fn hypo_list_shows_no_secret_of_a_kill_test_unless_told() {
    let dir = tempfile::tempdir().unwrap();
    let script = "curl -H 'Authorization: Bearer hypobearer-1q2w' -u bob:hypouser-3e4r x; exit 1";
    let added =
        run_with_secrets(dir.path(), &["hypo", "add", "a token race \x1b]0;title\x07", "--", "sh", "-c", script]);
    assert!(added.status.success(), "{}", String::from_utf8_lossy(&added.stderr));
    let list = run_with_secrets(dir.path(), &["hypo", "list"]);
    let shown = String::from_utf8_lossy(&list.stdout);
    for secret in ["hypobearer-1q2w", "hypouser-3e4r"] {
        assert!(!shown.contains(secret), "{secret} shown: {shown}");
    }
    assert!(shown.contains("Authorization: Bearer <redacted>") && shown.contains("bob:<redacted>"), "{shown}");
    assert!(!shown.contains('\x1b') && shown.contains("\\u{1b}]0;title"), "{shown}");
    let raw = run_with_secrets(dir.path(), &["--no-redact", "hypo", "list"]);
    assert!(String::from_utf8_lossy(&raw.stdout).contains("hypobearer-1q2w"));
}

/// A pytest suite whose parameter ids hold secrets: a victim of a polluter under a token id,
/// another under a database URL, two ids that differ only in their secret, and a test that
/// prints the value of a secret-named variable that has no shape of its own.
const SECRET_IDS_SUITE: &str = r#"import os
import pytest
from tests import registry

def test_polluter():
    registry.STATE.append(1)

@pytest.mark.parametrize("dsn", ["x"], ids=["token=ghp_0123456789abcdefghijSECRETID01"])
def test_victim(dsn):
    assert not registry.STATE, "polluted"

@pytest.mark.parametrize("url", ["y"], ids=["postgres://app:PASSWORDID7@db/app"])
def test_url(url):
    print("connecting with", os.environ["MY_API_TOKEN"])
    assert not registry.STATE

@pytest.mark.parametrize("key", ["a", "b"], ids=["api_key=twinsecretA1", "api_key=twinsecretB2"])
def test_twin(key):
    pass
"#;

/// The secrets of [`SECRET_IDS_SUITE`] and its environment.
const ID_SECRETS: &[&str] =
    &["SECRETID01", "ghp_0123456789", "PASSWORDID7", "twinsecretA1", "twinsecretB2", "plainvalue-of-9k2m"];

/// A project holding [`SECRET_IDS_SUITE`].
fn secret_ids_project(dir: &Path) -> PathBuf {
    let project = dir.join("project");
    std::fs::create_dir_all(project.join("tests")).unwrap();
    std::fs::write(project.join("tests/__init__.py"), "").unwrap();
    std::fs::write(project.join("tests/registry.py"), "STATE = []\n").unwrap();
    std::fs::write(project.join("tests/test_secret.py"), SECRET_IDS_SUITE).unwrap();
    project
}

/// `flakehunt [pre...] suite ARGS` in `project`, with the secret-named variable set.
fn suite_in(project: &Path, pre: &[&str], args: &[&str]) -> Output {
    crate::harness::flakehunt()
        .args(pre)
        .arg("suite")
        .args(args)
        .current_dir(project)
        .env("MY_API_TOKEN", "plainvalue-of-9k2m")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
}

#[track_caller]
fn assert_none_of(secrets: &[&str], written: &[(String, Vec<u8>)]) {
    for secret in secrets {
        for (name, content) in written {
            assert!(!contains(content, secret), "{secret:?} written in {name}:\n{}", String::from_utf8_lossy(content));
        }
    }
}

fn by_id(summary: &serde_json::Value) -> std::collections::BTreeMap<String, serde_json::Value> {
    summary["tests"].as_array().unwrap().iter().map(|t| (t["id"].as_str().unwrap().to_owned(), t.clone())).collect()
}

const VICTIM_WRITTEN: &str = "tests/test_secret.py::test_victim[token=<redacted>]";
const URL_WRITTEN: &str = "tests/test_secret.py::test_url[postgres://app:<redacted>@db/app]";

#[test]
fn a_suite_writes_no_secret_of_its_test_ids_and_keeps_their_shape() {
    let dir = tempfile::tempdir().unwrap();
    let project = secret_ids_project(dir.path());
    let record = dir.path().join("rec");
    let hunt =
        suite_in(&project, &[], &["--runs", "6", "--seed", "1", "--record", record.to_str().unwrap(), "--pytest"]);
    assert_eq!(hunt.status.code(), Some(1), "{}", String::from_utf8_lossy(&hunt.stderr));
    let mut written: Vec<(String, Vec<u8>)> =
        files(&record).into_iter().map(|(p, c)| (p.display().to_string(), c)).collect();
    written.push(("suite stdout".into(), hunt.stdout.clone()));
    written.push(("suite stderr".into(), hunt.stderr.clone()));
    for format in ["html", "md", "json", "junit", "term"] {
        let out = run_with_secrets(dir.path(), &["report", record.to_str().unwrap(), "--format", format]);
        assert!(out.status.success(), "report --format {format}: {}", String::from_utf8_lossy(&out.stderr));
        written.push((format!("report --format {format}"), out.stdout));
    }
    assert_none_of(ID_SECRETS, &written);

    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(record.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["complete"], true, "the classification found every run it made: {summary:#}");
    let tests = by_id(&summary);
    // The ids keep their brackets; the victims were told by their polluter and their
    // reproducers checked to fail: the check read the run's output before it was redacted.
    for id in [VICTIM_WRITTEN, URL_WRITTEN] {
        let t = tests.get(id).unwrap_or_else(|| panic!("no {id} in {summary:#}"));
        assert_eq!(t["category"], "order-dependent-victim", "{t:#}");
        assert_eq!(t["polluters"], serde_json::json!(["tests/test_secret.py::test_polluter"]), "{t:#}");
        let reproducer: Vec<&str> = t["reproducer"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
        assert_eq!(reproducer[reproducer.len() - 2..], ["tests/test_secret.py::test_polluter", id], "{t:#}");
    }
    // Two ids that differ only in their secret stay two tests.
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(record.join("manifest.json")).unwrap()).unwrap();
    let selection: Vec<&str> =
        manifest["extra"]["suite"]["selection"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert!(selection.contains(&"tests/test_secret.py::test_twin[api_key=<redacted>]"), "{selection:?}");
    assert!(selection.contains(&"tests/test_secret.py::test_twin[api_key=<redacted>#2]"), "{selection:?}");
    assert!(selection.contains(&VICTIM_WRITTEN) && selection.contains(&URL_WRITTEN), "{selection:?}");
    // The value of the secret-named variable the test printed, though it has no shape.
    let attempts = std::fs::read_to_string(record.join("attempts.jsonl")).unwrap();
    assert!(attempts.contains("connecting with <redacted>"), "{attempts}");
    // `report` reaches the live run's conclusions from the record alone.
    let report = run_with_secrets(dir.path(), &["report", record.to_str().unwrap(), "--format", "json"]);
    let recomputed: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(recomputed["tests"], summary["tests"]);
}

#[test]
fn a_report_of_a_suite_recorded_without_redaction_redacts_ids_keeping_their_shape() {
    let dir = tempfile::tempdir().unwrap();
    let project = secret_ids_project(dir.path());
    let record = dir.path().join("rec");
    let args = ["--runs", "6", "--seed", "1", "--record", record.to_str().unwrap(), "--json", "--pytest"];
    let hunt = suite_in(&project, &["--no-redact"], &args);
    assert_eq!(hunt.status.code(), Some(1), "{}", String::from_utf8_lossy(&hunt.stderr));
    let raw: serde_json::Value = serde_json::from_slice(&hunt.stdout).unwrap();
    // Without redaction the ids, the reproducers and the classification are the real ones.
    let victim = "tests/test_secret.py::test_victim[token=ghp_0123456789abcdefghijSECRETID01]";
    let raw_victim = by_id(&raw).remove(victim).unwrap_or_else(|| panic!("no {victim} in {raw:#}"));
    assert_eq!(raw_victim["reproducer"].as_array().unwrap().last().unwrap(), victim, "{raw_victim:#}");
    assert_eq!(raw["complete"], true, "{raw:#}");
    let mut written = Vec::new();
    for format in ["html", "md", "json", "junit", "term"] {
        let out = run_with_secrets(dir.path(), &["report", record.to_str().unwrap(), "--format", format]);
        assert!(out.status.success(), "report --format {format}: {}", String::from_utf8_lossy(&out.stderr));
        written.push((format!("report --format {format}"), out.stdout));
    }
    // The record's own values are its; the report of it is redacted.
    assert_none_of(&ID_SECRETS[..5], &written);
    let report = run_with_secrets(dir.path(), &["report", record.to_str().unwrap(), "--format", "json"]);
    let redacted: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    let tests = by_id(&redacted);
    for id in [VICTIM_WRITTEN, URL_WRITTEN] {
        let t = tests.get(id).unwrap_or_else(|| panic!("no {id} in {redacted:#}"));
        assert_eq!(t["category"], "order-dependent-victim", "{t:#}");
        assert_eq!(t["reproducer"].as_array().unwrap().last().unwrap(), id, "{t:#}");
    }
    assert_eq!(redacted["complete"], true, "{redacted:#}");
}

#[test]
fn the_value_of_a_secret_named_variable_is_redacted_wherever_it_is_printed() {
    let dir = tempfile::tempdir().unwrap();
    // Printed without its name, where no rule by shape or key can see it; the short and plain
    // values of secret-named variables are ordinary words in output and stay.
    let script = "echo \"using $MY_API_TOKEN and $SESSION_SECRET\"; echo \"auth $AUTH_MODE, $USE_TOKEN\" >&2; exit 1";
    let out = crate::harness::flakehunt()
        .args(["matrix", "-D", "SESSION_SECRET=matrixvalue-5t6y,matrixvalue-7u8i", "--runs", "1", "--confirm", "0"])
        .args(["--record", "rec", "--shell", script])
        .current_dir(dir.path())
        .env("MY_API_TOKEN", "EnvValue0nly4Name")
        .env("AUTH_MODE", "disabled")
        .env("USE_TOKEN", "1")
        .output();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
    let record = dir.path().join("rec");
    let mut written: Vec<(String, Vec<u8>)> =
        files(&record).into_iter().map(|(p, c)| (p.display().to_string(), c)).collect();
    written.push(("stdout".into(), out.stdout.clone()));
    written.push(("stderr".into(), out.stderr.clone()));
    for format in ["html", "md", "json", "junit", "term"] {
        let report = run_with_secrets(dir.path(), &["report", "rec", "--format", format]);
        written.push((format!("report --format {format}"), report.stdout));
    }
    assert_none_of(&["EnvValue0nly4Name", "matrixvalue-5t6y", "matrixvalue-7u8i"], &written);
    let attempts = std::fs::read_to_string(record.join("attempts.jsonl")).unwrap();
    assert!(attempts.contains("using <redacted> and <redacted>"), "{attempts}");
    assert!(attempts.contains("auth disabled, 1"), "{attempts}");
}

#[test]
fn an_error_line_quoting_an_argument_holds_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [&[&str]; 2] = [
        &["sweep", "--runs", "1", "--profiles", "token=ghp_0123456789abcdefghijERRLINE01", "--", "true"],
        &["matrix", "--rlimit", "nofile=password=errline-pw-3d4f", "--", "true"],
    ];
    for args in cases {
        let out = run_with_secrets(dir.path(), args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(!stderr.contains("ERRLINE01") && !stderr.contains("errline-pw-3d4f"), "{args:?}: {stderr}");
        assert!(stderr.contains("<redacted>") && stderr.lines().count() == 1, "{args:?}: {stderr}");
    }
}

/// A pytest test whose parameter id holds a token, failing every third iteration (so the plain
/// target fails twice) with a secret in its assertion and the value of a secret-named variable
/// on its output.
const SECRET_NODE_TEST: &str = r#"import os
import pytest

@pytest.mark.parametrize("k", ["x"], ids=["token=ghp_0123456789abcdefghijNODESECRET1"])
def test_p(k):
    print("env", os.environ["MY_API_TOKEN"])
    assert int(os.environ["FLAKEHUNT_ITERATION"]) % 3 != 0, "password=nodepw-5t6y"
"#;

// The node id is an argument, and pytest quotes it in its output (the summary line,
// `PYTEST_CURRENT_TEST`): redacted there, it kept its `]` nowhere, so the manifest's argv,
// every signature and the live display's failure lines read `test_p[token=<redacted>` and ran
// into what followed.
#[test]
fn a_hunt_of_a_node_id_holding_a_secret_keeps_its_brackets_everywhere_it_is_shown() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join("tests")).unwrap();
    std::fs::write(project.join("tests/__init__.py"), "").unwrap();
    std::fs::write(project.join("tests/test_node.py"), SECRET_NODE_TEST).unwrap();
    let node = "tests/test_node.py::test_p[token=ghp_0123456789abcdefghijNODESECRET1]";
    let written_node = "tests/test_node.py::test_p[token=<redacted>]";
    let record = dir.path().join("rec");
    let hunt = crate::harness::flakehunt()
        .args(["hunt", "--seed", "1", "--record", record.to_str().unwrap(), "--pytest", node])
        .current_dir(&project)
        .env("MY_API_TOKEN", "plainvalue-of-4h5j")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output();
    let stderr = String::from_utf8_lossy(&hunt.stderr);
    assert_eq!(hunt.status.code(), Some(1), "{stderr}");
    let mut written: Vec<(String, Vec<u8>)> =
        files(&record).into_iter().map(|(p, c)| (p.display().to_string(), c)).collect();
    written.push(("hunt stdout".into(), hunt.stdout.clone()));
    written.push(("hunt stderr".into(), hunt.stderr.clone()));
    for format in ["html", "md", "json", "junit", "term"] {
        let out = run_with_secrets(dir.path(), &["report", record.to_str().unwrap(), "--format", format]);
        assert!(out.status.success(), "report --format {format}: {}", String::from_utf8_lossy(&out.stderr));
        written.push((format!("report --format {format}"), out.stdout));
    }
    assert_none_of(&["NODESECRET1", "ghp_0123456789", "nodepw-5t6y", "plainvalue-of-4h5j"], &written);
    // The live display's failure line, the argv and every signature keep the id whole.
    let failure = stderr.lines().find(|l| l.contains("new failure")).unwrap_or_else(|| panic!("{stderr}"));
    // pytest cuts its summary line to the terminal's width: past 80 columns, the id ends it.
    let whole = |line: &str| {
        line.contains(&format!("{written_node} - "))
            || line.contains(&format!("{written_node}:"))
            || line.trim_end().ends_with(written_node)
    };
    assert!(whole(failure), "{failure}");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(record.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["target"]["argv"].as_array().unwrap().last().unwrap(), written_node, "{manifest:#}");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(record.join("summary.json")).unwrap()).unwrap();
    let signatures = summary["signatures"].as_array().unwrap();
    assert!(!signatures.is_empty(), "{summary:#}");
    for s in signatures {
        let signature = s["signature"].as_str().unwrap();
        assert!(signature.contains(written_node), "{signature}");
        let example = s["example"].as_str().unwrap();
        assert!(example.lines().any(|l| l.starts_with(&format!("FAILED {written_node}")) && whole(l)), "{s:#}");
    }
}
