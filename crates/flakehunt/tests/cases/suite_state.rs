//! `flakehunt suite --pytest` names the state an order-dependent test trips over: on the fixture
//! suite `fixtures/suite/state`, a polluter that changes four things of which one matters, and a
//! test no other affects (named no state).

use crate::harness::fixture;

#[test]
fn suite_names_the_one_piece_of_state_that_matters_and_none_for_a_clean_test() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("state");
    let copied = std::process::Command::new("cp").arg("-r").arg(fixture("suite/state")).arg(&project).status();
    assert!(copied.unwrap().success());
    let record = dir.path().join("record");
    let tests = [
        "tests/test_polluters.py::test_changes_much",
        "tests/test_polluters.py::test_changes_nothing",
        "tests/test_victims.py::test_class_victim",
        "tests/test_victims.py::test_clean_victim",
    ];
    let mut args = vec!["--runs", "6", "--seed", "1", "--json", "--quiet", "--record", record.to_str().unwrap()];
    args.push("--pytest");
    args.extend(tests);
    let (code, summary, stderr) = super::suite::suite(&project, &args, &[]);
    assert_eq!(code, 1, "an order-dependent test was found: {stderr}");
    let failing = summary["tests"].as_array().unwrap();
    assert_eq!(failing.len(), 1, "only the victim fails: {summary}");
    let victim = &failing[0];
    assert_eq!(victim["id"], "tests/test_victims.py::test_class_victim");
    let state = &victim["state"];
    assert_eq!(
        state["state"],
        serde_json::json!([{"path": "statekit.Parser.case_insensitive", "kind": "class attribute", "before": "False", "after": "True"}]),
        "{state}"
    );
    assert_eq!(state["confirmed"], serde_json::json!([2, 2]));
    // The list, the variables and the logger's level differed too.
    assert!(state["different"].as_u64().unwrap() >= 4, "{state}");
    // The record keeps what a fingerprint cost.
    let kept = std::fs::read_to_string(record.join("state.json")).unwrap();
    assert!(kept.contains("\"entries\""), "{kept}");

    // The terminal says it in words, from the record.
    let out = crate::harness::flakehunt().arg("report").arg(&record).current_dir(&project).output();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "tests/test_victims.py::test_class_victim fails after tests/test_polluters.py::test_changes_much because \
             that test leaves statekit.Parser.case_insensitive = True (was False); restoring it makes test_class_victim \
             pass (2/2)"
        ),
        "{text}"
    );
}
