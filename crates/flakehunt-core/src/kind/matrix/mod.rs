//! `flakehunt matrix`: a grid of environment conditions, its plan (confirmation and
//! minimisation of the cells that fail) and its part of the summary (attribution); and
//! `matrix --against`, which searches another machine's differences instead of a grid.

pub mod against;
mod hunt;
pub mod plan;
pub(crate) mod prepare;
pub mod summary;

pub use hunt::Matrix;
