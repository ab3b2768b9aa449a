//! Where a symlink really leads: its target resolved the way the kernel would, following every
//! link and `..` physically, so that no spelling of a path (a logical `$PWD` through a symlinked
//! parent, surplus `../`, a link to a link) can hide that it reaches back into a tree.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs;
use std::path::{Component, Path, PathBuf};

/// The kernel's own bound on links followed in one lookup (`MAXSYMLINKS`).
const MAX_HOPS: u32 = 40;

/// Where a link's target leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Resolved {
    /// An existing file or directory, by its canonical path.
    Exists(PathBuf),
    /// Nothing exists there (or the lookup cannot finish: a loop of links, a file used as a
    /// directory, a directory that cannot be searched). The path is where a run writing through
    /// the link would create something: the existing part resolved physically, the rest
    /// normalised lexically.
    Missing(PathBuf),
}

impl Resolved {
    /// The path either way.
    pub(super) fn path(&self) -> &Path {
        match self {
            Resolved::Exists(p) | Resolved::Missing(p) => p,
        }
    }
}

/// Resolves `target`, the content of a link that lives in the directory `base` (a canonical
/// absolute path).
pub(super) fn resolve(base: &Path, target: &Path) -> Resolved {
    let mut pending: VecDeque<OsString> = VecDeque::new();
    push_front(&mut pending, target);
    let mut current = base.to_owned();
    let mut hops = 0;
    while let Some(part) = pending.pop_front() {
        if part == "/" {
            current = PathBuf::from("/");
            continue;
        }
        if part == ".." {
            // `current` holds no link, so its lexical parent is its physical parent.
            current.pop();
            continue;
        }
        let next = current.join(&part);
        match fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() => {
                hops += 1;
                let Ok(link) = fs::read_link(&next).map_err(drop) else {
                    return Resolved::Missing(lexical(next, pending));
                };
                if hops > MAX_HOPS {
                    return Resolved::Missing(lexical(next, pending));
                }
                push_front(&mut pending, &link);
            }
            Ok(meta) if !meta.is_dir() && !pending.is_empty() => return Resolved::Missing(lexical(next, pending)),
            Ok(_) => current = next,
            Err(_) => return Resolved::Missing(lexical(next, pending)),
        }
    }
    Resolved::Exists(current)
}

/// Puts the components of `path` in front of `pending`, the root as `/`, `.` dropped.
fn push_front(pending: &mut VecDeque<OsString>, path: &Path) {
    let parts: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::RootDir | Component::Prefix(_) => Some(OsString::from("/")),
            Component::CurDir => None,
            Component::ParentDir => Some(OsString::from("..")),
            Component::Normal(n) => Some(n.to_owned()),
        })
        .collect();
    for part in parts.into_iter().rev() {
        pending.push_front(part);
    }
}

/// `start` followed by `rest`, with `..` taken lexically: what a run would create once the
/// missing directories exist.
fn lexical(mut start: PathBuf, rest: VecDeque<OsString>) -> PathBuf {
    for part in rest {
        if part == "/" {
            start = PathBuf::from("/");
        } else if part == ".." {
            start.pop();
        } else {
            start.push(part);
        }
    }
    start
}

/// The relative spelling of `to` seen from the directory `from`, both relative to the same root
/// and free of `..`: `../b/c` from `a` to `b/c`.
pub(super) fn relative(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..from.len() {
        out.push("..");
    }
    for part in &to[common..] {
        out.push(part);
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn every_spelling_resolves_to_the_canonical_path() {
        let tmp = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(tmp.path()).unwrap();
        fs::create_dir_all(root.join("real/proj/state")).unwrap();
        fs::write(root.join("real/proj/state/d.txt"), "v1").unwrap();
        symlink(root.join("real"), root.join("home")).unwrap();
        let state = root.join("real/proj/state");
        let want = Resolved::Exists(state.join("d.txt"));
        // Through a symlinked parent (a logical $PWD), with surplus `../`, through a link chain.
        assert_eq!(resolve(&state, &root.join("home/proj/state/d.txt")), want);
        assert_eq!(resolve(&state, Path::new("../../proj/./state/../state/d.txt")), want);
        symlink("d.txt", state.join("hop")).unwrap();
        assert_eq!(resolve(&state, Path::new("hop")), want);
        assert_eq!(resolve(&state, Path::new("../../../../../../../../..")), Resolved::Exists("/".into()));
    }

    #[test]
    fn missing_targets_say_where_a_write_would_land() {
        let tmp = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(tmp.path()).unwrap();
        symlink(&root, root.join("up")).unwrap();
        assert_eq!(resolve(&root, Path::new("up/new/../x")), Resolved::Missing(root.join("x")));
        // A loop of links never resolves and never hangs.
        symlink("b", root.join("a")).unwrap();
        symlink("a", root.join("b")).unwrap();
        assert!(matches!(resolve(&root, Path::new("a")), Resolved::Missing(_)));
        fs::write(root.join("file"), "").unwrap();
        assert_eq!(resolve(&root, Path::new("file/x")), Resolved::Missing(root.join("file/x")));
    }

    #[test]
    fn relative_spellings() {
        assert_eq!(relative(Path::new("a"), Path::new("b/c")), Path::new("../b/c"));
        assert_eq!(relative(Path::new(""), Path::new("d.txt")), Path::new("d.txt"));
        assert_eq!(relative(Path::new("a/b"), Path::new("a")), Path::new(".."));
        assert_eq!(relative(Path::new(""), Path::new("")), Path::new("."));
    }
}
