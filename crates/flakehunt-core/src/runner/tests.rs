//! The runner and its stop rules (`--runs`, `--until-fails`, `--budget`, interruption, a target
//! that cannot start) against [`FakeExecution`]: no process is started.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::*;
use crate::plan::{AttemptSpec, CellSpec, Schedule};
use crate::record::{Attempt, Outcome};

/// Keeps what the runner reports.
#[derive(Default)]
struct Collect {
    attempts: Vec<Attempt>,
    budget_spent: bool,
    interrupted: bool,
}

impl EventSink for Collect {
    fn event(&mut self, event: &Event<'_>) -> Result<(), RecordError> {
        match event {
            Event::AttemptFinished { attempt, .. } => self.attempts.push((*attempt).clone()),
            Event::BudgetSpent => self.budget_spent = true,
            Event::Interrupted => self.interrupted = true,
            _ => {}
        }
        Ok(())
    }
}

fn cells(names: &[&str]) -> Vec<CellSpec> {
    names.iter().map(|n| CellSpec { name: (*n).into(), profile: None, overlay: vec![] }).collect()
}

fn count(attempts: &[Attempt], cell: &str) -> usize {
    attempts.iter().filter(|a| a.cell == cell).count()
}

fn pass(_: &AttemptSpec, _: &CellSpec, _: Slot) -> Outcome {
    Outcome::Pass
}

#[test]
fn every_planned_attempt_runs_once_on_any_number_of_jobs() {
    for jobs in [1, 3] {
        let (cancel, runs) = (Cancel::new().unwrap(), AtomicU64::new(0));
        let runner = Runner { attempts: FakeExecution::new(&pass, &cancel, &runs), jobs, budget: None };
        let mut plan = Schedule::new(cells(&["default", "noisy"]), 5, 7);
        let mut sink = Collect::default();
        let end = runner.run(&mut plan, &mut sink).unwrap();
        assert_eq!((end.recorded, end.interrupted, end.budget_spent), (10, false, false), "jobs {jobs}");
        assert_eq!(runs.load(Ordering::SeqCst), 10);
        assert_eq!((count(&sink.attempts, "default"), count(&sink.attempts, "noisy")), (5, 5));
        let ids: BTreeSet<u64> = sink.attempts.iter().map(|a| a.id).collect();
        assert_eq!(ids.len(), 10, "each attempt once");
        let iterations: BTreeSet<u64> =
            sink.attempts.iter().filter(|a| a.cell == "noisy").map(|a| a.iteration).collect();
        assert_eq!(iterations, (1..=5).collect());
    }
}

#[test]
fn until_fails_stops_a_cell_after_k_failures_and_lets_the_others_run() {
    let fail_noisy =
        |_: &AttemptSpec, c: &CellSpec, _: Slot| if c.name == "noisy" { Outcome::Fail } else { Outcome::Pass };
    let (cancel, runs) = (Cancel::new().unwrap(), AtomicU64::new(0));
    let runner = Runner { attempts: FakeExecution::new(&fail_noisy, &cancel, &runs), jobs: 1, budget: None };
    let mut plan = Schedule::new(cells(&["default", "noisy"]), 10, 3).until_fails(Some(2));
    let mut sink = Collect::default();
    runner.run(&mut plan, &mut sink).unwrap();
    assert_eq!(count(&sink.attempts, "noisy"), 2);
    assert_eq!(count(&sink.attempts, "default"), 10);
}

#[test]
fn a_spent_budget_starts_nothing_more_and_says_so() {
    let (cancel, runs) = (Cancel::new().unwrap(), AtomicU64::new(0));
    let runner = Runner { attempts: FakeExecution::new(&pass, &cancel, &runs), jobs: 2, budget: Some(Duration::ZERO) };
    let mut plan = Schedule::new(cells(&["default"]), 50, 1);
    let mut sink = Collect::default();
    let end = runner.run(&mut plan, &mut sink).unwrap();
    assert!(end.budget_spent && sink.budget_spent);
    assert_eq!((end.recorded, runs.load(Ordering::SeqCst)), (0, 0));
}

#[test]
fn an_interruption_stops_the_hunt_before_the_next_attempt() {
    let (cancel, runs) = (Cancel::new().unwrap(), AtomicU64::new(0));
    cancel.request();
    let runner = Runner { attempts: FakeExecution::new(&pass, &cancel, &runs), jobs: 1, budget: None };
    let mut plan = Schedule::new(cells(&["default"]), 5, 1);
    let mut sink = Collect::default();
    let end = runner.run(&mut plan, &mut sink).unwrap();
    assert!(end.interrupted && sink.interrupted);
    assert_eq!(end.recorded, 0);
}

#[test]
fn a_target_that_cannot_start_stops_the_hunt_with_its_name() {
    let (cancel, runs) = (Cancel::new().unwrap(), AtomicU64::new(0));
    let runner = Runner { attempts: FakeExecution::new(&pass, &cancel, &runs).unstartable(), jobs: 2, budget: None };
    let mut plan = Schedule::new(cells(&["default"]), 5, 1);
    let err = runner.run(&mut plan, &mut Collect::default()).unwrap_err();
    assert!(matches!(err, RunError::Spawn { ref program, .. } if program == "fake"), "{err}");
}
