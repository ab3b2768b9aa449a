//! The command under test: from `--shell` or an argv, checked to be startable before anything
//! is recorded, and the one line for a target that still cannot be started. Main function:
//! [`target_from`].

use std::path::Path;

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
    check_program(target.program())?;
    Ok(target)
}

/// Fails with one clear line when `program` cannot be started.
pub fn check_program(program: &str) -> Result<(), HuntError> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if program.contains('/') {
        let p = Path::new(program);
        if !p.exists() {
            return Err(HuntError::usage(format!("cannot start '{program}': no such file")));
        }
        if !executable(p) {
            return Err(HuntError::usage(format!(
                "cannot start '{program}': not executable (chmod +x it, or run it through its interpreter)"
            )));
        }
        return Ok(());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    if std::env::split_paths(&path).any(|dir| executable(&dir.join(program))) {
        return Ok(());
    }
    Err(HuntError::usage(format!("cannot start '{program}': not found in PATH (install it, or give its path)")))
}

/// The one line for a target that passed `check_program` but still cannot be started. The
/// kernel says "no such file" both for a missing program and for a script whose `#!`
/// interpreter is missing, and for a missing working directory (a test runner's package
/// directory, relative to where the hunt started); the program was just found, so it is one of
/// those two.
pub(crate) fn spawn_failure(program: &str, source: &std::io::Error, dir: Option<&Path>) -> String {
    let missing_dir = dir.filter(|d| !d.is_dir());
    if let (std::io::ErrorKind::NotFound, Some(d)) = (source.kind(), missing_dir) {
        format!(
            "cannot start '{program}' in {}: no such directory here (resume from the directory the hunt started in)",
            d.display()
        )
    } else if source.kind() == std::io::ErrorKind::NotFound && check_program(program).is_ok() {
        format!("cannot start '{program}': its interpreter was not found (check its #! line)")
    } else {
        format!("cannot start '{program}': {source}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_working_directory_is_named_not_blamed_on_an_interpreter() {
        let not_found = std::io::Error::from(std::io::ErrorKind::NotFound);
        let m = spawn_failure("/bin/sh", &not_found, Some(Path::new("no/such/pkg")));
        assert_eq!(
            m,
            "cannot start '/bin/sh' in no/such/pkg: no such directory here (resume from the directory the hunt started in)"
        );
        let m = spawn_failure("/bin/sh", &not_found, Some(Path::new("/")));
        assert!(m.contains("interpreter was not found"), "{m}");
    }
}
