//! A suite's test ids as the record writes them: each id redacted keeping its shape
//! ([`super::test_id`]), two ids that redaction made equal told apart by a number
//! (`test_p[token=<redacted>#2]`), and the way back to the real id. Main type: [`WrittenIds`].

use std::borrow::Cow;
use std::collections::HashMap;

use crate::schema::suite::{SuiteSetup, TestId};

/// The written form of each id of a selection, and back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WrittenIds {
    pub(crate) written: HashMap<TestId, TestId>,
    pub(crate) raw: HashMap<TestId, TestId>,
}

impl WrittenIds {
    /// The written ids of `selection`, in its order (the first of two ids made equal keeps the
    /// plain form). Empty when redaction is off or no id holds a secret.
    pub fn new(selection: &[TestId]) -> Self {
        let mut ids = Self::default();
        if !super::enabled() {
            return ids;
        }
        let mut seen: HashMap<String, u32> = HashMap::new();
        for id in selection {
            let Cow::Owned(mut written) = super::test_id(id) else { continue };
            let n = seen.entry(written.clone()).or_default();
            *n += 1;
            if *n > 1 {
                written = numbered(&written, *n);
            }
            ids.raw.insert(written.clone(), id.clone());
            ids.written.insert(id.clone(), written);
        }
        ids
    }

    /// How `id` is written: its entry, else redacted without a number (an id the selection did
    /// not hold, such as a Go subtest), else itself.
    pub fn written<'a>(&self, id: &'a str) -> Cow<'a, str> {
        match self.written.get(id) {
            Some(w) => Cow::Owned(w.clone()),
            None if super::enabled() => super::test_id(id),
            None => Cow::Borrowed(id),
        }
    }

    /// The real id a written one stands for (an id that was not redacted stands for itself).
    pub fn raw<'a>(&'a self, written: &'a str) -> &'a str {
        self.raw.get(written).map_or(written, String::as_str)
    }

    /// Whether an id of the selection was redacted.
    pub fn is_empty(&self) -> bool {
        self.written.is_empty()
    }

    /// `setup` as the manifest holds it: its selection written, every other string redacted.
    pub fn setup(&self, setup: &SuiteSetup) -> SuiteSetup {
        if !super::enabled() {
            return setup.clone();
        }
        let mut written = match serde_json::to_value(setup) {
            Ok(mut v) => {
                super::json(&mut v);
                serde_json::from_value(v).unwrap_or_else(|_| setup.clone())
            }
            Err(_) => setup.clone(),
        };
        written.selection = setup.selection.iter().map(|id| self.written(id).into_owned()).collect();
        written
    }
}

/// `id` with `#n` before its closing bracket (or at its end): the `n`th id of the selection
/// that redaction wrote the same way.
fn numbered(id: &str, n: u32) -> String {
    match id.strip_suffix(']') {
        Some(open) => format!("{open}#{n}]"),
        None => format!("{id}#{n}"),
    }
}
