//! Why an order-dependent pytest test depends on order: the state its polluters (or
//! state-setters) leave, found by fingerprinting the process around them and delta-debugging
//! the differences (`flakehunt_state.py`, a pytest plugin that imports the suite once and forks
//! per trial). Main type: [`StateFinding`]; a hunt keeps its findings in the record's
//! [`FILE`], which the summary's `tests[].state` is read from.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::TestId;
pub use crate::schema::suite::{Cleanup, FingerprintCost, SearchRun, StateDiff, StateFinding};

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

/// What a state search is about: which tests ran before the test, and what is searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Against {
    /// A victim after its polluters: the state whose restoration makes it pass.
    Polluters,
    /// A brittle test after its state-setters: the state whose setting makes it pass.
    StateSetters,
    /// A non-idempotent test after its own first run: the state whose restoration makes its
    /// second run pass.
    FirstRun,
}

/// What the plugin is asked: the tests, the tests that ran before each, and where to answer;
/// or, with `check`, to check the cleanup of its one test.
#[derive(Debug, Clone, Serialize)]
pub struct StateRequest {
    /// The tests whose state is searched, in one run.
    pub victims: Vec<StateVictim>,
    /// Confirmations of the smallest state.
    pub runs: u32,
    /// The trials' limit, per test.
    pub max_trials: u32,
    /// The answer's file.
    pub out: PathBuf,
    /// Check a cleanup instead of searching: the run loads it as a plugin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<CheckRequest>,
}

/// One test whose state is searched.
#[derive(Debug, Clone, Serialize)]
pub struct StateVictim {
    /// The victim (or the brittle test).
    pub victim: TestId,
    /// Its polluters (or state-setters; a non-idempotent test's: itself), in the order they run.
    pub polluters: Vec<TestId>,
    /// An order-dependent brittle test: find the state whose setting makes it pass.
    pub brittle: bool,
    /// A non-idempotent test: its polluter is its own first run.
    #[serde(default)]
    pub repeat: bool,
}

impl StateVictim {
    /// The search for `victim` after `polluters` (a non-idempotent test's: itself).
    pub fn new(victim: TestId, polluters: Vec<TestId>, against: Against) -> Self {
        let polluters = if against == Against::FirstRun { vec![victim.clone()] } else { polluters };
        Self { victim, polluters, brittle: against == Against::StateSetters, repeat: against == Against::FirstRun }
    }

    /// What is searched.
    pub fn against(&self) -> Against {
        match (self.brittle, self.repeat) {
            (true, _) => Against::StateSetters,
            (_, true) => Against::FirstRun,
            _ => Against::Polluters,
        }
    }
}

impl StateRequest {
    /// The search of `victims` in one run, answered into `out`.
    pub fn search(victims: Vec<StateVictim>, out: PathBuf) -> Self {
        Self { victims, runs: CONFIRMATIONS, max_trials: MAX_TRIALS, out, check: None }
    }

    /// The tests the run gives pytest, each once and in order: the culprits, then the tests (a
    /// non-idempotent test once: the plugin runs it twice).
    pub fn order(&self) -> Vec<TestId> {
        let mut order: Vec<TestId> = self.victims.first().map(|v| v.polluters.clone()).unwrap_or_default();
        for v in &self.victims {
            if !order.contains(&v.victim) {
                order.push(v.victim.clone());
            }
        }
        order
    }
}

/// A cleanup's check: the polluters and the victim run `runs` times, each in a fork of a
/// process that collected with the cleanup's module loaded as a plugin and its fixture put on
/// `apply_to` (as `@pytest.mark.usefixtures` would).
#[derive(Debug, Clone, Serialize)]
pub struct CheckRequest {
    /// The fixture.
    pub fixture: String,
    /// The tests (raw ids) it is applied to.
    pub apply_to: Vec<TestId>,
    /// Runs that must all pass.
    pub runs: u64,
    /// The polluters that failed without the cleanup, which may fail with it too.
    pub polluters_failed: Vec<TestId>,
}

/// The module name the cleanup under check is loaded by (`-p flakehunt_cleanup`).
pub const CLEANUP_MODULE: &str = "flakehunt_cleanup";

/// A state difference's values as they may be written.
trait RedactDiff {
    /// Its values as they may be written: a secret-named variable's or attribute's
    /// (`os.environ['API_TOKEN']`, `settings.SECRET_KEY`) redacted whole, any other with the
    /// secrets it holds redacted.
    fn redact(&mut self);
}

impl RedactDiff for StateDiff {
    fn redact(&mut self) {
        let name =
            self.path.trim_end_matches([']', ')', '\'', '"']).rsplit(['.', '[', '(', '\'', '"']).next().unwrap_or("");
        let name = name.to_owned();
        for value in [&mut self.before, &mut self.after].into_iter().flatten() {
            *value = crate::redact::env_value(&name, value).into_owned();
        }
        crate::redact::in_place(&mut self.path);
    }
}

/// The cleanup the plugin wrote, or why it could write none.
#[derive(Debug, Deserialize)]
struct AnswerCleanup {
    #[serde(default)]
    fixture: String,
    #[serde(default)]
    code: String,
    #[serde(default)]
    apply_to: Vec<TestId>,
    #[serde(default)]
    conftest: String,
    #[serde(default)]
    none: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

/// A cleanup's check as the plugin ran it.
#[derive(Debug, Deserialize)]
struct CheckAnswer {
    passed: u64,
    runs: u64,
    #[serde(default)]
    why: Option<String>,
    #[serde(default)]
    seconds: Option<f64>,
}

/// What the plugin wrote for a run: one answer per test, or why there is none.
#[derive(Debug, Deserialize)]
struct Answers {
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    results: Vec<serde_json::Value>,
}

/// What the plugin wrote for one test (or for a cleanup's check).
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
    #[serde(default)]
    cleanup: Option<AnswerCleanup>,
    #[serde(default)]
    polluters_failed: Vec<TestId>,
    #[serde(default)]
    check: Option<CheckAnswer>,
}

/// The state search's findings: read from its answers, checked, redacted and said.
pub trait StateFindings: Sized {
    /// The finding as it may be written (unless `--no-redact`): the values of its state, its
    /// verdict and its cleanup's code with their secrets redacted (the test ids are written
    /// ones already).
    fn redact(&mut self);

    /// The finding the plugin's answer `text` gives for `test` after `polluters` (ids as
    /// written); a run that wrote none (it timed out, pytest could not start) is `unanswered`,
    /// said as the verdict. A cleanup the plugin wrote is kept unproved, for [`Self::checked`].
    fn from_answer(
        test: TestId,
        polluters: Vec<TestId>,
        against: Against,
        text: Option<&str>,
        unanswered: &str,
    ) -> Self;

    /// The answers to a run for `victims` (the plugin's whole answer `text`), one per test in
    /// order, each as the text [`Self::from_answer`] reads: a run that wrote none is
    /// `unanswered` for each, an error of the run is each one's.
    fn answers(victims: &[StateVictim], text: Option<&str>) -> Vec<Option<String>>;

    /// The findings the plugin's answer `text` to a run for `victims` gives (ids as written),
    /// in order; a run that wrote none is `unanswered`, said as each one's verdict.
    fn from_answers(victims: &[StateVictim], text: Option<&str>, unanswered: &str) -> Vec<Self>;

    /// A finding about the process-level state alone (a Go test's), to be filled in.
    fn process(test: TestId, polluters: Vec<TestId>, against: Against) -> Self;

    /// The check of the cleanup in the search's answer `search`, `needed` runs; none when the
    /// search wrote no cleanup.
    fn check_request(search: &str, needed: u64) -> Option<CheckRequest>;

    /// The cleanup's code in the search's answer `search`, as the check's plugin module is
    /// written from it (unredacted).
    fn written_code(search: &str) -> Option<String>;

    /// The number of runs the cleanup's check needs, from the test's reproducer checks
    /// (`failures` of `runs`): the lower end of their Wilson 95 % interval ruled out at 99 %,
    /// as `verify` counts (`kind::verify::attempts`); none when they never failed.
    fn runs_needed(failures: u64, runs: u64) -> Option<u64>;

    /// Records the check of the cleanup: the plugin's answer `text` (none: `unanswered`), for
    /// `needed` runs from the reproducer checks `rate_from`.
    fn checked(&mut self, rate_from: [u64; 2], needed: u64, text: Option<&str>, unanswered: &str);

    /// The finding in the user's words: "`V` fails after `P` because that test leaves
    /// `mod.X = True` (was `False`); restoring it makes `V` pass (2/2)", or why no state is named.
    fn sentence(&self) -> String;

    /// The cleanup in the user's words: where the proved fixture goes and what its check ran,
    /// or why none is proved; none when the search named no state.
    fn cleanup_sentence(&self) -> Option<String>;
}

impl StateFindings for StateFinding {
    fn redact(&mut self) {
        let whole: Vec<String> = self
            .state
            .iter()
            .filter_map(|d| {
                let mut redacted = d.clone();
                redacted.redact();
                let after = d.after.as_deref()?.trim_matches(|c| c == '\'' || c == '"');
                (redacted.after.as_deref() == Some(crate::redact::REDACTED)
                    && !after.is_empty()
                    && after != crate::redact::REDACTED)
                    .then(|| after.to_owned())
            })
            .collect();
        self.state.iter_mut().for_each(StateDiff::redact);
        if let Some(v) = &mut self.verdict {
            crate::redact::in_place(v);
        }
        if let Some(c) = &mut self.cleanup {
            // A brittle test's cleanup sets the value itself: a secret-named one is redacted
            // whole there too.
            for value in &whole {
                c.code = c.code.replace(value.as_str(), crate::redact::REDACTED);
            }
            crate::redact::in_place(&mut c.code);
            if let Some(v) = &mut c.verdict {
                crate::redact::in_place(v);
            }
        }
    }

    fn from_answer(
        test: TestId,
        polluters: Vec<TestId>,
        against: Against,
        text: Option<&str>,
        unanswered: &str,
    ) -> Self {
        let mut finding = Self::empty(test, polluters, against);
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
            finding.cleanup = answer.cleanup.map(|c| finding.cleanup_of(c));
        }
        finding.different = answer.different;
        finding.trials = answer.trials;
        finding.cost = answer.cost;
        finding
    }

    fn answers(victims: &[StateVictim], text: Option<&str>) -> Vec<Option<String>> {
        let answers = match text.map(serde_json::from_str::<Answers>) {
            None => return victims.iter().map(|_| None).collect(),
            Some(Ok(a)) => a,
            Some(Err(e)) => {
                let error = serde_json::json!({ "error": format!("its answer could not be read: {e}") }).to_string();
                return victims.iter().map(|_| Some(error.clone())).collect();
            }
        };
        (0..victims.len())
            .map(|i| match (&answers.error, answers.results.get(i)) {
                (Some(e), _) => Some(serde_json::json!({ "error": e }).to_string()),
                (None, Some(result)) => Some(result.to_string()),
                (None, None) => Some(r#"{"error": "the run answered for fewer tests than it was asked"}"#.into()),
            })
            .collect()
    }

    fn from_answers(victims: &[StateVictim], text: Option<&str>, unanswered: &str) -> Vec<Self> {
        victims
            .iter()
            .zip(Self::answers(victims, text))
            .map(|(v, answer)| {
                Self::from_answer(v.victim.clone(), v.polluters.clone(), v.against(), answer.as_deref(), unanswered)
            })
            .collect()
    }

    fn process(test: TestId, polluters: Vec<TestId>, against: Against) -> Self {
        Self { examined: Some(PROCESS.into()), ..Self::empty(test, polluters, against) }
    }

    fn check_request(search: &str, needed: u64) -> Option<CheckRequest> {
        let answer: Answer = serde_json::from_str(search).ok()?;
        let c = answer.cleanup.filter(|c| !c.code.is_empty())?;
        Some(CheckRequest {
            fixture: c.fixture,
            apply_to: c.apply_to,
            runs: needed,
            polluters_failed: answer.polluters_failed,
        })
    }

    fn written_code(search: &str) -> Option<String> {
        let answer: Answer = serde_json::from_str(search).ok()?;
        answer.cleanup.map(|c| c.code).filter(|c| !c.is_empty())
    }

    fn runs_needed(failures: u64, runs: u64) -> Option<u64> {
        use crate::analysis::stats;
        let (low, _) = stats::wilson(failures, runs, stats::Z95);
        (failures > 0 && low > 0.0)
            .then(|| stats::attempts_to_detect(low, crate::schema::verify::DEFAULT_LEVEL / 100.0))
    }

    fn checked(&mut self, rate_from: [u64; 2], needed: u64, text: Option<&str>, unanswered: &str) {
        let Some(c) = self.cleanup.as_mut().filter(|c| !c.code.is_empty()) else { return };
        c.rate_from = Some(rate_from);
        c.needed = needed;
        let answer = match text.map(serde_json::from_str::<Answer>) {
            Some(Ok(Answer { check: Some(check), .. })) => check,
            Some(Ok(Answer { error: Some(e), .. })) => {
                c.verdict = Some(format!("its check failed: {e}"));
                return;
            }
            Some(Ok(_)) => {
                c.verdict = Some("its check gave no result".into());
                return;
            }
            Some(Err(e)) => {
                c.verdict = Some(format!("its check's answer could not be read: {e}"));
                return;
            }
            None => {
                c.verdict = Some(unanswered.to_owned());
                return;
            }
        };
        c.checked = Some([answer.passed, answer.runs]);
        c.seconds = answer.seconds;
        c.proved = answer.runs == needed && answer.passed == needed && answer.why.is_none();
        c.verdict = if c.proved {
            None
        } else {
            Some(answer.why.unwrap_or_else(|| format!("{} of {needed} runs passed with it", answer.passed)))
        };
    }

    fn sentence(&self) -> String {
        let culprits = self.polluters.join(" + ");
        let that = if self.polluters.len() == 1 { "that test" } else { "those tests" };
        if self.examined.as_deref() == Some(PROCESS) {
            return self.process_sentence(&culprits);
        }
        let Some([passed, runs]) = self.confirmed.filter(|_| !self.state.is_empty()) else {
            let why = self.verdict.as_deref().unwrap_or("no state found");
            return format!("{}: no state named ({why})", self.test);
        };
        let pieces: Vec<String> = self.state.iter().map(describe).collect();
        let pieces = pieces.join(" and ");
        let it = if self.state.len() == 1 { "it" } else { "them" };
        let name = short_name(&self.test);
        if self.brittle {
            format!(
                "{} passes after {culprits} because {that} sets {pieces}; setting {it} makes {name} pass alone ({passed}/{runs})",
                self.test
            )
        } else if self.repeated {
            format!(
                "{} fails when it runs again in the process because its first run leaves {pieces}; restoring {it} makes its second run pass ({passed}/{runs})",
                self.test
            )
        } else {
            format!(
                "{} fails after {culprits} because {that} leaves {pieces}; restoring {it} makes {name} pass ({passed}/{runs})",
                self.test
            )
        }
    }

    fn cleanup_sentence(&self) -> Option<String> {
        let c = self.cleanup.as_ref()?;
        if !c.proved {
            let why = c.verdict.as_deref().unwrap_or("not checked");
            let named = if c.fixture.is_empty() { String::new() } else { format!(" ({})", c.fixture) };
            return Some(format!("no cleanup proved{named}: {why}"));
        }
        let [passed, runs] = c.checked.unwrap_or_default();
        let name = short_name(&self.test);
        let ran = if self.brittle {
            format!("{name} alone")
        } else if self.repeated {
            format!("{name} run twice in one process")
        } else {
            format!("{} then {name}", self.polluters.join(" + "))
        };
        let rate = c.rate_from.map_or_else(String::new, |[f, n]| {
            format!(" (enough to rule out, at 99 %, the failure rate of its reproducer's checks, {f} of {n})")
        });
        let targets = c.apply_to.join(", ");
        Some(format!(
            "cleanup, proved: with it in place, {ran} passed {passed} of {runs} runs{rate}; add it to {} and @pytest.mark.usefixtures(\"{}\") to {targets}:",
            c.conftest, c.fixture
        ))
    }
}

/// The parts a finding is made and said from.
trait FindingParts: Sized {
    /// A finding of nothing yet about `test` after `polluters` (a non-idempotent test's: itself).
    fn empty(test: TestId, polluters: Vec<TestId>, against: Against) -> Self;

    /// The written cleanup, not proved yet; its tests as written (the plugin names them raw).
    fn cleanup_of(&self, c: AnswerCleanup) -> Cleanup;

    /// A Go test's finding: what differs in the process after its polluters, said as no more
    /// than that.
    fn process_sentence(&self, culprits: &str) -> String;
}

impl FindingParts for StateFinding {
    fn empty(test: TestId, polluters: Vec<TestId>, against: Against) -> Self {
        let polluters = if against == Against::FirstRun { vec![test.clone()] } else { polluters };
        Self {
            test,
            polluters,
            brittle: against == Against::StateSetters,
            state: Vec::new(),
            confirmed: None,
            verdict: None,
            different: 0,
            trials: 0,
            cost: None,
            repeated: against == Against::FirstRun,
            examined: None,
            cleanup: None,
            run: None,
        }
    }

    fn cleanup_of(&self, c: AnswerCleanup) -> Cleanup {
        let unproved = |verdict: String| Cleanup {
            fixture: String::new(),
            code: String::new(),
            conftest: String::new(),
            apply_to: Vec::new(),
            rate_from: None,
            needed: 0,
            checked: None,
            proved: false,
            verdict: Some(verdict),
            seconds: None,
            run: None,
        };
        if let Some(why) = c.none {
            return unproved(format!("no fixture can do it: {why}"));
        }
        if let Some(e) = c.error.filter(|_| c.code.is_empty()) {
            return unproved(format!("its code could not be written: {e}"));
        }
        let apply_to = if self.brittle || self.repeated { vec![self.test.clone()] } else { self.polluters.clone() };
        Cleanup {
            fixture: c.fixture,
            code: c.code,
            conftest: c.conftest,
            apply_to,
            verdict: Some("not checked".into()),
            ..unproved(String::new())
        }
    }

    fn process_sentence(&self, culprits: &str) -> String {
        let unexamined = "in-memory state (package variables) is not examined for Go tests";
        if let Some(why) = &self.verdict {
            return format!("{}: no process-level state named ({why}); {unexamined}", self.test);
        }
        let after = if self.repeated { "its first run".to_owned() } else { culprits.to_owned() };
        if self.state.is_empty() {
            return format!(
                "{}: no process-level state (environment, working directory, files in TMPDIR and the package's directory) differs after {after}; {unexamined}",
                self.test
            );
        }
        let one = self.polluters.len() == 1;
        let does = if self.repeated {
            format!("{} fails when it runs again in the process; its first run leaves", self.test)
        } else if self.brittle {
            format!("{} passes after {culprits}, which {}", self.test, if one { "sets" } else { "set" })
        } else {
            format!("{} fails after {culprits}, which {}", self.test, if one { "leaves" } else { "leave" })
        };
        let pieces: Vec<String> = self.state.iter().map(describe).collect();
        let it = if self.state.len() == 1 { "that is" } else { "those are" };
        format!(
            "{does} {} in the process; whether {it} what it trips over is not checked (for Go tests only the process-level state is compared, and none is put back), and {unexamined}",
            pieces.join(" and ")
        )
    }
}

/// [`StateFinding::examined`] of a finding that looked at the process-level state alone.
pub const PROCESS: &str = "process";

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
        let mut finding = StateFinding::from_answer("v".into(), vec!["p".into()], Against::Polluters, None, "none");
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
            Against::Polluters,
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
        let f = StateFinding::from_answer("t::v".into(), vec!["t::p".into()], Against::Polluters, Some(answer), "-");
        assert!(f.state.is_empty());
        assert_eq!(
            f.sentence(),
            "t::v: no state named (the smallest state found made it pass in 1 of 2 confirmations only)"
        );
    }

    #[test]
    fn no_answer_and_errors_say_why() {
        let f =
            StateFinding::from_answer("t::v".into(), vec![], Against::Polluters, None, "the state search timed out");
        assert_eq!(f.sentence(), "t::v: no state named (the state search timed out)");
        let f = StateFinding::from_answer(
            "t::v".into(),
            vec![],
            Against::Polluters,
            Some(r#"{"error": "not collected: t::v"}"#),
            "-",
        );
        assert_eq!(f.verdict.as_deref(), Some("the state search failed: not collected: t::v"));
    }

    #[test]
    fn a_runs_answers_go_to_its_tests_in_order_and_its_error_to_each() {
        let v = |id: &str| StateVictim::new(id.into(), vec!["t::p".into()], Against::Polluters);
        let victims = [v("t::a"), v("t::b")];
        let answer = r#"{"results": [{"verdict": "passes after its polluters in a fork: nothing to explain", "trials": 1}, {"state": [{"path": "m.X", "kind": "module global", "before": "0", "after": "1"}], "confirmed": [2, 2], "trials": 4}]}"#;
        let found = StateFinding::from_answers(&victims, Some(answer), "-");
        assert_eq!(found[0].test, "t::a");
        assert!(found[0].state.is_empty() && found[0].verdict.as_deref().unwrap().starts_with("passes after"));
        assert_eq!((found[1].state[0].path.as_str(), found[1].trials), ("m.X", 4));
        let found = StateFinding::from_answers(&victims, Some(r#"{"error": "not collected: t::p"}"#), "-");
        assert!(found.iter().all(|f| f.verdict.as_deref() == Some("the state search failed: not collected: t::p")));
        let found = StateFinding::from_answers(&victims, Some(r#"{"results": []}"#), "-");
        assert!(found[1].verdict.as_deref().unwrap().contains("fewer tests"));
        let found = StateFinding::from_answers(&victims, None, "the state search timed out");
        assert_eq!(found[1].verdict.as_deref(), Some("the state search timed out"));
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
            repeated: false,
            examined: None,
            cleanup: None,
            run: None,
        };
        assert_eq!(
            f.sentence(),
            "t::b passes after t::s because that test sets os.environ['X'] = '1' (was not there) and m.Y removed \
             (was 1); setting them makes b pass alone (2/2)"
        );
    }

    #[test]
    fn a_secret_a_brittle_tests_cleanup_sets_is_redacted_in_its_code_and_gos_variables_too() {
        let mut f = StateFinding::from_answer("t::b".into(), vec!["t::s".into()], Against::StateSetters, None, "-");
        f.state = vec![
            diff("os.environ['DEPLOY_TOKEN']", None, Some("'s3cr3t-value'")),
            diff("os.Getenv(\"API_KEY\")", None, Some("\"k3y\"")),
        ];
        f.cleanup = Some(Cleanup {
            fixture: "set_environ_DEPLOY_TOKEN".into(),
            code: "    os.environ[\"DEPLOY_TOKEN\"] = \"s3cr3t-value\"\n".into(),
            conftest: "conftest.py".into(),
            apply_to: vec!["t::b".into()],
            rate_from: None,
            needed: 0,
            checked: None,
            proved: false,
            verdict: None,
            seconds: None,
            run: None,
        });
        f.redact();
        assert_eq!(f.cleanup.unwrap().code, "    os.environ[\"DEPLOY_TOKEN\"] = \"<redacted>\"\n");
        assert_eq!(f.state[1].after.as_deref(), Some("<redacted>"));
    }

    #[test]
    fn a_cleanup_is_proved_only_by_every_run_its_rate_needs() {
        // 2 of 2 reproducer checks: Wilson's lower end 0.342, ruled out at 99 % by 11 runs.
        assert_eq!(StateFinding::runs_needed(2, 2), Some(11));
        assert_eq!(StateFinding::runs_needed(0, 1), None, "a reproducer that never failed gives no rate");
        let answer = r#"{"state": [{"path": "m.X", "kind": "module global", "before": "0", "after": "1"}], "confirmed": [2, 2],
            "cleanup": {"fixture": "restore_m_X", "code": "import pytest\n", "apply_to": ["raw::p"], "conftest": "conftest.py"}}"#;
        let found =
            || StateFinding::from_answer("t::v".into(), vec!["t::p".into()], Against::Polluters, Some(answer), "-");
        let f = found();
        assert_eq!(f.cleanup.as_ref().map(|c| (c.apply_to.clone(), c.proved)), Some((vec!["t::p".into()], false)));
        assert_eq!(f.cleanup_sentence().as_deref(), Some("no cleanup proved (restore_m_X): not checked"));
        let check = StateFinding::check_request(answer, 11).unwrap();
        assert_eq!((check.apply_to, check.runs), (vec!["raw::p".to_owned()], 11));
        let mut f = found();
        f.checked([2, 2], 11, Some(r#"{"check": {"passed": 11, "runs": 11, "seconds": 0.4}}"#), "-");
        assert!(f.cleanup.as_ref().unwrap().proved && f.cleanup_code() == Some("import pytest\n"));
        // Fewer runs than needed prove nothing, even all passing.
        let mut f = found();
        f.checked([2, 2], 11, Some(r#"{"check": {"passed": 5, "runs": 5}}"#), "-");
        assert_eq!(
            f.cleanup_sentence().as_deref(),
            Some("no cleanup proved (restore_m_X): 5 of 11 runs passed with it")
        );
        let mut f = found();
        f.checked([2, 2], 11, None, "its check wrote no answer: was ended at its timeout after 60.0 s");
        assert!(!f.cleanup.as_ref().unwrap().proved && f.cleanup_code().is_none());
    }
}
