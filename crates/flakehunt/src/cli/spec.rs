//! From clap's arguments to the library's typed hunt: the binary's whole share of a hunt's
//! meaning. Nothing is checked here; `flakehunt_core::hunt` does that when it prepares the hunt.

use std::path::Path;

use clap::Parser;
use flakehunt_core::config::Config;
use flakehunt_core::hunt::{
    CleanRoomRequest, FireRequest, HuntKind, HuntSpec, MatrixRequest, OracleRequest, RecordRequest, SettingsRequest,
    SlurmRequest, TargetRequest,
};

use super::{Cli, Command, FireArgs, HuntArgs, OracleKind};
use crate::exit::usage;

/// The hunt a subcommand asks for, and whether its summary is printed as JSON; none for the
/// subcommands that are not hunts.
pub fn hunt_spec(command: &Command, config: Config) -> Option<(HuntSpec, bool)> {
    let json = match command {
        Command::Sweep(a) => a.hunt.json,
        Command::Matrix(a) => a.hunt.json,
        Command::Fire(a) => a.json,
        _ => false,
    };
    let spec = match command {
        Command::Sweep(a) => {
            shared(&a.hunt, HuntKind::Sweep { profiles: a.profiles.clone(), strict: a.strict }, config)
        }
        Command::Matrix(a) => {
            let kind = HuntKind::Matrix(MatrixRequest {
                define: a.define.clone(),
                rlimit: a.rlimit.clone(),
                confirm: a.confirm,
                yes: a.yes,
                max_cells: a.max_cells,
                clean_room: a.clean_room.then(|| CleanRoomRequest {
                    setup: a.setup.clone(),
                    keep_env: a.keep_env.clone(),
                    keep: a.keep,
                }),
            });
            shared(&a.hunt, kind, config)
        }
        Command::Fire(a) => fire(a, config),
        _ => return None,
    };
    Some((spec, json))
}

/// A sweep or a matrix from the options they share.
fn shared(h: &HuntArgs, kind: HuntKind, config: Config) -> HuntSpec {
    HuntSpec {
        kind,
        target: TargetRequest {
            command: h.command.clone(),
            shell: h.shell.clone(),
            cargo_test: h.cargo_test.clone(),
            package: h.package.clone(),
            go_test: h.go_test.clone(),
            pytest: h.pytest.clone(),
        },
        settings: SettingsRequest {
            runs: h.runs,
            jobs: h.jobs,
            until_fails: h.until_fails,
            budget: h.budget,
            timeout: h.timeout,
            grace: h.grace,
            leak_timeout: h.leak_timeout,
            capture: h.capture,
        },
        oracle: OracleRequest {
            fail_if: h.fail_if.clone(),
            pass_if: h.pass_if.clone(),
            expect_stdout: h.expect_stdout.clone(),
            ignore: h.ignore.clone(),
            majority: h.oracle == OracleKind::Majority,
        },
        seed: h.seed,
        shard: h.shard,
        record: record(h.resume.as_deref(), h.record.as_deref()),
        slurm: h.slurm.map(|shards| SlurmRequest {
            shards,
            options: h.slurm_opt.iter().flat_map(|o| o.split_whitespace().map(str::to_owned)).collect(),
            print: h.slurm_print,
            argv: own_argv(),
        }),
        config,
        quiet: h.quiet,
    }
}

fn fire(a: &FireArgs, config: Config) -> HuntSpec {
    HuntSpec {
        kind: HuntKind::Fire(FireRequest {
            state: a.state.clone(),
            ladder: a.ladder.clone(),
            all_levels: a.all_levels,
            checks: a.checks.clone(),
            ignore: a.ignore.clone(),
            ignore_columns: a.ignore_column.clone(),
            trace_tokens: a.trace_tokens,
            keep: a.keep,
        }),
        target: TargetRequest { command: a.command.clone(), shell: a.shell.clone(), ..TargetRequest::default() },
        settings: SettingsRequest {
            runs: 1,
            jobs: 1,
            until_fails: None,
            budget: None,
            timeout: a.timeout,
            grace: a.grace,
            leak_timeout: a.leak_timeout,
            capture: a.capture,
        },
        oracle: OracleRequest::default(),
        seed: a.seed,
        shard: None,
        record: record(a.resume.as_deref(), a.record.as_deref()),
        slurm: None,
        config,
        quiet: a.quiet,
    }
}

fn record(resume: Option<&Path>, record: Option<&Path>) -> RecordRequest {
    match resume {
        Some(dir) => RecordRequest::Resume(dir.to_owned()),
        None => RecordRequest::New(record.map(Path::to_owned)),
    }
}

/// The hunt's own command line, from this process's arguments (`slurm-script` taken out).
fn own_argv() -> Vec<String> {
    let mut argv: Vec<String> = std::env::args().skip(1).collect();
    if let Some(pos) = argv.iter().position(|a| a == "slurm-script") {
        argv.remove(pos);
    }
    argv
}

/// `flakehunt slurm-script HUNT...`: the hunt parsed as if run with `--slurm`, to print its
/// script instead of submitting it.
pub fn parse_hunt(hunt: &[String], config: Option<&Path>) -> anyhow::Result<Cli> {
    let mut argv = vec!["flakehunt".to_owned()];
    if let Some(c) = config {
        argv.extend(["--config".to_owned(), c.display().to_string()]);
    }
    argv.extend(hunt.iter().cloned());
    let mut cli = Cli::try_parse_from(&argv).map_err(|e| usage(e.to_string().trim().to_owned()))?;
    let args = match &mut cli.command {
        Command::Sweep(a) => &mut a.hunt,
        Command::Matrix(a) => &mut a.hunt,
        _ => return Err(usage("slurm-script takes a sweep or a matrix: `flakehunt slurm-script sweep --slurm 8 ...`")),
    };
    if args.slurm.is_none() {
        return Err(usage("give the number of shards: `flakehunt slurm-script sweep --slurm 8 ...`"));
    }
    args.slurm_print = true;
    Ok(cli)
}
