//! flakehunt-core: plans, attempt execution, scheduling profiles, run records, analysis and
//! renderers behind the `flakehunt` command. No command-line parsing and no terminal output
//! here: the binary owns both.

#![cfg(target_os = "linux")]

/// The record's and the summary's types, a crate of their own (`flakehunt-schema`) so that the
/// compiler keeps them below everything: they depend on nothing of the project. Re-exported here
/// so that `crate::schema::...` names them as it did when they were a module.
pub use flakehunt_schema as schema;

pub mod analysis;
pub mod bounds;
pub mod checks;
pub mod cleanroom;
pub mod config;
pub mod copy;
pub mod dispatch;
pub mod drift;
pub mod driver;
pub mod error_class;
pub mod events;
pub mod exec;
pub mod host;
pub mod hypo;
pub mod kind;
pub mod oracle;
pub mod plan;
pub mod probe;
pub mod profile;
pub mod record;
pub mod redact;
pub mod render;
pub mod rng;
pub mod runner;
pub mod session;
pub mod signature;
pub mod snapshot;
pub mod spec;
pub mod state;
pub mod warm;
