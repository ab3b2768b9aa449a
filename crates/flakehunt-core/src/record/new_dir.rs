//! Where a new record may go, decided in one place for every command that creates one (`sweep`,
//! `matrix`, `fire`, Slurm shards and `merge --into`): a directory that does not exist yet, or
//! an empty one. Anything else belongs to the user (or to another hunt, which `--resume`
//! continues) and is refused before a single file is written. Main type: [`NewDir`].

use std::path::{Path, PathBuf};

use super::RecordError;
use super::{ATTEMPTS, LOGS, MANIFEST};

/// A directory checked to take a new record, remembering whether it existed, so that a refused
/// run removes what it created and nothing else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDir {
    path: PathBuf,
    existed: bool,
}

/// Checks that `dir` can take a new record: it does not exist, or is an empty directory. A
/// record there is [`RecordError::Exists`] (continue it with `--resume`); anything else,
/// [`RecordError::NotEmpty`] or [`RecordError::NotADirectory`].
pub fn check_new(dir: &Path) -> Result<NewDir, RecordError> {
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(NewDir { path: dir.to_owned(), existed: false })
        }
        Err(e) => return Err(RecordError::io(dir, e)),
    };
    // A symlink to a directory is followed, as the user meant it.
    let is_dir = meta.is_dir() || (meta.is_symlink() && dir.is_dir());
    if !is_dir {
        return Err(RecordError::NotADirectory(dir.to_owned()));
    }
    if dir.join(MANIFEST).exists() || dir.join(ATTEMPTS).exists() {
        return Err(RecordError::Exists(dir.to_owned()));
    }
    let mut entries = std::fs::read_dir(dir).map_err(|e| RecordError::io(dir, e))?;
    if entries.next().is_some() {
        return Err(RecordError::NotEmpty(dir.to_owned()));
    }
    Ok(NewDir { path: dir.to_owned(), existed: true })
}

/// `base`, or when something is there already `base-2`, `base-3`...: the default record
/// directory is named by the second, and two hunts started in the same second must not collide.
pub fn unused_dir(base: &Path) -> PathBuf {
    let taken = |p: &Path| std::fs::symlink_metadata(p).is_ok();
    if !taken(base) {
        return base.to_owned();
    }
    let name = base.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    (2u32..).map(|n| base.with_file_name(format!("{name}-{n}"))).find(|p| !taken(p)).expect("some suffix is free")
}

impl NewDir {
    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether it existed (empty) before this run.
    pub fn existed(&self) -> bool {
        self.existed
    }

    /// Removes what this run put into the directory, after it was refused before its first
    /// attempt: the whole directory when this run created it, else only the files and
    /// directories flakehunt writes into a record (`extra` names those of a kind of hunt, such
    /// as fire's sandboxes), so that a file the user added meanwhile stays.
    pub fn discard(&self, extra: &[&str]) {
        if !self.existed {
            let _ = std::fs::remove_dir_all(&self.path);
            return;
        }
        let ours = [MANIFEST, ATTEMPTS, super::CELLS, super::SNAPSHOT_FILE, super::SUMMARY_FILE];
        for name in ours {
            let _ = std::fs::remove_file(self.path.join(name));
        }
        for name in std::iter::once(&LOGS).chain(extra) {
            let _ = std::fs::remove_dir_all(self.path.join(name));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_missing_or_empty_directory_takes_a_new_record() {
        let tmp = tempfile::tempdir().unwrap();
        let fresh = check_new(&tmp.path().join("new")).unwrap();
        assert!(!fresh.existed());
        let empty = tmp.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        assert!(check_new(&empty).unwrap().existed());

        let user = tmp.path().join("user");
        std::fs::create_dir(&user).unwrap();
        std::fs::write(user.join("summary.json"), "mine").unwrap();
        let e = check_new(&user).unwrap_err();
        assert!(matches!(e, RecordError::NotEmpty(_)), "{e}");
        assert!(e.to_string().contains("is not empty and holds no flakehunt record"), "{e}");
        // Even a hidden file makes it the user's.
        let hidden = tmp.path().join("hidden");
        std::fs::create_dir(&hidden).unwrap();
        std::fs::write(hidden.join(".keep"), "").unwrap();
        assert!(matches!(check_new(&hidden), Err(RecordError::NotEmpty(_))));

        let record = tmp.path().join("record");
        std::fs::create_dir(&record).unwrap();
        std::fs::write(record.join(MANIFEST), "{}").unwrap();
        assert!(matches!(check_new(&record), Err(RecordError::Exists(_))));

        let file = tmp.path().join("file");
        std::fs::write(&file, "x").unwrap();
        assert!(matches!(check_new(&file), Err(RecordError::NotADirectory(_))));
        assert_eq!(std::fs::read_to_string(user.join("summary.json")).unwrap(), "mine");
    }

    #[test]
    fn a_default_directory_taken_in_the_same_second_gets_a_suffix() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().join("sweep-20261201T103200");
        assert_eq!(unused_dir(&base), base);
        std::fs::create_dir(&base).unwrap();
        assert_eq!(unused_dir(&base), tmp.path().join("sweep-20261201T103200-2"));
        std::fs::create_dir(tmp.path().join("sweep-20261201T103200-2")).unwrap();
        assert_eq!(unused_dir(&base), tmp.path().join("sweep-20261201T103200-3"));
    }

    #[test]
    fn discarding_removes_only_what_the_run_created() {
        let tmp = tempfile::tempdir().unwrap();
        let made = check_new(&tmp.path().join("made")).unwrap();
        std::fs::create_dir_all(made.path().join("logs")).unwrap();
        std::fs::write(made.path().join(MANIFEST), "{}").unwrap();
        made.discard(&[]);
        assert!(!made.path().exists());

        let existing = tmp.path().join("existing");
        std::fs::create_dir(&existing).unwrap();
        let dir = check_new(&existing).unwrap();
        std::fs::create_dir_all(existing.join("logs")).unwrap();
        std::fs::create_dir_all(existing.join("sandboxes/check")).unwrap();
        std::fs::write(existing.join(MANIFEST), "{}").unwrap();
        std::fs::write(existing.join(ATTEMPTS), "").unwrap();
        std::fs::write(existing.join("notes.txt"), "the user's").unwrap();
        dir.discard(&["sandboxes"]);
        let left: Vec<_> = std::fs::read_dir(&existing).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, ["notes.txt"]);
    }
}
