//! The Python interpreter a user means for `--pytest`: `--python PATH`, else the active
//! virtualenv's, else the project's `./.venv`, else `python3` on PATH. Main function:
//! [`interpreter`].

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Where the interpreter came from, for the record and the notes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `--python PATH`.
    Option,
    /// `$VIRTUAL_ENV/bin/python`.
    VirtualEnv,
    /// `./.venv/bin/python` in the project.
    ProjectVenv,
    /// `python3` looked up on PATH when the attempt starts.
    Path,
}

/// The interpreter, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interpreter {
    /// What to run: a path, or `python3`.
    pub program: PathBuf,
    /// Where it came from.
    pub source: Source,
}

/// What choosing the interpreter can fail with.
#[derive(Debug, thiserror::Error)]
pub enum PythonError {
    /// `--python` names no file.
    #[error("--python {0}: no such file")]
    Missing(PathBuf),
}

impl crate::error_class::Classify for PythonError {
    fn class(&self) -> crate::error_class::ErrorClass {
        match self {
            Self::Missing(_) => crate::error_class::ErrorClass::Usage,
        }
    }
}

/// Chooses the interpreter from `--python` (`explicit`), `$VIRTUAL_ENV` (`virtual_env`) and
/// the project directory. A virtualenv without `bin/python` (a deleted one left active) is
/// passed over rather than trusted; an explicit path must exist. The chosen path is made
/// absolute against `project`, since attempts may run elsewhere (a clean room).
pub fn interpreter(
    explicit: Option<&Path>,
    virtual_env: Option<&OsStr>,
    project: &Path,
) -> Result<Interpreter, PythonError> {
    let absolute = |p: &Path| if p.is_absolute() { p.to_owned() } else { project.join(p) };
    if let Some(p) = explicit {
        let p = absolute(p);
        return if p.is_file() {
            Ok(Interpreter { program: p, source: Source::Option })
        } else {
            Err(PythonError::Missing(p))
        };
    }
    let in_venv = |dir: &Path| ["python", "python3"].iter().map(|n| dir.join("bin").join(n)).find(|p| p.is_file());
    if let Some(program) = virtual_env.filter(|v| !v.is_empty()).and_then(|v| in_venv(&absolute(Path::new(v)))) {
        return Ok(Interpreter { program, source: Source::VirtualEnv });
    }
    if let Some(program) = in_venv(&project.join(".venv")) {
        return Ok(Interpreter { program, source: Source::ProjectVenv });
    }
    Ok(Interpreter { program: PathBuf::from("python3"), source: Source::Path })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn venv(root: &Path, name: &str) -> PathBuf {
        let bin = root.join(name).join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("python"), "").unwrap();
        bin.join("python")
    }

    #[test]
    fn option_then_virtualenv_then_project_venv_then_python3() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path();
        let none = interpreter(None, None, project).unwrap();
        assert_eq!((none.program, none.source), (PathBuf::from("python3"), Source::Path));
        let dot_venv = venv(project, ".venv");
        assert_eq!(
            interpreter(None, None, project).unwrap(),
            Interpreter { program: dot_venv.clone(), source: Source::ProjectVenv }
        );
        let active = venv(project, "active");
        let env = project.join("active").into_os_string();
        assert_eq!(
            interpreter(None, Some(&env), project).unwrap(),
            Interpreter { program: active, source: Source::VirtualEnv }
        );
        let gone = project.join("deleted").into_os_string();
        assert_eq!(
            interpreter(None, Some(&gone), project).unwrap().source,
            Source::ProjectVenv,
            "a deleted venv is passed over"
        );
        let chosen = interpreter(Some(Path::new(".venv/bin/python")), Some(&env), project).unwrap();
        assert_eq!(chosen, Interpreter { program: dot_venv, source: Source::Option }, "relative to the project");
        let err = interpreter(Some(Path::new("/no/such/python")), None, project).unwrap_err();
        assert_eq!(err.to_string(), "--python /no/such/python: no such file");
    }
}
