//! State sandboxing, fingerprinting and comparison: copies of the user's
//! state directory for runs to mutate, summaries of what the runs left
//! behind, and the findings that tell lost updates, duplicates and torn
//! writes apart.

mod compare;
mod finding;
mod fingerprint;
mod fingerprint_error;
mod normalizer;
mod sandbox;
mod sqlite;
mod tokens;
mod walk;

pub use compare::compare;
pub use finding::{Finding, FindingKind};
pub use fingerprint::{Database, Entry, Fingerprint, FingerprintError, Line, Lines, Table};
pub use normalizer::{Normalizer, NormalizerError, PLACEHOLDER};
pub use sandbox::{validate_source, Sandbox, SandboxError};
pub use tokens::{trace_tokens, TokenError};
