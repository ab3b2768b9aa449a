//! The runner against real processes where the plan sets each attempt's hang limit (the adaptive
//! hunt's hang rule): the plan's limit, not the hunt's timeout, ends an attempt, and what its
//! processes do at the limit decides between a hang (`timeout`) and a slow attempt (`slow`, no
//! evidence). Every fixture here behaves the same on a fast or a loaded machine: a sleeping
//! process never uses CPU, a busy loop is always runnable.

use super::*;
use crate::exec::{HangLimit, Limits, ProcessTree};
use crate::plan::{AttemptLimits, AttemptSpec, CellSpec, Target};
use crate::profile::{Profile, ProfileEnv};
use crate::record::{Attempt, Outcome};

/// A plan of `n` attempts of one cell that sets `limits` on each, keeping what it observes.
struct Timed {
    cells: Vec<CellSpec>,
    n: u64,
    issued: u64,
    limits: AttemptLimits,
    seen: Vec<Attempt>,
}

impl Plan for Timed {
    fn cells(&self) -> &[CellSpec] {
        &self.cells
    }
    fn next(&mut self) -> Next {
        if self.issued == self.n {
            return Next::Done;
        }
        self.issued += 1;
        Next::Run(AttemptSpec { id: self.issued - 1, cell: 0, iteration: self.issued, phase: None, cold: false })
    }
    fn observe(&mut self, attempt: &Attempt) {
        self.seen.push(attempt.clone());
    }
    fn planned(&self) -> u64 {
        self.n
    }
    fn limits(&self, _cell: usize) -> AttemptLimits {
        self.limits
    }
}

struct Nothing;
impl EventSink for Nothing {
    fn event(&mut self, _: &Event<'_>) -> Result<(), RecordError> {
        Ok(())
    }
}

/// A hang limit (the same for both modes: these attempts all start cold).
fn hang(limit_ms: u64, confirm_ms: Option<u64>) -> AttemptLimits {
    let h = HangLimit { limit: Duration::from_millis(limit_ms), confirm: confirm_ms.map(Duration::from_millis) };
    AttemptLimits { warm: Some(h), cold: Some(h), end_with_budget: false }
}

/// Runs `n` attempts of `script` with the plan's `limits`, the hunt's `limits` and `budget`.
fn run_with(script: &str, n: u64, limits: AttemptLimits, hunt: Limits, budget: Option<Duration>) -> Vec<Attempt> {
    let tree = ProcessTree::default();
    let cancel = Cancel::new().unwrap();
    let profiles = ProfileEnv::new("runner-test", 0, false);
    let rooms = std::collections::BTreeMap::new();
    let attempts = AttemptRunner {
        run_id: "runner-test".into(),
        target: Target::shell(script.into()),
        limits: Limits { grace: Duration::from_secs(1), ..hunt },
        env: Vec::new(),
        env_clear: false,
        cwd: None,
        tree: &tree,
        watchdog: None,
        cancel: &cancel,
        profiles: &profiles,
        rooms: &rooms,
        oracle: None,
        warm: None,
        checks: None,
        stops_on_no_test: false,
    };
    let mut plan = Timed {
        cells: vec![CellSpec::for_profile(Profile::default_profile())],
        n,
        issued: 0,
        limits,
        seen: Vec::new(),
    };
    let runner = Runner { attempts, jobs: 1, budget };
    let end = runner.run(&mut plan, &mut Nothing).unwrap();
    assert_eq!(end.recorded, plan.seen.len() as u64);
    plan.seen
}

fn run(script: &str, limits: AttemptLimits, hunt_timeout: Duration) -> Vec<Attempt> {
    run_with(script, 2, limits, Limits { timeout: hunt_timeout, ..Limits::default() }, None)
}

#[test]
fn a_hang_at_the_plans_limit_is_a_timeout_with_its_output_kept() {
    // The hunt's timeout is an hour; the plan's limit is 300 ms: the sleeping attempt is idle
    // then, ended and recorded as a timeout, with the output it wrote before.
    let seen = run("echo started; exec sleep 3600", hang(300, None), Duration::from_secs(3600));
    assert!(seen.iter().all(|a| a.outcome == Outcome::Timeout && a.termination.is_some()), "{seen:#?}");
    assert!(seen.iter().all(|a| a.stdout_tail == "started\n"));
    let check = seen[0].hang.expect("the limit is recorded");
    assert_eq!((check.limit, check.idle, check.confirm_limit), (0.3, Some(true), None));
}

#[test]
fn an_attempt_at_work_at_the_limit_is_slow_not_a_timeout() {
    // A busy loop is runnable whenever it is looked at, however loaded the machine: slow, no
    // signature, not a failure.
    let seen = run("while :; do :; done", hang(300, Some(3000)), Duration::from_secs(3600));
    for a in &seen {
        assert_eq!(a.outcome, Outcome::Slow, "{a:#?}");
        assert!(!a.outcome.is_failure() && a.signature.is_none());
        assert_eq!(a.hang.and_then(|h| h.idle), Some(false));
        // Judged at its limit: never let run to the longer one.
        assert!(a.seconds < 2.5, "{}", a.seconds);
    }
    // So is one that keeps printing while it waits.
    let seen = run("while :; do echo tick; sleep 0.02; done", hang(400, Some(4000)), Duration::from_secs(3600));
    assert!(seen.iter().all(|a| a.outcome == Outcome::Slow), "{seen:#?}");
}

#[test]
fn a_first_hang_runs_to_the_longer_limit_and_one_that_ends_by_itself_is_what_it_was() {
    // Idle at 300 ms, still idle at 1.5 s: a hang, after the longer limit.
    let seen = run("exec sleep 3600", hang(300, Some(1500)), Duration::from_secs(3600));
    for a in &seen {
        assert_eq!(a.outcome, Outcome::Timeout, "{a:#?}");
        assert!(a.seconds >= 1.5, "{}", a.seconds);
        let check = a.hang.unwrap();
        assert_eq!((check.idle, check.confirm_limit), (Some(true), Some(1.5)));
    }
    // Idle at 300 ms, then done at 800 ms: the sleep was no hang, the attempt passed.
    let seen = run("sleep 0.8", hang(300, Some(5000)), Duration::from_secs(3600));
    for a in &seen {
        assert_eq!(a.outcome, Outcome::Pass, "{a:#?}");
        assert_eq!(a.hang.unwrap().idle, Some(true));
    }
    // Idle at 300 ms, then at work: slow at the longer limit.
    let seen = run("sleep 0.6; while :; do :; done", hang(300, Some(1500)), Duration::from_secs(3600));
    assert!(seen.iter().all(|a| a.outcome == Outcome::Slow && a.hang.unwrap().idle == Some(true)), "{seen:#?}");
}

#[test]
fn the_users_timeout_is_a_failure_and_flakehunts_default_one_is_judged() {
    // The plan sets none: the hunt's 300 ms ends the attempts. Given by the user, it is a
    // failure the user defined, busy or not.
    let user = Limits { timeout: Duration::from_millis(300), ..Limits::default() };
    let seen = run_with("while :; do :; done", 2, AttemptLimits::default(), user.clone(), None);
    assert!(seen.iter().all(|a| a.outcome == Outcome::Timeout && a.hang.is_none()), "{seen:#?}");
    // flakehunt's default: a busy attempt is slow, a sleeping one hung.
    let default = Limits { judge_timeout: true, ..user };
    let seen = run_with("while :; do :; done", 2, AttemptLimits::default(), default.clone(), None);
    assert!(seen.iter().all(|a| a.outcome == Outcome::Slow), "{seen:#?}");
    let seen = run_with("exec sleep 3600", 2, AttemptLimits::default(), default, None);
    assert!(seen.iter().all(|a| a.outcome == Outcome::Timeout), "{seen:#?}");
    // And a plan limit longer than the attempt leaves it to pass, CPU time recorded.
    let seen = run("exit 0", hang(3_600_000, None), Duration::from_millis(300));
    assert!(seen.iter().all(|a| a.outcome == Outcome::Pass && a.cpu_seconds.is_some()), "{seen:#?}");
}

#[test]
fn an_attempt_without_a_limit_ends_with_the_budget_as_slow() {
    // No hang limit yet (an arm whose cost is unknown): the budget of 400 ms ends it, and its
    // end says nothing about the target.
    let limits = AttemptLimits { end_with_budget: true, ..AttemptLimits::default() };
    let hunt = Limits { timeout: Duration::from_secs(3600), ..Limits::default() };
    let seen = run_with("exec sleep 3600", 5, limits, hunt, Some(Duration::from_millis(400)));
    assert_eq!(seen.len(), 1, "{seen:#?}");
    assert_eq!(seen[0].outcome, Outcome::Slow);
    assert!(seen[0].seconds < 5.0, "{}", seen[0].seconds);
}
