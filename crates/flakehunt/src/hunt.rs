//! Running a hunt from the terminal: the library's driver with the live display attached, then
//! the summary on stdout (or JSON, with the table on stderr). Also `probe`, which shows what
//! each profile does here.

use std::path::Path;

use flakehunt_core::analysis::Summary;
use flakehunt_core::config::Config;
use flakehunt_core::driver::{self, cell_header};
use flakehunt_core::events::{Event, EventSink};
use flakehunt_core::plan::Target;
use flakehunt_core::probe;
use flakehunt_core::profile::{BuiltinProfiles, Profile};
use flakehunt_core::spec::HuntSpec;

use crate::display::Display;
use crate::exit::{self, Done, Error};

/// Runs `spec` with the display attached and prints its summary.
pub fn run(spec: &HuntSpec, json: bool) -> Result<Done, Error> {
    let mut display = Display::new(spec.quiet);
    let result = driver::run(spec, &mut display);
    display.finish();
    let report = match result {
        Ok(report) => report,
        Err(e) => {
            display.print_asides();
            return Err(e.into());
        }
    };
    print_summary(&report.summary, &report.dir, json, cell_header(report.summary.kind))?;
    display.print_asides();
    if let Some(i) = &report.incomplete {
        let event =
            Event::ShardsIncomplete { missing: &i.missing, shards: i.shards, script: &i.script, dir: &report.dir };
        display.event(&event)?;
    }
    Ok(Done::Hunt(report.end))
}

/// `flakehunt slurm-script`: prints the batch script `spec` would submit.
pub fn slurm_script(spec: &HuntSpec) -> Result<Done, Error> {
    let mut display = Display::new(spec.quiet);
    let script = driver::slurm_script(spec, &mut display);
    display.print_asides();
    let script = script?;
    exit::to_stdout(|out| out.write_all(script.as_bytes()))?;
    Ok(Done::Ok)
}

/// Prints the summary: the table on stdout, or JSON on stdout and the table on stderr.
pub fn print_summary(summary: &Summary, dir: &Path, json: bool, cell_header: &str) -> Result<(), Error> {
    let table = flakehunt_core::render::term::render(summary, cell_header);
    let footer = format!("record: {}", dir.display());
    if json {
        exit::to_stdout(|out| {
            // The document `summary.json` holds, redacted as it is.
            let mut document = serde_json::to_value(summary)?;
            if flakehunt_core::redact::enabled() {
                flakehunt_core::redact::json(&mut document);
            }
            serde_json::to_writer_pretty(&mut *out, &document)?;
            writeln!(out)
        })?;
        eprint!("{table}");
        eprintln!("{footer}");
    } else {
        exit::to_terminal(|out| {
            write!(out, "{}", crate::style::colour_table(&table))?;
            writeln!(out, "{footer}")
        })?;
    }
    Ok(())
}

/// `flakehunt probe`: every profile, or those named, under the probe workload.
pub fn probe(names: &[String], json: bool, config: &Config) -> Result<Done, Error> {
    let profiles = if names.is_empty() {
        let mut all = Profile::builtins();
        all.extend(config.user_profiles());
        all
    } else {
        probe::select(names, config, &Target::argv(vec!["python3".into()]))?
    };
    let results = probe::probe(&profiles)?;
    if json {
        exit::to_stdout(|out| {
            serde_json::to_writer_pretty(&mut *out, &results)?;
            writeln!(out)
        })?;
    } else {
        let table = probe::probe_table(&results);
        exit::to_stdout(|out| out.write_all(table.as_bytes()))?;
    }
    Ok(if results.iter().all(|r| r.applied || r.profile == "default") { Done::Ok } else { Done::Refused })
}
