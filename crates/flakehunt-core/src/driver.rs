//! The one driver every hunt goes through: a [`crate::spec::HuntSpec`] is prepared by its kind
//! (cells, the manifest's extra, the plan), recorded, run in a session with an event sink, and
//! summarised from its record alone ([`run`]); it ends in a [`HuntReport`] from which the binary
//! prints and decides its exit code. Also the hunt split into Slurm shards ([`slurm_script`]).

mod merge;
mod prepare;
mod run;
mod slurm;

pub use merge::merge;

pub use crate::rng::random_seed;
pub use prepare::default_record_dir;
pub use run::run;
pub use slurm::script_of as slurm_script;

pub use crate::render::cell_header;

use std::path::{Path, PathBuf};

use crate::analysis::Summary;
use crate::events::{Event, EventSink};
use crate::record::Record;

/// How a hunt ended, as far as its exit code is concerned.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HuntEnd {
    /// A failure was reproduced, or a fire level rejected.
    pub reproduced: bool,
    /// The user interrupted; the record holds what ran.
    pub interrupted: bool,
    /// Shards are missing (Slurm): "nothing reproduced" cannot stand on part of the plan; or
    /// a verification is inconclusive: "fixed" cannot stand on what ran.
    pub incomplete: bool,
}

impl HuntEnd {
    /// The end of a hunt whose summary is `summary`.
    pub fn of(summary: &crate::analysis::Summary, interrupted: bool) -> Self {
        let code = summary.exit_code();
        Self { reproduced: code == 1, interrupted, incomplete: code == 3 }
    }
}

/// What a finished hunt leaves for the caller to print.
#[derive(Debug)]
pub struct HuntReport {
    /// The summary, as written to `summary.json`.
    pub summary: Summary,
    /// The record.
    pub dir: PathBuf,
    /// How it ended.
    pub end: HuntEnd,
    /// Slurm: the shards that did not complete, to say after the summary.
    pub incomplete: Option<Incomplete>,
}

/// Shards of a Slurm hunt that did not complete.
#[derive(Debug)]
pub struct Incomplete {
    /// Their 1-based indices.
    pub missing: Vec<u32>,
    /// Shards in all.
    pub shards: u32,
    /// The batch script that re-submits them.
    pub script: PathBuf,
}

/// Appends the Markdown summary of a finished hunt to `$GITHUB_STEP_SUMMARY` when it is set.
/// A job summary is a courtesy: failing to write it is told to `sink` and never changes the
/// hunt's result.
pub fn step_summary(summary: &Summary, dir: &Path, sink: &mut dyn EventSink) {
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) else { return };
    let result = (|| -> Result<(), String> {
        let record = Record::open(dir).map_err(|e| crate::spec::error_chain(&e))?;
        let ctx = crate::render::RenderContext::from_record(&record, 0).map_err(|e| crate::spec::error_chain(&e))?;
        let text = crate::render::markdown::render(summary, &ctx);
        // Without blocking: a FIFO with no reader would hold the finished hunt forever (opening
        // it ignores SIGTERM); only a regular file is a job summary.
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| e.to_string())?;
        if !f.metadata().is_ok_and(|m| m.is_file()) {
            return Err("not a regular file".to_owned());
        }
        std::io::Write::write_all(&mut f, format!("{text}\n").as_bytes()).map_err(|e| e.to_string())
    })();
    if let Err(error) = result {
        let _ = sink.event(&Event::StepSummaryFailed { path: Path::new(&path), error: &error });
    }
}
