//! The one interface between the runner and everything that reports: the runner emits
//! [`Event`]s, sinks (the recorder, the terminal display) consume them. The runner never formats
//! text.

use crate::plan::CellSpec;
use crate::record::{Attempt, RecordError};

/// Something that happened during a hunt.
#[derive(Debug)]
pub enum Event<'a> {
    /// The hunt starts with this many planned attempts.
    Started {
        /// Planned attempts (for this shard, before stop rules).
        planned: u64,
        /// Attempts already recorded (resume).
        done: u64,
    },
    /// An attempt finished; `stdout`/`stderr` are its captured heads, for the logs.
    AttemptFinished {
        /// The attempt's record.
        attempt: &'a Attempt,
        /// Captured stdout (up to the cap).
        stdout: &'a [u8],
        /// Captured stderr (up to the cap).
        stderr: &'a [u8],
    },
    /// An adaptive plan added a cell.
    CellAdded(&'a CellSpec),
    /// A phase of the hunt begins (matrix confirmation, fire level...), for the display.
    Phase(&'a str),
    /// The user interrupted: running attempts are being ended and will not be recorded.
    Interrupted,
    /// The budget ran out: no new attempts start.
    BudgetSpent,
}

/// A consumer of events.
pub trait EventSink: Send {
    /// Handles one event. An error stops the hunt (a record that cannot be written is fatal).
    fn event(&mut self, event: &Event<'_>) -> Result<(), RecordError>;
}

/// Several sinks in order (the recorder first, so the display never shows an unrecorded attempt).
pub struct Fanout<'a>(pub Vec<&'a mut dyn EventSink>);

impl EventSink for Fanout<'_> {
    fn event(&mut self, event: &Event<'_>) -> Result<(), RecordError> {
        for sink in &mut self.0 {
            sink.event(event)?;
        }
        Ok(())
    }
}
