//! The checks of failures the exit status hides, as the record keeps them: which were on, and
//! what they found in an attempt.

use serde::{Deserialize, Serialize};

/// The checks a hunt runs, as its plan records them: a record written before they existed read
/// as none, so `report` and `merge` judge it as its live run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Checks {
    /// Go (`--go-test`): goroutines left running after a test fail it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub goroutine_leaks: bool,
    /// Go (`--go-test --race`): the test binary is built with the race detector.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub race: bool,
    /// Python targets: an exception that ends a thread, or that Python cannot raise (in
    /// `__del__`, a callback), fails the attempt (pytest: its warnings about them are errors).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub thread_exceptions: bool,
    /// Rust (`--cargo-test`): a panic of a thread other than the test's own fails the attempt
    /// (libtest runs with `--show-output`, which prints it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub thread_panics: bool,
}

impl Checks {
    /// Whether no check is on.
    pub fn is_none(&self) -> bool {
        *self == Checks::default()
    }

    /// The line that says, before the attempts, which checks are on and how to turn each off.
    pub fn line(&self) -> Option<String> {
        let mut on = Vec::new();
        if self.goroutine_leaks {
            on.push("goroutine leaks (--no-leak-check turns it off)");
        }
        if self.race {
            on.push("data races (the race detector, --race)");
        }
        if self.thread_exceptions {
            on.push("exceptions in threads (--no-thread-check turns it off)");
        }
        if self.thread_panics {
            on.push("panics in threads (--no-thread-check turns it off)");
        }
        (!on.is_empty()).then(|| format!("checks: {}", on.join(", ")))
    }

    /// The names of the checks that are on, as the output and the README name them.
    pub fn names(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        if self.goroutine_leaks {
            names.push("goroutine leaks");
        }
        if self.race {
            names.push("data races");
        }
        if self.thread_exceptions {
            names.push("exceptions in threads");
        }
        if self.thread_panics {
            names.push("panics in threads");
        }
        names
    }
}

/// The summary's account of the checks: which were on, and the attempts what they found failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChecksSummary {
    /// The checks that were on, by name.
    pub on: Vec<String>,
    /// Attempts that failed by what a check found.
    pub failed: u64,
}

impl ChecksSummary {
    /// The summary of a plan's `checks`, of which `failed` attempts failed by what one found;
    /// none when no check was on.
    pub fn of(checks: Checks, failed: u64) -> Option<Self> {
        (!checks.is_none()).then(|| Self { on: checks.names().into_iter().map(str::to_owned).collect(), failed })
    }

    /// The note every rendering shows.
    pub fn note(&self, attempts: u64) -> String {
        format!(
            "checks of failures the exit status hides: {} ({} of {attempts} attempts failed by what they found)",
            self.on.join(", "),
            self.failed
        )
    }
}

/// What a check is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Check {
    /// Goroutines a Go test left running, blocked.
    GoroutineLeak,
    /// A data race Go's race detector reported.
    Race,
    /// An exception that ended a Python thread.
    ThreadException,
    /// An exception Python could not raise (in `__del__`, a callback) and only printed.
    Unraisable,
    /// A panic of a thread other than a passing Rust test's own.
    ThreadPanic,
}

impl Check {
    /// The check's name in the output.
    pub fn name(self) -> &'static str {
        match self {
            Check::GoroutineLeak => "goroutine leak check",
            Check::Race => "race detector",
            Check::ThreadException | Check::Unraisable | Check::ThreadPanic => "thread check",
        }
    }
}

/// One thing a check found in an attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The check.
    pub check: Check,
    /// The test after which it appeared, when the check could tell.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_empty")]
    pub test: Option<String>,
    /// One line: `leaked goroutines: 2, blocked at ledger.go:41 (chan send)`.
    pub summary: String,
    /// Where it happened, as `file:line` with what it was doing: the signature's words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub places: Vec<String>,
    /// The stacks or traceback behind it, cut to `checks::REPORT_LIMIT` bytes.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub report: String,
    /// The test runner failed `test` for it: pytest, whose warning about it the thread check
    /// made an error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub runner_failed: bool,
}

fn non_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s: Option<String> = Option::deserialize(d)?;
    Ok(s.filter(|s| !s.is_empty()))
}

impl Finding {
    /// Whether the check itself makes the target exit non-zero (the Go leak check fails the
    /// test; the race detector too; pytest, for the thread check's warnings), so that a failing
    /// exit status is its doing.
    pub fn fails_the_target(&self) -> bool {
        self.runner_failed || matches!(self.check, Check::GoroutineLeak | Check::Race)
    }

    /// The line the live display shows under a new failure this finding caused:
    /// `goroutine leak check, after TestX: leaked goroutines: 2, blocked at ledger.go:41 (chan send)`.
    pub fn line(&self) -> String {
        match &self.test {
            Some(test) => format!("{}, after {test}: {}", self.check.name(), self.summary),
            None => format!("{}: {}", self.check.name(), self.summary),
        }
    }
}
