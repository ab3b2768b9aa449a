//! `flakehunt.toml`: profiles users compose from the same primitives as the built-ins, matrix
//! dimensions, and snapshot settings. Unknown keys and bad values are errors naming the file,
//! the line and what is allowed. Main type: [`Config`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::profile::{BuiltinProfiles, Knobs, Profile, ValidateKnobs};

/// The file name looked for in the current directory.
pub const FILE_NAME: &str = "flakehunt.toml";

/// The whole configuration file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Config {
    /// User profiles by name.
    #[serde(default)]
    pub profiles: BTreeMap<String, Knobs>,
    /// Matrix dimensions.
    #[serde(default)]
    pub matrix: MatrixConfig,
    /// Environment snapshot settings.
    #[serde(default)]
    pub snapshot: SnapshotConfig,
    /// Warm attempts' settings.
    #[serde(default)]
    pub warm: WarmConfig,
}

/// `[warm]`: how warm attempts (`--warm`) run.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct WarmConfig {
    /// A new warm parent (a new `PYTHONHASHSEED`) after this many attempts; 0 keeps one
    /// parent per cell (default 50).
    pub recycle_after: Option<u64>,
    /// Run every Nth attempt of a cell cold, so that the summary compares warm and cold
    /// failure rates; 0 or absent: none.
    pub cold_every: Option<u64>,
}

/// `[matrix]`: dimensions added to those given with `-D` and `--rlimit`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct MatrixConfig {
    /// Environment variables (or `{placeholders}` when the name appears in the argv) and their values.
    #[serde(default)]
    pub env: BTreeMap<String, Vec<String>>,
    /// Resource limits and their values (`"unlimited"` allowed).
    #[serde(default)]
    pub rlimits: BTreeMap<String, Vec<toml::Value>>,
}

/// `[snapshot]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct SnapshotConfig {
    /// Commands whose first output line goes in the snapshot (`"python3 --version"`).
    #[serde(default)]
    pub tools: Vec<String>,
}

/// A configuration error: one line naming the file, the line and the fix.
#[derive(Debug, thiserror::Error)]
#[error("{path}:{line}: {message}")]
pub struct ConfigError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// What is wrong and what is allowed.
    pub message: String,
}

/// Why the configuration file could not be loaded: it could not be read, or it is not valid.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The system refused to read the file, or it does not exist.
    #[error("{}:0: cannot read", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file says something that is not a valid configuration.
    #[error(transparent)]
    Invalid(#[from] ConfigError),
}

impl crate::error_class::Classify for LoadError {
    fn class(&self) -> crate::error_class::ErrorClass {
        match self {
            // A `--config` that names no file is the user's to fix.
            Self::Read { source, .. } => crate::error_class::ErrorClass::of_named_input(source),
            Self::Invalid(ConfigError { .. }) => crate::error_class::ErrorClass::Usage,
        }
    }
}

impl Config {
    /// Loads `explicit`, or `flakehunt.toml` in `dir` when present, or the empty configuration.
    pub fn load(explicit: Option<&Path>, dir: &Path) -> Result<(Self, Option<PathBuf>), LoadError> {
        let path = match explicit {
            Some(p) => p.to_owned(),
            None => {
                let p = dir.join(FILE_NAME);
                if !p.exists() {
                    return Ok((Self::default(), None));
                }
                p
            }
        };
        let text = read_bounded(&path)?;
        Ok((Self::parse(&text, &path)?, Some(path)))
    }

    /// Parses and validates the text of a configuration file.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        if text.len() > MAX_BYTES {
            return Err(too_large(path, text.len() as u64));
        }
        let lines = LineIndex::new(text);
        let config: Config = toml::from_str(text).map_err(|e| ConfigError {
            path: path.to_owned(),
            line: e.span().map_or(0, |s| lines.line_of(s.start)),
            message: e.message().replace('\n', " "),
        })?;
        // Where each profile is defined, from the parser's own spans: a header written any way
        // TOML allows (`[profiles."a b"]`, `[ profiles.x ]`, `profiles.x = { .. }`) has its line.
        #[derive(Deserialize)]
        struct Spans {
            #[serde(default)]
            profiles: BTreeMap<String, toml::Spanned<serde::de::IgnoredAny>>,
        }
        let spans: Spans = toml::from_str(text).unwrap_or(Spans { profiles: BTreeMap::new() });
        for (name, knobs) in &config.profiles {
            let line = spans.profiles.get(name).map_or(0, |s| lines.line_of(s.span().start));
            let err = |message: String| ConfigError { path: path.to_owned(), line, message };
            if Profile::builtin(name).is_some() {
                return Err(err(format!("profile '{name}' has the name of a built-in profile: choose another name")));
            }
            if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
                return Err(err(format!("profile name '{name}': use letters, digits, '-' and '_'")));
            }
            knobs.validate().map_err(|m| err(format!("profile '{name}': {m}")))?;
        }
        Ok(config)
    }

    /// The user's profiles, as profiles.
    pub fn user_profiles(&self) -> Vec<Profile> {
        self.profiles
            .iter()
            .map(|(name, knobs)| Profile {
                name: name.clone(),
                summary: knobs.description.clone().unwrap_or_else(|| describe(knobs)),
                knobs: knobs.clone(),
            })
            .collect()
    }
}

/// A one-line description of what a set of knobs does, for profiles without a description.
pub fn describe(k: &Knobs) -> String {
    let mut parts = Vec::new();
    if let Some(n) = k.cpus {
        parts.push(format!("{n} CPU(s){}", if k.runtime_hints == Some(true) { " with runtime hints" } else { "" }));
    }
    if let Some(q) = k.cpu_quota {
        parts.push(format!("{q} % CPU quota"));
    }
    if let Some(n) = k.nice {
        parts.push(format!("nice {n}"));
    }
    if let Some(p) = k.policy {
        parts.push(format!("policy {p:?}").to_lowercase());
    }
    if let Some(n) = k.noise_threads {
        parts.push(format!("{n} noise thread(s)"));
    }
    if let Some(p) = k.pause {
        parts.push(format!("pauses {}-{} ms every 0-{} ms", p.min_ms, p.max_ms, p.every_max_ms));
    }
    if !k.env.is_empty() {
        parts.push(format!("env {}", k.env.iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>().join(" ")));
    }
    if !k.rlimits.is_empty() {
        parts.push(format!(
            "rlimits {}",
            k.rlimits.iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>().join(" ")
        ));
    }
    if let Some(s) = k.python_switch_interval {
        parts.push(format!("python switch interval {s}"));
    }
    if let Some(r) = k.jitter {
        let delay = match k.jitter_sleep_us {
            Some([min, max]) if min == max => format!(", sleeping {min} us"),
            Some([min, max]) => format!(", sleeping {min}-{max} us"),
            None => String::new(),
        };
        parts.push(format!("jitter on {:.0} % of synchronisation and I/O calls{delay}", r * 100.0));
    }
    if let Some(n) = k.copies {
        parts.push(format!("{n} concurrent copies"));
    }
    if parts.is_empty() {
        "no changes".into()
    } else {
        parts.join(", ")
    }
}

/// The largest configuration file read: far above any hand-written one, and small enough that
/// a file generated by mistake (or a wrong `--config`) is refused at once.
pub const MAX_BYTES: usize = 1 << 20;

fn too_large(path: &Path, len: u64) -> ConfigError {
    ConfigError {
        path: path.to_owned(),
        line: 0,
        message: format!(
            "{len} bytes, more than the {MAX_BYTES} a configuration file may have: is it the right file? (--config FILE)"
        ),
    }
}

/// Reads the file, refusing one larger than [`MAX_BYTES`] before reading it (a device or a FIFO
/// given as `--config` is read only up to the bound).
fn read_bounded(path: &Path) -> Result<String, LoadError> {
    use std::io::Read;
    let err = |source: std::io::Error| LoadError::Read { path: path.to_owned(), source };
    let file = std::fs::File::open(path).map_err(err)?;
    let mut bytes = Vec::new();
    file.take(MAX_BYTES as u64 + 1).read_to_end(&mut bytes).map_err(err)?;
    if bytes.len() > MAX_BYTES {
        let len = std::fs::metadata(path).map_or(bytes.len() as u64, |m| m.len().max(bytes.len() as u64));
        return Err(too_large(path, len).into());
    }
    String::from_utf8(bytes).map_err(|e| {
        LoadError::Invalid(ConfigError {
            path: path.to_owned(),
            line: 1 + e.as_bytes()[..e.utf8_error().valid_up_to()].iter().filter(|&&b| b == b'\n').count(),
            message: "not UTF-8 text: TOML files are UTF-8".to_owned(),
        })
    })
}

/// Line numbers of byte offsets, found by binary search in the offsets of the line starts, so a
/// file with many errors or profiles costs one pass over its text.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> Self {
        let starts = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
        Self { starts }
    }

    /// The 1-based line holding byte `offset`.
    fn line_of(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("flakehunt.toml"))
    }

    #[test]
    fn a_profile_error_names_the_line_however_its_header_is_written() {
        let e = parse("\n\n[profiles.\"bad name\"]\ncpus = 1\n").unwrap_err().to_string();
        assert_eq!(e, "flakehunt.toml:3: profile name 'bad name': use letters, digits, '-' and '_'");
        let e = parse("[profiles.ok]\ncpus = 1\n\n[ profiles . x ]\nnice = 40\n").unwrap_err().to_string();
        assert!(e.starts_with("flakehunt.toml:4: profile 'x'"), "{e}");
        let e = parse("[profiles]\na = { cpus = 1 }\nb = { nice = 99 }\n").unwrap_err().to_string();
        assert!(e.starts_with("flakehunt.toml:3: profile 'b'"), "{e}");
        let e = parse("[profiles.\"caf\u{e9}\"]\ncpus = 1\n").unwrap_err().to_string();
        assert!(e.starts_with("flakehunt.toml:1: profile name 'caf\u{e9}'"), "{e}");
        let e = parse("[profiles.\"a\\u0000b\"]\ncpus = 1\n").unwrap_err().to_string();
        assert!(e.starts_with("flakehunt.toml:1: profile name 'a\0b'"), "{e}");
    }

    #[test]
    fn hostile_values_are_refused_with_their_line() {
        for (text, needle) in [
            ("[profiles.x]\nnoise-threads = 100000000\n", "noise-threads = 100000000: at most"),
            ("[profiles.x]\nnoise-threads = -1\n", "flakehunt.toml:2:"),
            ("[profiles.x]\ncpu-quota = nan\n", "cpu-quota = NaN"),
            ("[profiles.x]\ncpu-quota = inf\n", "cpu-quota = inf"),
            ("[profiles.x]\njitter = -0.0\n", "jitter = -0"),
            ("[profiles.x]\npython-switch-interval = 1e308\n", "python-switch-interval = 1000"),
            ("[profiles.x]\ncpus = 18446744073709551616\n", "flakehunt.toml:2:"),
            ("[profiles.x]\nnice = -2147483649\n", "flakehunt.toml:2:"),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn a_file_larger_than_the_bound_is_refused_before_it_is_parsed() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("flakehunt.toml");
        let mut text = String::new();
        while text.len() <= MAX_BYTES {
            text.push_str(&format!("[profiles.p{}]\ncpus = 1\n", text.len()));
        }
        std::fs::write(&path, &text).unwrap();
        let e = Config::load(Some(&path), tmp.path()).unwrap_err();
        assert!(e.to_string().contains("more than the 1048576 a configuration file may have"), "{e}");
        std::fs::write(&path, b"[snapshot]\ntools = [\"\xff\"]\n").unwrap();
        let e = Config::load(Some(&path), tmp.path()).unwrap_err().to_string();
        assert!(e.ends_with(":2: not UTF-8 text: TOML files are UTF-8"), "{e}");
    }

    #[test]
    fn many_profiles_parse_in_one_pass() {
        // 20,000 profiles just under the size bound: before, finding each profile's line scanned
        // the whole text once per profile (20,000 scans of 1 MiB). Counted, not timed: the
        // index answers each line from the same one pass over the text.
        let mut text = String::new();
        let mut n = 0;
        while text.len() < MAX_BYTES - 64 {
            text.push_str(&format!("[profiles.p{n}]\ncpus = 1\n"));
            n += 1;
        }
        let c = parse(&text).unwrap();
        assert_eq!(c.profiles.len(), n);
        let index = LineIndex::new(&text);
        assert_eq!(index.line_of(0), 1);
        assert_eq!(index.line_of(text.len() - 1), 2 * n);
    }

    #[test]
    fn profiles_compose_primitives() {
        let c = parse(
            "[profiles.go-one]\ncpus = 1\nenv = { GOMAXPROCS = \"1\" }\n\n[profiles.slow]\ncpu-quota = 25\npause = { max-ms = 20 }\nrlimits = { nofile = 256 }\n",
        )
        .unwrap();
        let profiles = c.user_profiles();
        assert_eq!(profiles.len(), 2);
        assert_eq!(profiles[0].knobs.cpus, Some(1));
        assert_eq!(profiles[1].knobs.pause.unwrap().max_ms, 20.0);
        assert_eq!(profiles[1].knobs.pause.unwrap().min_ms, 1.0);
    }

    #[test]
    fn unknown_keys_name_file_line_and_allowed_keys() {
        let e = parse("[profiles.x]\ncpus = 1\ncpu-quotaa = 3\n").unwrap_err().to_string();
        assert!(e.starts_with("flakehunt.toml:3: "), "{e}");
        assert!(e.contains("cpu-quotaa") && e.contains("cpu-quota"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn bad_values_are_errors_with_the_profile_line() {
        let e = parse("\n[profiles.x]\nnice = 40\n").unwrap_err().to_string();
        assert_eq!(e, "flakehunt.toml:2: profile 'x': nice = 40: allowed -20 to 19");
        let e = parse("[profiles.x]\nrlimits = { files = 3 }\n").unwrap_err().to_string();
        assert!(e.contains("unknown rlimit 'files'"), "{e}");
        let e = parse("[profiles.one-core]\ncpus = 1\n").unwrap_err().to_string();
        assert!(e.contains("built-in"), "{e}");
        let e = parse("[profiles.x]\ncpus = \"one\"\n").unwrap_err().to_string();
        assert!(e.starts_with("flakehunt.toml:2:"), "{e}");
    }

    #[test]
    fn jitter_sleeps_need_a_rate_and_a_sane_range() {
        let c = parse("[profiles.wide]\njitter = 1.0\njitter-sleep-us = [20, 40]\n").unwrap();
        assert_eq!(c.profiles["wide"].jitter_sleep_us, Some([20, 40]));
        assert_eq!(c.user_profiles()[0].summary, "jitter on 100 % of synchronisation and I/O calls, sleeping 20-40 us");
        let e = parse("[profiles.x]\njitter-sleep-us = [20, 40]\n").unwrap_err().to_string();
        assert_eq!(
            e,
            "flakehunt.toml:1: profile 'x': jitter-sleep-us needs jitter = RATE, the share of calls to delay (1 delays every call)"
        );
        let e = parse("[profiles.x]\njitter = 0.5\njitter-sleep-us = [40, 20]\n").unwrap_err().to_string();
        assert!(e.contains("jitter-sleep-us = [40, 20]: give [MIN, MAX] microseconds"), "{e}");
        let e = parse("[profiles.x]\njitter = 0.5\njitter-sleep-us = [0, 20]\n").unwrap_err().to_string();
        assert!(e.contains("1 <= MIN <= MAX <= 1000000"), "{e}");
        let e = parse("[profiles.x]\njitter = 0.5\njitter-sleep-us = [20]\n").unwrap_err().to_string();
        assert_eq!(e, "flakehunt.toml:3: jitter-sleep-us takes [MIN, MAX] microseconds, e.g. [20, 50], not 1 value(s)");
    }
}
