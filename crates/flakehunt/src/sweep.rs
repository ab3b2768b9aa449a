//! `flakehunt sweep`: the same target under several scheduling profiles.

use flakehunt_core::config::Config;
use flakehunt_core::plan::{CellSpec, Target};
use flakehunt_core::profile::{Profile, ProfileEnv};
use flakehunt_core::record::Kind;

use crate::cli::SweepArgs;
use crate::exit;
use crate::hunt::{self, NewHunt};

/// Runs a sweep; returns the exit code.
pub fn run(args: &SweepArgs, config: &Config) -> anyhow::Result<i32> {
    hunt::run(&args.hunt, config, Kind::Sweep, "profile", |target| {
        let profiles = select(&args.profiles, config, target)?;
        if args.strict {
            crate::probe::refuse_inert(&profiles)?;
        }
        let cells = profiles.into_iter().map(CellSpec::for_profile).collect();
        Ok(NewHunt { cells, extra: serde_json::Value::Null, oracle: None })
    })
}

/// The profiles named by `--profiles` (built-in, `cpu-starved=PCT`, or from the configuration),
/// or every built-in that applies on this machine. The baseline `default` comes first unless
/// the list names its own first profile.
pub fn select(names: &[String], config: &Config, target: &Target) -> anyhow::Result<Vec<Profile>> {
    let user = config.user_profiles();
    if names.is_empty() {
        let env = ProfileEnv::new("select", 0, target.looks_like_python());
        let defaults = Profile::builtins()
            .into_iter()
            // Opt-in: plain pinning hides multi-threading, and jitter only acts on native code.
            .filter(|p| p.name != "one-core-native" && p.name != "jitter")
            .filter(|p| !p.is_python_only() || target.looks_like_python())
            .filter(|p| p.unapplicable(&env).is_none())
            .collect();
        return Ok(defaults);
    }
    let mut out: Vec<Profile> = Vec::new();
    for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        let profile =
            Profile::builtin(name).or_else(|| user.iter().find(|p| p.name == name).cloned()).ok_or_else(|| {
                let mut known: Vec<String> = Profile::builtins().into_iter().map(|p| p.name).collect();
                known.extend(user.iter().map(|p| p.name.clone()));
                exit::usage(format!(
                    "unknown profile '{name}': choose from {}, or a level: cpu-starved=PCT, noisy=xK, pause=LEN/GAP, jitter=RATE, copies=N (see `flakehunt profiles`)",
                    known.join(", ")
                ))
            })?;
        if out.iter().any(|c| c.name == profile.name) {
            return Err(exit::usage(format!("profile '{name}' is listed twice in --profiles")));
        }
        out.push(profile);
    }
    Ok(out)
}
