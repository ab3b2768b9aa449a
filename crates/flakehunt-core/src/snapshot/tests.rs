//! Tests for the environment snapshot: parsers on fixed text, redaction
//! rules, and a real capture on this machine.

use super::*;

#[test]
fn redacts_secret_names() {
    let redacted = [
        "GITHUB_TOKEN",
        "github_token",
        "AWS_SECRET_ACCESS_KEY",
        "DB_PASSWORD",
        "MYSQL_PASSWD",
        "API_KEY",
        "ApiKey",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "HTTP_AUTHORIZATION",
        "COOKIE_JAR",
        "SESSION_ID",
        "SSH_PRIVATE",
        "NPM_CONFIG__AUTH",
    ];
    for name in redacted {
        assert_eq!(redact(name, "hunter2"), REDACTED, "{name}");
        // Even an innocent-looking value is dropped.
        assert_eq!(redact(name, ""), REDACTED, "{name}");
    }
    let kept = ["PATH", "HOME", "LANG", "CARGO_TERM_COLOR", "RUST_BACKTRACE", "TERM"];
    for name in kept {
        assert_eq!(redact(name, "/usr/bin:/bin"), "/usr/bin:/bin", "{name}");
    }
}

#[test]
fn masks_url_passwords() {
    let cases = [
        ("postgres://app:s3cret@db:5432/app", "postgres://app:<redacted>@db:5432/app"),
        ("http://user:pa:ss@proxy.local:3128", "http://user:<redacted>@proxy.local:3128"),
        // `@` inside the password: masked up to the last `@` before the host.
        ("https://u:p@ss@host/x", "https://u:<redacted>@host/x"),
        // Empty user, as Redis URLs often have.
        ("redis://:hunter2@cache:6379/0", "redis://:<redacted>@cache:6379/0"),
        // Several URLs in one value.
        ("a=http://x:1@h1/ b=ftp://y:2@h2/", "a=http://x:<redacted>@h1/ b=ftp://y:<redacted>@h2/"),
        // No password: unchanged.
        ("https://user@host/path", "https://user@host/path"),
        ("https://host:8080/path", "https://host:8080/path"),
        ("git@github.com:org/repo.git", "git@github.com:org/repo.git"),
        ("plain value", "plain value"),
        ("", ""),
    ];
    for (value, expected) in cases {
        assert_eq!(redact("DATABASE_URL", value), expected, "{value}");
    }
}

#[test]
fn parses_os_release() {
    let content = "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n";
    assert_eq!(os_release_pretty_name(content).as_deref(), Some("Debian GNU/Linux 12 (bookworm)"));
    assert_eq!(os_release_pretty_name("PRETTY_NAME=Alpine").as_deref(), Some("Alpine"));
    assert_eq!(os_release_pretty_name("PRETTY_NAME=\"\"\n"), None);
    assert_eq!(os_release_pretty_name("NAME=x\n"), None);
}

#[test]
fn parses_proc_files() {
    let meminfo = "MemTotal:       16318712 kB\nMemFree:  100 kB\nMemAvailable:   8000000 kB\n";
    assert_eq!(meminfo_bytes(meminfo, "MemTotal"), Some(16318712 * 1024));
    assert_eq!(meminfo_bytes(meminfo, "MemAvailable"), Some(8000000 * 1024));
    assert_eq!(meminfo_bytes(meminfo, "SwapTotal"), None);
    assert_eq!(meminfo_bytes("MemTotal: lots kB", "MemTotal"), None);

    assert_eq!(parse_loadavg("0.52 0.58 0.59 1/467 1234\n"), Some([0.52, 0.58, 0.59]));
    assert_eq!(parse_loadavg("0.52 x"), None);
    assert_eq!(parse_loadavg(""), None);

    assert_eq!(cpu_list_len("0-3,8,10-11\n"), Some(7));
    assert_eq!(cpu_list_len("0"), Some(1));
    assert_eq!(cpu_list_len(""), None);
    assert_eq!(cpu_list_len("3-1"), None);
    assert_eq!(cpu_list_len("a-b"), None);

    let cpuinfo = "processor\t: 0\nmodel name\t: AMD EPYC 7B13\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n";
    assert_eq!(count_processors(cpuinfo), Some(2));
    assert_eq!(colon_field(cpuinfo, "model name").as_deref(), Some("AMD EPYC 7B13"));
    let status = "Name:\tcat\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\n";
    assert_eq!(colon_field(status, "Cpus_allowed_list").as_deref(), Some("0-1"));
}

#[test]
fn parses_cgroup_mounts() {
    let mounts = "\
tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0
cgroup /sys/fs/cgroup/memory cgroup rw,nosuid,relatime,memory 0 0
cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0
cgroup /sys/fs/cgroup/systemd cgroup rw,relatime,name=systemd 0 0
cgroup2 /sys/fs/cgroup/unified\\040dir cgroup2 rw,relatime 0 0
garbage
";
    let cgroup = cgroup_mounts(mounts);
    assert_eq!(cgroup.v1_controllers, ["cpu", "cpuacct", "memory", "name=systemd"]);
    assert_eq!(cgroup.v2_mount.as_deref(), Some("/sys/fs/cgroup/unified dir"));

    let v2_only = cgroup_mounts("cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0\n");
    assert!(v2_only.v1_controllers.is_empty());
    assert_eq!(v2_only.v2_mount.as_deref(), Some("/sys/fs/cgroup"));
    assert_eq!(cgroup_mounts(""), Cgroup::default());
}

#[test]
fn unescapes_mount_paths_without_panicking() {
    assert_eq!(unescape_mount_path("/a\\040b"), "/a b");
    assert_eq!(unescape_mount_path("/a\\"), "/a\\");
    assert_eq!(unescape_mount_path("/a\\999"), "/a\\999");
    assert_eq!(unescape_mount_path("/é\\é"), "/é\\é");
}

#[test]
fn default_tools_are_version_commands() {
    let tools = default_tools();
    assert_eq!(tools.len(), 8);
    assert!(tools.contains(&"java -version".to_owned()));
    assert!(tools.contains(&"git --version".to_owned()));
}

#[test]
fn a_hunt_records_the_runtimes_its_target_names_and_git() {
    use crate::plan::Target;
    let argv = |words: &[&str]| Target::argv(words.iter().map(|w| w.to_string()).collect());
    assert_eq!(tools_for(&argv(&["true"]), None), ["git --version"]);
    assert_eq!(tools_for(&argv(&["/usr/bin/python3", "t.py"]), None), ["python3 --version", "git --version"]);
    assert_eq!(
        tools_for(&argv(&["cargo", "test", "-q"]), None),
        ["cargo --version", "rustc --version", "git --version"]
    );
    assert_eq!(
        tools_for(&Target::shell("cd pkg && GOFLAGS=-race go test ./... && node x.js".into()), None),
        ["go version", "node --version", "git --version"]
    );
    assert_eq!(
        tools_for(&argv(&["sh", "-c", "cargo test -q"]), None),
        ["cargo --version", "rustc --version", "git --version"]
    );
    assert_eq!(
        tools_for(&argv(&["target/debug/deps/ledger-0123", "t", "--exact"]), Some("cargo-test")),
        ["cargo --version", "rustc --version", "git --version"]
    );
    assert_eq!(tools_for(&argv(&["python3", "-m", "pytest"]), Some("pytest")), ["python3 --version", "git --version"]);
}

#[test]
fn tools_missing_failing_and_working() {
    let tools: Vec<String> = ["flakehunt-definitely-not-a-tool --version", "   ", "false", "echo hello world"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    let results = run_tools(&tools, TOOL_TIMEOUT, None, None);
    assert_eq!(results["flakehunt-definitely-not-a-tool --version"], None);
    assert_eq!(results["   "], None);
    assert_eq!(results["false"], None);
    assert_eq!(results["echo hello world"].as_deref(), Some("hello world"));
}

#[test]
fn tool_output_on_stderr_is_used() {
    // Like `java -version`, print only to stderr. Commands are split on
    // whitespace, so the script uses `${IFS}` for its spaces.
    let stderr_only = "sh -c echo${IFS}stderr${IFS}version>&2".to_owned();
    let empty = "sh -c echo>&2".to_owned();
    let results = run_tools(&[stderr_only.clone(), empty.clone()], TOOL_TIMEOUT, None, None);
    assert_eq!(results[&stderr_only].as_deref(), Some("stderr version"));
    assert_eq!(results[&empty], None);
}

#[test]
fn first_line_skips_blank_lines_and_truncates() {
    assert_eq!(first_line(b"\n\n  v1.2.3  \nmore").as_deref(), Some("v1.2.3"));
    assert_eq!(first_line(b""), None);
    assert_eq!(first_line(b" \n \n"), None);
    let long = "x".repeat(1000);
    assert_eq!(first_line(long.as_bytes()).map(|l| l.len()), Some(TOOL_LINE_CAP));
    assert!(first_line(&[0xff, 0xfe, b'a']).is_some());
}

#[test]
fn hanging_tool_is_cut_off() {
    let start = Instant::now();
    let tools = vec!["sleep 30".to_owned(), "echo ok".to_owned()];
    let snapshot = Snapshot::capture(&tools);
    let elapsed = start.elapsed();
    assert_eq!(snapshot.tools["sleep 30"], None);
    assert_eq!(snapshot.tools["echo ok"].as_deref(), Some("ok"));
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    assert!(elapsed >= TOOL_TIMEOUT, "{elapsed:?}");
}

#[test]
fn flooding_tool_does_not_block() {
    // `yes` writes forever; it must be killed at the deadline, with the
    // captured output bounded.
    let start = Instant::now();
    let results = run_tools(&["yes flake".to_owned()], Duration::from_millis(300), None, None);
    assert_eq!(results["yes flake"], None);
    assert!(start.elapsed() < Duration::from_secs(3));
}

#[test]
fn capture_on_this_machine() {
    let snapshot = Snapshot::capture(&[]);
    assert!(snapshot.cpus_online.is_some_and(|n| n >= 1), "{snapshot:?}");
    assert!(snapshot.memory_total_bytes.is_some_and(|m| m > 0));
    assert!(snapshot.arch.is_some());
    assert!(snapshot.kernel.is_some());
    assert_eq!(snapshot.rlimits.len(), 8);
    assert!(snapshot.rlimits.contains_key("nofile"));
    assert!(snapshot.tools.is_empty());
    // `PATH` is virtually always set and never redacted.
    if let Ok(path) = std::env::var("PATH") {
        assert_eq!(snapshot.env.get("PATH"), Some(&path));
    }
    // Every secret-looking name was redacted.
    for (name, value) in &snapshot.env {
        if name.to_ascii_uppercase().contains("TOKEN") {
            assert_eq!(value, REDACTED);
        }
    }
}

#[test]
fn snapshot_round_trips_through_json() {
    let snapshot = Snapshot::capture(&["echo 1.0".to_owned()]);
    let json = serde_json::to_string_pretty(&snapshot).unwrap();
    let back: Snapshot = serde_json::from_str(&json).unwrap();
    // Load averages are floats and survive a JSON round trip exactly.
    assert_eq!(back, snapshot);
    // Unlimited limits are `null`.
    let limit = LimitPair { soft: None, hard: Some(10) };
    assert_eq!(serde_json::to_string(&limit).unwrap(), r#"{"soft":null,"hard":10}"#);
    // Older or partial records still load.
    let partial: Snapshot = serde_json::from_str(r#"{"hostname":"ci-7"}"#).unwrap();
    assert_eq!(partial.hostname.as_deref(), Some("ci-7"));
    assert!(partial.env.is_empty());
}
