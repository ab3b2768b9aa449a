//! Clean rooms for the matrix: a fresh copy of a project's tracked files with its own empty
//! `HOME` and `TMPDIR`, prepared by an optional setup command, run with a scrubbed environment.
//! Main type: [`CleanRoom`].

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// One clean room; removed when dropped unless kept.
#[derive(Debug)]
pub struct CleanRoom {
    root: tempfile::TempDir,
    env: Vec<(String, String)>,
}

/// Why a clean room could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CleanRoomError {
    /// `git ls-files` failed: not a repository, or no git.
    #[error("--clean-room copies the tracked files of a git repository, and {0} is not one (or git is missing)")]
    NotARepository(PathBuf),
    /// Copying failed.
    #[error("cannot copy {path} into the clean room")]
    Copy {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The setup command failed.
    #[error("--setup failed in the clean room (exit {code}): {tail}")]
    Setup {
        /// Its exit code (-1 for a signal).
        code: i32,
        /// The end of its output.
        tail: String,
    },
}

impl CleanRoom {
    /// Copies the files git tracks in `project` into a fresh directory, then runs `setup` there.
    /// `keep_env` names variables passed through besides `PATH`.
    pub fn create(project: &Path, setup: Option<&str>, keep_env: &[String]) -> Result<Self, CleanRoomError> {
        let listed = Command::new("git")
            .arg("-C")
            .arg(project)
            .args(["ls-files", "-z", "--cached"])
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .ok_or_else(|| CleanRoomError::NotARepository(project.to_owned()))?;
        let root = tempfile::Builder::new()
            .prefix("flakehunt-room-")
            .tempdir()
            .map_err(|source| CleanRoomError::Copy { path: project.to_owned(), source })?;
        let work = root.path().join("work");
        for dir in ["work", "home", "tmp"] {
            std::fs::create_dir_all(root.path().join(dir))
                .map_err(|source| CleanRoomError::Copy { path: root.path().join(dir), source })?;
        }
        for name in listed.stdout.split(|&b| b == 0).filter(|n| !n.is_empty()) {
            let rel = Path::new(std::str::from_utf8(name).unwrap_or_default());
            let from = project.join(rel);
            let to = work.join(rel);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|source| CleanRoomError::Copy { path: from.clone(), source })?;
            }
            let meta = match std::fs::symlink_metadata(&from) {
                Ok(m) => m,
                // Tracked but deleted in the working tree: the room has what is there.
                Err(_) => continue,
            };
            let copied = if meta.file_type().is_symlink() {
                std::fs::read_link(&from).and_then(|target| std::os::unix::fs::symlink(target, &to))
            } else if meta.is_file() {
                std::fs::copy(&from, &to).map(|_| ())
            } else {
                Ok(())
            };
            copied.map_err(|source| CleanRoomError::Copy { path: from.clone(), source })?;
        }
        let mut env = vec![
            ("HOME".to_owned(), root.path().join("home").display().to_string()),
            ("TMPDIR".to_owned(), root.path().join("tmp").display().to_string()),
        ];
        for name in std::iter::once("PATH").chain(keep_env.iter().map(String::as_str)) {
            if let Ok(value) = std::env::var(name) {
                env.push((name.to_owned(), value));
            }
        }
        let room = Self { root, env };
        if let Some(script) = setup {
            let out = Command::new("sh")
                .args(["-c", script])
                .current_dir(room.dir())
                .env_clear()
                .envs(room.env.iter().map(|(k, v)| (k, v)))
                .stdin(Stdio::null())
                .output()
                .map_err(|source| CleanRoomError::Copy { path: PathBuf::from("sh"), source })?;
            if !out.status.success() {
                let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
                text.push_str(&String::from_utf8_lossy(&out.stderr));
                let tail: String =
                    text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").chars().take(200).collect();
                return Err(CleanRoomError::Setup { code: out.status.code().unwrap_or(-1), tail });
            }
        }
        Ok(room)
    }

    /// The working directory: the copy of the project.
    pub fn dir(&self) -> PathBuf {
        self.root.path().join("work")
    }

    /// The scrubbed environment: `PATH`, `HOME`, `TMPDIR` and the kept variables.
    pub fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// Keeps the room on disk after the hunt; returns where it is.
    pub fn keep(self) -> PathBuf {
        self.root.keep()
    }
}
