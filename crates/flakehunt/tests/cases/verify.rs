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
