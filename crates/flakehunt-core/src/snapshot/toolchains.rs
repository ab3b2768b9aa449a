//! The Go and Rust toolchains of a project: `go env`'s essentials and the module list (`go list
//! -m all`, offline: `GOPROXY=off`, `-mod=readonly`, so nothing is fetched and no file of the
//! project changes), the Rust compiler's version and host, and `Cargo.lock`'s digest and the
//! versions it pins. Main types: [`Go`], [`Rust`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::commands::{Probe, Ran};

/// How long `go env`, `go list -m all` and `rustc -vV` may take each.
pub(super) const TIMEOUT: Duration = Duration::from_secs(5);

/// Bytes of output kept from each.
const CAP: usize = 4 << 20;

/// The `go env` variables that change a build or a test run; paths of the user's caches are
/// left out (they differ everywhere and change nothing).
pub const GO_ENV: &[&str] = &[
    "GOVERSION",
    "GOOS",
    "GOARCH",
    "GOAMD64",
    "GOARM",
    "GOARM64",
    "GOFLAGS",
    "CGO_ENABLED",
    "GOEXPERIMENT",
    "GOTOOLCHAIN",
    "GOPROXY",
    "GOPRIVATE",
    "GOROOT",
    "GOMOD",
    "GOWORK",
];

/// Go as a project sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Go {
    /// The directory `go` ran in (the `--go-test` package's, or the working directory).
    pub dir: String,
    /// `go env`'s essentials ([`GO_ENV`]), the empty ones left out.
    pub env: BTreeMap<String, String>,
    /// `go list -m all`: each module of the build list but the main one, with its version
    /// (and its replacement, `v1.2.0 => ../fork`).
    pub modules: BTreeMap<String, String>,
    /// Why the module list is missing: not in a module, or `go list -m all` failed offline.
    pub modules_error: Option<String>,
    /// Why `go env` could not be read.
    pub error: Option<String>,
}

/// The probes of Go in `dir`: `go env`, and `go list -m all` when `dir` is in a module.
pub(super) fn go_probes(dir: &Path) -> (Probe, Option<Probe>) {
    let mut env = std::process::Command::new("go");
    env.arg("env").arg("-json").args(GO_ENV).current_dir(dir);
    let env = Probe { command: env, cap: CAP, timeout: TIMEOUT };
    let list = module_root(dir).map(|_| {
        let mut list = std::process::Command::new("go");
        list.args(["list", "-mod=readonly", "-m", "all"]).current_dir(dir).env("GOPROXY", "off");
        Probe { command: list, cap: CAP, timeout: TIMEOUT }
    });
    (env, list)
}

/// The directory holding the `go.mod` that `dir` belongs to.
fn module_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().find(|d| d.join("go.mod").is_file()).map(Path::to_owned)
}

/// What the Go probes found.
pub(super) fn go(dir: &Path, env: &Ran, list: Option<&Ran>) -> Go {
    let mut go = Go { dir: dir.display().to_string(), ..Go::default() };
    match env.success().map(serde_json::from_slice::<BTreeMap<String, String>>) {
        Some(Ok(vars)) => go.env = vars.into_iter().filter(|(_, v)| !v.is_empty()).collect(),
        Some(Err(e)) => go.error = Some(format!("go env printed no JSON: {e}")),
        None => go.error = env.failure(),
    }
    match list {
        None => go.modules_error = Some("not in a Go module (no go.mod here or above)".to_owned()),
        Some(ran) => match ran.success() {
            Some(out) => go.modules = parse_module_list(&String::from_utf8_lossy(out)),
            None => {
                go.modules_error = Some(format!(
                    "go list -m all did not work offline (GOPROXY=off): {}",
                    ran.failure().unwrap_or_default()
                ))
            }
        },
    }
    go
}

/// `go list -m all` lines (`path version [=> replacement]`); the main module, the first line
/// and the one without a version, is left out.
fn parse_module_list(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| {
            let (path, rest) = line.trim().split_once(' ')?;
            let rest = rest.trim();
            (!rest.is_empty()).then(|| (path.to_owned(), rest.to_owned()))
        })
        .collect()
}

/// Rust as a project sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Rust {
    /// `rustc -vV`'s release (`1.85.0`).
    pub release: Option<String>,
    /// Its host triple.
    pub host: Option<String>,
    /// Its commit hash.
    pub commit: Option<String>,
    /// Its LLVM version.
    pub llvm: Option<String>,
    /// Why `rustc -vV` could not be read.
    pub error: Option<String>,
    /// The channel a `rust-toolchain.toml` (or `rust-toolchain`) of the project pins.
    pub toolchain_file: Option<String>,
    /// The project's `Cargo.lock`.
    pub cargo_lock: Option<CargoLock>,
}

/// A `Cargo.lock`: its digest and the versions it pins.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CargoLock {
    /// Where it is.
    pub path: String,
    /// BLAKE3 of its bytes, in hex.
    pub digest: String,
    /// Each dependency from a registry or git (the workspace's own crates left out), with its
    /// version; several versions of one crate are joined by `, `.
    pub packages: BTreeMap<String, String>,
}

/// The probe of `rustc -vV`, run in `dir` (a `rust-toolchain.toml` there chooses the compiler).
pub(super) fn rustc_probe(dir: &Path) -> Probe {
    let mut command = std::process::Command::new("rustc");
    command.arg("-vV").current_dir(dir);
    Probe { command, cap: 64 << 10, timeout: TIMEOUT }
}

/// What Rust looks like from `dir`: the compiler (when `rustc` ran) and the lock file and
/// toolchain file found there or above.
pub(super) fn rust(dir: &Path, rustc: Option<&Ran>) -> Rust {
    let mut rust = Rust::default();
    if let Some(ran) = rustc {
        match ran.success() {
            Some(out) => {
                let text = String::from_utf8_lossy(out);
                let field = |key: &str| {
                    text.lines()
                        .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_owned()))
                        .filter(|v| !v.is_empty())
                };
                rust.release = field("release:");
                rust.host = field("host:");
                rust.commit = field("commit-hash:");
                rust.llvm = field("LLVM version:");
            }
            None => rust.error = ran.failure(),
        }
    }
    for d in dir.ancestors() {
        if rust.toolchain_file.is_none() {
            rust.toolchain_file = ["rust-toolchain.toml", "rust-toolchain"]
                .iter()
                .find_map(|name| std::fs::read_to_string(d.join(name)).ok())
                .and_then(|text| toolchain_channel(&text));
        }
        if rust.cargo_lock.is_none() {
            let path = d.join("Cargo.lock");
            if let Ok(bytes) = std::fs::read(&path) {
                rust.cargo_lock = Some(CargoLock {
                    path: path.display().to_string(),
                    digest: blake3::hash(&bytes).to_hex().to_string(),
                    packages: lock_packages(&String::from_utf8_lossy(&bytes)),
                });
            }
        }
    }
    rust
}

/// The channel of a toolchain file: `[toolchain] channel = "1.85"` or the old one-line form.
fn toolchain_channel(text: &str) -> Option<String> {
    match text.parse::<toml::Table>() {
        Ok(table) => table.get("toolchain")?.get("channel")?.as_str().map(str::to_owned),
        Err(_) => text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('#')).map(str::to_owned),
    }
}

/// The registry and git packages of a `Cargo.lock`, by name.
fn lock_packages(text: &str) -> BTreeMap<String, String> {
    let Ok(table) = text.parse::<toml::Table>() else { return BTreeMap::new() };
    let mut versions: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for package in table.get("package").and_then(|p| p.as_array()).into_iter().flatten() {
        let (Some(name), Some(version), Some(source)) = (
            package.get("name").and_then(|v| v.as_str()),
            package.get("version").and_then(|v| v.as_str()),
            package.get("source").and_then(|v| v.as_str()),
        ) else {
            continue;
        };
        // A git dependency is pinned by its commit, after `#`.
        let version = match source.strip_prefix("git+").and_then(|s| s.rsplit_once('#')) {
            Some((_, rev)) => format!("{version} (git {})", &rev[..rev.len().min(12)]),
            None => version.to_owned(),
        };
        versions.entry(name.to_owned()).or_default().push(version);
    }
    versions
        .into_iter()
        .map(|(name, mut v)| {
            v.sort();
            v.dedup();
            (name, v.join(", "))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_lists_leave_out_the_main_module() {
        let list = "example.com/app\ngolang.org/x/sync v0.1.0\nexample.com/lib v1.2.0 => ../lib\n";
        let modules = parse_module_list(list);
        assert_eq!(modules.len(), 2);
        assert_eq!(modules["golang.org/x/sync"], "v0.1.0");
        assert_eq!(modules["example.com/lib"], "v1.2.0 => ../lib");
    }

    #[test]
    fn lock_files_pin_registry_and_git_packages_only() {
        let lock = r#"
version = 3

[[package]]
name = "app"
version = "0.1.0"

[[package]]
name = "syn"
version = "2.0.48"
source = "registry+https://github.com/rust-lang/crates.io-index"

[[package]]
name = "syn"
version = "1.0.109"
source = "registry+https://github.com/rust-lang/crates.io-index"

[[package]]
name = "fork"
version = "0.3.0"
source = "git+https://github.com/x/fork?branch=main#0123456789abcdef0123"
"#;
        let packages = lock_packages(lock);
        assert_eq!(packages.len(), 2, "{packages:?}");
        assert_eq!(packages["syn"], "1.0.109, 2.0.48");
        assert_eq!(packages["fork"], "0.3.0 (git 0123456789ab)");
        assert!(lock_packages("not toml [").is_empty());
    }

    #[test]
    fn toolchain_files_old_and_new() {
        assert_eq!(toolchain_channel("[toolchain]\nchannel = \"1.85.0\"\n").as_deref(), Some("1.85.0"));
        assert_eq!(toolchain_channel("nightly-2024-01-01\n").as_deref(), Some("nightly-2024-01-01"));
    }

    #[test]
    fn this_repositorys_lock_file_is_found_from_a_crate_directory() {
        let rust = rust(Path::new(env!("CARGO_MANIFEST_DIR")), None);
        let lock = rust.cargo_lock.expect("the workspace's Cargo.lock");
        assert!(lock.path.ends_with("Cargo.lock"));
        assert_eq!(lock.digest.len(), 64);
        assert!(lock.packages.contains_key("serde"), "{:?}", lock.packages.keys().take(5).collect::<Vec<_>>());
    }
}
