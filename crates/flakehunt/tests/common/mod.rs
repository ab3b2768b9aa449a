//! What the integration tests of the binary share: the binary itself, the summary a `--json`
//! hunt printed, the attempts it recorded, and one cell of a summary.

// Each test binary includes this module and uses only part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The `flakehunt` binary under test.
pub fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("flakehunt")
}

/// The summary a `--json` hunt printed on stdout; without one, the test fails showing stderr.
pub fn summary_of(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON summary ({e}); stderr: {}", String::from_utf8_lossy(&out.stderr)))
}

/// Every line of `attempts.jsonl` in the record `record`, parsed.
pub fn attempts_in(record: &Path) -> Vec<Value> {
    std::fs::read_to_string(record.join("attempts.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The summary's entry for cell `name`.
pub fn cell<'a>(summary: &'a Value, name: &str) -> &'a Value {
    summary["cells"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("no cell {name}"))
}
