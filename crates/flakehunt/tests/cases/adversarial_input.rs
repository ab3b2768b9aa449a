//! Hostile and careless input, end to end: record directories that belong to the user, targets
//! that cannot be executed, counts and durations beyond any machine, empty list items, damaged
//! manifests and shards, huge configuration files, unwritable directories, clap's errors. Each
//! case is refused with one line and exit code 2 (4 for a failing file system), and leaves the
//! user's files as they were.

use crate::harness::{flakehunt, refused_with};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A scratch directory to run flakehunt in.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Self {
        Self { dir: tempfile::tempdir().unwrap() }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, content: &[u8]) -> PathBuf {
        let p = self.path(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, content).unwrap();
        p
    }

    fn executable(&self, name: &str, content: &[u8]) -> PathBuf {
        let p = self.write(name, content);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    fn run(&self, args: &[&str]) -> Output {
        flakehunt().args(args).current_dir(self.dir.path()).env_remove("GITHUB_STEP_SUMMARY").output()
    }
}

fn refused(out: &Output, needle: &str) -> String {
    refused_with(out, 2, needle)
}

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

const SWEEP: &[&str] = &["sweep", "--runs", "2", "--profiles", "default", "-q"];

fn sweep_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    SWEEP.iter().copied().chain(extra.iter().copied()).collect()
}

// A record never goes into a directory of the user's.

#[test]
fn a_record_is_refused_in_a_non_empty_directory_that_holds_no_record() {
    let s = Scratch::new();
    s.write("mine/summary.json", b"the user's own");
    s.write("mine/notes.txt", b"keep me");
    for cmd in [
        sweep_args(&["--record", "mine", "--", "true"]),
        vec!["fire", "--ladder", "1x1", "--record", "mine", "--", "true"],
    ] {
        let out = s.run(&cmd);
        refused(&out, "mine is not empty and holds no flakehunt record");
    }
    let out = s.run(&["matrix", "-D", "X=1,2", "--runs", "1", "-q", "--record", "mine", "--", "true"]);
    refused(&out, "is not empty and holds no flakehunt record");
    assert_eq!(names_in(&s.path("mine")), ["notes.txt", "summary.json"]);
    assert_eq!(std::fs::read(s.path("mine/summary.json")).unwrap(), b"the user's own");
    // A file is not a record directory either.
    s.write("afile", b"x");
    let out = s.run(&sweep_args(&["--record", "afile", "--", "true"]));
    refused(&out, "afile exists and is not a directory");
    assert_eq!(std::fs::read(s.path("afile")).unwrap(), b"x");
    // An empty directory is fine.
    std::fs::create_dir(s.path("empty")).unwrap();
    let out = s.run(&sweep_args(&["--record", "empty", "--", "true"]));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(s.path("empty/summary.json").exists());
}

#[test]
fn merge_into_a_directory_of_the_users_is_refused() {
    let s = Scratch::new();
    for i in 1..=2 {
        let shard = format!("--shard={i}/2");
        let out = s.run(&sweep_args(&[&shard, "--seed", "1", "--record", &format!("s{i}"), "--", "true"]));
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    }
    s.write("out/summary.json", b"the user's own");
    let out = s.run(&["merge", "s1", "s2", "--into", "out"]);
    refused(&out, "out exists and is not an empty directory: choose a new or empty directory for --into");
    assert_eq!(names_in(&s.path("out")), ["summary.json"]);
    assert_eq!(std::fs::read(s.path("out/summary.json")).unwrap(), b"the user's own");
}

// A refused fire leaves nothing behind.

#[test]
fn a_fire_refused_for_its_state_leaves_no_partial_record() {
    let s = Scratch::new();
    s.write("state/data.db", b"not an SQLite database");
    std::fs::create_dir(s.path("empty")).unwrap();
    for record in ["empty", "new"] {
        let args = ["fire", "--state", "state", "--ladder", "1x1", "--record", record, "--", "true"];
        refused(&s.run(&args), "is named like an SQLite database but is not one");
        // Refused the same way again, not for "already holds a record".
        refused(&s.run(&args), "is named like an SQLite database but is not one");
    }
    assert!(names_in(&s.path("empty")).is_empty(), "{:?}", names_in(&s.path("empty")));
    assert!(!s.path("new").exists());
    // Bad options are refused before anything is created, the default record directory too.
    refused(&s.run(&["fire", "--ladder", "2x10,,", "--", "true"]), "a level is empty (a stray comma?)");
    assert!(!s.path(".flakehunt").exists());
}

// A target that cannot be executed is not "not reproduced".

#[test]
fn a_script_without_a_shebang_stops_the_hunt_before_any_attempt() {
    let s = Scratch::new();
    s.executable("t.sh", b"echo hi\n");
    let out = s.run(&sweep_args(&["--record", "rec", "--", "./t.sh"]));
    let line = refused(&out, "cannot start './t.sh'");
    assert!(line.contains("add a shebang line such as #!/bin/sh"), "{line}");
    assert!(!s.path("rec").exists());
    let out = s.run(&["fire", "--ladder", "1x1", "--record", "rec", "--", "./t.sh"]);
    refused(&out, "add a shebang line");
    assert!(!s.path("rec").exists());
}

#[test]
fn a_binary_the_kernel_cannot_execute_stops_sweep_and_fire_at_the_first_attempt() {
    let s = Scratch::new();
    // ELF magic, then nothing a loader could use: exec fails with ENOEXEC on every attempt.
    s.executable("bad", b"\x7fELF garbage that is no program");
    let out = s.run(&sweep_args(&["--record", "rec", "--", "./bad"]));
    refused(&out, "an ELF file the kernel cannot execute");
    assert!(!s.path("rec").exists(), "an attempt that never ran is no evidence: nothing is recorded");
    let out = s.run(&["fire", "--ladder", "2x4", "--record", "rec", "--", "./bad"]);
    refused(&out, "an ELF file the kernel cannot execute");
    assert!(!s.path("rec").exists());
    // The same with a program found in PATH.
    let path = format!("{}:{}", s.path("").display(), std::env::var("PATH").unwrap_or_default());
    let out = flakehunt()
        .args(sweep_args(&["--record", "rec2", "--", "bad"]))
        .current_dir(s.path(""))
        .env("PATH", path)
        .output();
    refused(&out, "cannot start 'bad'");
}

#[test]
fn a_fire_program_given_by_a_relative_path_runs_in_its_sandbox() {
    let s = Scratch::new();
    s.executable("ok.sh", b"#!/bin/sh\nexit 0\n");
    let out = s.run(&["fire", "--ladder", "1x1", "-q", "--record", "rec", "--", "./ok.sh"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

// Counts beyond the machine.

#[test]
fn counts_beyond_the_machine_are_refused_naming_the_limit() {
    let s = Scratch::new();
    let out = s.run(&sweep_args(&["--jobs", "4000000000", "--", "true"]));
    refused(&out, "this machine runs at most");
    let out = s.run(&["sweep", "--runs", "18446744073709551615", "--profiles", "default", "--", "true"]);
    refused(&out, "more than 1000000000");
    let out = s.run(&["fire", "--ladder", "4000000000x4000000000", "--", "true"]);
    refused(&out, "workers of 4000000000x4000000000 = 4000000000: this machine runs at most");
    s.write("flakehunt.toml", b"[profiles.storm]\nnoise-threads = 100000000\n");
    let out = s.run(&sweep_args(&["--", "true"]));
    let line = refused(&out, "noise-threads = 100000000: at most");
    assert!(line.contains("flakehunt.toml:1:") || line.contains("flakehunt.toml:2:"), "{line}");
    assert!(!s.path(".flakehunt").exists());
}

// Durations that overflow.

#[test]
fn huge_durations_are_refused_not_panicked_on() {
    let s = Scratch::new();
    for option in ["--timeout", "--grace", "--budget", "--leak-timeout"] {
        let out = s.run(&sweep_args(&[option, "18446744073709551615s", "--", "true"]));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{option}: {stderr}");
        assert!(stderr.contains("longer than a year"), "{option}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    for option in ["--timeout", "--grace"] {
        let out = s.run(&["fire", "--ladder", "1x1", option, "18446744073709551615s", "--", "true"]);
        assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn a_resumed_manifest_with_a_damaged_timeout_is_refused() {
    let s = Scratch::new();
    let out = s.run(&sweep_args(&["--record", "rec", "--", "true"]));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let manifest = s.path("rec/manifest.json");
    let original = std::fs::read_to_string(&manifest).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&original).unwrap();
    for (field, value) in [
        ("timeout_seconds", serde_json::json!(-1)),
        ("timeout_seconds", serde_json::json!(1e308)),
        ("grace_seconds", serde_json::json!(1e19)),
        ("budget_seconds", serde_json::json!(-0.5)),
        ("jobs", serde_json::json!(0)),
        ("jobs", serde_json::json!(4_000_000_000u64)),
    ] {
        json["plan"][field] = value;
        std::fs::write(&manifest, serde_json::to_vec(&json).unwrap()).unwrap();
        let out = s.run(&["sweep", "--resume", "rec", "-q"]);
        refused(&out, &format!("the record's manifest.json holds plan.{field} = "));
        json = serde_json::from_str(&original).unwrap();
    }
}

// Empty list items.

#[test]
fn empty_items_in_list_options_are_refused() {
    let s = Scratch::new();
    for (args, needle) in [
        (vec!["sweep", "--profiles", "", "--", "true"], "--profiles"),
        (vec!["sweep", "--profiles", ",default", "--", "true"], "--profiles"),
        (vec!["sweep", "--profiles", "default,,one-core", "--", "true"], "--profiles"),
        (vec!["probe", "--profiles", "default,"], "--profiles"),
        (vec!["fire", "--ladder", "2x10,,", "--", "true"], "a level is empty"),
        (vec!["fire", "--ladder", "", "--", "true"], "the ladder is empty"),
        (vec!["matrix", "-D", "NAME=", "--", "true"], "-D NAME="),
        (vec!["matrix", "-D", "NAME=a,,b", "--", "true"], "dimension 'NAME' has an empty value"),
        (vec!["matrix", "-D", "=a,b", "--", "true"], "dimension name ''"),
        (vec!["matrix", "--rlimit", "nofile=", "--", "true"], "--rlimit nofile"),
        (vec!["matrix", "--rlimit", "nofile=64,,128", "--", "true"], "--rlimit nofile"),
        (vec!["matrix", "--rlimit", "=64", "--", "true"], "unknown rlimit ''"),
        (vec!["matrix", "--clean-room", "--keep-env", "HOME,,", "--", "true"], "--keep-env"),
    ] {
        let out = s.run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: '{needle}' not in {stderr}");
    }
    assert!(!s.path(".flakehunt").exists(), "nothing ran");
}

// Clap's errors.

#[test]
fn a_usage_error_says_error_once_with_the_subcommands_usage() {
    let s = Scratch::new();
    for args in [
        vec!["sweep", "--bogus"],
        vec!["slurm-script", "sweep", "--bogus", "--", "true"],
        vec!["dispatch", "github", "--shards", "2", "--install", "true", "sweep", "--bogus", "--", "true"],
    ] {
        let out = s.run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.matches("error:").count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains("unexpected argument '--bogus'"), "{stderr}");
        assert!(stderr.contains("Usage: flakehunt sweep"), "{args:?}: {stderr}");
    }
    for flag in ["--help", "--version"] {
        let out = s.run(&[flag]);
        assert_eq!(out.status.code(), Some(0));
        assert!(!out.stdout.is_empty() && out.stderr.is_empty());
        let out = s.run(&["sweep", flag]);
        assert_eq!(out.status.code(), Some(0));
        assert!(!out.stdout.is_empty());
    }
}

// An unwritable working directory says why, and what to do.

#[test]
fn a_record_that_cannot_be_created_says_the_cause_and_exits_4() {
    let s = Scratch::new();
    // A file where the default record directory's parent must go: refused even for root.
    s.write(".flakehunt", b"not a directory");
    let out = s.run(&sweep_args(&["--", "true"]));
    let line = refused_with(&out, 4, ".flakehunt/runs/sweep-");
    assert!(line.contains("Not a directory"), "{line}");
    assert!(line.contains("(a file stands where a directory is needed"), "{line}");
    assert_eq!(std::fs::read(s.path(".flakehunt")).unwrap(), b"not a directory");
    // A read-only directory, where permissions apply (not to root).
    if rustix::process::geteuid().is_root() {
        return;
    }
    let ro = s.path("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    let out = flakehunt().args(sweep_args(&["--", "true"])).current_dir(&ro).output();
    let line = refused_with(&out, 4, "cannot create the record directory .flakehunt/runs/sweep-");
    assert!(line.contains("Permission denied"), "{line}");
    assert!(line.contains("check that directory's permissions, or give --record DIR on a writable path"), "{line}");
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).unwrap();
}

// A shard cut short is not a complete shard.

#[test]
fn merge_says_which_attempts_a_truncated_shard_lacks() {
    let s = Scratch::new();
    for i in 1..=2 {
        let shard = format!("--shard={i}/2");
        let out = s.run(&sweep_args(&[&shard, "--seed", "7", "--record", &format!("s{i}"), "--", "true"]));
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    }
    // Cut shard 2's last line in the middle, as a writer killed mid-line leaves it.
    let attempts = s.path("s2/attempts.jsonl");
    let text = std::fs::read_to_string(&attempts).unwrap();
    let last_start = text[..text.len() - 1].rfind('\n').map_or(0, |i| i + 1);
    let last: serde_json::Value = serde_json::from_str(text[last_start..].trim()).unwrap();
    std::fs::write(&attempts, &text[..last_start + 10]).unwrap();
    let out = s.run(&["merge", "s1", "s2", "--into", "out"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("1 missing) into out"), "{stderr}");
    let id = last["id"].as_u64().unwrap();
    assert!(
        stderr.contains(&format!("shard 2/2 (s2) is missing 1 attempts (ids {id}); its last line was cut")),
        "{stderr}"
    );
    let merge: serde_json::Value = serde_json::from_slice(&std::fs::read(s.path("out/merge.json")).unwrap()).unwrap();
    assert_eq!(merge["missing_attempts"], 1, "{merge:#}");
    assert_eq!(merge["merged_from"][1]["missing_ids"], serde_json::json!([id]));
    assert_eq!(merge["merged_from"][0]["missing_attempts"], 0);
}

// A kill test is shown as the words that run exactly it.

#[test]
fn hypo_list_shows_each_kill_test_as_the_shell_words_that_run_it() {
    let s = Scratch::new();
    let out = s.run(&["hypo", "add", "multi-line", "--", "sh", "-c", "true\ntouch /tmp/PWNED\n#"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let out = s.run(&["hypo", "add", "quotes", "--", "echo", "{a,b}", "it's", "", "\u{1b}[2J"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let out = s.run(&["hypo", "list"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("kill test: sh -c $'true\\ntouch /tmp/PWNED\\n#'\n"), "{stdout}");
    assert!(stdout.contains(r"kill test: echo '{a,b}' 'it'\''s' '' $'\x1b[2J'"), "{stdout}");
    assert!(!stdout.contains('\u{1b}'), "no raw escape reaches the terminal: {stdout}");
}

// Siblings of the cases above.

#[test]
fn a_grid_larger_than_memory_is_refused_before_it_is_built() {
    let s = Scratch::new();
    let ten = "1,2,3,4,5,6,7,8,9,10";
    let defines: Vec<String> = "ABCDEFGHIJKLMNOPQRST".chars().map(|c| format!("-D{c}={ten}")).collect();
    let mut args = vec!["matrix", "--yes", "--runs", "1", "-q"];
    args.extend(defines.iter().map(String::as_str));
    args.extend(["--", "true"]);
    let out = s.run(&args);
    refused(&out, "more than the 1000000 a matrix can have");
    let out = s.run(&[
        "matrix",
        "-D",
        &format!("A={ten}"),
        "-D",
        &format!("B={ten}"),
        "-D",
        &format!("C={ten}"),
        "--",
        "true",
    ]);
    refused(&out, "the grid has 1000 cells, over the limit of 256");
}

#[test]
fn a_nul_byte_in_a_configured_variable_is_refused_with_its_line() {
    let s = Scratch::new();
    s.write("flakehunt.toml", b"[profiles.p]\nenv = { A = \"x\\u0000y\" }\n");
    let out = s.run(&["sweep", "--runs", "2", "--profiles", "p", "--", "true"]);
    refused(&out, "flakehunt.toml:1: profile 'p': env A holds a NUL byte");
    s.write("flakehunt.toml", b"[matrix.env]\nA = [\"1\", \"x\\u0000y\"]\n");
    let out = s.run(&["matrix", "--runs", "1", "--", "true"]);
    refused(&out, "dimension 'A' has a value with a NUL byte");
    assert!(!s.path(".flakehunt").exists());
}

#[test]
fn a_pattern_that_matches_every_output_is_refused() {
    let s = Scratch::new();
    for (option, pattern) in [("--fail-if", ""), ("--pass-if", "x*")] {
        refused(
            &s.run(&sweep_args(&[option, pattern, "--", "true"])),
            "matches the empty text, so it matches every output",
        );
    }
    assert!(!s.path(".flakehunt").exists());
}

// An --expect-stdout that is not a regular file was read without end
// (`/dev/zero` until memory ran out; a FIFO waited on for a writer forever).
#[test]
fn an_expected_stdout_that_is_not_a_regular_file_is_refused() {
    let s = Scratch::new();
    let fifo = s.path("expected.fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    for (i, expected) in ["/dev/zero", fifo.to_str().unwrap()].into_iter().enumerate() {
        let record = format!("rec{i}");
        let out = s.run(&sweep_args(&["--record", &record, "--expect-stdout", expected, "--", "true"]));
        refused(&out, "not a regular file");
        assert!(!s.path(&record).exists(), "{record} was created");
    }
}

// A hand-edited manifest with an empty argv, or a shard 0/0, made
// `--resume` index an empty list and `merge` divide by zero (exit 101).
#[test]
fn a_resumed_or_merged_manifest_without_a_command_or_with_a_shard_zero_is_refused() {
    let s = Scratch::new();
    let out = s.run(&["sweep", "--runs", "4", "--profiles", "default", "-q", "--record", "rec", "--", "true"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // Half the attempts, so that the resumed hunt has some to run.
    let attempts = std::fs::read_to_string(s.path("rec/attempts.jsonl")).unwrap();
    let half: String = attempts.lines().take(2).map(|l| format!("{l}\n")).collect();
    std::fs::write(s.path("rec/attempts.jsonl"), half).unwrap();
    let manifest = s.path("rec/manifest.json");
    let original: serde_json::Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    for (edit, needle) in [
        (("target", "argv", serde_json::json!([])), "target.argv is empty"),
        (("shard", "", serde_json::json!({"index": 0, "count": 0})), "shard is 0/0"),
        (("shard", "", serde_json::json!({"index": 3, "count": 2})), "shard is 3/2"),
    ] {
        let mut json = original.clone();
        let (outer, inner, value) = edit;
        if inner.is_empty() {
            json[outer] = value;
        } else {
            json[outer][inner] = value;
        }
        std::fs::write(&manifest, serde_json::to_vec(&json).unwrap()).unwrap();
        refused(&s.run(&["sweep", "--resume", "rec", "-q"]), needle);
        refused(&s.run(&["merge", "rec", "--into", "merged"]), needle);
        assert!(!s.path("merged").exists());
    }
}

// A missing TMPDIR gave "cannot copy REPO into the clean room" (no
// cause, the wrong culprit), and made the jitter profile blame a missing C compiler.
#[test]
fn a_missing_tmpdir_is_named_as_the_cause() {
    let s = Scratch::new();
    let repo = s.path("repo");
    std::fs::create_dir(&repo).unwrap();
    s.write("repo/t.sh", b"true\n");
    for args in
        [&["init", "-q"][..], &["add", "t.sh"], &["-c", "user.email=a@b", "-c", "user.name=n", "commit", "-qm", "i"]]
    {
        assert!(Command::new("git").args(args).current_dir(&repo).status().unwrap().success());
    }
    let run = |args: &[&str]| {
        flakehunt()
            .args(args)
            .current_dir(&repo)
            .env("TMPDIR", s.path("no-such-tmp"))
            .env_remove("GITHUB_STEP_SUMMARY")
            .output()
    };
    let out =
        run(&["matrix", "--clean-room", "-D", "X=1", "--runs", "1", "--record", "../rec", "-q", "--", "sh", "t.sh"]);
    refused(&out, "(set TMPDIR to a writable directory)");
    let out = run(&["sweep", "--profiles", "jitter", "--runs", "1", "--record", "../rec2", "--", "true"]);
    // The inert profile's reason is in the table, on stdout.
    let printed = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(printed.contains("no-such-tmp") && printed.contains("set TMPDIR"), "{printed}");
}

// A $GITHUB_STEP_SUMMARY that is a FIFO without a reader held the
// finished hunt forever (blocked in open, deaf to SIGTERM). It is a warning now, like any
// summary that cannot be written, and the hunt's result stands.
#[test]
fn a_step_summary_that_is_a_fifo_is_warned_about_not_waited_on() {
    let s = Scratch::new();
    let fifo = s.path("summary.fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let out = flakehunt()
        .args(sweep_args(&["--record", "rec", "--", "true"]))
        .current_dir(s.dir.path())
        .env("GITHUB_STEP_SUMMARY", &fifo)
        .output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("warning: cannot append to $GITHUB_STEP_SUMMARY"), "{stderr}");
}

// A ladder whose levels are each within bounds but whose whole hunt
// (levels and their reference runs) is not was refused as "the record's manifest.json ... was
// edited or damaged", for a record that did not exist.
#[test]
fn a_ladder_too_long_as_a_whole_is_refused_as_the_ladder_not_as_a_damaged_record() {
    let s = Scratch::new();
    std::fs::create_dir(s.path("state")).unwrap();
    let out =
        s.run(&["fire", "--state", "state", "--ladder", "1x1000000000", "--record", "rec", "-q", "--shell", "true"]);
    let line = refused(&out, "--ladder");
    assert!(line.contains("with its references") && !line.contains("damaged"), "{line}");
    assert!(!s.path("rec").exists());
}
