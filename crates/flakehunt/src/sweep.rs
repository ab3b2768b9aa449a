//! `flakehunt sweep`: the same target under several scheduling profiles.

use flakehunt_core::plan::CellSpec;
use flakehunt_core::profile::Profile;
use flakehunt_core::record::Kind;

use crate::cli::SweepArgs;
use crate::exit;
use crate::hunt::{self, NewHunt};

/// Runs a sweep; returns the exit code.
pub fn run(args: &SweepArgs) -> anyhow::Result<i32> {
    hunt::run(&args.hunt, Kind::Sweep, "profile", || {
        let builtins = Profile::builtins();
        let names: Vec<String> =
            if args.profiles.is_empty() { vec!["default".into(), "one-core".into()] } else { args.profiles.clone() };
        let mut cells = Vec::new();
        for name in &names {
            let name = name.trim();
            let profile = builtins.iter().find(|p| p.name == name).cloned().ok_or_else(|| {
                let known: Vec<&str> = builtins.iter().map(|p| p.name.as_str()).collect();
                exit::usage(format!(
                    "unknown profile '{name}': choose from {} (see `flakehunt profiles`)",
                    known.join(", ")
                ))
            })?;
            if cells.iter().any(|c: &CellSpec| c.name == profile.name) {
                return Err(exit::usage(format!("profile '{name}' is listed twice in --profiles")));
            }
            cells.push(CellSpec::for_profile(profile));
        }
        Ok(NewHunt { cells, extra: serde_json::Value::Null })
    })
}
