//! Adversarial tests of what the user owns: `fire --state` and `matrix --clean-room` copy a tree
//! by one rule, and no shape of symlink, special file, sparse file or relative path lets a run
//! reach the original, nor a killed flakehunt leave a copy behind.
//!
//! Every test builds real files and links in a temporary directory, runs the real binary and
//! asserts on the original afterwards. Nothing waits on time: a killed hunt is polled with a
//! bounded wait for what the watchdog must do.

use std::os::unix::fs::{symlink, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::harness::{flakehunt, is_gone, stderr_of};

/// Runs `flakehunt fire --json ARGS` in `cwd` with the record in `record`.
fn fire(cwd: &Path, record: &Path, args: &[&str]) -> Output {
    flakehunt()
        .current_dir(cwd)
        .args(["fire", "--json", "--quiet", "--record"])
        .arg(record)
        .args(args)
        .stdin(Stdio::null())
        .output()
}

/// The JSON summary, failing with stderr when there is none.
fn summary(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("no JSON summary ({e}); stderr: {}", stderr_of(out)))
}

/// The verdict of the first level of an accepted or rejected fire hunt.
fn first_verdict(out: &Output) -> String {
    let s = summary(out);
    s["levels"][0]["verdict"].as_str().unwrap_or_else(|| panic!("no level in {s:#}")).to_owned()
}

/// Asserts a refusal: exit 2 and one line naming `what`.
fn assert_refused(out: &Output, what: &str) {
    let err = stderr_of(out);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(what), "names {what}: {err}");
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A canonical temporary directory, so that paths compared with flakehunt's are spelled alike.
fn tmp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().canonicalize().unwrap();
    (dir, path)
}

/// Polls `cond` with a generous bound (a loaded machine is slow, never wrong).
fn poll_until(what: &str, cond: impl FnMut() -> bool) {
    crate::harness::poll_until(what, std::time::Duration::from_secs(120), cond);
}

#[test]
fn a_link_spelled_through_a_symlinked_parent_is_re_pointed_into_the_sandbox() {
    // The link's target uses the logical $PWD (through `home`).
    let (_guard, t) = tmp();
    std::fs::create_dir_all(t.join("real/proj/state")).unwrap();
    symlink(t.join("real"), t.join("home")).unwrap();
    let proj = t.join("home/proj");
    std::fs::write(proj.join("state/d.txt"), "v1\n").unwrap();
    symlink(proj.join("state/d.txt"), proj.join("state/cur.txt")).unwrap();
    let out = fire(&proj, &t.join("x"), &["--state", "state", "--ladder", "1x1", "--shell", "echo X >> cur.txt"]);
    assert_eq!(read(&proj.join("state/d.txt")), "v1\n", "the real state was written: {}", stderr_of(&out));
    assert_eq!(first_verdict(&out), "accept", "{}", stderr_of(&out));
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn links_that_re_enter_the_state_by_any_spelling_stay_inside_the_copy() {
    let (_guard, t) = tmp();
    let state = t.join("state");
    std::fs::create_dir_all(state.join("sub/deeper")).unwrap();
    std::fs::write(state.join("d.txt"), "v1\n").unwrap();
    // Surplus `../` that leave and re-enter the state, a link to a link, a link to the state
    // itself, and the state reached through a link to its parent.
    symlink("../../../state/d.txt", state.join("sub/deeper/surplus")).unwrap();
    symlink("sub/deeper/surplus", state.join("chain")).unwrap();
    symlink(".", state.join("self")).unwrap();
    symlink(t.join("."), t.join("parent-link")).unwrap();
    symlink(t.join("parent-link/state/d.txt"), state.join("via-parent-link")).unwrap();
    let before = std::fs::read_dir(&state).unwrap().count();
    let script = "echo A >> sub/deeper/surplus; echo B >> chain; echo C >> self/d.txt; echo D >> via-parent-link; \
                  grep -c . d.txt";
    let out = fire(&t, &t.join("rec"), &["--state", "state", "--ladder", "1x1", "--shell", script]);
    assert_eq!(read(&state.join("d.txt")), "v1\n", "{}", stderr_of(&out));
    assert_eq!(std::fs::read_dir(&state).unwrap().count(), before);
    assert_eq!(first_verdict(&out), "accept", "{}", stderr_of(&out));
}

#[test]
fn a_run_that_links_to_its_sandbox_by_absolute_path_is_not_a_false_corruption() {
    let (_guard, t) = tmp();
    let state = t.join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(state.join("d.txt"), "v1\n").unwrap();
    // Each sandbox lives at its own path: the same link made in each must compare equal.
    let script = r#"ln -sfn "$FLAKEHUNT_STATE/d.txt" abs; ln -sfn "$(pwd -P)/d.txt" physical"#;
    let out = fire(&t, &t.join("rec"), &["--state", "state", "--ladder", "1x1", "--shell", script]);
    assert_eq!(first_verdict(&out), "accept", "{}", stderr_of(&out));
}

#[test]
fn a_link_leaving_the_state_is_refused_by_name_or_its_content_copied() {
    let (_guard, t) = tmp();
    let state = t.join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(t.join("outside.txt"), "t\n").unwrap();
    symlink(t.join("outside.txt"), state.join("link")).unwrap();
    let args = ["--state", "state", "--ladder", "1x1", "--shell", "echo X >> link"];
    let out = fire(&t, &t.join("rec"), &args);
    assert_refused(&out, "link");
    assert!(stderr_of(&out).contains("--follow-outside-links"), "{}", stderr_of(&out));
    assert!(!t.join("rec").exists(), "a refused state leaves no record");

    let mut follow = args.to_vec();
    follow.push("--follow-outside-links");
    let out = fire(&t, &t.join("rec"), &follow);
    assert_eq!(first_verdict(&out), "accept", "{}", stderr_of(&out));
    assert_eq!(read(&t.join("outside.txt")), "t\n");
    assert!(std::fs::symlink_metadata(state.join("link")).unwrap().file_type().is_symlink());
}

#[test]
fn a_link_to_the_states_parent_is_refused_and_following_it_is_a_loop_not_a_hang() {
    let (_guard, t) = tmp();
    let state = t.join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(state.join("d.txt"), "v1\n").unwrap();
    symlink("..", state.join("up")).unwrap();
    let out = fire(&t, &t.join("rec"), &["--state", "state", "--ladder", "1x1", "--shell", "echo X >> up/state/d.txt"]);
    assert_refused(&out, "up");
    // The parent contains the state: copying it would copy the copy.
    let args = ["--state", "state", "--ladder", "1x1", "--follow-outside-links", "--shell", "true"];
    let out = fire(&t, &t.join("rec"), &args);
    assert_refused(&out, "contains it");
    assert_eq!(read(&state.join("d.txt")), "v1\n");
}

#[test]
fn dangling_links_are_kept_inside_and_refused_outside() {
    let (_guard, t) = tmp();
    let state = t.join("state");
    std::fs::create_dir(&state).unwrap();
    // Writing through it creates `new.txt`: in the sandbox, never in the state.
    symlink("new.txt", state.join("inside")).unwrap();
    let out = fire(&t, &t.join("rec"), &["--state", "state", "--ladder", "1x1", "--shell", "echo X >> inside"]);
    assert_eq!(first_verdict(&out), "accept", "{}", stderr_of(&out));
    assert!(!state.join("new.txt").exists());

    std::fs::remove_file(state.join("inside")).unwrap();
    symlink("../created-outside.txt", state.join("outside")).unwrap();
    let args = ["--state", "state", "--ladder", "1x1", "--shell", "echo X >> outside || true"];
    let out = fire(&t, &t.join("rec2"), &args);
    assert_refused(&out, "dangles outside");
    // Following outside links: there is nothing to copy, so the link is left out.
    let mut follow = args.to_vec();
    follow.push("--follow-outside-links");
    let out = fire(&t, &t.join("rec3"), &follow);
    assert_eq!(first_verdict(&out), "accept", "{}", stderr_of(&out));
    assert!(!t.join("created-outside.txt").exists(), "a run created a file outside the state");
}

#[test]
fn the_state_itself_reached_through_a_symlink_is_copied_by_its_real_path() {
    let (_guard, t) = tmp();
    let real = t.join("real-state");
    std::fs::create_dir(&real).unwrap();
    std::fs::write(real.join("d.txt"), "v1\n").unwrap();
    symlink(&real, t.join("state")).unwrap();
    // The link names the state by its symlink's path.
    symlink(t.join("state/d.txt"), real.join("cur")).unwrap();
    let out = fire(&t, &t.join("rec"), &["--state", "state", "--ladder", "1x1", "--shell", "echo X >> cur"]);
    assert_eq!(read(&real.join("d.txt")), "v1\n", "{}", stderr_of(&out));
    assert_eq!(first_verdict(&out), "accept", "{}", stderr_of(&out));
}

#[test]
fn a_fifo_is_recreated_without_blocking_and_a_device_is_refused() {
    let (_guard, t) = tmp();
    let state = t.join("state");
    std::fs::create_dir(&state).unwrap();
    assert!(Command::new("mkfifo").arg(state.join("pipe")).status().unwrap().success());
    let _socket = std::os::unix::net::UnixListener::bind(state.join("sock")).unwrap();
    let out =
        fire(&t, &t.join("rec"), &["--state", "state", "--ladder", "1x1", "--shell", "test -p pipe && test ! -e sock"]);
    assert_eq!(first_verdict(&out), "accept", "{}", stderr_of(&out));

    // A device reached by a followed link would still be the device.
    std::fs::remove_file(state.join("pipe")).unwrap();
    symlink("/dev/null", state.join("null")).unwrap();
    let out = fire(
        &t,
        &t.join("rec2"),
        &["--state", "state", "--ladder", "1x1", "--follow-outside-links", "--shell", "true"],
    );
    assert_refused(&out, "device node");
}

#[test]
fn hard_links_in_the_copy_never_share_an_inode_with_the_original() {
    let (_guard, t) = tmp();
    let state = t.join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(t.join("outside.txt"), "o\n").unwrap();
    std::fs::hard_link(t.join("outside.txt"), state.join("h1")).unwrap();
    std::fs::hard_link(state.join("h1"), state.join("h2")).unwrap();
    // The two names share an inode in the copy too: a write through one shows in the other.
    let script = r#"echo X >> h1; [ "$(stat -c %i h1)" = "$(stat -c %i h2)" ] && [ "$(stat -c %h h1)" = 2 ]"#;
    let out = fire(&t, &t.join("rec"), &["--state", "state", "--ladder", "1x1", "--keep", "--shell", script]);
    assert_eq!(first_verdict(&out), "accept", "{}", stderr_of(&out));
    assert_eq!(read(&t.join("outside.txt")), "o\n");
    let kept = t.join("rec/sandboxes/level-1-1x1/h1");
    assert_ne!(std::fs::metadata(kept).unwrap().ino(), std::fs::metadata(t.join("outside.txt")).unwrap().ino());
}

#[test]
fn followed_directories_keep_their_own_links_and_are_copies() {
    let (_guard, t) = tmp();
    let state = t.join("state");
    std::fs::create_dir_all(t.join("ext/sub")).unwrap();
    std::fs::create_dir(&state).unwrap();
    std::fs::write(t.join("ext/f.txt"), "e\n").unwrap();
    symlink("../f.txt", t.join("ext/sub/up")).unwrap();
    symlink(t.join("ext"), state.join("ext")).unwrap();
    let script = "echo X >> ext/sub/up; test -L ext/sub/up; test ! -L ext";
    let args = ["--state", "state", "--ladder", "1x1", "--follow-outside-links", "--shell", script];
    let out = fire(&t, &t.join("rec"), &args);
    assert_eq!(first_verdict(&out), "accept", "{}", stderr_of(&out));
    assert_eq!(read(&t.join("ext/f.txt")), "e\n");
}

#[test]
fn a_relative_record_gives_runs_absolute_paths() {
    let (_guard, t) = tmp();
    let state = t.join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(state.join("d.txt"), "v1\n").unwrap();
    let script = r#"case "$FLAKEHUNT_STATE" in /*) ;; *) exit 3;; esac; test -f "$FLAKEHUNT_STATE/d.txt" && test -f {state}/d.txt && [ "$PWD" = "$FLAKEHUNT_STATE" ]"#;
    let check = r#"case "$FLAKEHUNT_STATE" in /*) test -f "$FLAKEHUNT_STATE/d.txt";; *) exit 3;; esac"#;
    let out = fire(&t, Path::new("rec"), &["--state", "state", "--ladder", "1x2", "--check", check, "--shell", script]);
    assert_eq!(first_verdict(&out), "accept", "{}", stderr_of(&out));
    // The default record (.flakehunt/runs/...) is relative too.
    let out = flakehunt()
        .current_dir(&t)
        .args(["fire", "--json", "--quiet", "--state", "state", "--ladder", "1x1", "--shell", script])
        .output();
    assert_eq!(first_verdict(&out), "accept", "{}", stderr_of(&out));
}

#[test]
fn a_sparse_gigabyte_stays_sparse_and_the_bytes_written_are_reported() {
    let (_guard, t) = tmp();
    let state = t.join("state");
    std::fs::create_dir(&state).unwrap();
    let file = std::fs::File::create(state.join("big.img")).unwrap();
    file.set_len(1 << 30).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&file, b"data in the middle", 512 << 20).unwrap();
    drop(file);
    let out = fire(&t, &t.join("rec"), &["--state", "state", "--ladder", "1x1", "--keep", "--shell", "true"]);
    assert_eq!(first_verdict(&out), "accept", "{}", stderr_of(&out));
    for sandbox in ["reference-1", "level-1-1x1"] {
        let copy = std::fs::metadata(t.join("rec/sandboxes").join(sandbox).join("big.img")).unwrap();
        assert_eq!(copy.len(), 1 << 30);
        assert!(copy.blocks() * 512 < 16 << 20, "{sandbox}: {} bytes allocated", copy.blocks() * 512);
    }
    let copied = &summary(&out)["levels"][0]["copied"];
    assert_eq!(copied["bytes"], 1u64 << 30, "{copied}");
    assert!(copied["written"].as_u64().unwrap() < 16 << 20, "{copied}");
}

/// A git repository in `dir` holding `files` (path, content), all tracked.
fn repo(dir: &Path, files: &[(&str, &str)]) {
    let git = |args: &[&str]| {
        let out = Command::new("git").args(args).current_dir(dir).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    git(&["init", "-q"]);
    for (path, content) in files {
        std::fs::write(dir.join(path), content).unwrap();
    }
    git(&["add", "-A"]);
    git(&["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"]);
}

fn git_status(dir: &Path) -> String {
    let out = Command::new("git").args(["status", "--porcelain"]).current_dir(dir).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `flakehunt matrix --clean-room` in `repo` with rooms under `tmpdir`.
fn matrix(repo: &Path, tmpdir: &Path, extra: &[&str], command: &str) -> Output {
    flakehunt()
        .current_dir(repo)
        .env("TMPDIR", tmpdir)
        .args(["matrix", "--clean-room", "--json", "-q", "-D", "A=1,2", "--runs", "1", "--record"])
        .arg(tmpdir.join("rec"))
        .args(extra)
        .args(["--shell", command])
        .stdin(Stdio::null())
        .output()
}

fn rooms_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("flakehunt-room-"))
        .collect()
}

#[test]
fn a_tracked_link_into_the_repository_cannot_modify_the_working_tree() {
    let (_guard, t) = tmp();
    let (work, rooms) = (t.join("repo"), t.join("rooms"));
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&rooms).unwrap();
    symlink(work.join("data.txt"), work.join("abs-link")).unwrap();
    symlink("./sub/../data.txt", work.join("rel-link")).unwrap();
    std::fs::create_dir(work.join("sub")).unwrap();
    repo(&work, &[("data.txt", "v1\n"), ("sub/keep", "")]);
    let out = matrix(&work, &rooms, &[], "echo X >> abs-link; echo Y >> rel-link; test -L abs-link");
    assert_eq!(summary(&out)["failures"], 0, "{}", stderr_of(&out));
    assert_eq!(git_status(&work), "", "the working tree changed");
    assert_eq!(read(&work.join("data.txt")), "v1\n");
    assert!(rooms_in(&rooms).is_empty(), "rooms left: {:?}", rooms_in(&rooms));
}

#[test]
fn a_tracked_link_leaving_the_repository_is_refused_before_any_copy_or_followed() {
    let (_guard, t) = tmp();
    let (work, rooms) = (t.join("repo"), t.join("rooms"));
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&rooms).unwrap();
    std::fs::write(t.join("outside.txt"), "o\n").unwrap();
    symlink(t.join("outside.txt"), work.join("out-link")).unwrap();
    repo(&work, &[("data.txt", "v1\n")]);
    let out = matrix(&work, &rooms, &[], "echo X >> out-link");
    assert_refused(&out, "out-link");
    assert!(rooms_in(&rooms).is_empty());
    let out = matrix(&work, &rooms, &["--follow-outside-links"], "echo X >> out-link; test ! -L out-link");
    assert_eq!(summary(&out)["failures"], 0, "{}", stderr_of(&out));
    assert_eq!(read(&t.join("outside.txt")), "o\n");
}

#[test]
fn a_relative_tmpdir_still_gives_clean_rooms_absolute_paths() {
    let (_guard, t) = tmp();
    let work = t.join("repo");
    std::fs::create_dir_all(work.join("reltmp")).unwrap();
    repo(&work, &[("data.txt", "v1\n")]);
    let check = r#"for p in "$PWD" "$HOME" "$TMPDIR"; do case "$p" in /*) ;; *) exit 3;; esac; done; test -f data.txt"#;
    let out = matrix(&work, Path::new("reltmp"), &[], check);
    assert_eq!(summary(&out)["failures"], 0, "{}", stderr_of(&out));
}

#[test]
fn a_sigkilled_clean_room_matrix_leaves_no_room_and_no_process() {
    let (_guard, t) = tmp();
    let (work, rooms) = (t.join("repo"), t.join("rooms"));
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&rooms).unwrap();
    repo(&work, &[("data.txt", "v1\n")]);
    let pids = t.join("pids");
    let script = format!("echo $$ >> {}; exec sleep 300", pids.display());
    let mut child = flakehunt()
        .current_dir(&work)
        .env("TMPDIR", &rooms)
        .args(["matrix", "--clean-room", "-q", "-D", "A=1,2", "--runs", "1", "--record"])
        .arg(t.join("rec"))
        .args(["--shell", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    poll_until("an attempt to start in its room", || std::fs::read_to_string(&pids).is_ok_and(|p| !p.is_empty()));
    assert_eq!(rooms_in(&rooms).len(), 2, "one room per cell");
    child.kill().unwrap();
    child.wait().unwrap();
    poll_until("the watchdog to remove the rooms", || rooms_in(&rooms).is_empty());
    poll_until("the watchdog to end the attempt", || read(&pids).lines().all(is_gone));
}

#[test]
fn a_sigkilled_setup_in_a_clean_room_is_ended_and_its_room_removed() {
    let (_guard, t) = tmp();
    let (work, rooms) = (t.join("repo"), t.join("rooms"));
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&rooms).unwrap();
    repo(&work, &[("data.txt", "v1\n")]);
    let pids = t.join("pids");
    let setup = format!("echo $$ >> {}; exec sleep 300", pids.display());
    let mut child = flakehunt()
        .current_dir(&work)
        .env("TMPDIR", &rooms)
        .args(["matrix", "--clean-room", "-q", "-D", "A=1,2", "--runs", "1", "--setup", &setup, "--record"])
        .arg(t.join("rec"))
        .args(["--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    poll_until("the setup to start", || std::fs::read_to_string(&pids).is_ok_and(|p| !p.is_empty()));
    child.kill().unwrap();
    child.wait().unwrap();
    poll_until("the watchdog to end the setup", || read(&pids).lines().all(is_gone));
    poll_until("the watchdog to remove the room", || rooms_in(&rooms).is_empty());
}

#[test]
fn a_sigkilled_fire_leaves_no_sandbox_copy_unless_kept() {
    let (_guard, t) = tmp();
    let state = t.join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(state.join("d.txt"), "v1\n").unwrap();
    let seen = t.join("seen");
    let script = format!("echo \"$$ $FLAKEHUNT_STATE\" >> {}; exec sleep 300", seen.display());
    let mut child = flakehunt()
        .current_dir(&t)
        .args(["fire", "--quiet", "--state", "state", "--ladder", "1x1", "--record", "rec", "--shell", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    poll_until("a run to start in its sandbox", || std::fs::read_to_string(&seen).is_ok_and(|p| !p.is_empty()));
    let line = read(&seen);
    let (pid, sandbox) = line.trim().split_once(' ').unwrap();
    let sandbox = t.join(sandbox);
    assert!(sandbox.join("d.txt").exists(), "{}", sandbox.display());
    child.kill().unwrap();
    child.wait().unwrap();
    poll_until("the watchdog to end the run", || is_gone(pid));
    poll_until("the watchdog to remove the sandbox", || !sandbox.exists());
    assert_eq!(read(&state.join("d.txt")), "v1\n");
}

#[test]
fn a_sigkilled_sweep_leaves_no_jitter_library_directory() {
    let (_guard, t) = tmp();
    let (temp, pids) = (t.join("temp"), t.join("pids"));
    std::fs::create_dir(&temp).unwrap();
    let script = format!("echo $$ >> {}; exec sleep 300", pids.display());
    let mut child = flakehunt()
        .current_dir(&t)
        .env("TMPDIR", &temp)
        .args(["sweep", "-q", "--profiles", "jitter", "--runs", "1", "--record", "rec", "--", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    poll_until("the attempt to start", || std::fs::read_to_string(&pids).is_ok_and(|p| !p.is_empty()));
    let helpers = || std::fs::read_dir(&temp).unwrap().count();
    assert_eq!(helpers(), 1, "the jitter library's directory exists while the hunt runs");
    child.kill().unwrap();
    child.wait().unwrap();
    poll_until("the watchdog to end the attempt", || read(&pids).lines().all(is_gone));
    poll_until("the watchdog to remove the library's directory", || helpers() == 0);
}

#[test]
fn a_resumed_fire_applies_the_rule_to_the_state_as_it_is_now_and_may_follow_outside_links() {
    let (_guard, t) = tmp();
    let state = t.join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(t.join("outside.txt"), "o\n").unwrap();
    let (pids, hang) = (t.join("pids"), t.join("hang"));
    std::fs::write(&hang, "").unwrap();
    let script = format!("if [ -e {} ]; then echo $$ >> {}; exec sleep 300; fi", hang.display(), pids.display());
    let mut child = flakehunt()
        .current_dir(&t)
        .args(["fire", "--quiet", "--state", "state", "--ladder", "1x1", "--record", "rec", "--shell", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    poll_until("a run to start", || std::fs::read_to_string(&pids).is_ok_and(|p| !p.is_empty()));
    child.kill().unwrap();
    child.wait().unwrap();
    poll_until("the watchdog to end the run", || read(&pids).lines().all(is_gone));
    std::fs::remove_file(&hang).unwrap();
    symlink(t.join("outside.txt"), state.join("link")).unwrap();
    let resume = |extra: &[&str]| {
        flakehunt().current_dir(&t).args(["fire", "--quiet", "--json", "--resume", "rec"]).args(extra).output()
    };
    assert_refused(&resume(&[]), "--follow-outside-links");
    let out = resume(&["--follow-outside-links"]);
    assert_eq!(first_verdict(&out), "accept", "{}", stderr_of(&out));
    assert_eq!(read(&t.join("outside.txt")), "o\n");
}

#[test]
fn a_tracked_file_whose_name_is_not_utf8_is_in_the_clean_room() {
    use std::os::unix::ffi::OsStrExt;
    let (_guard, t) = tmp();
    let (work, rooms) = (t.join("repo"), t.join("rooms"));
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&rooms).unwrap();
    std::fs::write(work.join(std::ffi::OsStr::from_bytes(b"caf\xe9.txt")), "x").unwrap();
    repo(&work, &[("data.txt", "v1\n")]);
    let out = matrix(&work, &rooms, &[], r#"test -f "$(printf 'caf\351.txt')""#);
    assert_eq!(summary(&out)["failures"], 0, "{}", stderr_of(&out));
}

// A `[snapshot] tools` command that was running when flakehunt was
// SIGKILLed outlived it (tools lead their own process groups and carried no FLAKEHUNT_RUN_ID,
// so the watchdog did not know them).
#[test]
fn a_snapshot_tool_running_when_flakehunt_is_sigkilled_is_ended_by_the_watchdog() {
    let (_guard, t) = tmp();
    let pids = t.join("pids");
    let tool = t.join("tool.sh");
    std::fs::write(&tool, format!("echo $$ >> {}\nexec sleep 300\n", pids.display())).unwrap();
    std::fs::write(t.join("flakehunt.toml"), format!("[snapshot]\ntools = [\"sh {}\"]\n", tool.display())).unwrap();
    let mut child = flakehunt()
        .current_dir(&t)
        .args(["sweep", "-q", "--profiles", "default", "--runs", "1", "--record", "rec", "--", "sleep", "300"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    poll_until("the snapshot tool to start", || std::fs::read_to_string(&pids).is_ok_and(|p| !p.is_empty()));
    child.kill().unwrap();
    child.wait().unwrap();
    poll_until("the watchdog to end the snapshot tool", || read(&pids).lines().all(is_gone));
}

// A clean room's setup runs in flakehunt's own process group, the user's shell job. The watchdog
// learnt that group from its parent only: when flakehunt was killed before the watchdog had
// started (a loaded machine), the parent it read was init, and killing the setup's group killed
// the shell, the test runner and CI with it. flakehunt now names its group to the watchdog.
#[test]
fn the_watchdog_spares_the_group_flakehunt_names_even_when_it_reads_no_parent() {
    let (_guard, t) = tmp();
    let pids = t.join("pids");
    let run_id = format!("fh-protect-{}", std::process::id());
    // A group of its own stands for the shell job: `sh` without the marker and, in its group, a
    // process of the hunt with it. Once that process is killed, `sh` goes on as a sleep.
    let script =
        format!("FLAKEHUNT_RUN_ID={run_id} sleep 300 & echo \"$$ $!\" > {}; wait; exec sleep 300", pids.display());
    let mut job = Command::new("setsid").args(["sh", "-c", &script]).stdin(Stdio::null()).spawn().unwrap();
    poll_until("the job to start", || read_if(&pids).is_some_and(|p| p.ends_with('\n')));
    let line = read(&pids);
    let (shell, hunt) = line.trim().split_once(' ').unwrap();
    let marker = format!("FLAKEHUNT_RUN_ID={run_id}");
    poll_until("the hunt's process to carry its marker", || {
        std::fs::read(format!("/proc/{hunt}/environ"))
            .is_ok_and(|e| e.split(|&b| b == 0).any(|v| v == marker.as_bytes()))
    });
    // The watchdog's parent here is the test, in another group: only the name protects `sh`.
    let out = flakehunt().args(["__watchdog", &run_id, "--protect", shell]).stdin(Stdio::null()).output();
    let spared = !is_gone(shell);
    let _ = Command::new("kill").args(["-KILL", "--", &format!("-{shell}")]).status();
    let _ = job.wait();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(is_gone(hunt), "the hunt's process is ended");
    assert!(spared, "the named group is not killed");
}

fn read_if(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}
