//! Usage errors: exit code 2, one line on stderr saying what to change, and no attempts.

use predicates::prelude::*;

use crate::harness::Hunt;

/// The one line flakehunt printed, asserting there is exactly one.
fn one_line(stderr: &str) -> &str {
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "expected one line on stderr, got:\n{stderr}");
    lines[0]
}

#[test]
fn a_missing_command_is_a_usage_error() {
    let run = Hunt::sweep().run();
    run.expect_code(2);
    assert!(predicate::str::contains("no command to run").eval(one_line(&run.stderr)));
    assert!(!run.dir.join("attempts.jsonl").exists());
}

#[test]
fn a_command_not_in_path_stops_before_any_attempt() {
    let run = Hunt::sweep().args(["--runs", "200"]).command(["flakehunt-no-such-command"]).run();
    run.expect_code(2);
    let line = one_line(&run.stderr);
    assert!(predicate::str::contains("cannot start 'flakehunt-no-such-command'").eval(line), "{line}");
    assert!(!run.dir.join("attempts.jsonl").exists());
    assert!(run.stdout.is_empty());
}

#[test]
fn a_script_whose_interpreter_is_missing_stops_before_any_attempt() {
    let hunt = Hunt::sweep().args(["--runs", "200", "--jobs", "2"]);
    let script = hunt.scratch("bad-interpreter.sh");
    std::fs::write(&script, "#!/nonexistent/interpreter\necho hi\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let run = hunt.command([&script]).run();
    run.expect_code(2);
    let line = one_line(&run.stderr);
    assert!(predicate::str::contains("interpreter was not found (check its #! line)").eval(line), "{line}");
    // Nothing ran, so nothing is left that would refuse the same --record next time.
    assert!(!run.dir.exists(), "an empty record was left in {}", run.dir.display());
}

#[test]
fn a_bad_duration_is_a_usage_error() {
    let run = Hunt::sweep().args(["--timeout", "3 fortnights"]).command(["true"]).run();
    run.expect_code(2);
    assert!(run.stderr.contains("--timeout"), "{}", run.stderr);
    assert!(!run.dir.exists());
}

#[test]
fn an_unknown_profile_is_a_usage_error() {
    let run = Hunt::sweep().args(["--profiles", "default,warp-speed"]).command(["true"]).run();
    run.expect_code(2);
    let line = one_line(&run.stderr);
    assert!(line.contains("unknown profile 'warp-speed'") && line.contains("one-core"), "{line}");
    assert!(!run.dir.exists());
}

#[test]
fn a_record_directory_that_holds_a_record_is_refused() {
    let first = Hunt::sweep().default_only().args(["--runs", "1"]).command(["true"]).run();
    first.expect_code(0);
    let before = std::fs::read(first.dir.join("attempts.jsonl")).unwrap();

    let again =
        Hunt::sweep().without_record().args(["--runs", "1", "--record"]).args([&first.dir]).command(["true"]).run();
    again.expect_code(2);
    let line = one_line(&again.stderr);
    assert!(line.contains("already holds a record") && line.contains("--resume"), "{line}");
    assert_eq!(std::fs::read(first.dir.join("attempts.jsonl")).unwrap(), before, "the old record is untouched");
}

#[test]
fn options_that_would_change_a_resumed_plan_are_refused() {
    let first = Hunt::sweep().default_only().args(["--runs", "1"]).command(["true"]).run();
    first.expect_code(0);
    for option in [&["--timeout", "1s"][..], &["--runs", "5"], &["--profiles", "one-core"], &["--", "false"]] {
        let again =
            Hunt::sweep().without_record().args(["--resume"]).args([&first.dir]).args(option.iter().copied()).run();
        again.expect_code(2);
        assert!(again.stderr.contains("cannot be used with"), "{option:?}: {}", again.stderr);
    }
}
