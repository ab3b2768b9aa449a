//! The JSON rendering: the summary document itself, the machine interface of ARCHITECTURE.md.

use super::RenderContext;
use crate::analysis::Summary;

/// Renders the summary as pretty JSON with a final newline.
pub fn render(summary: &Summary, _ctx: &RenderContext) -> String {
    // Serialising plain data with string keys cannot fail.
    let mut out = serde_json::to_string_pretty(summary).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    out.push('\n');
    out
}
