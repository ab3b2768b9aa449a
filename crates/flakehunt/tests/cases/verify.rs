//! End-to-end tests of `flakehunt verify`: a sweep and a hunt reproduce the race of
//! `fixtures/verify/gil_race.py` under tight-gil, then verify proves its fix (`fixed`, with the
//! attempts the recorded rate needs), finds it unfixed (`not-fixed`), or refuses a fix that made
//! the condition inert (`inconclusive`), each with its exit code.

use crate::harness::{fixture_arg, refused_with, run_in, Hunt, Run};

/// Wilson's 95 % lower end of `f` failures in `n` (E. B. Wilson, JASA 22, 1927), and the least
/// `N` with `(1 - p)^N <= 1 - level`: the attempts a verification must run, computed here
/// independently of the library.
fn attempts_for(f: u64, n: u64, level: f64) -> u64 {
    let (f, n, z) = (f as f64, n as f64, 1.959_963_984_540_054_f64);
    let p = f / n;
    let lo = (p + z * z / (2.0 * n) - z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt()) / (1.0 + z * z / n);
    let mut attempts = 1;
    while (1.0 - lo).powi(attempts) > 1.0 - level {
        attempts += 1;
    }
    attempts as u64
}

fn race() -> Vec<String> {
    vec!["python3".into(), fixture_arg("verify/gil_race.py")]
}

/// A sweep of the race: tight-gil fails on every even iteration (8/16), default never.
fn sweep() -> Run {
    let run =
        Hunt::sweep().args(["--profiles", "default,tight-gil", "--runs", "16", "--seed", "3"]).command(race()).run();
    run.expect_code(1);
    let summary = run.summary();
    assert_eq!(summary["verdict"], "condition-sensitive", "{}", run.stderr);
    assert_eq!(
        (run.cell("tight-gil")["failures"].as_u64(), run.cell("default")["failures"].as_u64()),
        (Some(8), Some(0))
    );
    run
}

fn verify(record: &Run, env: &[(&str, &str)], args: &[&str]) -> Run {
    let mut hunt = Hunt::of("verify").args([record.dir.as_os_str()]).args(args.iter().copied());
    for (name, value) in env {
        hunt = hunt.env(name, *value);
    }
    hunt.run()
}

fn condition<'a>(summary: &'a serde_json::Value, cell: &str) -> &'a serde_json::Value {
    summary["details"]["conditions"].as_array().unwrap().iter().find(|c| c["cell"] == cell).unwrap()
}

#[test]
fn a_fixed_race_is_fixed_after_the_attempts_its_recorded_rate_needs() {
    let sweep = sweep();
    let needed = attempts_for(8, 16, 0.99);
    let run = verify(&sweep, &[("GIL_RACE_FIXED", "1")], &[]);
    run.expect_code(0);
    let summary = run.json();
    assert_eq!(summary["kind"], "verify");
    assert_eq!(summary["verdict"], "fixed", "{}", run.stderr);
    let c = condition(&summary, "tight-gil");
    assert_eq!(c["needed"].as_u64(), Some(needed));
    assert_eq!(c["now"]["attempts"].as_u64(), Some(needed), "every needed attempt ran under tight-gil");
    assert_eq!(c["then"]["failures"].as_u64(), Some(8));
    let text = summary["verdict_text"].as_str().unwrap();
    assert!(text.contains("failure rate under tight-gil now < ") && text.contains("at 99 %"), "{text}");
    assert!(text.contains(&format!("(0/{needed}), was 50.0% (8/16)")), "{text}");
    // Said before starting: how many attempts and why.
    assert!(
        run.stderr.contains(&format!("{needed} clean attempts in a row would happen less than 1 %")),
        "{}",
        run.stderr
    );
    // Only the condition ran: the sweep's default cell, which never failed, is no reproduction.
    assert_eq!(summary["cells"].as_array().unwrap().len(), 1);
    let manifest = run.manifest();
    let verified = &manifest["extra"]["verify"];
    assert_eq!(verified["run_id"], sweep.run_id());
    assert!(verified["hash"].as_str().unwrap().starts_with("blake3:"));
    assert_eq!(verified["kind"], "sweep");
}

#[test]
fn an_unfixed_race_is_not_fixed_with_its_rate_now_and_then() {
    let sweep = sweep();
    let run = verify(&sweep, &[], &[]);
    run.expect_code(1);
    let summary = run.json();
    assert_eq!(summary["verdict"], "not-fixed", "{}", run.stderr);
    let c = condition(&summary, "tight-gil");
    assert!(c["now"]["failures"].as_u64().unwrap() > 0);
    assert!(c["p_value"].as_f64().is_some());
    let text = summary["verdict_text"].as_str().unwrap();
    assert!(text.contains("tight-gil still fails") && text.contains("was 50.0% (8/16)"), "{text}");
    assert!(text.contains("(the same signature)"), "{text}");
    // A CI gate reads a failure, not a flaky pass, however rare the failure now.
    let junit = run_in(&run.dir, &["report", ".", "--format", "junit"]);
    let junit = String::from_utf8_lossy(&junit.stdout);
    assert!(junit.contains("<failure") && !junit.contains("flakyFailure"), "{junit}");
}

#[test]
fn a_fix_that_makes_the_condition_inert_is_inconclusive() {
    let sweep = sweep();
    // The program sets its own switch interval: tight-gil no longer takes effect, and its
    // clean attempts prove nothing about the race.
    let run = verify(&sweep, &[("GIL_RACE_OWN_INTERVAL", "1")], &[]);
    run.expect_code(3);
    let summary = run.json();
    assert_eq!(summary["verdict"], "inconclusive", "{}", run.stderr);
    assert!(condition(&summary, "tight-gil")["inert"].is_string());
    assert!(summary["verdict_text"].as_str().unwrap().contains("had no effect here"), "{}", summary["verdict_text"]);
    let junit = run_in(&run.dir, &["report", ".", "--format", "junit"]);
    assert!(String::from_utf8_lossy(&junit.stdout).contains("<skipped"), "an inconclusive verification is no pass");
}

#[test]
fn a_fix_that_hangs_is_judged_by_the_hang_rule_and_is_neither_fixed_nor_not_fixed() {
    let sweep = sweep();
    // Fixed, but the fourth attempt sleeps for an hour: after three passes the hang rule judges
    // it at a limit derived from them, not at the default timeout of ten minutes.
    let run = verify(&sweep, &[("GIL_RACE_HANGS_AT", "4")], &[]);
    run.expect_code(3);
    let summary = run.json();
    assert_eq!(summary["verdict"], "inconclusive", "{}", run.stderr);
    let c = condition(&summary, "tight-gil");
    assert_eq!(c["hung"].as_u64(), Some(1), "{c}");
    assert_eq!(c["now"]["failures"].as_u64(), Some(0), "a hang is not the race: {c}");
    let text = summary["verdict_text"].as_str().unwrap();
    assert!(text.contains("hung in 1 of") && text.contains("never did"), "{text}");
    let attempts = crate::harness::attempts_in(&run.dir);
    let hung = attempts.iter().find(|a| a["iteration"] == 4).unwrap();
    assert_eq!(hung["outcome"], "timeout");
    assert!(hung["hang"]["idle"] == true && hung["hang"]["limit"].as_f64().unwrap() < 600.0, "{hung}");
}

#[test]
fn a_condition_inert_in_the_verified_record_is_never_proved_fixed() {
    // Negative control: the program set its own switch interval and failed anyway, so the
    // record's failures under tight-gil were not tight-gil's.
    let inert = Hunt::sweep()
        .args(["--profiles", "tight-gil", "--runs", "16", "--seed", "3"])
        .env("GIL_RACE_OWN_INTERVAL", "1")
        .env("GIL_RACE_ANY_INTERVAL", "1")
        .command(race())
        .run();
    assert!(inert.cell("tight-gil")["inert"] == true, "{}", inert.stderr);
    // The fix removes both: tight-gil now takes effect, and nothing fails under it.
    let run = verify(&inert, &[("GIL_RACE_FIXED", "1")], &[]);
    run.expect_code(3);
    let summary = run.json();
    assert_eq!(summary["verdict"], "inconclusive", "{}", run.stderr);
    let c = condition(&summary, "tight-gil");
    assert!(c["inert"].is_null() && c["now"]["failures"] == 0, "{c}");
    assert!(summary["verdict_text"].as_str().unwrap().contains("had no effect in the verified record"), "{summary}");
}

#[test]
fn a_budget_that_cannot_fit_the_attempts_says_what_it_costs_and_ends_inconclusive() {
    let sweep = sweep();
    let run = verify(&sweep, &[("GIL_RACE_FIXED", "1")], &["--budget", "1ms"]);
    run.expect_code(3);
    assert!(run.stderr.contains("--budget 1ms fits about"), "{}", run.stderr);
    let summary = run.json();
    assert_eq!(summary["verdict"], "inconclusive", "{}", run.stderr);
}

#[test]
fn a_hunts_reproducing_arm_is_verified_alternating_with_the_baseline() {
    let hunt = Hunt::of("hunt").args(["--seed", "5", "--budget", "5m"]).command(race()).run();
    hunt.expect_code(1);
    let summary = hunt.summary();
    assert_eq!(summary["reproduction"]["cell"], "tight-gil", "{}", hunt.stderr);
    let confirmation = &summary["details"]["confirmation"];
    let (f, n) = (confirmation["cell_failures"].as_u64().unwrap(), confirmation["cell_attempts"].as_u64().unwrap());
    let run = verify(&hunt, &[("GIL_RACE_FIXED", "1")], &[]);
    run.expect_code(0);
    let verified = run.json();
    assert_eq!(verified["verdict"], "fixed", "{}", run.stderr);
    let arm = condition(&verified, "tight-gil");
    assert_eq!(arm["then_source"], "the hunt's confirmation");
    assert_eq!(arm["needed"].as_u64(), Some(attempts_for(f, n, 0.99)));
    let base = condition(&verified, "default");
    assert_eq!((base["role"].as_str(), base["verdict"].as_str()), (Some("baseline"), Some("clean")));
    assert_eq!(base["now"]["attempts"], arm["now"]["attempts"], "the baseline alternates with the arm");
    let unfixed = verify(&hunt, &[], &[]);
    unfixed.expect_code(1);
    assert_eq!(unfixed.json()["verdict"], "not-fixed");
}

#[test]
fn a_record_that_reproduced_nothing_is_refused() {
    let clean = Hunt::sweep().args(["--profiles", "default", "--runs", "3"]).command(race()).run();
    clean.expect_code(0);
    let out = run_in(std::env::temp_dir(), &["verify", clean.dir.to_str().unwrap()]);
    refused_with(&out, 2, "reproduced nothing");
    let out = run_in(std::env::temp_dir(), &["verify", "/nonexistent/record"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_cut_verification_resumes_to_its_verdict_and_reports_then_against_now() {
    let sweep = sweep();
    let needed = attempts_for(8, 16, 0.99);
    let run = verify(&sweep, &[("GIL_RACE_FIXED", "1")], &[]);
    run.expect_code(0);
    // Keep five whole lines and half of the sixth, as a killed flakehunt would.
    let path = run.dir.join("attempts.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    std::fs::write(&path, format!("{}{}", lines[..5].concat(), &lines[5][..lines[5].len() / 2])).unwrap();
    std::fs::remove_file(run.dir.join("summary.json")).unwrap();
    let resumed =
        Hunt::of("verify").without_record().args(["--resume"]).args([&run.dir]).env("GIL_RACE_FIXED", "1").run();
    resumed.expect_code(0);
    let summary = resumed.json();
    assert_eq!(summary["verdict"], "fixed", "{}", resumed.stderr);
    let ids: std::collections::BTreeSet<u64> =
        crate::harness::attempts_in(&run.dir).iter().map(|a| a["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, (0..needed).collect(), "every attempt once");
    let md = run_in(&run.dir, &["report", ".", "--format", "md"]);
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains("| condition | then | now |") && md.contains("50.0% (8/16"), "{md}");
    assert!(md.contains(&format!("0.0% (0/{needed}")), "{md}");
    let term = run_in(&run.dir, &["report", "."]);
    let term = String::from_utf8_lossy(&term.stdout);
    assert!(term.contains("then") && term.contains("50.0% (8/16)") && term.contains("verdict: fixed"), "{term}");
    // The HTML page sets the two rates side by side, each with its interval (now: the bound).
    let html = run_in(&run.dir, &["report", ".", "--format", "html"]);
    let html = String::from_utf8_lossy(&html.stdout);
    assert!(html.contains("id=\"chart-verify\"") && html.contains("then 50.0%"), "{html}");
    assert!(html.contains("now &lt; ") && html.contains("(fixed)"), "the bound now");
}

/// A verification cut short resumes only on the code it started on: attempts of two versions
/// of the code in one verdict would prove neither.
#[test]
fn a_verification_resumes_only_on_the_code_it_started_on() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "commit.gpgsign=false"])
            .args(args)
            .current_dir(repo)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    let app = repo.join("app.py");
    std::fs::write(
        &app,
        "import os, sys\nFIXED = False\nsys.exit(3 if os.environ.get('COND') == 'on' and not FIXED else 0)\n",
    )
    .unwrap();
    std::fs::write(repo.join("flakehunt.toml"), "[profiles.cond]\nenv = { COND = \"on\" }\n").unwrap();
    git(&["init", "-q"]);
    git(&["add", "app.py", "flakehunt.toml"]);
    git(&["commit", "-q", "-m", "app"]);
    let out = run_in(
        repo,
        &["sweep", "--profiles", "default,cond", "--runs", "6", "-q", "--record", "rec", "--", "python3", "app.py"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    edit(&app, "FIXED = False", "FIXED = True");
    let out = run_in(repo, &["verify", "rec", "--json", "-q", "--record", "v"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo.join("v/manifest.json")).unwrap()).unwrap();
    assert!(manifest["extra"]["verify"]["code"].as_str().unwrap().starts_with("blake3:"), "{manifest}");
    // Cut after two attempts, as a killed flakehunt would leave it.
    let attempts = repo.join("v/attempts.jsonl");
    let text = std::fs::read_to_string(&attempts).unwrap();
    std::fs::write(&attempts, text.split_inclusive('\n').take(2).collect::<String>()).unwrap();
    std::fs::remove_file(repo.join("v/summary.json")).unwrap();
    // The code changed again: refused, and nothing is run.
    edit(&app, "FIXED = True", "FIXED = True  # tidied");
    let out = run_in(repo, &["verify", "--resume", "v"]);
    refused_with(&out, 2, "cannot be resumed: the code in");
    assert_eq!(std::fs::read_to_string(&attempts).unwrap().lines().count(), 2);
    // Back to the code it started on: it resumes to its verdict.
    edit(&app, "FIXED = True  # tidied", "FIXED = True");
    let out = run_in(repo, &["verify", "--resume", "v", "--json", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_matrix_is_verified_under_its_smallest_reproducing_overlay() {
    let condition_held = r#"[ "$LC_ALL" = C ] && [ -z "$MATRIX_FIXED" ]"#;
    let matrix = Hunt::of("matrix")
        .args(["-D", "LC_ALL=C.UTF-8,C", "-D", "TZ=UTC,Asia/Tokyo", "--runs", "4", "--seed", "2"])
        .command([fixture_arg("fail-when.sh"), condition_held.to_owned(), "2".to_owned()])
        .run();
    matrix.expect_code(1);
    let minimal = &matrix.summary()["details"]["minimal_overlay"];
    assert_eq!(minimal["LC_ALL"], "C", "{}", matrix.stderr);
    let cell = "LC_ALL=C TZ=UTC";
    let (f, n) = (matrix.cell(cell)["failures"].as_u64().unwrap(), matrix.cell(cell)["attempts"].as_u64().unwrap());
    let fixed = verify(&matrix, &[("MATRIX_FIXED", "1")], &[]);
    fixed.expect_code(0);
    let summary = fixed.json();
    assert_eq!(summary["verdict"], "fixed", "{}", fixed.stderr);
    let names: Vec<&str> = summary["cells"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, [cell], "only the smallest overlay's cell runs");
    assert_eq!(condition(&summary, cell)["needed"].as_u64(), Some(attempts_for(f, n, 0.99)));
    let unfixed = verify(&matrix, &[], &[]);
    unfixed.expect_code(1);
    assert_eq!(unfixed.json()["verdict"], "not-fixed");
}

#[test]
fn shards_of_a_verification_merge_into_its_verdict() {
    let sweep = sweep();
    let needed = attempts_for(8, 16, 0.99);
    let shard = |i: &str| verify(&sweep, &[("GIL_RACE_FIXED", "1")], &["--shard", i, "--seed", "7"]);
    let (one, two) = (shard("1/2"), shard("2/2"));
    // Half the attempts prove nothing yet.
    for part in [&one, &two] {
        part.expect_code(3);
        assert_eq!(part.json()["verdict"], "inconclusive", "{}", part.stderr);
    }
    let out = tempfile::tempdir().unwrap();
    let merged = out.path().join("merged");
    let m = run_in(out.path(), &["merge", one.dir.to_str().unwrap(), two.dir.to_str().unwrap(), "--into", "merged"]);
    assert_eq!(m.status.code(), Some(0), "{}", String::from_utf8_lossy(&m.stderr));
    let report = run_in(&merged, &["report", ".", "--format", "json"]);
    let summary: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(summary["verdict"], "fixed", "{summary}");
    assert_eq!(condition(&summary, "tight-gil")["now"]["attempts"].as_u64(), Some(needed));
}

/// Replaces `from` with `to` in the file at `path` (a fix, made as a user makes one).
fn edit(path: &std::path::Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{} lacks {from:?}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

/// Runs flakehunt with `args` in `project`: its exit code, its JSON summary and its stderr.
fn json_run(project: &std::path::Path, args: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    json_run_with(project, args, [("PYTHONDONTWRITEBYTECODE", "1")])
}

/// [`json_run`] with the environment `env` added.
fn json_run_with<K: AsRef<std::ffi::OsStr>, V: AsRef<std::ffi::OsStr>>(
    project: &std::path::Path,
    args: &[&str],
    env: impl IntoIterator<Item = (K, V)>,
) -> (Option<i32>, serde_json::Value, String) {
    let out = crate::harness::flakehunt().args(args).envs(env).current_dir(project).output();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("no JSON summary ({e}): {stderr}"));
    (out.status.code(), json, stderr)
}

/// A copy of the fixture `name` in `dir`, under its last component, for a test to change.
fn copy_fixture(name: &str, dir: &std::path::Path) -> std::path::PathBuf {
    let project = dir.join(name.rsplit('/').next().unwrap());
    let copied =
        std::process::Command::new("cp").arg("-r").arg(crate::harness::fixture(name)).arg(&project).status().unwrap();
    assert!(copied.success());
    project
}

/// The pytest suite fixture's victim, brittle test and non-idempotent test.
const PYTEST_SUITE_TESTS: [&str; 3] =
    ["tests/test_beta.py::test_victim", "tests/test_beta.py::test_brittle", "tests/test_gamma.py::test_non_idempotent"];

/// The pytest suite fixture copied into `dir`, with the record `rec` of a suite hunt of it that
/// found its three tests.
fn pytest_suite_record(dir: &std::path::Path) -> std::path::PathBuf {
    let project = copy_fixture("suite/pytest", dir);
    let (code, _, stderr) = json_run(
        &project,
        &["suite", "--pytest", "--runs", "6", "--seed", "1", "--json", "--quiet", "--record", "rec"],
    );
    assert_eq!(code, Some(1), "{stderr}");
    project
}

#[test]
fn a_suites_reproducers_are_verified_test_by_test() {
    let dir = tempfile::tempdir().unwrap();
    let project = pytest_suite_record(dir.path());
    let run = |args: &[&str]| json_run(&project, args);
    let [victim, brittle, repeated] = PYTEST_SUITE_TESTS;

    // The polluter cleans up after itself: the victim's reproducer passes, the others still fail.
    edit(
        &project.join("tests/test_alpha.py"),
        "    assert \"audit\" in HANDLERS\n",
        "    assert \"audit\" in HANDLERS\n    HANDLERS.remove(\"audit\")\n",
    );
    let (code, partly, stderr) = run(&["verify", "rec", "--json", "--record", "v1"]);
    assert_eq!((code, partly["verdict"].as_str()), (Some(1), Some("not-fixed")), "{stderr}");
    let mut cells: Vec<&str> =
        partly["cells"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    cells.sort_unstable();
    assert_eq!(cells, [brittle, victim, repeated], "each classified test with a reproducer, and only those");
    assert_eq!(condition(&partly, victim)["verdict"], "fixed");
    assert_eq!(condition(&partly, victim)["then_source"], "the suite's reproducer checks");
    for test in [brittle, repeated] {
        let c = condition(&partly, test);
        assert_eq!(c["verdict"], "not-fixed", "{test}");
        assert_eq!(c["signatures"][0]["seen_before"], true, "{test}: its own failure: {c}");
    }

    // Every test fixed.
    edit(
        &project.join("tests/test_beta.py"),
        "    assert SETTINGS.get",
        "    SETTINGS[\"encoding\"] = \"utf-8\"\n    assert SETTINGS.get",
    );
    edit(&project.join("tests/test_gamma.py"), "    _RUNS.append(1)\n", "    _RUNS.clear()\n    _RUNS.append(1)\n");
    // And the session fails after every test passed (as `--cov-fail-under` makes it): a run is
    // judged by its test's own result, not by the process's exit status.
    std::fs::write(
        project.join("conftest.py"),
        "def pytest_sessionfinish(session, exitstatus):\n    session.exitstatus = 1\n",
    )
    .unwrap();
    let (code, fixed, stderr) = run(&["verify", "rec", "--json", "--record", "v2"]);
    assert_eq!((code, fixed["verdict"].as_str()), (Some(0), Some("fixed")), "{stderr}");
    for test in [victim, brittle, repeated] {
        let c = condition(&fixed, test);
        assert_eq!(c["now"]["attempts"], c["needed"], "{test}");
    }
    let exits: Vec<serde_json::Value> =
        crate::harness::attempts_in(&project.join("v2")).iter().map(|a| a["exit_code"].clone()).collect();
    assert!(exits.iter().all(|e| e == 1), "every process failed, every test passed: {exits:?}");

    // The non-idempotent test is gone (renamed): its reproducer reports nothing of it, which is
    // neither its failure nor a pass.
    edit(&project.join("tests/test_gamma.py"), "def test_non_idempotent(", "def test_renamed(");
    let (code, gone, stderr) = run(&["verify", "rec", "--json", "--record", "v3"]);
    assert_eq!((code, gone["verdict"].as_str()), (Some(3), Some("inconclusive")), "{stderr}");
    let c = condition(&gone, repeated);
    assert_eq!((c["verdict"].as_str(), c["unreported"].as_u64()), (Some("inconclusive"), c["needed"].as_u64()), "{c}");
    assert!(c["text"].as_str().unwrap().contains("reported no result in "), "{c}");
    assert_eq!(condition(&gone, victim)["verdict"], "fixed");
    // A suite's reproducers are its commands.
    let out = crate::harness::flakehunt().args(["verify", "rec", "--", "true"]).current_dir(&project).output();
    refused_with(&out, 2, "whose reproducers are the commands verify runs");
}

/// A "fix" that only stops the test from running: skipped (`@pytest.mark.skip`, a second run
/// that skips itself), expected to fail (`xfail`), or deselected by a conftest while the rest
/// of its reproducer passes. Every process exits 0, and none of its runs is evidence: the
/// verification is inconclusive, never `fixed`.
#[test]
fn a_test_that_no_longer_runs_is_never_proved_fixed() {
    let dir = tempfile::tempdir().unwrap();
    let project = pytest_suite_record(dir.path());
    let run = |args: &[&str]| json_run(&project, args);
    let [victim, brittle, repeated] = PYTEST_SUITE_TESTS;

    edit(
        &project.join("tests/test_beta.py"),
        "def test_victim(",
        "@pytest.mark.skip(reason=\"quarantined\")\ndef test_victim(",
    );
    edit(
        &project.join("tests/test_beta.py"),
        "def test_brittle(",
        "@pytest.mark.xfail(reason=\"known\")\ndef test_brittle(",
    );
    edit(&project.join("tests/test_beta.py"), "from registry", "import pytest\n\nfrom registry");
    edit(
        &project.join("tests/test_gamma.py"),
        "    _RUNS.append(1)\n",
        "    if _RUNS:\n        pytest.skip(\"ran before in this process\")\n    _RUNS.append(1)\n",
    );
    let (code, skipped, stderr) = run(&["verify", "rec", "--json", "--record", "v1"]);
    assert_eq!((code, skipped["verdict"].as_str()), (Some(3), Some("inconclusive")), "{stderr}");
    for test in [victim, brittle, repeated] {
        let c = condition(&skipped, test);
        assert_eq!(c["verdict"], "inconclusive", "{test}: {c}");
        assert_eq!((c["now"]["attempts"].as_u64(), c["unreported"].as_u64()), (Some(0), c["needed"].as_u64()), "{c}");
        assert!(c["text"].as_str().unwrap().contains("it did not run (it was skipped"), "{c}");
    }
    let exits: Vec<serde_json::Value> =
        crate::harness::attempts_in(&project.join("v1")).iter().map(|a| a["exit_code"].clone()).collect();
    assert!(exits.iter().all(|e| e == 0), "every process passed: {exits:?}");

    // The victim deselected by the project's conftest: its polluter runs and passes alone.
    edit(&project.join("tests/test_beta.py"), "@pytest.mark.skip(reason=\"quarantined\")\n", "");
    std::fs::write(
        project.join("conftest.py"),
        "def pytest_collection_modifyitems(config, items):\n    gone = [i for i in items if i.name == \"test_victim\"]\n    config.hook.pytest_deselected(items=gone)\n    items[:] = [i for i in items if i not in gone]\n",
    )
    .unwrap();
    let (code, deselected, stderr) = run(&["verify", "rec", "--json", "--record", "v2"]);
    assert_eq!((code, deselected["verdict"].as_str()), (Some(3), Some("inconclusive")), "{stderr}");
    let c = condition(&deselected, victim);
    assert_eq!((c["verdict"].as_str(), c["now"]["attempts"].as_u64()), (Some("inconclusive"), Some(0)), "{c}");

    // The polluter quarantined instead: the victim runs and passes, but the condition it failed
    // under (its polluter first) no longer takes effect.
    std::fs::remove_file(project.join("conftest.py")).unwrap();
    edit(
        &project.join("tests/test_alpha.py"),
        "def test_polluter(",
        "@pytest.mark.skip(reason=\"quarantined\")\ndef test_polluter(",
    );
    edit(&project.join("tests/test_alpha.py"), "from registry", "import pytest\n\nfrom registry");
    let (code, quarantined, stderr) = run(&["verify", "rec", "--json", "--record", "v3"]);
    assert_eq!((code, quarantined["verdict"].as_str()), (Some(3), Some("inconclusive")), "{stderr}");
    let c = condition(&quarantined, victim);
    assert_eq!((c["verdict"].as_str(), c["now"]["attempts"].as_u64()), (Some("inconclusive"), Some(0)), "{c}");
    let text = c["text"].as_str().unwrap();
    assert!(text.contains("in which tests/test_alpha.py::test_polluter, which it failed after, did not run"), "{text}");
}

/// An adapter's one test (`--pytest`), marked skip or xfail after the hunt: every attempt exits 0
/// and runs nothing of it, which proves no fix; the same test really fixed is `fixed` (the
/// negative control: pytest's report of a passed test is read as such).
#[test]
fn an_adapters_test_that_no_longer_runs_is_never_proved_fixed() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_fixture("adapters/pytest-flaky", dir.path());
    let run = |args: &[&str]| json_run(&project, args);
    let (code, swept, stderr) = run(&[
        "sweep",
        "--profiles",
        "default",
        "--runs",
        "6",
        "--seed",
        "1",
        "--json",
        "--quiet",
        "--record",
        "rec",
        "--pytest",
        "test_flaky.py::test_balance",
    ]);
    assert_eq!((code, swept["failures"].as_u64()), (Some(1), Some(2)), "{stderr}");
    let test = project.join("test_flaky.py");
    let original = std::fs::read_to_string(&test).unwrap();
    for (i, mark) in
        ["@pytest.mark.skip(reason=\"quarantined\")", "@pytest.mark.xfail(reason=\"known\")"].iter().enumerate()
    {
        std::fs::write(
            &test,
            original.replace("def test_balance(", &format!("import pytest\n\n\n{mark}\ndef test_balance(")),
        )
        .unwrap();
        let record = format!("v{i}");
        let (code, verified, stderr) =
            run(&["verify", "rec", "--level", "90", "--json", "--quiet", "--record", &record]);
        assert_eq!((code, verified["verdict"].as_str()), (Some(3), Some("inconclusive")), "{mark}: {stderr}");
        let c = condition(&verified, "default");
        assert_eq!((c["now"]["attempts"].as_u64(), c["unreported"].as_u64()), (Some(0), c["needed"].as_u64()), "{c}");
        assert!(c["text"].as_str().unwrap().contains("attempts of its test: it did not run"), "{c}");
    }
    std::fs::write(&test, original.replace("0 if iteration() % 3 == 0 else 10", "10")).unwrap();
    let (code, fixed, stderr) = run(&["verify", "rec", "--level", "90", "--json", "--quiet", "--record", "v2"]);
    assert_eq!((code, fixed["verdict"].as_str()), (Some(0), Some("fixed")), "{stderr}");
}

/// A run of many tests (`--pytest` of a module, `--go-test` of a package, `pytest FILE`, `go test
/// PKG`) passes as a whole: the test that failed in the record, quarantined or renamed after the
/// hunt, or left out of the command verify is given, would let every attempt pass without it.
/// Verify refuses, exit 3, before any attempt; fixed, it is proved.
#[test]
fn a_failing_test_that_no_longer_runs_among_many_is_never_proved_fixed() {
    let dir = tempfile::tempdir().unwrap();
    let go_env = crate::harness::go_env(dir.path());
    let pytest = copy_fixture("adapters/pytest-flaky", dir.path());
    let go = copy_fixture("adapters/go-flaky", dir.path());
    // A table test whose case "short" fails on every third iteration.
    let table = "package ledger\n\nimport \"testing\"\n\nfunc TestTable(t *testing.T) {\n\tfor _, name := range []string{\"even\", \"short\"} {\n\t\tt.Run(name, func(t *testing.T) {\n\t\t\tif name == \"short\" && iteration()%3 == 0 {\n\t\t\t\tt.Error(\"one short\")\n\t\t\t}\n\t\t})\n\t}\n}\n";
    std::fs::create_dir(dir.path().join("table")).unwrap();
    let go_table = copy_fixture("adapters/go-flaky", &dir.path().join("table"));
    std::fs::write(go_table.join("ledger/table_test.go"), table).unwrap();
    let skip_py =
        ("def test_balance(", "import pytest\n\n\n@pytest.mark.skip(reason=\"quarantined\")\ndef test_balance(");
    let skip_go = (
        "func TestTransferKeepsTheTotal(t *testing.T) {",
        "func TestTransferKeepsTheTotal(t *testing.T) {\n\tt.Skip(\"quarantined\")",
    );
    let fix_py = ("0 if iteration() % 3 == 0 else 10", "10");
    let fix_go = ("if got := Total(start, iteration()); got != start {", "if got := Total(start, 1); got != start {");
    let py_cmd = ["--", "python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_flaky.py"];
    /// A hunt's target, the file and test it failed in, the edits that stop the test running,
    /// and a fix (none: not run again).
    struct Case<'a> {
        project: &'a std::path::Path,
        target: &'a [&'a str],
        file: &'a str,
        test: &'a str,
        quarantines: Vec<(&'a str, &'a str)>,
        fix: Option<(&'a str, &'a str)>,
    }
    let (py_test, go_test) = ("test_flaky.py::test_balance", "TestTransferKeepsTheTotal");
    let (py_file, go_file) = ("test_flaky.py", "ledger/ledger_test.go");
    let cases = [
        Case {
            project: &pytest,
            target: &["--pytest", "test_flaky.py"],
            file: py_file,
            test: py_test,
            quarantines: vec![skip_py, ("def test_balance(", "def test_balance_renamed(")],
            fix: Some(fix_py),
        },
        Case {
            project: &go,
            target: &["--go-test", "./ledger"],
            file: go_file,
            test: go_test,
            quarantines: vec![skip_go, ("func TestTransferKeepsTheTotal(", "func TestTransferKeepsTheTotalRenamed(")],
            fix: Some(fix_go),
        },
        Case {
            project: &pytest,
            target: &py_cmd,
            file: py_file,
            test: py_test,
            quarantines: vec![skip_py],
            fix: Some(fix_py),
        },
        Case {
            project: &go,
            target: &["--", "go", "test", "./ledger"],
            file: go_file,
            test: go_test,
            quarantines: vec![skip_go],
            fix: None,
        },
        // One test named: its attempts say whether it ran, not whether its failing case did.
        Case {
            project: &go_table,
            target: &["--go-test", "./ledger", "-run", "TestTable"],
            file: "ledger/table_test.go",
            test: "TestTable/short",
            quarantines: vec![
                ("\t\t\tif name == \"short\"", "\t\t\tif name == \"short\" {\n\t\t\t\tt.Skip(\"quarantined\")\n\t\t\t}\n\t\t\tif name == \"short\""),
                ("\"even\", \"short\"}", "\"even\"}"),
            ],
            fix: Some(("iteration()%3 == 0", "iteration() < 0")),
        },
    ];
    for (i, Case { project, target, file, test, quarantines, fix }) in cases.into_iter().enumerate() {
        let run = |args: &[&str]| {
            let out = crate::harness::flakehunt().args(args).envs(go_env.iter().cloned()).current_dir(project).output();
            let json = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
            (out.status.code(), json, String::from_utf8_lossy(&out.stderr).into_owned())
        };
        let rec = format!("rec{i}");
        let sweep = ["sweep", "--profiles", "default", "--runs", "12", "--seed", "1", "--json", "--quiet", "--record"];
        let (code, swept, stderr) = run(&[&sweep[..], &[&rec], target].concat());
        assert_eq!(code, Some(1), "{target:?}: {stderr}");
        assert!(swept["failures"].as_u64() >= Some(2), "{target:?}: {swept}");
        let verify = |record: &str, command: &[&str]| {
            let args = ["verify", &rec, "--level", "90", "--json", "--quiet", "--record", record];
            let (code, json, stderr) = run(&[&args[..], command].concat());
            let attempts = std::fs::read_to_string(project.join(record).join("attempts.jsonl")).unwrap_or_default();
            (code, json, stderr, attempts)
        };
        let source = project.join(file);
        let original = std::fs::read_to_string(&source).unwrap();
        for (j, (from, to)) in quarantines.iter().enumerate() {
            edit(&source, from, to);
            let (code, _, stderr, attempts) = verify(&format!("v{i}-{j}"), &[]);
            assert_eq!(code, Some(3), "{target:?}, {to}: {stderr}");
            assert!(stderr.contains(test) && stderr.contains("no longer runs"), "{target:?}, {to}: {stderr}");
            assert_eq!(attempts, "", "{target:?}, {to}: no attempt ran");
            std::fs::write(&source, &original).unwrap();
        }
        // A command given to verify that leaves the failing test out.
        if target == py_cmd {
            let narrow = ["--", "python3", "-m", "pytest", "-q", "test_flaky.py::test_steady"];
            let (code, _, stderr, _) = verify(&format!("n{i}"), &narrow);
            assert_eq!(code, Some(3), "{stderr}");
            assert!(stderr.contains("give a command that runs it"), "{stderr}");
        }
        // The negative control: the other tests run as before, and a real fix is proved.
        if let Some((from, to)) = fix {
            edit(&source, from, to);
            let (code, fixed, stderr, _) = verify(&format!("f{i}"), &[]);
            assert_eq!((code, fixed["verdict"].as_str()), (Some(0), Some("fixed")), "{target:?}: {stderr}");
            std::fs::write(&source, &original).unwrap();
        }
    }
}

/// A `condition-sensitive` test has no reproducer: it is verified as the suite saw it fail,
/// by shuffled runs of the whole suite under its profile, each judged by its own result, at
/// the rate the suite's runs under that profile had it fail.
#[test]
fn a_condition_sensitive_test_is_verified_by_the_suite_under_its_condition() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("cond");
    std::fs::create_dir_all(project.join("tests")).unwrap();
    std::fs::write(
        project.join("tests/test_cond.py"),
        "import os\n\nHERE = os.path.dirname(__file__)\n\n\
         def test_env():\n    assert os.environ.get('SUITE_COND') != 'on' or os.path.exists(os.path.join(HERE, 'FIXED'))\n\n\
         def test_clean():\n    pass\n",
    )
    .unwrap();
    std::fs::write(project.join("flakehunt.toml"), "[profiles.cond]\nenv = { SUITE_COND = \"on\" }\n").unwrap();
    let run = |args: &[&str]| json_run(&project, args);
    let suite = ["suite", "--profiles", "default,cond", "--runs", "6", "--seed", "1", "--json", "--quiet"];
    let (code, summary, stderr) = run(&[&suite[..], &["--record", "rec", "--pytest"]].concat());
    assert_eq!(code, Some(1), "{stderr}");
    let test = "tests/test_cond.py::test_env";
    let t = summary["tests"].as_array().unwrap().iter().find(|t| t["id"] == test).unwrap();
    assert_eq!((t["category"].as_str(), t["condition"].as_str()), (Some("condition-sensitive"), Some("cond")), "{t}");
    let cell = "tests/test_cond.py::test_env under cond";

    // Not fixed: it still fails under its condition, with the failure the suite saw.
    let (code, unfixed, stderr) = run(&["verify", "rec", "--json", "--record", "v1"]);
    assert_eq!((code, unfixed["verdict"].as_str()), (Some(1), Some("not-fixed")), "{stderr}");
    let names: Vec<&str> = unfixed["cells"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, [cell]);
    let c = condition(&unfixed, cell);
    assert_eq!(c["then_source"], "the suite's shuffled attempts under cond", "{c}");
    assert_eq!(c["signatures"][0]["seen_before"], true, "its own failure: {c}");
    for a in crate::harness::attempts_in(&project.join("v1")) {
        let tests: Vec<&str> =
            a["suite"]["tests"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
        assert_eq!(a["suite"]["role"], "shuffled", "{a}");
        assert_eq!(a["mode"], "warm", "warm, as the suite's runs were: {a}");
        assert!(
            tests.contains(&"tests/test_cond.py::test_clean") && tests.contains(&test),
            "the whole suite: {tests:?}"
        );
    }

    // Fixed, while the session fails after every test passed: judged by the test's own result.
    std::fs::write(project.join("tests/FIXED"), "").unwrap();
    std::fs::write(
        project.join("conftest.py"),
        "def pytest_sessionfinish(session, exitstatus):\n    session.exitstatus = 1\n",
    )
    .unwrap();
    let (code, fixed, stderr) = run(&["verify", "rec", "--json", "--record", "v2"]);
    assert_eq!((code, fixed["verdict"].as_str()), (Some(0), Some("fixed")), "{stderr}");
    let c = condition(&fixed, cell);
    assert_eq!(c["now"]["attempts"], c["needed"], "{c}");
    assert!(c["needed"].as_u64().unwrap() >= 2, "{c}");

    let v2 = crate::harness::attempts_in(&project.join("v2"));
    assert!(v2.iter().all(|a| a["exit_code"] == 1), "every process failed, every test passed");
}

#[test]
fn a_go_suites_reproducers_run_a_test_binary_built_from_the_code_as_it_is_now() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_fixture("suite/go", dir.path());
    let env = [
        ("GOCACHE", dir.path().join("gocache")),
        ("GOPATH", dir.path().join("gopath")),
        ("GOTOOLCHAIN", "local".into()),
        ("GOPROXY", "off".into()),
        ("GOFLAGS", "".into()),
    ];
    let run = |args: &[&str]| json_run_with(&project, args, env.iter().cloned());
    let (code, _, stderr) =
        run(&["suite", "--runs", "6", "--seed", "2", "--json", "--quiet", "--record", "rec", "--go-test", "."]);
    assert_eq!(code, Some(1), "{stderr}");
    // The victim's fix: it clears what an earlier test left registered. The suite's own binary,
    // built before the fix, would still fail it.
    edit(&project.join("beta_test.go"), "\tif len(handlers) != 0 {", "\thandlers = nil\n\tif len(handlers) != 0 {");
    let (code, partly, stderr) = run(&["verify", "rec", "--json", "--record", "v1"]);
    assert_eq!((code, partly["verdict"].as_str()), (Some(1), Some("not-fixed")), "{stderr}");
    assert_eq!(condition(&partly, "TestVictim")["verdict"], "fixed", "{stderr}");
    for test in ["TestBrittle", "TestNonIdempotent"] {
        assert_eq!(condition(&partly, test)["verdict"], "not-fixed", "{test}");
    }
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(project.join("v1/manifest.json")).unwrap()).unwrap();
    let cells = manifest["cells"].to_string();
    assert!(cells.contains("v1/go-test/") && !cells.contains("rec/go-test/"), "the new binary runs: {cells}");
    edit(
        &project.join("beta_test.go"),
        "\tif settings[\"encoding\"]",
        "\tsettings[\"encoding\"] = \"utf-8\"\n\tif settings[\"encoding\"]",
    );
    edit(&project.join("gamma_test.go"), "\truns++\n", "\truns = 1\n");
    // And the victim prints a line that reads like Go's own report of its failure: its result
    // is read from test2json's events, where the framework's own end of it comes last.
    edit(&project.join("beta_test.go"), "import \"testing\"", "import (\n\t\"fmt\"\n\t\"testing\"\n)");
    edit(
        &project.join("beta_test.go"),
        "\thandlers = nil\n",
        "\thandlers = nil\n\tfmt.Println(\"--- FAIL: TestVictim (0.00s)\")\n",
    );
    let (code, fixed, stderr) = run(&["verify", "rec", "--json", "--record", "v2"]);
    assert_eq!((code, fixed["verdict"].as_str()), (Some(0), Some("fixed")), "{stderr}");
}

/// A Go test that leaks a goroutine on every third iteration, hunted with the leak check: the
/// binary verify builds again from the code as it is now carries the check too, or the leak
/// would pass unseen and an unfixed test be called fixed.
#[test]
fn a_go_leak_is_verified_with_the_leak_check_built_into_the_new_binary() {
    let dir = tempfile::tempdir().unwrap();
    let project = copy_fixture("checks/go", dir.path());
    let env = crate::harness::go_env(dir.path());
    let run = |args: &[&str]| {
        let out = crate::harness::flakehunt().args(args).envs(env.iter().cloned()).current_dir(&project).output();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
        (out.status.code(), json, stderr)
    };
    let (code, swept, stderr) = run(&[
        "sweep",
        "--profiles",
        "default",
        "--runs",
        "6",
        "--seed",
        "1",
        "--leak-check",
        "--json",
        "--quiet",
        "--record",
        "rec",
        "--go-test",
        "./leaky",
        "-run",
        "TestChannelLeak",
    ]);
    assert_eq!((code, swept["failures"].as_u64()), (Some(1), Some(2)), "{stderr}");
    let leak = "exit 1: leaked goroutines blocked at leaky.go:25 (chan send)";
    assert_eq!(swept["signatures"][0]["signature"], leak);
    let needed = attempts_for(2, 6, 0.99);

    // Not fixed: the new binary finds the leak as the old one did.
    let (code, unfixed, stderr) = run(&["verify", "rec", "--json", "--quiet", "--record", "v1"]);
    assert_eq!((code, unfixed["verdict"].as_str()), (Some(1), Some("not-fixed")), "{stderr}");
    let c = condition(&unfixed, "default");
    assert_eq!(c["signatures"][0], serde_json::json!({"signature": leak, "seen_before": true}), "{c}");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(project.join("v1/manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["plan"]["checks"]["goroutine_leaks"], true);
    assert!(manifest["target"]["argv"][0].as_str().unwrap().contains("v1/go-test/"), "the new binary runs");

    // A command given after `--` is built by `go test`, without the leak check: the leak would
    // pass unseen and the unfixed test read as fixed. Refused, before any attempt.
    let (code, _, stderr) = run(&[
        "verify",
        "rec",
        "--json",
        "--quiet",
        "--record",
        "v0",
        "--",
        "go",
        "test",
        "-count=1",
        "-run",
        "TestChannelLeak",
        "./leaky",
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("ran with the goroutine leak check") && stderr.contains("drop the command"), "{stderr}");
    assert!(!project.join("v0").exists(), "a refused verification leaves no record");

    // Fixed: the test no longer gives up on its worker.
    edit(&project.join("leaky/leaky_test.go"), "Send(Iteration()%3 == 0)", "Send(false)");
    let (code, fixed, stderr) = run(&["verify", "rec", "--json", "--quiet", "--record", "v2"]);
    assert_eq!((code, fixed["verdict"].as_str()), (Some(0), Some("fixed")), "{stderr}");
    assert_eq!(condition(&fixed, "default")["now"]["attempts"].as_u64(), Some(needed));
    assert!(fixed["notes"].to_string().contains("goroutine leaks"), "the check was on: {}", fixed["notes"]);

    // Quarantined instead: `t.Skip` passes every attempt, and the binary says nothing of it
    // unless verbose. No evidence either way.
    edit(&project.join("leaky/leaky_test.go"), "Send(false)", "Send(Iteration()%3 == 0)");
    edit(
        &project.join("leaky/leaky_test.go"),
        "func TestChannelLeak(t *testing.T) {\n",
        "func TestChannelLeak(t *testing.T) {\n\tt.Skip(\"quarantined\")\n",
    );
    let (code, skipped, stderr) = run(&["verify", "rec", "--json", "--quiet", "--record", "v2s"]);
    assert_eq!((code, skipped["verdict"].as_str()), (Some(3), Some("inconclusive")), "{stderr}");
    let c = condition(&skipped, "default");
    assert_eq!((c["now"]["attempts"].as_u64(), c["unreported"].as_u64()), (Some(0), Some(needed)), "{c}");
    edit(&project.join("leaky/leaky_test.go"), "\tt.Skip(\"quarantined\")\n", "");

    // A TestMain of the package's own keeps the check out: no verification without it.
    std::fs::write(
        project.join("leaky/main_test.go"),
        "package leaky\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n\tos.Exit(m.Run())\n}\n",
    )
    .unwrap();
    let (code, _, stderr) = run(&["verify", "rec", "--json", "--quiet", "--record", "v3"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("ran with the goroutine leak check, which cannot wrap the TestMain")
            && stderr.contains("(main_test.go:8)")
            && stderr.contains("so verify needs it"),
        "{stderr}"
    );
    assert!(!project.join("v3").exists(), "a refused verification leaves no record");

    // The test renamed: `-test.run ^TestChannelLeak$` would match no test and pass.
    std::fs::remove_file(project.join("leaky/main_test.go")).unwrap();
    edit(&project.join("leaky/leaky_test.go"), "func TestChannelLeak(", "func TestChannelLeakRenamed(");
    let (code, _, stderr) = run(&["verify", "rec", "--json", "--quiet", "--record", "v4"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("has no test named TestChannelLeak any more"), "{stderr}");
    assert!(!project.join("v4").exists(), "a refused verification leaves no record");
}
