//! What every kind of hunt implements: the trait [`Hunt`], in a file of its own, apart from
//! [`super::of`] which names every kind, so that a kind imports the trait and not its siblings.

use crate::analysis::Summary;
use crate::plan::Plan;
use crate::record::{Manifest, Record, RecordError};

/// What one kind of hunt brings to the driver and to the analysis.
pub trait Hunt: Sync {
    /// The plan `manifest` describes, ready to run, or to continue after observing the attempts
    /// already recorded.
    fn plan(&self, manifest: &Manifest) -> Box<dyn Plan> {
        Box::new(crate::plan::schedule(manifest))
    }

    /// The summary of a record of this kind, from its files alone.
    fn summarize(&self, record: &Record) -> Result<Summary, RecordError>;
}
