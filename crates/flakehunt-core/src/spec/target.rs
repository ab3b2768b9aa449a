//! The command under test: from `--shell` or an argv, checked to be startable (by
//! [`crate::exec::check_program`]) before anything is recorded. Main function: [`target_from`].

use super::HuntError;
use crate::plan::Target;
use crate::record::Kind;

/// The target from a `--shell` script or an argv, checked to exist.
pub fn target_from(shell: Option<&str>, command: &[String], kind: Kind) -> Result<Target, HuntError> {
    let target = match (shell, command.is_empty()) {
        (Some(script), _) => Target::shell(script.to_owned()),
        (None, false) => Target::argv(command.to_vec()),
        (None, true) => {
            return Err(HuntError::usage(format!(
            "no command to run: give it after --, e.g. `flakehunt {} -- cargo test -q ledger`, or use --shell 'STRING'",
            kind.name()
        )))
        }
    };
    crate::exec::check_program(target.program(), target.dir.as_deref())?;
    Ok(target)
}
