//! The `flakehunt` command: parse arguments, turn a hunt's into the library's typed spec, run
//! it with the display attached, print, and map the outcome to an exit code.

mod cli;
mod display;
mod exit;
mod hunt;
mod hypo;
mod merge;
mod report;
mod snapshot;
mod style;

use flakehunt_core::config::Config;

use crate::exit::{Done, Error};

fn main() {
    let cli = match cli::parse() {
        Ok(cli) => cli,
        Err(err) => {
            // The arguments could not be read, so neither could --no-redact: looked for plainly.
            flakehunt_core::redact::set_enabled(!std::env::args().any(|a| a == "--no-redact"));
            say_error(&err);
            std::process::exit(exit::code(&Err(err)));
        }
    };
    // Decided once, before anything is written.
    flakehunt_core::redact::set_enabled(!cli.no_redact);
    if !cli.no_redact {
        // What every target inherits: a test may print any of it.
        flakehunt_core::redact::add_secret_values(flakehunt_core::redact::secret_values_of_environment());
    }
    let result = dispatch(&cli);
    if let Err(err) = &result {
        say_error(err);
    }
    std::process::exit(exit::code(&result));
}

/// One line: the error and its causes, joined by ": ". An error may quote the target's output
/// (a collection error) or an argument: redacted like everything flakehunt writes.
fn say_error(err: &Error) {
    let mut message = exit::message_of(err);
    if flakehunt_core::redact::enabled() {
        flakehunt_core::redact::in_place(&mut message);
    }
    eprintln!("flakehunt: error: {message}");
}

fn dispatch(cli: &cli::Cli) -> Result<Done, Error> {
    let config = || -> Result<Config, Error> {
        let cwd = std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
        let (config, _) = Config::load(cli.config.as_deref(), &cwd)?;
        Ok(config)
    };
    match &cli.command {
        cli::Command::Hunt(_)
        | cli::Command::Sweep(_)
        | cli::Command::Suite(_)
        | cli::Command::Matrix(_)
        | cli::Command::Fire(_)
        | cli::Command::Verify(_) => {
            let (spec, json) = cli::hunt_spec(&cli.command, config()?, cli.config.as_deref()).expect("a hunt");
            hunt::run(&spec, json)
        }
        cli::Command::Hypo(cmd) => hypo::run(&match cmd {
            cli::HypoCommand::Add { text, command } => hypo::HypoRequest::Add { text, command },
            cli::HypoCommand::Run { id } => hypo::HypoRequest::Run { id: *id },
            cli::HypoCommand::List => hypo::HypoRequest::List,
        }),
        cli::Command::Report(a) => report::run(&a.dir, a.format.into(), a.output.as_deref()),
        cli::Command::Merge(a) => merge::run(&a.dirs, &a.into),
        cli::Command::SlurmScript { hunt } => {
            let parsed = cli::parse_hunt(hunt, cli.config.as_deref())?;
            let (spec, _) = cli::hunt_spec(&parsed.command, config()?, parsed.config.as_deref()).expect("a hunt");
            hunt::slurm_script(&spec)
        }
        cli::Command::Dispatch(cmd) => {
            let text = cli::dispatch_text(cmd)?;
            exit::to_stdout(|out| out.write_all(text.as_bytes()))?;
            Ok(Done::Ok)
        }
        cli::Command::Completions { shell } => cli::shell::completions(*shell),
        cli::Command::Man => cli::shell::man(),
        cli::Command::Probe { profiles, json } => hunt::probe(profiles, *json, &config()?),
        cli::Command::Profiles => {
            let table = flakehunt_core::probe::profiles_table(&config()?);
            exit::to_stdout(|out| out.write_all(table.as_bytes()))?;
            Ok(Done::Ok)
        }
        cli::Command::Snapshot(a) => {
            let tools = flakehunt_core::snapshot::tools_of(&config()?, None);
            snapshot::run(tools, a)
        }
        cli::Command::Diff(a) => snapshot::diff(a, flakehunt_core::snapshot::tools_of(&config()?, None)),
        cli::Command::ProbeWorkload { millis } => {
            let line = flakehunt_core::probe::workload(*millis);
            exit::to_stdout(|out| writeln!(out, "{line}"))?;
            Ok(Done::Ok)
        }
        cli::Command::Watchdog { run_id, protect } => {
            flakehunt_core::exec::serve_watchdog(std::io::stdin().lock(), run_id, protect);
            Ok(Done::Ok)
        }
    }
}
