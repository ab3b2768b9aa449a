//! Each class of error and its exit code, end to end. A damaged record (the system reads it,
//! but it holds what flakehunt never writes) is exit 2 "is damaged" in every command that reads
//! a record; a record the system refuses to read, a file system that fills while a record, a
//! clean room or a sandbox copy is written, a directory that cannot be created and a full
//! stdout are exit 4 with the system's reason. Full disks are simulated without root: a file
//! size limit (`RLIMIT_FSIZE`, EFBIG) and `/dev/full` (ENOSPC).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::harness::{fixture_arg, flakehunt, refused_with, skip};

/// A record of shard 1 of 2 of a sweep whose iterations 0 and 3 fail (so it has logs), in
/// `dir/name`; merge takes it with [`shard_two`].
fn shard_one(dir: &Path, name: &str) -> PathBuf {
    shard(dir, name, "1/2")
}

fn shard_two(dir: &Path, name: &str) -> PathBuf {
    shard(dir, name, "2/2")
}

fn shard(dir: &Path, name: &str, shard: &str) -> PathBuf {
    let record = dir.join(name);
    let out = flakehunt()
        .args(["sweep", "--runs", "6", "--profiles", "default", "-q", "--seed", "1", "--shard", shard])
        .arg("--record")
        .arg(&record)
        .args(["--", &fixture_arg("flaky-every.sh"), "3"])
        .output();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read_dir(record.join("logs")).unwrap().next().is_some(), "the shard kept logs");
    record
}

/// Every file of `dir` (recursively) and its bytes, to show a refusal changed nothing.
fn tree(dir: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for p in entries {
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                stack.push(p.clone());
                out.push((p, None));
            } else {
                out.push((p.clone(), meta.is_file().then(|| std::fs::read(&p).unwrap())));
            }
        }
    }
    out
}

/// Replaces `file` with an empty directory.
fn make_dir(file: &Path) {
    std::fs::remove_file(file).unwrap();
    std::fs::create_dir(file).unwrap();
}

fn make_fifo(file: &Path) {
    std::fs::remove_file(file).unwrap();
    assert!(Command::new("mkfifo").arg(file).status().unwrap().success());
}

fn append(file: &Path, bytes: &[u8]) {
    let mut all = std::fs::read(file).unwrap();
    all.extend_from_slice(bytes);
    std::fs::write(file, all).unwrap();
}

/// A way to damage the record in a directory.
type Damage = fn(&Path);

/// Ways a record is damaged: readable, but not what flakehunt writes.
const DAMAGE: &[(&str, Damage)] = &[
    ("a manifest that is not JSON", |r| std::fs::write(r.join("manifest.json"), "{\"format_version\": ").unwrap()),
    ("a manifest that is not UTF-8", |r| std::fs::write(r.join("manifest.json"), b"{\"a\": \"\xff\xfe\"}").unwrap()),
    ("a manifest that is a directory", |r| make_dir(&r.join("manifest.json"))),
    ("attempts that are a directory", |r| make_dir(&r.join("attempts.jsonl"))),
    ("attempts that are a FIFO", |r| make_fifo(&r.join("attempts.jsonl"))),
    ("an attempt that is not JSON", |r| append(&r.join("attempts.jsonl"), b"{\"id\": 99, \"cell\"\n")),
    ("an attempt that is not UTF-8", |r| append(&r.join("attempts.jsonl"), b"{\"id\": \"\xff\"}\n")),
    ("added cells that are not UTF-8", |r| std::fs::write(r.join("cells.jsonl"), b"\xff\n").unwrap()),
    ("added cells that are a directory", |r| std::fs::create_dir(r.join("cells.jsonl")).unwrap()),
];

#[test]
fn a_damaged_record_is_exit_2_in_every_command_that_reads_it_and_left_as_it_was() {
    let t = tempfile::tempdir().unwrap();
    let pristine = shard_one(t.path(), "pristine");
    let other = shard_two(t.path(), "other");
    for (i, (what, damage)) in DAMAGE.iter().enumerate() {
        let record = t.path().join(format!("damaged-{i}"));
        assert!(Command::new("cp").arg("-a").arg(&pristine).arg(&record).status().unwrap().success());
        damage(&record);
        let before = tree(&record);
        let out = flakehunt().args(["report"]).arg(&record).output();
        refused_with(&out, 2, "is damaged: ");
        let into = t.path().join(format!("merged-{i}"));
        let out = flakehunt().args(["merge"]).arg(&record).arg(&other).arg("--into").arg(&into).output();
        let line = refused_with(&out, 2, "is damaged: ");
        assert!(!into.join("summary.json").exists(), "{what}: merge wrote a summary");
        assert_eq!(tree(&record), before, "{what}: report or merge changed the record: {line}");
        let out = flakehunt().args(["sweep", "-q", "--resume"]).arg(&record).output();
        let line = refused_with(&out, 2, "is damaged: ");
        assert!(!line.contains("cannot access"), "{what}: {line}");
    }
}

#[test]
fn a_damaged_log_or_logs_directory_is_exit_2_in_merge_and_resume() {
    let t = tempfile::tempdir().unwrap();
    let record = shard_one(t.path(), "shard");
    let other = shard_two(t.path(), "other");
    let log = std::fs::read_dir(record.join("logs")).unwrap().next().unwrap().unwrap().path();
    make_dir(&log);
    let out = flakehunt().args(["merge"]).arg(&record).arg(&other).arg("--into").arg(t.path().join("m")).output();
    refused_with(&out, 2, &format!("{} is damaged: it is a directory", log.display()));
    std::fs::remove_dir_all(record.join("logs")).unwrap();
    std::fs::write(record.join("logs"), "a file").unwrap();
    let out = flakehunt().args(["sweep", "-q", "--resume"]).arg(&record).output();
    refused_with(&out, 2, "logs is damaged: it is a file");
}

#[test]
fn a_damaged_fire_record_is_exit_2_on_resume() {
    let t = tempfile::tempdir().unwrap();
    let record = t.path().join("fire");
    let out =
        flakehunt().args(["fire", "--ladder", "1x1", "-q", "--record"]).arg(&record).args(["--", "true"]).output();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    make_dir(&record.join("levels.jsonl"));
    let out = flakehunt().args(["fire", "--resume"]).arg(&record).output();
    refused_with(&out, 2, "levels.jsonl is damaged: it is a directory");
    std::fs::remove_dir(record.join("levels.jsonl")).unwrap();
    std::fs::write(record.join("manifest.json"), b"\xff").unwrap();
    let out = flakehunt().args(["fire", "--resume"]).arg(&record).output();
    refused_with(&out, 2, "manifest.json is damaged: it is not UTF-8 text");
}

/// Points `file` at `/proc/self/mem`, which whoever opens it may open (even root) and reading
/// which from its start fails with EIO: a record on a failing disk.
fn make_unreadable(file: &Path) {
    std::fs::remove_file(file).unwrap();
    std::os::unix::fs::symlink("/proc/self/mem", file).unwrap();
}

#[test]
fn a_record_the_system_cannot_read_is_exit_4_with_its_reason_in_every_command() {
    let t = tempfile::tempdir().unwrap();
    let pristine = shard_one(t.path(), "pristine");
    let other = shard_two(t.path(), "other");
    for (i, file) in ["manifest.json", "attempts.jsonl"].into_iter().enumerate() {
        let record = t.path().join(format!("unreadable-{i}"));
        assert!(Command::new("cp").arg("-a").arg(&pristine).arg(&record).status().unwrap().success());
        make_unreadable(&record.join(file));
        let reason = format!("cannot access {}: Input/output error", record.join(file).display());
        refused_with(&flakehunt().args(["report"]).arg(&record).output(), 4, &reason);
        let into = t.path().join(format!("m{i}"));
        let merge = flakehunt().args(["merge"]).arg(&record).arg(&other).arg("--into").arg(into).output();
        refused_with(&merge, 4, &reason);
        refused_with(&flakehunt().args(["sweep", "-q", "--resume"]).arg(&record).output(), 4, &reason);
    }
    // Permissions, where they apply (not to root).
    if rustix::process::geteuid().is_root() {
        skip(
            "a_record_the_system_cannot_read_is_exit_4_with_its_reason_in_every_command",
            "root reads a mode 000 file",
        );
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let record = t.path().join("denied");
    assert!(Command::new("cp").arg("-a").arg(&pristine).arg(&record).status().unwrap().success());
    std::fs::set_permissions(record.join("attempts.jsonl"), std::fs::Permissions::from_mode(0o000)).unwrap();
    refused_with(&flakehunt().args(["report"]).arg(&record).output(), 4, "attempts.jsonl: Permission denied");
}

#[test]
fn a_record_that_fills_the_file_system_is_exit_4_with_its_reason() {
    let t = tempfile::tempdir().unwrap();
    let record = t.path().join("rec");
    // The failing attempt's log is larger than any file may grow.
    let out = flakehunt()
        .args(["sweep", "--runs", "1", "--profiles", "default", "-q", "--record"])
        .arg(&record)
        .args(["--shell", "head -c 300000 /dev/zero | tr '\\0' x; exit 1"])
        .file_size_limit(64 << 10)
        .output();
    let line = refused_with(&out, 4, "File too large");
    assert!(line.contains(&format!("cannot access {}", record.join("logs").display())), "{line}");
}

#[test]
fn a_full_output_file_or_stdout_is_exit_4() {
    let t = tempfile::tempdir().unwrap();
    let record = shard_one(t.path(), "rec");
    let out = flakehunt().args(["report", "-f", "html", "-o", "/dev/full"]).arg(&record).output();
    refused_with(&out, 4, "cannot write /dev/full: No space left on device");
    let full = || std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    for args in [&["report", "-f", "json"][..], &["report"]] {
        let out = flakehunt().args(args).arg(&record).stdout(full()).output();
        refused_with(&out, 4, "cannot write to stdout: No space left on device");
    }
    // Commands that only print, which used to panic.
    for args in [&["profiles"][..], &["man"], &["completions", "bash"]] {
        let out = flakehunt().args(args).stdout(full()).output();
        refused_with(&out, 4, "cannot write to stdout: No space left on device");
    }
    // A reader that goes away is not an error.
    let mut child =
        flakehunt().arg("man").stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A git repository in `dir` tracking `run.sh` and a 300 kB file.
fn repo_with_a_large_file(dir: &Path) -> PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir(&repo).unwrap();
    std::fs::write(repo.join("run.sh"), "true\n").unwrap();
    std::fs::write(repo.join("large.bin"), vec![b'x'; 300_000]).unwrap();
    for args in [
        &["init", "-q"][..],
        &["add", "run.sh", "large.bin"],
        &["-c", "user.email=a@b", "-c", "user.name=n", "commit", "-qm", "i"],
    ] {
        assert!(Command::new("git").args(args).current_dir(&repo).status().unwrap().success());
    }
    repo
}

fn clean_room_matrix(repo: &Path, tmpdir: &Path) -> crate::harness::Invocation {
    let mut matrix = flakehunt();
    matrix
        .args(["matrix", "--clean-room", "-D", "X=1", "--runs", "1", "-q", "--record", "../rec", "--", "sh", "run.sh"])
        .current_dir(repo)
        .env("TMPDIR", tmpdir);
    matrix
}

#[test]
fn a_clean_room_that_fills_the_file_system_is_exit_4_with_its_reason() {
    let t = tempfile::tempdir().unwrap();
    let repo = repo_with_a_large_file(t.path());
    let tmp = t.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let out: Output = clean_room_matrix(&repo, &tmp).file_size_limit(64 << 10).output();
    let line = refused_with(&out, 4, "File too large");
    assert!(line.contains("--clean-room: cannot copy") && line.contains("large.bin"), "{line}");
    // A file where the room's directory must be made.
    let out = clean_room_matrix(&repo, &repo.join("run.sh")).output();
    refused_with(&out, 4, "cannot create a clean room in");
    // Without the limit, the same matrix runs.
    let out = clean_room_matrix(&repo, &tmp).output();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_sandbox_copy_that_fills_the_file_system_is_exit_4_with_its_reason() {
    let t = tempfile::tempdir().unwrap();
    let state = t.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(state.join("large.bin"), vec![b'x'; 300_000]).unwrap();
    let record = t.path().join("rec");
    let out = flakehunt()
        .args(["fire", "--ladder", "1x1", "-q", "--state"])
        .arg(&state)
        .arg("--record")
        .arg(&record)
        .args(["--", "true"])
        .file_size_limit(64 << 10)
        .output();
    let line = refused_with(&out, 4, "File too large");
    assert!(line.starts_with("flakehunt: error: --state: cannot copy"), "{line}");
    assert_eq!(std::fs::read(state.join("large.bin")).unwrap().len(), 300_000, "the state is untouched");
}

#[test]
fn a_configuration_or_hypotheses_file_follows_the_same_rule() {
    let t = tempfile::tempdir().unwrap();
    // A --config that does not exist is the user's to fix; one the system cannot read is not.
    let out = flakehunt().args(["--config", "no-such.toml", "profiles"]).current_dir(t.path()).output();
    refused_with(&out, 2, "no-such.toml:0: cannot read: No such file or directory");
    let out = flakehunt().args(["--config", "/proc/self/mem", "profiles"]).current_dir(t.path()).output();
    refused_with(&out, 4, "/proc/self/mem:0: cannot read: Input/output error");
    // The hypotheses file: damaged is 2, unreadable is 4.
    let file = t.path().join(".flakehunt/hypotheses.jsonl");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, b"\xff\n").unwrap();
    refused_with(
        &flakehunt().args(["hypo", "list"]).current_dir(t.path()).output(),
        2,
        "hypotheses.jsonl:1: not UTF-8 text",
    );
    std::fs::remove_file(&file).unwrap();
    std::fs::create_dir(&file).unwrap();
    refused_with(&flakehunt().args(["hypo", "list"]).current_dir(t.path()).output(), 2, "it is not a regular file");
    std::fs::remove_dir(&file).unwrap();
    std::os::unix::fs::symlink("/proc/self/mem", &file).unwrap();
    let out = flakehunt().args(["hypo", "list"]).current_dir(t.path()).output();
    refused_with(&out, 4, "cannot access .flakehunt/hypotheses.jsonl: Input/output error");
}
