//! One attempt as recorded in `attempts.jsonl` (the type is the schema's: [`Attempt`]), and
//! what the recorder removes from it before writing.

pub use crate::schema::attempt::{Attempt, Effect, HangCheck, Mode, Outcome};

/// What the recorder removes from an attempt before writing it.
pub trait RedactAttempt {
    /// Redacts what the record holds of the target's output and environment: its output tails,
    /// oracle reason, start error, leaked commands, the variables its profile set and what the
    /// checks found (its suite part is the suite's: see `suite::run::seal_suite_part`).
    fn redact(&mut self);
}

impl RedactAttempt for Attempt {
    fn redact(&mut self) {
        crate::redact::in_place(&mut self.stderr_tail);
        crate::redact::in_place(&mut self.stdout_tail);
        if let Some(reason) = &mut self.oracle {
            crate::redact::in_place(reason);
        }
        if let Some(error) = &mut self.error {
            crate::redact::in_place(error);
        }
        self.leaked.iter_mut().for_each(|p| crate::redact::in_place(&mut p.command));
        // A profile's `env` may carry a token the target needs.
        for (name, value) in &mut self.effect.hints {
            *value = crate::redact::env_value(name, value).into_owned();
        }
        for f in &mut self.hidden {
            crate::redact::in_place(&mut f.summary);
            crate::redact::in_place(&mut f.report);
            if let Some(test) = &mut f.test {
                if let std::borrow::Cow::Owned(written) = crate::redact::test_id(test) {
                    *test = written;
                }
            }
        }
    }
}
