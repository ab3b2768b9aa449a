//! The kinds of hunt besides the sweep: each kind's own preparation, plan, summary and records
//! in one folder.

pub mod adapter;
pub mod adaptive;
pub mod fire;
pub mod matrix;
pub mod suite;
pub mod verify;
