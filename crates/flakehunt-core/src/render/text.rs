//! Small text helpers the renderers share: escaping for HTML and Markdown, stripping terminal
//! escapes from captured output, and durations in words.

use std::sync::LazyLock;

use regex::Regex;

/// CSI sequences (colours, cursor moves) and OSC sequences (titles, hyperlinks) as terminals
/// write them; test output is full of them and they mean nothing in a file.
static ANSI: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
        .expect("the ANSI pattern is valid")
});

/// How a verdict reads at a glance, `ok`, `warn` or `bad`: the HTML banner's colour and the
/// Markdown summary's emoji.
pub fn tone(verdict: &str) -> &'static str {
    match verdict {
        "not-reproduced" | "accept" | "fixed" => "ok",
        "rumour" | "flaky-insensitive" | "inconclusive" => "warn",
        _ => "bad",
    }
}

/// Removes terminal escapes and the control characters XML 1.0 forbids (every C0 control but
/// tab, newline and carriage return), so captured output is safe in any document format.
pub fn clean(text: &str) -> String {
    ANSI.replace_all(text, "")
        .chars()
        .filter(|&c| !matches!(c, '\x00'..='\x08' | '\x0b' | '\x0c' | '\x0e'..='\x1f' | '\u{fffe}' | '\u{ffff}'))
        .collect()
}

/// Escapes text for HTML element content and attribute values, cleaned as by [`clean`].
pub fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in clean(text).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Escapes text for a Markdown table cell: pipes end a cell and newlines end the row.
pub fn md_cell(text: &str) -> String {
    clean(text).replace('\\', "\\\\").replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// Inline code in Markdown that survives backticks in the text (a longer fence around it).
pub fn md_code(text: &str) -> String {
    let text = &clean(text);
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') { " " } else { "" };
    format!("{fence}{pad}{}{pad}{fence}", text.replace('\n', " "))
}

/// A fenced Markdown code block whose fence is longer than any backtick run inside.
pub fn md_block(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat((longest + 1).max(3));
    format!("{fence}text\n{}\n{fence}\n", text.trim_end_matches('\n'))
}

/// A duration for humans: `850 µs`, `12 ms`, `1.4 s`, `3 min 5 s`.
pub fn seconds(s: f64) -> String {
    if !s.is_finite() || s < 0.0 {
        "-".into()
    } else if s < 1e-3 {
        format!("{:.0} µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.0} ms", s * 1e3)
    } else if s < 60.0 {
        format!("{s:.1} s")
    } else {
        let (min, sec) = ((s / 60.0).floor(), (s % 60.0).round());
        if sec == 0.0 {
            format!("{min} min")
        } else {
            format!("{min} min {sec} s")
        }
    }
}

/// The last `lines` lines of a captured stream, cleaned.
pub fn tail(text: &str, lines: usize) -> String {
    let cleaned = clean(text);
    let all: Vec<&str> = cleaned.trim_end().lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_strips_escapes_and_controls() {
        assert_eq!(clean("\x1b[31mred\x1b[0m ok\x07\x00\ttab\n"), "red ok\ttab\n");
        assert_eq!(clean("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"), "link");
    }

    #[test]
    fn markdown_escapes() {
        assert_eq!(md_cell("a|b\nc"), "a\\|b c");
        assert_eq!(md_code("x `y` z"), "``x `y` z``");
        assert_eq!(md_block("a\n```\nb"), "````text\na\n```\nb\n````\n");
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(seconds(0.0004), "400 µs");
        assert_eq!(seconds(0.012), "12 ms");
        assert_eq!(seconds(1.44), "1.4 s");
        assert_eq!(seconds(185.0), "3 min 5 s");
        assert_eq!(seconds(600.0), "10 min");
    }
}
