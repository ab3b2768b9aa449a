//! The `flakehunt` command: parse arguments, dispatch to a subcommand, map errors to exit codes.

mod cli;
mod display;
mod exit;
mod fire;
mod hunt;
mod signals;
mod style;
mod sweep;

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
    let result = match &cli.command {
        cli::Command::Sweep(args) => sweep::run(args),
        cli::Command::Fire(args) => fire::run(args),
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
