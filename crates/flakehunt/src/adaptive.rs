//! `flakehunt hunt`: the adaptive hunt, run by the shared driver with the plan options, the
//! runtime and the runner's width the library prepares (`flakehunt_core::adaptive::record`).

use std::time::Duration;

use flakehunt_core::adaptive::record::{self, Adapter};
use flakehunt_core::config::Config;
use flakehunt_core::record::Kind;

use crate::cli::{AdaptiveArgs, OracleKind};
use crate::hunt::{self, NewHunt};

/// The budget of a hunt not given `--budget`.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(600);

/// Runs an adaptive hunt; returns the exit code.
pub fn run(args: &AdaptiveArgs, config: &Config) -> anyhow::Result<i32> {
    let mut shared = args.hunt.clone();
    // A resumed hunt keeps its recorded plan and width; only a new one is prepared here.
    if shared.resume.is_none() {
        shared.budget.get_or_insert(DEFAULT_BUDGET);
        // The runner can start the largest copies=N arm's N at once; the plan keeps every other
        // arm to one attempt at a time.
        shared.jobs = record::runner_jobs(record::cpus());
    }
    let seed = shared.seed.unwrap_or_else(hunt::random_seed);
    shared.seed = Some(seed);
    let timeout = timeout_given().then_some(shared.timeout);
    let adapter = if !shared.go_test.is_empty() {
        Some(Adapter::Go)
    } else if shared.pytest.is_some() {
        Some(Adapter::Pytest)
    } else {
        shared.cargo_test.is_some().then_some(Adapter::Cargo)
    };
    let majority = shared.oracle == OracleKind::Majority;
    hunt::run(&shared, config, Kind::Hunt, "arm", |target| {
        let options = record::prepare(target, adapter, seed, majority, timeout);
        let extra = serde_json::json!({ record::EXTRA_KEY: options });
        Ok(NewHunt { cells: vec![record::baseline_cell()], extra, oracle: None })
    })
}

/// Whether `--timeout` is on the command line before the target's own arguments (clap fills
/// in its default otherwise): given, it replaces the hang rule.
fn timeout_given() -> bool {
    std::env::args().take_while(|a| a != "--").any(|a| a == "--timeout" || a.starts_with("--timeout="))
}
