//! `flakehunt merge`: join shard records into one record.

use std::path::{Path, PathBuf};

use crate::exit;

/// Runs `flakehunt merge`: the shard records `dirs` joined `into` one.
pub fn run(dirs: &[PathBuf], into: &Path) -> Result<exit::Done, exit::Error> {
    let (merge, _) = flakehunt_core::driver::merge(dirs, into)?;
    eprintln!("{}", merge.headline(into));
    for warning in merge.warnings() {
        eprintln!("flakehunt: warning: {warning}");
    }
    eprintln!("report it with: flakehunt report {}", into.display());
    Ok(exit::Done::Ok)
}
