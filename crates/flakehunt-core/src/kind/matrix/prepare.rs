//! A matrix's grid from `-D`, `--rlimit` and the configuration, validated (names, values, hard
//! limits, placeholders the command uses). Main function: [`cells`].

use std::collections::BTreeSet;

use crate::cleanroom::CleanRoom;
use crate::config::Config;
use crate::copy::CopyOptions;
use crate::events::{Event, EventSink};
use crate::exec::Resource;
use crate::kind::matrix::plan::{grid, parse_limit, Dimension, DimensionKind};
use crate::plan::{CellSpec, Target};
use crate::record::{CleanRoomSpec, Extra, MatrixExtra};
use crate::spec::{HuntError, MatrixRequest};

/// The cells of a new matrix and what its manifest records, after the checks that need no
/// attempt (a clean room needs a repository: that is tried once here, not after a cell).
pub(crate) fn cells(
    req: &MatrixRequest,
    runs: u64,
    config: &Config,
    target: &Target,
    sink: &mut dyn EventSink,
) -> Result<(Vec<CellSpec>, Extra), HuntError> {
    if let Some(snapshot) = &req.against {
        let tools = crate::snapshot::tools_of(config, None);
        return super::against::prepare::cells(snapshot, runs, req.confirm, target, tools, sink);
    }
    let dimensions = dimensions(req, config, target)?;
    // Counted before it is built: a grid of many dimensions can be larger than memory.
    let size = crate::kind::matrix::plan::grid_size(&dimensions).unwrap_or(u64::MAX);
    let max = crate::bounds::MAX_CELLS;
    if size > max {
        return Err(HuntError::usage(format!(
            "the grid has {} cells, more than the {max} a matrix can have: give fewer dimensions or values",
            if size == u64::MAX { "more than 18446744073709551615".to_owned() } else { size.to_string() }
        )));
    }
    if size > req.max_cells as u64 && !req.yes {
        return Err(HuntError::usage(format!(
            "the grid has {size} cells, over the limit of {}: pass --yes to run it, or fewer values",
            req.max_cells
        )));
    }
    let cells = grid(&dimensions);
    sink.event(&Event::MatrixPlanned { cells: cells.len(), dimensions: &dimensions, runs, confirm: req.confirm })?;
    let project = std::env::current_dir().map_err(|e| HuntError::io("cannot read the current directory", e))?;
    let clean_room = req.clean_room.as_ref().map(|c| CleanRoomSpec {
        project: project.clone(),
        setup: c.setup.clone(),
        keep_env: c.keep_env.clone(),
        keep: c.keep,
        follow_outside_links: c.follow_outside_links,
    });
    if let Some(room) = &clean_room {
        // Fail on a non-repository or a refused link before any attempt, without copying.
        let copy = CopyOptions { follow_outside_links: room.follow_outside_links };
        CleanRoom::check(&project, copy)?;
    }
    let extra = Extra {
        matrix: Some(MatrixExtra { dimensions, confirm: req.confirm, clean_room, against: None }),
        ..Extra::default()
    };
    Ok((cells, extra))
}

/// The dimensions from `-D`, `--rlimit` and the configuration, validated.
fn dimensions(args: &MatrixRequest, config: &Config, target: &Target) -> Result<Vec<Dimension>, HuntError> {
    let argv_text = target.argv.join(" ");
    let used = placeholders(&argv_text);
    let mut dims: Vec<Dimension> = Vec::new();
    let mut push = |d: Dimension| -> Result<(), HuntError> {
        if dims.iter().any(|x| x.name == d.name) {
            return Err(HuntError::usage(format!(
                "dimension '{}' is given twice: give all its values in one -D {}=a,b",
                d.name, d.name
            )));
        }
        if d.values.iter().any(|v| v.contains('\0')) {
            return Err(HuntError::usage(format!(
                "dimension '{}' has a value with a NUL byte, which no program can be given",
                d.name
            )));
        }
        if d.values.is_empty() || d.values.iter().any(String::is_empty) {
            return Err(HuntError::usage(format!(
                "dimension '{}' has an empty value: write -D {}=v1,v2",
                d.name, d.name
            )));
        }
        let distinct: BTreeSet<&String> = d.values.iter().collect();
        if distinct.len() != d.values.len() {
            return Err(HuntError::usage(format!("dimension '{}' lists a value twice", d.name)));
        }
        dims.push(d);
        Ok(())
    };
    let env_dims = args
        .define
        .iter()
        .map(|d| {
            let (name, values) = d.split_once('=').ok_or_else(|| {
                HuntError::usage(format!("-D {d}: write -D NAME=value1,value2 (a value may be 'unset')"))
            })?;
            Ok((name.trim().to_owned(), values.split(',').map(|v| v.trim().to_owned()).collect::<Vec<_>>()))
        })
        .collect::<Result<Vec<_>, HuntError>>()?;
    for (name, values) in env_dims.into_iter().chain(config.matrix.env.iter().map(|(k, v)| (k.clone(), v.clone()))) {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(HuntError::usage(format!("dimension name '{name}': use letters, digits and '_'")));
        }
        let kind = if used.contains(&name) { DimensionKind::Placeholder } else { DimensionKind::Env };
        if kind == DimensionKind::Placeholder && values.iter().any(|v| v == "unset") {
            return Err(HuntError::usage(format!("placeholder {{{name}}} cannot be 'unset': give it a value")));
        }
        push(Dimension { name, kind, values })?;
    }
    let limit_dims = args
        .rlimit
        .iter()
        .map(|d| {
            let (name, values) = d
                .split_once('=')
                .ok_or_else(|| HuntError::usage(format!("--rlimit {d}: write --rlimit nofile=1024,65535")))?;
            Ok((name.trim().to_owned(), values.split(',').map(|v| v.trim().to_owned()).collect::<Vec<_>>()))
        })
        .collect::<Result<Vec<_>, HuntError>>()?;
    let config_limits = config.matrix.rlimits.iter().map(|(k, v)| {
        (k.clone(), v.iter().map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_owned)).collect::<Vec<_>>())
    });
    for (name, values) in limit_dims.into_iter().chain(config_limits) {
        let resource = Resource::from_name(&name).ok_or_else(|| {
            let known: Vec<&str> = Resource::ALL.iter().map(|r| r.name()).collect();
            HuntError::usage(format!("unknown rlimit '{name}': choose from {}", known.join(", ")))
        })?;
        let (_, hard) = resource.current();
        for v in &values {
            let limit = parse_limit(v).map_err(|e| HuntError::usage(format!("--rlimit {name}: {e}")))?;
            match (limit, hard) {
                (None, Some(h)) => {
                    return Err(HuntError::usage(format!(
                        "--rlimit {name}=unlimited is above the hard limit {h}: use a value up to {h}"
                    )))
                }
                (Some(l), Some(h)) if l > h => {
                    return Err(HuntError::usage(format!(
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
            return Err(HuntError::usage(format!(
                "the command uses {{{name}}} but no dimension defines it: add -D {name}=value1,value2"
            )));
        }
    }
    if dims.is_empty() {
        return Err(HuntError::usage(
            "no dimensions: add -D NAME=v1,v2 or --rlimit nofile=1024,65535 (or [matrix] in flakehunt.toml), or --against SNAPSHOT",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_found() {
        let p = placeholders("pytest -n {workers} --tz={TZ} {} {1} awk '{ print }'");
        assert_eq!(p.into_iter().collect::<Vec<_>>(), vec!["TZ".to_owned(), "workers".to_owned()]);
    }
}
