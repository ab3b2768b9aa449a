//! The facts about this machine that decide whether flakehunt can make it look like another:
//! the CPUs it may pin to, its hard limits, its installed locales and time zones, its paths.
//! Main type: [`Here`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// This machine, as far as applying another machine's conditions goes.
#[derive(Debug, Clone)]
pub struct Here {
    /// CPUs this process may run on (what affinity can narrow).
    pub cpus: usize,
    /// Hard resource limits by name (`None`: unlimited): a soft limit can be set up to them.
    pub hard_limits: BTreeMap<String, Option<u64>>,
    /// Installed locales, normalised ([`normal_locale`]); `None` when they cannot be listed.
    pub locales: Option<BTreeSet<String>>,
    /// The time zone database, when there is one.
    pub zoneinfo: Option<PathBuf>,
}

impl Here {
    /// This machine now (`locale -a` is run once, to list its locales).
    pub fn detect() -> Self {
        let hard_limits =
            crate::exec::Resource::ALL.into_iter().map(|r| (r.name().to_owned(), r.current().1)).collect();
        let locales = std::process::Command::new("locale")
            .arg("-a")
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).lines().map(normal_locale).collect());
        let zoneinfo = ["/usr/share/zoneinfo", "/usr/lib/zoneinfo", "/usr/share/lib/zoneinfo"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.is_dir());
        Self { cpus: crate::profile::allowed_cpus().len().max(1), hard_limits, locales, zoneinfo }
    }

    /// Whether locale `name` can be used here: `Some(false)` when it is known not to be
    /// installed, `None` when that cannot be told.
    pub fn has_locale(&self, name: &str) -> Option<bool> {
        let normal = normal_locale(name);
        // Always there: the C library builds them in.
        if ["c", "posix", "c.utf8"].contains(&normal.as_str()) {
            return Some(true);
        }
        self.locales.as_ref().map(|l| l.contains(&normal))
    }

    /// Whether `TZ=zone` means that zone here: a file of the time zone database, or a POSIX
    /// rule (`UTC0`, `EST5EDT`, `<+03>-3`) the C library reads without one.
    pub fn has_zone(&self, zone: &str) -> bool {
        let zone = zone.strip_prefix(':').unwrap_or(zone);
        if zone.starts_with('/') {
            return Path::new(zone).is_file();
        }
        if zone.chars().any(|c| c.is_ascii_digit()) && !zone.contains('/') {
            return true;
        }
        if zone.contains("..") {
            return false;
        }
        self.zoneinfo.as_ref().is_some_and(|db| db.join(zone).is_file()) || zone == "UTC"
    }
}

/// A locale name as `locale -a` lists it, for comparison: the codeset lower-case without
/// dashes (`en_US.UTF-8` and `en_US.utf8` are one locale).
pub fn normal_locale(name: &str) -> String {
    let name = name.trim();
    match name.split_once('.') {
        Some((lang, rest)) => {
            let (codeset, modifier) = rest.split_once('@').map_or((rest, None), |(c, m)| (c, Some(m)));
            let codeset: String = codeset.chars().filter(|c| *c != '-').collect::<String>().to_ascii_lowercase();
            let lang = if lang.eq_ignore_ascii_case("c") { "c".to_owned() } else { lang.to_owned() };
            match modifier {
                Some(m) => format!("{lang}.{codeset}@{m}"),
                None => format!("{lang}.{codeset}"),
            }
        }
        None if name.eq_ignore_ascii_case("c") || name.eq_ignore_ascii_case("posix") => name.to_ascii_lowercase(),
        None => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locale_names_compare_by_their_codeset_spelt_any_way() {
        assert_eq!(normal_locale("en_US.UTF-8"), normal_locale("en_US.utf8"));
        assert_eq!(normal_locale("C.UTF-8"), "c.utf8");
        assert_eq!(normal_locale("de_DE.ISO-8859-1@euro"), "de_DE.iso88591@euro");
        let here = Here {
            cpus: 2,
            hard_limits: BTreeMap::new(),
            locales: Some(["c", "c.utf8", "posix", "en_US.utf8"].into_iter().map(str::to_owned).collect()),
            zoneinfo: None,
        };
        assert_eq!(here.has_locale("en_US.UTF-8"), Some(true));
        assert_eq!(here.has_locale("de_DE.UTF-8"), Some(false));
        assert_eq!(here.has_locale("C.UTF-8"), Some(true));
        assert_eq!(Here { locales: None, ..here }.has_locale("de_DE.UTF-8"), None);
    }

    #[test]
    fn zones_are_files_of_the_database_or_posix_rules() {
        let db = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(db.path().join("America")).unwrap();
        std::fs::write(db.path().join("America/New_York"), "TZif").unwrap();
        let here = Here { cpus: 1, hard_limits: BTreeMap::new(), locales: None, zoneinfo: Some(db.path().to_owned()) };
        assert!(here.has_zone("America/New_York"));
        assert!(here.has_zone(":America/New_York"));
        assert!(!here.has_zone("Mars/Olympus_Mons"));
        assert!(!here.has_zone("../../etc/passwd"));
        assert!(here.has_zone("UTC0"));
        assert!(here.has_zone("EST5EDT"));
        assert!(here.has_zone("UTC"));
    }
}
