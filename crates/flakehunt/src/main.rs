//! The `flakehunt` command: parse arguments, dispatch to a subcommand, map errors to exit codes.

mod adapter;
mod adaptive;
mod cli;
mod dispatch;
mod display;
mod exit;
mod fire;
mod hunt;
mod hypo;
mod matrix;
mod merge;
mod probe;
mod report;
mod shell;
mod signals;
mod slurm;
mod style;
mod sweep;

use clap::Parser;
use flakehunt_core::config::Config;

fn main() {
    let cli = cli::Cli::parse();
    // Decided once, before anything is written.
    flakehunt_core::redact::set_enabled(!cli.no_redact);
    let result = dispatch(&cli);
    match result {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            // One line: the error and its causes, joined by ": ".
            eprintln!("flakehunt: error: {}", exit::message_of(&err));
            std::process::exit(exit::code_of(&err));
        }
    }
}

fn dispatch(cli: &cli::Cli) -> anyhow::Result<i32> {
    let config = || -> anyhow::Result<Config> {
        let cwd = std::env::current_dir()?;
        let (config, _) = Config::load(cli.config.as_deref(), &cwd).map_err(|e| exit::usage(e.to_string()))?;
        Ok(config)
    };
    match &cli.command {
        cli::Command::Hunt(args) => adaptive::run(args, &config()?),
        cli::Command::Sweep(args) => sweep::run(args, &config()?),
        cli::Command::Matrix(args) => matrix::run(args, &config()?),
        cli::Command::Fire(args) => fire::run(args, &config()?),
        cli::Command::Hypo(cmd) => hypo::run(cmd),
        cli::Command::Report(args) => report::run(args),
        cli::Command::Merge(args) => merge::run(args),
        cli::Command::SlurmScript { hunt } => slurm::print_script(hunt, cli.config.as_deref()),
        cli::Command::Dispatch(cmd) => dispatch::run(cmd),
        cli::Command::Completions { shell } => shell::completions(*shell),
        cli::Command::Man => shell::man(),
        cli::Command::Probe { profiles, json } => probe::run(profiles, *json, &config()?),
        cli::Command::Profiles => probe::list(&config()?),
        cli::Command::Snapshot => {
            let tools = hunt::snapshot_tools(&config()?, None);
            println!("{}", serde_json::to_string_pretty(&flakehunt_core::snapshot::Snapshot::capture(&tools))?);
            Ok(exit::OK)
        }
        cli::Command::ProbeWorkload { millis } => probe::workload(*millis),
        cli::Command::Watchdog { run_id } => {
            flakehunt_core::exec::serve_watchdog(std::io::stdin().lock(), run_id);
            Ok(exit::OK)
        }
    }
}
