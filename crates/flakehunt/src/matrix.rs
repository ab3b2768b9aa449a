//! `flakehunt matrix`: the target under a grid of environment conditions (variables, resource
//! limits, argv placeholders, optionally in clean rooms); a cell reproduces only when it fails
//! twice, and the smallest overlay that still reproduces is reported.

use std::collections::{BTreeMap, BTreeSet};

use flakehunt_core::cleanroom::{CleanRoom, RoomOptions};
use flakehunt_core::config::Config;
use flakehunt_core::copy::CopyOptions;
use flakehunt_core::exec::Resource;
use flakehunt_core::plan::matrix::{grid, parse_limit, Dimension, DimensionKind};
use flakehunt_core::plan::Target;
use flakehunt_core::record::{Kind, Manifest};
use flakehunt_core::runner::Room;

use crate::cli::MatrixArgs;
use crate::exit;
use crate::hunt::{self, NewHunt};

/// Runs a matrix; returns the exit code.
pub fn run(args: &MatrixArgs, config: &Config) -> anyhow::Result<i32> {
    hunt::run(&args.hunt, config, Kind::Matrix, "cell", |target| {
        let dimensions = dimensions(args, config, target)?;
        // Counted before it is built: a grid of many dimensions can be larger than memory.
        let size = flakehunt_core::plan::matrix::grid_size(&dimensions).unwrap_or(u64::MAX);
        let max = flakehunt_core::bounds::MAX_CELLS;
        if size > max {
            return Err(exit::usage(format!(
                "the grid has {} cells, more than the {max} a matrix can have: give fewer dimensions or values",
                if size == u64::MAX { "more than 18446744073709551615".to_owned() } else { size.to_string() }
            )));
        }
        if size > args.max_cells as u64 && !args.yes {
            return Err(exit::usage(format!(
                "the grid has {size} cells, over the limit of {}: pass --yes to run it, or fewer values",
                args.max_cells
            )));
        }
        let cells = grid(&dimensions);
        if !args.hunt.quiet {
            let sizes: Vec<String> = dimensions.iter().map(|d| format!("{} ({})", d.name, d.values.len())).collect();
            eprintln!(
                "matrix: {} cells from {}, {} runs each, confirm single failures up to {} times",
                cells.len(),
                sizes.join(" x "),
                args.hunt.runs,
                args.confirm
            );
        }
        let project = std::env::current_dir()?;
        let clean_room = args.clean_room.then(|| {
            serde_json::json!({
                "project": project.display().to_string(),
                "setup": args.setup,
                "keep_env": args.keep_env,
                "keep": args.keep,
                "follow_outside_links": args.follow_outside_links,
            })
        });
        if args.clean_room {
            // Fail on a non-repository or a refused link before any attempt, without copying.
            let copy = CopyOptions { follow_outside_links: args.follow_outside_links };
            CleanRoom::check(&project, copy).map_err(|e| exit::usage(e.to_string()))?;
        }
        Ok(NewHunt {
            cells,
            extra: serde_json::json!({ "dimensions": dimensions, "confirm": args.confirm, "clean_room": clean_room }),
            oracle: None,
        })
    })
}

/// The dimensions from `-D`, `--rlimit` and the configuration, validated.
fn dimensions(args: &MatrixArgs, config: &Config, target: &Target) -> anyhow::Result<Vec<Dimension>> {
    let argv_text = target.argv.join(" ");
    let used = placeholders(&argv_text);
    let mut dims: Vec<Dimension> = Vec::new();
    let mut push = |d: Dimension| -> anyhow::Result<()> {
        if dims.iter().any(|x| x.name == d.name) {
            return Err(exit::usage(format!(
                "dimension '{}' is given twice: give all its values in one -D {}=a,b",
                d.name, d.name
            )));
        }
        if d.values.iter().any(|v| v.contains('\0')) {
            return Err(exit::usage(format!(
                "dimension '{}' has a value with a NUL byte, which no program can be given",
                d.name
            )));
        }
        if d.values.is_empty() || d.values.iter().any(String::is_empty) {
            return Err(exit::usage(format!("dimension '{}' has an empty value: write -D {}=v1,v2", d.name, d.name)));
        }
        let distinct: BTreeSet<&String> = d.values.iter().collect();
        if distinct.len() != d.values.len() {
            return Err(exit::usage(format!("dimension '{}' lists a value twice", d.name)));
        }
        dims.push(d);
        Ok(())
    };
    let env_dims = args
        .define
        .iter()
        .map(|d| {
            let (name, values) = d
                .split_once('=')
                .ok_or_else(|| exit::usage(format!("-D {d}: write -D NAME=value1,value2 (a value may be 'unset')")))?;
            Ok((name.trim().to_owned(), values.split(',').map(|v| v.trim().to_owned()).collect::<Vec<_>>()))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    for (name, values) in env_dims.into_iter().chain(config.matrix.env.iter().map(|(k, v)| (k.clone(), v.clone()))) {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(exit::usage(format!("dimension name '{name}': use letters, digits and '_'")));
        }
        let kind = if used.contains(&name) { DimensionKind::Placeholder } else { DimensionKind::Env };
        if kind == DimensionKind::Placeholder && values.iter().any(|v| v == "unset") {
            return Err(exit::usage(format!("placeholder {{{name}}} cannot be 'unset': give it a value")));
        }
        push(Dimension { name, kind, values })?;
    }
    let limit_dims = args
        .rlimit
        .iter()
        .map(|d| {
            let (name, values) = d
                .split_once('=')
                .ok_or_else(|| exit::usage(format!("--rlimit {d}: write --rlimit nofile=1024,65535")))?;
            Ok((name.trim().to_owned(), values.split(',').map(|v| v.trim().to_owned()).collect::<Vec<_>>()))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let config_limits = config.matrix.rlimits.iter().map(|(k, v)| {
        (k.clone(), v.iter().map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_owned)).collect::<Vec<_>>())
    });
    for (name, values) in limit_dims.into_iter().chain(config_limits) {
        let resource = Resource::from_name(&name).ok_or_else(|| {
            let known: Vec<&str> = Resource::ALL.iter().map(|r| r.name()).collect();
            exit::usage(format!("unknown rlimit '{name}': choose from {}", known.join(", ")))
        })?;
        let (_, hard) = resource.current();
        for v in &values {
            let limit = parse_limit(v).map_err(|e| exit::usage(format!("--rlimit {name}: {e}")))?;
            match (limit, hard) {
                (None, Some(h)) => {
                    return Err(exit::usage(format!(
                        "--rlimit {name}=unlimited is above the hard limit {h}: use a value up to {h}"
                    )))
                }
                (Some(l), Some(h)) if l > h => {
                    return Err(exit::usage(format!(
                        "--rlimit {name}={v} is above the hard limit {h}: use a value up to {h}"
                    )))
                }
                _ => {}
            }
        }
        push(Dimension { name, kind: DimensionKind::Rlimit, values })?;
    }
    for name in &used {
        if !dims.iter().any(|d| &d.name == name) {
            return Err(exit::usage(format!(
                "the command uses {{{name}}} but no dimension defines it: add -D {name}=value1,value2"
            )));
        }
    }
    if dims.is_empty() {
        return Err(exit::usage(
            "no dimensions: add -D NAME=v1,v2 or --rlimit nofile=1024,65535 (or [matrix] in flakehunt.toml)",
        ));
    }
    Ok(dims)
}

/// `{name}` placeholders in the command.
fn placeholders(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        if let Some(end) = after.find('}') {
            let name = &after[..end];
            if !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
            {
                out.insert(name.to_owned());
            }
            rest = &after[end..];
        } else {
            break;
        }
    }
    out
}

/// The clean rooms a matrix manifest asks for, one per cell, prepared before the hunt (and the
/// rooms themselves, which must live as long as the hunt). The `watchdog` removes them if
/// flakehunt dies.
pub fn clean_rooms(
    manifest: &Manifest,
    quiet: bool,
    watchdog: Option<&flakehunt_core::exec::Watchdog>,
) -> anyhow::Result<(BTreeMap<String, Room>, Vec<CleanRoom>)> {
    let Some(spec) = manifest.extra.get("clean_room").filter(|v| !v.is_null()) else {
        return Ok((BTreeMap::new(), Vec::new()));
    };
    let project = std::path::PathBuf::from(spec.get("project").and_then(|p| p.as_str()).unwrap_or("."));
    let setup = spec.get("setup").and_then(|s| s.as_str());
    let keep_env: Vec<String> =
        spec.get("keep_env").and_then(|k| serde_json::from_value(k.clone()).ok()).unwrap_or_default();
    let keep = spec.get("keep").and_then(serde_json::Value::as_bool).unwrap_or(false);
    let follow = spec.get("follow_outside_links").and_then(serde_json::Value::as_bool).unwrap_or(false);
    let options = RoomOptions {
        setup,
        keep_env: &keep_env,
        copy: CopyOptions { follow_outside_links: follow },
        watchdog,
        run_id: Some(&manifest.run_id),
    };
    let mut rooms = BTreeMap::new();
    let mut owned = Vec::new();
    for (i, cell) in manifest.cells.iter().enumerate() {
        if !quiet {
            eprintln!("clean room {}/{}: {}", i + 1, manifest.cells.len(), cell.name);
        }
        let room = CleanRoom::create(&project, &options).map_err(|e| exit::usage(e.to_string()))?;
        rooms.insert(cell.name.clone(), Room { cwd: room.dir(), env: room.env().to_vec() });
        owned.push(room);
    }
    if keep {
        let kept: Vec<String> = owned.into_iter().map(|r| r.keep().display().to_string()).collect();
        if !quiet {
            eprintln!("clean rooms kept: {}", kept.join(" "));
        }
        return Ok((rooms, Vec::new()));
    }
    Ok((rooms, owned))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_found() {
        let p = placeholders("pytest -n {workers} --tz={TZ} {} {1} awk '{ print }'");
        assert_eq!(p.into_iter().collect::<Vec<_>>(), vec!["TZ".to_owned(), "workers".to_owned()]);
    }
}
