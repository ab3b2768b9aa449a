//! The Rust thread check: libtest captures what a test prints, the panic messages of the threads
//! it spawns included (they inherit its capture), and throws a passing test's away unless it runs
//! with `--show-output`, which the check adds. A panic printed there by a thread other than the
//! test's own is a failure its exit status hid: a worker that died while the test went on,
//! unless the test's own code raised it on purpose (see [`super::deliberate`]). It imports
//! nothing of the checks' types (the suite's runner, which the record holds, builds its argv
//! from here): [`super::Finding`] is made from its [`TestPanics`]. Main function: [`panics`].

use std::path::Path;
use std::sync::OnceLock;

/// The libtest option that prints each passing test's captured output.
pub const SHOW_OUTPUT: &str = "--show-output";

/// The most lines of one panic kept in a finding's report (its message and backtrace).
const REPORT_LINES: usize = 60;

/// The panics of one passing test's other threads: what a finding of the thread check says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestPanics {
    /// The test.
    pub test: String,
    /// The first panic's line (`thread 'worker' panicked at src/lib.rs:12:9: lost update`),
    /// counted when there are more.
    pub summary: String,
    /// Each distinct panic's message (its numbers masked) and location: the signature's words.
    pub places: Vec<String>,
    /// Every panic as printed.
    pub report: String,
}

/// One `thread 'NAME' panicked at ...` of libtest's output.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Panic {
    /// The thread's name (`<unnamed>` for a thread spawned without one).
    thread: String,
    /// Where it panicked, as Rust prints it (`src/lib.rs:12:9`).
    location: String,
    /// The message's first line.
    message: String,
    /// The panic's lines as printed: the message, a backtrace if one was asked for.
    report: String,
}

/// The panics of threads other than the test's own in the output of the tests that passed
/// (libtest's `successes:` part, printed with `--show-output`), one finding per test: its
/// places are each panic's message and location (`lost update at src/lib.rs:12:9`). A test's
/// own thread is named after the test (and is `main` where an old libtest ran a lone test on
/// the main thread): its panic is the test's own failure, or expected (`#[should_panic]`,
/// `catch_unwind`) when the test passed anyway. A `panic!` written in test code is a test of
/// panics (its sources found from `root`, where the test ran). A failing test's section is not
/// read: its failure is the evidence.
pub fn panics(output: &str, root: &Path) -> Vec<TestPanics> {
    let lines: Vec<&str> = output.lines().collect();
    let mut by_test: Vec<(&str, Vec<Panic>)> = Vec::new();
    let mut in_successes = false;
    let mut section: Option<&str> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        match line {
            "successes:" => (in_successes, section) = (true, None),
            "failures:" => (in_successes, section) = (false, None),
            _ if line.starts_with("test result: ") => (in_successes, section) = (false, None),
            _ => {}
        }
        if let Some(name) = line.strip_prefix("---- ").and_then(|l| l.strip_suffix(" stdout ----")) {
            section = Some(name.strip_suffix(" - should panic").unwrap_or(name));
            continue;
        }
        let (true, Some(test)) = (in_successes, section) else { continue };
        let Some((panic, next)) = panic_at(&lines, i - 1) else { continue };
        i = next;
        if panic.thread == test || panic.thread == "main" || super::deliberate::on_purpose(&panic.location, root) {
            continue;
        }
        match by_test.iter_mut().find(|(t, _)| *t == test) {
            Some((_, panics)) => panics.push(panic),
            None => by_test.push((test, vec![panic])),
        }
    }
    by_test.into_iter().map(|(test, panics)| test_panics(test, &panics)).collect()
}

/// What a test whose other threads had these `panics` (at least one) is found with.
fn test_panics(test: &str, panics: &[Panic]) -> TestPanics {
    let first = &panics[0];
    let line = format!("thread '{}' panicked at {}: {}", first.thread, first.location, first.message);
    let line = match line.char_indices().nth(300) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    };
    let mut places: Vec<String> = Vec::new();
    for p in panics.iter().map(place) {
        if !places.contains(&p) {
            places.push(p);
        }
    }
    TestPanics {
        test: test.to_owned(),
        summary: match panics.len() {
            1 => line,
            n => format!("{n} threads panicked, first: {line}"),
        },
        places,
        report: panics.iter().map(|p| p.report.as_str()).collect::<Vec<_>>().join("\n\n"),
    }
}

/// The signature's words for a panic: its message's first line with the numbers that vary
/// masked, and where (`lost update in iteration <n> at src/lib.rs:12:9`). A location outside the
/// project (a dependency's absolute path) keeps only its file's name.
fn place(panic: &Panic) -> String {
    let location = match panic.location.strip_prefix('/') {
        Some(_) => panic.location.rsplit('/').next().unwrap_or(&panic.location),
        None => &panic.location,
    };
    let message = masked(&panic.message);
    let message = match message.char_indices().nth(100) {
        Some((cut, _)) => format!("{}…", &message[..cut]),
        None => message,
    };
    format!("{message} at {location}")
}

/// `text` with what varies between runs of the same panic masked, as signatures mask it:
/// addresses (`<hex>`) and numbers (`<n>`), whitespace collapsed.
fn masked(text: &str) -> String {
    static RULES: OnceLock<[(regex::Regex, &str); 3]> = OnceLock::new();
    let rules = RULES.get_or_init(|| {
        [(r"0x[0-9a-fA-F]+", "<hex>"), (r"\d+(\.\d+)?", "<n>"), (r"\s+", " ")]
            .map(|(re, with)| (regex::Regex::new(re).expect("a valid regex"), with))
    });
    let mut text = text.trim().to_owned();
    for (re, with) in rules {
        text = re.replace_all(&text, *with).into_owned();
    }
    text
}

/// The panic whose first line is `lines[at]`, if it is one, and the index of the line after it:
/// `thread 'NAME' panicked at FILE:L:C:` then the message (Rust 1.73 and later; 1.90 and later
/// put the thread's id after its name, `thread 'NAME' (1234) panicked`), or `thread 'NAME'
/// panicked at 'MESSAGE', FILE:L:C` (earlier). It ends at a blank line, the next panic or a
/// `note:` line; a backtrace printed after it (`RUST_BACKTRACE=1`) is kept with it.
fn panic_at(lines: &[&str], at: usize) -> Option<(Panic, usize)> {
    let rest = lines[at].strip_prefix("thread '")?;
    let (thread, rest) = rest.split_once("' ")?;
    let rest = match rest.strip_prefix('(') {
        Some(id) => id.split_once(") ")?.1,
        None => rest,
    };
    let rest = rest.strip_prefix("panicked at ")?;
    let (location, mut message) = match rest.strip_prefix('\'') {
        Some(quoted) => {
            let (message, location) = quoted.rsplit_once("', ")?;
            (location.to_owned(), message.lines().next().unwrap_or_default().to_owned())
        }
        None => (rest.strip_suffix(':').unwrap_or(rest).to_owned(), String::new()),
    };
    let mut end = at + 1;
    let mut in_backtrace = false;
    while end < lines.len() {
        let line = lines[end];
        if line.starts_with("thread '") || line.starts_with("---- ") {
            break;
        }
        if line == "stack backtrace:" {
            in_backtrace = true;
        } else if line.is_empty() || line.starts_with("note: ") {
            // A backtrace ends with its own note; the message, at its first blank line.
            end += usize::from(line.starts_with("note: "));
            break;
        } else if !in_backtrace && message.is_empty() {
            message = line.trim().to_owned();
        }
        end += 1;
    }
    let report = lines[at..end.min(at + REPORT_LINES)].join("\n");
    Some((Panic { thread: thread.to_owned(), location, message, report }, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rust 1.95, `--show-output`: a passing test whose worker panicked, a `#[should_panic]`
    /// test and a test that catches its own panic, then a failing test whose worker panicked.
    const OUTPUT: &str = "\nrunning 4 tests\ntest tests::worker ... ok\ntest tests::by_design - should panic ... ok\n\
        test tests::caught ... ok\ntest tests::fails ... FAILED\n\nsuccesses:\n\n---- tests::worker stdout ----\n\
        starting\nthread '<unnamed>' (29951) panicked at src/lib.rs:5:39:\nlost update in iteration 3\n\
        note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\n\
        ---- tests::by_design stdout ----\n\nthread 'tests::by_design' (29956) panicked at src/lib.rs:19:29:\nby design\n\n\
        ---- tests::caught stdout ----\n\nthread 'tests::caught' (29958) panicked at src/lib.rs:21:60:\ncaught on purpose\n\n\n\
        successes:\n    tests::by_design\n    tests::caught\n    tests::worker\n\nfailures:\n\n---- tests::fails stdout ----\n\
        thread 'worker' (3) panicked at src/lib.rs:30:9:\nboom\n\nthread 'tests::fails' (2) panicked at src/lib.rs:33:5:\nworker died\n\n\
        failures:\n    tests::fails\n\ntest result: FAILED. 3 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n";

    #[test]
    fn a_passing_tests_other_thread_is_found_and_its_own_never() {
        let found = panics(OUTPUT, Path::new("/nonexistent"));
        assert_eq!(found.len(), 1, "{found:#?}");
        let f = &found[0];
        assert_eq!(f.test, "tests::worker");
        assert_eq!(f.summary, "thread '<unnamed>' panicked at src/lib.rs:5:39: lost update in iteration 3");
        assert_eq!(f.places, ["lost update in iteration <n> at src/lib.rs:5:39"]);
        assert!(f.report.starts_with("thread '<unnamed>' (29951) panicked") && f.report.ends_with("a backtrace"));
        assert!(panics("running 1 test\ntest t ... ok\n\ntest result: ok. 1 passed\n", Path::new("/nonexistent"))
            .is_empty());
    }

    #[test]
    fn old_formats_backtraces_and_several_threads() {
        // Before Rust 1.73: the message in quotes on the panic's line.
        let old = "successes:\n\n---- t stdout ----\nthread '<unnamed>' panicked at 'lost update: 3 != 4', src/lib.rs:7:13\n\
                   note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\nsuccesses:\n    t\n";
        let found = panics(old, Path::new("/nonexistent"));
        assert_eq!(found[0].places, ["lost update: <n> != <n> at src/lib.rs:7:13"]);
        assert_eq!(found[0].summary, "thread '<unnamed>' panicked at src/lib.rs:7:13: lost update: 3 != 4");
        // Four workers, two places, a backtrace each; a dependency's absolute path by its file.
        let mut text = "successes:\n\n---- t stdout ----\n".to_owned();
        for (n, at) in
            [(1, "src/pool.rs:9:5"), (2, "src/pool.rs:9:5"), (3, "/home/u/.cargo/registry/src/x/dep/src/q.rs:4:1")]
        {
            text.push_str(&format!(
                "thread 'pool-{n}' panicked at {at}:\njob {n} failed\nstack backtrace:\n   0: rust_begin_unwind\n\
                 note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.\n"
            ));
        }
        let found = panics(&text, Path::new("/nonexistent"));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].places, ["job <n> failed at src/pool.rs:9:5", "job <n> failed at q.rs:4:1"]);
        assert_eq!(
            found[0].summary,
            "3 threads panicked, first: thread 'pool-1' panicked at src/pool.rs:9:5: job 1 failed"
        );
        assert_eq!(found[0].report.matches("stack backtrace:").count(), 3);
    }

    #[test]
    fn a_lone_test_on_the_main_thread_is_its_own() {
        let text = "successes:\n\n---- t stdout ----\nthread 'main' panicked at src/lib.rs:1:1:\nexpected\n\nsuccesses:\n    t\n";
        assert!(panics(text, Path::new("/nonexistent")).is_empty());
    }
}
