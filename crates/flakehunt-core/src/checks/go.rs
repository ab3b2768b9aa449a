//! The Go goroutine leak check: a `TestMain` (`leakcheck.go`) given to `go test -c` through
//! `-overlay`, so the package's own files stay as they are. Main type: [`Overlay`].

use std::path::{Path, PathBuf};

/// The check's source; its package clause names the package under test.
const SOURCE: &str = include_str!("leakcheck.go");

/// The name the check's file has in the package, as the test output shows it.
pub const FILE_NAME: &str = "flakehunt_leakcheck_test.go";

/// The overlay of one package's build, in a temporary directory removed with it.
#[derive(Debug)]
pub struct Overlay {
    dir: tempfile::TempDir,
}

impl Overlay {
    /// Writes the check for the package `name` in `package_dir` (absolute) and the overlay file
    /// that adds it there.
    pub fn write(name: &str, package_dir: &Path) -> std::io::Result<Self> {
        let dir = tempfile::Builder::new().prefix("flakehunt-leakcheck-").tempdir()?;
        let source = dir.path().join(FILE_NAME);
        std::fs::write(&source, SOURCE.replacen("\npackage PACKAGE\n", &format!("\npackage {name}\n"), 1))?;
        let replace = serde_json::json!({ "Replace": { package_dir.join(FILE_NAME).display().to_string(): source.display().to_string() } });
        std::fs::write(dir.path().join("overlay.json"), replace.to_string())?;
        Ok(Self { dir })
    }

    /// The file `go build -overlay` takes.
    pub fn file(&self) -> PathBuf {
        self.dir.path().join("overlay.json")
    }
}

/// Where a package's tests define their own `TestMain` (`main_test.go:12`), which the check
/// cannot wrap: Go allows one per test binary. `files` are the test files `go list` names
/// (`TestGoFiles` and `XTestGoFiles`, those the build constraints keep), in `dir`.
pub fn own_test_main(dir: &Path, files: &[String]) -> Option<String> {
    let re = regex::Regex::new(r"^func\s+TestMain\s*\(").expect("a valid regex");
    files.iter().find_map(|file| {
        let text = std::fs::read_to_string(dir.join(file)).ok()?;
        let line = text.lines().position(|l| re.is_match(l))?;
        Some(format!("{file}:{}", line + 1))
    })
}

/// The line that says a package's own `TestMain` keeps the check out, and what to do.
pub fn own_test_main_line(package: &str, at: &str) -> String {
    format!(
        "the goroutine leak check cannot wrap the TestMain of {package} ({at}): attempts run without it; \
         to check for leaks, end that TestMain with a check of your own (go.uber.org/goleak's \
         goleak.VerifyTestMain(m) in place of os.Exit(m.Run())), or give --no-leak-check to say nothing"
    )
}

/// The data races Go's race detector reported in `stderr`: each `WARNING: DATA RACE` block is
/// one finding, whose places are the first frame of each of its two accesses
/// (`ledger.go:20 (write)`, `ledger.go:31 (read)`).
pub fn races(stderr: &str) -> Vec<super::Finding> {
    let access =
        regex::Regex::new(r"^(previous )?(?:(atomic) )?(read|write) at 0x[0-9a-f]+ by ([a-z ]*goroutine[ 0-9]*):$")
            .expect("a valid regex");
    let mut found = Vec::new();
    let lines: Vec<&str> = stderr.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() != "WARNING: DATA RACE" {
            i += 1;
            continue;
        }
        let start = i;
        let (mut places, mut said) = (Vec::new(), Vec::new());
        i += 1;
        while i < lines.len() && !lines[i].starts_with("==================") {
            let line = lines[i].trim();
            if let Some(c) = access.captures(&line.to_ascii_lowercase()) {
                // The access's first frame: a function line, then its file:line.
                let place = lines[i + 1..]
                    .iter()
                    .take(2)
                    .map(|l| l.trim())
                    .find(|l| l.starts_with('/') || l.contains(".go:"))
                    .map(|l| l.split(" +0x").next().unwrap_or(l))
                    .map(|l| l.rsplit('/').next().unwrap_or(l).to_owned());
                let kind = format!("{}{}", c.get(2).map_or("", |_| "atomic "), &c[3]);
                if let Some(place) = place {
                    said.push(format!(
                        "{}{kind} at {place} by {}",
                        if c.get(1).is_some() { "previous " } else { "" },
                        &c[4]
                    ));
                    places.push(format!("{place} ({kind})"));
                }
            }
            i += 1;
        }
        let report = lines[start..i.min(lines.len())].join("\n");
        if !places.is_empty() {
            found.push(super::Finding {
                check: super::Check::Race,
                test: None,
                summary: format!("data race: {}", said.join(", ")),
                places,
                report,
                runner_failed: false,
            });
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// go 1.19's race detector on a counter two goroutines increment.
    const RACE: &str = "==================\nWARNING: DATA RACE\nRead at 0x000000701e48 by goroutine 9:\n  example.com/lk/p.bump()\n      /tmp/lk/p/race_test.go:7 +0x6a\n  example.com/lk/p.TestRace.func1()\n      /tmp/lk/p/race_test.go:13 +0x18\n\nPrevious write at 0x000000701e48 by goroutine 8:\n  example.com/lk/p.bump()\n      /tmp/lk/p/race_test.go:8 +0x84\n\nGoroutine 9 (running) created at:\n  example.com/lk/p.TestRace()\n      /tmp/lk/p/race_test.go:13 +0x64\n==================\n";

    #[test]
    fn a_race_report_names_both_accesses() {
        let found = races(&format!("ok\n{RACE}more output\n"));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].places, ["race_test.go:7 (read)", "race_test.go:8 (write)"]);
        assert_eq!(
            found[0].summary,
            "data race: read at race_test.go:7 by goroutine 9, previous write at race_test.go:8 by goroutine 8"
        );
        assert!(found[0].report.starts_with("WARNING: DATA RACE") && found[0].report.contains("created at"));
        assert!(races("no race here\n").is_empty());
    }

    #[test]
    fn the_overlay_adds_the_check_to_the_package() {
        let pkg = tempfile::tempdir().unwrap();
        let overlay = Overlay::write("ledger", pkg.path()).unwrap();
        let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(overlay.file()).unwrap()).unwrap();
        let (key, value) = json["Replace"].as_object().unwrap().iter().next().unwrap();
        assert_eq!(Path::new(key), pkg.path().join(FILE_NAME));
        let source = std::fs::read_to_string(value.as_str().unwrap()).unwrap();
        assert!(source.contains("\npackage ledger\n") && !source.contains("package PACKAGE"));
        assert!(!pkg.path().join(FILE_NAME).exists(), "the package directory is not written");
    }

    #[test]
    fn an_own_test_main_is_found_by_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a_test.go"), "package a\n\nfunc TestA(t *testing.T) {}\n").unwrap();
        std::fs::write(
            dir.path().join("main_test.go"),
            "package a\n\n// TestMain sets up.\nfunc TestMain(m *testing.M) {\n}\n",
        )
        .unwrap();
        let files = ["a_test.go".to_owned(), "main_test.go".to_owned()];
        assert_eq!(own_test_main(dir.path(), &files).as_deref(), Some("main_test.go:4"));
        assert_eq!(own_test_main(dir.path(), &files[..1]), None);
    }
}
