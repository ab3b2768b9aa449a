//! Clean rooms for the matrix: a fresh copy of a project's tracked files with its own empty
//! `HOME` and `TMPDIR`, prepared by an optional setup command, run with a scrubbed environment.
//! The copy follows the same rule as fire's sandboxes ([`crate::copy`]): a tracked link into the
//! repository is re-pointed into the room, one leading outside is refused or its content copied.
//! Main type: [`CleanRoom`].

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::copy::{CopyError, CopyOptions, CopyPlan, CopyStats, Selection};
use crate::exec::{TrackedDir, Watchdog};

/// One clean room; removed when dropped unless kept.
#[derive(Debug)]
pub struct CleanRoom {
    root: tempfile::TempDir,
    env: Vec<(String, String)>,
    copied: CopyStats,
    /// Tells the watchdog to remove the room if flakehunt dies; dropped after `root`.
    _tracked: Option<TrackedDir>,
}

/// How clean rooms are made.
#[derive(Debug, Clone, Copy, Default)]
pub struct RoomOptions<'a> {
    /// Run through `sh -c` in the room before its attempts.
    pub setup: Option<&'a str>,
    /// Variables passed through besides `PATH`.
    pub keep_env: &'a [String],
    /// How links leaving the repository are treated.
    pub copy: CopyOptions,
    /// Removes the room if flakehunt dies (until it is kept).
    pub watchdog: Option<&'a Watchdog>,
    /// The hunt's `FLAKEHUNT_RUN_ID`, given to the setup command so the watchdog ends it too.
    pub run_id: Option<&'a str>,
}

/// Why a clean room could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CleanRoomError {
    /// `git ls-files` failed: not a repository, or no git.
    #[error("--clean-room copies the tracked files of a git repository, and {0} is not one (or git is missing)")]
    NotARepository(PathBuf),
    /// The tracked files cannot be copied as they are (a link leading outside the repository).
    #[error("--clean-room")]
    Refused(#[from] CopyError),
    /// The room cannot be made in the temporary directory (a missing or unwritable `TMPDIR`).
    /// The cause is in the message: the binary shows a clean-room error as one line.
    #[error("cannot create a clean room in {dir}: {cause} (set TMPDIR to a writable directory)")]
    Room {
        /// The temporary directory.
        dir: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// Copying failed.
    #[error("cannot copy {path} into the clean room: {cause}")]
    Copy {
        /// The file.
        path: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// The setup command cannot be started.
    #[error("cannot start --setup with sh: {0}")]
    SetupStart(std::io::Error),
    /// The setup command failed.
    #[error("--setup failed in the clean room (exit {code}): {tail}")]
    Setup {
        /// Its exit code (-1 for a signal).
        code: i32,
        /// The end of its output.
        tail: String,
    },
}

impl crate::error_class::Classify for CleanRoomError {
    fn class(&self) -> crate::error_class::ErrorClass {
        use crate::error_class::ErrorClass;
        match self {
            Self::NotARepository(_) | Self::Setup { .. } => ErrorClass::Usage,
            Self::Refused(e) => crate::error_class::Classify::class(e),
            // A TMPDIR that does not exist, or a tracked file gone from the work tree, is the
            // user's to fix; a full or unwritable file system, or a file where the room's
            // directory must be made, is the system's refusal.
            Self::Room { cause, .. } | Self::Copy { cause, .. } => match cause.kind() {
                std::io::ErrorKind::NotFound => ErrorClass::Usage,
                _ => ErrorClass::Io,
            },
            Self::SetupStart(_) => ErrorClass::Io,
        }
    }
}

impl CleanRoom {
    /// Checks that `project` is a repository whose tracked files can be copied, without
    /// copying anything: a refusal comes before any attempt.
    pub fn check(project: &Path, copy: CopyOptions) -> Result<(), CleanRoomError> {
        CopyPlan::of(project, Selection::Listed(&tracked_files(project)?), copy)?;
        Ok(())
    }

    /// Copies the files git tracks in `project` into a fresh directory, then runs the setup
    /// command there. Every path of the room (its directory, `HOME`, `TMPDIR`) is absolute.
    pub fn create(project: &Path, options: &RoomOptions<'_>) -> Result<Self, CleanRoomError> {
        let plan = CopyPlan::of(project, Selection::Listed(&tracked_files(project)?), options.copy)?;
        let root = tempfile::Builder::new()
            .prefix("flakehunt-room-")
            // tempfile makes a relative TMPDIR absolute, so the room's paths are absolute.
            .tempdir()
            .map_err(|cause| CleanRoomError::Room { dir: std::env::temp_dir(), cause })?;
        let tracked = options.watchdog.map(|w| w.track_dir(root.path()));
        let work = root.path().join("work");
        for dir in ["work", "home", "tmp"] {
            std::fs::create_dir_all(root.path().join(dir))
                .map_err(|cause| CleanRoomError::Copy { path: root.path().join(dir), cause })?;
        }
        let copied = plan.execute(&work)?;
        let mut env = vec![
            ("HOME".to_owned(), root.path().join("home").display().to_string()),
            ("TMPDIR".to_owned(), root.path().join("tmp").display().to_string()),
        ];
        for name in std::iter::once("PATH").chain(options.keep_env.iter().map(String::as_str)) {
            if let Ok(value) = std::env::var(name) {
                env.push((name.to_owned(), value));
            }
        }
        let room = Self { root, env, copied, _tracked: tracked };
        if let Some(script) = options.setup {
            let marker = options.run_id.map(|id| ("FLAKEHUNT_RUN_ID", id));
            let out = Command::new("sh")
                .args(["-c", script])
                .current_dir(room.dir())
                .env_clear()
                .envs(room.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .envs(marker)
                .stdin(Stdio::null())
                .output()
                .map_err(CleanRoomError::SetupStart)?;
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

    /// What copying the tracked files made and wrote.
    pub fn copied(&self) -> CopyStats {
        self.copied
    }

    /// Keeps the room on disk after the hunt; returns where it is.
    pub fn keep(self) -> PathBuf {
        // The watchdog forgets the room when the guard drops, here.
        self.root.keep()
    }
}

/// The paths git tracks in `project`, relative to it.
fn tracked_files(project: &Path) -> Result<Vec<PathBuf>, CleanRoomError> {
    use std::os::unix::ffi::OsStrExt;
    let listed = Command::new("git")
        .arg("-C")
        .arg(project)
        .args(["ls-files", "-z", "--cached"])
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .ok_or_else(|| CleanRoomError::NotARepository(project.to_owned()))?;
    Ok(listed
        .stdout
        .split(|&b| b == 0)
        .filter(|n| !n.is_empty())
        .map(|n| PathBuf::from(std::ffi::OsStr::from_bytes(n)))
        .collect())
}
