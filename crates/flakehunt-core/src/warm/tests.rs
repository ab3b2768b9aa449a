//! Warm attempts against real python3 processes (python3 with pytest is installed in CI).

use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};

use super::*;
use crate::exec::{Cancel, Execution, Limit, Limits, Resource};

const PYTEST_FLAGS: [&str; 9] =
    ["-q", "-p", "no:randomly", "-p", "no:rerunfailures", "-p", "no:flaky", "-p", "no:cacheprovider"];

fn pytest_launch(dir: &Path, iteration: u64, nodes: &[&str]) -> Launch {
    let args: Vec<OsString> = ["-m", "pytest"].iter().chain(&PYTEST_FLAGS).chain(nodes).map(OsString::from).collect();
    Launch {
        program: "python3".into(),
        args,
        env: attempt_env(iteration),
        cwd: Some(dir.to_owned()),
        ..Default::default()
    }
}

fn script_launch(dir: &Path, script: &str, iteration: u64) -> Launch {
    Launch {
        program: "python3".into(),
        args: vec![script.into(), "an-arg".into()],
        env: attempt_env(iteration),
        cwd: Some(dir.to_owned()),
        ..Default::default()
    }
}

fn attempt_env(iteration: u64) -> Vec<(OsString, Option<OsString>)> {
    vec![
        ("FLAKEHUNT_RUN_ID".into(), Some("warmtest".into())),
        ("FLAKEHUNT_ITERATION".into(), Some(iteration.to_string().into())),
        ("FLAKEHUNT_ATTEMPT".into(), Some(format!("warmtest.{iteration}").into())),
    ]
}

fn marker(iteration: u64) -> String {
    format!("FLAKEHUNT_ATTEMPT=warmtest.{iteration}")
}

fn limits() -> Limits {
    Limits { timeout: Duration::from_secs(120), ..Default::default() }
}

fn run_warm(parent: &WarmParent<'_>, launch: &Launch, iteration: u64) -> Execution {
    let cancel = Cancel::new().unwrap();
    let running = parent.start_attempt(launch, marker(iteration)).unwrap();
    running.wait(&limits(), &cancel)
}

fn run_cold(tree: &ProcessTree, launch: &Launch, iteration: u64) -> Execution {
    let cancel = Cancel::new().unwrap();
    Running::spawn(launch, tree, marker(iteration)).unwrap().wait(&limits(), &cancel)
}

fn stdout(ex: &Execution) -> String {
    String::from_utf8_lossy(ex.stdout.head()).into_owned()
}

fn stderr(ex: &Execution) -> String {
    String::from_utf8_lossy(ex.stderr.head()).into_owned()
}

/// Whether a process is gone (or a zombie nobody has reaped yet: it runs no code any more).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Polls until `pid` is gone, for at most a minute (a bound, not a timing assertion).
fn wait_gone(pid: u32) -> bool {
    let end = Instant::now() + Duration::from_secs(60);
    while Instant::now() < end {
        if gone(pid) {
            return true;
        }
        std::thread::yield_now();
        std::thread::sleep(Duration::from_millis(10));
    }
    gone(pid)
}

const FIXTURE: &str = r#"
import os

def test_every_third_iteration_fails():
    assert int(os.environ["FLAKEHUNT_ITERATION"]) % 3 != 0

def test_passes():
    pass

def test_sees_the_overlay(capsys):
    with capsys.disabled():
        print("overlay=%s iteration=%s" % (os.environ.get("OVERLAY"), os.environ["FLAKEHUNT_ITERATION"]))
    assert os.environ.get("OVERLAY") == "yes"
"#;

#[test]
fn a_fork_reports_the_same_results_as_a_cold_attempt_on_a_deterministic_fixture() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("test_fixture.py"), FIXTURE).unwrap();
    let tree = ProcessTree::default();
    let nodes = ["test_fixture.py::test_every_third_iteration_fails", "test_fixture.py::test_passes"];
    let parent = WarmParent::start(&pytest_launch(dir.path(), 0, &nodes), &tree, &WarmOptions::default()).unwrap();
    for iteration in 1..=4 {
        let launch = pytest_launch(dir.path(), iteration, &nodes);
        let warm = run_warm(&parent, &launch, iteration);
        let cold = run_cold(&tree, &launch, iteration);
        let expected = if iteration % 3 == 0 { 1 } else { 0 };
        assert_eq!(warm.status, Status::Exited(expected), "{}{}", stdout(&warm), stderr(&warm));
        assert_eq!(warm.status, cold.status, "warm: {}\ncold: {}", stdout(&warm), stdout(&cold));
        assert!(warm.timed_out.is_none() && warm.leaked.is_empty());
        // The same summary line as cold, from the same capture code.
        let summary =
            |ex: &Execution| stdout(ex).lines().last().unwrap_or_default().split(" in ").next().unwrap().to_owned();
        assert_eq!(summary(&warm), summary(&cold));
        assert!(warm.cpu_seconds.is_some());
    }
    assert_eq!(parent.served(), 4);
}

#[test]
fn the_environment_overlay_and_flakehunt_iteration_reach_the_test() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("test_fixture.py"), FIXTURE).unwrap();
    let tree = ProcessTree::default();
    let nodes = ["test_fixture.py::test_sees_the_overlay"];
    // The parent itself has no OVERLAY: only the attempt's environment does.
    let parent = WarmParent::start(&pytest_launch(dir.path(), 0, &nodes), &tree, &WarmOptions::default()).unwrap();
    let mut launch = pytest_launch(dir.path(), 7, &nodes);
    launch.env.push(("OVERLAY".into(), Some("yes".into())));
    let ex = run_warm(&parent, &launch, 7);
    assert_eq!(ex.status, Status::Exited(0), "{}{}", stdout(&ex), stderr(&ex));
    assert!(stdout(&ex).contains("overlay=yes iteration=7"), "{}", stdout(&ex));
    // Without the overlay the same test fails: the variable is per attempt, not the parent's.
    let ex = run_warm(&parent, &pytest_launch(dir.path(), 8, &nodes), 8);
    assert_eq!(ex.status, Status::Exited(1), "{}", stdout(&ex));
    assert!(stdout(&ex).contains("overlay=None iteration=8"), "{}", stdout(&ex));
    // A variable of the parent's that an attempt removes is gone in its fork.
    let mut with_overlay = pytest_launch(dir.path(), 0, &nodes);
    with_overlay.env.push(("OVERLAY".into(), Some("yes".into())));
    let parent = WarmParent::start(&with_overlay, &tree, &WarmOptions::default()).unwrap();
    let mut removed = pytest_launch(dir.path(), 9, &nodes);
    removed.env.push(("OVERLAY".into(), None));
    let ex = run_warm(&parent, &removed, 9);
    assert!(stdout(&ex).contains("overlay=None iteration=9"), "{}", stdout(&ex));
}

const PROBE: &str = r#"
import os, random, resource, sys
print("pid", os.getpid(), "pgid", os.getpgid(0))
with open("/proc/self/status") as f:
    print([l.strip() for l in f if l.startswith("Cpus_allowed_list")][0])
print("nofile", resource.getrlimit(resource.RLIMIT_NOFILE)[0])
print("nice", os.getpriority(os.PRIO_PROCESS, 0))
print("random", random.random())
print("argv", sys.argv)
print("cwd", os.getcwd())
print("iteration", os.environ["FLAKEHUNT_ITERATION"])
sys.exit(int(os.environ.get("EXIT_WITH", "0")))
"#;

fn line<'a>(out: &'a str, key: &str) -> &'a str {
    out.lines().find(|l| l.starts_with(key)).unwrap_or_else(|| panic!("no {key} in {out}"))
}

#[test]
fn a_scripts_fork_gets_its_affinity_rlimit_nice_group_and_a_fresh_random_seed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("probe.py"), PROBE).unwrap();
    let tree = ProcessTree::default();
    let parent = WarmParent::start(&script_launch(dir.path(), "probe.py", 0), &tree, &WarmOptions::default()).unwrap();
    let allowed = rustix::thread::sched_getaffinity(None).unwrap();
    let cpu = (0..rustix::thread::CpuSet::MAX_CPU).find(|&c| allowed.is_set(c)).unwrap();

    let mut launch = script_launch(dir.path(), "probe.py", 1);
    launch.setup.cpus = Some(vec![cpu]);
    launch.setup.rlimits = vec![Limit::with_soft(Resource::Nofile, Some(64))];
    launch.setup.nice = Some(7);
    launch.env.push(("EXIT_WITH".into(), Some("3".into())));
    let first = run_warm(&parent, &launch, 1);
    let out = stdout(&first);
    assert_eq!(first.status, Status::Exited(3), "{out}{}", stderr(&first));
    assert_eq!(line(&out, "Cpus_allowed_list").split_whitespace().last(), Some(cpu.to_string().as_str()), "{out}");
    assert_eq!(line(&out, "nofile"), "nofile 64");
    assert_eq!(line(&out, "nice"), "nice 7");
    let ids: Vec<&str> = line(&out, "pid").split_whitespace().collect();
    assert_eq!(ids[1], ids[3], "the fork leads its own process group: {out}");
    assert_ne!(ids[1], parent.pid().to_string());
    assert_eq!(line(&out, "argv"), "argv ['probe.py', 'an-arg']");
    assert_eq!(line(&out, "iteration"), "iteration 1");
    assert_eq!(line(&out, "cwd"), format!("cwd {}", dir.path().canonicalize().unwrap().display()));

    // A second fork, without the settings: the parent's own limits, and other random numbers.
    let second = run_warm(&parent, &script_launch(dir.path(), "probe.py", 2), 2);
    let out2 = stdout(&second);
    assert_eq!(second.status, Status::Exited(0), "{out2}");
    assert_ne!(line(&out, "random"), line(&out2, "random"), "random is re-seeded in each fork");
    assert_ne!(line(&out2, "nofile"), "nofile 64");
    assert_eq!(line(&out2, "iteration"), "iteration 2");

    // A setting the kernel refuses fails the start with its cause, as a cold start does.
    let mut refused = script_launch(dir.path(), "probe.py", 3);
    refused.setup.rlimits = vec![Limit { resource: Resource::Nofile, soft: Some(10), hard: Some(5) }];
    match parent.start_attempt(&refused, marker(3)) {
        Err(WarmError::Start(e)) => assert_eq!(e.raw_os_error(), Some(libc::EINVAL)),
        other => panic!("expected a refused start, got {:?}", other.err()),
    }
    // What only an exec applies is refused for the attempt, which runs cold.
    let mut preload = script_launch(dir.path(), "probe.py", 4);
    preload.env.push(("LD_PRELOAD".into(), Some("/nonexistent.so".into())));
    match parent.start_attempt(&preload, marker(4)) {
        Err(WarmError::NotServed(what)) => assert_eq!(what, "LD_PRELOAD"),
        other => panic!("expected not served, got {:?}", other.err()),
    }
    // The parent still serves after both.
    assert_eq!(run_warm(&parent, &script_launch(dir.path(), "probe.py", 5), 5).status, Status::Exited(0));
}

const HANGS: &str = r#"
import subprocess, sys, time
child = subprocess.Popen(["sleep", "1000"])
print("grandchild", child.pid, flush=True)
while True:
    time.sleep(1000)
"#;

#[test]
fn a_timeout_kills_the_forks_process_group_with_what_it_started() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hangs.py"), HANGS).unwrap();
    let tree = ProcessTree::default();
    let parent = WarmParent::start(&script_launch(dir.path(), "hangs.py", 0), &tree, &WarmOptions::default()).unwrap();
    let cancel = Cancel::new().unwrap();
    let running = parent.start_attempt(&script_launch(dir.path(), "hangs.py", 1), marker(1)).unwrap();
    let child = running.pid();
    let limits = Limits { timeout: Duration::from_secs(2), grace: Duration::from_secs(2), ..Default::default() };
    let ex = running.wait(&limits, &cancel);
    assert!(ex.timed_out.is_some(), "{}", stdout(&ex));
    assert_eq!(ex.status, Status::Signaled(libc::SIGTERM));
    let grandchild: u32 = line(&stdout(&ex), "grandchild").split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(wait_gone(child), "the fork {child} is still alive");
    assert!(wait_gone(grandchild), "its grandchild {grandchild} is still alive");
    // The parent is untouched and serves the next attempt.
    assert!(!gone(parent.pid()));
}

#[test]
fn a_module_that_starts_a_thread_at_import_makes_warm_mode_refuse_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("threaded.py"),
        "import threading, time\nthreading.Thread(target=time.sleep, args=(1000,), daemon=True).start()\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("test_threaded.py"), "import threaded\n\ndef test_x():\n    pass\n").unwrap();
    let tree = ProcessTree::default();
    let launch = pytest_launch(dir.path(), 0, &["test_threaded.py::test_x"]);
    let err = WarmParent::start(&launch, &tree, &WarmOptions::default()).err().expect("refused");
    let text = err.to_string();
    assert!(matches!(err, WarmError::Refused { .. }), "{text}");
    assert!(text.starts_with("warm mode refused: a module started a thread at import"), "{text}");
    assert!(text.contains("attempts run cold") && !text.contains('\n'), "{text}");

    // Through a cell: said once, then every attempt runs cold quietly.
    let cell = WarmCell::new(&tree, WarmOptions::default());
    let Start::Cold { say: Some(said), lost: None } = cell.start(&launch, marker(1)).unwrap() else {
        panic!("not cold")
    };
    assert_eq!(said, text);
    assert!(matches!(cell.start(&launch, marker(2)).unwrap(), Start::Cold { say: None, lost: None }));
}

#[test]
fn a_collection_error_refuses_and_a_cell_recycles_its_parent_after_n_attempts() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("test_broken.py"), "import no_such_module_here\n").unwrap();
    let tree = ProcessTree::default();
    let err = WarmParent::start(&pytest_launch(dir.path(), 0, &["test_broken.py"]), &tree, &WarmOptions::default())
        .err()
        .expect("refused");
    assert!(err.to_string().starts_with("warm mode refused: collection failed (1 errors)"), "{err}");
    let WarmError::Refused { output, .. } = err else { unreachable!() };
    assert!(output.contains("no_such_module_here"), "{output}");

    std::fs::write(dir.path().join("probe.py"), PROBE).unwrap();
    let cell = WarmCell::new(&tree, WarmOptions { recycle_after: Some(2), ..Default::default() });
    let cancel = Cancel::new().unwrap();
    let (mut parents, mut successors) = (Vec::new(), Vec::new());
    for iteration in 1..=4 {
        let launch = script_launch(dir.path(), "probe.py", iteration);
        let Start::Warm(running) = cell.start(&launch, marker(iteration)).unwrap() else { panic!("cold") };
        let ex = running.wait(&limits(), &cancel);
        assert_eq!(ex.status, Status::Exited(0), "{}", stderr(&ex));
        let state = cell.state.lock().unwrap();
        parents.push(state.parent.as_ref().unwrap().pid());
        successors.push(state.next.as_ref().map(|p| p.inner.pid));
    }
    assert_eq!(parents[0], parents[1]);
    assert_ne!(parents[1], parents[2], "a new parent after two attempts");
    // Its successor was started while it served (once it had served half its attempts), and
    // is the parent that took over.
    assert_eq!(successors[1], Some(parents[2]), "{successors:?} {parents:?}");
    assert!(wait_gone(parents[0]), "the worn parent ended once its attempts were reaped");
    // A successor that never served is ended with its cell.
    // The fourth attempt was the new parent's second of two: its own successor waits, and is
    // ended with the cell.
    assert_eq!(parents[2], parents[3]);
    let waiting = successors[3].expect("the new parent's successor is started at its half");
    drop(cell);
    assert!(wait_gone(waiting), "the waiting successor {waiting} ended with its cell");
}

#[test]
fn warm_targets_are_python_running_pytest_or_a_script() {
    let launch = |program: &str, args: &[&str]| Launch {
        program: program.into(),
        args: args.iter().map(OsString::from).collect(),
        ..Default::default()
    };
    assert_eq!(
        WarmTarget::of(&launch("python3", &["-m", "pytest", "-q", "t.py::x"])),
        Some(WarmTarget::Pytest { args: vec!["-q".into(), "t.py::x".into()] })
    );
    assert_eq!(
        WarmTarget::of(&launch("/usr/bin/python3.11", &["s.py", "a"])),
        Some(WarmTarget::Script { path: "s.py".into(), args: vec!["a".into()] })
    );
    assert_eq!(WarmTarget::of(&launch("python3", &["-X", "dev", "s.py"])), None);
    assert_eq!(WarmTarget::of(&launch("python3", &["-c", "pass"])), None);
    assert_eq!(WarmTarget::of(&launch("pythonista", &["s.py"])), None);
    assert_eq!(WarmTarget::of(&launch("sh", &["s.py"])), None);
}

#[test]
fn a_pytest_fork_runs_the_attempts_node_ids_in_the_attempts_order() {
    let dir = tempfile::tempdir().unwrap();
    let ordered = "def test_a(capsys):\n    with capsys.disabled():\n        print('ran a')\n\n\
                   def test_b(capsys):\n    with capsys.disabled():\n        print('ran b')\n";
    std::fs::write(dir.path().join("test_order.py"), ordered).unwrap();
    let tree = ProcessTree::default();
    let (a, b) = ("test_order.py::test_a", "test_order.py::test_b");
    let parent = WarmParent::start(&pytest_launch(dir.path(), 0, &[a, b]), &tree, &WarmOptions::default()).unwrap();
    let order = |ex: &Execution| {
        stdout(ex)
            .lines()
            .map(|l| l.trim_start_matches('.'))
            .filter(|l| l.starts_with("ran "))
            .collect::<Vec<_>>()
            .join(",")
    };
    let forward = run_warm(&parent, &pytest_launch(dir.path(), 1, &[a, b]), 1);
    assert_eq!(order(&forward), "ran a,ran b", "{}", stdout(&forward));
    let backward = run_warm(&parent, &pytest_launch(dir.path(), 2, &[b, a]), 2);
    assert_eq!(backward.status, Status::Exited(0));
    assert_eq!(order(&backward), "ran b,ran a", "{}", stdout(&backward));
    // Other arguments than the parent collected for: cold.
    match parent.start_attempt(&pytest_launch(dir.path(), 3, &[a]), marker(3)) {
        Err(WarmError::NotServed(what)) => assert_eq!(what, "other pytest arguments"),
        other => panic!("expected not served, got {:?}", other.err()),
    };
}

#[test]
fn what_a_fork_leaves_behind_is_found_and_killed_as_for_a_cold_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let leaks =
        "import subprocess\nchild = subprocess.Popen(['sleep', '1000'])\nprint('left', child.pid, flush=True)\n";
    std::fs::write(dir.path().join("leaks.py"), leaks).unwrap();
    let tree = ProcessTree::default();
    let parent = WarmParent::start(&script_launch(dir.path(), "leaks.py", 0), &tree, &WarmOptions::default()).unwrap();
    let ex = run_warm(&parent, &script_launch(dir.path(), "leaks.py", 1), 1);
    assert_eq!(ex.status, Status::Exited(0), "{}", stderr(&ex));
    let left: u32 = line(&stdout(&ex), "left").split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(!ex.leaked.is_empty(), "the sleep it left was not reported");
    assert_eq!(ex.leaked[0].command, "sleep");
    assert!(wait_gone(left), "the sleep {left} it left is still alive");
}

#[test]
fn a_hunt_plans_warm_attempts_only_for_a_target_a_parent_serves() {
    use crate::config::{Config, WarmConfig};
    use crate::plan::{Target, WarmPlan};
    let argv = |words: &[&str]| Target::argv(words.iter().map(|w| w.to_string()).collect());
    let pytest = argv(&["python3", "-m", "pytest", "-q", "t.py::test_x"]);
    let none = WarmConfig::default();
    let default = Some(WarmPlan { recycle_after: DEFAULT_RECYCLE, cold_every: 0 });
    // Off unless asked or the kind's default; --no-warm wins over the default.
    assert_eq!(plan(None, false, &pytest, &none), (None, None));
    assert_eq!(plan(None, true, &pytest, &none), (default, None));
    assert_eq!(plan(Some(false), true, &pytest, &none), (None, None));
    assert_eq!(plan(Some(true), false, &argv(&["/usr/bin/python3.11", "s.py", "a"]), &none), (default, None));
    // A target it cannot serve: said when --warm was given, silent when it was only the default.
    for target in [argv(&["./flaky.sh"]), argv(&["python3", "-c", "pass"]), Target::shell("python3 -m pytest".into())] {
        let (warm, said) = plan(Some(true), false, &target, &none);
        assert!(warm.is_none() && said.as_deref().is_some_and(|s| s.contains("attempts run cold")), "{target:?}");
        assert_eq!(plan(None, true, &target, &none), (None, None), "{target:?}");
    }
    // `[warm]` in flakehunt.toml sets the plan's numbers, which the options follow.
    let config = Config::parse("[warm]\nrecycle-after = 0\ncold-every = 5\n", Path::new("flakehunt.toml")).unwrap();
    let (warm, _) = plan(Some(true), false, &pytest, &config.warm);
    assert_eq!(warm, Some(WarmPlan { recycle_after: 0, cold_every: 5 }));
    let options = WarmOptions::of_plan(&warm.unwrap());
    assert_eq!((options.recycle_after, options.cold_every), (None, Some(5)));
    assert!(Config::parse("[warm]\nrecycle = 3\n", Path::new("flakehunt.toml")).is_err(), "unknown keys are refused");
}

/// The profile reads a started attempt's CPUs and policy in `/proc`; a cold attempt's process
/// stays there (a zombie) until flakehunt waits for it, so a warm parent must not reap its fork
/// before flakehunt says it has read it, however fast the fork exits.
#[test]
fn an_exited_fork_stays_in_proc_until_flakehunt_has_read_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("quick.py"), "").unwrap();
    let tree = ProcessTree::default();
    let parent = WarmParent::start(&script_launch(dir.path(), "quick.py", 0), &tree, &WarmOptions::default()).unwrap();
    let running = parent.start_attempt(&script_launch(dir.path(), "quick.py", 1), marker(1)).unwrap();
    let pid = running.pid();
    let state = || {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next().map(str::to_owned))
    };
    let end = Instant::now() + Duration::from_secs(60);
    while state().as_deref() != Some("Z") {
        assert!(Instant::now() < end, "the fork {pid} did not stay as an unreaped zombie: {:?}", state());
        std::thread::sleep(Duration::from_millis(5));
    }
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    assert!(status.contains("Cpus_allowed_list:"), "{status}");
    running.settled();
    let ex = running.wait(&limits(), &Cancel::new().unwrap());
    assert_eq!(ex.status, Status::Exited(0), "{}", stderr(&ex));
    assert!(wait_gone(pid), "reaped once settled");
}

#[test]
fn a_suite_parent_serves_any_of_its_ids_in_any_order_with_an_xml_file_of_its_own() {
    let strings = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    let suite = WarmTarget::Suite { options: strings(&["-q"]), ids: ["a.py::x", "b.py::y"].map(String::from).into() };
    let attempt = |args: &[&str]| suite.attempt_argv(&WarmTarget::Pytest { args: strings(args) });
    let (argv, junit) = attempt(&["-q", "--junitxml", "/s/1.xml", "b.py::y", "a.py::x"]).unwrap();
    assert_eq!((argv, junit), (strings(&["-q", "b.py::y", "a.py::x"]), Some(Some("/s/1.xml".into()))));
    let (argv, junit) = attempt(&["-q", "--junit-xml=/s/2.xml", "a.py::x"]).unwrap();
    assert_eq!((argv, junit), (strings(&["-q", "a.py::x"]), Some(Some("/s/2.xml".into()))));
    assert_eq!(attempt(&["-q", "b.py::y"]).unwrap(), (strings(&["-q", "b.py::y"]), Some(None)), "no xml file");
    let refused = |args: &[&str]| matches!(attempt(args), Err(WarmError::NotServed(_)));
    assert!(refused(&["-q", "-p", "flakehunt_repeat", "a.py::x"]), "an option of its own");
    assert!(refused(&["a.py::x"]), "without the suite's options");
    assert!(refused(&["-q", "c.py::z"]), "an id the parent did not collect");
    // The parent itself is started with a placeholder xml file, before the ids.
    let args = suite.parent_args(Path::new("/w/placeholder.xml"));
    assert_eq!(args, strings(&["-q", "--junitxml", "/w/placeholder.xml", "a.py::x", "b.py::y"]));
}

/// The refusal of a parent started for `launch`, as one line.
fn refusal(launch: &Launch, tree: &ProcessTree) -> String {
    match WarmParent::start(launch, tree, &WarmOptions::default()) {
        Err(e @ WarmError::Refused { .. }) => e.to_string(),
        Err(e) => panic!("not a refusal: {e}"),
        Ok(_) => panic!("the parent started warm"),
    }
}

#[test]
fn a_thread_started_with_the_thread_module_at_import_refuses_warm_mode_naming_it() {
    // `threading.active_count()` does not see it; the kernel's task list does. The thread holds
    // a lock the test takes: a fork would start with it held forever.
    let dir = tempfile::tempdir().unwrap();
    let module = "import _thread, threading\nlock = _thread.allocate_lock()\nstarted = _thread.allocate_lock()\n\
                  started.acquire()\ndef hold():\n    lock.acquire()\n    started.release()\n    threading.Event().wait()\n\
                  _thread.start_new_thread(hold, ())\nstarted.acquire()\n";
    std::fs::write(dir.path().join("holder.py"), module).unwrap();
    std::fs::write(dir.path().join("uses.py"), "import holder\nprint('ran')\n").unwrap();
    let tree = ProcessTree::default();
    let text = refusal(&script_launch(dir.path(), "uses.py", 0), &tree);
    assert!(text.starts_with("warm mode refused: a module started a thread at import: thread "), "{text}");
    assert!(
        text.contains("not from threading") && text.ends_with("attempts run cold") && !text.contains('\n'),
        "{text}"
    );
}

#[test]
fn a_process_the_start_up_left_running_refuses_warm_mode_and_is_ended() {
    // A multiprocessing child, and a daemon that left the parent's group and session.
    let dir = tempfile::tempdir().unwrap();
    let module = r#"
import multiprocessing, os, threading
def forever():
    threading.Event().wait()
child = multiprocessing.Process(target=forever)
child.start()
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(w, b"%d\n" % os.getpid())
        forever()
    os._exit(0)
os.wait()
daemon = int(os.read(r, 64))
with open("pids", "w") as f:
    f.write("%d %d\n" % (child.pid, daemon))
"#;
    std::fs::write(dir.path().join("starts.py"), module).unwrap();
    std::fs::write(dir.path().join("uses.py"), "import starts\n").unwrap();
    let tree = ProcessTree::default();
    let text = refusal(&script_launch(dir.path(), "uses.py", 0), &tree);
    assert!(text.starts_with("warm mode refused: the target's start-up left a process running: "), "{text}");
    let pids: Vec<u32> = std::fs::read_to_string(dir.path().join("pids"))
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    for pid in &pids {
        assert!(text.contains(&pid.to_string()), "{pid} not named: {text}");
        assert!(wait_gone(*pid), "{pid}, started at warm-up, is still alive");
    }
}

#[test]
fn a_socket_opened_at_import_refuses_warm_mode() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("opens.py"), "import socket\npair = socket.socketpair()\n").unwrap();
    std::fs::write(dir.path().join("uses.py"), "import opens\n").unwrap();
    let text = refusal(&script_launch(dir.path(), "uses.py", 0), &ProcessTree::default());
    assert!(text.starts_with("warm mode refused: the target's start-up opened fd "), "{text}");
    assert!(text.contains("socket:["), "{text}");
}

#[test]
fn a_module_that_ignores_sigchld_keeps_it_in_each_fork_and_the_parent_still_reports_their_ends() {
    // With SIGCHLD ignored the kernel reaps children by itself: a parent that kept it would lose
    // every attempt's status. A handler (a Python function) is given back too.
    let dir = tempfile::tempdir().unwrap();
    let module = "import signal\nsignal.signal(signal.SIGCHLD, signal.SIG_IGN)\n\
                  signal.signal(signal.SIGPIPE, signal.SIG_DFL)\n";
    std::fs::write(dir.path().join("server.py"), module).unwrap();
    let script = "import server, signal, sys\nprint(int(signal.getsignal(signal.SIGCHLD)), int(signal.getsignal(signal.SIGPIPE)))\n\
                  sys.exit(3)\n";
    std::fs::write(dir.path().join("serve.py"), script).unwrap();
    let tree = ProcessTree::default();
    let parent = WarmParent::start(&script_launch(dir.path(), "serve.py", 0), &tree, &WarmOptions::default()).unwrap();
    for iteration in 1..=3 {
        let ex = run_warm(&parent, &script_launch(dir.path(), "serve.py", iteration), iteration);
        assert_eq!(ex.status, Status::Exited(3), "{}{}", stdout(&ex), stderr(&ex));
        assert!(ex.lost.is_none());
        // SIG_IGN and SIG_DFL, as a cold start has them.
        assert_eq!(stdout(&ex).trim(), "1 0", "{}", stderr(&ex));
    }
}

#[test]
fn settings_the_start_up_changed_are_kept_and_an_attempt_that_sets_them_again_runs_cold() {
    // A module that lowers its open-file limit and changes directory at import: a fork starts
    // where the program went, with its limit, as a cold start would; an attempt with an rlimit
    // of its own would get it after the program's change instead of before, so it runs cold.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    let module = "import os, resource\nresource.setrlimit(resource.RLIMIT_NOFILE, (200, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))\n\
                  os.chdir('data')\n";
    std::fs::write(dir.path().join("settles.py"), module).unwrap();
    let script = "import os, resource, settles\nprint(os.path.basename(os.getcwd()), resource.getrlimit(resource.RLIMIT_NOFILE)[0])\n";
    std::fs::write(dir.path().join("where.py"), script).unwrap();
    let tree = ProcessTree::default();
    let parent = WarmParent::start(&script_launch(dir.path(), "where.py", 0), &tree, &WarmOptions::default()).unwrap();
    assert_eq!(parent.changed(), ["cwd", "rlimit nofile"]);
    let ex = run_warm(&parent, &script_launch(dir.path(), "where.py", 1), 1);
    assert_eq!(stdout(&ex).trim(), "data 200", "{}", stderr(&ex));
    let cold = run_cold(&tree, &script_launch(dir.path(), "where.py", 1), 1);
    assert_eq!(stdout(&cold), stdout(&ex));
    let mut limited = script_launch(dir.path(), "where.py", 2);
    limited.setup.rlimits = vec![Limit::with_soft(Resource::Nofile, Some(64))];
    match parent.start_attempt(&limited, marker(2)) {
        Err(WarmError::NotServed(what)) => {
            assert_eq!(what, "RLIMIT_NOFILE, which the target's own start-up changes");
        }
        other => panic!("expected not served, got {:?}", other.err()),
    };
}

#[test]
fn the_death_of_the_warm_parent_while_an_attempt_runs_is_flakehunts_loss_not_the_targets_crash() {
    // The attempt blocks on a FIFO until the test has killed its parent, then ends well.
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("go");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    std::fs::write(dir.path().join("waits.py"), "open('go').read()\nprint('done', flush=True)\n").unwrap();
    let tree = ProcessTree::default();
    let cell = WarmCell::new(&tree, WarmOptions::default());
    let launch = script_launch(dir.path(), "waits.py", 1);
    let Start::Warm(running) = cell.start(&launch, marker(1)).unwrap() else { panic!("cold") };
    let parent = cell.state.lock().unwrap().parent.as_ref().unwrap().pid();
    rustix::process::kill_process(raw_pid(parent), Signal::KILL).unwrap();
    assert!(wait_gone(parent), "the parent {parent} outlived SIGKILL");
    std::fs::write(&fifo, "go").unwrap();
    let ex = running.wait(&limits(), &Cancel::new().unwrap());
    assert_eq!(stdout(&ex).trim(), "done", "the attempt ran to its end");
    assert_eq!(ex.lost.as_deref(), Some("the warm parent died (killed by SIGKILL)"));
    // The cell runs cold from here on, saying why once.
    let Start::Cold { say: Some(said), lost: None } = cell.start(&launch, marker(2)).unwrap() else {
        panic!("not cold")
    };
    assert_eq!(said, "the warm parent died (killed by SIGKILL): attempts run cold");
    assert!(matches!(cell.start(&launch, marker(3)).unwrap(), Start::Cold { say: None, lost: None }));
}

/// Interpreters older than the one on PATH that pyenv has, if any: (version, path).
fn old_pythons() -> Vec<(String, std::path::PathBuf)> {
    let root = std::env::var_os("PYENV_ROOT")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".pyenv")));
    let Some(versions) = root.map(|r| r.join("versions")) else { return Vec::new() };
    let mut found: Vec<(String, std::path::PathBuf)> = std::fs::read_dir(&versions)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_owned();
            let python = e.path().join("bin").join("python3");
            (["3.6.", "3.7.", "3.8."].iter().any(|v| name.starts_with(v)) && python.exists()).then_some((name, python))
        })
        .collect();
    found.sort();
    found
}

#[test]
fn a_script_runs_warm_on_python_3_6_to_3_8() {
    // They lack socket.send_fds, os.pidfd_open (3.9), gc.freeze and os.register_at_fork (3.7).
    let pythons = old_pythons();
    if pythons.is_empty() {
        eprintln!("skipped: a_script_runs_warm_on_python_3_6_to_3_8: no pyenv Python 3.6 to 3.8");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("probe.py"), PROBE).unwrap();
    let tree = ProcessTree::default();
    for (version, python) in pythons {
        let launch = |i| Launch { program: python.clone().into(), ..script_launch(dir.path(), "probe.py", i) };
        let parent = WarmParent::start(&launch(0), &tree, &WarmOptions::default())
            .unwrap_or_else(|e| panic!("Python {version}: {e}"));
        let (first, second) = (run_warm(&parent, &launch(1), 1), run_warm(&parent, &launch(2), 2));
        assert_eq!(first.status, Status::Exited(0), "Python {version}: {}", stderr(&first));
        assert_eq!(line(&stdout(&second), "iteration"), "iteration 2", "Python {version}");
        let random = |ex: &Execution| line(&stdout(ex), "random").to_owned();
        assert_ne!(random(&first), random(&second), "Python {version}: random is re-seeded in each fork");
    }
}

#[test]
fn python_2_is_refused_with_one_line_naming_the_minimum() {
    let Some((_, python)) = old_pythons().first().and_then(|(_, p)| {
        let two = p.parent()?.parent()?.parent()?.join("2.7.18").join("bin").join("python");
        two.exists().then_some(((), two))
    }) else {
        eprintln!("skipped: python_2_is_refused_with_one_line_naming_the_minimum: no pyenv Python 2.7");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("probe.py"), "print('x')\n").unwrap();
    let launch = Launch { program: python.into(), ..script_launch(dir.path(), "probe.py", 0) };
    let text = refusal(&launch, &ProcessTree::default());
    assert_eq!(text, "warm mode needs Python 3.6 or later, and the target runs Python 2.7; attempts run cold");
}
