//! The HTML report rendered in a real headless Chromium: the DOM the browser builds must hold
//! the banner, the tables and every SVG chart. Chromium is a test requirement (CI installs
//! Debian's `chromium`); when it is missing this test fails with a message saying so, rather than
//! passing without having looked.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use flakehunt_core::render::html;

/// The browser: `$FLAKEHUNT_CHROMIUM`, else `chromium` or `chromium-browser` on the PATH.
fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("FLAKEHUNT_CHROMIUM") {
        return p.into();
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if let Some(found) = std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file()) {
            return found;
        }
    }
    panic!(
        "headless Chromium is required for the HTML report test and was not found: install it \
         (Debian: `apt-get install -y chromium`) or point FLAKEHUNT_CHROMIUM at it"
    );
}

/// The DOM Chromium built from `page`, serialised.
fn rendered_dom(page: &Path) -> String {
    let profile = tempfile::tempdir().unwrap();
    let browser = chromium();
    let out = Command::new(&browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot start {} ({e}): install Chromium (Debian: `apt-get install -y chromium`)", browser.display())
        });
    assert!(out.status.success(), "chromium failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

#[test]
fn html_reports_render_in_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let mut pages = Vec::new();
    for (name, fixture) in
        [("sweep", common::sweep()), ("matrix", common::matrix()), ("fire", common::fire()), ("hunt", common::hunt())]
    {
        let (summary, ctx, _) = fixture.build();
        let page = html::render(&summary, &ctx);
        // Self-contained: nothing fetched from anywhere.
        for forbidden in ["<script", "<link", " src=", "url(", "@import", "http://", "https://"] {
            assert!(!page.contains(forbidden), "{name}: the page must not reference {forbidden}");
        }
        let path = dir.path().join(format!("{name}.html"));
        std::fs::write(&path, page).unwrap();
        // A hunt shows the arms it tried (its untried levels on one line).
        let shown = summary.cells.iter().filter(|c| name != "hunt" || c.attempts > 0).count();
        pages.push((name, path, shown));
    }
    // The pages are rendered at once: each Chromium is a second or two of mostly waiting.
    let doms: Vec<(&str, String, usize)> = std::thread::scope(|s| {
        let handles: Vec<_> =
            pages.iter().map(|(name, path, cells)| s.spawn(move || (*name, rendered_dom(path), *cells))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (name, dom, cells) in &doms {
        for id in ["verdict", "cells-table", "chart-rate", "chart-outcomes", "chart-durations"] {
            assert!(dom.contains(&format!("id=\"{id}\"")), "{name}: #{id} missing from the rendered DOM");
        }
        assert!(count(dom, "<svg ") >= 3, "{name}: charts are inline SVG");
        assert_eq!(count(dom, "class=\"rate-row\""), *cells, "{name}: one interval per cell");
        // Header row plus one row per cell (and a meaning row for sensitive cells).
        assert!(count(dom, "<tr") > *cells, "{name}: the cells table has its rows");
    }
    let get = |n: &str| &doms.iter().find(|(name, _, _)| *name == n).unwrap().1;
    let sweep = get("sweep");
    assert!(sweep.contains("class=\"banner bad\""), "a reproduced failure gets a red banner");
    assert!(sweep.contains("id=\"environment-table\""));
    assert!(sweep.contains("id=\"signatures\"") && sweep.contains("<pre>"));
    assert!(count(sweep, "class=\"bar-fail\"") > 0 && count(sweep, "class=\"bar-pass\"") > 0);
    assert!(!sweep.contains('\u{1b}'), "terminal escapes are stripped");
    let matrix = get("matrix");
    assert!(matrix.contains("id=\"chart-heatmap\""));
    assert_eq!(count(matrix, "class=\"heat-cell\""), 6, "3 LC_ALL values x 2 worker counts");
    assert!(matrix.contains("id=\"attribution-table\""));
    let fire = get("fire");
    assert!(fire.contains("id=\"chart-ladder\""));
    assert_eq!(count(fire, "class=\"level\""), 3);
    assert!(fire.contains("id=\"levels-table\"") && fire.contains("ledger.db:entries"));
    let hunt = get("hunt");
    // The arms tried over time, one row per arm tried (its level in its name), one bar per
    // stretch of its attempts, and the conclusion above them.
    assert!(hunt.contains("id=\"chart-hunt\""), "a hunt's report charts its arms");
    for arm in ["pause=200us/1ms", "noisy=x1", "copies=2", "cpu-starved=10"] {
        assert!(hunt.contains(&format!(">{arm}</text>")), "{arm} has a row in the hunt chart");
    }
    // calibrate, 5 single explorations, copies, noisy, default, noisy, then 28 alternating
    // confirms.
    assert_eq!(count(hunt, "class=\"stretch\""), 1 + 5 + 1 + 1 + 1 + 1 + 28);
    assert!(hunt.contains("id=\"hunt-conclusion\"") && hunt.contains("reproduced twice in "), "{hunt}");
    // As the terminal: the conclusion first, the arms tried in the table and charts, one line
    // for the levels never opened.
    assert!(hunt.find("id=\"hunt-conclusion\"").unwrap() < hunt.find("id=\"cells-table\"").unwrap());
    for untried in ["copies=4", "noisy=x2"] {
        assert!(!hunt.contains(&format!(">{untried}<")), "{untried} has no row: {hunt}");
    }
    assert!(hunt.contains("Not tried (the hunt ended first): copies=4, noisy=x2"), "{hunt}");
    // pytest reports on stdout: the signature box shows stdout, not the empty stderr.
    assert!(hunt.contains("its stdout") && hunt.contains("FAILED tests/test_ledger.py::test_transfer"));
    if let Some(shot) = std::env::var_os("FLAKEHUNT_SCREENSHOT") {
        // For looking at the page by eye: `FLAKEHUNT_SCREENSHOT=/tmp/hunt.html cargo test ...`.
        std::fs::copy(&pages.iter().find(|p| p.0 == "hunt").unwrap().1, shot).unwrap();
    }
}

/// A suite's table with a test id of 3,000 characters (a parametrize id) stays within the page:
/// the id and its reproducer wrap, as laid out by the real browser.
#[test]
fn a_suites_long_test_id_wraps_within_the_page() {
    use flakehunt_core::kind::suite::classify::Category;
    use flakehunt_core::kind::suite::summary::{SuiteSummary, TestSummary};
    use flakehunt_core::kind::suite::Framework;
    let (mut summary, ctx, _) = common::sweep().build();
    let id = format!("tests/test_param.py::test_p[{}]", "x".repeat(3000));
    let test = TestSummary {
        id: id.clone(),
        attempts: 6,
        failures: 6,
        rate: 1.0,
        ci95: [0.6, 1.0],
        conditions: vec![],
        category: Category::Deterministic,
        condition: None,
        polluters: vec![],
        state_setters: vec![],
        reproducer: vec!["python3".into(), "-m".into(), "pytest".into(), id.clone()],
        message: None,
        bisection: None,
        alone: [3, 3],
        repeated: [0, 0],
        unreported: 0,
        state: None,
    };
    summary.suite = Some(SuiteSummary {
        framework: Framework::Pytest,
        collected: 2,
        shuffled: true,
        tests: vec![test],
        classified: true,
        incomplete: vec![],
        unreported: vec![],
        failed_otherwise: vec![],
        cost: None,
    });
    let page = html::render(&summary, &ctx);
    assert!(page.contains(&id), "the id is shown whole, not cut");
    // Measured by the browser itself: the page's width against the window's, the table's right
    // edge against its card's.
    let measure = "<script>\n\
        const d = document.documentElement, card = document.getElementById('tests');\n\
        const table = card.querySelector('table');\n\
        const out = document.createElement('div');\n\
        out.id = 'layout';\n\
        out.textContent = [d.scrollWidth, d.clientWidth, table.getBoundingClientRect().right, card.getBoundingClientRect().right].map(Math.round).join(' ');\n\
        document.body.appendChild(out);\n\
        </script></body>";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("suite.html");
    std::fs::write(&path, page.replace("</body>", measure)).unwrap();
    let dom = rendered_dom(&path);
    let start = dom.find("<div id=\"layout\">").expect("the measurement ran") + "<div id=\"layout\">".len();
    let numbers: Vec<i64> =
        dom[start..dom[start..].find('<').unwrap() + start].split(' ').map(|n| n.parse().unwrap()).collect();
    let [scroll, client, table_right, card_right] = numbers[..] else { panic!("{numbers:?}") };
    assert!(scroll <= client, "the page scrolls sideways: {scroll} > {client}");
    assert!(table_right <= card_right, "the table runs out of its card: {table_right} > {card_right}");
}
