//! The cases, one module per concern (each file's own `//!` says which).

mod adapters;
mod adversarial_input;
mod adversarial_record;
mod adversarial_secrets;
mod adversarial_state;
mod checks;
mod dispatch_files;
mod fire;
mod hunt;
mod jitter;
mod levels;
mod matrix;
mod oracles;
mod outcomes;
mod plan;
mod processes;
mod profiles;
mod record;
mod report_merge;
mod slurm;
mod suite;
mod suite_warm;
mod sweep_copies;
mod usage;
mod warm;
