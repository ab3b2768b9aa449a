//! Copying one regular file's bytes: a reflink where the file system shares blocks, else
//! `copy_file_range` over the data segments only (`SEEK_DATA`/`SEEK_HOLE`), so a sparse file
//! stays sparse, else `pread`/`pwrite`. Main function: [`copy_file`].

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use rustix::fs::SeekFrom;
use rustix::io::Errno;

/// What copying one file cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Copied {
    /// Bytes of data written (holes and shared blocks are not).
    pub(super) written: u64,
    /// The blocks are shared with the original (a reflink): nothing was written.
    pub(super) cloned: bool,
}

/// Copies the regular file `from` to the new file `to` (which must not exist), with `from`'s
/// permissions. Never opens anything but a regular file: a FIFO swapped in since the walk is
/// refused rather than blocked on, and a symlink is not followed.
pub(super) fn copy_file(from: &Path, to: &Path) -> io::Result<Copied> {
    let src = OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(from)?;
    let meta = src.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other("it stopped being a regular file while it was copied"));
    }
    let dst = OpenOptions::new().write(true).create_new(true).mode(0o600).open(to)?;
    let copied = if rustix::fs::ioctl_ficlone(&dst, &src).is_ok() {
        Copied { written: 0, cloned: true }
    } else {
        Copied { written: copy_segments(&src, &dst, meta.len())?, cloned: false }
    };
    dst.set_permissions(std::fs::Permissions::from_mode(meta.mode() & 0o7777))?;
    Ok(copied)
}

/// Copies the data segments of `src` into `dst` at the same offsets and gives `dst` the length
/// of `src`, which leaves every hole a hole. Returns the bytes written.
fn copy_segments(src: &File, dst: &File, len: u64) -> io::Result<u64> {
    let mut written = 0;
    let mut pos = 0;
    loop {
        let start = match rustix::fs::seek(src, SeekFrom::Data(pos)) {
            Ok(start) => start,
            // No data past `pos`: the rest is a hole.
            Err(Errno::NXIO) => break,
            // The file system cannot tell holes from data: copy everything.
            Err(Errno::INVAL | Errno::OPNOTSUPP) if pos == 0 => {
                written += copy_range(src, dst, 0, len)?;
                pos = len;
                break;
            }
            Err(e) => return Err(e.into()),
        };
        let end = rustix::fs::seek(src, SeekFrom::Hole(start))?;
        written += copy_range(src, dst, start, end)?;
        pos = end;
    }
    rustix::fs::ftruncate(dst, len.max(pos))?;
    Ok(written)
}

/// Copies bytes `start..end` of `src` to the same offsets of `dst`.
fn copy_range(src: &File, dst: &File, start: u64, end: u64) -> io::Result<u64> {
    let (mut off_in, mut off_out) = (start, start);
    while off_in < end {
        let chunk = usize::try_from(end - off_in).unwrap_or(usize::MAX).min(1 << 30);
        match rustix::fs::copy_file_range(src, Some(&mut off_in), dst, Some(&mut off_out), chunk) {
            // The file shrank while it was copied.
            Ok(0) => break,
            Ok(_) => {}
            // Across file systems on older kernels, or where the call does not exist.
            Err(Errno::XDEV | Errno::NOSYS | Errno::OPNOTSUPP | Errno::INVAL | Errno::PERM) => {
                read_write(src, dst, off_in, end)?;
                off_in = end;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(off_in - start)
}

/// The portable fallback of [`copy_range`].
fn read_write(src: &File, dst: &File, mut off: u64, end: u64) -> io::Result<()> {
    let mut buf = vec![0u8; 1 << 16];
    while off < end {
        let want = usize::try_from(end - off).unwrap_or(usize::MAX).min(buf.len());
        let n = src.read_at(&mut buf[..want], off)?;
        if n == 0 {
            break;
        }
        dst.write_all_at(&buf[..n], off)?;
        off += n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, Write};

    #[test]
    fn a_sparse_file_stays_sparse() {
        let tmp = tempfile::tempdir().unwrap();
        let from = tmp.path().join("sparse");
        let mut file = File::create(&from).unwrap();
        file.set_len(1 << 30).unwrap();
        file.write_all(b"head").unwrap();
        file.seek(io::SeekFrom::Start(512 << 20)).unwrap();
        file.write_all(b"middle").unwrap();
        drop(file);
        let to = tmp.path().join("copy");
        let copied = copy_file(&from, &to).unwrap();
        assert!(copied.cloned || copied.written < 1 << 20, "{copied:?}");
        let meta = std::fs::metadata(&to).unwrap();
        assert_eq!(meta.len(), 1 << 30);
        assert!(meta.blocks() * 512 < 4 << 20, "the copy allocated {} bytes", meta.blocks() * 512);
        let copy = File::open(&to).unwrap();
        let mut buf = [0u8; 6];
        copy.read_exact_at(&mut buf, 512 << 20).unwrap();
        assert_eq!(&buf, b"middle");
        copy.read_exact_at(&mut buf[..4], 0).unwrap();
        assert_eq!(&buf[..4], b"head");
    }

    #[test]
    fn a_fifo_is_never_opened_for_reading() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        // Opening a FIFO for reading without a writer would block forever; this returns.
        assert!(copy_file(&fifo, &tmp.path().join("copy")).is_err());
        assert!(!tmp.path().join("copy").exists());
    }
}
