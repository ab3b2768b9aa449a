//! The hunt-specific part of a manifest (`extra`): the adapter that resolved the target, the
//! matrix's dimensions and clean rooms, the fire options, the adaptive hunt's plan options.
//! Main type: [`Extra`].
//!
//! On disk it is the JSON object earlier versions wrote with `json!`: the parts' fields side by
//! side, keys in sorted order. So that records stay byte-for-byte the same, [`Extra`] is written
//! through a `serde_json::Value` (whose objects sort their keys) rather than field by field.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::adaptive::BanditOptions;
use super::against::Against;
use super::fire::FireOptions;
use super::matrix::Dimension;
use super::suite::SuiteSetup;
use super::verify::VerifyOptions;

/// Hunt-specific manifest data.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extra {
    /// The test-runner adapter that resolved the target, when one did.
    pub adapter: Option<Adapter>,
    /// A matrix's grid.
    pub matrix: Option<MatrixExtra>,
    /// A fire hunt's options.
    pub fire: Option<FireOptions>,
    /// An adaptive hunt's plan options (`bandit`), from which a resumed hunt rebuilds its plan.
    pub bandit: Option<BanditOptions>,
    /// A suite hunt's runner, selection and where its files go, from which every attempt's
    /// argv is rebuilt (by a resumed hunt, and by the analysis replaying its classification).
    pub suite: Option<SuiteSetup>,
    /// A verification's record, level and conditions.
    pub verify: Option<VerifyOptions>,
}

/// The test runner an adapter resolved, and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "kebab-case")]
pub enum Adapter {
    /// `--cargo-test NAME [-p PKG]`.
    CargoTest {
        /// The test's full name.
        test: String,
        /// The test executable cargo built.
        binary: String,
        /// `-p PKG`, when given.
        package: Option<String>,
        /// The package's directory, where attempts run.
        dir: PathBuf,
    },
    /// `--go-test PKG [-run NAME]`.
    GoTest {
        /// The import path.
        package: String,
        /// The one top-level test named, when one was.
        test: Option<String>,
        /// The test binary built into the record.
        binary: String,
        /// The package's directory, where attempts run.
        dir: PathBuf,
        /// Seconds `go test -c` took, to the millisecond.
        build_seconds: f64,
    },
    /// `--pytest NODEID`.
    Pytest {
        /// The node id.
        node: String,
    },
}

impl Adapter {
    /// The adapter's name in the record (`cargo-test`, `go-test`, `pytest`).
    pub fn name(&self) -> &'static str {
        match self {
            Adapter::CargoTest { .. } => "cargo-test",
            Adapter::GoTest { .. } => "go-test",
            Adapter::Pytest { .. } => "pytest",
        }
    }
}

/// What a matrix records besides its cells.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatrixExtra {
    /// The dimensions of the grid.
    pub dimensions: Vec<Dimension>,
    /// `--confirm`: re-runs of a cell that failed once.
    pub confirm: u64,
    /// `--clean-room`, when given.
    pub clean_room: Option<CleanRoomSpec>,
    /// `--against SNAPSHOT`: the differences searched instead of a grid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub against: Option<Against>,
}

/// How each cell's clean room is made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CleanRoomSpec {
    /// The project whose tracked files are copied.
    pub project: PathBuf,
    /// `--setup`, run once in each copy.
    pub setup: Option<String>,
    /// `--keep-env`: variables passed through besides PATH.
    pub keep_env: Vec<String>,
    /// `--keep`: keep the copies afterwards.
    pub keep: bool,
    /// `--follow-outside-links`: copy what a tracked link leaving the repository points to.
    #[serde(default)]
    pub follow_outside_links: bool,
}

/// The on-disk shape: the parts flattened into one object.
#[derive(Serialize, Deserialize)]
struct Repr {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    adapter: Option<Adapter>,
    #[serde(flatten)]
    matrix: Option<MatrixExtra>,
    #[serde(flatten)]
    fire: Option<FireOptions>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bandit: Option<BanditOptions>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    suite: Option<SuiteSetup>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    verify: Option<VerifyOptions>,
}

impl Extra {
    /// Whether there is nothing to record (a plain sweep): `extra` is then left out.
    pub fn is_empty(&self) -> bool {
        self.adapter.is_none()
            && self.matrix.is_none()
            && self.fire.is_none()
            && self.bandit.is_none()
            && self.suite.is_none()
            && self.verify.is_none()
    }

    /// The matrix's `--confirm`, 0 for other hunts.
    pub fn confirm(&self) -> u64 {
        self.matrix.as_ref().map_or(0, |m| m.confirm)
    }

    /// What a `matrix --against` searches, none for other hunts.
    pub fn against(&self) -> Option<&Against> {
        self.matrix.as_ref().and_then(|m| m.against.as_ref())
    }

    /// The matrix's dimensions, none for other hunts.
    pub fn dimensions(&self) -> &[Dimension] {
        self.matrix.as_ref().map_or(&[], |m| &m.dimensions)
    }
}

impl Serialize for Extra {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let repr = Repr {
            adapter: self.adapter.clone(),
            matrix: self.matrix.clone(),
            fire: self.fire.clone(),
            bandit: self.bandit.clone(),
            suite: self.suite.clone(),
            verify: self.verify.clone(),
        };
        let value = serde_json::to_value(repr).map_err(serde::ser::Error::custom)?;
        if value.as_object().is_some_and(serde_json::Map::is_empty) {
            return serde_json::Value::Null.serialize(serializer);
        }
        value.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Extra {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        if value.is_null() {
            return Ok(Self::default());
        }
        let repr: Repr = serde_json::from_value(value).map_err(serde::de::Error::custom)?;
        Ok(Self {
            adapter: repr.adapter,
            matrix: repr.matrix,
            fire: repr.fire,
            bandit: repr.bandit,
            suite: repr.suite,
            verify: repr.verify,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::Manifest;

    /// Manifests written by flakehunt before `extra` was typed (sweep with the pytest and the
    /// go-test adapters, matrix with and without clean rooms, fire) read back into the types,
    /// and their `extra` is written again byte for byte as it was; the whole manifest is the
    /// same document (records from before redaction existed read as not redacted).
    #[test]
    fn manifests_written_before_round_trip() {
        for (name, text) in [
            ("sweep-pytest", include_str!("../../flakehunt-core/tests/records/sweep-pytest.manifest.json")),
            ("matrix", include_str!("../../flakehunt-core/tests/records/matrix.manifest.json")),
            ("matrix-clean-room", include_str!("../../flakehunt-core/tests/records/matrix-clean-room.manifest.json")),
            ("fire", include_str!("../../flakehunt-core/tests/records/fire.manifest.json")),
            ("sweep-go-test", include_str!("../../flakehunt-core/tests/records/sweep-go-test.manifest.json")),
        ] {
            let manifest: Manifest = serde_json::from_str(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            let written: serde_json::Value = serde_json::from_str(text).unwrap();
            let pretty = |v: &dyn erased::Pretty| v.pretty();
            assert_eq!(pretty(&manifest.extra), pretty(&written["extra"]), "{name}: extra, byte for byte");
            let mut again = serde_json::to_value(&manifest).unwrap();
            assert_eq!(again.as_object_mut().unwrap().remove("redacted"), Some(false.into()), "{name}");
            assert_eq!(again, written, "{name}");
        }
    }

    /// Pretty JSON of anything serialisable, for byte comparisons.
    mod erased {
        pub trait Pretty {
            fn pretty(&self) -> String;
        }
        impl<T: serde::Serialize> Pretty for T {
            fn pretty(&self) -> String {
                serde_json::to_string_pretty(self).unwrap()
            }
        }
    }

    #[test]
    fn the_parts_are_typed() {
        let fire: Manifest =
            serde_json::from_str(include_str!("../../flakehunt-core/tests/records/fire.manifest.json")).unwrap();
        assert_eq!(fire.extra.fire.as_ref().map(|f| f.ladder.0.len()), Some(1));
        assert!(fire.extra.matrix.is_none() && fire.extra.adapter.is_none());
        let m: Manifest =
            serde_json::from_str(include_str!("../../flakehunt-core/tests/records/matrix.manifest.json")).unwrap();
        assert_eq!((m.extra.confirm(), m.extra.dimensions().len()), (10, 1));
        assert!(m.extra.fire.is_none());
        let room: Manifest =
            serde_json::from_str(include_str!("../../flakehunt-core/tests/records/matrix-clean-room.manifest.json"))
                .unwrap();
        let spec = room.extra.matrix.and_then(|m| m.clean_room).unwrap();
        assert_eq!(
            (spec.setup.as_deref(), spec.keep_env.as_slice(), spec.keep),
            (Some("true"), &["LANG".to_owned()][..], false)
        );
        let s: Manifest =
            serde_json::from_str(include_str!("../../flakehunt-core/tests/records/sweep-pytest.manifest.json"))
                .unwrap();
        assert_eq!(s.extra.adapter, Some(Adapter::Pytest { node: "t_a.py::test_a".into() }));
    }

    #[test]
    fn an_empty_extra_is_left_out() {
        assert_eq!(serde_json::to_value(Extra::default()).unwrap(), serde_json::Value::Null);
        assert_eq!(serde_json::from_value::<Extra>(serde_json::Value::Null).unwrap(), Extra::default());
    }
}
