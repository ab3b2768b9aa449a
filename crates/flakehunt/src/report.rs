//! `flakehunt report`: render a record, through the same analysis the live run used, in any
//! format; and the Markdown job summary every hunt appends to `$GITHUB_STEP_SUMMARY`.

use std::path::Path;

use flakehunt_core::analysis::Summary;
use flakehunt_core::record::Record;
use flakehunt_core::render::{self, Format, RenderContext, FAILING_PER_CELL};

use crate::exit;

/// Runs `flakehunt report`: the record in `dir` in `format`, to `output` or stdout.
pub fn run(dir: &Path, format: Format, output: Option<&Path>) -> Result<exit::Done, exit::Error> {
    // A record written without redaction is read as a redacted one holds it (every file a
    // renderer reads, structured data redacted before it is rendered: a redaction of the
    // rendered text would cut test ids and break JSON and XML escapes).
    let record = flakehunt_core::kind::redacted(Record::open(dir)?)?;
    let (summary, ctx) = load(&record).map_err(|error| exit::Error::InRecord { dir: dir.to_owned(), error })?;
    let text = render::render(format, &summary, &ctx);
    match output {
        Some(path) => {
            std::fs::write(path, text).map_err(|e| exit::Error::io(format!("cannot write {}", path.display()), e))?;
        }
        None if format == Format::Term => exit::to_terminal(|out| {
            write!(out, "{}", crate::style::colour_table(&text))?;
            writeln!(out, "record: {}", dir.display())
        })?,
        None => exit::to_stdout(|out| out.write_all(text.as_bytes()))?,
    }
    Ok(exit::Done::Ok)
}

/// The summary of a record, recomputed from its attempts, and what the renderers need besides.
pub fn load(record: &Record) -> Result<(Summary, RenderContext), flakehunt_core::record::RecordError> {
    let summary = flakehunt_core::kind::summarize(record)?;
    let ctx = RenderContext::from_record(record, FAILING_PER_CELL)?;
    Ok((summary, ctx))
}
