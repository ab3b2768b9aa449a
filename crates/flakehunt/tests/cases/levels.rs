//! End-to-end tests of the levelled profile names (`pause=LEN/GAP`, `noisy=xK`, `copies=N`) in
//! `sweep --profiles`.

use crate::harness::{attempts_in, cell, flakehunt, summary_of};

#[test]
fn levelled_names_run_as_cells() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("rec");
    let out = flakehunt()
        .args(["sweep", "--profiles", "default,pause=500us/2ms,noisy=x1,copies=2", "--runs", "2", "--seed", "3"])
        .args(["--json", "--quiet", "--record"])
        .arg(&record)
        .args(["--", "sleep", "0.3"])
        .output();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let summary = summary_of(&out);
    // Gaps of at most 2 ms over 0.3 s of sleep: the pauses land (sub-millisecond ones).
    let paused: Vec<u64> = attempts_in(&record)
        .iter()
        .filter(|a| a["cell"] == "pause=500us/2ms")
        .map(|a| a["effect"]["pauses"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(paused.len(), 2);
    assert!(paused.iter().all(|&n| n > 0), "{paused:?}");
    assert_eq!(cell(&summary, "pause=500us/2ms")["inert"], false);
    assert!(attempts_in(&record)
        .iter()
        .any(|a| a["cell"] == "noisy=x1" && a["effect"]["noise_cpu_seconds"].is_number()));
    // A sweep runs the copies together (tests/cases/sweep_copies.rs).
    let copies = cell(&summary, "copies=2");
    assert_eq!(copies["inert"], false, "{copies}");
    assert_eq!(copies["effect"]["copies_at_once"], 2, "{copies}");
}

#[test]
fn a_level_out_of_range_is_an_unknown_profile() {
    let out = flakehunt().args(["sweep", "--profiles", "default,pause=10us/1ms", "--", "true"]).output();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown profile 'pause=10us/1ms'"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}
