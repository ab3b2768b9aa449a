//! A hunt's command line, rebuilt from its spec for the shards that run it elsewhere (Slurm, a
//! GitHub Actions matrix, a Kubernetes Indexed Job): the options that differ from the defaults,
//! in a fixed order. Each shard sets `--shard`, `--seed`, `--record` and `--quiet` itself, so
//! they are never part of it. Main function: [`HuntSpec::sharded`].

use super::{HuntError, HuntKind, HuntSpec, SettingsRequest};
use crate::dispatch::ShardedHunt;

impl Default for SettingsRequest {
    /// The defaults of the command line's options (the binary's tests check that they agree).
    fn default() -> Self {
        use std::time::Duration;
        Self {
            runs: 100,
            jobs: 1,
            until_fails: None,
            budget: None,
            timeout: Duration::from_secs(600),
            timeout_given: false,
            grace: Duration::from_secs(2),
            leak_timeout: Duration::from_millis(100),
            capture: 1 << 20,
            warm: None,
            checks: crate::checks::ChecksRequest::default(),
        }
    }
}

/// Why `matrix --against` runs on one machine.
pub(crate) const AGAINST_IS_ONE_MACHINE: &str =
    "matrix --against searches one cell after another, each chosen by the last, so it cannot be sharded: run it on one machine, without --shard, --slurm or dispatch";

impl HuntSpec {
    /// This hunt split into `shards` shards of one plan seeded by `seed`, each run by `program`.
    pub fn sharded(&self, program: String, shards: u32, seed: u64) -> Result<ShardedHunt, HuntError> {
        let kind = match &self.kind {
            HuntKind::Matrix(m) if m.against.is_some() => return Err(HuntError::usage(AGAINST_IS_ONE_MACHINE)),
            HuntKind::Sweep { .. } => "sweep",
            HuntKind::Matrix(_) => "matrix",
            HuntKind::Adaptive => "hunt",
            HuntKind::Suite(_) => "suite",
            HuntKind::Fire(_) | HuntKind::Verify(_) => {
                return Err(HuntError::usage(
                    "only a sweep, a matrix, a hunt or a suite can be sharded: give `sweep ...`, `matrix ...`, `hunt ...` or `suite ...`",
                ))
            }
        };
        let globals = match &self.config_path {
            Some(path) => vec!["--config".to_owned(), path.display().to_string()],
            None => Vec::new(),
        };
        let version = format!("flakehunt {}", env!("CARGO_PKG_VERSION"));
        let (options, command) = self.options();
        let hunt = ShardedHunt { program, version, globals, kind: kind.to_owned(), options, command, shards, seed };
        // Every generated file (batch script, workflow, Job) is built from this: none may hold a secret.
        match hunt.secret_refusal() {
            Some(refusal) => Err(HuntError::Usage(refusal)),
            None => Ok(hunt),
        }
    }

    /// This verification as a job file runs it (`dispatch github verify`), by `program`, with
    /// `seed`: `verify`, its options that differ from the defaults, then `record`, the verified
    /// record's path as the job sees it; `shards` is 1 (a verification runs on one machine).
    pub fn dispatched_verification(&self, program: String, record: &str, seed: u64) -> Result<ShardedHunt, HuntError> {
        let HuntKind::Verify(req) = &self.kind else {
            return Err(HuntError::usage("only a verification runs on pull requests: give `verify RECORD`"));
        };
        let globals = match &self.config_path {
            Some(path) => vec!["--config".to_owned(), path.display().to_string()],
            None => Vec::new(),
        };
        let version = format!("flakehunt {}", env!("CARGO_PKG_VERSION"));
        let (mut options, command) = self.options();
        let percent = req.level * 100.0;
        if (percent - crate::schema::verify::DEFAULT_LEVEL).abs() > 1e-9 {
            // As given (`99.9`), not as the fraction's product prints (`99.90000000000001`).
            options.splice(0..0, ["--level".to_owned(), format!("{}", (percent * 1e9).round() / 1e9)]);
        }
        options.push(record.to_owned());
        let hunt = ShardedHunt { program, version, globals, kind: "verify".into(), options, command, shards: 1, seed };
        match hunt.secret_refusal() {
            Some(refusal) => Err(HuntError::Usage(refusal)),
            None => Ok(hunt),
        }
    }

    /// The options that differ from the defaults, and the command after `--`.
    fn options(&self) -> (Vec<String>, Vec<String>) {
        let mut o = Options(Vec::new());
        match &self.kind {
            HuntKind::Sweep { profiles, strict } => {
                o.list("--profiles", profiles);
                o.flag("--strict", *strict);
            }
            HuntKind::Matrix(m) => {
                o.each("-D", &m.define);
                o.each("--rlimit", &m.rlimit);
                o.value_if("--confirm", m.confirm, m.confirm != 10);
                o.flag("--yes", m.yes);
                o.value_if("--max-cells", m.max_cells, m.max_cells != 256);
                if let Some(room) = &m.clean_room {
                    o.flag("--clean-room", true);
                    o.opt("--setup", room.setup.as_ref());
                    o.list("--keep-env", &room.keep_env);
                    o.flag("--keep", room.keep);
                    o.flag("--follow-outside-links", room.follow_outside_links);
                }
            }
            HuntKind::Suite(s) => {
                o.list("--profiles", &s.profiles);
                o.flag("--strict", s.strict);
            }
            HuntKind::Fire(_) | HuntKind::Adaptive | HuntKind::Verify(_) => {}
        }
        // A `--timeout` given is passed on whatever its value: the user's timeout is a failure
        // the user defined (and replaces hunt's hang rule), the default one is not.
        let timeout_given = self.settings.timeout_given;
        let (s, d) = (&self.settings, SettingsRequest::default());
        // The adaptive hunt plans its attempts itself and takes none of these (its runner's
        // width is its own, set before it is sharded).
        if !matches!(self.kind, HuntKind::Adaptive) {
            o.value_if("--runs", s.runs, s.runs != d.runs);
            o.value_if("--jobs", s.jobs, s.jobs != d.jobs);
            o.opt("--until-fails", s.until_fails.as_ref());
        }
        o.opt("--budget", s.budget.map(|b| humantime::format_duration(b).to_string()).as_ref());
        for (name, value, default) in [
            ("--timeout", s.timeout, d.timeout),
            ("--grace", s.grace, d.grace),
            ("--leak-timeout", s.leak_timeout, d.leak_timeout),
        ] {
            let given = name == "--timeout" && timeout_given;
            o.value_if(name, humantime::format_duration(value), value != default || given);
        }
        o.value_if("--capture", s.capture, s.capture != d.capture);
        o.flag("--warm", s.warm == Some(true));
        o.flag("--no-warm", s.warm == Some(false));
        o.flag("--leak-check", s.checks.goroutine_leaks == Some(true));
        o.flag("--no-leak-check", s.checks.goroutine_leaks == Some(false));
        o.flag("--race", s.checks.race);
        o.flag("--thread-check", s.checks.threads == Some(true));
        o.flag("--no-thread-check", s.checks.threads == Some(false));
        let r = &self.oracle;
        o.each("--fail-if", &r.fail_if);
        o.each("--pass-if", &r.pass_if);
        o.opt("--expect-stdout", r.expect_stdout.as_ref().map(|p| p.display().to_string()).as_ref());
        o.each("--ignore", &r.ignore);
        o.value_if("--oracle", "majority", r.majority);
        let t = &self.target;
        match t.cargo_test.as_deref() {
            Some("") => o.0.push("--cargo-test".to_owned()),
            name => o.opt("--cargo-test", name.as_ref()),
        }
        o.opt("-p", t.package.as_ref());
        match t.go_test.as_slice() {
            [] => {}
            // `--go-test` takes up to three words: alone, the package is joined to it, so that
            // the options a shard appends (`--shard`, `--seed`) are not taken for more.
            [pkg] => o.0.push(format!("--go-test={pkg}")),
            words => {
                o.0.push("--go-test".to_owned());
                o.0.extend(words.iter().cloned());
            }
        }
        if let Some(paths) = &t.pytest {
            o.0.push("--pytest".to_owned());
            o.0.extend(paths.iter().cloned());
        }
        o.opt("--python", t.python.as_ref().map(|p| p.display().to_string()).as_ref());
        o.opt("--shell", t.shell.as_ref());
        (o.0, t.command.clone())
    }
}

/// Options being written.
struct Options(Vec<String>);

impl Options {
    fn flag(&mut self, name: &str, on: bool) {
        if on {
            self.0.push(name.to_owned());
        }
    }

    fn value_if(&mut self, name: &str, value: impl ToString, on: bool) {
        if on {
            self.0.extend([name.to_owned(), value.to_string()]);
        }
    }

    fn opt(&mut self, name: &str, value: Option<&impl ToString>) {
        if let Some(v) = value {
            self.0.extend([name.to_owned(), v.to_string()]);
        }
    }

    fn each(&mut self, name: &str, values: &[String]) {
        for v in values {
            self.0.extend([name.to_owned(), v.clone()]);
        }
    }

    fn list(&mut self, name: &str, values: &[String]) {
        if !values.is_empty() {
            self.0.extend([name.to_owned(), values.join(",")]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{OracleRequest, RecordRequest, SuiteRequest, TargetRequest};

    fn suite(target: TargetRequest) -> HuntSpec {
        HuntSpec {
            kind: HuntKind::Suite(SuiteRequest { profiles: vec!["default".into(), "noisy".into()], strict: false }),
            target,
            settings: SettingsRequest { runs: 20, ..SettingsRequest::default() },
            oracle: OracleRequest::default(),
            seed: None,
            shard: None,
            record: RecordRequest::New(None),
            slurm: None,
            config: crate::config::Config::default(),
            config_path: None,
            quiet: false,
        }
    }

    #[test]
    fn a_suites_shards_get_its_runner_back_and_a_lone_package_joined_to_its_option() {
        let go = suite(TargetRequest { go_test: vec!["./pkg".into()], ..TargetRequest::default() });
        let sharded = go.sharded("flakehunt".into(), 2, 5).unwrap();
        assert_eq!(sharded.kind, "suite");
        assert_eq!(sharded.options, ["--profiles", "default,noisy", "--runs", "20", "--go-test=./pkg"]);
        let py = suite(TargetRequest {
            pytest: Some(vec!["tests".into()]),
            python: Some(".venv/bin/python".into()),
            ..TargetRequest::default()
        });
        let options = py.sharded("flakehunt".into(), 2, 5).unwrap().options;
        assert_eq!(options[4..], ["--pytest", "tests", "--python", ".venv/bin/python"]);
        let cargo = suite(TargetRequest { cargo_test: Some(String::new()), ..TargetRequest::default() });
        assert_eq!(cargo.sharded("flakehunt".into(), 2, 5).unwrap().options[4..], ["--cargo-test"]);
    }
}
