//! Per-test results of a pytest attempt, read from the `--junitxml` file it wrote into the
//! attempt's scratch directory. Main function: [`pytest_results`].
//!
//! Read with quick-xml rather than quick-junit's deserializer: quick-junit 0.5's reader is
//! marked experimental and refuses what pytest before 8.4 writes (no `name` on
//! `<testsuites>`, added by pytest-dev/pytest#13404; Debian's python3-pytest is older), see
//! `quick_junit_refuses_what_pytest_before_8_4_writes`. quick-xml is what quick-junit itself is
//! built on, so it costs no new package, and only three elements matter here.

use std::collections::HashMap;

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

use super::{short_message, ParseError, TestId, TestOutcome, TestResult};

/// The `(classname, name)` pytest's junitxml writes for a node id, as its
/// `mangle_test_address` forms them: the file path with `/` turned into `.` and `.py`
/// dropped, then the class names, joined by `.`; the function name with its parameters.
/// `tests/test_a.py::TestK::test_m[1]` gives `("tests.test_a.TestK", "test_m[1]")`.
pub fn pytest_junit_names(node_id: &str) -> (String, String) {
    // Parameters may contain `::` and `/`; they belong to the last name, untouched.
    let (path, params) = match node_id.find('[') {
        Some(i) => node_id.split_at(i),
        None => (node_id, ""),
    };
    let mut names: Vec<String> = path.split("::").map(str::to_owned).collect();
    let file = names[0].replace('/', ".");
    names[0] = file.strip_suffix(".py").map(str::to_owned).unwrap_or(file);
    let mut last = names.pop().unwrap_or_default();
    last.push_str(params);
    (names.join("."), last)
}

/// The per-test results of a pytest `--junitxml` file, each named by its node id: the
/// `(classname, name)` of each `<testcase>` is looked up among the collected node ids'
/// (the mapping is not invertible: a `.` may come from a `/`, a `::` or a `.` in a name).
/// A test case that matches no collected id (a collection error, or a test collected only
/// in this attempt) keeps `classname::name` and is returned in `unmatched` too. Results are in
/// document order, which is the order the tests ran; a test run twice (the repeat plugin)
/// appears twice.
pub fn pytest_results(xml: &str, collected: &[TestId]) -> Result<JunitResults, ParseError> {
    let index: HashMap<(String, String), &TestId> = collected.iter().map(|id| (pytest_junit_names(id), id)).collect();
    let mut out = JunitResults::default();
    let mut reader = Reader::from_str(xml);
    let mut case: Option<Case> = None;
    // Open elements: a file cut short (pytest killed while writing) ends with some open, and
    // quick-xml reports the end of input without complaint.
    let mut depth = 0usize;
    loop {
        let event = reader.read_event().map_err(ParseError::Xml)?;
        match &event {
            Event::Start(_) => depth += 1,
            Event::End(_) => depth = depth.saturating_sub(1),
            _ => {}
        }
        match event {
            Event::Start(e) if e.local_name().as_ref() == b"testcase" => case = Some(Case::from(&e)?),
            Event::Empty(e) if e.local_name().as_ref() == b"testcase" => out.push(Case::from(&e)?, &index),
            Event::Start(e) | Event::Empty(e) => {
                if let Some(c) = case.as_mut() {
                    c.status(&e)?;
                }
            }
            Event::End(e) if e.local_name().as_ref() == b"testcase" => {
                if let Some(c) = case.take() {
                    out.push(c, &index);
                }
            }
            Event::Eof if depth > 0 => return Err(ParseError::Truncated),
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(out)
}

/// What a junitxml file said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JunitResults {
    /// One per `<testcase>`, in document order.
    pub results: Vec<TestResult>,
    /// The ids of `results` that matched no collected node id.
    pub unmatched: Vec<TestId>,
}

impl JunitResults {
    fn push(&mut self, case: Case, index: &HashMap<(String, String), &TestId>) {
        let id = match index.get(&(case.classname.clone(), case.name.clone())) {
            Some(id) => (*id).clone(),
            None => {
                let id =
                    if case.classname.is_empty() { case.name } else { format!("{}::{}", case.classname, case.name) };
                self.unmatched.push(id.clone());
                id
            }
        };
        self.results.push(TestResult::new(id, case.outcome, case.message));
    }
}

/// A `<testcase>` being read.
struct Case {
    classname: String,
    name: String,
    outcome: TestOutcome,
    message: Option<String>,
}

impl Case {
    fn from(e: &BytesStart<'_>) -> Result<Self, ParseError> {
        Ok(Case {
            classname: attribute(e, b"classname")?.unwrap_or_default(),
            name: attribute(e, b"name")?.unwrap_or_default(),
            outcome: TestOutcome::Pass,
            message: None,
        })
    }

    /// Takes in a child element: a failure outranks an error (the call failed, then the
    /// teardown raised), an error outranks a skip; anything else is output or properties.
    fn status(&mut self, e: &BytesStart<'_>) -> Result<(), ParseError> {
        let outcome = match e.local_name().as_ref() {
            b"failure" => TestOutcome::Fail,
            b"error" => TestOutcome::Error,
            b"skipped" => TestOutcome::Skip,
            _ => return Ok(()),
        };
        let rank = |o: TestOutcome| match o {
            TestOutcome::Fail => 3,
            TestOutcome::Error => 2,
            TestOutcome::Skip => 1,
            TestOutcome::Pass => 0,
        };
        if rank(outcome) > rank(self.outcome) {
            self.outcome = outcome;
            let message = match attribute(e, b"message")? {
                Some(m) => Some(m),
                None => attribute(e, b"type")?,
            };
            self.message = message.as_deref().and_then(short_message);
        }
        Ok(())
    }
}

fn attribute(e: &BytesStart<'_>, key: &[u8]) -> Result<Option<String>, ParseError> {
    for attr in e.attributes() {
        let attr = attr.map_err(ParseError::XmlAttribute)?;
        if attr.key.as_ref() == key {
            return Ok(Some(attr.unescape_value().map_err(ParseError::Xml)?.into_owned()));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn junit_names_follow_pytest_mangle_test_address() {
        assert_eq!(pytest_junit_names("tests/test_a.py::test_x"), ("tests.test_a".into(), "test_x".into()));
        assert_eq!(
            pytest_junit_names("tests/test_b.py::TestK::test_m[1]"),
            ("tests.test_b.TestK".into(), "test_m[1]".into())
        );
        assert_eq!(
            pytest_junit_names("t.py::test_p[a/b::c.py]"),
            ("t".into(), "test_p[a/b::c.py]".into()),
            "parameters are kept as they are"
        );
    }

    /// pytest 9.2's output for the fixture's polluter then victim, with a skip, a class and a
    /// parametrized test; and, hand-made, a testcase holding both a failure and an error,
    /// which quick-junit refuses ("multiple main status elements").
    const XML: &str = r#"<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="1" failures="2" skipped="1" tests="6" time="0.070" timestamp="2026-12-01T09:55:36.629883+00:00" hostname="vm"><testcase classname="tests.test_alpha" name="test_polluter" time="0.005" /><testcase classname="tests.test_beta" name="test_victim" time="0.001"><failure message="AssertionError: handlers left registered: ['audit']&#10;assert ['audit'] == []">def test_victim():
&gt;       assert HANDLERS == [], f"handlers left registered: {HANDLERS}"
E       AssertionError: handlers left registered: ['audit']</failure></testcase><testcase classname="tests.test_beta.TestBetaClass" name="test_clean_method" time="0.000"><system-out>hello</system-out></testcase><testcase classname="tests.test_gamma" name="test_clean_param[2]" time="0.000" /><testcase classname="tests.test_gamma" name="test_skipped" time="0.000"><skipped type="pytest.skip" message="skipped on purpose">tests/test_gamma.py:33: skipped on purpose</skipped></testcase><testcase classname="tests.test_gamma" name="test_teardown" time="0.000"><failure message="assert 0">x</failure><error message="failed on teardown with &quot;RuntimeError&quot;">y</error></testcase><testcase classname="" name="tests.test_bad" time="0.000"><error message="collection failure">ImportError</error></testcase></testsuite></testsuites>"#;

    #[test]
    fn results_carry_node_ids_outcomes_and_messages_in_run_order() {
        let collected: Vec<TestId> = [
            "tests/test_alpha.py::test_polluter",
            "tests/test_beta.py::test_victim",
            "tests/test_beta.py::TestBetaClass::test_clean_method",
            "tests/test_gamma.py::test_clean_param[2]",
            "tests/test_gamma.py::test_skipped",
            "tests/test_gamma.py::test_teardown",
        ]
        .map(String::from)
        .to_vec();
        let got = pytest_results(XML, &collected).unwrap();
        let summary: Vec<(&str, TestOutcome)> = got.results.iter().map(|r| (r.id.as_str(), r.outcome)).collect();
        assert_eq!(
            summary,
            [
                ("tests/test_alpha.py::test_polluter", TestOutcome::Pass),
                ("tests/test_beta.py::test_victim", TestOutcome::Fail),
                ("tests/test_beta.py::TestBetaClass::test_clean_method", TestOutcome::Pass),
                ("tests/test_gamma.py::test_clean_param[2]", TestOutcome::Pass),
                ("tests/test_gamma.py::test_skipped", TestOutcome::Skip),
                ("tests/test_gamma.py::test_teardown", TestOutcome::Fail),
                ("tests.test_bad", TestOutcome::Error),
            ]
        );
        assert_eq!(
            got.results[1].message.as_deref(),
            Some("AssertionError: handlers left registered: ['audit']\nassert ['audit'] == []")
        );
        assert_eq!(got.results[4].message.as_deref(), Some("skipped on purpose"));
        assert_eq!(got.results[5].message.as_deref(), Some("assert 0"), "the failure outranks the teardown error");
        assert_eq!(got.unmatched, ["tests.test_bad"]);
    }

    #[test]
    fn quick_junit_refuses_what_pytest_before_8_4_writes() {
        // pytest 6.2's output (from pytest-dev/pytest#8662): no name on <testsuites>, and a
        // timestamp without a UTC offset.
        let old = r#"<?xml version="1.0" encoding="utf-8"?>
<testsuites>
    <testsuite errors="0" failures="0" hostname="myhost" name="pytest" skipped="0" tests="1"
               time="0.438" timestamp="2021-05-11T11:17:44.943549">
        <testcase classname="tests.rba.test_me.TestClass" name="test_foo" time="0.015"/>
    </testsuite>
</testsuites>"#;
        assert!(quick_junit::Report::deserialize_from_str(old).is_err());
        assert!(quick_junit::Report::deserialize_from_str(XML).is_err(), "nor a testcase with a failure and an error");
        let got = pytest_results(old, &["tests/rba/test_me.py::TestClass::test_foo".into()]).unwrap();
        assert_eq!(
            got.results,
            [TestResult::new("tests/rba/test_me.py::TestClass::test_foo", TestOutcome::Pass, None)]
        );
    }

    #[test]
    fn a_failed_call_and_a_failed_teardown_are_two_results() {
        // pytest 9.2 writes a test whose call failed and whose fixture's teardown raised as
        // two testcases (a single one holding both is read as a failure, above).
        let xml = r#"<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="1" failures="1" skipped="0" tests="2" time="0.040" timestamp="2026-12-01T10:36:50.295530+00:00" hostname="vm"><testcase classname="test_td" name="test_teardown" time="0.000"><failure message="assert 0">x</failure></testcase><testcase classname="test_td" name="test_teardown" time="0.000"><error message="failed on teardown with &quot;RuntimeError: teardown broke&quot;">y</error></testcase></testsuite></testsuites>"#;
        let got = pytest_results(xml, &["test_td.py::test_teardown".into()]).unwrap();
        let outcomes: Vec<TestOutcome> = got.results.iter().map(|r| r.outcome).collect();
        assert_eq!(outcomes, [TestOutcome::Fail, TestOutcome::Error]);
        assert!(quick_junit::Report::deserialize_from_str(xml).is_ok(), "quick-junit reads pytest 9.2's files");
        assert_eq!(got.results[1].message.as_deref(), Some("failed on teardown with \"RuntimeError: teardown broke\""));
    }

    #[test]
    fn a_truncated_file_is_an_error_not_a_pass() {
        let start = XML.find("<testcase classname=\"tests.test_beta\"").unwrap();
        assert!(pytest_results(&XML[..start + 20], &[]).is_err(), "cut inside a tag");
        let err = pytest_results(&XML[..start], &[]).unwrap_err();
        assert!(matches!(err, ParseError::Truncated), "cut between elements: {err}");
    }
}
