//! A builder of small, fixed run records for renderer tests: a manifest and attempts with fixed
//! ids, times and durations, written to a temporary directory and read back through the same
//! `Record` and `summarize` as `flakehunt report`.

#![allow(dead_code)]

use flakehunt_core::analysis::{signature, Summary};
use flakehunt_core::exec::LeakedProcess;
use flakehunt_core::plan::{CellSpec, Settings, Target};
use flakehunt_core::profile::{BuiltinProfiles, Profile};
use flakehunt_core::record::{Attempt, Effect, Kind, Manifest, Outcome, Record, Recorder, FORMAT_VERSION};
use flakehunt_core::render::{RenderContext, FAILING_PER_CELL};

/// A record under construction.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub manifest: Manifest,
    pub attempts: Vec<Attempt>,
    pub snapshot: Option<serde_json::Value>,
    /// The verdict the matrix and fire analyses will give (the foundation's analysis only knows
    /// sweeps), as machine name and words.
    pub verdict: Option<(&'static str, &'static str)>,
    /// JSONL side files written into the record.
    pub side_files: Vec<(&'static str, Vec<serde_json::Value>)>,
}

impl Fixture {
    pub fn new(kind: Kind, cells: Vec<CellSpec>, runs: u64) -> Self {
        let manifest = Manifest {
            format_version: FORMAT_VERSION,
            tool_version: "0.0.0-test".into(),
            kind,
            run_id: "20240501T120000-beef".into(),
            target: Target::argv(vec!["./ledger-test".into(), "--case".into(), "transfer".into()]),
            plan: Settings { runs, jobs: 2, ..Settings::default() },
            cells,
            seed: 42,
            host: "build-host".into(),
            started_at: "2024-05-01T12:00:00.000Z".into(),
            shard: None,
            oracle: None,
            extra: Default::default(),
            redacted: true,
            withheld: false,
        };
        Self {
            dir: tempfile::tempdir().unwrap(),
            manifest,
            attempts: Vec::new(),
            snapshot: None,
            verdict: None,
            side_files: Vec::new(),
        }
    }

    /// A sweep over built-in profiles.
    pub fn sweep(profiles: &[&str], runs: u64) -> Self {
        let builtins = Profile::builtins();
        let cells = profiles
            .iter()
            .map(|name| {
                // Profiles other issues add (pause, noisy...) may not be built in yet: a plain
                // profile of that name renders the same.
                let profile = builtins.iter().find(|p| p.name == *name).cloned().unwrap_or_else(|| Profile {
                    name: (*name).into(),
                    summary: "test profile".into(),
                    knobs: flakehunt_core::profile::Knobs::default(),
                });
                CellSpec::for_profile(profile)
            })
            .collect();
        Self::new(Kind::Sweep, cells, runs)
    }

    /// Adds an attempt of `cell` with the next id and the cell's next iteration.
    pub fn attempt(&mut self, cell: &str, outcome: Outcome, seconds: f64, stderr: &str) -> &mut Attempt {
        let id = self.attempts.len() as u64;
        let iteration = self.attempts.iter().filter(|a| a.cell == cell).count() as u64 + 1;
        let (exit_code, signal) = match outcome {
            Outcome::Pass | Outcome::Leak | Outcome::WrongOutput => (Some(0), None),
            Outcome::Fail => (Some(1), None),
            Outcome::Crash => (None, Some(11)),
            Outcome::Timeout | Outcome::Slow => (None, Some(15)),
            Outcome::SpawnError => (None, None),
        };
        let signature = outcome.is_failure().then(|| signature::of(outcome, exit_code, signal, stderr));
        self.attempts.push(Attempt {
            id,
            cell: cell.into(),
            iteration,
            started_at: format!("2024-05-01T12:{:02}:{:02}.000Z", id / 60, id % 60),
            seconds,
            outcome,
            exit_code,
            signal,
            termination: None,
            stdout_tail: format!("running case transfer #{iteration}\n"),
            stderr_tail: stderr.into(),
            stdout_bytes: 24,
            stderr_bytes: stderr.len() as u64,
            stdout_hash: None,
            oracle: None,
            leaked: if outcome == Outcome::Leak {
                vec![LeakedProcess { pid: 4242, command: "sleep".into() }]
            } else {
                Vec::new()
            },
            effect: Effect::default(),
            signature,
            worker: None,
            level: None,
            phase: None,
            log: (outcome != Outcome::Pass).then(|| format!("logs/{id}")),
            load: Some(0.5),
            error: None,
            cpu_seconds: None,
            suite: None,
            mode: Default::default(),
            hidden: Vec::new(),
            rerun: None,
            hang: None,
        });
        self.attempts.last_mut().unwrap()
    }

    /// Writes the record and reads it back: summary and context.
    pub fn build(&self) -> (Summary, RenderContext, Record) {
        let dir = self.dir.path().join("record");
        if !dir.exists() {
            let mut rec = Recorder::create(&dir, &self.manifest).unwrap();
            for a in &self.attempts {
                rec.append(a, a.stdout_tail.as_bytes(), a.stderr_tail.as_bytes()).unwrap();
            }
            for (name, lines) in &self.side_files {
                for line in lines {
                    rec.append_line(name, line).unwrap();
                }
            }
            if let Some(s) = &self.snapshot {
                rec.write_document("snapshot.json", s).unwrap();
            }
        }
        let record = Record::open(&dir).unwrap();
        let mut summary = flakehunt_core::kind::summarize(&record).unwrap();
        if let Some((verdict, text)) = self.verdict {
            summary.verdict = verdict.into();
            summary.verdict_text = text.into();
        }
        let ctx = RenderContext::from_record(&record, FAILING_PER_CELL).unwrap();
        (summary, ctx, record)
    }
}

pub const ASSERT_TAIL: &str = "thread 'transfer' panicked at src/ledger.rs:88:9:\n\x1b[31massertion `left == right` failed\x1b[0m\x01\n  left: 90\n right: 100\nnote: run with `RUST_BACKTRACE=1` for a backtrace\n";

pub fn snapshot_json() -> serde_json::Value {
    serde_json::json!({
        "hostname": "build-host",
        "os": "Debian GNU/Linux 12 (bookworm)",
        "kernel": "Linux 6.1.0 #1 SMP",
        "arch": "x86_64",
        "cpus_online": 8,
        "cpus_allowed": "0-7",
        "cpu_model": "Test CPU @ 3.00GHz",
        "memory_total_bytes": 17179869184u64,
        "memory_available_bytes": 8589934592u64,
        "load_average": [0.5, 0.4, 0.3],
        "rlimits": {"nofile": {"soft": 1024, "hard": 524288}, "nproc": {"soft": null, "hard": null}},
        "locale": {"lang": "C.UTF-8", "lc_all": null, "lc_ctype": null},
        "timezone": "Etc/UTC",
        "cgroup": {"membership": ["0::/user.slice"], "v1_controllers": [], "v2_mount": "/sys/fs/cgroup"},
        "tools": {"cargo --version": "cargo 1.85.0", "python3 --version": null},
        "env": {"HOME": "/home/ci", "GITHUB_TOKEN": "<redacted>", "PATH": "/usr/bin:/bin"}
    })
}

/// A sweep of three profiles: one-core brings the failure out and is slower when it fails,
/// pause adds a crash and a timeout, default has a leak.
pub fn sweep() -> Fixture {
    let mut f = Fixture::sweep(&["default", "one-core", "pause"], 40);
    for i in 1..=40u64 {
        let base = 0.040 + (i % 7) as f64 * 0.004;
        if i == 29 {
            f.attempt("default", Outcome::Fail, base, ASSERT_TAIL);
        } else if i == 7 {
            f.attempt("default", Outcome::Leak, base, "");
        } else {
            f.attempt("default", Outcome::Pass, base, "");
        }
        if i % 3 == 0 {
            f.attempt("one-core", Outcome::Fail, 0.300 + (i % 3) as f64 * 0.05, ASSERT_TAIL).effect.cpus =
                Some("0".into());
        } else {
            f.attempt("one-core", Outcome::Pass, base * 1.5, "").effect.cpus = Some("0".into());
        }
        match i {
            5 => f.attempt("pause", Outcome::Crash, 0.120, "Segmentation fault (core dumped)\n"),
            17 => f.attempt("pause", Outcome::Timeout, 10.0, "waiting for lock <ledger>...\n"),
            _ => f.attempt("pause", Outcome::Pass, base * 2.0, ""),
        };
    }
    f.snapshot = Some(snapshot_json());
    f
}

/// A 3 x 2 matrix where the failure follows LC_ALL=C with 4 workers.
pub fn matrix() -> Fixture {
    use flakehunt_core::kind::matrix::plan::{grid, Dimension, DimensionKind};
    let dimensions = vec![
        Dimension {
            name: "LC_ALL".into(),
            kind: DimensionKind::Env,
            values: vec!["C.UTF-8".into(), "C".into(), "POSIX".into()],
        },
        Dimension { name: "workers".into(), kind: DimensionKind::Placeholder, values: vec!["1".into(), "4".into()] },
    ];
    let cells = grid(&dimensions);
    let mut f = Fixture::new(Kind::Matrix, cells.clone(), 12);
    f.manifest.extra =
        serde_json::from_value(serde_json::json!({ "dimensions": dimensions, "confirm": 0, "clean_room": null }))
            .unwrap();
    for i in 1..=12u64 {
        for c in &cells {
            let (lc, w) = (c.overlay[0].value_text(), c.overlay[1].value_text());
            let fails = (lc == "C" && w == "4" && i % 2 == 0) || (lc == "POSIX" && w == "4" && i == 6);
            if fails {
                f.attempt(&c.name, Outcome::Fail, 0.8, "Error: invalid byte sequence in amount '1\u{a0}000'\n");
            } else {
                f.attempt(&c.name, Outcome::Pass, 0.5 + (i % 5) as f64 * 0.05, "");
            }
        }
    }
    f.snapshot = Some(snapshot_json());
    f
}

/// A fire ladder: 2x10 accepted, 8x10 rejected for silent state corruption, 20x10 not run.
pub fn fire() -> Fixture {
    let cells = ["reference-10", "2x10", "8x10"]
        .iter()
        .map(|n| CellSpec { name: (*n).into(), profile: None, overlay: vec![] })
        .collect();
    let mut f = Fixture::new(Kind::Fire, cells, 10);
    f.manifest.extra = serde_json::from_value(serde_json::json!({
        "ladder": [{"workers": 2, "runs": 10}, {"workers": 8, "runs": 10}, {"workers": 20, "runs": 10}],
        "state": "app"
    }))
    .unwrap();
    for (level, (cell, workers)) in [("reference-10", 1u32), ("2x10", 2), ("8x10", 8)].into_iter().enumerate() {
        for i in 0..10u32 {
            let a = f.attempt(cell, Outcome::Pass, 0.2 + f64::from(i % 4) * 0.02, "");
            a.level = Some(level as u32);
            a.worker = Some(i % workers);
        }
    }
    f.side_files.push((
        "levels.jsonl",
        vec![
            serde_json::json!({"level": 1, "cell": "2x10", "workers": 2, "runs": 10, "reference": "reference-10",
                "findings": [], "seconds": 1.5}),
            serde_json::json!({"level": 2, "cell": "8x10", "workers": 8, "runs": 10, "reference": "reference-10",
                "findings": [
                    {"kind": "lost", "path": "ledger.db:entries", "count": 3, "detail": "(id=<n>, amount=10)"},
                    {"kind": "torn", "path": "audit.log", "count": 1, "detail": "\"deposit 10deposit 20\""}
                ], "seconds": 2.5}),
        ],
    ));
    f
}

/// The end of a pytest run's stdout when a test failed (pytest writes nothing to stderr).
pub const PYTEST_TAIL: &str = "tests/test_ledger.py .F.\n=================================== FAILURES ===================================\n_________________________________ test_transfer ________________________________\n\n    def test_transfer():\n>       assert balance() == 100\nE       assert 90 == 100\n\ntests/test_ledger.py:12: AssertionError\n=========================== short test summary info ============================\nFAILED tests/test_ledger.py::test_transfer - assert 90 == 100\n";

/// An adaptive hunt: five calibration attempts, arms tried one after another, `noisy=x1`
/// failing twice (pytest's report on stdout, stderr empty), then confirmation against the
/// baseline that singles it out (7/14 against 0/14).
pub fn hunt() -> Fixture {
    let mut f = Fixture::new(Kind::Adaptive, vec![CellSpec::for_profile(Profile::default_profile())], 100);
    f.manifest.extra =
        serde_json::from_value(serde_json::json!({"bandit": {"seed": 42, "cpus": 2, "runtime": "python"}})).unwrap();
    // copies=4 and noisy=x2 never run: levels the hunt did not open.
    let arms = ["pause=200us/1ms", "noisy=x1", "copies=2", "cpu-starved=10", "copies=4", "noisy=x2"];
    let cells: Vec<serde_json::Value> = arms
        .iter()
        .map(|name| {
            let profile = Profile::builtin(name).unwrap_or_else(|| panic!("{name} is not a levelled profile"));
            serde_json::to_value(CellSpec::for_profile(profile)).unwrap()
        })
        .collect();
    f.side_files.push(("cells.jsonl", cells));
    let pytest_fail = |f: &mut Fixture, cell: &str, phase: Option<&str>| {
        let a = f.attempt(cell, Outcome::Fail, 0.05, "");
        a.stdout_tail = PYTEST_TAIL.into();
        a.stdout_bytes = PYTEST_TAIL.len() as u64;
        a.signature = Some("exit 1: test_transfer: assert 90 == 100".into());
        a.phase = phase.map(str::to_owned);
    };
    for _ in 0..5 {
        f.attempt("default", Outcome::Pass, 0.04, "").phase = Some("calibrate".into());
    }
    for cell in ["pause=200us/1ms", "noisy=x1", "pause=200us/1ms", "noisy=x1", "cpu-starved=10"] {
        f.attempt(cell, Outcome::Pass, 0.06, "");
    }
    f.attempt("copies=2", Outcome::Pass, 0.05, "");
    pytest_fail(&mut f, "noisy=x1", None);
    f.attempt("default", Outcome::Pass, 0.04, "");
    pytest_fail(&mut f, "noisy=x1", None);
    for i in 0..14 {
        if i % 2 == 0 {
            pytest_fail(&mut f, "noisy=x1", Some("confirm"));
        } else {
            f.attempt("noisy=x1", Outcome::Pass, 0.05, "").phase = Some("confirm".into());
        }
        f.attempt("default", Outcome::Pass, 0.04, "").phase = Some("confirm".into());
    }
    f.snapshot = Some(snapshot_json());
    f
}
