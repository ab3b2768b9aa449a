//! Whether a Rust thread's panic is one its test raises on purpose, read from the source at the
//! panic's location: a `panic!` (or `unreachable!`, `todo!`, `unimplemented!`, `panic_any`)
//! written in test code. Tests of panic handling make threads panic so (a lock's poisoning, a
//! pool that survives a job's panic, a scope that reports its threads' panics), then look at the
//! result; the bug the thread check is for panics elsewhere: an assertion or an `unwrap` in a
//! thread nobody joins, or the code under test. Main function: [`on_purpose`].

use std::path::{Path, PathBuf};

/// The macros and functions that panic by being called.
const EXPLICIT: [&str; 9] = [
    "panic!",
    "std::panic!",
    "core::panic!",
    "unreachable!",
    "unimplemented!",
    "todo!",
    "panic_any(",
    "std::panic::panic_any(",
    "panic::panic_any(",
];

/// The largest source file read.
const SOURCE_LIMIT: u64 = 4 << 20;

/// Whether the panic at `location` (`src/lib.rs:12:9`, as Rust prints it: relative to the
/// workspace's root, which `root`, where the test ran, or one of its parents is) is an explicit
/// panic in test code: a file under `tests/`, `benches/` or `examples/`, a `tests.rs`, or an
/// item marked `#[cfg(test)]` or `#[test]`. A location whose source cannot be read is not.
pub fn on_purpose(location: &str, root: &Path) -> bool {
    let Some((file, line, column)) = parse(location) else { return false };
    let Some(path) = find(file, root) else { return false };
    let Some(text) = read(&path) else { return false };
    let Some(source_line) = text.lines().nth(line - 1) else { return false };
    let at: String = source_line.chars().skip(column - 1).collect();
    EXPLICIT.iter().any(|call| at.starts_with(call)) && (test_file(file) || in_test_item(&text, line))
}

/// `FILE:LINE:COLUMN`, each number from 1.
fn parse(location: &str) -> Option<(&str, usize, usize)> {
    let mut parts = location.rsplitn(3, ':');
    let column: usize = parts.next()?.parse().ok()?;
    let line: usize = parts.next()?.parse().ok()?;
    let file = parts.next()?;
    (line > 0 && column > 0 && !file.is_empty()).then_some((file, line, column))
}

/// The source file `file` names: absolute as it is, else under `root` or the first of its
/// parents that has it (a workspace member's test runs in its own directory, and Rust names its
/// files from the workspace's root).
fn find(file: &str, root: &Path) -> Option<PathBuf> {
    let file = Path::new(file);
    if file.is_absolute() {
        return file.is_file().then(|| file.to_owned());
    }
    let root = std::path::absolute(root).ok()?;
    root.ancestors().map(|dir| dir.join(file)).find(|p| p.is_file())
}

fn read(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path).ok()?.take(SOURCE_LIMIT).read_to_string(&mut text).ok()?;
    Some(text)
}

/// Whether a file is test code by where it is: an integration test, a benchmark, an example, or
/// a module of tests in a file of its own (`tests.rs`, `src/tests/...`).
fn test_file(file: &str) -> bool {
    let path = Path::new(file);
    let in_dir = path.parent().is_some_and(|dir| {
        dir.components().any(|c| matches!(c.as_os_str().to_str(), Some("tests" | "benches" | "examples")))
    });
    in_dir || matches!(path.file_stem().and_then(|s| s.to_str()), Some("tests" | "test"))
}

/// Whether line `line` (from 1) of `text` is inside an item marked `#[cfg(test)]` or `#[test]`
/// (`#[tokio::test]` and the like too): from the attribute to the brace that closes the item.
fn in_test_item(text: &str, line: usize) -> bool {
    let mut offset = 0;
    for (i, l) in text.lines().enumerate() {
        let attribute = l.trim_start();
        let marks_test = attribute.starts_with("#[cfg(test)]")
            || (attribute.starts_with("#[") && (attribute.starts_with("#[test]") || attribute.contains("::test]")));
        if marks_test && i < line {
            if let Some(end) = item_end(text, offset) {
                let end_line = text[..end].matches('\n').count() + 1;
                if line <= end_line {
                    return true;
                }
            }
        }
        offset += l.len() + 1;
        if i >= line {
            break;
        }
    }
    false
}

/// The offset of the brace that closes the first item starting at `from`, skipping comments,
/// strings and character literals; none when a `;` ends it first (`#[cfg(test)] mod tests;`).
fn item_end(text: &str, from: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = from;
    // The attribute's own brackets hold no braces worth counting: start after its line.
    while i < bytes.len() && bytes[i] != b'\n' {
        i += 1;
    }
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i = text[i + 2..].find("*/").map_or(bytes.len(), |j| i + 2 + j + 1);
            }
            b'"' => i = string_end(bytes, i + 1, 0),
            b'r' if raw_string_start(bytes, i).is_some() => {
                let (hashes, quote) = raw_string_start(bytes, i).unwrap_or_default();
                i = string_end(bytes, quote + 1, hashes);
            }
            b'\'' => {
                // A character literal ('{', '\n', '\u{7b}'), not a lifetime ('a).
                let close = if bytes.get(i + 1) == Some(&b'\\') {
                    text[i + 2..].find('\'').map(|j| i + 2 + j)
                } else {
                    let c = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                    (bytes.get(i + 1 + c) == Some(&b'\'')).then_some(i + 1 + c)
                };
                if let Some(close) = close {
                    i = close;
                }
            }
            b';' if depth == 0 => return None,
            b'{' => depth += 1,
            b'}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// `r"`, `r#"`, `br##"` at `i` (not inside an identifier): the number of `#` and the quote's offset.
fn raw_string_start(bytes: &[u8], i: usize) -> Option<(usize, usize)> {
    let before = i.checked_sub(1).map(|j| bytes[j]);
    let starts_word = before.is_none_or(|b| !(b.is_ascii_alphanumeric() || b == b'_') || b == b'b');
    if !starts_word
        || (before == Some(b'b') && i >= 2 && (bytes[i - 2].is_ascii_alphanumeric() || bytes[i - 2] == b'_'))
    {
        return None;
    }
    let mut j = i + 1;
    while bytes.get(j) == Some(&b'#') {
        j += 1;
    }
    (bytes.get(j) == Some(&b'"')).then_some((j - i - 1, j))
}

/// The offset of the quote that ends a string whose text starts at `i` (a raw one's: followed
/// by `hashes` `#`s, no escapes).
fn string_end(bytes: &[u8], mut i: usize, hashes: usize) -> usize {
    let raw = hashes > 0 || (i >= 2 && bytes[i - 2] == b'r');
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if !raw => i += 1,
            b'"' if bytes[i + 1..].iter().take(hashes).filter(|b| **b == b'#').count() == hashes => {
                return i + hashes;
            }
            _ => {}
        }
        i += 1;
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIB: &str = r##"//! A ledger.
pub fn deposit(n: u64) {
    if n % 3 == 0 {
        panic!("lost update in iteration {n}");
    }
}

#[cfg(test)]
mod tests {
    // A brace in a comment: {
    const BRACE: char = '{';
    const TEXT: &str = "}}} \" {";
    const RAW: &str = r#"}"{"#;

    fn helper<'a>(s: &'a str) -> &'a str { s }

    #[test]
    fn poisons() {
        let h = std::thread::spawn(|| panic!("on purpose"));
        assert!(h.join().is_err());
        std::thread::spawn(|| assert!(helper("x").is_empty()));
    }
}

pub fn after() {
    unreachable!("not a test's");
}
"##;

    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::create_dir_all(dir.path().join("tests")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), LIB).unwrap();
        std::fs::write(dir.path().join("tests/it.rs"), "fn t() {\n    std::thread::spawn(|| panic!());\n}\n").unwrap();
        dir
    }

    #[test]
    fn an_explicit_panic_in_test_code_is_on_purpose() {
        let dir = project();
        let root = dir.path();
        assert!(on_purpose("src/lib.rs:19:39", root), "panic! in the tests module");
        assert!(on_purpose("tests/it.rs:2:27", root), "panic! in an integration test");
        // A workspace member's test runs in its directory; Rust names files from the root.
        let member = root.join("crates/m");
        std::fs::create_dir_all(&member).unwrap();
        assert!(on_purpose("src/lib.rs:19:39", &member));
    }

    #[test]
    fn an_assertion_or_the_code_under_test_is_not() {
        let dir = project();
        let root = dir.path();
        assert!(!on_purpose("src/lib.rs:4:9", root), "panic! in the code under test");
        assert!(!on_purpose("src/lib.rs:21:31", root), "an assertion in a test's thread");
        assert!(!on_purpose("src/lib.rs:26:5", root), "after the tests module ends");
        assert!(!on_purpose("src/gone.rs:1:1", root), "no source");
        assert!(!on_purpose("src/lib.rs:900:1", root), "no such line");
        assert!(!on_purpose("nonsense", root));
    }

    #[test]
    fn a_test_module_in_a_file_of_its_own_is_test_code() {
        assert!(test_file("src/tests.rs") && test_file("src/ledger/tests/mod.rs") && test_file("crates/a/tests/it.rs"));
        assert!(test_file("benches/b.rs") && !test_file("src/lib.rs") && !test_file("src/testing.rs"));
        assert_eq!(item_end("#[cfg(test)]\nmod tests;\nfn x() {}\n", 0), None);
    }
}
