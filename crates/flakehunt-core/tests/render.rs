//! Snapshot tests of every rendering on fixed records, and the JUnit output parsed back.

mod common;

use flakehunt_core::render::{self, Format};
use quick_junit::{Report, TestCaseStatus};

fn all_formats(name: &str, fixture: &common::Fixture) {
    let (summary, ctx, _record) = fixture.build();
    for format in Format::ALL {
        let text = render::render(format, &summary, &ctx);
        let ext = match format {
            Format::Term => "txt",
            Format::Markdown => "md",
            Format::Json => "json",
            Format::Junit => "xml",
            Format::Html => "html",
        };
        insta::assert_snapshot!(format!("{name}.{ext}"), text);
    }
}

#[test]
fn sweep_renders() {
    all_formats("sweep", &common::sweep());
}

#[test]
fn matrix_renders() {
    all_formats("matrix", &common::matrix());
}

#[test]
fn fire_renders() {
    all_formats("fire", &common::fire());
}

#[test]
fn junit_parses_back_with_flaky_and_failing_cells() {
    let mut f = common::sweep();
    // A cell that fails every time is a failure, not a flake.
    f.manifest.cells.push(flakehunt_core::plan::CellSpec { name: "broken".into(), profile: None, overlay: vec![] });
    for _ in 0..3 {
        f.attempt("broken", flakehunt_core::record::Outcome::Fail, 0.01, common::ASSERT_TAIL);
    }
    let (summary, ctx, _) = f.build();
    let xml = render::junit::render(&summary, &ctx);
    assert!(!xml.contains('\x1b') && !xml.contains('\x01'), "escapes must be stripped");
    let report = Report::deserialize_from_str(&xml).expect("the JUnit output parses");
    assert_eq!(report.test_suites.len(), 1);
    let suite = &report.test_suites[0];
    assert_eq!(suite.test_cases.len(), 4);
    let case = |name: &str| suite.test_cases.iter().find(|c| c.name.as_str() == name).unwrap();
    match &case("one-core").status {
        TestCaseStatus::Success { flaky_runs } => {
            assert_eq!(flaky_runs.len(), 13, "one flakyFailure per failing attempt");
            let err = flaky_runs[0].system_err.as_ref().unwrap();
            assert!(err.as_str().contains("assertion `left == right` failed"));
        }
        other => panic!("one-core should be flaky, got {other:?}"),
    }
    match &case("broken").status {
        TestCaseStatus::NonSuccess { reruns, description, .. } => {
            assert_eq!(reruns.len(), 2);
            assert!(description.as_ref().unwrap().as_str().contains("panicked"));
        }
        other => panic!("broken should fail, got {other:?}"),
    }
    assert_eq!(suite.failures, 1);
}

#[test]
fn fire_levels_are_test_cases() {
    let (summary, ctx, _) = common::fire().build();
    let report = Report::deserialize_from_str(&render::junit::render(&summary, &ctx)).unwrap();
    let names: Vec<&str> = report.test_suites[0].test_cases.iter().map(|c| c.name.as_str()).collect();
    assert!(names.contains(&"level 8x10"), "{names:?}");
    assert_eq!(report.test_suites[0].failures, 1, "8x10 rejected; 20x10 did not run");
}

#[test]
fn failing_attempts_are_capped_per_cell() {
    let mut f = common::Fixture::sweep(&["default"], 300);
    for _ in 0..300 {
        f.attempt("default", flakehunt_core::record::Outcome::Fail, 0.01, "boom\n");
    }
    let (summary, ctx, _) = f.build();
    assert_eq!(ctx.failing_of("default").len(), render::FAILING_PER_CELL);
    assert_eq!(summary.cells[0].failures, 300);
}

#[test]
fn a_hunt_whose_arm_failed_twice_but_never_again_is_not_called_reproduced_in_any_rendering() {
    // The fixture hunt's noisy=x1 fails twice, then passes every confirmation attempt.
    let mut f = common::hunt();
    for a in f.attempts.iter_mut().filter(|a| a.phase.as_deref() == Some("confirm")) {
        (a.outcome, a.exit_code, a.signature) = (flakehunt_core::record::Outcome::Pass, Some(0), None);
    }
    let (summary, ctx, _) = f.build();
    assert_eq!(summary.verdict, "not-reproduced");
    assert_eq!(summary.exit_code(), 0);
    for format in Format::ALL {
        let text = render::render(format, &summary, &ctx);
        let lower = text.to_lowercase();
        assert!(!lower.contains("reproduced twice"), "{format:?}: {text}");
        assert!(
            !lower.replace("not reproduced", "").replace("not-reproduced", "").contains("reproduced"),
            "{format:?}: {text}"
        );
    }
    let html = render::render(Format::Html, &summary, &ctx);
    assert!(html.contains("class=\"tick\">failed twice</text>"), "{html}");
}
