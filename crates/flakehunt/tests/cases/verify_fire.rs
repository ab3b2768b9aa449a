//! End-to-end tests of `flakehunt verify` of a fire record: `fixtures/fire/counter.sh broken`
//! loses updates when two runs meet (a silent corruption at `2x2`); its fix, switched on by
//! `COUNTER_FIXED=1` with the same command line, locks the counter. Verify climbs the ladder
//! again against a fresh copy of the state as it is now and runs the rejected level as many
//! times as its recorded rejection rate needs: `fixed` on the fixed copy, `not-fixed` (with the
//! kind of rejection) on the unfixed one, `inconclusive` when the budget ends first.

use std::path::{Path, PathBuf};

use crate::harness::{fixture_arg, run_in, Hunt, Run};
use serde_json::Value;

/// The level runs a verification of a level rejected in `f` of `n` level runs needs at `level`:
/// the least `N` with `(1 - p)^N <= 1 - level`, `p` the lower end of Wilson's 95 % interval
/// (E. B. Wilson, JASA 22, 1927), computed here independently of the library.
fn level_runs_for(f: u64, n: u64, level: f64) -> u64 {
    let (f, n, z) = (f as f64, n as f64, 1.959_963_984_540_054_f64);
    let p = f / n;
    let lo = (p + z * z / (2.0 * n) - z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt()) / (1.0 + z * z / n);
    let mut runs = 1;
    while (1.0 - lo).powi(runs) > 1.0 - level {
        runs += 1;
    }
    runs as u64
}

/// The invariant fire checks after each level run and reference: the counter counts the runs.
const CHECK: &str = r#"test "$(cat counter)" -eq "$FLAKEHUNT_RUNS""#;

/// A fire hunt of the broken counter on one level, `2x2`: its two runs meet inside the critical
/// section, so one update is lost and the level is rejected as silent corruption. The state is
/// in `state/` of the hunt's temporary directory, the runs' meeting files beside it.
fn fired() -> (Run, PathBuf) {
    let hunt = Hunt::of("fire");
    let state = hunt.scratch("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(state.join("counter"), "0\n").unwrap();
    let meet = hunt.scratch("meet");
    let run = hunt
        .env("FIXTURE_MEET", meet.as_os_str())
        .args(["--quiet", "--ladder", "2x2", "--check", CHECK, "--state"])
        .args([state.as_os_str()])
        .command([fixture_arg("fire/counter.sh"), "broken".into()])
        .run();
    run.expect_code(1);
    let summary = run.json();
    assert_eq!(summary["levels"][0]["verdict"], "reject-silent-corruption", "{}", run.stderr);
    (run, state)
}

/// `flakehunt verify` of `record` with `env` set and `args`; the meeting files beside the state.
fn verify(record: &Run, state: &Path, env: &[(&str, &str)], args: &[&str]) -> Run {
    let mut hunt = Hunt::of("verify")
        .env("FIXTURE_MEET", state.with_file_name("meet-verify").into_os_string())
        .args([record.dir.as_os_str()])
        .args(args.iter().copied());
    for (name, value) in env {
        hunt = hunt.env(name, *value);
    }
    hunt.run()
}

fn condition(summary: &Value) -> &Value {
    let conditions = summary["details"]["conditions"].as_array().unwrap();
    assert_eq!(conditions.len(), 1, "one level was climbed, and rejected: {conditions:?}");
    &conditions[0]
}

/// The positions of the level runs in a record's `levels.jsonl` (0 for a reference).
fn level_reports(dir: &Path) -> Vec<u64> {
    let text = std::fs::read_to_string(dir.join("levels.jsonl")).unwrap();
    text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["level"].as_u64().unwrap()).collect()
}

#[test]
fn a_fixed_level_is_fixed_after_the_level_runs_its_rejection_rate_needs() {
    let (fire, state) = fired();
    // The state as it is now, not as it was: a file added since the hunt is in every sandbox.
    std::fs::write(state.join("notes"), "added after the hunt\n").unwrap();
    let needed = level_runs_for(1, 1, 0.99);
    let run = verify(&fire, &state, &[("COUNTER_FIXED", "1")], &[]);
    run.expect_code(0);
    let summary = run.json();
    assert_eq!(summary["kind"], "verify");
    assert_eq!(summary["verdict"], "fixed", "{}", run.stderr);
    let c = condition(&summary);
    assert_eq!(c["cell"], "2x2");
    assert_eq!(c["needed"].as_u64(), Some(needed));
    assert_eq!((c["now"]["attempts"].as_u64(), c["now"]["failures"].as_u64()), (Some(needed), Some(0)), "{c}");
    assert_eq!((c["then"]["attempts"].as_u64(), c["then"]["failures"].as_u64()), (Some(1), Some(1)));
    let text = summary["verdict_text"].as_str().unwrap();
    assert!(text.contains("rejection rate at 2x2 now < ") && text.contains("at 99 %"), "{text}");
    assert!(text.contains(&format!("(0/{needed} level runs), was 100.0% (1/1)")), "{text}");
    // Said before starting: how many level runs and why.
    assert!(
        run.stderr.contains(&format!("{needed} level runs without a rejection in a row would happen less than 1 %")),
        "{}",
        run.stderr
    );
    // Every level run was judged as fire judges a level, in a sandbox of its own.
    let levels = summary["levels"].as_array().unwrap();
    assert_eq!(levels.len() as u64, needed);
    assert!(levels.iter().all(|l| l["verdict"] == "accept" && l["name"] == "2x2"), "{levels:?}");
    let positions: Vec<u64> = levels.iter().map(|l| l["level"].as_u64().unwrap()).collect();
    assert_eq!(positions, (1..=needed).collect::<Vec<_>>());
    let copies = std::fs::read_to_string(run.dir.join("levels.jsonl")).unwrap();
    for line in copies.lines() {
        let report: Value = serde_json::from_str(line).unwrap();
        assert_eq!(report["copied"]["files"], 2, "the state as it is now: {report}");
    }
    assert_eq!(std::fs::read_to_string(state.join("counter")).unwrap(), "0\n", "the user's state is untouched");
    let verified = &run.manifest()["extra"]["verify"];
    assert_eq!(verified["kind"], "fire");
    assert_eq!(verified["run_id"], fire.run_id());
    assert!(verified["hash"].as_str().unwrap().starts_with("blake3:"));
    // JUnit: one case for the verified level, passed with its rates then and now.
    let junit = run_in(&run.dir, &["report", ".", "--format", "junit"]);
    let junit = String::from_utf8_lossy(&junit.stdout);
    assert!(junit.contains("<testcase name=\"2x2\"") && !junit.contains("<failure"), "{junit}");
    assert!(junit.contains(&format!("name=\"now\" value=\"0/{needed} (0.0%)\"")), "{junit}");
    let html = run_in(&run.dir, &["report", ".", "--format", "html"]);
    assert!(String::from_utf8_lossy(&html.stdout).contains("id=\"chart-verify\""));
}

#[test]
fn an_unfixed_level_is_not_fixed_with_its_kind_of_rejection() {
    let (fire, state) = fired();
    let run = verify(&fire, &state, &[], &[]);
    run.expect_code(1);
    let summary = run.json();
    assert_eq!(summary["verdict"], "not-fixed", "{}", run.stderr);
    let c = condition(&summary);
    assert!(c["now"]["failures"].as_u64().unwrap() > 0, "{c}");
    assert_eq!(c["signatures"][0]["signature"], "reject-silent-corruption");
    assert_eq!(c["signatures"][0]["seen_before"], true);
    let text = summary["verdict_text"].as_str().unwrap();
    assert!(text.contains("2x2 is still rejected") && text.contains("was 100.0% (1/1)"), "{text}");
    assert!(text.contains("(the same kind of rejection: reject-silent-corruption)"), "{text}");
    assert!(text.contains("SILENT CORRUPTION") && text.contains("lost "), "{text}");
    let junit = run_in(&run.dir, &["report", ".", "--format", "junit"]);
    let junit = String::from_utf8_lossy(&junit.stdout);
    assert!(junit.contains("<failure") && !junit.contains("flakyFailure"), "{junit}");
}

#[test]
fn a_budget_that_ends_after_the_first_level_run_is_inconclusive_and_resumes() {
    let (fire, state) = fired();
    let needed = level_runs_for(1, 1, 0.99);
    // The budget is looked at when a level run ends, so the first always runs whole; and every
    // level run of the fixed counter lasts at least its runs' 0.1 s under the lock, far more
    // than the budget: exactly one level run, however fast or loaded the machine.
    let run = verify(&fire, &state, &[("COUNTER_FIXED", "1")], &["--budget", "1ms"]);
    run.expect_code(3);
    let summary = run.json();
    assert_eq!(summary["verdict"], "inconclusive", "{}", run.stderr);
    assert_eq!(summary["complete"], false);
    let c = condition(&summary);
    assert_eq!((c["now"]["attempts"].as_u64(), c["now"]["failures"].as_u64()), (Some(1), Some(0)), "{c}");
    let text = summary["verdict_text"].as_str().unwrap();
    assert!(text.contains("no rejection at 2x2 in 1 level run"), "{text}");
    assert!(text.contains(&format!("needs {needed}: they rule it out at only")), "{text}");
    assert!(run.stderr.contains("--budget 1ms fits about 0 of the"), "{}", run.stderr);
    let junit = run_in(&run.dir, &["report", ".", "--format", "junit"]);
    assert!(String::from_utf8_lossy(&junit.stdout).contains("<skipped"), "an inconclusive verification is no pass");
    assert_eq!(level_reports(&run.dir), [0, 1]);

    // --resume keeps the level run that finished and climbs on (under the same budget: one more).
    let resumed = Hunt::of("verify")
        .without_record()
        .env("COUNTER_FIXED", "1")
        .env("FIXTURE_MEET", state.with_file_name("meet-verify").into_os_string())
        .args([std::ffi::OsStr::new("--resume"), run.dir.as_os_str()])
        .run();
    resumed.expect_code(3);
    let summary = resumed.json();
    assert_eq!(condition(&summary)["now"]["attempts"].as_u64(), Some(2), "{}", resumed.stderr);
    // The reference runs again (its fingerprint died with the first process), the first level
    // run does not.
    assert_eq!(level_reports(&run.dir), [1, 0, 2]);
    let ids: Vec<u64> = crate::harness::attempts_in(&run.dir).iter().map(|a| a["id"].as_u64().unwrap()).collect();
    let unique: std::collections::BTreeSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "no attempt recorded twice");
}

#[test]
fn a_fire_record_that_rejected_nothing_or_a_shard_is_refused() {
    let hunt = Hunt::of("fire");
    let state = hunt.scratch("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(state.join("counter"), "0\n").unwrap();
    let accepted = hunt
        .args(["--quiet", "--ladder", "2x2", "--state"])
        .args([state.as_os_str()])
        .command([fixture_arg("fire/counter.sh"), "locked".into()])
        .run();
    accepted.expect_code(0);
    let refused = Hunt::of("verify").args([accepted.dir.as_os_str()]).run();
    refused.expect_code(2);
    assert!(refused.stderr.contains("rejected no level of its ladder (verdict accept)"), "{}", refused.stderr);
    assert!(!refused.dir.exists(), "a refused verification leaves no record");

    let (fire, _state) = fired();
    let refused = Hunt::of("verify").args([fire.dir.as_os_str()]).args(["--shard", "1/2", "--seed", "1"]).run();
    refused.expect_code(2);
    assert!(refused.stderr.contains("climbs one ladder on one machine: drop --shard"), "{}", refused.stderr);
}
