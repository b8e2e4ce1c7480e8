//! The error of loading and validating the settings. Every file of `config` may name it; it
//! names nothing of `config`.

/// A setting that failed to load or validate.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The sources could not be read or parsed. (Not a `#[source]`: the message already
    /// includes figment's, which names the key and the file.)
    #[error("cannot load configuration: {0}")]
    Load(Box<figment::Error>),
    /// The parser failed on a value (figment 0.10.19 panics on an environment value with a
    /// non-ASCII character before a backslash: it indexes the string's bytes by characters).
    #[error(
        "cannot load configuration: a value could not be parsed (check DRBGD__* environment values for non-ASCII text before a backslash)"
    )]
    Unparsable,
    /// Arrays or tables nested deeper than [`super::MAX_NESTING`]: the TOML and environment parsers
    /// recurse once a level, and a deep enough value would overflow the stack (found by the
    /// `config` fuzz target: a file or `DRBGD__*` value of a few thousand `[`).
    #[error("cannot load configuration: {0} nests arrays or tables more than 32 deep")]
    TooDeep(String),
    /// A value is out of range or inconsistent.
    #[error("invalid setting {key}: {reason}")]
    Invalid {
        /// The key, as `section.key`.
        key: &'static str,
        /// What is wrong.
        reason: String,
    },
}
