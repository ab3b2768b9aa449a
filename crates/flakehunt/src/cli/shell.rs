//! `flakehunt completions` and `flakehunt man`: shell integration generated from the clap
//! definition, so it cannot drift from the real options.

use super::command;
use crate::exit;

/// Prints the completion script for `shell`.
pub fn completions(shell: clap_complete::Shell) -> Result<exit::Done, exit::Error> {
    let mut cmd = command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "flakehunt", &mut script);
    exit::to_stdout(|out| out.write_all(&script))?;
    Ok(exit::Done::Ok)
}

/// Prints the man page.
pub fn man() -> Result<exit::Done, exit::Error> {
    exit::to_stdout(|out| clap_mangen::Man::new(command()).render(out))?;
    Ok(exit::Done::Ok)
}
