//! Removing a tree flakehunt made (a sandbox, a clean room), whatever a run left in it.

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Removes a directory tree, first making its directories writable when a
/// run (or a read-only source) left some that forbid unlinking.
pub(crate) fn remove_tree(path: &Path) -> io::Result<()> {
    match fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(_) => {
            make_dirs_writable(path);
            fs::remove_dir_all(path)
        }
    }
}

fn make_dirs_writable(dir: &Path) {
    // Errors are ignored: the retried removal reports what still fails.
    let Ok(meta) = fs::symlink_metadata(dir) else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    let mut perms = meta.permissions();
    perms.set_mode(perms.mode() | 0o700);
    let _ = fs::set_permissions(dir, perms);
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            make_dirs_writable(&entry.path());
        }
    }
}
