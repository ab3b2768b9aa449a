//! The adaptive hunt (`flakehunt hunt`), its pure parts: calibration of the target and the arms
//! it implies, the hang rule, and the bandit plan that picks each next attempt, confirms the
//! first arm to fail twice, and stops. Main type: [`BanditPlan`].

mod bandit;
mod beta;
mod calibration;
mod hang;

pub use bandit::{BanditOptions, BanditPlan, Confirmation, Stage, CALIBRATE, CONFIRM, PRIOR};
pub use beta::{beta, gamma};
pub use calibration::{
    Arms, Calibration, CalibrationError, Family, Level, Measurement, RuntimeKind, Skipped, JITTER_RATES,
    MIN_QUOTA_PERCENT, NOISE_PER_CPU, STRETCHES,
};
pub use hang::{hang_timeout, HANG_FACTOR, MIN_HANG, MIN_PASSED};
