//! Colour for the terminal rendering. `anstream` strips it when stdout is not a terminal or
//! `NO_COLOR` is set.

use anstyle::{AnsiColor, Style};

/// Highlights verdict and inert lines of a rendered table.
pub fn colour_table(text: &str) -> String {
    let red = Style::new().fg_color(Some(AnsiColor::Red.into())).bold();
    let green = Style::new().fg_color(Some(AnsiColor::Green.into())).bold();
    let yellow = Style::new().fg_color(Some(AnsiColor::Yellow.into()));
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.lines() {
        let style = if let Some(rest) = line.strip_prefix("verdict: ") {
            if rest.starts_with("not reproduced") || rest.starts_with("accept") {
                green
            } else {
                red
            }
        } else if line.starts_with("!! ") {
            red
        } else if line.starts_with("inert: ") || line.starts_with("leaks: ") || line.starts_with("incomplete: ") {
            yellow
        } else {
            Style::new()
        };
        out.push_str(&format!("{}{line}{}\n", style.render(), style.render_reset()));
    }
    out
}
