//! The deterministic walk over a state directory shared by fingerprinting
//! and token tracing, and the streaming reader of text files.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use super::fingerprint_error::FingerprintError;

/// Files larger than this are treated as binary: line multisets of huge
/// files would cost too much memory to be worth it.
pub(crate) const TEXT_LIMIT: u64 = 64 << 20;

/// A file or symlink found in a state directory.
#[derive(Debug)]
pub(crate) struct StateFile {
    /// The path relative to the state directory, `/`-separated.
    pub(crate) rel: String,
    /// The full path.
    pub(crate) path: PathBuf,
    /// Whether this is a symlink, which is never followed.
    pub(crate) is_symlink: bool,
}

/// Lists the regular files and symlinks under `root`, sorted by path.
///
/// SQLite's `-wal`, `-shm` and `-journal` companions of a file in the same
/// directory are skipped: they are part of that database, which SQLite reads
/// through them. Sockets, FIFOs and devices are skipped too.
pub(crate) fn walk(root: &Path) -> Result<Vec<StateFile>, FingerprintError> {
    let mut files = Vec::new();
    walk_into(root, "", &mut files)?;
    Ok(files)
}

fn walk_into(dir: &Path, prefix: &str, out: &mut Vec<StateFile>) -> Result<(), FingerprintError> {
    let read_error = |source| FingerprintError::Read { path: dir.to_owned(), source };
    let names: BTreeSet<OsString> = fs::read_dir(dir)
        .and_then(|entries| entries.map(|e| e.map(|e| e.file_name())).collect())
        .map_err(read_error)?;
    for name in &names {
        if is_sqlite_companion(name, &names) {
            continue;
        }
        let path = dir.join(name);
        let rel = format!("{prefix}{}", name.to_string_lossy());
        let file_type = fs::symlink_metadata(&path)
            .map_err(|source| FingerprintError::Read { path: path.clone(), source })?
            .file_type();
        if file_type.is_dir() {
            walk_into(&path, &format!("{rel}/"), out)?;
        } else if file_type.is_file() || file_type.is_symlink() {
            out.push(StateFile { rel, path, is_symlink: file_type.is_symlink() });
        }
    }
    Ok(())
}

fn is_sqlite_companion(name: &OsString, siblings: &BTreeSet<OsString>) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    ["-wal", "-shm", "-journal"]
        .iter()
        .any(|suffix| name.strip_suffix(suffix).is_some_and(|base| siblings.contains(&OsString::from(base))))
}

/// Streams the lines of `reader` to `line(text, terminated)`, where
/// `terminated` tells whether the line ended with `\n` (only the last line
/// may not).
///
/// Returns `Ok(false)` as soon as the content turns out not to be text
/// (invalid UTF-8 or a NUL byte); `line` may have been called for earlier
/// lines by then, so callers must discard what they collected.
pub(crate) fn read_lines(reader: impl io::Read, mut line: impl FnMut(&str, bool)) -> io::Result<bool> {
    let mut reader = BufReader::new(reader);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            return Ok(true);
        }
        let terminated = buf.last() == Some(&b'\n');
        if terminated {
            buf.pop();
        }
        if buf.contains(&0) {
            return Ok(false);
        }
        match std::str::from_utf8(&buf) {
            Ok(text) => line(text, terminated),
            Err(_) => return Ok(false),
        }
    }
}

/// Opens a regular file found by [`walk`], mapping errors. Never follows a link nor blocks: a
/// run may have replaced the file by a link or a FIFO since the walk, and opening a FIFO for
/// reading would wait for a writer forever.
pub(crate) fn open(path: &Path) -> Result<File, FingerprintError> {
    use std::os::unix::fs::OpenOptionsExt;
    let read_error = |source| FingerprintError::Read { path: path.to_owned(), source };
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(read_error)?;
    if !file.metadata().map_err(read_error)?.is_file() {
        return Err(read_error(io::Error::other("not a regular file any more")));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(content: &[u8]) -> Option<Vec<(String, bool)>> {
        let mut out = Vec::new();
        let text = read_lines(content, |l, t| out.push((l.to_owned(), t))).unwrap();
        text.then_some(out)
    }

    #[test]
    fn final_line_without_newline_is_marked() {
        assert_eq!(lines(b"a\nb").unwrap(), [("a".to_owned(), true), ("b".to_owned(), false)]);
        assert_eq!(lines(b"a\n\n").unwrap().len(), 2);
        assert!(lines(b"").unwrap().is_empty());
    }

    #[test]
    fn binary_is_not_text() {
        assert!(lines(b"a\0b\n").is_none());
        assert!(lines(b"ok\n\xff\xfe\n").is_none());
    }

    #[test]
    fn open_refuses_a_fifo_without_blocking() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("fifo");
        let mode = rustix::fs::Mode::from_raw_mode(0o600);
        rustix::fs::mknodat(rustix::fs::CWD, &fifo, rustix::fs::FileType::Fifo, mode, 0).unwrap();
        assert!(open(&fifo).is_err());
        assert!(walk(tmp.path()).unwrap().is_empty(), "a FIFO is not part of the fingerprint");
    }

    #[test]
    fn walk_is_sorted_and_skips_companions() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        fs::create_dir(root.join("b")).unwrap();
        for name in ["b/z", "b/a", "c.db", "c.db-wal", "c.db-shm", "orphan-wal", "a"] {
            fs::write(root.join(name), "x").unwrap();
        }
        let rels: Vec<_> = walk(root).unwrap().into_iter().map(|f| f.rel).collect();
        assert_eq!(rels, ["a", "b/a", "b/z", "c.db", "orphan-wal"]);
    }
}
