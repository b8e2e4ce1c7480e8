//! The values of a RANDOM.ORG request, drawn from a fallible source of 64-bit words (the
//! caller's generator through `Service::draw_words`), and the bits RANDOM.ORG would count for
//! them (`bitsUsed`).
//!
//! - Integers and sequences: [`UniformI64`] (Lemire's method, no modulo bias) with
//!   replacement, [`shuffle`] (a partial Fisher–Yates) without; bases 2, 8, 16 as lowercase
//!   strings without padding, a minus sign before the digits.
//! - Decimal fractions: an integer `k` uniform on `[0, 10^places)` (two words beyond 10^18),
//!   the value `k / 10^places` written as the nearest binary64 (trailing zeros dropped, as
//!   RANDOM.ORG writes them); without replacement the `k` are distinct.
//! - Gaussians: Box–Muller (both of its outputs used) from 53-bit uniforms on (0, 1], scaled
//!   to the mean and deviation, rounded to the significant digits asked for.
//! - Strings: each character uniform among `characters` (a position each: a character listed
//!   twice is twice as likely); without replacement the strings are distinct.
//! - UUIDs: version 4 (RFC 9562) from 16 bytes; blobs: the bytes, base64 (padded) or hex.
//!
//! Distinctness beyond what [`shuffle`] covers is by redrawing a repeat; the domain is checked
//! first (at least `n` values), so the expected redraws are bounded (a coupon collector's).

use std::collections::HashSet;

use serde_json::Value;

use super::request::{Sequence, Spec, span};
use crate::drbg::uniform::{UniformI64, shuffle};

/// `spec`'s values, as the `data` member of a `random` object.
///
/// # Errors
/// The first error of `next`.
pub fn draw<E>(spec: &Spec, next: &mut impl FnMut() -> Result<u64, E>) -> Result<Value, E> {
    Ok(match spec {
        Spec::Integers(each) => Value::Array(sequence(each, next)?),
        Spec::IntegerSequences(seqs) => {
            Value::Array(seqs.iter().map(|s| sequence(s, next).map(Value::Array)).collect::<Result<_, E>>()?)
        }
        Spec::DecimalFractions { n, places, replacement } => decimals(*n, *places, *replacement, next)?,
        Spec::Gaussians { n, mean, deviation, digits } => gaussians(*n, *mean, *deviation, *digits, next)?,
        Spec::Strings { n, length, characters, replacement } => {
            strings(*n, *length, characters, *replacement, next)?
        }
        Spec::Uuids(n) => Value::Array(
            (0..*n).map(|_| bytes(16, next).map(|b| uuid_v4(&b))).collect::<Result<Vec<_>, E>>()?,
        ),
        Spec::Blobs { n, bytes: size, hex } => Value::Array(
            (0..*n)
                .map(|_| {
                    let b = zeroize::Zeroizing::new(bytes(*size, next)?);
                    Ok(Value::String(if *hex {
                        const_hex::encode(&*b)
                    } else {
                        data_encoding::BASE64.encode(&b)
                    }))
                })
                .collect::<Result<Vec<_>, E>>()?,
        ),
    })
}

/// The bits RANDOM.ORG counts for `spec` (`bitsUsed`): `log2` of each value's domain, summed
/// and rounded (each sequence on its own); a UUID 122, a blob its size.
pub fn bits_used(spec: &Spec) -> u64 {
    let log2 = |x: f64| x.log2();
    let bits = match spec {
        Spec::Integers(each) => each.length as f64 * log2(span(each) as f64),
        // Rounded per sequence, as RANDOM.ORG's examples count them.
        Spec::IntegerSequences(seqs) => {
            seqs.iter().map(|s| (s.length as f64 * log2(span(s) as f64)).round()).sum()
        }
        Spec::DecimalFractions { n, places, .. } => (*n as f64) * f64::from(*places) * log2(10.0),
        Spec::Gaussians { n, digits, .. } => (*n as f64) * f64::from(*digits) * log2(10.0),
        Spec::Strings { n, length, characters, .. } => (*n * *length) as f64 * log2(characters.len() as f64),
        Spec::Uuids(n) => *n as f64 * 122.0,
        Spec::Blobs { n, bytes, .. } => (*n * *bytes * 8) as f64,
    };
    bits.round() as u64
}

/// The bits a draw of `spec` takes from its generator at least (a word of 64 bits a value, or
/// a character; two a fraction beyond 18 places; a pair's two words per two Gaussians; a
/// blob's bytes in words): what the caller's byte quota is charged. Redraws (a rejection, a
/// repeat without replacement) come on top, uncharged, as `/int`'s.
pub fn drawn_bits(spec: &Spec) -> u64 {
    let words = |n: usize| n as u64;
    64 * match spec {
        Spec::Integers(each) => words(each.length),
        // Two words a pair.
        Spec::Gaussians { n, .. } => words(n.div_ceil(2) * 2),
        Spec::IntegerSequences(seqs) => seqs.iter().map(|s| words(s.length)).sum(),
        Spec::DecimalFractions { n, places, .. } => words(*n) * if *places > 18 { 2 } else { 1 },
        Spec::Strings { n, length, characters, replacement } => {
            match shuffled_strings(characters.len(), *length, *replacement) {
                Some(_) => words(*n),
                None => words(*n) * words(*length),
            }
        }
        Spec::Uuids(n) => words(*n) * 2,
        Spec::Blobs { n, bytes, .. } => words(*n) * (*bytes as u64).div_ceil(8),
    }
}

/// One sequence's integers, each written in its base.
fn sequence<E>(s: &Sequence, next: &mut impl FnMut() -> Result<u64, E>) -> Result<Vec<Value>, E> {
    // `min <= max`: the parameters were read so.
    let Some(dist) = UniformI64::new_inclusive(s.min, s.max) else { return Ok(Vec::new()) };
    let values = match s.replacement {
        true => (0..s.length).map(|_| dist.sample(&mut *next)).collect::<Result<Vec<_>, E>>()?,
        false => shuffle(s.min, s.max, s.length, &mut *next)?,
    };
    Ok(values.into_iter().map(|v| in_base(v, s.base)).collect())
}

/// `value` in `base`: a JSON integer in base 10, else a lowercase string.
pub fn in_base(value: i64, base: u32) -> Value {
    let digits = |v: u64| match base {
        2 => format!("{v:b}"),
        8 => format!("{v:o}"),
        _ => format!("{v:x}"),
    };
    match base {
        10 => Value::from(value),
        _ if value < 0 => Value::String(format!("-{}", digits(value.unsigned_abs()))),
        _ => Value::String(digits(value as u64)),
    }
}

/// `len` bytes of words, little-endian.
fn bytes<E>(len: usize, next: &mut impl FnMut() -> Result<u64, E>) -> Result<Vec<u8>, E> {
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        out.extend_from_slice(&next()?.to_le_bytes());
    }
    out.truncate(len);
    Ok(out)
}

fn uuid_v4(b: &[u8]) -> Value {
    let raw: [u8; 16] = b.try_into().unwrap_or_default();
    Value::String(uuid::Builder::from_random_bytes(raw).into_uuid().to_string())
}

/// An integer uniform on `[0, 10^places)`: one word up to 10^18, two beyond.
fn below_power_of_ten<E>(places: u32, next: &mut impl FnMut() -> Result<u64, E>) -> Result<u128, E> {
    let uniform = |digits: u32| UniformI64::new_inclusive(0, 10i64.pow(digits) - 1);
    let (Some(high), Some(low)) = (uniform(places.saturating_sub(18).max(1)), uniform(places.min(18))) else {
        return Ok(0);
    };
    let low_value = low.sample(&mut *next)? as u128;
    if places <= 18 {
        return Ok(low_value);
    }
    Ok(high.sample(&mut *next)? as u128 * 10u128.pow(18) + low_value)
}

/// `k / 10^places` as the nearest binary64.
fn fraction(k: u128, places: u32) -> f64 {
    format!("0.{k:0width$}", width = places as usize).parse().unwrap_or(0.0)
}

fn decimals<E>(
    n: usize,
    places: u32,
    replacement: bool,
    next: &mut impl FnMut() -> Result<u64, E>,
) -> Result<Value, E> {
    if !replacement && places <= 18 {
        let ks = shuffle(0, 10i64.pow(places) - 1, n, &mut *next)?;
        return Ok(Value::Array(ks.into_iter().map(|k| Value::from(fraction(k as u128, places))).collect()));
    }
    // Beyond 18 places the domain (10^19 or more) dwarfs n (10^4 at most): a repeat is
    // redrawn, and practically never comes.
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let k = below_power_of_ten(places, next)?;
        if replacement || seen.insert(k) {
            out.push(Value::from(fraction(k, places)));
        }
    }
    Ok(Value::Array(out))
}

/// The number of strings of `length` of `count` (distinct) characters when strings drawn
/// without replacement are drawn as a shuffle of their indices (a domain up to 2^63: `n` words,
/// no redraws however close `n` comes to the domain).
fn shuffled_strings(count: usize, length: usize, replacement: bool) -> Option<i64> {
    let domain = (count as u128).checked_pow(length as u32)?;
    (!replacement).then_some(domain).and_then(|d| i64::try_from(d).ok())
}

/// The `index`th string of `length` characters of `characters`, in the order of its digits in
/// base `characters.len()` (the first character the most significant).
fn nth_string(index: i64, length: usize, characters: &[char]) -> String {
    let base = characters.len() as u64;
    let mut rest = index as u64;
    let mut out = vec![characters[0]; length];
    for slot in out.iter_mut().rev() {
        *slot = characters[(rest % base) as usize];
        rest /= base;
    }
    out.into_iter().collect()
}

/// A uniform on (0, 1] of a word's top 53 bits.
fn unit(word: u64) -> f64 {
    ((word >> 11) + 1) as f64 / (1u64 << 53) as f64
}

/// `value` rounded to `digits` significant digits (as the nearest binary64).
pub fn significant(value: f64, digits: u32) -> f64 {
    format!("{:.*e}", digits.saturating_sub(1) as usize, value).parse().unwrap_or(value)
}

fn gaussians<E>(
    n: usize,
    mean: f64,
    deviation: f64,
    digits: u32,
    next: &mut impl FnMut() -> Result<u64, E>,
) -> Result<Value, E> {
    let mut out = Vec::with_capacity(n + 1);
    while out.len() < n {
        let (u1, u2) = (unit(next()?), unit(next()?));
        let radius = (-2.0 * u1.ln()).sqrt();
        let angle = std::f64::consts::TAU * u2;
        for z in [radius * angle.cos(), radius * angle.sin()] {
            out.push(Value::from(significant(mean + deviation * z, digits)));
        }
    }
    out.truncate(n);
    Ok(Value::Array(out))
}

fn strings<E>(
    n: usize,
    length: usize,
    characters: &[char],
    replacement: bool,
    next: &mut impl FnMut() -> Result<u64, E>,
) -> Result<Value, E> {
    let Some(pick) = UniformI64::new_inclusive(0, characters.len() as i64 - 1) else {
        return Ok(Value::Array(Vec::new()));
    };
    if let Some(domain) = shuffled_strings(characters.len(), length, replacement) {
        let indices = shuffle(0, domain - 1, n, &mut *next)?;
        return Ok(Value::Array(
            indices.into_iter().map(|i| Value::String(nth_string(i, length, characters))).collect(),
        ));
    }
    // With replacement, or a domain past 2^63 (which dwarfs n), each string drawn on its own
    // (a repeat without replacement redrawn, and practically never coming).
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let s = (0..length)
            .map(|_| pick.sample(&mut *next).map(|i| characters[i as usize]))
            .collect::<Result<String, E>>()?;
        if replacement || seen.insert(s.clone()) {
            out.push(Value::String(s));
        }
    }
    Ok(Value::Array(out))
}

#[cfg(test)]
mod tests;
