//! The record's and the summary's types: what `manifest.json`, `attempts.jsonl`, `summary.json`
//! and each kind's payloads hold, and nothing else. This module is the bottom layer: it imports
//! nothing of the project (checked by `tests/layers.rs`), so that every other module can use the
//! record's types without depending on the code that produces them. Their fields are a contract
//! (ARCHITECTURE.md, "Contracts"): added freely, never renamed or dropped.

pub mod adaptive;
pub mod against;
pub mod attempt;
pub mod checks;
pub mod details;
pub mod extra;
pub mod fire;
pub mod manifest;
pub mod matrix;
pub mod oracle;
pub mod plan;
pub mod process;
pub mod profile;
pub mod suite;
pub mod summary;
pub mod target;
pub mod verify;

/// Whether a count is zero: serde's `skip_serializing_if` for counts left out when none.
#[expect(clippy::trivially_copy_pass_by_ref, reason = "serde's skip_serializing_if passes a reference")]
fn is_zero(n: &u64) -> bool {
    *n == 0
}
