//! The plan as the binary runs it: stop rules, parallelism, the seeded interleaving, profiles.

use crate::harness::Hunt;

/// The cell of each attempt, in recorded order.
fn cell_order(run: &crate::harness::Run) -> Vec<String> {
    run.attempts().iter().map(|a| a["cell"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn until_fails_stops_a_cell_after_k_failures() {
    let run = Hunt::sweep()
        .default_only()
        .args(["--runs", "50", "--until-fails", "2"])
        .fixture("flaky-every.sh", &["3"])
        .run();
    run.expect_code(1);
    // Failures on iterations 3 and 6; nothing after the second.
    assert_eq!(run.outcomes("default"), ["fail=2", "pass=4"]);
    assert_eq!(run.attempts().last().unwrap()["iteration"], 6);
    // Stopped by its own rule: complete, not "incomplete" as an interrupted hunt would be.
    let summary = run.json();
    assert_eq!(summary["complete"], true);
    assert_eq!(summary["attempts"], 6);
    assert!(!run.stderr.contains("incomplete"), "{}", run.stderr);
}

#[test]
fn until_fails_applies_per_cell() {
    // Only one-core fails (every 2nd iteration); default runs its whole plan.
    let run =
        Hunt::sweep().args(["--runs", "8", "--until-fails", "1"]).fixture("flaky-every.sh", &["2", "one-core"]).run();
    run.expect_code(1);
    assert_eq!(run.outcomes("default"), ["pass=8"]);
    assert_eq!(run.outcomes("one-core"), ["fail=1", "pass=1"]);
}

#[test]
fn two_jobs_give_the_same_counts_as_one() {
    let hunt = |jobs: &str| {
        Hunt::sweep().args(["--runs", "12", "--seed", "3", "--jobs", jobs]).fixture("flaky-every.sh", &["4"]).run()
    };
    let (one, two) = (hunt("1"), hunt("2"));
    one.expect_code(1);
    two.expect_code(1);
    for cell in ["default", "one-core"] {
        assert_eq!(one.outcomes(cell), ["fail=3", "pass=9"]);
        assert_eq!(two.outcomes(cell), one.outcomes(cell));
    }
    let mut ids: Vec<u64> = two.attempts().iter().map(|a| a["id"].as_u64().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..24).collect::<Vec<_>>());
}

#[test]
fn the_seed_fixes_the_interleaving() {
    let hunt =
        |seed: &str| Hunt::sweep().args(["--runs", "16", "--seed", seed]).fixture("flaky-every.sh", &["1000"]).run();
    let (a, b, c) = (hunt("42"), hunt("42"), hunt("43"));
    assert_eq!(cell_order(&a), cell_order(&b));
    assert_ne!(cell_order(&a), cell_order(&c), "seeds 42 and 43 interleave differently");
    assert_eq!(a.manifest()["seed"], 42);
    // Interleaved in rounds: every cell once per round.
    for round in cell_order(&a).chunks(2) {
        let mut cells = round.to_vec();
        cells.sort();
        assert_eq!(cells, ["default", "one-core"]);
    }
}

#[test]
fn one_core_pins_the_attempt_to_a_single_cpu() {
    let run = Hunt::sweep().args(["--profiles", "default,one-core", "--runs", "2"]).command(["true"]).run();
    run.expect_code(0);
    let cell = run.cell("one-core");
    if crate::harness::has_cpus(2, "one_core_pins_the_attempt_to_a_single_cpu (the pinned CPU list)") {
        assert_eq!(cell["inert"], false, "{cell:#}");
        for attempt in run.attempts().iter().filter(|a| a["cell"] == "one-core") {
            let list = attempt["effect"]["cpus"].as_str().expect("one-core records the child's CPU list");
            assert!(list.parse::<usize>().is_ok(), "a single CPU, not {list:?}");
            assert!(attempt["effect"]["hints"]["GOMAXPROCS"].is_string(), "{attempt:#}");
        }
    } else {
        assert_eq!(cell["inert"], true, "one CPU: pinning changes nothing: {cell:#}");
    }
    for attempt in run.attempts().iter().filter(|a| a["cell"] == "default") {
        assert!(attempt["effect"].get("cpus").is_none(), "default pins nothing: {attempt:#}");
    }
}
