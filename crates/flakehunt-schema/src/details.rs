//! The part of a summary that only some kinds have and that has no field of its own: the
//! document under `details`, typed per kind (a matrix's grid, with `--against` its search; an
//! adaptive hunt's calibration and conclusion; a verification's conditions). Main type: [`Details`].

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::adaptive::AdaptiveDetails;
use super::matrix::MatrixDetails;
use super::verify::VerifyDetails;

/// `summary.json`'s `details`: absent for the kinds that have none (sweep, fire, suite).
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Details {
    /// No details (written as nothing: the field is left out).
    #[default]
    None,
    /// A matrix's, or a `matrix --against`'s.
    Matrix(Box<MatrixDetails>),
    /// An adaptive hunt's (`flakehunt hunt`).
    Adaptive(Box<AdaptiveDetails>),
    /// A verification's.
    Verify(Box<VerifyDetails>),
}

impl Details {
    /// Whether there are none (then the summary leaves the field out).
    pub fn is_none(&self) -> bool {
        matches!(self, Details::None)
    }

    /// A matrix's details.
    pub fn matrix(&self) -> Option<&MatrixDetails> {
        match self {
            Details::Matrix(d) => Some(d),
            _ => None,
        }
    }

    /// An adaptive hunt's details.
    pub fn adaptive(&self) -> Option<&AdaptiveDetails> {
        match self {
            Details::Adaptive(d) => Some(d),
            _ => None,
        }
    }

    /// A verification's details.
    pub fn verify(&self) -> Option<&VerifyDetails> {
        match self {
            Details::Verify(d) => Some(d),
            _ => None,
        }
    }

    /// The details a document holds, told apart by the field each kind's alone has (the
    /// document does not name its kind; the summary beside it does). A document of none of
    /// these shapes (an earlier version's fire ladder, which the summary now holds at the top
    /// level) reads as none: everything in a summary is recomputed from the attempts.
    fn from_value(value: serde_json::Value) -> Result<Self, serde_json::Error> {
        let has = |key: &str| value.get(key).is_some();
        Ok(if has("conclusion") {
            Details::Adaptive(Box::new(serde_json::from_value(value)?))
        } else if has("verified") {
            Details::Verify(Box::new(serde_json::from_value(value)?))
        } else if has("dimensions") && has("cells") {
            Details::Matrix(Box::new(serde_json::from_value(value)?))
        } else {
            Details::None
        })
    }
}

impl Serialize for Details {
    /// Written through a `serde_json::Value`, so its keys are in the sorted order the document
    /// has always had (it was a `Value` before it was typed).
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let value = match self {
            Details::None => return serializer.serialize_unit(),
            Details::Matrix(d) => serde_json::to_value(d),
            Details::Adaptive(d) => serde_json::to_value(d),
            Details::Verify(d) => serde_json::to_value(d),
        };
        value.map_err(serde::ser::Error::custom)?.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Details {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        Self::from_value(value).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Details of a shape no kind writes read as an error or as none, never a panic.
    #[test]
    fn odd_details_do_not_panic() {
        for d in [
            serde_json::json!({"dimensions": 3, "cells": "x"}),
            serde_json::json!({"dimensions": ["A"], "cells": [{"overlay": 1}, 2]}),
            serde_json::json!({"levels": [1, {"workers": "x", "findings": [null]}]}),
            serde_json::json!(null),
        ] {
            let _ = serde_json::from_value::<Details>(d);
        }
        assert_eq!(serde_json::from_value::<Details>(serde_json::json!({"levels": []})).unwrap(), Details::None);
    }
}
