//! What every kind of hunt implements: the trait [`Hunt`], in a file of its own, apart from
//! [`super::of`] which names every kind, so that a kind imports the trait and not its siblings.

use crate::analysis::Summary;
use crate::events::EventSink;
use crate::plan::{CellSpec, Plan, Target};
use crate::record::{Extra, Manifest, Record, RecordError};
use crate::spec::{HuntError, HuntSpec};

/// What one kind of hunt brings to the driver and to the analysis.
pub trait Hunt: Sync {
    /// The plan `manifest` describes, ready to run, or to continue after observing the attempts
    /// already recorded.
    fn plan(&self, manifest: &Manifest) -> Box<dyn Plan> {
        Box::new(crate::plan::schedule(manifest))
    }

    /// A new hunt of this kind as `spec` asks for it, with what the kind decides for itself
    /// when the options leave it open (by default nothing).
    fn defaults(&self, spec: HuntSpec) -> HuntSpec {
        spec
    }

    /// The cells of a new hunt of this kind on `target`, as `spec` asks for them, and what its
    /// manifest records besides (`extra`). The driver calls it for every kind it prepares the
    /// common way, and for every kind a Slurm job checks before it submits its shards.
    fn cells(
        &self,
        spec: &HuntSpec,
        target: &Target,
        sink: &mut dyn EventSink,
    ) -> Result<(Vec<CellSpec>, Extra), HuntError>;

    /// The summary of a record of this kind, from its files alone.
    fn summarize(&self, record: &Record) -> Result<Summary, RecordError>;
}
