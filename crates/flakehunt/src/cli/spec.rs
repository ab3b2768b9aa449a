//! From clap's arguments to the library's typed hunt: the binary's whole share of a hunt's
//! meaning. Nothing is checked here; `flakehunt_core::driver` does that when it prepares the hunt.

use std::path::Path;

use flakehunt_core::config::Config;
use flakehunt_core::spec::{
    CleanRoomRequest, FireRequest, HuntKind, HuntSpec, MatrixRequest, OracleRequest, RecordRequest, SettingsRequest,
    SlurmRequest, SuiteRequest, TargetRequest, VerifyRequest,
};

use super::{Cli, Command, FireArgs, HuntArgs, OracleKind, VerifyArgs};
use crate::exit::usage;

/// The hunt a subcommand asks for, and whether its summary is printed as JSON; none for the
/// subcommands that are not hunts.
pub fn hunt_spec(command: &Command, config: Config, config_path: Option<&Path>) -> Option<(HuntSpec, bool)> {
    let json = match command {
        Command::Hunt(a) => a.json,
        Command::Sweep(a) | Command::Suite(a) => a.hunt.json,
        Command::Matrix(a) => a.hunt.json,
        Command::Fire(a) => a.json,
        Command::Verify(a) => a.json,
        _ => false,
    };
    let spec = match command {
        Command::Hunt(a) => shared(a, HuntKind::Adaptive, config, config_path),
        Command::Sweep(a) => {
            let kind = HuntKind::Sweep { profiles: a.profiles.clone(), strict: a.strict };
            shared(&a.hunt, kind, config, config_path)
        }
        Command::Suite(a) => shared(
            &a.hunt,
            HuntKind::Suite(SuiteRequest { profiles: a.profiles.clone(), strict: a.strict }),
            config,
            config_path,
        ),
        Command::Matrix(a) => {
            let kind = HuntKind::Matrix(MatrixRequest {
                define: a.define.clone(),
                rlimit: a.rlimit.clone(),
                confirm: a.confirm,
                yes: a.yes,
                max_cells: a.max_cells,
                against: a.against.clone(),
                clean_room: a.clean_room.then(|| CleanRoomRequest {
                    setup: a.setup.clone(),
                    keep_env: a.keep_env.clone(),
                    keep: a.keep,
                    follow_outside_links: a.follow_outside_links,
                }),
            });
            shared(&a.hunt, kind, config, config_path)
        }
        Command::Fire(a) => fire(a, config, config_path),
        Command::Verify(a) => verify(a, config, config_path),
        _ => return None,
    };
    Some((spec, json))
}

/// Whether `--timeout` is on the command line before the target's own arguments (clap fills in
/// its default otherwise): the user's timeout is a failure the user defined, and replaces
/// `hunt`'s hang rule.
fn timeout_given() -> bool {
    std::env::args().take_while(|a| a != "--").any(|a| a == "--timeout" || a.starts_with("--timeout="))
}

/// A sweep, a matrix or a hunt from the options they share.
fn shared(h: &HuntArgs, kind: HuntKind, config: Config, config_path: Option<&Path>) -> HuntSpec {
    HuntSpec {
        kind,
        target: TargetRequest {
            command: h.command.clone(),
            shell: h.shell.clone(),
            cargo_test: h.cargo_test.clone(),
            package: h.package.clone(),
            go_test: h.go_test.clone(),
            pytest: h.pytest.clone(),
            python: h.python.clone(),
        },
        settings: SettingsRequest {
            runs: h.runs,
            jobs: h.jobs,
            until_fails: h.until_fails,
            budget: h.budget,
            timeout: h.timeout,
            timeout_given: timeout_given(),
            grace: h.grace,
            leak_timeout: h.leak_timeout,
            capture: h.capture,
            warm: if h.warm { Some(true) } else { h.no_warm.then_some(false) },
            checks: flakehunt_core::checks::ChecksRequest {
                goroutine_leaks: if h.leak_check { Some(true) } else { h.no_leak_check.then_some(false) },
                race: h.race,
                threads: if h.thread_check { Some(true) } else { h.no_thread_check.then_some(false) },
            },
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
        }),
        config,
        config_path: config_path.map(Path::to_owned),
        quiet: h.quiet,
    }
}

fn fire(a: &FireArgs, config: Config, config_path: Option<&Path>) -> HuntSpec {
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
            follow_outside_links: a.follow_outside_links,
        }),
        target: TargetRequest { command: a.command.clone(), shell: a.shell.clone(), ..TargetRequest::default() },
        settings: SettingsRequest {
            timeout: a.timeout,
            grace: a.grace,
            leak_timeout: a.leak_timeout,
            capture: a.capture,
            ..SettingsRequest::default()
        },
        oracle: OracleRequest::default(),
        seed: a.seed,
        shard: None,
        record: record(a.resume.as_deref(), a.record.as_deref()),
        slurm: None,
        config,
        config_path: config_path.map(Path::to_owned),
        quiet: a.quiet,
    }
}

fn verify(a: &VerifyArgs, config: Config, config_path: Option<&Path>) -> HuntSpec {
    HuntSpec {
        kind: HuntKind::Verify(VerifyRequest { record: a.verified.clone(), level: a.level / 100.0 }),
        target: TargetRequest { command: a.command.clone(), shell: a.shell.clone(), ..TargetRequest::default() },
        settings: SettingsRequest {
            budget: a.budget,
            timeout: a.timeout.unwrap_or(SettingsRequest::default().timeout),
            timeout_given: a.timeout.is_some(),
            leak_timeout: a.leak_timeout,
            warm: if a.warm { Some(true) } else { a.no_warm.then_some(false) },
            ..SettingsRequest::default()
        },
        oracle: OracleRequest::default(),
        seed: a.seed,
        shard: a.shard,
        record: record(a.resume.as_deref(), a.record.as_deref()),
        slurm: None,
        config,
        config_path: config_path.map(Path::to_owned),
        quiet: a.quiet,
    }
}

fn record(resume: Option<&Path>, record: Option<&Path>) -> RecordRequest {
    match resume {
        Some(dir) => RecordRequest::Resume(dir.to_owned()),
        None => RecordRequest::New(record.map(Path::to_owned)),
    }
}

/// `flakehunt slurm-script HUNT...`: the hunt parsed as if run with `--slurm`, to print its
/// script instead of submitting it.
pub fn parse_hunt(hunt: &[String], config: Option<&Path>) -> Result<Cli, crate::exit::Error> {
    let mut argv = vec!["flakehunt".to_owned()];
    if let Some(c) = config {
        argv.extend(["--config".to_owned(), c.display().to_string()]);
    }
    argv.extend(hunt.iter().cloned());
    let cli = super::parse_nested(argv)?;
    let args = match &cli.command {
        Command::Sweep(a) | Command::Suite(a) => &a.hunt,
        Command::Matrix(a) => &a.hunt,
        _ => return Err(usage("slurm-script takes a sweep or a matrix: `flakehunt slurm-script sweep --slurm 8 ...`")),
    };
    if args.slurm.is_none() {
        return Err(usage("give the number of shards: `flakehunt slurm-script sweep --slurm 8 ...`"));
    }
    if args.json {
        return Err(usage(
            "--json does not apply to `flakehunt slurm-script`, which prints the batch script: give `flakehunt report --format json` the merged record",
        ));
    }
    Ok(cli)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn spec(argv: &[&str]) -> HuntSpec {
        let cli = Cli::try_parse_from(argv).unwrap();
        hunt_spec(&cli.command, Config::default(), cli.config.as_deref()).unwrap().0
    }

    /// The library rebuilds shards' command lines from the options that differ from its
    /// defaults, so they must be the command line's.
    #[test]
    fn the_command_lines_defaults_are_the_librarys() {
        let d = SettingsRequest::default();
        for argv in [&["flakehunt", "sweep", "--", "true"][..], &["flakehunt", "matrix", "-D", "A=1", "--", "true"]] {
            let s = spec(argv).settings;
            assert_eq!(
                (s.runs, s.jobs, s.until_fails, s.budget, s.timeout, s.grace, s.leak_timeout, s.capture),
                (d.runs, d.jobs, d.until_fails, d.budget, d.timeout, d.grace, d.leak_timeout, d.capture)
            );
        }
        let m = spec(&["flakehunt", "matrix", "-D", "A=1", "--", "true"]);
        let sharded = m.sharded("flakehunt".into(), 2, 1).unwrap();
        assert_eq!(sharded.options, ["-D", "A=1"], "defaults are left out");
    }

    #[test]
    fn a_sharded_adaptive_hunt_gives_its_shards_no_option_it_refuses() {
        let mut hunt = spec(&["flakehunt", "hunt", "--budget", "1m", "--", "t"]);
        // As the driver sets it before sharding: the adaptive runner's own width.
        hunt.settings.jobs = 8;
        let sharded = hunt.sharded("flakehunt".into(), 2, 1).unwrap();
        assert_eq!(sharded.options, ["--budget", "1m"]);
    }

    #[test]
    fn shards_get_the_hunts_own_options_back() {
        let argv = [
            "flakehunt",
            "--config",
            "f.toml",
            "sweep",
            "--runs",
            "7",
            "-j",
            "2",
            "--profiles",
            "default,noisy",
            "--timeout",
            "90s",
            "--fail-if",
            "panic",
            "--seed",
            "3",
            "--record",
            "r",
            "--json",
            "-q",
            "--",
            "t",
            "a b",
        ];
        let sharded = spec(&argv).sharded("flakehunt".into(), 4, 9).unwrap();
        assert_eq!(sharded.globals, ["--config", "f.toml"]);
        assert_eq!(sharded.kind, "sweep");
        assert_eq!(
            sharded.options,
            ["--profiles", "default,noisy", "--runs", "7", "--jobs", "2", "--timeout", "1m 30s", "--fail-if", "panic"]
        );
        assert_eq!(sharded.command, ["t", "a b"]);
        assert_eq!((sharded.shards, sharded.seed), (4, 9));
        let again = spec(
            &["flakehunt", "--config", "f.toml", "sweep"]
                .iter()
                .copied()
                .chain(sharded.options.iter().map(String::as_str))
                .chain(["--", "t", "a b"])
                .collect::<Vec<_>>(),
        );
        assert_eq!(again.sharded("flakehunt".into(), 4, 9).unwrap(), sharded, "a shard's command line is stable");
    }
}
