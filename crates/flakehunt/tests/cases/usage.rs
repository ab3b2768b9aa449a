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

#[test]
fn options_a_command_would_ignore_are_refused_in_one_line_naming_what_to_give() {
    let t = tempfile::tempdir().unwrap();
    let record = t.path().join("rec");
    for (args, needle) in [
        (&["hunt", "--runs", "5", "--", "true"][..], "--runs does not apply to `flakehunt hunt`"),
        (&["hunt", "-j", "2", "--", "true"], "--jobs does not apply to `flakehunt hunt`"),
        (&["hunt", "--until-fails", "1", "--", "true"], "--until-fails does not apply to `flakehunt hunt`"),
        (&["report", "--config", "f.toml", "rec"], "--config does not apply to `flakehunt report`"),
        (&["--config", "f.toml", "merge", "a", "--into", "b"], "--config does not apply to `flakehunt merge`"),
        (&["--config", "f.toml", "hypo", "list"], "--config does not apply to `flakehunt hypo list`"),
        (
            &["--config", "f.toml", "dispatch", "github", "--shards", "2", "--install", "true", "--", "t"],
            "after its kind",
        ),
        (&["man", "--no-redact"], "--no-redact does not apply to `flakehunt man`"),
        (&["--no-redact", "profiles"], "--no-redact does not apply to `flakehunt profiles`"),
        (
            &["dispatch", "k8s", "--shards", "2", "--image", "i", "sweep", "--json", "--", "t"],
            "leave --json and --quiet out",
        ),
        (&["slurm-script", "sweep", "--slurm", "2", "--json", "--record", "/r", "--", "t"], "--json does not apply"),
    ] {
        let out = crate::harness::flakehunt().args(args).current_dir(t.path()).output();
        let line = crate::harness::refused_with(&out, 2, needle);
        assert!(line.contains(": ") && !line.contains("Usage:"), "{args:?}: {line}");
    }
    assert!(!t.path().join(".flakehunt").exists(), "a refused hunt recorded nothing");
    // Given with --resume, what would change the recorded hunt is refused, not ignored.
    let out = crate::harness::flakehunt()
        .args(["hunt", "--budget", "2s", "-q", "--record"])
        .arg(&record)
        .args(["--", "true"])
        .output();
    assert_eq!(out.status.code(), Some(0));
    let out = crate::harness::flakehunt().args(["hunt", "-q", "--fail-if", "x", "--resume"]).arg(&record).output();
    crate::harness::refused_with(&out, 2, "drop the oracle and test-runner options");
    for (kind, option) in [
        ("matrix", &["-D", "X=1,2"][..]),
        ("matrix", &["--rlimit", "nofile=64"]),
        ("matrix", &["--confirm", "3"]),
        ("matrix", &["--clean-room"]),
        ("matrix", &["--yes"]),
        ("sweep", &["--strict"]),
    ] {
        let out = crate::harness::flakehunt().args([kind, "--resume"]).arg(&record).args(option).output();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{option:?}: {stderr}");
        assert!(stderr.contains("cannot be used with"), "{option:?}: {stderr}");
    }
}

#[test]
fn the_help_lists_only_the_options_a_command_takes() {
    let help = |args: &[&str]| {
        let out = crate::harness::flakehunt().args(args).arg("--help").output();
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8(out.stdout).unwrap()
    };
    let options = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.trim_start().split([' ', ',', '=']).find(|w| w.starts_with("--")))
            .map(str::to_owned)
            .collect()
    };
    let hunt = options(&help(&["hunt"]));
    for gone in ["--runs", "--jobs", "--until-fails"] {
        assert!(!hunt.iter().any(|o| o == gone), "hunt --help lists {gone}");
    }
    assert!(hunt.iter().any(|o| o == "--budget") && hunt.iter().any(|o| o == "--config"), "{hunt:?}");
    let suite = options(&help(&["suite"]));
    for gone in ["--until-fails", "--fail-if", "--pass-if", "--expect-stdout", "--ignore", "--oracle", "--shell"] {
        assert!(!suite.iter().any(|o| o == gone), "suite --help lists {gone}");
    }
    assert!(!help(&["suite"]).contains("COMMAND"), "suite --help shows a command");
    assert!(help(&["sweep"]).contains("[-- <COMMAND>...]"));
    assert!(suite.iter().any(|o| o == "--pytest"), "{suite:?}");
    let sweep = options(&help(&["sweep"]));
    assert!(["--runs", "--jobs", "--until-fails", "--fail-if"].iter().all(|o| sweep.iter().any(|s| s == o)));
    for (cmd, gone) in [
        (&["report"][..], "--config"),
        (&["merge"], "--config"),
        (&["hypo", "list"], "--config"),
        (&["man"], "--no-redact"),
    ] {
        assert!(!options(&help(cmd)).iter().any(|o| o == gone), "{cmd:?} --help lists {gone}");
    }
    assert!(options(&help(&["report"])).iter().any(|o| o == "--no-redact"));
}
