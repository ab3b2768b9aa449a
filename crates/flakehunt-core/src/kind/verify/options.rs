//! What a verify record's manifest keeps (`extra.verify`): the record it verifies (path, kind,
//! run id, content hash), the level, and each condition with what the verified hunt saw under
//! it, so that the summary, `report` and `--resume` judge from this record alone. Main type:
//! [`VerifyOptions`].

pub use crate::schema::verify::{Condition, Role, VerifyOptions, DEFAULT_LEVEL};
