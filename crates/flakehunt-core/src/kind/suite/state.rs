//! Why an order-dependent pytest test depends on order: the state its polluters (or
//! state-setters) leave, found by fingerprinting the process around them and delta-debugging
//! the differences (`flakehunt_state.py`, a pytest plugin that imports the suite once and forks
//! per trial). Main type: [`StateFinding`]; a hunt keeps its findings in the record's
//! [`FILE`], which the summary's `tests[].state` is read from.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::TestId;
pub use crate::schema::suite::{FingerprintCost, StateDiff, StateFinding};

/// The plugin's source.
pub const PLUGIN_SOURCE: &str = include_str!("flakehunt_state.py");
/// The module name pytest loads it by (`-p flakehunt_state`).
pub const PLUGIN_MODULE: &str = "flakehunt_state";
/// The record's file of findings, one JSON array.
pub const FILE: &str = "state.json";
/// Runs of the victim with the smallest state restored that must pass before it is named.
pub const CONFIRMATIONS: u32 = 2;
/// Trials the delta debugging may take per test.
pub const MAX_TRIALS: u32 = 64;

/// Writes the plugin into `dir` (on the runs' PYTHONPATH).
pub fn write_plugin(dir: &Path) -> io::Result<PathBuf> {
    let path = dir.join(format!("{PLUGIN_MODULE}.py"));
    std::fs::write(&path, PLUGIN_SOURCE)?;
    Ok(path)
}

/// What the plugin is asked: the test, the tests that ran before it, and where to answer.
#[derive(Debug, Clone, Serialize)]
pub struct StateRequest {
    /// The victim (or the brittle test).
    pub victim: TestId,
    /// Its polluters (or state-setters), in the order they run.
    pub polluters: Vec<TestId>,
    /// An order-dependent brittle test: find the state whose setting makes it pass.
    pub brittle: bool,
    /// Confirmations of the smallest state.
    pub runs: u32,
    /// The trials' limit.
    pub max_trials: u32,
    /// The answer's file.
    pub out: PathBuf,
}

impl StateDiff {
    /// Its values as they may be written: a secret-named variable's or attribute's
    /// (`os.environ['API_TOKEN']`, `settings.SECRET_KEY`) redacted whole, any other with the
    /// secrets it holds redacted.
    fn redact(&mut self) {
        let name = self.path.trim_end_matches([']', '\'', '"']).rsplit(['.', '[', '\'', '"']).next().unwrap_or("");
        let name = name.to_owned();
        for value in [&mut self.before, &mut self.after].into_iter().flatten() {
            *value = crate::redact::env_value(&name, value).into_owned();
        }
        crate::redact::in_place(&mut self.path);
    }
}

/// What the plugin wrote.
#[derive(Debug, Deserialize)]
struct Answer {
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    state: Vec<StateDiff>,
    #[serde(default)]
    confirmed: Option<[u32; 2]>,
    #[serde(default)]
    verdict: Option<String>,
    #[serde(default)]
    different: u64,
    #[serde(default)]
    trials: u32,
    #[serde(default)]
    cost: Option<FingerprintCost>,
}

impl StateFinding {
    /// The finding as it may be written (unless `--no-redact`): the values of its state and its
    /// verdict with their secrets redacted (the test ids are written ones already).
    pub fn redact(&mut self) {
        self.state.iter_mut().for_each(StateDiff::redact);
        if let Some(v) = &mut self.verdict {
            crate::redact::in_place(v);
        }
    }

    /// The finding the plugin's answer `text` gives for `req` (ids as written: `test`,
    /// `polluters`); a run that wrote none (it timed out, pytest could not start) is
    /// `unanswered`, said as the verdict.
    pub fn from_answer(
        test: TestId,
        polluters: Vec<TestId>,
        brittle: bool,
        text: Option<&str>,
        unanswered: &str,
    ) -> Self {
        let mut finding = Self {
            test,
            polluters,
            brittle,
            state: Vec::new(),
            confirmed: None,
            verdict: None,
            different: 0,
            trials: 0,
            cost: None,
        };
        let answer = match text.map(serde_json::from_str::<Answer>) {
            Some(Ok(a)) => a,
            Some(Err(e)) => {
                finding.verdict = Some(format!("the state search's answer could not be read: {e}"));
                return finding;
            }
            None => {
                finding.verdict = Some(unanswered.to_owned());
                return finding;
            }
        };
        if let Some(e) = answer.error {
            finding.verdict = Some(format!("the state search failed: {e}"));
            return finding;
        }
        let confirmed = answer.confirmed.filter(|[passed, runs]| passed == runs && *runs > 0);
        finding.verdict = match (&answer.verdict, answer.confirmed, confirmed) {
            (Some(v), ..) => Some(v.clone()),
            (None, Some([passed, runs]), None) => {
                Some(format!("the smallest state found made it pass in {passed} of {runs} confirmations only"))
            }
            _ => None,
        };
        if confirmed.is_some() {
            finding.state = answer.state;
            finding.confirmed = confirmed;
        }
        finding.different = answer.different;
        finding.trials = answer.trials;
        finding.cost = answer.cost;
        finding
    }

    /// The finding in the user's words: "`V` fails after `P` because that test leaves
    /// `mod.X = True` (was `False`); restoring it makes `V` pass (2/2)", or why no state is named.
    pub fn sentence(&self) -> String {
        let culprits = self.polluters.join(" + ");
        let that = if self.polluters.len() == 1 { "that test" } else { "those tests" };
        let Some([passed, runs]) = self.confirmed.filter(|_| !self.state.is_empty()) else {
            let why = self.verdict.as_deref().unwrap_or("no state found");
            return format!("{}: no state named ({why})", self.test);
        };
        let pieces: Vec<String> = self.state.iter().map(describe).collect();
        let pieces = pieces.join(" and ");
        let it = if self.state.len() == 1 { "it" } else { "them" };
        if self.brittle {
            format!(
                "{} passes after {culprits} because {that} sets {pieces}; setting {it} makes {} pass alone ({passed}/{runs})",
                self.test,
                short_name(&self.test)
            )
        } else {
            format!(
                "{} fails after {culprits} because {that} leaves {pieces}; restoring {it} makes {} pass ({passed}/{runs})",
                self.test,
                short_name(&self.test)
            )
        }
    }
}

/// `path = after (was before)`, with an absent value said as such.
fn describe(d: &StateDiff) -> String {
    match (&d.before, &d.after) {
        (Some(b), Some(a)) => format!("{} = {a} (was {b})", d.path),
        (None, Some(a)) => format!("{} = {a} (was not there)", d.path),
        (Some(b), None) => format!("{} removed (was {b})", d.path),
        (None, None) => d.path.clone(),
    }
}

/// The test's own name: `test_x` of `tests/test_v.py::test_x`.
fn short_name(id: &str) -> &str {
    id.rsplit("::").next().unwrap_or(id)
}

/// The findings a record holds (none when it has no [`FILE`]).
pub fn read(dir: &Path) -> io::Result<Vec<StateFinding>> {
    match std::fs::read_to_string(dir.join(FILE)) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// Writes the record's findings (through a temporary file, so that a crash leaves the old ones).
pub fn write(dir: &Path, findings: &[StateFinding]) -> io::Result<()> {
    let tmp = dir.join(format!("{FILE}.tmp"));
    std::fs::write(&tmp, serde_json::to_vec_pretty(findings).map_err(io::Error::other)?)?;
    std::fs::rename(tmp, dir.join(FILE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_named_state_is_redacted_whole_and_others_keep_what_is_not_secret() {
        let diff = |path: &str, after: &str| diff(path, None, Some(after));
        let mut finding = StateFinding::from_answer("v".into(), vec!["p".into()], false, None, "none");
        finding.state = vec![
            diff("os.environ['DEPLOY_API_TOKEN']", "'plain-looking-value'"),
            diff("settings.SECRET_KEY", "'abc'"),
            diff("os.environ['PLAIN_CFG']", "'password=hunter2 mode=fast'"),
            diff("statekit.MODE", "'fast'"),
        ];
        finding.redact();
        let after: Vec<&str> = finding.state.iter().map(|d| d.after.as_deref().unwrap()).collect();
        assert_eq!(after, ["<redacted>", "<redacted>", "'password=<redacted> mode=fast'", "'fast'"]);
    }

    fn diff(path: &str, before: Option<&str>, after: Option<&str>) -> StateDiff {
        StateDiff {
            path: path.into(),
            kind: "class attribute".into(),
            before: before.map(Into::into),
            after: after.map(Into::into),
        }
    }

    #[test]
    fn a_confirmed_state_is_said_in_the_users_words() {
        let answer = r#"{"state": [{"path": "knack.parser.CLICommandParser._case_insensitive", "kind": "class attribute", "before": "False", "after": "True"}], "confirmed": [2, 2], "different": 7, "trials": 9}"#;
        let f = StateFinding::from_answer(
            "tests/test_v.py::test_x".into(),
            vec!["tests/test_p.py::test_y".into()],
            false,
            Some(answer),
            "-",
        );
        assert_eq!(
            f.sentence(),
            "tests/test_v.py::test_x fails after tests/test_p.py::test_y because that test leaves \
             knack.parser.CLICommandParser._case_insensitive = True (was False); restoring it makes test_x pass (2/2)"
        );
        assert_eq!((f.different, f.trials), (7, 9));
    }

    #[test]
    fn a_state_confirmed_once_of_twice_is_not_named() {
        let answer = r#"{"state": [{"path": "m.X", "kind": "module global", "before": "0", "after": "1"}], "confirmed": [1, 2]}"#;
        let f = StateFinding::from_answer("t::v".into(), vec!["t::p".into()], false, Some(answer), "-");
        assert!(f.state.is_empty());
        assert_eq!(
            f.sentence(),
            "t::v: no state named (the smallest state found made it pass in 1 of 2 confirmations only)"
        );
    }

    #[test]
    fn no_answer_and_errors_say_why() {
        let f = StateFinding::from_answer("t::v".into(), vec![], false, None, "the state search timed out");
        assert_eq!(f.sentence(), "t::v: no state named (the state search timed out)");
        let f =
            StateFinding::from_answer("t::v".into(), vec![], false, Some(r#"{"error": "not collected: t::v"}"#), "-");
        assert_eq!(f.verdict.as_deref(), Some("the state search failed: not collected: t::v"));
    }

    #[test]
    fn brittle_and_absent_values_read_as_such() {
        let f = StateFinding {
            test: "t::b".into(),
            polluters: vec!["t::s".into()],
            brittle: true,
            state: vec![diff("os.environ['X']", None, Some("'1'")), diff("m.Y", Some("1"), None)],
            confirmed: Some([2, 2]),
            verdict: None,
            different: 2,
            trials: 4,
            cost: None,
        };
        assert_eq!(
            f.sentence(),
            "t::b passes after t::s because that test sets os.environ['X'] = '1' (was not there) and m.Y removed \
             (was 1); setting them makes b pass alone (2/2)"
        );
    }
}
