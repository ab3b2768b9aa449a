//! Renderers: pure functions from a summary (and the record it came from) to bytes.

pub mod term;
