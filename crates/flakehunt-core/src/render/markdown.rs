//! The Markdown rendering: GitHub-flavoured, for a pull request comment or the job summary
//! (`$GITHUB_STEP_SUMMARY`). Tables of cells, the verdict first, long text folded in
//! `<details>` so the page stays short.

use std::fmt::Write as _;

use super::text::{md_block, md_cell, md_code, seconds, tail};
use super::RenderContext;
use crate::analysis::stats::format_rate;
use crate::analysis::Summary;
use crate::kind::fire::FireSummary;
use crate::kind::matrix::summary::MatrixDetails;
use crate::kind::suite::summary::SuiteState;

/// Signatures listed; the rest are counted.
const SIGNATURES_SHOWN: usize = 10;

/// Renders a summary as GitHub-flavoured Markdown.
pub fn render(summary: &Summary, ctx: &RenderContext) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## flakehunt {}: {}\n", summary.kind.name(), md_code(&summary.target));
    let _ = writeln!(out, "{} **{}**\n", marker(&summary.verdict), md_cell(&summary.verdict_text));
    if let Some(h) = crate::kind::adaptive::record::AdaptiveDetails::of(summary) {
        let _ = writeln!(out, "{}\n", md_cell(&h.conclusion));
    }
    let _ = write!(out, "{} of {} planned attempts, {} failed", summary.attempts, summary.planned, summary.failures);
    if !summary.complete {
        out.push_str(" (incomplete)");
    }
    let _ = writeln!(out, " · seed `{}` · run `{}`", ctx.manifest.seed, summary.run_id);
    if let Some(shard) = ctx.manifest.shard {
        let _ = writeln!(out, "\nThis record holds shard {shard} of the plan: join the shards with `flakehunt merge`.");
    }
    out.push('\n');
    if let Some(v) = crate::kind::verify::VerifyDetails::of(summary) {
        verify(&mut out, v);
    }
    cells(&mut out, summary, ctx);
    if let Some(m) = summary.details.matrix() {
        matrix(&mut out, m);
    }
    if let Some(f) = &summary.fire {
        fire(&mut out, f);
    }
    for c in summary.cells.iter().filter(|c| c.meaning.is_some()) {
        let _ = writeln!(
            out,
            "- **{}** {}: {}",
            md_cell(&c.name),
            c.direction.as_deref().unwrap_or(""),
            md_cell(c.meaning.as_deref().unwrap_or(""))
        );
    }
    for c in summary.cells.iter().filter(|c| c.inert) {
        let reason = c.inert_reason.as_deref().unwrap_or("no measurable effect");
        let _ = writeln!(out, "- :warning: **{}** is inert: {}", md_cell(&c.name), md_cell(reason));
    }
    for c in summary.cells.iter().filter(|c| c.leaking > 0) {
        let _ = writeln!(out, "- :warning: **{}**: {} attempt(s) left processes behind", md_cell(&c.name), c.leaking);
    }
    match &summary.suite {
        Some(tests) => suite(&mut out, tests),
        None => signatures(&mut out, summary),
    }
    outputs(&mut out, summary);
    if !summary.notes.is_empty() {
        out.push_str("\n<details><summary>Notes</summary>\n\n");
        for n in &summary.notes {
            let _ = writeln!(out, "- {}", md_cell(n));
        }
        out.push_str("\n</details>\n");
    }
    out
}

/// A verification's conditions, then against now.
fn verify(out: &mut String, v: &crate::kind::verify::VerifyDetails) {
    use crate::kind::verify::summary::level_text;
    let _ = writeln!(
        out,
        "Verifies {} ({} `{}`, `{}`) at {}.\n",
        md_code(&v.verified.record),
        v.verified.kind,
        v.verified.run_id,
        v.verified.hash,
        level_text(v.level)
    );
    if crate::kind::verify::Words::of(&v.verified.kind).counts_named {
        out.push_str("A level run is the attempt: its workers share its runs in a fresh sandbox of the state, which is then compared with a sequential reference; the rates count rejected level runs.\n\n");
    }
    out.push_str("| condition | then | now | needed | bound now | verdict |\n|---|--:|--:|--:|--:|---|\n");
    let rate = |r: &crate::kind::verify::summary::Rate| {
        format!(
            "{} ({}/{}, {} .. {})",
            format_rate(r.rate),
            r.failures,
            r.attempts,
            format_rate(r.ci95[0]),
            format_rate(r.ci95[1])
        )
    };
    for c in &v.conditions {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            md_cell(&c.cell),
            rate(&c.then),
            rate(&c.now),
            c.needed.map_or_else(|| "-".to_owned(), |n| n.to_string()),
            c.bound.map_or_else(|| "-".to_owned(), |b| format!("< {}", format_rate(b))),
            md_cell(&c.text),
        );
    }
    out.push('\n');
}

/// A suite's tests that failed, with their culprits and reproducers.
fn suite(out: &mut String, s: &crate::kind::suite::summary::SuiteSummary) {
    use super::suite::{condition, culprits, rate, reproducer};
    let incomplete = super::suite::incomplete(s);
    if !incomplete.is_empty() {
        let _ =
            writeln!(out, "\n### Attempts that ended before all their tests reported ({})\n", s.incomplete_attempts());
        for line in &incomplete {
            let _ = writeln!(out, "- {}", md_cell(line));
        }
    }
    if s.tests.is_empty() {
        let those = if incomplete.is_empty() { "" } else { " of those that reported" };
        let _ = writeln!(out, "\nNone of the {} tests collected failed{those}.", s.collected);
        return;
    }
    let _ = writeln!(out, "\n### Tests that failed ({} of {} collected)\n", s.tests.len(), s.collected);
    out.push_str("| test | category | failed | polluter / state-setter | condition | reproducer |\n");
    out.push_str("|---|---|--:|---|---|---|\n");
    for t in &s.tests {
        let repro = if t.reproducer.is_empty() { md_cell(&reproducer(t)) } else { md_code(&reproducer(t)) };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {repro} |",
            md_code(&t.id),
            t.category.name(),
            rate(t),
            md_cell(&culprits(t)),
            md_cell(&condition(t))
        );
    }
    let states = s.state_lines();
    if !states.is_empty() {
        let _ = writeln!(out, "\n### The state they trip over\n");
        for state in &states {
            let _ = writeln!(out, "- {}", md_cell(&state.sentence));
            if let Some(cleanup) = &state.cleanup {
                let _ = writeln!(out, "\n  {}", md_cell(cleanup));
            }
            if let Some(code) = state.code {
                let fence = md_fence(code);
                let _ = writeln!(out, "\n  {fence}python");
                for line in code.lines() {
                    let _ = writeln!(out, "{}", format!("  {line}").trim_end());
                }
                let _ = writeln!(out, "  {fence}\n");
            }
        }
    }
}

/// A status marker GitHub renders as an emoji.
fn marker(verdict: &str) -> &'static str {
    match super::text::tone(verdict) {
        "ok" => ":white_check_mark:",
        "warn" => ":warning:",
        _ => ":x:",
    }
}

fn cells(out: &mut String, summary: &Summary, ctx: &RenderContext) {
    let _ = writeln!(
        out,
        "| {} | attempts | failed | rate | 95% interval | vs {} | mean time |",
        ctx.cell_header,
        md_cell(&summary.baseline)
    );
    out.push_str("|---|--:|--:|--:|---|---|--:|\n");
    for c in &summary.cells {
        let name = if c.sensitive { format!("**{}**", md_cell(&c.name)) } else { md_cell(&c.name) };
        let _ = writeln!(
            out,
            "| {name}{} | {} | {} | {} | {} | {} | {} |",
            if c.inert { " (inert)" } else { "" },
            c.attempts_text(),
            c.failures,
            format_rate(c.rate),
            super::term::interval(c),
            md_cell(&super::term::versus(c, &summary.baseline)),
            if c.attempts == 0 { "-".into() } else { seconds(c.mean_seconds) }
        );
    }
    out.push('\n');
}

fn matrix(out: &mut String, m: &MatrixDetails) {
    let _ = writeln!(out, "**Reproduced:** {}  ", md_cell(&m.reproduced_text()));
    let minimal = m.minimal_overlay_items();
    if !minimal.is_empty() {
        let items: Vec<String> = minimal.iter().map(|s| md_code(s)).collect();
        let _ = writeln!(out, "**Smallest overlay that reproduces:** {}  ", items.join(" "));
    }
    let axes = m.axes();
    if let Some((x, y)) = m.heat_axes(&axes) {
        let _ = writeln!(out, "\nFailures by {} (columns) and {} (rows):\n", md_code(x.name), md_code(y.name));
        let _ = write!(out, "| {} \\ {} |", md_cell(y.name), md_cell(x.name));
        for v in &x.values {
            let _ = write!(out, " {} |", md_cell(v));
        }
        out.push_str("\n|---|");
        out.push_str(&"--:|".repeat(x.values.len()));
        out.push('\n');
        for yv in &y.values {
            let _ = write!(out, "| {} |", md_cell(yv));
            for xv in &x.values {
                let (f, n) = m.heat(x.name, xv, y.name, yv);
                if n == 0 {
                    out.push_str(" - |");
                } else {
                    let _ = write!(out, " {f}/{n} |");
                }
            }
            out.push('\n');
        }
    }
    if !m.attribution.is_empty() {
        out.push_str("\n**Attribution:**\n\n");
        for row in &m.attribution {
            let parts: Vec<String> = row.fields().iter().map(|(k, v)| format!("{k}: {}", md_cell(v))).collect();
            let _ = writeln!(out, "- {}", parts.join(", "));
        }
    }
    out.push('\n');
}

fn fire(out: &mut String, f: &FireSummary) {
    let _ = writeln!(out, "Sequential reference: {} runs, {} failed.\n", f.reference.runs, f.reference.failures);
    out.push_str("| level | runs | failed | state differs | verdict | findings |\n|---|--:|--:|---|---|---|\n");
    for l in f.rungs() {
        let findings: Vec<String> = l
            .findings()
            .iter()
            .map(|x| {
                let path = if x.path.is_empty() { String::new() } else { format!(" in {}", md_code(&x.path)) };
                format!("{} {}{path}", x.count, md_cell(x.kind.as_str()))
            })
            .collect();
        let opt = |v: Option<u64>| v.map_or("-".to_owned(), |n| n.to_string());
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} {} | {} |",
            l.name(),
            opt(l.runs()),
            opt(l.failures()),
            match l.state_differs() {
                Some(true) => "yes",
                Some(false) => "no",
                None => "-",
            },
            if l.accepted() {
                ":white_check_mark:"
            } else if l.ran() {
                ":x:"
            } else {
                ":heavy_minus_sign:"
            },
            md_cell(l.verdict()),
            findings.join("; ")
        );
    }
    out.push('\n');
}

/// The distinct outputs of `--oracle majority`.
fn outputs(out: &mut String, summary: &Summary) {
    if summary.outputs.is_empty() {
        return;
    }
    out.push_str("\n### Distinct outputs\n\n| count | output | first attempt | stdout (end) |\n|--:|---|--:|---|\n");
    for o in summary.outputs.iter().take(SIGNATURES_SHOWN) {
        let last = o.example.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
        let tag = if o.majority { "majority" } else { "wrong-output" };
        let _ = writeln!(out, "| {} | {tag} | {} | {} |", o.count, o.first_attempt, md_code(last));
    }
}

fn signatures(out: &mut String, summary: &Summary) {
    if summary.signatures.is_empty() {
        return;
    }
    out.push_str("\n### Failure signatures\n\n| count | signature | cells |\n|--:|---|---|\n");
    for s in summary.signatures.iter().take(SIGNATURES_SHOWN) {
        let _ = writeln!(out, "| {} | {} | {} |", s.count, md_code(&s.signature), md_cell(&s.cells.join(", ")));
    }
    if summary.signatures.len() > SIGNATURES_SHOWN {
        let _ = writeln!(out, "\n… and {} more signatures.", summary.signatures.len() - SIGNATURES_SHOWN);
    }
    for s in summary.signatures.iter().take(SIGNATURES_SHOWN).filter(|s| !s.example.trim().is_empty()) {
        let _ = write!(
            out,
            "\n<details><summary>stderr of attempt {} ({})</summary>\n\n{}\n</details>\n",
            s.first_attempt,
            super::text::html(&s.signature),
            md_block(&tail(&s.example, 30))
        );
    }
}

/// A code block's fence: three backticks, or more than the longest run of them in `code`.
fn md_fence(code: &str) -> String {
    let longest = code.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}
