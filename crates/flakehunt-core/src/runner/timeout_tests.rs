//! The runner against real processes where the plan sets each attempt's timeout (the adaptive
//! hunt's hang rule): the plan's timeout, not the hunt's, ends an attempt.

use super::*;
use crate::exec::{Limits, ProcessTree};
use crate::plan::{AttemptSpec, CellSpec, Target};
use crate::profile::{Profile, ProfileEnv};
use crate::record::{Attempt, Outcome};

/// A plan of `n` attempts of one cell that sets `timeout` on each, keeping what it observes.
struct Timed {
    cells: Vec<CellSpec>,
    n: u64,
    issued: u64,
    timeout: Option<Duration>,
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
        Next::Run(AttemptSpec { id: self.issued - 1, cell: 0, iteration: self.issued, phase: None })
    }
    fn observe(&mut self, attempt: &Attempt) {
        self.seen.push(attempt.clone());
    }
    fn planned(&self) -> u64 {
        self.n
    }
    fn timeout(&self, _cell: usize) -> Option<Duration> {
        self.timeout
    }
}

struct Nothing;
impl EventSink for Nothing {
    fn event(&mut self, _: &Event<'_>) -> Result<(), RecordError> {
        Ok(())
    }
}

fn run(script: &str, plan_timeout: Option<Duration>, hunt_timeout: Duration) -> Vec<Attempt> {
    let tree = ProcessTree::default();
    let cancel = Cancel::new().unwrap();
    let profiles = ProfileEnv::new("runner-test", 0, false);
    let rooms = std::collections::BTreeMap::new();
    let attempts = AttemptRunner {
        run_id: "runner-test".into(),
        target: Target::shell(script.into()),
        limits: Limits { timeout: hunt_timeout, grace: Duration::from_secs(1), ..Limits::default() },
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
    };
    let mut plan = Timed {
        cells: vec![CellSpec::for_profile(Profile::default_profile())],
        n: 2,
        issued: 0,
        timeout: plan_timeout,
        seen: Vec::new(),
    };
    let runner = Runner { attempts, jobs: 1, budget: None };
    let end = runner.run(&mut plan, &mut Nothing).unwrap();
    assert_eq!(end.recorded, 2);
    plan.seen
}

#[test]
fn the_plans_timeout_ends_an_attempt_the_hunts_timeout_would_let_run() {
    // The hunt's timeout is an hour; the plan's is 300 ms: the hang is ended and recorded
    // as a timeout, with the output it wrote before.
    let seen = run("echo started; exec sleep 3600", Some(Duration::from_millis(300)), Duration::from_secs(3600));
    assert!(seen.iter().all(|a| a.outcome == Outcome::Timeout && a.termination.is_some()), "{seen:#?}");
    assert!(seen.iter().all(|a| a.stdout_tail == "started\n"));
}

#[test]
fn without_a_plan_timeout_the_hunts_timeout_applies() {
    // The plan sets none: the hunt's 300 ms ends the attempts.
    let seen = run("exec sleep 3600", None, Duration::from_millis(300));
    assert!(seen.iter().all(|a| a.outcome == Outcome::Timeout), "{seen:#?}");
    // And a plan timeout longer than the attempt leaves it to pass, CPU time recorded.
    let seen = run("exit 0", Some(Duration::from_secs(3600)), Duration::from_millis(300));
    assert!(seen.iter().all(|a| a.outcome == Outcome::Pass && a.cpu_seconds.is_some()), "{seen:#?}");
}
