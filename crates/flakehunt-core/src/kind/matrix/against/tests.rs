//! Tests of the search: ddmin's bounds and 1-minimality, groups first, the plan run to its end
//! against a deterministic oracle, and a replay that rebuilds it.

use std::cell::RefCell;
use std::collections::BTreeSet;

use super::*;
use crate::record::{Effect, Outcome};

fn env(group: &str, name: &str, value: &str) -> Dimension {
    Dimension {
        group: group.into(),
        name: name.into(),
        here: None,
        there: Some(value.into()),
        change: Change::Env { name: name.into(), value: Some(value.into()) },
    }
}

/// A hundred differing variables, then nofile, then the locale and TZ, then the CPUs.
fn dims() -> Vec<Dimension> {
    let mut d: Vec<Dimension> = (0..100).map(|i| env("environment", &format!("CI_VAR_{i:03}"), "x")).collect();
    d.push(Dimension {
        group: "limits".into(),
        name: "nofile".into(),
        here: Some("soft 65536".into()),
        there: Some("soft 1024".into()),
        change: Change::Rlimit { name: "nofile".into(), value: Some(1024) },
    });
    d.push(Dimension {
        group: "limits".into(),
        name: "stack".into(),
        here: None,
        there: None,
        change: Change::Rlimit { name: "stack".into(), value: None },
    });
    d.push(env("locale-time", "LC_ALL", "C"));
    d.push(env("locale-time", "TZ", "America/New_York"));
    d.push(Dimension {
        group: "cpus-memory".into(),
        name: "CPUs".into(),
        here: Some("8".into()),
        there: Some("2".into()),
        change: Change::Cpus { count: 2 },
    });
    d
}

fn index(d: &[Dimension], name: &str) -> usize {
    d.iter().position(|x| x.name == name).unwrap()
}

/// Runs the search against `fails` (does a set reproduce?), counting the questions.
fn run_search(d: &[Dimension], fails: &dyn Fn(&BTreeSet<usize>) -> bool) -> (Search, usize) {
    let answers: RefCell<Vec<(Vec<usize>, bool)>> = RefCell::new(Vec::new());
    loop {
        let known = |set: &[usize]| answers.borrow().iter().find(|(s, _)| s == set).map(|(_, r)| *r);
        match search(d, &known) {
            Search::Ask(set) => {
                let r = fails(&set.iter().copied().collect());
                answers.borrow_mut().push((set, r));
            }
            done => return (done, answers.borrow().len()),
        }
    }
}

#[test]
fn two_differences_in_two_groups_among_a_hundred_others_are_found_with_few_cells() {
    let d = dims();
    let (tz, nofile) = (index(&d, "TZ"), index(&d, "nofile"));
    let (found, asked) = run_search(&d, &|s| s.contains(&tz) && s.contains(&nofile));
    let mut expected = vec![tz, nofile];
    expected.sort_unstable();
    assert_eq!(found, Search::Minimal(expected));
    // baseline, all, one per group removed (4), within limits and locale-time: a few each.
    assert!(asked <= 12, "{asked} questions");
}

#[test]
fn one_variable_among_a_hundred_costs_about_two_log2_n_cells() {
    let d = dims();
    let culprit = index(&d, "CI_VAR_067");
    let (found, asked) = run_search(&d, &|s| s.contains(&culprit));
    assert_eq!(found, Search::Minimal(vec![culprit]));
    // 2 + 4 groups + ddmin over 100: at most 2 tests per halving.
    assert!(asked <= 6 + 2 * 7 + 2, "{asked} questions");
}

#[test]
fn a_pair_split_across_halves_is_found_and_the_result_is_one_minimal() {
    let d = dims();
    let (a, b) = (index(&d, "CI_VAR_010"), index(&d, "CI_VAR_090"));
    let fails = |s: &BTreeSet<usize>| s.contains(&a) && s.contains(&b);
    let (found, _) = run_search(&d, &fails);
    let Search::Minimal(set) = found else { panic!("{found:?}") };
    assert_eq!(set, vec![a, b]);
    for i in 0..set.len() {
        let without: BTreeSet<usize> = set.iter().copied().filter(|&x| x != set[i]).collect();
        assert!(!fails(&without), "1-minimal");
    }
}

#[test]
fn the_baseline_failing_or_everything_passing_ends_the_search() {
    let d = dims();
    assert_eq!(run_search(&d, &|_| true).0, Search::FailsHere);
    assert_eq!(run_search(&d, &|_| false).0, Search::NotReproduced);
}

#[test]
fn a_cell_is_decided_by_the_twice_rule() {
    assert_eq!(decided(1, 2, 10, 5), Some(true));
    assert_eq!(decided(9, 0, 10, 5), None);
    assert_eq!(decided(10, 0, 10, 5), Some(false));
    assert_eq!(decided(10, 1, 10, 5), None, "a single failure is confirmed");
    assert_eq!(decided(15, 1, 10, 5), Some(false), "a rumour");
}

#[test]
fn cells_name_their_changes_and_give_their_set_back() {
    let d = dims();
    let set = vec![index(&d, "nofile"), index(&d, "TZ"), index(&d, "CPUs")];
    let cell = cell_of(&d, &set, 7);
    assert_eq!(cell.name, "nofile=1024 TZ=America/New_York cpus=2");
    assert_eq!(cell.profile.as_ref().and_then(|p| p.knobs.cpus), Some(2));
    assert_eq!(cell.profile.as_ref().and_then(|p| p.knobs.runtime_hints), Some(false));
    assert_eq!(set_of(&d, &cell), set);
    let all: Vec<usize> = (0..d.len()).collect();
    assert_eq!(cell_of(&d, &all, 1).name, "all 105 differences");
    let big: Vec<usize> = (0..50).chain([index(&d, "TZ")]).collect();
    assert_eq!(cell_of(&d, &big, 4).name, "51 differences: environment 50/100, locale-time 1/2 (cell 5)");
    assert_eq!(cell_of(&d, &[], 0).name, "baseline");
}

fn attempt(spec: &AttemptSpec, plan: &AgainstPlan, fail: bool) -> Attempt {
    Attempt {
        id: spec.id,
        cell: plan.cells()[spec.cell].name.clone(),
        iteration: spec.iteration,
        started_at: String::new(),
        seconds: 0.0,
        outcome: if fail { Outcome::Fail } else { Outcome::Pass },
        exit_code: Some(i32::from(fail)),
        signal: None,
        termination: None,
        stdout_tail: String::new(),
        stderr_tail: String::new(),
        stdout_bytes: 0,
        stderr_bytes: 0,
        stdout_hash: None,
        oracle: None,
        leaked: vec![],
        effect: Effect::default(),
        signature: None,
        worker: None,
        level: None,
        phase: spec.phase.clone(),
        log: None,
        load: None,
        error: None,
        cpu_seconds: None,
        suite: None,
        mode: Default::default(),
        hidden: Vec::new(),
        rerun: None,
        hang: None,
    }
}

/// Runs the plan one attempt at a time against `fails` (per cell overlay), returning every
/// attempt in the order run.
fn run_plan(plan: &mut AgainstPlan, fails: &dyn Fn(&[usize]) -> bool, stop_after: Option<usize>) -> Vec<Attempt> {
    let mut done = Vec::new();
    loop {
        if stop_after.is_some_and(|n| done.len() >= n) {
            return done;
        }
        match plan.next() {
            Next::Run(spec) => {
                let set = plan.sets[spec.cell].clone();
                let a = attempt(&spec, plan, fails(&set));
                plan.observe(&a);
                done.push(a);
            }
            Next::Wait => panic!("nothing is in flight"),
            Next::Done => return done,
        }
    }
}

#[test]
fn the_plan_runs_the_search_to_its_end_and_a_replay_rebuilds_it() {
    let d = dims();
    let (tz, nofile) = (index(&d, "TZ"), index(&d, "nofile"));
    let fails = |set: &[usize]| set.contains(&tz) && set.contains(&nofile);
    let mut plan = AgainstPlan::new(d.clone(), 3, 2);
    let attempts = run_plan(&mut plan, &fails, None);
    let mut expected = vec![tz, nofile];
    expected.sort_unstable();
    assert_eq!(plan.search(), Search::Minimal(expected.clone()));
    assert_eq!(plan.cells[0].name, "baseline");
    assert_eq!(plan.counts[0].finished, 3, "the baseline ran its runs");
    assert_eq!(plan.counts[1].finished, 2, "every difference: stopped at its second failure");
    let ids: BTreeSet<u64> = attempts.iter().map(|a| a.id).collect();
    assert_eq!(ids.len(), attempts.len(), "ids are unique");

    // Killed half way, then resumed: the replay rebuilds the same cells and goes on to the
    // same end, and the cells are those of the uninterrupted run.
    let mut first = AgainstPlan::new(d.clone(), 3, 2);
    let half = run_plan(&mut first, &fails, Some(attempts.len() / 2));
    let mut resumed = AgainstPlan::new(d.clone(), 3, 2);
    // The record holds the attempts in the order they ended; a replay may see a cell's
    // attempts before the one that made the search reach it.
    for a in half.iter().rev() {
        resumed.observe(a);
    }
    assert_eq!(resumed.cells.len(), first.cells.len());
    let rest = run_plan(&mut resumed, &fails, None);
    assert_eq!(resumed.search(), Search::Minimal(expected));
    let names = |p: &AgainstPlan| p.cells.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&resumed), names(&plan));
    assert!(rest.iter().all(|a| !half.iter().any(|h| h.id == a.id)), "no id is issued twice");
}

#[test]
fn a_single_failure_is_confirmed_before_a_cell_counts_as_clean() {
    let d = vec![env("environment", "A", "1")];
    // Every difference fails once, on its first attempt, then never.
    let mut plan = AgainstPlan::new(d, 3, 2);
    let mut attempts = Vec::new();
    while let Next::Run(spec) = plan.next() {
        let fail = spec.cell == 1 && spec.iteration == 1;
        let a = attempt(&spec, &plan, fail);
        plan.observe(&a);
        attempts.push(a);
    }
    assert_eq!(plan.search(), Search::NotReproduced);
    assert_eq!(plan.counts[1].finished, 5, "runs and its confirmations");
    assert_eq!(attempts.iter().filter(|a| a.phase.as_deref() == Some("confirm")).count(), 2);
}

#[test]
fn nothing_to_try_runs_nothing() {
    let mut plan = AgainstPlan::new(Vec::new(), 3, 2);
    assert_eq!(plan.next(), Next::Done);
    assert_eq!(plan.search(), Search::NothingToTry);
    assert_eq!(plan.cells().len(), 1);
}
