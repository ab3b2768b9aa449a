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

#[cfg(test)]
mod tests {
    use super::*;

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
