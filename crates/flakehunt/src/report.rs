//! `flakehunt report`: render a record, through the same analysis the live run used, in any
//! format; and the Markdown job summary every hunt appends to `$GITHUB_STEP_SUMMARY`.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use flakehunt_core::analysis::{self, Summary};
use flakehunt_core::record::{Record, SUMMARY_FILE};
use flakehunt_core::render::{self, Format, RenderContext, FAILING_PER_CELL};

use crate::cli::{ReportArgs, ReportFormat};
use crate::exit;

/// Runs `flakehunt report`; returns the exit code.
pub fn run(args: &ReportArgs) -> anyhow::Result<i32> {
    let record = Record::open(&args.dir).map_err(exit::record)?;
    let (summary, ctx) = load(&record).map_err(|e| exit::usage(format!("{}: {e}", args.dir.display())))?;
    let format = match args.format {
        ReportFormat::Term => Format::Term,
        ReportFormat::Md => Format::Markdown,
        ReportFormat::Json => Format::Json,
        ReportFormat::Junit => Format::Junit,
        ReportFormat::Html => Format::Html,
    };
    let mut text = render::render(format, &summary, &ctx);
    if unredacted(&record) {
        flakehunt_core::redact::in_place(&mut text);
    }
    match &args.output {
        Some(path) => std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?,
        None if format == Format::Term => {
            let mut out = anstream::stdout().lock();
            write!(out, "{}", crate::style::colour_table(&text))?;
            writeln!(out, "record: {}", args.dir.display())?;
        }
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    Ok(exit::OK)
}

/// The summary of a record, recomputed from its attempts, and what the renderers need besides.
pub fn load(record: &Record) -> Result<(Summary, RenderContext), flakehunt_core::record::RecordError> {
    let mut summary = analysis::summarize(record)?;
    // Hunt-specific details that the analysis does not recompute (yet) are taken from the summary
    // the live run wrote, so the report still shows them.
    if summary.details.is_null() {
        if let Ok(Some(live)) = record.document::<serde_json::Value>(SUMMARY_FILE) {
            if let Some(details) = live.get("details").filter(|d| !d.is_null()) {
                summary.details = details.clone();
            }
        }
    }
    let mut ctx = RenderContext::from_record(record, FAILING_PER_CELL)?;
    if let Some(snapshot) = ctx.snapshot.as_mut().filter(|_| unredacted(record)) {
        flakehunt_core::redact::json(snapshot);
    }
    Ok((summary, ctx))
}

/// Whether a report of `record` must redact what it shows: a record written before redaction
/// existed, or with `--no-redact`, rendered without `--no-redact`.
fn unredacted(record: &Record) -> bool {
    flakehunt_core::redact::enabled() && !record.manifest.redacted
}

/// Appends the Markdown summary of a finished hunt to `$GITHUB_STEP_SUMMARY` when it is set.
/// A job summary is a courtesy: failing to write it warns and never changes the hunt's result.
pub fn append_step_summary(summary: &Summary, dir: &Path) {
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) else { return };
    let result = (|| -> anyhow::Result<()> {
        let record = Record::open(dir)?;
        let ctx = RenderContext::from_record(&record, 0)?;
        let text = render::markdown::render(summary, &ctx);
        // Without blocking: a FIFO with no reader would hold the finished hunt forever (opening
        // it ignores SIGTERM); only a regular file is a job summary.
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new().create(true).append(true).custom_flags(libc::O_NONBLOCK).open(&path)?;
        anyhow::ensure!(f.metadata()?.is_file(), "not a regular file");
        writeln!(f, "{text}")?;
        Ok(())
    })();
    if let Err(e) = result {
        eprintln!("flakehunt: warning: cannot append to $GITHUB_STEP_SUMMARY ({}): {e:#}", Path::new(&path).display());
    }
}
