//! The adaptive hunt (`flakehunt hunt`), its pure parts: calibration of the target and the arms
//! it implies, the hang rule, and the bandit plan that picks each next attempt, confirms the
//! first arm to fail twice, and stops. Main type: [`BanditPlan`].
//!
//! How a driver runs it: a [`BanditPlan`] from [`BanditOptions`] (kept in the record, so a
//! resumed hunt rebuilds the same plan and observes the recorded attempts back to the same
//! state); a `ProfileEnv` with `copies_scheduled` set; a runner with `jobs` of at least the
//! largest `copies=N` (the plan itself keeps other arms one at a time, by answering `Wait`); the
//! runner asks [`crate::plan::Plan::timeout`] for each attempt's timeout (the hang rule). The
//! record's `"reproduction"` and the conclusion line come from
//! [`crate::kind::adaptive::reproduction::AdaptiveTally`] and [`conclusion::conclusion`].

mod bandit;
mod beta;
mod calibration;
pub mod conclusion;
mod hang;
mod hunt;
pub mod record;
pub mod reproduction;

pub use bandit::{BanditOptions, BanditPlan, Confirmation, Stage, CALIBRATE, CONFIRM, PRIOR};
pub use beta::{beta, gamma};
pub use calibration::{
    Arms, Calibration, CalibrationError, Family, Intensity, Measurement, RuntimeKind, Sharing, Skipped, JITTER_RATES,
    MIN_QUOTA_PERCENT, NOISE_PER_CPU, STRETCHES,
};
pub use hang::{confirm_limit, hang_timeout, p99_rank, HANG_FACTOR, MIN_HANG, MIN_PASSED, SLOW_GROWTH};
pub use hunt::Adaptive;
