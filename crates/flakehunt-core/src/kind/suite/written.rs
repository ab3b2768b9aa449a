//! A suite's test ids as they are written: a pytest parameter id can hold a secret
//! (`test_p[token=ghp_...]`), and an id is written in many places (the manifest's selection,
//! each attempt's order, results, subject and reproducer, signatures, every report). Each id
//! is redacted keeping its shape ([`crate::redact::test_id`]), two ids that redaction made equal
//! are told apart by a number (`test_p[token=<redacted>#2]`), and the live hunt maps every
//! written id back to the real one before it runs anything, so its classification works on the
//! ids the record holds (as `report` does) and its runs on the ids pytest knows. Main type:
//! [`WrittenIds`].

use std::borrow::Cow;

use super::record::AttemptTests;
use super::setup::Request;
use super::TestId;

pub use crate::redact::ids::WrittenIds;

impl WrittenIds {
    /// `t` with every id written: its subject, order, results and the reproducer's words.
    pub fn write_tests(&self, t: &mut AttemptTests) {
        let write = |id: &mut TestId| {
            if let Cow::Owned(w) = self.written(id) {
                *id = w;
            }
        };
        t.subject.iter_mut().for_each(write);
        t.order.iter_mut().for_each(write);
        t.tests.iter_mut().for_each(|r| write(&mut r.id));
        if !crate::redact::enabled() {
            return;
        }
        for word in &mut t.reproducer {
            match self.written.get(word.as_str()) {
                Some(w) => w.clone_into(word),
                None => crate::redact::in_place(word),
            }
        }
    }

    /// The request a written one stands for: its ids, and its reproducer's words that are ids,
    /// the real ones.
    pub fn raw_request(&self, req: &Request) -> Request {
        if self.raw.is_empty() {
            return req.clone();
        }
        let raw = |ids: &[TestId]| ids.iter().map(|id| self.raw(id).to_owned()).collect();
        Request {
            role: req.role,
            subject: req.subject.as_deref().map(|s| self.raw(s).to_owned()),
            tests: raw(&req.tests),
            shuffle: req.shuffle,
            argv: raw(&req.argv),
            strategy: req.strategy,
        }
    }

    /// A request of real ids (a shuffled attempt's order) as written.
    pub fn written_request(&self, req: &Request) -> Request {
        if self.written.is_empty() {
            return req.clone();
        }
        let written = |ids: &[TestId]| ids.iter().map(|id| self.written(id).into_owned()).collect();
        Request {
            role: req.role,
            subject: req.subject.as_deref().map(|s| self.written(s).into_owned()),
            tests: written(&req.tests),
            shuffle: req.shuffle,
            argv: req.argv.clone(),
            strategy: req.strategy,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::suite::record::Role;
    use crate::kind::suite::{TestOutcome, TestResult};

    #[test]
    fn ids_keep_their_shape_and_stay_apart() {
        let selection: Vec<TestId> = [
            "tests/t.py::test_ok",
            "tests/t.py::test_p[token=ghp_0123456789abcdefghij0123]",
            "tests/t.py::test_p[token=hunter2hunter2]",
            "tests/t.py::test_db[postgres://app:s3cretpw@db/app]",
            "tests/test_tokens.py::test_auth_key",
        ]
        .map(String::from)
        .to_vec();
        let ids = WrittenIds::new(&selection);
        let written: Vec<String> = selection.iter().map(|id| ids.written(id).into_owned()).collect();
        assert_eq!(
            written,
            [
                "tests/t.py::test_ok",
                "tests/t.py::test_p[token=<redacted>]",
                "tests/t.py::test_p[token=<redacted>#2]",
                "tests/t.py::test_db[postgres://app:<redacted>@db/app]",
                "tests/test_tokens.py::test_auth_key",
            ]
        );
        for (id, w) in selection.iter().zip(&written) {
            assert_eq!(ids.raw(w), id, "{w} maps back");
        }
        // A Go subtest the selection did not list: redacted level by level, the levels kept.
        assert_eq!(ids.written("TestX/token=abc123def/sub"), "TestX/token=<redacted>/sub");
    }

    #[test]
    fn a_run_is_prepared_with_real_ids_and_recorded_with_written_ones() {
        let selection: Vec<TestId> =
            ["a.py::test_pol", "b.py::test_v[token=hunter2hunter2]"].map(String::from).to_vec();
        let ids = WrittenIds::new(&selection);
        let victim = ids.written(&selection[1]).into_owned();
        let req = Request::reproducer(&victim, vec!["python3".into(), "-m".into(), "pytest".into(), victim.clone()]);
        let raw = ids.raw_request(&req);
        assert_eq!(raw.subject.as_deref(), Some(selection[1].as_str()));
        assert_eq!(raw.argv.last(), Some(&selection[1]));
        let mut t = AttemptTests {
            role: Role::Reproducer,
            subject: raw.subject.clone(),
            order: vec![],
            shuffle: None,
            tests: vec![TestResult { id: selection[1].clone(), outcome: TestOutcome::Fail, message: None }],
            reproducer: raw.argv.clone(),
            unreported: vec![],
            incomplete: None,
            failed_otherwise: None,
            strategy: None,
        };
        ids.write_tests(&mut t);
        assert_eq!(Request::of_record(&t), req, "the record holds the request the classification made");
        assert_eq!(t.tests[0].id, victim);
    }
}
