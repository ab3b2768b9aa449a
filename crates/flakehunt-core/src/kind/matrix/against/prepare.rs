//! `matrix --against SNAPSHOT`'s preparation: a snapshot of this machine as the hunt will run
//! (the target's interpreter included), compared with the other machine's; the applicable
//! differences become the search's dimensions, the rest are recorded as not tried, with what
//! to do about them. Main function: [`cells`].

use std::path::Path;

use super::{Against, AgainstPlan, Dimension, Untried};
use crate::drift::{self, Here};
use crate::events::{Event, EventSink};
use crate::plan::{CellSpec, Target};
use crate::record::{Extra, MatrixExtra};
use crate::snapshot::{Snapshot, SnapshotRequest};
use crate::spec::HuntError;

/// The first cells of a `matrix --against` of `target` and what its manifest records; `tools`
/// are the tool lines `flakehunt snapshot` records.
pub(crate) fn cells(
    snapshot: &Path,
    runs: u64,
    confirm: u64,
    target: &Target,
    tools: Vec<String>,
    sink: &mut dyn EventSink,
) -> Result<(Vec<CellSpec>, Extra), HuntError> {
    let there = drift::read_snapshot(snapshot).map_err(HuntError::Against)?;
    // Everything the other snapshot may hold is read here too, so that what cannot be tried is
    // listed (a distribution's version, Go's modules), with the interpreter the target runs.
    let mut request = SnapshotRequest::everything(tools, None, None).map_err(HuntError::Usage)?;
    if let Some(python) = SnapshotRequest::for_hunt(target, None, Vec::new()).python {
        request.python = Some(python);
    }
    let here = Snapshot::capture_in(&request, None, None);
    let found = drift::compare(&here, &there, &Here::detect());
    let against = against_of(snapshot, &there, &found);
    sink.event(&Event::AgainstPlanned {
        snapshot: &against.snapshot,
        tried: &against.dimensions,
        untried: &against.untried,
        runs,
    })?;
    let cells = AgainstPlan::first_cells(&against.dimensions);
    let matrix = MatrixExtra { dimensions: Vec::new(), confirm, clean_room: None, against: Some(against) };
    Ok((cells, Extra { matrix: Some(matrix), ..Extra::default() }))
}

/// What the manifest records of a comparison with the snapshot at `path`.
fn against_of(path: &Path, there: &Snapshot, found: &drift::Drift) -> Against {
    let group =
        |g: drift::Group| serde_json::to_value(g).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
    let mut dimensions = Vec::new();
    let mut untried = Vec::new();
    for d in &found.differences {
        match &d.change {
            Some(change) => dimensions.push(Dimension {
                group: group(d.group),
                name: d.name.clone(),
                here: d.a.clone(),
                there: d.b.clone(),
                change: change.clone(),
            }),
            None => untried.push(Untried {
                group: group(d.group),
                name: d.name.clone(),
                here: d.a.clone(),
                there: d.b.clone(),
                why: d.advice.clone(),
            }),
        }
    }
    Against {
        snapshot: path.display().to_string(),
        host: there.hostname.clone(),
        captured_at: there.captured_at.clone(),
        dimensions,
        untried,
        remedies: found.remedies.iter().map(|r| r.text.clone()).collect(),
    }
}
