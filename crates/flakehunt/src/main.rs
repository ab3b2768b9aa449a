//! The `flakehunt` command: parse arguments, dispatch to a subcommand, map errors to exit codes.

mod cli;
mod display;
mod exit;
mod hunt;
mod merge;
mod report;
mod shell;
mod signals;
mod style;
mod sweep;

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
    let result = match &cli.command {
        cli::Command::Sweep(args) => sweep::run(args),
        cli::Command::Report(args) => report::run(args),
        cli::Command::Merge(args) => merge::run(args),
        cli::Command::Completions { shell } => shell::completions(*shell),
        cli::Command::Man => shell::man(),
        cli::Command::Watchdog { run_id } => {
            flakehunt_core::exec::serve_watchdog(std::io::stdin().lock(), run_id);
            Ok(exit::OK)
        }
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            // One line: the error and its causes, joined.
            let chain: Vec<String> = err.chain().map(ToString::to_string).collect();
            eprintln!("flakehunt: error: {}", chain.join(": "));
            std::process::exit(exit::code_of(&err));
        }
    }
}
