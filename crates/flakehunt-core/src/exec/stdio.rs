//! Every attempt's standard input: `/dev/null`, opened once per hunt above the standard
//! descriptors.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::OnceLock;

pub(super) fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    Ok(rustix::io::fcntl_dupfd_cloexec(&fd, 3)?)
}

/// `/dev/null`, opened once per hunt and given to every attempt as its stdin.
pub(super) fn dev_null() -> io::Result<BorrowedFd<'static>> {
    static DEV_NULL: OnceLock<Option<OwnedFd>> = OnceLock::new();
    DEV_NULL
        .get_or_init(|| File::open("/dev/null").ok().and_then(|f| above_stdio(OwnedFd::from(f)).ok()))
        .as_ref()
        .map(|fd| fd.as_fd())
        .ok_or_else(|| io::Error::other("/dev/null cannot be opened"))
}

/// The fd a `Command` child gets as stdin: a duplicate of the shared `/dev/null`.
pub(crate) fn dev_null_stdio() -> std::process::Stdio {
    dev_null()
        .and_then(|fd| fd.try_clone_to_owned())
        .map_or_else(|_| std::process::Stdio::null(), std::process::Stdio::from)
}
