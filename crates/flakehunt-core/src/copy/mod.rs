//! Copies of a tree the user owns that cannot reach back into it: the one mechanism behind
//! fire's sandboxes and matrix's clean rooms. Main type: [`CopyPlan`].
//!
//! The rule (ARCHITECTURE.md). A symlink is resolved the way the kernel would (every link and
//! `..` followed physically, whatever spelling of the tree its target uses). One that resolves
//! inside the copied tree becomes a relative link to the same place inside the copy. One that
//! resolves outside is refused by name, unless [`CopyOptions::follow_outside_links`]: then what
//! it points to is copied in its place (a directory recursively). A dangling link is copied
//! (re-pointed) when what a write through it would create lies inside the tree; outside it is
//! refused, or left out when following outside links (there is nothing to copy). Following a
//! link into a directory that is being copied (a loop) is refused. FIFOs are recreated, never
//! opened; sockets are left out (they are endpoints of running processes, and connecting
//! through a copy would reach the original's process); device nodes are refused (a copy would
//! still reach the device). Every regular file is a new inode (a reflink, or its data segments
//! copied so sparse files stay sparse); names that share an inode in the tree share one in the
//! copy, never with the original.
//!
//! Everything is decided by [`CopyPlan::of`] before anything is written, so a refused tree leaves
//! nothing behind and the size check knows what the copy will take.

mod data;
mod remove;
mod resolve;

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::os::unix::fs::{symlink, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

pub use crate::schema::fire::CopyStats;
pub(crate) use remove::remove_tree;
use resolve::{relative, resolve, Resolved};

/// How links that leave the tree are treated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopyOptions {
    /// Copy what a link resolving outside the tree points to, instead of refusing the tree.
    pub follow_outside_links: bool,
}

/// Which entries of the tree are copied.
#[derive(Debug, Clone, Copy)]
pub enum Selection<'a> {
    /// Everything under the root.
    Tree,
    /// These paths relative to the root (a repository's tracked files), with the directories
    /// that lead to them.
    Listed(&'a [PathBuf]),
}

/// Why a tree cannot be copied.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// A link resolves outside the tree.
    #[error(
        "symlink {} -> {} resolves outside {} (to {}): a copy would still reach it; \
         pass --follow-outside-links to copy what it points to, or remove the link",
        .link.display(), .target.display(), .root.display(), .resolved.display()
    )]
    OutsideLink {
        /// The link, in the tree.
        link: PathBuf,
        /// Its target as written.
        target: PathBuf,
        /// The tree.
        root: PathBuf,
        /// Where it leads.
        resolved: PathBuf,
    },
    /// A dangling link through which a run would create a file outside the tree.
    #[error(
        "symlink {} -> {} dangles outside {}: a run writing through it would create {}; \
         remove the link or point it inside",
        .link.display(), .target.display(), .root.display(), .resolved.display()
    )]
    DanglingOutside {
        /// The link, in the tree.
        link: PathBuf,
        /// Its target as written.
        target: PathBuf,
        /// The tree.
        root: PathBuf,
        /// What a write through it would create.
        resolved: PathBuf,
    },
    /// Following a link (or entering a mount) would copy a directory that is being copied.
    #[error(
        "{} leads to {}, a directory that contains it: copying would never end; remove the link",
        .link.display(), .resolved.display()
    )]
    Loop {
        /// The link or directory.
        link: PathBuf,
        /// The directory it leads to.
        resolved: PathBuf,
    },
    /// A device node: a copy would still reach the device.
    #[error("{} is a device node, which a copy would still reach: remove it from {}", .path.display(), .root.display())]
    Device {
        /// The node, or the link leading to it.
        path: PathBuf,
        /// The tree.
        root: PathBuf,
    },
    /// The tree cannot be read.
    #[error("cannot read {}", .path.display())]
    Read {
        /// What failed.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The copy cannot be written.
    #[error("cannot copy {} into {}", .path.display(), .dest.display())]
    Write {
        /// The source entry.
        path: PathBuf,
        /// The copy's root.
        dest: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
}

impl crate::error_class::Classify for CopyError {
    fn class(&self) -> crate::error_class::ErrorClass {
        use crate::error_class::ErrorClass;
        match self {
            Self::OutsideLink { .. } | Self::DanglingOutside { .. } | Self::Loop { .. } | Self::Device { .. } => {
                ErrorClass::Usage
            }
            Self::Read { .. } | Self::Write { .. } => ErrorClass::Io,
        }
    }
}

/// One thing to make in the copy, at a path relative to its root.
#[derive(Debug)]
enum Op {
    Dir { rel: PathBuf, mode: u32 },
    File { from: PathBuf, rel: PathBuf, len: u64 },
    HardLink { rel: PathBuf, first: PathBuf },
    Symlink { rel: PathBuf, target: PathBuf },
    Fifo { rel: PathBuf, mode: u32 },
}

/// Everything a copy of a tree will make, decided (and refused) before anything is written.
#[derive(Debug)]
pub struct CopyPlan {
    ops: Vec<Op>,
    needed: u64,
    left_out: u64,
    followed: u64,
}

impl CopyPlan {
    /// Walks `root` (never following a link except as the rule says) and decides every entry.
    pub fn of(root: &Path, selection: Selection<'_>, options: CopyOptions) -> Result<CopyPlan, CopyError> {
        let root_phys = fs::canonicalize(root).map_err(|source| read_error(root, source))?;
        let meta = fs::metadata(&root_phys).map_err(|source| read_error(root, source))?;
        let mut planner = Planner {
            root,
            root_phys: &root_phys,
            options,
            ops: Vec::new(),
            seen: HashMap::new(),
            chain: vec![(meta.dev(), meta.ino())],
            followed_roots: Vec::new(),
            made: HashSet::new(),
            needed: 0,
            left_out: 0,
            followed: 0,
        };
        match selection {
            Selection::Tree => planner.dir(root, &root_phys, Path::new(""))?,
            Selection::Listed(paths) => {
                let mut paths = paths.to_vec();
                paths.sort();
                paths.dedup();
                for rel in &paths {
                    planner.listed(rel)?;
                }
            }
        }
        let Planner { ops, needed, left_out, followed, .. } = planner;
        Ok(CopyPlan { ops, needed, left_out, followed })
    }

    /// Bytes the copy's regular files will take at most (allocated blocks, so a sparse file
    /// counts for its data only).
    pub fn needed_bytes(&self) -> u64 {
        self.needed
    }

    /// Makes the copy in `dest`, an existing empty directory.
    pub fn execute(&self, dest: &Path) -> Result<CopyStats, CopyError> {
        let mut stats = CopyStats { left_out: self.left_out, followed: self.followed, ..CopyStats::default() };
        let write_error =
            |path: &Path, source| CopyError::Write { path: path.to_owned(), dest: dest.to_owned(), source };
        for op in &self.ops {
            match op {
                Op::Dir { rel, .. } => fs::create_dir(dest.join(rel)).map_err(|e| write_error(rel, e))?,
                Op::File { from, rel, len } => {
                    let copied = data::copy_file(from, &dest.join(rel)).map_err(|e| write_error(from, e))?;
                    stats.files += 1;
                    stats.bytes += len;
                    stats.written += copied.written;
                    stats.cloned += u64::from(copied.cloned);
                }
                Op::HardLink { rel, first } => {
                    fs::hard_link(dest.join(first), dest.join(rel)).map_err(|e| write_error(rel, e))?;
                    stats.hard_links += 1;
                }
                Op::Symlink { rel, target } => {
                    symlink(target, dest.join(rel)).map_err(|e| write_error(rel, e))?;
                    stats.links += 1;
                }
                Op::Fifo { rel, mode } => {
                    let mode = rustix::fs::Mode::from_raw_mode(*mode);
                    rustix::fs::mknodat(rustix::fs::CWD, dest.join(rel), rustix::fs::FileType::Fifo, mode, 0)
                        .map_err(|e| write_error(rel, e.into()))?;
                    stats.fifos += 1;
                }
            }
        }
        // Directory permissions last, deepest first: a read-only directory must still receive
        // its contents.
        for op in self.ops.iter().rev() {
            if let Op::Dir { rel, mode } = op {
                fs::set_permissions(dest.join(rel), fs::Permissions::from_mode(*mode))
                    .map_err(|e| write_error(rel, e))?;
            }
        }
        Ok(stats)
    }
}

fn read_error(path: &Path, source: io::Error) -> CopyError {
    CopyError::Read { path: path.to_owned(), source }
}

/// The walk behind [`CopyPlan::of`].
struct Planner<'a> {
    /// The tree as given, for messages.
    root: &'a Path,
    /// Its canonical path, which every resolved link is compared with.
    root_phys: &'a Path,
    options: CopyOptions,
    ops: Vec<Op>,
    /// The copy of each inode already planned, so a second name becomes a hard link in the copy.
    seen: HashMap<(u64, u64), PathBuf>,
    /// Device and inode of every directory being walked, outermost first: entering one again is
    /// a loop.
    chain: Vec<(u64, u64)>,
    /// Directories outside the tree being copied because a link was followed: their canonical
    /// path, their place in the copy and the link followed. A link resolving inside one stays a
    /// link.
    followed_roots: Vec<(PathBuf, PathBuf, PathBuf)>,
    /// Paths of the copy already decided ([`Selection::Listed`] reaches a directory many times).
    made: HashSet<PathBuf>,
    needed: u64,
    left_out: u64,
    followed: u64,
}

impl Planner<'_> {
    /// Plans the entries of the directory read at `path` (canonically `phys`) into `rel`.
    fn dir(&mut self, path: &Path, phys: &Path, rel: &Path) -> Result<(), CopyError> {
        let mut names: Vec<_> = fs::read_dir(path)
            .and_then(|entries| entries.map(|e| e.map(|e| e.file_name())).collect::<io::Result<Vec<_>>>())
            .map_err(|source| read_error(path, source))?;
        names.sort();
        for name in names {
            let child = path.join(&name);
            let meta = fs::symlink_metadata(&child).map_err(|source| read_error(&child, source))?;
            self.entry(&child, &phys.join(&name), &rel.join(&name), &meta)?;
        }
        Ok(())
    }

    /// Plans one listed path: the directories that lead to it, then the entry itself. A
    /// directory on the way that is a link now is copied by the rule, and what lies beyond it
    /// comes from wherever it leads, or not at all.
    fn listed(&mut self, rel: &Path) -> Result<(), CopyError> {
        let mut sofar = PathBuf::new();
        let parts: Vec<_> = rel.components().collect();
        for (i, part) in parts.iter().enumerate() {
            sofar.push(part);
            if !matches!(part, std::path::Component::Normal(_)) {
                return Ok(());
            }
            if self.made.contains(&sofar) {
                continue;
            }
            let path = self.root.join(&sofar);
            let Ok(meta) = fs::symlink_metadata(&path) else {
                // Tracked but deleted in the working tree: the copy has what is there.
                return Ok(());
            };
            let last = i + 1 == parts.len();
            self.made.insert(sofar.clone());
            if meta.is_dir() && !meta.file_type().is_symlink() {
                if last {
                    // A tracked path that is a directory (a submodule) holds nothing tracked here.
                    return Ok(());
                }
                self.ops.push(Op::Dir { rel: sofar.clone(), mode: meta.mode() & 0o7777 });
                continue;
            }
            if last || meta.file_type().is_symlink() {
                return self.entry(&path, &self.root_phys.join(&sofar), &sofar, &meta);
            }
            // A tracked path beyond a regular file: the working tree changed; nothing to copy.
            return Ok(());
        }
        Ok(())
    }

    /// Plans the entry read at `path` (canonically `phys`, which is only a link's own path when
    /// the entry is a link) into `rel`.
    fn entry(&mut self, path: &Path, phys: &Path, rel: &Path, meta: &fs::Metadata) -> Result<(), CopyError> {
        let file_type = meta.file_type();
        if file_type.is_symlink() {
            return self.link(path, phys, rel);
        }
        self.content(path, phys, rel, meta, path)
    }

    /// Plans what is at `path` (not a link) into `rel`; `named` is what a refusal names.
    fn content(
        &mut self,
        path: &Path,
        phys: &Path,
        rel: &Path,
        meta: &fs::Metadata,
        named: &Path,
    ) -> Result<(), CopyError> {
        let file_type = meta.file_type();
        if file_type.is_dir() {
            let id = (meta.dev(), meta.ino());
            if self.chain.contains(&id) {
                // Name the link that led here, not a directory of what it leads to.
                let link = self.followed_roots.last().map_or(named, |(_, _, link)| link.as_path());
                return Err(CopyError::Loop { link: link.to_owned(), resolved: phys.to_owned() });
            }
            self.ops.push(Op::Dir { rel: rel.to_owned(), mode: meta.mode() & 0o7777 });
            self.chain.push(id);
            let result = self.dir(path, phys, rel);
            self.chain.pop();
            result
        } else if file_type.is_file() {
            let id = (meta.dev(), meta.ino());
            if let Some(first) = self.seen.get(&id) {
                self.ops.push(Op::HardLink { rel: rel.to_owned(), first: first.clone() });
            } else {
                self.seen.insert(id, rel.to_owned());
                self.needed = self.needed.saturating_add(meta.len().min(meta.blocks().saturating_mul(512)));
                self.ops.push(Op::File { from: path.to_owned(), rel: rel.to_owned(), len: meta.len() });
            }
            Ok(())
        } else if file_type.is_fifo() {
            self.ops.push(Op::Fifo { rel: rel.to_owned(), mode: meta.mode() & 0o7777 });
            Ok(())
        } else if file_type.is_block_device() || file_type.is_char_device() {
            Err(CopyError::Device { path: named.to_owned(), root: self.root.to_owned() })
        } else {
            // A socket.
            self.left_out += 1;
            Ok(())
        }
    }

    /// Plans the link at `path` (canonically `phys`) into `rel`.
    fn link(&mut self, path: &Path, phys: &Path, rel: &Path) -> Result<(), CopyError> {
        let target = fs::read_link(path).map_err(|source| read_error(path, source))?;
        let base = phys.parent().unwrap_or(Path::new("/"));
        let resolved = resolve(base, &target);
        if let Some(inside) = self.place_in_copy(resolved.path()) {
            let from = rel.parent().unwrap_or(Path::new(""));
            self.ops.push(Op::Symlink { rel: rel.to_owned(), target: relative(from, &inside) });
            return Ok(());
        }
        let root = self.root.to_owned();
        let link = path.to_owned();
        match resolved {
            Resolved::Missing(resolved) if !self.options.follow_outside_links => {
                Err(CopyError::DanglingOutside { link, target, root, resolved })
            }
            Resolved::Exists(resolved) if !self.options.follow_outside_links => {
                Err(CopyError::OutsideLink { link, target, root, resolved })
            }
            Resolved::Missing(_) => {
                self.left_out += 1;
                Ok(())
            }
            Resolved::Exists(resolved) => {
                let meta = fs::symlink_metadata(&resolved).map_err(|source| read_error(&resolved, source))?;
                self.followed += 1;
                self.followed_roots.push((resolved.clone(), rel.to_owned(), link.clone()));
                let result = self.content(&resolved, &resolved, rel, &meta, &link);
                self.followed_roots.pop();
                result
            }
        }
    }

    /// Where the canonical path `resolved` lies in the copy, when it lies inside the tree or
    /// inside an outside directory being copied around it.
    fn place_in_copy(&self, resolved: &Path) -> Option<PathBuf> {
        if let Ok(inside) = resolved.strip_prefix(self.root_phys) {
            return Some(inside.to_owned());
        }
        self.followed_roots
            .iter()
            .rev()
            .find_map(|(phys, rel, _)| resolved.strip_prefix(phys).ok().map(|r| rel.join(r)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FOLLOW: CopyOptions = CopyOptions { follow_outside_links: true };

    /// A canonical temporary directory holding `state/`, and a destination `copy/`.
    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
        let guard = tempfile::tempdir().unwrap();
        let t = fs::canonicalize(guard.path()).unwrap();
        fs::create_dir_all(t.join("state")).unwrap();
        fs::create_dir_all(t.join("copy")).unwrap();
        (guard, t.clone(), t.join("state"), t.join("copy"))
    }

    fn copy(state: &Path, dest: &Path, options: CopyOptions) -> Result<CopyStats, CopyError> {
        CopyPlan::of(state, Selection::Tree, options)?.execute(dest)
    }

    #[test]
    fn inside_links_become_relative_links_into_the_copy() {
        let (_g, t, state, dest) = setup();
        fs::create_dir(state.join("sub")).unwrap();
        fs::write(state.join("d.txt"), "x").unwrap();
        symlink(state.join("d.txt"), state.join("sub/abs")).unwrap();
        symlink("../../state/sub/../d.txt", state.join("sub/surplus")).unwrap();
        symlink(t.join("state/sub"), state.join("dir-link")).unwrap();
        let stats = copy(&state, &dest, CopyOptions::default()).unwrap();
        assert_eq!(fs::read_link(dest.join("sub/abs")).unwrap(), Path::new("../d.txt"));
        assert_eq!(fs::read_link(dest.join("sub/surplus")).unwrap(), Path::new("../d.txt"));
        assert_eq!(fs::read_link(dest.join("dir-link")).unwrap(), Path::new("sub"));
        assert_eq!((stats.files, stats.links), (1, 3));
    }

    #[test]
    fn outside_links_are_refused_before_anything_is_written() {
        let (_g, t, state, dest) = setup();
        fs::write(state.join("a"), "x").unwrap();
        fs::write(t.join("outside"), "o").unwrap();
        symlink(t.join("outside"), state.join("z-link")).unwrap();
        let err = CopyPlan::of(&state, Selection::Tree, CopyOptions::default()).unwrap_err();
        assert!(matches!(&err, CopyError::OutsideLink { link, .. } if link.ends_with("z-link")), "{err}");
        assert!(fs::read_dir(&dest).unwrap().next().is_none());
        // Followed: a new file with the content, not a link.
        let stats = copy(&state, &dest, FOLLOW).unwrap();
        assert!(fs::symlink_metadata(dest.join("z-link")).unwrap().is_file());
        assert_eq!(fs::read(dest.join("z-link")).unwrap(), b"o");
        assert_eq!(stats.followed, 1);
    }

    #[test]
    fn a_followed_ancestor_is_a_loop_and_an_in_tree_self_link_is_just_a_link() {
        let (_g, t, state, dest) = setup();
        symlink(&t, state.join("ancestor")).unwrap();
        symlink(".", state.join("self")).unwrap();
        let err = CopyPlan::of(&state, Selection::Tree, FOLLOW).unwrap_err();
        assert!(matches!(&err, CopyError::Loop { link, .. } if link.ends_with("ancestor")), "{err}");
        fs::remove_file(state.join("ancestor")).unwrap();
        copy(&state, &dest, FOLLOW).unwrap();
        assert_eq!(fs::read_link(dest.join("self")).unwrap(), Path::new("."));
    }

    #[test]
    fn names_of_one_inode_share_one_new_inode() {
        let (_g, t, state, dest) = setup();
        fs::write(t.join("outside"), "o").unwrap();
        fs::hard_link(t.join("outside"), state.join("a")).unwrap();
        fs::hard_link(state.join("a"), state.join("b")).unwrap();
        let stats = copy(&state, &dest, CopyOptions::default()).unwrap();
        let (a, b) = (fs::metadata(dest.join("a")).unwrap(), fs::metadata(dest.join("b")).unwrap());
        assert_eq!(a.ino(), b.ino());
        assert_ne!(a.ino(), fs::metadata(t.join("outside")).unwrap().ino());
        assert_eq!((stats.files, stats.hard_links), (1, 1));
    }

    #[test]
    fn special_files() {
        let (_g, _t, state, dest) = setup();
        let mode = rustix::fs::Mode::from_raw_mode(0o640);
        rustix::fs::mknodat(rustix::fs::CWD, state.join("fifo"), rustix::fs::FileType::Fifo, mode, 0).unwrap();
        let _socket = std::os::unix::net::UnixListener::bind(state.join("sock")).unwrap();
        let stats = copy(&state, &dest, CopyOptions::default()).unwrap();
        let fifo = fs::symlink_metadata(dest.join("fifo")).unwrap();
        assert!(fifo.file_type().is_fifo());
        assert_eq!(fifo.mode() & 0o777, 0o640);
        assert!(!dest.join("sock").exists());
        assert_eq!((stats.fifos, stats.left_out), (1, 1));
        symlink("/dev/null", state.join("null")).unwrap();
        assert!(matches!(CopyPlan::of(&state, Selection::Tree, FOLLOW), Err(CopyError::Device { .. })));
    }

    #[test]
    fn listed_paths_under_a_directory_that_became_a_link_follow_the_rule() {
        let (_g, t, state, dest) = setup();
        fs::create_dir_all(t.join("elsewhere")).unwrap();
        fs::write(t.join("elsewhere/f"), "e").unwrap();
        fs::create_dir(state.join("kept")).unwrap();
        fs::write(state.join("kept/f"), "k").unwrap();
        fs::write(state.join("untracked"), "u").unwrap();
        // `moved/f` is tracked, but `moved` is now a link leading outside.
        symlink(t.join("elsewhere"), state.join("moved")).unwrap();
        let listed = [PathBuf::from("kept/f"), PathBuf::from("moved/f")];
        let err = CopyPlan::of(&state, Selection::Listed(&listed), CopyOptions::default()).unwrap_err();
        assert!(matches!(&err, CopyError::OutsideLink { link, .. } if link.ends_with("moved")), "{err}");
        CopyPlan::of(&state, Selection::Listed(&listed[..1]), CopyOptions::default()).unwrap().execute(&dest).unwrap();
        assert_eq!(fs::read(dest.join("kept/f")).unwrap(), b"k");
        assert!(!dest.join("untracked").exists());
    }

    #[test]
    fn read_only_directories_receive_their_contents() {
        let (_g, _t, state, dest) = setup();
        fs::create_dir(state.join("ro")).unwrap();
        fs::write(state.join("ro/f"), "x").unwrap();
        fs::set_permissions(state.join("ro"), fs::Permissions::from_mode(0o555)).unwrap();
        copy(&state, &dest, CopyOptions::default()).unwrap();
        assert_eq!(fs::metadata(dest.join("ro")).unwrap().mode() & 0o777, 0o555);
        assert_eq!(fs::read(dest.join("ro/f")).unwrap(), b"x");
        for dir in [state.join("ro"), dest.join("ro")] {
            fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
}
