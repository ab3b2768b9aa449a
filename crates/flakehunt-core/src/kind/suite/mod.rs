//! `flakehunt suite`, the parts that need no driver: collecting a suite's test ids, reading
//! per-test results from a runner's structured output, ordering an attempt, bisecting for
//! polluters and state-setters, classifying each failing test and the summary's `tests`.
//! Main types: [`TestResult`], [`bisect::Bisection`], [`classify::Category`],
//! [`summary::SuiteSummary`].

pub mod analyse;
pub mod bisect;
pub mod classify;
pub mod collect;
pub mod cost;
mod go_state;
pub mod gotest;
mod hunt;
pub mod libtest;
pub mod order;
pub(crate) mod prepare;
pub mod pytestlog;
pub mod record;
pub mod repeat;
pub mod run;
pub mod setup;
pub mod side_by_side;
pub mod state;
mod state_search;
pub mod summary;
pub mod written;

#[cfg(test)]
mod real_tests;
#[cfg(test)]
mod state_tests;

pub use hunt::Suite;

pub use crate::schema::suite::{Framework, TestId, TestOutcome, TestResult};

/// The longest message kept per failing test: enough for an assertion's first lines.
pub const MESSAGE_LIMIT: usize = 400;

/// `text` cut to [`MESSAGE_LIMIT`] bytes at a character boundary, trimmed.
pub(crate) fn short_message(text: &str) -> Option<String> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    if text.len() <= MESSAGE_LIMIT {
        return Some(text.to_owned());
    }
    let mut end = MESSAGE_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Some(format!("{}...", &text[..end]))
}

/// What reading a runner's output can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// The collection gave no test ids, and why (pytest's own words, quoted).
    #[error("{0}")]
    Collection(String),
    /// A line of a `go test -json` stream is not a test2json event.
    #[error("line {line} of the go test -json output is not a test2json event")]
    GoEvent {
        /// Line number, from 1.
        line: usize,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
}

impl crate::error_class::Classify for ParseError {
    fn class(&self) -> crate::error_class::ErrorClass {
        match self {
            // What the user's test runner printed, not flakehunt's data or the machine's.
            Self::Collection(_) | Self::GoEvent { .. } => crate::error_class::ErrorClass::Usage,
        }
    }
}

/// A suite hunt's own errors.
#[derive(Debug, thiserror::Error)]
pub enum SuiteFailure {
    /// The suite's runner did not say which tests it has.
    #[error("--pytest")]
    Collection(#[source] ParseError),
}

impl crate::error_class::Classify for SuiteFailure {
    fn class(&self) -> crate::error_class::ErrorClass {
        match self {
            Self::Collection(e) => e.class(),
        }
    }
}

impl crate::spec::KindError for SuiteFailure {}

impl From<SuiteFailure> for crate::spec::HuntError {
    fn from(e: SuiteFailure) -> Self {
        crate::spec::HuntError::of_kind(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_trimmed_and_cut_at_a_character_boundary() {
        assert_eq!(short_message("  \n"), None);
        assert_eq!(short_message(" boom \n").as_deref(), Some("boom"));
        let long = "é".repeat(MESSAGE_LIMIT);
        let cut = short_message(&long).unwrap();
        assert!(cut.ends_with("...") && cut.len() <= MESSAGE_LIMIT + 3, "{}", cut.len());
    }

    #[test]
    fn outcomes_serialize_kebab_case_and_only_fail_and_error_count() {
        assert_eq!(serde_json::to_string(&TestOutcome::Skip).unwrap(), "\"skip\"");
        assert!(TestOutcome::Error.is_failure() && TestOutcome::Fail.is_failure());
        assert!(!TestOutcome::Pass.is_failure() && !TestOutcome::Skip.is_failure());
        assert!(!Framework::Libtest.orders() && Framework::Pytest.orders());
    }
}
