//! The `[callers.<name>]` tables as written, which the configuration owns (see
//! [`crate::config::callers`]).

pub use crate::config::callers::{CallerSettings, PolicySettings, QuotaSettings};
