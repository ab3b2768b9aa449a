//! End-to-end controls of the hang rule and of the hunt's verdict. Negative controls: clean
//! targets whose attempts are slow under some arm or mode but never fail, of which nothing may
//! be reproduced. Positive controls: a target that really hangs (no CPU, no output) is still
//! reproduced as a hang, and one that fails once is a rumour. Each fixture's behaviour depends
//! only on the cell and iteration flakehunt gives it, never on the machine's speed: a sleep uses
//! no CPU, a busy loop is always runnable.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::harness::{attempts_in, flakehunt, summary_of};
use serde_json::Value;

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn hunt(dir: &Path, args: &[&str], target: &[&str]) -> (Output, Value, Vec<Value>) {
    let out = flakehunt()
        .current_dir(dir)
        .args(["hunt", "--json", "-q", "--record", "rec"])
        .args(args)
        .arg("--")
        .args(target)
        .output();
    let mut attempts = attempts_in(&dir.join("rec"));
    attempts.sort_by_key(|a| a["id"].as_u64());
    let summary = summary_of(&out);
    (out, summary, attempts)
}

fn outcomes(attempts: &[Value]) -> Vec<(String, String, String)> {
    attempts
        .iter()
        .map(|a| (a["cell"].as_str().unwrap().to_owned(), a["mode"].to_string(), a["outcome"].to_string()))
        .collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_cold_start_much_slower_than_warm_attempts_is_never_taken_for_a_hang() {
    // A clean Python script behind a module that takes 1.5 s (asleep) to import: warm attempts
    // (forks of a parent that imported it) take milliseconds, cold ones (the jitter arms, whose
    // preloaded library a fork cannot carry) take seconds. A limit from the warm attempts would
    // end every cold one as a hang.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("slow_start.py"), "import time\ntime.sleep(1.5)\nREADY = True\n").unwrap();
    // Each arm's warm parent imports it once: the budget leaves time for a dozen arms.
    std::fs::write(dir.path().join("clean.py"), "import slow_start\nassert slow_start.READY\n").unwrap();
    let (out, summary, attempts) = hunt(dir.path(), &["--budget", "40s", "--seed", "1"], &["python3", "clean.py"]);
    assert_eq!(out.status.code(), Some(0), "{}\n{:?}", stderr(&out), outcomes(&attempts));
    assert_eq!(summary["verdict"], "not-reproduced", "{summary:#}");
    assert!(attempts.iter().all(|a| a["outcome"] == "pass" || a["outcome"] == "slow"), "{:?}", outcomes(&attempts));
    // The last calibration attempt started cold and measured what a cold start adds.
    let cold_start = &summary["details"]["calibration"]["cold_start"]["seconds"];
    assert!(cold_start.as_f64().is_some_and(|s| s >= 1.4), "{:#}", summary["details"]["calibration"]);
    // Cold attempts ran after calibration, and none was judged by a limit taken from warm ones.
    let cold: Vec<&Value> = attempts.iter().filter(|a| a["mode"] == "cold" && a["phase"] != "calibrate").collect();
    assert!(!cold.is_empty(), "{:?}", outcomes(&attempts));
    for a in cold {
        if let Some(limit) = a["hang"]["limit"].as_f64() {
            assert!(limit >= 20.0 * 1.4, "{a:#}");
        }
    }
}

#[test]
fn arms_that_slow_the_target_without_hanging_it_end_slow_and_get_longer_limits() {
    // The plain target takes milliseconds; under every arm it works (busy) for 2-3 s, past the
    // second its limit allows when taken from the baseline. Slow is no evidence: nothing is
    // reproduced, and an arm's next limit is at least four times its slow attempt.
    let dir = tempfile::tempdir().unwrap();
    let fx = script(
        dir.path(),
        "busy.sh",
        "#!/bin/sh\n[ \"$FLAKEHUNT_CELL\" = default ] && exit 0\nend=$(( $(date +%s) + 3 ))\nwhile [ \"$(date +%s)\" -lt $end ]; do :; done\nexit 0\n",
    );
    let (out, summary, attempts) = hunt(dir.path(), &["--budget", "20s", "--seed", "2"], &[fx.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}\n{:?}", stderr(&out), outcomes(&attempts));
    assert_eq!(summary["verdict"], "not-reproduced");
    assert!(summary["reproduction"].is_null(), "{summary:#}");
    assert!(attempts.iter().all(|a| a["outcome"] == "pass" || a["outcome"] == "slow"), "{:?}", outcomes(&attempts));
    let slow: Vec<&Value> = attempts.iter().filter(|a| a["outcome"] == "slow" && a["hang"]["idle"] == false).collect();
    assert!(!slow.is_empty(), "{:?}", outcomes(&attempts));
    // Decisions lag by at most the attempts that may run at once: twice the CPUs.
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("rec/manifest.json")).unwrap()).unwrap();
    let lag = 2 * manifest["extra"]["bandit"]["cpus"].as_u64().unwrap();
    for s in &slow {
        // The arm's next attempt chosen once the slow one was known, if it ran, had a longer limit.
        let known = s["id"].as_u64().unwrap() + lag;
        let next = attempts.iter().find(|a| a["cell"] == s["cell"] && a["id"].as_u64() >= Some(known));
        if let Some(limit) = next.and_then(|n| n["hang"]["limit"].as_f64()) {
            assert!(limit >= 4.0 * s["seconds"].as_f64().unwrap() - 1e-6, "{s:#}\n{next:#?}");
        }
    }
    // Slow attempts are counted apart from the evidence.
    let cell = summary["cells"].as_array().unwrap().iter().find(|c| c["slow"].as_u64() > Some(0)).unwrap();
    assert_eq!(cell["outcomes"]["slow"], cell["slow"]);
    assert_eq!(cell["failures"], 0);
    let conclusion = summary["details"]["conclusion"].as_str().unwrap();
    assert!(conclusion.contains("ended while still at work (slow, no evidence either way)"), "{conclusion}");
}

#[test]
fn a_target_that_really_hangs_under_one_arm_is_still_reproduced_as_a_hang() {
    // Under the noise arms the target blocks forever, using no CPU and printing nothing. Its
    // first hang runs to the much longer limit before it counts; the next ones count at the limit.
    let dir = tempfile::tempdir().unwrap();
    let fx = script(
        dir.path(),
        "hangs.sh",
        "#!/bin/sh\ncase \"$FLAKEHUNT_CELL\" in noisy=*) echo waiting; exec sleep 100000 ;; esac\nexit 0\n",
    );
    let (out, summary, attempts) = hunt(dir.path(), &["--seed", "3"], &[fx.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}\n{:?}", stderr(&out), outcomes(&attempts));
    assert_eq!(summary["verdict"], "condition-sensitive", "{summary:#}");
    let arm = summary["reproduction"]["cell"].as_str().unwrap();
    assert!(arm.starts_with("noisy="), "{summary:#}");
    let hangs: Vec<&Value> = attempts.iter().filter(|a| a["cell"] == arm).collect();
    assert!(hangs.iter().all(|a| a["outcome"] == "timeout" && a["hang"]["idle"] == true), "{hangs:#?}");
    let (first, second) = (hangs[0], hangs[1]);
    let limit = first["hang"]["limit"].as_f64().unwrap();
    assert!(first["hang"]["confirm_limit"].as_f64().unwrap() >= 9.0 * limit, "{first:#}");
    assert!(first["seconds"].as_f64().unwrap() >= first["hang"]["confirm_limit"].as_f64().unwrap() - 0.05);
    assert!(second["hang"]["confirm_limit"].is_null(), "{second:#}");
    let conclusion = summary["details"]["conclusion"].as_str().unwrap();
    assert!(conclusion.starts_with("reproduced twice in ") && conclusion.contains(arm), "{conclusion}");
}

#[test]
fn a_failure_seen_once_is_a_rumour_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let fx = script(
        dir.path(),
        "once.sh",
        "#!/bin/sh\n[ \"$FLAKEHUNT_CELL\" = default ] && [ \"$FLAKEHUNT_ITERATION\" = 3 ] && { echo boom >&2; exit 1; }\nexit 0\n",
    );
    let (out, summary, attempts) = hunt(dir.path(), &["--budget", "4s", "--seed", "4"], &[fx.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}\n{:?}", stderr(&out), outcomes(&attempts));
    assert_eq!(summary["verdict"], "not-reproduced");
    assert_eq!(summary["failures"], 1);
    let conclusion = summary["details"]["conclusion"].as_str().unwrap();
    assert!(conclusion.contains("failed once (a rumour, never twice) under default"), "{conclusion}");
}
