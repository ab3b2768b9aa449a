//! The code a verification verifies, as git sees it where the verification runs: the commit
//! checked out and the uncommitted changes to tracked files, digested at the start and checked
//! again by `--resume`, so that one verdict never pools attempts of two versions of the code (a
//! Python target is read afresh by every attempt). Main functions: [`fingerprint`],
//! [`check_unchanged`].

use std::path::Path;
use std::process::{Command, Stdio};

use super::VerifyOptions;
use crate::spec::HuntError;

/// The digest of the code in `dir`'s git work tree (`blake3:HEX` over the commit's id and the
/// binary diff of the tracked files against it); none when `dir` is in no work tree or git is
/// missing. Untracked files are left out: a target's own outputs (`__pycache__`, a scratch
/// file, the verification's record) would otherwise change it between two runs.
pub fn fingerprint(dir: &Path) -> Option<String> {
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()?;
        out.status.success().then_some(out.stdout)
    };
    let head = git(&["rev-parse", "--verify", "HEAD"])?;
    let diff = git(&["diff", "HEAD", "--binary", "--no-ext-diff", "--no-textconv", "--no-color"])?;
    let mut hasher = blake3::Hasher::new();
    for part in [&head, &diff] {
        hasher.update(&(part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    Some(format!("blake3:{}", hasher.finalize().to_hex()))
}

/// Refuses to resume the verification `options` describe, run in `dir`, when the code there
/// is no longer the code it started on.
pub fn check_unchanged(options: &VerifyOptions, dir: &Path, record: &Path) -> Result<(), HuntError> {
    let Some(then) = &options.code else { return Ok(()) };
    if fingerprint(dir).as_ref() == Some(then) {
        return Ok(());
    }
    Err(HuntError::usage(format!(
        "{} cannot be resumed: the code in {} changed since it started (git's commit or the uncommitted changes to tracked files differ), and one verdict must come from one version of it; start a new verification: flakehunt verify {}",
        record.display(),
        dir.display(),
        options.record.display()
    )))
}
