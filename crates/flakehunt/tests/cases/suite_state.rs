//! `flakehunt suite` names the state an order-dependent test trips over: on the fixture suite
//! `fixtures/suite/state` (pytest), a polluter that changes four things of which one matters,
//! with a cleanup proved to work that, pasted as printed, makes the victim pass, and a test no
//! other affects (named no state); on `fixtures/suite/go-state`, the process-level state each Go
//! polluter leaves, and none for one that leaves only in-memory state.

use crate::harness::{fixture, go_env};

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

    // Its cleanup: proved by as many runs as its reproducer's two failing checks need (11).
    let cleanup = &state["cleanup"];
    assert_eq!(cleanup["proved"], true, "{cleanup}");
    assert_eq!(
        (&cleanup["needed"], &cleanup["checked"], &cleanup["rate_from"]),
        (&11.into(), &serde_json::json!([11, 11]), &serde_json::json!([2, 2]))
    );
    assert_eq!(cleanup["apply_to"], serde_json::json!(["tests/test_polluters.py::test_changes_much"]));
    assert_eq!(cleanup["conftest"], "tests/conftest.py");
    let fixture_name = cleanup["fixture"].as_str().unwrap();
    assert_eq!(fixture_name, "restore_statekit_Parser_case_insensitive");
    let code = cleanup["code"].as_str().unwrap();
    assert!(cleanup.get("seconds").is_none() && kept.contains("\"seconds\""), "the check's time is in state.json only");

    // The terminal says it in words, from the record, with the cleanup's code.
    let report = |format: &str| {
        let out =
            crate::harness::flakehunt().args(["report", "-f", format]).arg(&record).current_dir(&project).output();
        assert!(out.status.success(), "{format}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let sentence = "tests/test_victims.py::test_class_victim fails after tests/test_polluters.py::test_changes_much \
                    because that test leaves statekit.Parser.case_insensitive = True (was False); restoring it makes \
                    test_class_victim pass (2/2)";
    let said = "cleanup, proved: with it in place, tests/test_polluters.py::test_changes_much then test_class_victim \
                passed 11 of 11 runs (enough to rule out, at 99 %, the failure rate of its reproducer's checks, 2 of 2); \
                add it to tests/conftest.py and @pytest.mark.usefixtures(\"restore_statekit_Parser_case_insensitive\") to \
                tests/test_polluters.py::test_changes_much:";
    let term = report("term");
    assert!(term.contains(&format!("{sentence}\n  {said}\n    import pytest\n")), "{term}");
    assert!(term.contains("        statekit.Parser.case_insensitive = saved_case_insensitive\n"), "{term}");
    let markdown = report("md");
    assert!(markdown.contains(&format!("- {sentence}\n\n  {said}\n\n  ```python\n  import pytest\n")), "{markdown}");
    let html = report("html");
    assert!(html.contains("<pre class=\"cleanup\"><code>import pytest"), "{html}");
    let junit = report("junit");
    for part in ["name=\"state\"", "name=\"cleanup\"", "def restore_statekit_Parser_case_insensitive():"] {
        assert!(junit.contains(part), "{part}: {junit}");
    }

    // Pasted as printed into the project (the code into tests/conftest.py, the decorator on the
    // polluter), the reproducer passes; it failed before.
    let reproducer: Vec<String> =
        victim["reproducer"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_owned()).collect();
    let run = || {
        let out = std::process::Command::new(&reproducer[0])
            .args(&reproducer[1..])
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .current_dir(&project)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    assert_eq!(run().0, Some(1));
    let conftest = project.join("tests/conftest.py");
    let text = std::fs::read_to_string(&conftest).unwrap() + "\n" + code;
    std::fs::write(&conftest, text).unwrap();
    let polluters = project.join("tests/test_polluters.py");
    let source = std::fs::read_to_string(&polluters).unwrap();
    let marked = source.replace(
        "def test_changes_much():",
        &format!("@pytest.mark.usefixtures(\"{fixture_name}\")\ndef test_changes_much():"),
    );
    std::fs::write(&polluters, marked).unwrap();
    let (code, out) = run();
    assert_eq!(code, Some(0), "{out}");
}

/// On `fixtures/suite/state-skip`, the polluter changes two settings; putting back the one the
/// victim does not trip over makes the victim skip itself, which is no pass: the state named is
/// the other one, and the cleanup is proved by runs in which the victim ran and passed.
#[test]
fn a_victim_that_skips_is_never_made_to_pass_by_a_restoration_nor_by_a_cleanup() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("state-skip");
    let copied = std::process::Command::new("cp").arg("-r").arg(fixture("suite/state-skip")).arg(&project).status();
    assert!(copied.unwrap().success());
    let record = dir.path().join("record");
    let args = ["--runs", "6", "--seed", "1", "--json", "--quiet", "--record", record.to_str().unwrap(), "--pytest"];
    let (code, summary, stderr) = super::suite::suite(&project, &args, &[]);
    assert_eq!(code, 1, "{stderr}");
    let failing = summary["tests"].as_array().unwrap();
    assert_eq!(failing.len(), 1, "only the victim fails: {summary}");
    let victim = &failing[0];
    assert_eq!(victim["id"], "tests/test_victim.py::test_needs_strict_mode");
    assert_eq!(victim["category"], "order-dependent-victim", "{victim}");
    let state = &victim["state"];
    let named: Vec<&str> = state["state"].as_array().unwrap().iter().map(|d| d["path"].as_str().unwrap()).collect();
    assert_eq!(named, ["gate.MODE"], "putting back gate.BACKEND makes it skip, not pass: {state}");
    let cleanup = &state["cleanup"];
    assert_eq!((&cleanup["proved"], &cleanup["checked"]), (&true.into(), &serde_json::json!([11, 11])), "{cleanup}");

    // Pasted as printed, the reproducer runs the victim, and it passes.
    let code = cleanup["code"].as_str().unwrap();
    std::fs::write(project.join("tests/conftest.py"), code).unwrap();
    let polluter = project.join("tests/test_polluter.py");
    let fixture_name = cleanup["fixture"].as_str().unwrap();
    let source = std::fs::read_to_string(&polluter).unwrap().replace(
        "def test_switches_backend_and_mode():",
        &format!(
            "import pytest\n\n\n@pytest.mark.usefixtures(\"{fixture_name}\")\ndef test_switches_backend_and_mode():"
        ),
    );
    std::fs::write(&polluter, source).unwrap();
    let reproducer: Vec<String> =
        victim["reproducer"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_owned()).collect();
    let out = std::process::Command::new(&reproducer[0])
        .args(&reproducer[1..])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(&project)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.contains("2 passed") && !stdout.contains("skipped"), "{stdout}");
}

#[test]
fn go_suite_names_the_process_state_each_polluter_leaves_and_says_what_it_does_not_examine() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("go-state");
    let copied = std::process::Command::new("cp").arg("-r").arg(fixture("suite/go-state")).arg(&project).status();
    assert!(copied.unwrap().success());
    let record = dir.path().join("record");
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut env = go_env(dir.path());
    env.push(("TMPDIR", tmp));
    let args =
        ["--runs", "8", "--seed", "1", "--json", "--quiet", "--record", record.to_str().unwrap(), "--go-test", "."];
    let (code, summary, stderr) = super::suite::suite(&project, &args, &env);
    assert_eq!(code, 1, "{stderr}");
    let tests: std::collections::BTreeMap<&str, &serde_json::Value> =
        summary["tests"].as_array().unwrap().iter().map(|t| (t["id"].as_str().unwrap(), t)).collect();
    let named = |id: &str| -> Vec<(String, String)> {
        let state = &tests[id]["state"];
        assert_eq!(state["examined"], "process", "{id}: {state}");
        assert!(state.get("cleanup").is_none(), "{id}: no cleanup for Go");
        state["state"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| (d["path"].as_str().unwrap().into(), d["kind"].as_str().unwrap().into()))
            .collect()
    };
    let piece = |p: &str, k: &str| vec![(p.to_owned(), k.to_owned())];
    assert_eq!(named("TestEnvVictim"), piece("os.Getenv(\"GOSTATE_MODE\")", "environment variable"));
    assert_eq!(named("TestDirVictim"), piece("os.Getwd()", "working directory"));
    assert_eq!(named("TestTempFileVictim"), piece("file $TMPDIR/gostate.lock", "file in the temporary directory"));
    assert_eq!(named("TestPackageFileVictim"), piece("file testdata/state.lock", "file in the package's directory"));
    assert_eq!(named("TestCountsInEnv"), piece("os.Getenv(\"GOSTATE_RUNS\")", "environment variable"));
    assert_eq!(tests["TestCountsInEnv"]["category"], "non-idempotent");
    // In-memory state only: nothing named, and the sentence says what was not looked at.
    assert!(named("TestHandlerVictim").is_empty());
    let out = crate::harness::flakehunt().arg("report").arg(&record).output();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "TestHandlerVictim: no process-level state (environment, working directory, files in TMPDIR and the \
             package's directory) differs after TestRegistersHandler; in-memory state (package variables) is not \
             examined for Go tests"
        ),
        "{text}"
    );
    // JUnit carries it for the victim's test case.
    let junit =
        String::from_utf8(crate::harness::flakehunt().args(["report", "-f", "junit"]).arg(&record).output().stdout)
            .unwrap();
    assert!(junit.contains("in-memory state (package variables) is not examined for Go tests"), "{junit}");
}
