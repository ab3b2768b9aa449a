//! `flakehunt snapshot`: the environment snapshot of this machine and project, on stdout or
//! into a file for a CI step to upload.

use std::io::Write;

use flakehunt_core::snapshot::{Snapshot, SnapshotRequest};

use crate::cli::SnapshotArgs;
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
/// reads half a snapshot.
fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
