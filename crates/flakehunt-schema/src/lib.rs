//! flakehunt-schema: the record's and the summary's types: what `manifest.json`,
//! `attempts.jsonl`, `summary.json` and each kind's payloads hold, and nothing else. A crate of
//! its own, depending on serde, serde_json and libc (the names of signals) only, so that the
//! compiler keeps it the bottom layer: every module of `flakehunt-core` (which re-exports it as
//! `flakehunt_core::schema`) can use the record's types without depending on the code that
//! produces them, and the types cannot come to depend on that code. Methods here use nothing but
//! the types; what the project computes from them (a summary from a tally, a profile applied to
//! an attempt, a ladder parsed with the machine's bounds) lives in the core, as extension traits
//! beside the code they need. Their fields are a contract (ARCHITECTURE.md, "Contracts"): added
//! freely, never renamed or dropped.

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
