//! Cooperative cancellation that a signal handler can trigger and a `poll` loop can wait on.
//! Main type: [`Cancel`].

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU8, Ordering};

/// Two levels, as on Ctrl-C: the first asks to stop starting attempts and end running ones
/// gracefully, the second to kill at once. Each level has a pipe that becomes readable (and
/// stays readable: it is never drained) when the level is reached, so every waiting thread
/// wakes up, not just one.
#[derive(Debug)]
pub struct Cancel {
    level: AtomicU8,
    stop: (OwnedFd, OwnedFd),
    kill: (OwnedFd, OwnedFd),
}

impl Cancel {
    /// A fresh token at level 0.
    pub fn new() -> std::io::Result<Self> {
        let flags = rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK;
        Ok(Self {
            level: AtomicU8::new(0),
            stop: rustix::pipe::pipe_with(flags)?,
            kill: rustix::pipe::pipe_with(flags)?,
        })
    }

    /// Raises the level by one. Async-signal-safe: an atomic add and a `write`.
    pub fn request(&self) {
        let level = self.level.fetch_add(1, Ordering::SeqCst).saturating_add(1);
        let fd = if level == 1 { &self.stop.1 } else { &self.kill.1 };
        let _ = rustix::io::write(fd, b"x");
    }

    /// Raises the level straight to "kill".
    pub fn request_kill(&self) {
        while self.level() < 2 {
            self.request();
        }
    }

    /// 0: running; 1: stop gracefully; 2 or more: kill now.
    pub fn level(&self) -> u8 {
        self.level.load(Ordering::SeqCst)
    }

    /// Whether no new work should start.
    pub fn is_stopping(&self) -> bool {
        self.level() >= 1
    }

    /// Readable once the level is at least 1.
    pub fn stop_fd(&self) -> BorrowedFd<'_> {
        self.stop.0.as_fd()
    }

    /// Readable once the level is at least 2.
    pub fn kill_fd(&self) -> BorrowedFd<'_> {
        self.kill.0.as_fd()
    }
}
