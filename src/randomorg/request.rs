//! RANDOM.ORG's methods (Release 4) and what a generating one asks for: the method table
//! (names, the parameters each takes in RANDOM.ORG's documented order) and each of the seven
//! kinds' parameters read and bounded as RANDOM.ORG documents them, into a [`Spec`] the
//! values are drawn from (`values.rs`) and the parameters a signed `random` object echoes,
//! defaults written out.

use serde_json::Value;

use super::error::RpcError;
use super::params::{self, Params};

/// What a generating method draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `generateIntegers`.
    Integers,
    /// `generateIntegerSequences`.
    IntegerSequences,
    /// `generateDecimalFractions`.
    DecimalFractions,
    /// `generateGaussians`.
    Gaussians,
    /// `generateStrings`.
    Strings,
    /// `generateUUIDs`.
    Uuids,
    /// `generateBlobs`.
    Blobs,
}

/// A method of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// A Basic (`signed: false`) or Signed generating method.
    Generate {
        /// What it draws.
        kind: Kind,
        /// `generateSigned*`.
        signed: bool,
    },
    /// `getUsage`.
    GetUsage,
    /// `getResult`.
    GetResult,
    /// `createTickets`.
    CreateTickets,
    /// `revealTickets`.
    RevealTickets,
    /// `listTickets`.
    ListTickets,
    /// `getTicket` (no key).
    GetTicket,
    /// `verifySignature` (no key).
    VerifySignature,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 7] = [
        Kind::Integers,
        Kind::IntegerSequences,
        Kind::DecimalFractions,
        Kind::Gaussians,
        Kind::Strings,
        Kind::Uuids,
        Kind::Blobs,
    ];

    /// The Basic and Signed methods' names.
    pub fn names(self) -> (&'static str, &'static str) {
        match self {
            Kind::Integers => ("generateIntegers", "generateSignedIntegers"),
            Kind::IntegerSequences => ("generateIntegerSequences", "generateSignedIntegerSequences"),
            Kind::DecimalFractions => ("generateDecimalFractions", "generateSignedDecimalFractions"),
            Kind::Gaussians => ("generateGaussians", "generateSignedGaussians"),
            Kind::Strings => ("generateStrings", "generateSignedStrings"),
            Kind::Uuids => ("generateUUIDs", "generateSignedUUIDs"),
            Kind::Blobs => ("generateBlobs", "generateSignedBlobs"),
        }
    }

    /// Its parameters but `apiKey` and the Signed API's own, in RANDOM.ORG's order: the order
    /// a signed `random` object lists them in.
    pub fn params(self) -> &'static [&'static str] {
        const RANDOMIZATION: &str = "pregeneratedRandomization";
        match self {
            Kind::Integers => &["n", "min", "max", "replacement", "base", RANDOMIZATION],
            Kind::IntegerSequences => &["n", "length", "min", "max", "replacement", "base", RANDOMIZATION],
            Kind::DecimalFractions => &["n", "decimalPlaces", "replacement", RANDOMIZATION],
            Kind::Gaussians => &["n", "mean", "standardDeviation", "significantDigits", RANDOMIZATION],
            Kind::Strings => &["n", "length", "characters", "replacement", RANDOMIZATION],
            Kind::Uuids => &["n", RANDOMIZATION],
            Kind::Blobs => &["n", "size", "format", RANDOMIZATION],
        }
    }

    /// The kind whose Basic or Signed method is `name`.
    pub fn of_method(name: &str) -> Option<(Kind, bool)> {
        Kind::ALL.into_iter().find_map(|k| match k.names() {
            (basic, _) if basic == name => Some((k, false)),
            (_, signed) if signed == name => Some((k, true)),
            _ => None,
        })
    }
}

/// The Signed API's own parameters of a generating method.
pub const SIGNED_PARAMS: [&str; 3] = ["licenseData", "userData", "ticketId"];

impl Method {
    /// The method named `name`.
    pub fn named(name: &str) -> Option<Method> {
        if let Some((kind, signed)) = Kind::of_method(name) {
            return Some(Method::Generate { kind, signed });
        }
        Some(match name {
            "getUsage" => Method::GetUsage,
            "getResult" => Method::GetResult,
            "createTickets" => Method::CreateTickets,
            "revealTickets" => Method::RevealTickets,
            "listTickets" => Method::ListTickets,
            "getTicket" => Method::GetTicket,
            "verifySignature" => Method::VerifySignature,
            _ => return None,
        })
    }

    /// Whether its caller is named by an `apiKey` (all but `getTicket` and `verifySignature`,
    /// which anyone may call).
    pub fn keyed(self) -> bool {
        !matches!(self, Method::GetTicket | Method::VerifySignature)
    }

    /// The parameters it takes (`apiKey` included where it is keyed).
    pub fn allowed(self) -> Vec<&'static str> {
        let own: &[&str] = match self {
            Method::Generate { kind, signed: false } => kind.params(),
            Method::Generate { kind, signed: true } => {
                return ["apiKey"]
                    .into_iter()
                    .chain(kind.params().iter().copied())
                    .chain(SIGNED_PARAMS)
                    .collect();
            }
            Method::GetUsage => &[],
            Method::GetResult => &["serialNumber"],
            Method::CreateTickets => &["n", "showResult"],
            Method::RevealTickets => &["ticketId"],
            Method::ListTickets => &["ticketType"],
            Method::GetTicket => return vec!["ticketId"],
            Method::VerifySignature => return vec!["random", "signature"],
        };
        ["apiKey"].into_iter().chain(own.iter().copied()).collect()
    }
}

/// One integer sequence's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sequence {
    /// Its length.
    pub length: usize,
    /// Its least value.
    pub min: i64,
    /// Its greatest value.
    pub max: i64,
    /// Whether values may repeat.
    pub replacement: bool,
    /// The base its values are written in.
    pub base: u32,
}

/// What a generating method draws, its parameters read and bounded.
#[derive(Debug, Clone, PartialEq)]
pub enum Spec {
    /// Integers of `[min, max]`: one sequence (its length is `n`).
    Integers(Sequence),
    /// Sequences, each its own parameters.
    IntegerSequences(Vec<Sequence>),
    /// `n` fractions in `[0, 1)` of `places` decimal places.
    DecimalFractions {
        /// How many.
        n: usize,
        /// Decimal places, 1 to 20.
        places: u32,
        /// Whether values may repeat.
        replacement: bool,
    },
    /// `n` values of a normal distribution, rounded to `digits` significant digits.
    Gaussians {
        /// How many.
        n: usize,
        /// The mean.
        mean: f64,
        /// The standard deviation.
        deviation: f64,
        /// Significant digits, 2 to 20.
        digits: u32,
    },
    /// `n` strings of `length` characters of `characters`.
    Strings {
        /// How many.
        n: usize,
        /// Characters each.
        length: usize,
        /// The characters drawn from (Unicode scalar values, each position equally likely).
        characters: Vec<char>,
        /// Whether strings may repeat.
        replacement: bool,
    },
    /// `n` version-4 UUIDs.
    Uuids(usize),
    /// `n` blobs of `bytes` bytes each.
    Blobs {
        /// How many.
        n: usize,
        /// Bytes each.
        bytes: usize,
        /// Hex (else base64).
        hex: bool,
    },
}

/// Most bits a blob request draws in all (`n × size`), RANDOM.ORG's cap.
pub const MAX_BLOB_BITS: u64 = 1_048_576;
/// Most values of all sequences of one request together.
pub const MAX_SEQUENCE_VALUES: u64 = 10_000;
/// Integer bounds.
const INT_BOUND: i64 = 1_000_000_000;

/// A generating request: what it draws and the parameters its signed `random` echoes, in
/// order, defaults written out.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// What it draws.
    pub spec: Spec,
    /// `(name, value)` in [`Kind::params`] order.
    pub echo: Vec<(&'static str, Value)>,
}

/// Reads the parameters of a `kind` method.
///
/// # Errors
/// RANDOM.ORG's parameter errors (−32602, 200 … 204, 300, 301, 304); 201 for a non-null
/// `pregeneratedRandomization`: drbgd keeps no randomness to hand out twice.
pub fn read(kind: Kind, p: &Params<'_>) -> Result<Request, RpcError> {
    if p.get("pregeneratedRandomization").is_some() {
        return Err(RpcError::illegal("pregeneratedRandomization"));
    }
    let spec = match kind {
        Kind::Integers => integers(p)?,
        Kind::IntegerSequences => Spec::IntegerSequences(sequences(p)?),
        Kind::DecimalFractions => Spec::DecimalFractions {
            n: count(p, 10_000)?,
            places: p.int("decimalPlaces", 1, 20)? as u32,
            replacement: p.boolean("replacement", true)?,
        },
        Kind::Gaussians => Spec::Gaussians {
            n: count(p, 10_000)?,
            mean: p.number("mean", -1e6, 1e6)?,
            deviation: p.number("standardDeviation", -1e6, 1e6)?,
            digits: p.int("significantDigits", 2, 20)? as u32,
        },
        Kind::Strings => strings(p)?,
        Kind::Uuids => Spec::Uuids(count(p, 1_000)?),
        Kind::Blobs => blobs(p)?,
    };
    check_domain(&spec)?;
    let echo = kind.params().iter().map(|&name| (name, echoed(kind, name, p))).collect();
    Ok(Request { spec, echo })
}

/// A parameter as a signed `random` echoes it: as sent (a sequence parameter's array form
/// too), else its default.
fn echoed(kind: Kind, name: &'static str, p: &Params<'_>) -> Value {
    match (p.get(name), name) {
        (Some(value), _) => value.clone(),
        (None, "replacement") => Value::Bool(true),
        (None, "base") => Value::from(10),
        (None, "format") if kind == Kind::Blobs => Value::from("base64"),
        (None, _) => Value::Null,
    }
}

/// `n` in `[1, max]`.
fn count(p: &Params<'_>, max: i64) -> Result<usize, RpcError> {
    Ok(p.int("n", 1, max)? as usize)
}

fn base(value: i64) -> Result<u32, RpcError> {
    match value {
        2 | 8 | 10 | 16 => Ok(value as u32),
        _ => Err(RpcError::illegal("base")),
    }
}

fn integers(p: &Params<'_>) -> Result<Spec, RpcError> {
    let n = count(p, 10_000)?;
    let (min, max) = (p.int("min", -INT_BOUND, INT_BOUND)?, p.int("max", -INT_BOUND, INT_BOUND)?);
    if min > max {
        return Err(RpcError::must_be_less("min", "max"));
    }
    let replacement = p.boolean("replacement", true)?;
    let base = base(p.get("base").map_or(Ok(10), |v| params::int_in(v, "base", i64::MIN, i64::MAX))?)?;
    Ok(Spec::Integers(Sequence { length: n, min, max, replacement, base }))
}

/// A sequence parameter: one value for every sequence, or an array of exactly `n`.
fn each<T: Clone>(
    p: &Params<'_>,
    name: &str,
    n: usize,
    default: Option<Value>,
    read: impl Fn(&Value) -> Result<T, RpcError>,
) -> Result<Vec<T>, RpcError> {
    let value = match (p.get(name), default) {
        (Some(value), _) => value.clone(),
        (None, Some(default)) => default,
        (None, None) => return Err(RpcError::invalid_params(name)),
    };
    match value {
        Value::Array(items) if items.len() > n => Err(RpcError::too_long(name, items.len(), n)),
        Value::Array(items) if items.len() < n => Err(RpcError::too_short(name, items.len(), n)),
        Value::Array(items) => items.iter().map(read).collect(),
        one => Ok(vec![read(&one)?; n]),
    }
}

fn sequences(p: &Params<'_>) -> Result<Vec<Sequence>, RpcError> {
    let n = count(p, 1_000)?;
    let bound = |name: &'static str| move |v: &Value| params::int_in(v, name, -INT_BOUND, INT_BOUND);
    let lengths = each(p, "length", n, None, |v| params::int_in(v, "length", 1, 10_000))?;
    let mins = each(p, "min", n, None, bound("min"))?;
    let maxes = each(p, "max", n, None, bound("max"))?;
    let replacements =
        each(p, "replacement", n, Some(Value::Bool(true)), |v| params::boolean(v, "replacement"))?;
    let bases = each(p, "base", n, Some(Value::from(10)), |v| {
        params::int_in(v, "base", i64::MIN, i64::MAX).and_then(base)
    })?;
    let total: i64 = lengths.iter().sum();
    if total as u64 > MAX_SEQUENCE_VALUES {
        return Err(RpcError::too_big(total as u64, MAX_SEQUENCE_VALUES));
    }
    (0..n)
        .map(|i| {
            if mins[i] > maxes[i] {
                return Err(RpcError::must_be_less("min", "max"));
            }
            Ok(Sequence {
                length: lengths[i] as usize,
                min: mins[i],
                max: maxes[i],
                replacement: replacements[i],
                base: bases[i],
            })
        })
        .collect()
}

fn strings(p: &Params<'_>) -> Result<Spec, RpcError> {
    let n = count(p, 10_000)?;
    let length = p.int("length", 1, 20)? as usize;
    let characters: Vec<char> = p.string("characters")?.chars().collect();
    match characters.len() {
        0 => return Err(RpcError::too_short("characters", 0, 1)),
        len @ 81.. => return Err(RpcError::too_long("characters", len, 80)),
        _ => {}
    }
    let replacement = p.boolean("replacement", true)?;
    // Distinct strings of characters listed twice would not be uniform, and their count would
    // take a skewed collector for ever to reach: without replacement, each character once.
    let distinct = characters.iter().collect::<std::collections::HashSet<_>>().len();
    if !replacement && distinct < characters.len() {
        return Err(RpcError::illegal("characters"));
    }
    Ok(Spec::Strings { n, length, characters, replacement })
}

fn blobs(p: &Params<'_>) -> Result<Spec, RpcError> {
    let n = count(p, 100)?;
    let size = p.int("size", 1, MAX_BLOB_BITS as i64)?;
    if size % 8 != 0 {
        return Err(RpcError::illegal("size"));
    }
    let hex = match p.get("format").map(|v| v.as_str().ok_or_else(|| RpcError::malformed("format"))) {
        None => false,
        Some(format) => match format? {
            "base64" => false,
            "hex" => true,
            _ => return Err(RpcError::illegal("format")),
        },
    };
    let total = n as u64 * size as u64;
    if total > MAX_BLOB_BITS {
        return Err(RpcError::too_big(total, MAX_BLOB_BITS));
    }
    Ok(Spec::Blobs { n, bytes: size as usize / 8, hex })
}

/// 301 when values drawn without replacement outnumber their domain.
fn check_domain(spec: &Spec) -> Result<(), RpcError> {
    let check = |requested: usize, domain: u128| match (requested as u128) <= domain {
        true => Ok(()),
        false => Err(RpcError::domain_too_small(requested as u64, u64::try_from(domain).unwrap_or(u64::MAX))),
    };
    match spec {
        Spec::Integers(s) if !s.replacement => check(s.length, span(s)),
        Spec::IntegerSequences(seqs) => {
            seqs.iter().filter(|s| !s.replacement).try_for_each(|s| check(s.length, span(s)))
        }
        Spec::DecimalFractions { n, places, replacement: false } => check(*n, 10u128.pow(*places)),
        // Its characters are distinct ([`strings`] refuses a repeat without replacement).
        Spec::Strings { n, length, characters, replacement: false } => {
            check(*n, (characters.len() as u128).saturating_pow(*length as u32))
        }
        _ => Ok(()),
    }
}

/// How many integers `[min, max]` holds.
pub fn span(s: &Sequence) -> u128 {
    (i128::from(s.max) - i128::from(s.min) + 1) as u128
}

#[cfg(test)]
mod tests;
