//! The integration tests of the `flakehunt` binary: one test binary, one module per concern in
//! `cases/`, one harness that runs the binary against the fixtures and reads back what it
//! printed and recorded.

mod cases;
mod harness;
