//! `flakehunt dispatch github|k8s`'s arguments: a GitHub Actions workflow or a Kubernetes
//! Indexed Job that runs a hunt's shards on many machines and merges them. The generators live
//! in `flakehunt_core::dispatch`; this module parses and checks the hunt they carry.

use clap::{Args, Subcommand};
use flakehunt_core::dispatch::{github, k8s, ShardedHunt};

use crate::exit::usage;

/// The engines.
#[derive(Debug, Subcommand)]
pub enum DispatchCommand {
    /// A GitHub Actions workflow: a job per shard (a matrix), then a job that merges and reports.
    ///
    /// e.g. `flakehunt dispatch github --shards 8 sweep --runs 500 -- cargo test -q ledger > .github/workflows/flakehunt.yml`
    Github(GithubArgs),
    /// A Kubernetes Indexed Job (one completion per shard, records on a shared volume) and a merge Job.
    ///
    /// e.g. `flakehunt dispatch k8s --shards 8 --image registry/app:ci --pvc records sweep --runs 500 -- ./test.sh | kubectl apply -f -`
    K8s(K8sArgs),
}

/// What every engine needs.
#[derive(Debug, Args)]
pub struct Common {
    /// Number of shards.
    #[arg(long, value_name = "N")]
    pub shards: u32,
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
    /// Minutes each shard job may run.
    #[arg(long, default_value_t = 360, value_name = "MINUTES")]
    pub timeout_minutes: u32,
    /// The hunt: `sweep|matrix [OPTIONS] -- CMD`, or just `-- CMD` for a sweep.
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
            let hunt = sharded(&a.common, &a.hunt)?;
            github::workflow(
                &hunt,
                &github::GithubJob {
                    name: &a.name,
                    runs_on: &a.runs_on,
                    install: &install,
                    timeout_minutes: a.timeout_minutes,
                },
            )?
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
                    parallelism: a.parallelism.unwrap_or(a.common.shards),
                    pvc: &a.pvc,
                    mount: &a.mount,
                    workdir: a.workdir.as_deref(),
                },
            )?
        }
    };
    Ok(text)
}

/// The hunt after the dispatch options, checked by parsing it as flakehunt would.
fn sharded(common: &Common, hunt: &[String]) -> Result<ShardedHunt, crate::exit::Error> {
    if common.shards == 0 {
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
    Ok(spec.sharded(common.program.clone(), common.shards, seed)?)
}
