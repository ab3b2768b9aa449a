//! flakehunt's pytest plugin that runs a test twice in a row in one session (the check for
//! non-idempotent tests), embedded in the library and written where an attempt can load it.
//! Main function: [`write_plugin`].

use std::io;
use std::path::{Path, PathBuf};

/// The plugin's source (`flakehunt_repeat.py` beside this file).
pub const PLUGIN_SOURCE: &str = include_str!("flakehunt_repeat.py");

/// The module name `-p` loads; its file is `<dir>/flakehunt_repeat.py`, with `<dir>` on
/// `PYTHONPATH`.
pub const PLUGIN_MODULE: &str = "flakehunt_repeat";

/// The plugin's option that selects a test to repeat (given once per test).
pub const REPEAT_OPTION: &str = "--flakehunt-repeat";

/// The plugin's option that repeats every test.
pub const REPEAT_ALL_OPTION: &str = "--flakehunt-repeat-all";

/// Writes the plugin into `dir` (an attempt's scratch directory, or the record, so that a
/// printed reproducer keeps working) and returns the file's path. A file that holds it already
/// is not written again.
pub fn write_plugin(dir: &Path) -> io::Result<PathBuf> {
    let path = dir.join(format!("{PLUGIN_MODULE}.py"));
    if std::fs::read(&path).ok().as_deref() != Some(PLUGIN_SOURCE.as_bytes()) {
        std::fs::write(&path, PLUGIN_SOURCE)?;
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plugin_is_written_with_its_options() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_plugin(dir.path()).unwrap();
        assert_eq!(path.file_name().unwrap(), "flakehunt_repeat.py");
        let text = std::fs::read_to_string(path).unwrap();
        assert!(text.contains(&format!("\"{REPEAT_OPTION}\"")) && text.contains(&format!("\"{REPEAT_ALL_OPTION}\"")));
    }
}
