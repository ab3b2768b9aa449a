//! `flakehunt.toml`: profiles users compose from the same primitives as the built-ins, matrix
//! dimensions, and snapshot settings. Unknown keys and bad values are errors naming the file,
//! the line and what is allowed. Main type: [`Config`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::profile::{Knobs, Profile};

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

impl Config {
    /// Loads `explicit`, or `flakehunt.toml` in `dir` when present, or the empty configuration.
    pub fn load(explicit: Option<&Path>, dir: &Path) -> Result<(Self, Option<PathBuf>), ConfigError> {
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
        let text = std::fs::read_to_string(&path).map_err(|e| ConfigError {
            path: path.clone(),
            line: 0,
            message: format!("cannot read: {e}"),
        })?;
        Ok((Self::parse(&text, &path)?, Some(path)))
    }

    /// Parses and validates the text of a configuration file.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let config: Config = toml::from_str(text).map_err(|e| ConfigError {
            path: path.to_owned(),
            line: e.span().map_or(0, |s| line_of(text, s.start)),
            message: e.message().replace('\n', " "),
        })?;
        for (name, knobs) in &config.profiles {
            let line = text
                .lines()
                .position(|l| l.trim_start().starts_with(&format!("[profiles.{name}]")))
                .map_or(0, |i| i + 1);
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

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("flakehunt.toml"))
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
