//! `flakehunt matrix`: a grid of environment conditions, its plan (confirmation and
//! minimisation of the cells that fail) and its part of the summary (attribution).

pub mod plan;
pub(crate) mod prepare;
pub mod summary;
