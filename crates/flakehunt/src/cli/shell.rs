//! `flakehunt completions` and `flakehunt man`: shell integration generated from the clap
//! definition, so it cannot drift from the real options.

use std::io::Write;

use clap::CommandFactory;

use super::Cli;
use crate::exit;

/// Prints the completion script for `shell`.
pub fn completions(shell: clap_complete::Shell) -> anyhow::Result<exit::Done> {
    let mut cmd = Cli::command();
    let mut out = std::io::stdout().lock();
    clap_complete::generate(shell, &mut cmd, "flakehunt", &mut out);
    out.flush()?;
    Ok(exit::Done::Ok)
}

/// Prints the man page.
pub fn man() -> anyhow::Result<exit::Done> {
    let mut out = std::io::stdout().lock();
    clap_mangen::Man::new(Cli::command()).render(&mut out)?;
    out.flush()?;
    Ok(exit::Done::Ok)
}
