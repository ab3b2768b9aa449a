//! `flakehunt snapshot`: the environment snapshot of this machine and project, on stdout or
//! into a file for a CI step to upload.

use std::io::Write;

use flakehunt_core::snapshot::{Snapshot, SnapshotRequest};

use crate::cli::{DiffArgs, SnapshotArgs};
use crate::exit::{self, Error};

/// Runs `flakehunt snapshot` with the tool lines `tools`.
pub fn run(tools: Vec<String>, args: &SnapshotArgs) -> Result<exit::Done, Error> {
    let request =
        SnapshotRequest::everything(tools, args.python.as_deref(), args.go_test.as_deref()).map_err(exit::usage)?;
    let snapshot = Snapshot::capture_in(&request, None, None);
    let mut text = serde_json::to_string_pretty(&snapshot).expect("a snapshot is JSON");
    text.push('\n');
    match &args.output {
        Some(path) => write_atomically(path, text.as_bytes())
            .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))?,
        None => exit::to_stdout(|out| out.write_all(text.as_bytes()))?,
    }
    Ok(exit::Done::Ok)
}

/// Writes `bytes` to `path` through a temporary file beside it, so that an upload step never
/// reads half a snapshot. A symlink is written through, as the shell's `>` would (the link stays,
/// its target gets the snapshot); a FIFO or a device is written to as it is, never replaced.
fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut target = path.to_path_buf();
    for _ in 0..40 {
        let Ok(link) = std::fs::read_link(&target) else { break };
        target = target.parent().unwrap_or(std::path::Path::new(".")).join(link);
    }
    match std::fs::symlink_metadata(&target) {
        Ok(m) if m.file_type().is_symlink() => {
            return Err(std::io::Error::other("too many levels of symbolic links"));
        }
        Ok(m) if !m.is_file() && !m.is_dir() => {
            return std::fs::OpenOptions::new().write(true).open(&target)?.write_all(bytes);
        }
        _ => {}
    }
    let dir = target.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.persist(&target).map_err(|e| e.error)?;
    Ok(())
}

/// Runs `flakehunt diff`: the differences between A and B (A this machine now when only B is
/// given, read with the tool lines `tools`), as text or JSON on stdout.
pub fn diff(args: &DiffArgs, tools: Vec<String>) -> Result<exit::Done, Error> {
    use flakehunt_core::drift;
    let (a, a_name, b, b_name) = match args.snapshots.as_slice() {
        [b] => {
            let request = SnapshotRequest::everything(tools, None, None).map_err(exit::usage)?;
            let here = Snapshot::capture_in(&request, None, None);
            (here, "this machine, now".to_owned(), drift::read_snapshot(b)?, b.display().to_string())
        }
        [a, b] => {
            (drift::read_snapshot(a)?, a.display().to_string(), drift::read_snapshot(b)?, b.display().to_string())
        }
        _ => return Err(exit::usage("give one or two snapshots: `flakehunt diff [A] B`")),
    };
    let found = drift::compare(&a, &b, &drift::Here::detect());
    // Both snapshots were redacted when read; what is rendered goes through it once more, as
    // every output does.
    let redact = flakehunt_core::redact::enabled();
    if args.json {
        let mut json = drift::render::json(&found, &a_name, &b_name);
        if redact {
            flakehunt_core::redact::json(&mut json);
        }
        let text = serde_json::to_string_pretty(&json).expect("JSON");
        exit::to_stdout(|out| writeln!(out, "{text}"))?;
    } else {
        let mut text = drift::render::text(&found, &a_name, &b_name);
        if redact {
            flakehunt_core::redact::in_place(&mut text);
        }
        exit::to_stdout(|out| out.write_all(text.as_bytes()))?;
    }
    Ok(if found.differences.is_empty() { exit::Done::Ok } else { exit::Done::Differ })
}
