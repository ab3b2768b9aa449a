//! Renderers: pure functions from a summary (and the record it came from) to bytes. Each format
//! has one file and one entry point, `render(summary, ctx) -> String`; [`RenderContext`] carries
//! what a format needs from the record beyond the summary. Nothing here touches the OS except
//! [`RenderContext::from_record`], which reads the record once so the renderers need not.

mod context;
pub mod events;
pub mod html;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod suite;
pub mod term;
mod text;

pub use context::{cell_header, RenderContext, FAILING_PER_CELL};

/// The output formats of `flakehunt report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The terminal tables the live run prints.
    Term,
    /// GitHub-flavoured Markdown.
    Markdown,
    /// The summary document.
    Json,
    /// JUnit XML.
    Junit,
    /// One self-contained HTML page.
    Html,
}

impl Format {
    /// Every format, in the order `--help` lists them.
    pub const ALL: [Format; 5] = [Format::Term, Format::Markdown, Format::Json, Format::Junit, Format::Html];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Term => "term",
            Format::Markdown => "md",
            Format::Json => "json",
            Format::Junit => "junit",
            Format::Html => "html",
        }
    }
}

/// Renders `summary` in `format`. The terminal text is uncoloured: the binary colours it when its
/// stream is a terminal.
pub fn render(format: Format, summary: &crate::analysis::Summary, ctx: &RenderContext) -> String {
    match format {
        Format::Term => term::render(summary, &ctx.cell_header),
        Format::Markdown => markdown::render(summary, ctx),
        Format::Json => json::render(summary, ctx),
        Format::Junit => junit::render(summary, ctx),
        Format::Html => html::render(summary, ctx),
    }
}
