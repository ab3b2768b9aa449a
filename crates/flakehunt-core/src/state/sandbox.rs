//! Sandboxes: disposable copies of the user's state directory that runs can
//! mutate without ever touching the original.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::copy::{remove_tree, CopyError, CopyOptions, CopyPlan, CopyStats, Selection};
use crate::exec::{TrackedDir, Watchdog};

/// A fresh copy of a state directory, removed on drop unless
/// [`keep`](Sandbox::keep) was called.
#[derive(Debug)]
pub struct Sandbox {
    path: PathBuf,
    keep: bool,
    copied: CopyStats,
    /// Tells the watchdog to remove the sandbox if flakehunt dies; dropped after the removal.
    tracked: Option<TrackedDir>,
}

/// Why a sandbox could not be created, or a state directory is unusable.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The state directory does not exist.
    #[error("state directory {} does not exist", .path.display())]
    Missing {
        /// The state directory.
        path: PathBuf,
    },
    /// The state path exists but is not a directory.
    #[error("state path {} is not a directory", .path.display())]
    NotADirectory {
        /// The state path.
        path: PathBuf,
    },
    /// The state directory cannot be listed.
    #[error("cannot read state directory {}", .path.display())]
    Unreadable {
        /// The state directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The sandbox name is not a single plain path component.
    #[error("invalid sandbox name {name:?}")]
    InvalidName {
        /// The name as given.
        name: String,
    },
    /// The sandbox would be created inside the directory it copies.
    #[error("sandbox parent {} is inside the state directory {}", .parent.display(), .state.display())]
    ParentInsideSource {
        /// The sandbox parent.
        parent: PathBuf,
        /// The state directory.
        state: PathBuf,
    },
    /// The state is larger than the free space where sandboxes go.
    #[error(
        "state {} needs {} but only {} are free in {}",
        .path.display(), human_bytes(*.needed), human_bytes(*.available), .parent.display()
    )]
    TooLarge {
        /// The state directory.
        path: PathBuf,
        /// Bytes of regular files in the state directory.
        needed: u64,
        /// Bytes available to unprivileged users in the parent's file system.
        available: u64,
        /// The sandbox parent.
        parent: PathBuf,
    },
    /// The parent's file system cannot be queried.
    #[error("cannot check free space in {}", .path.display())]
    FreeSpace {
        /// The sandbox parent.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The sandbox directory cannot be created or removed.
    #[error("cannot create sandbox {}", .path.display())]
    Create {
        /// The sandbox directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// An entry of the state cannot be copied, or is refused by the copy rule (a link
    /// leading outside, a device node).
    #[error(transparent)]
    Copy(#[from] CopyError),
}

impl crate::error_class::Classify for SandboxError {
    fn class(&self) -> crate::error_class::ErrorClass {
        use crate::error_class::ErrorClass;
        match self {
            Self::Missing { .. }
            | Self::NotADirectory { .. }
            | Self::InvalidName { .. }
            | Self::ParentInsideSource { .. } => ErrorClass::Usage,
            // Too little space where the copies go is a full disk foreseen.
            Self::Unreadable { .. } | Self::TooLarge { .. } | Self::FreeSpace { .. } | Self::Create { .. } => {
                ErrorClass::Io
            }
            Self::Copy(e) => crate::error_class::Classify::class(e),
        }
    }
}

/// Checks that `path` is an existing, readable directory, so that a bad
/// `--state` argument fails before any run starts.
pub fn validate_source(path: &Path) -> Result<(), SandboxError> {
    let meta = match fs::metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            return Err(SandboxError::Missing { path: path.to_owned() })
        }
        Err(source) => return Err(SandboxError::Unreadable { path: path.to_owned(), source }),
    };
    if !meta.is_dir() {
        return Err(SandboxError::NotADirectory { path: path.to_owned() });
    }
    fs::read_dir(path).map(drop).map_err(|source| SandboxError::Unreadable { path: path.to_owned(), source })
}

impl Sandbox {
    /// Creates `parent/name` as a copy of `source`, or as an empty directory
    /// when there is no source, by the rule of [`crate::copy`]: links inside
    /// the state are re-pointed into the sandbox, links outside refused (or
    /// their content copied), sparse files kept sparse. The source is only
    /// ever read. `parent` must exist, and `parent/name` must not. The
    /// sandbox's path is absolute, whatever `parent` is.
    ///
    /// Creation is refused when the blocks the source's regular files
    /// allocate add up to more than the free space of `parent`'s file system
    /// (even though reflinks would need less; holes need nothing), or when
    /// `parent` lies inside the source; every
    /// refusal comes before anything is created. A partial copy is removed
    /// on error. With a `watchdog`, the sandbox is removed even if flakehunt
    /// is killed before it could remove it itself (until [`keep`](Sandbox::keep)).
    pub fn create(
        source: Option<&Path>,
        parent: &Path,
        name: &str,
        options: CopyOptions,
        watchdog: Option<&Watchdog>,
    ) -> Result<Sandbox, SandboxError> {
        Self::create_with(source, parent, name, options, watchdog, &free_space)
    }

    /// [`create`](Sandbox::create) with the free-space query injected, so
    /// that tests can exercise the size check without filling a disk.
    fn create_with(
        source: Option<&Path>,
        parent: &Path,
        name: &str,
        options: CopyOptions,
        watchdog: Option<&Watchdog>,
        free_space: &dyn Fn(&Path) -> io::Result<u64>,
    ) -> Result<Sandbox, SandboxError> {
        let mut components = Path::new(name).components();
        if !matches!((components.next(), components.next()), (Some(Component::Normal(_)), None)) {
            return Err(SandboxError::InvalidName { name: name.to_owned() });
        }
        let plan = match source {
            Some(source) => {
                validate_source(source)?;
                check_not_inside(source, parent)?;
                let plan = CopyPlan::of(source, Selection::Tree, options)?;
                let needed = plan.needed_bytes();
                let available = free_space(parent)
                    .map_err(|err| SandboxError::FreeSpace { path: parent.to_owned(), source: err })?;
                if needed > available {
                    return Err(SandboxError::TooLarge {
                        path: source.to_owned(),
                        needed,
                        available,
                        parent: parent.to_owned(),
                    });
                }
                Some(plan)
            }
            None => None,
        };

        // Absolute: the path is handed to runs as their working directory, FLAKEHUNT_STATE
        // and {state}, and a relative one would not resolve from inside itself.
        let path = std::path::absolute(parent.join(name))
            .map_err(|source| SandboxError::Create { path: parent.join(name), source })?;
        // `create_dir` rather than `create_dir_all`: an existing directory
        // belongs to someone else and must not be reused, let alone removed.
        fs::create_dir(&path).map_err(|source| SandboxError::Create { path: path.clone(), source })?;
        // From here on, dropping the sandbox cleans up a partial copy.
        let tracked = watchdog.map(|w| w.track_dir(&path));
        let mut sandbox = Sandbox { path, keep: false, copied: CopyStats::default(), tracked };
        if let (Some(source), Some(plan)) = (source, plan) {
            sandbox.copied = plan.execute(&sandbox.path)?;
            copy_permissions(source, &sandbox.path)?;
        }
        Ok(sandbox)
    }

    /// The sandbox directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Keeps the sandbox on disk when dropped, typically to let the user
    /// inspect the state of a failing run.
    pub fn keep(&mut self) {
        self.keep = true;
        self.tracked = None;
    }

    /// What copying the state made and wrote.
    pub fn copied(&self) -> CopyStats {
        self.copied
    }

    /// Removes the sandbox now, reporting errors that drop would swallow.
    pub fn remove(mut self) -> Result<(), SandboxError> {
        self.keep = true;
        remove_tree(&self.path).map_err(|source| SandboxError::Create { path: self.path.clone(), source })
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if !self.keep {
            // Drop cannot report errors; `remove` exists for callers that care.
            let _ = remove_tree(&self.path);
        }
    }
}

/// Refuses a parent inside the source: copying would recurse into the copy.
fn check_not_inside(source: &Path, parent: &Path) -> Result<(), SandboxError> {
    let source_abs =
        fs::canonicalize(source).map_err(|err| SandboxError::Unreadable { path: source.to_owned(), source: err })?;
    // The parent must already exist: creating it could write into the source.
    let parent_abs =
        fs::canonicalize(parent).map_err(|err| SandboxError::Create { path: parent.to_owned(), source: err })?;
    if parent_abs.starts_with(&source_abs) {
        return Err(SandboxError::ParentInsideSource { parent: parent.to_owned(), state: source.to_owned() });
    }
    Ok(())
}

/// Space available to unprivileged users on the file system holding `path`.
fn free_space(path: &Path) -> io::Result<u64> {
    let stat = rustix::fs::statvfs(path)?;
    Ok(stat.f_bavail.saturating_mul(stat.f_frsize))
}

fn copy_permissions(from: &Path, to: &Path) -> Result<(), SandboxError> {
    let perms = fs::metadata(from).map_err(|source| CopyError::Read { path: from.to_owned(), source })?.permissions();
    fs::set_permissions(to, perms)
        .map_err(|source| CopyError::Write { path: from.to_owned(), dest: to.to_owned(), source }.into())
}

/// Formats a byte count for error messages.
fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};

    /// Every entry under `dir` with its mode and content or link target, to
    /// compare whole trees.
    fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u32, Vec<u8>)> {
        let mut out = BTreeMap::new();
        let mut stack = vec![dir.to_owned()];
        while let Some(current) = stack.pop() {
            for entry in fs::read_dir(&current).unwrap() {
                let path = entry.unwrap().path();
                let meta = fs::symlink_metadata(&path).unwrap();
                let rel = path.strip_prefix(dir).unwrap().to_owned();
                let content = if meta.file_type().is_symlink() {
                    fs::read_link(&path).unwrap().into_os_string().into_encoded_bytes()
                } else if meta.is_dir() {
                    stack.push(path.clone());
                    Vec::new()
                } else {
                    fs::read(&path).unwrap()
                };
                out.insert(rel, (meta.mode(), content));
            }
        }
        out
    }

    fn sample_source(root: &Path) -> PathBuf {
        let src = root.join("state");
        fs::create_dir_all(src.join("nested/deeper")).unwrap();
        fs::write(src.join("counter"), "41").unwrap();
        fs::write(src.join("nested/log.txt"), "a\nb\n").unwrap();
        fs::write(src.join("nested/deeper/blob.bin"), [0u8, 1, 2, 255]).unwrap();
        fs::write(src.join("run.sh"), "#!/bin/sh\n").unwrap();
        fs::set_permissions(src.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        fs::set_permissions(src.join("counter"), fs::Permissions::from_mode(0o444)).unwrap();
        symlink("nested/log.txt", src.join("relative-link")).unwrap();
        symlink("missing", src.join("dangling-link")).unwrap();
        src
    }

    #[test]
    fn copy_preserves_tree_and_leaves_source_intact() {
        let tmp = tempfile::tempdir().unwrap();
        let src = sample_source(tmp.path());
        let before = snapshot(&src);

        let sandbox = Sandbox::create(Some(&src), tmp.path(), "run-0", CopyOptions::default(), None).unwrap();
        assert_eq!(sandbox.path(), tmp.path().join("run-0"));
        assert_eq!(snapshot(sandbox.path()), before);
        assert_eq!(snapshot(&src), before);

        // Writing through the copy leaves the source alone.
        fs::write(sandbox.path().join("nested/log.txt"), "changed").unwrap();
        assert_eq!(snapshot(&src), before);
    }

    #[test]
    fn absolute_links_into_the_source_become_relative_links_in_the_copy() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("state");
        fs::create_dir_all(src.join("sub")).unwrap();
        fs::write(src.join("data"), "x").unwrap();
        symlink(src.join("data"), src.join("sub/abs-link")).unwrap();

        let sandbox = Sandbox::create(Some(&src), tmp.path(), "box", CopyOptions::default(), None).unwrap();
        assert_eq!(fs::read_link(sandbox.path().join("sub/abs-link")).unwrap(), Path::new("../data"));
    }

    #[test]
    fn read_only_directories_are_copied_and_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("state");
        fs::create_dir_all(src.join("ro")).unwrap();
        fs::write(src.join("ro/file"), "x").unwrap();
        fs::set_permissions(src.join("ro"), fs::Permissions::from_mode(0o555)).unwrap();

        let sandbox = Sandbox::create(Some(&src), tmp.path(), "box", CopyOptions::default(), None).unwrap();
        let path = sandbox.path().to_owned();
        assert_eq!(fs::read(path.join("ro/file")).unwrap(), b"x");
        assert_eq!(fs::metadata(path.join("ro")).unwrap().mode() & 0o777, 0o555);
        sandbox.remove().unwrap();
        assert!(!path.exists());
        fs::set_permissions(src.join("ro"), fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn empty_sandbox_without_source() {
        let tmp = tempfile::tempdir().unwrap();
        let sandbox = Sandbox::create(None, tmp.path(), "empty", CopyOptions::default(), None).unwrap();
        assert!(fs::read_dir(sandbox.path()).unwrap().next().is_none());
    }

    #[test]
    fn removed_on_drop_unless_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let src = sample_source(tmp.path());
        let dropped = Sandbox::create(Some(&src), tmp.path(), "dropped", CopyOptions::default(), None).unwrap();
        let dropped_path = dropped.path().to_owned();
        drop(dropped);
        assert!(!dropped_path.exists());

        let mut kept = Sandbox::create(Some(&src), tmp.path(), "kept", CopyOptions::default(), None).unwrap();
        kept.keep();
        let kept_path = kept.path().to_owned();
        drop(kept);
        assert!(kept_path.join("nested/log.txt").exists());
    }

    #[test]
    fn refuses_state_larger_than_free_space() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("state");
        fs::create_dir(&src).unwrap();
        fs::write(src.join("big"), vec![0u8; 2048]).unwrap();

        let err = Sandbox::create_with(Some(&src), tmp.path(), "box", CopyOptions::default(), None, &|_| Ok(1000))
            .unwrap_err();
        assert!(matches!(err, SandboxError::TooLarge { needed: 2048, available: 1000, .. }));
        assert!(err.to_string().contains("needs 2.0 KiB but only 1000 B are free"));
        assert!(!tmp.path().join("box").exists());

        Sandbox::create_with(Some(&src), tmp.path(), "box", CopyOptions::default(), None, &|_| Ok(2048)).unwrap();
    }

    #[test]
    fn a_sparse_file_needs_only_its_data_in_free_space() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("state");
        fs::create_dir(&src).unwrap();
        fs::File::create(src.join("sparse")).unwrap().set_len(1 << 30).unwrap();
        let sandbox =
            Sandbox::create_with(Some(&src), tmp.path(), "box", CopyOptions::default(), None, &|_| Ok(1 << 20))
                .unwrap();
        assert_eq!(sandbox.copied().bytes, 1 << 30);
        assert!(fs::metadata(sandbox.path().join("sparse")).unwrap().blocks() < 2048);
    }

    #[test]
    fn refuses_parent_inside_source_and_bad_names() {
        let tmp = tempfile::tempdir().unwrap();
        let src = sample_source(tmp.path());
        fs::create_dir(src.join("boxes")).unwrap();
        let err = Sandbox::create(Some(&src), &src.join("boxes"), "box", CopyOptions::default(), None).unwrap_err();
        assert!(matches!(err, SandboxError::ParentInsideSource { .. }));
        assert!(!src.join("boxes/box").exists());
        for name in ["", "..", "a/b", "/abs"] {
            let err = Sandbox::create(None, tmp.path(), name, CopyOptions::default(), None).unwrap_err();
            assert!(matches!(err, SandboxError::InvalidName { .. }), "{name}");
        }
    }

    #[test]
    fn existing_sandbox_is_not_reused() {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir(tmp.path().join("box")).unwrap();
        fs::write(tmp.path().join("box/precious"), "x").unwrap();
        let err = Sandbox::create(None, tmp.path(), "box", CopyOptions::default(), None).unwrap_err();
        assert!(matches!(err, SandboxError::Create { .. }));
        assert!(tmp.path().join("box/precious").exists());
    }

    #[test]
    fn validate_source_errors_name_the_path() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("nope");
        let err = validate_source(&missing).unwrap_err();
        assert_eq!(err.to_string(), format!("state directory {} does not exist", missing.display()));
        let file = tmp.path().join("file");
        fs::write(&file, "x").unwrap();
        assert!(matches!(validate_source(&file).unwrap_err(), SandboxError::NotADirectory { .. }));
        validate_source(tmp.path()).unwrap();
    }

    #[test]
    fn human_bytes_units() {
        assert_eq!(human_bytes(12), "12 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
    }
}
