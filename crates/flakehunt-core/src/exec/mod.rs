//! Running attempt processes: spawning in a process group, capturing output, timeouts, and
//! finding and ending every descendant. Linux only.

mod activity;
mod cancel;
mod capture;
pub mod cgroup;
mod launch;
mod program;
pub mod python;
mod running;
mod spawn;
mod stdio;
mod tree;
mod watchdog;

pub use crate::schema::process::{LeakedProcess, Termination};
pub use activity::Activity;
pub use cancel::Cancel;
pub use capture::{Capture, Mask};
pub use launch::{idle_priority, ChildSetup, Launch, Limit, Resource};
pub use program::{check_program, error_repeats, spawn_failure, ProgramError};
pub(crate) use running::ForeignReap;
pub use running::{Cutoff, Execution, HangLimit, Limits, Running, Status};
pub use spawn::note_signal_handlers;
pub(crate) use tree::boot_ticks;
pub use tree::ProcessTree;
pub use watchdog::{serve as serve_watchdog, wait_for_previous, DirTracker, TrackedDir, Watchdog};
