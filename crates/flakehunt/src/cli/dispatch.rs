//! `flakehunt dispatch github|k8s`'s arguments: a GitHub Actions workflow or a Kubernetes
//! Indexed Job that runs a hunt's shards on many machines and merges them, or a workflow that
//! verifies a fix on pull requests. The generators live in `flakehunt_core::dispatch`; this
//! module parses and checks the hunt they carry.

use clap::{Args, Subcommand};
use flakehunt_core::dispatch::{github, k8s, ShardedHunt};

use crate::exit::usage;

/// The engines.
#[derive(Debug, Subcommand)]
pub enum DispatchCommand {
    /// A GitHub Actions workflow: a job per shard (a matrix), then a job that merges and reports;
    /// or, with `verify RECORD`, a job that proves the fix on every pull request.
    ///
    /// e.g. `flakehunt dispatch github --shards 8 sweep --runs 500 -- cargo test -q ledger > .github/workflows/flakehunt.yml`,
    /// `flakehunt dispatch github verify .flakehunt/runs/sweep-... > .github/workflows/verify.yml`
    Github(GithubArgs),
    /// A Kubernetes Indexed Job (one completion per shard, records on a shared volume) and a merge Job.
    ///
    /// e.g. `flakehunt dispatch k8s --shards 8 --image registry/app:ci --pvc records sweep --runs 500 -- ./test.sh | kubectl apply -f -`
    K8s(K8sArgs),
}

/// What every engine needs.
#[derive(Debug, Args)]
pub struct Common {
    /// Number of shards (a sweep or a matrix; a verification runs on one machine).
    #[arg(long, value_name = "N")]
    pub shards: Option<u32>,
    /// How the shards invoke flakehunt.
    #[arg(long, default_value = "flakehunt", value_name = "PATH")]
    pub program: String,
}

/// `flakehunt dispatch github`.
#[derive(Debug, Args)]
pub struct GithubArgs {
    /// Shared options.
    #[command(flatten)]
    pub common: Common,
    /// The workflow's name.
    #[arg(long, default_value = "flakehunt")]
    pub name: String,
    /// The runner label.
    #[arg(long, default_value = "ubuntu-latest", value_name = "LABEL")]
    pub runs_on: String,
    /// A shell command that installs flakehunt on a runner (into $FLAKEHUNT_INSTALL_ROOT/bin or on
    /// PATH), e.g. 'cargo install --locked --git URL --rev REV --root "$FLAKEHUNT_INSTALL_ROOT" flakehunt'.
    #[arg(long, value_name = "CMD", conflicts_with = "install_from_git")]
    pub install: Option<String>,
    /// Install flakehunt on the runners with `cargo install --locked --git URL flakehunt`.
    #[arg(long, value_name = "URL")]
    pub install_from_git: Option<String>,
    /// With --install-from-git: the commit, tag or branch to build.
    #[arg(long, value_name = "REV", requires = "install_from_git")]
    pub rev: Option<String>,
    /// Minutes each shard job (or the verification's job) may run.
    #[arg(long, default_value_t = 360, value_name = "MINUTES")]
    pub timeout_minutes: u32,
    /// verify: the verified record is in this artifact of another workflow run (e.g.
    /// flakehunt-report, which a dispatched hunt's merge job uploads, holding it as `merged`);
    /// RECORD is then its path inside the artifact.
    #[arg(long, value_name = "NAME", requires = "artifact_run")]
    pub artifact: Option<String>,
    /// verify: the id of the workflow run that uploaded --artifact.
    #[arg(long, value_name = "RUN_ID", requires = "artifact")]
    pub artifact_run: Option<u64>,
    /// The hunt: `sweep|matrix [OPTIONS] -- CMD`, or just `-- CMD` for a sweep; or `verify
    /// [OPTIONS] RECORD`: a workflow that proves the fix on every pull request.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true, value_name = "HUNT")]
    pub hunt: Vec<String>,
}

/// `flakehunt dispatch k8s`.
#[derive(Debug, Args)]
pub struct K8sArgs {
    /// Shared options.
    #[command(flatten)]
    pub common: Common,
    /// The container image: it holds flakehunt (of this version, at --program) and the command under test.
    #[arg(long, value_name = "IMAGE")]
    pub image: String,
    /// The Job's name.
    #[arg(long, default_value = "flakehunt", value_name = "NAME")]
    pub name: String,
    /// Pods running at once (default: every shard).
    #[arg(long, value_name = "N")]
    pub parallelism: Option<u32>,
    /// The PersistentVolumeClaim (ReadWriteMany) that holds the records.
    #[arg(long, default_value = "flakehunt-records", value_name = "NAME")]
    pub pvc: String,
    /// Where the claim is mounted.
    #[arg(long, default_value = "/records", value_name = "PATH")]
    pub mount: String,
    /// Working directory of the hunt inside the image.
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<String>,
    /// The hunt: `sweep|matrix [OPTIONS] -- CMD`, or just `-- CMD` for a sweep.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true, value_name = "HUNT")]
    pub hunt: Vec<String>,
}

/// The workflow or manifest `cmd` asks for.
pub fn text(cmd: &DispatchCommand) -> Result<String, crate::exit::Error> {
    let text = match cmd {
        DispatchCommand::Github(a) => {
            // No flakehunt is published to install by default: the user says where it comes from.
            let install =
                match (&a.install, &a.install_from_git) {
                    (Some(cmd), _) => github::Install::Command(cmd.clone()),
                    (None, Some(url)) => github::Install::Git { url: url.clone(), rev: a.rev.clone() },
                    (None, None) => return Err(usage(
                        "say how the runners get flakehunt: --install 'COMMAND' or --install-from-git URL [--rev REV]",
                    )),
                };
            flakehunt_core::dispatch::refuse_secret_options(&[
                ("--install", a.install.as_deref()),
                ("--install-from-git", a.install_from_git.as_deref()),
                ("--rev", a.rev.as_deref()),
                ("--runs-on", Some(&a.runs_on)),
                ("--name", Some(&a.name)),
            ])
            .map_err(usage)?;
            let job = github::GithubJob {
                name: &a.name,
                runs_on: &a.runs_on,
                install: &install,
                timeout_minutes: a.timeout_minutes,
            };
            if a.hunt.first().is_some_and(|t| t == "verify") {
                let (hunt, record) = verification(a)?;
                github::verify_workflow(&hunt, &record, &job)?
            } else {
                if a.artifact.is_some() {
                    return Err(usage("--artifact names where a verified record is: it goes with `verify RECORD`"));
                }
                let hunt = sharded(&a.common, &a.hunt)?;
                github::workflow(&hunt, &job)?
            }
        }
        DispatchCommand::K8s(a) => {
            flakehunt_core::dispatch::refuse_secret_options(&[
                ("--image", Some(&a.image)),
                ("--name", Some(&a.name)),
                ("--pvc", Some(&a.pvc)),
                ("--workdir", a.workdir.as_deref()),
            ])
            .map_err(usage)?;
            let hunt = sharded(&a.common, &a.hunt)?;
            k8s::manifest(
                &hunt,
                &k8s::K8sJob {
                    name: &a.name,
                    image: &a.image,
                    parallelism: a.parallelism.unwrap_or(hunt.shards),
                    pvc: &a.pvc,
                    mount: &a.mount,
                    workdir: a.workdir.as_deref(),
                },
            )?
        }
    };
    Ok(text)
}

/// The verification after `dispatch github`'s options, checked by parsing it as flakehunt would,
/// and where its job finds the verified record: committed (the record must be here, at a path
/// inside this directory, the repository's root, and one verify takes) or in an artifact.
fn verification(a: &GithubArgs) -> Result<(ShardedHunt, github::VerifiedRecord), crate::exit::Error> {
    if a.common.shards.is_some() {
        return Err(usage(
            "a verification runs on one machine, as many attempts as its record needs: leave --shards out of `dispatch github verify`",
        ));
    }
    let argv = std::iter::once("flakehunt".to_owned()).chain(a.hunt.iter().cloned());
    let cli = super::parse_nested(argv)?;
    let super::Command::Verify(args) = &cli.command else { unreachable!("the hunt starts with verify") };
    if args.record.is_some() || args.shard.is_some() || args.resume.is_some() {
        return Err(usage(
            "leave --record, --shard and --resume out of a dispatched verification: its job sets its own record",
        ));
    }
    if args.json {
        return Err(usage(
            "leave --json out of a dispatched verification: its job prints the verdict, and the record it uploads gives the JSON (`flakehunt report --format json`)",
        ));
    }
    let Some(given) = &args.verified else { return Err(usage("give the record to verify: `verify RECORD`")) };
    let record = match (&a.artifact, a.artifact_run) {
        (Some(name), Some(run_id)) => {
            github::VerifiedRecord::Artifact { name: name.clone(), run_id, path: given.display().to_string() }
        }
        _ => github::VerifiedRecord::Committed(committed(given, args.level / 100.0)?),
    };
    flakehunt_core::dispatch::refuse_secret_options(&[("--artifact", a.artifact.as_deref())]).map_err(usage)?;
    let seed = args.seed.unwrap_or_else(flakehunt_core::driver::random_seed);
    let (spec, _) = super::hunt_spec(&cli.command, Default::default(), cli.config.as_deref()).expect("a hunt");
    let hunt = spec.dispatched_verification(a.common.program.clone(), &record.job_path(), seed)?;
    Ok((hunt, record))
}

/// The path of the committed record `given` from the repository's root (this directory),
/// checked as verify would check it: a record whose verification could not start on the
/// runner is refused here, before a workflow is written.
fn committed(given: &std::path::Path, level: f64) -> Result<String, crate::exit::Error> {
    let here = std::env::current_dir().map_err(|e| usage(format!("cannot read the current directory: {e}")))?;
    let absolute = std::path::absolute(given).map_err(|e| usage(format!("{}: {e}", given.display())))?;
    let relative = absolute.strip_prefix(&here).map_err(|_| {
        usage(format!(
            "{} is outside this directory: run `dispatch github verify` from the root of the repository the record is committed in (or give --artifact NAME --artifact-run ID)",
            given.display()
        ))
    })?;
    flakehunt_core::kind::verify::source::read(given, level, None)?;
    let text = relative.to_str().ok_or_else(|| usage(format!("{} is not UTF-8 text", given.display())))?;
    Ok(if text.is_empty() { ".".to_owned() } else { text.to_owned() })
}

/// The hunt after the dispatch options, checked by parsing it as flakehunt would.
fn sharded(common: &Common, hunt: &[String]) -> Result<ShardedHunt, crate::exit::Error> {
    let Some(shards) = common.shards else {
        return Err(usage("give the number of shards: --shards N"));
    };
    if shards == 0 {
        return Err(usage("--shards must be at least 1"));
    }
    let mut tokens: Vec<String> = hunt.to_vec();
    if !matches!(tokens.first().map(String::as_str), Some("sweep" | "matrix")) {
        // Just the command under test: a sweep with default options.
        tokens.splice(0..0, ["sweep".to_owned(), "--".to_owned()]);
    }
    let argv = std::iter::once("flakehunt".to_owned()).chain(tokens.iter().cloned());
    let cli = super::parse_nested(argv)?;
    let args = match &cli.command {
        super::Command::Sweep(a) => &a.hunt,
        super::Command::Matrix(a) => &a.hunt,
        _ => return Err(usage("only a sweep or a matrix can be dispatched")),
    };
    if args.record.is_some() || args.shard.is_some() || args.resume.is_some() || args.slurm.is_some() {
        return Err(usage(
            "leave --record, --shard, --resume and --slurm out of a dispatched hunt: each shard sets its own",
        ));
    }
    if args.json || args.quiet {
        return Err(usage(
            "leave --json and --quiet out of a dispatched hunt: its shards run quietly, and `flakehunt report` of the merged record gives the JSON",
        ));
    }
    if args.command.is_empty() && args.shell.is_none() {
        return Err(usage("no command to run: end with -- CMD"));
    }
    let seed = args.seed.unwrap_or_else(flakehunt_core::driver::random_seed);
    let (spec, _) = super::hunt_spec(&cli.command, Default::default(), cli.config.as_deref()).expect("a hunt");
    Ok(spec.sharded(common.program.clone(), shards, seed)?)
}
