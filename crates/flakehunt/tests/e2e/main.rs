//! End-to-end tests: the real `flakehunt` binary against the fixtures in `fixtures/`. One test
//! binary, one module per concern; `harness` runs the binary and reads its record back.

mod harness;

mod outcomes;
mod plan;
mod processes;
mod record;
mod usage;
