//! The one place a request becomes output: validation shared by HTTP and gRPC, generation from
//! the pool (timed), bit packing, encodings, chunked streaming and bias accounting.

use std::time::{Duration, Instant};

use bytes::Bytes;
use zeroize::Zeroize;

use crate::drbg::uniform::UniformI64;
use crate::drbg::{Algorithm, bits};
use crate::error::ApiError;
use crate::state::AppState;

/// How output bytes are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Raw packed bytes, `application/octet-stream`.
    Binary,
    /// Lowercase hex.
    Hex,
    /// RFC 4648 base64 with padding.
    Base64,
    /// RFC 4648 URL-safe base64 without padding.
    Base64Url,
    /// RFC 4648 base32 without padding (tokens).
    Base32,
    /// ASCII `0`/`1`, one character per bit (seed 000's bit strings).
    Bits,
    /// A JSON object with the data in hex and the count of ones.
    Json,
}

impl Encoding {
    /// Parses a `format` parameter (case-insensitive).
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name.to_ascii_lowercase().as_str() {
            "binary" | "raw" | "octet-stream" => Encoding::Binary,
            "hex" => Encoding::Hex,
            "base64" => Encoding::Base64,
            "base64url" => Encoding::Base64Url,
            "base32" => Encoding::Base32,
            "bits" | "ascii" => Encoding::Bits,
            "json" => Encoding::Json,
            _ => return None,
        })
    }

    /// The canonical name.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Binary => "binary",
            Encoding::Hex => "hex",
            Encoding::Base64 => "base64",
            Encoding::Base64Url => "base64url",
            Encoding::Base32 => "base32",
            Encoding::Bits => "bits",
            Encoding::Json => "json",
        }
    }

    /// The response content type.
    pub fn content_type(self) -> &'static str {
        match self {
            Encoding::Binary => "application/octet-stream",
            Encoding::Json => "application/json",
            _ => "text/plain; charset=utf-8",
        }
    }

    /// Encodes a whole value (for `Bits`, all of `data`'s bits).
    pub fn encode(self, data: &[u8]) -> String {
        match self {
            Encoding::Hex | Encoding::Json => data_encoding::HEXLOWER.encode(data),
            Encoding::Base64 => data_encoding::BASE64.encode(data),
            Encoding::Base64Url => data_encoding::BASE64URL_NOPAD.encode(data),
            Encoding::Base32 => data_encoding::BASE32_NOPAD.encode(data),
            Encoding::Binary | Encoding::Bits => {
                let mut out = vec![0u8; data.len() * 8];
                bits::write_ascii_bits(data, data.len() * 8, &mut out);
                String::from_utf8(out).unwrap_or_default()
            }
        }
    }
}

/// A validated request for random bits.
#[derive(Debug, Clone, Copy)]
pub struct BitsRequest {
    /// Number of bits.
    pub n_bits: u64,
    /// Generator.
    pub alg: Algorithm,
    /// Reseed before generating.
    pub prediction_resistance: bool,
}

impl BitsRequest {
    /// Packed bytes.
    pub fn byte_len(&self) -> u64 {
        bits::byte_len(self.n_bits)
    }
}

/// Checks `n` against 1..=`max`.
///
/// # Errors
/// `invalid_n` (400) for 0, `n_too_large` (413) above `max`.
pub fn check_n(param: &'static str, n: u64, max: u64) -> Result<u64, ApiError> {
    if n == 0 {
        return Err(ApiError::invalid("invalid_n", param, format!("{param} must be at least 1")));
    }
    if n > max {
        return Err(ApiError::TooLarge { param, detail: format!("{param} must be at most {max}") });
    }
    Ok(n)
}

/// Resolves an optional algorithm name against the enabled set (`None`: the default).
///
/// # Errors
/// `unknown_alg` for names that are not an algorithm or alias, `alg_disabled` for disabled ones.
pub fn resolve_alg(state: &AppState, name: Option<&str>) -> Result<Algorithm, ApiError> {
    let Some(name) = name else { return Ok(state.default_alg) };
    let alg: Algorithm = name.parse().map_err(|_| {
        ApiError::invalid("unknown_alg", "alg", format!("alg must be one of {}", crate::drbg::names()))
    })?;
    if !state.enabled.contains(&alg) {
        return Err(ApiError::invalid("alg_disabled", "alg", format!("{alg} is disabled on this server")));
    }
    Ok(alg)
}

/// Checks a count of UUIDs or integers against 1..=`max`.
///
/// # Errors
/// `invalid_count`.
pub fn check_count(n: u64, max: usize) -> Result<usize, ApiError> {
    match usize::try_from(n) {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(ApiError::invalid("invalid_count", "count", format!("count must be in 1..={max}"))),
    }
}

/// The encodings a token or nonce may use.
pub const SECRET_FORMATS: [Encoding; 4] =
    [Encoding::Base64Url, Encoding::Hex, Encoding::Base32, Encoding::Base64];

/// A token or nonce: `bytes` random bytes (1..=`limits.max_token_bytes`) encoded in `format`;
/// the raw bytes are wiped once encoded.
///
/// # Errors
/// `invalid_bytes` out of range; see [`fill`].
pub fn secret(state: &AppState, alg: Algorithm, bytes: u64, format: Encoding) -> Result<String, ApiError> {
    let max = state.settings.limits.max_token_bytes as u64;
    if !(1..=max).contains(&bytes) {
        return Err(ApiError::invalid("invalid_bytes", "bytes", format!("bytes must be in 1..={max}")));
    }
    let mut raw = vec![0u8; bytes as usize];
    fill(state, alg, &mut raw, false)?;
    let value = format.encode(&raw);
    raw.zeroize();
    Ok(value)
}

/// Fills `buf` from the calling thread's shard, timing the generator.
///
/// # Errors
/// 503 `entropy_unavailable` or `generator_failed`; `buf` is then zeroed.
pub fn fill(state: &AppState, alg: Algorithm, buf: &mut [u8], pr: bool) -> Result<Duration, ApiError> {
    fill_on(state, state.pool.current_shard(), alg, buf, pr)
}

/// [`fill`] on a given shard (a stream keeps to the shard it prepared).
///
/// # Errors
/// See [`fill`].
pub fn fill_on(
    state: &AppState,
    shard: usize,
    alg: Algorithm,
    buf: &mut [u8],
    pr: bool,
) -> Result<Duration, ApiError> {
    let start = Instant::now();
    let result = state.pool.fill_on_shard(shard, alg, buf, pr);
    let elapsed = start.elapsed();
    state.metrics.generate_duration.with_label_values(&[alg.name()]).observe(elapsed.as_secs_f64());
    result?;
    Ok(elapsed)
}

/// Output generated in one piece (small responses).
pub struct Generated {
    /// `ceil(n/8)` packed bytes, tail masked.
    pub data: Vec<u8>,
    /// Ones among the n bits.
    pub ones: u64,
    /// Generator time.
    pub generate_time: Duration,
}

impl Drop for Generated {
    fn drop(&mut self) {
        self.data.zeroize();
    }
}

/// Generates a whole response and records its bias.
///
/// # Errors
/// See [`fill`].
pub fn generate(state: &AppState, req: &BitsRequest) -> Result<Generated, ApiError> {
    let mut data = vec![0u8; req.byte_len() as usize];
    let generate_time = fill(state, req.alg, &mut data, req.prediction_resistance)?;
    bits::mask_tail(&mut data, req.n_bits);
    let ones = bits::count_ones(&data);
    state.metrics.observe_bias(req.alg, req.n_bits, ones);
    Ok(Generated { data, ones, generate_time })
}

/// Produces a large output chunk by chunk: memory stays at one chunk whatever `n` is, and
/// dropping the stream (a client that went away) stops generation.
pub struct ChunkedOutput {
    state: AppState,
    /// The shard every chunk comes from: the one prepared for the whole stream.
    shard: usize,
    req: BitsRequest,
    encoding: Encoding,
    chunk_bytes: usize,
    bits_done: u64,
    ones: u64,
    started: bool,
    finished: bool,
    buf: Vec<u8>,
}

impl Drop for ChunkedOutput {
    fn drop(&mut self) {
        self.buf.zeroize();
    }
}

impl ChunkedOutput {
    /// Prepares a stream; `chunk_bytes` is rounded to a multiple of 3 (base64) and the `bits`
    /// encoding uses an eighth of it (8 output bytes per input byte). Every chunk comes from
    /// the calling thread's shard, which reseeds now if the whole stream would otherwise need a
    /// reseed midway (not for `pr`: its first chunk reseeds anyway).
    ///
    /// # Errors
    /// 503 `entropy_unavailable` if that reseed failed: nothing was sent yet.
    pub fn new(
        state: AppState,
        req: BitsRequest,
        encoding: Encoding,
        chunk_bytes: usize,
    ) -> Result<Self, ApiError> {
        let shard = state.pool.current_shard();
        if !req.prediction_resistance {
            state.pool.prepare_on_shard(shard, req.alg, req.byte_len())?;
        }
        let chunk_bytes = if encoding == Encoding::Bits { (chunk_bytes / 8).max(3) } else { chunk_bytes };
        let chunk_bytes = (chunk_bytes / 3 * 3).max(3);
        Ok(ChunkedOutput {
            state,
            shard,
            req,
            encoding,
            chunk_bytes,
            bits_done: 0,
            ones: 0,
            started: false,
            finished: false,
            buf: Vec::new(),
        })
    }

    /// The next encoded piece, `None` at the end.
    ///
    /// # Errors
    /// A generator failure mid-stream; the caller must abort the response (a truncated body
    /// is the only honest signal once the status line is out).
    pub fn next_chunk(&mut self) -> Result<Option<Bytes>, ApiError> {
        if self.finished {
            return Ok(None);
        }
        let mut out = Vec::new();
        if !self.started && self.encoding == Encoding::Json {
            out.extend_from_slice(json_prefix(&self.req).as_bytes());
        }
        self.started = true;
        let remaining = self.req.n_bits - self.bits_done;
        if remaining == 0 {
            self.finish(&mut out);
            return Ok(Some(Bytes::from(out)));
        }
        let n_bits = remaining.min(self.chunk_bytes as u64 * 8);
        self.buf.resize(bits::byte_len(n_bits) as usize, 0);
        let pr = self.req.prediction_resistance && self.bits_done == 0;
        fill_on(&self.state, self.shard, self.req.alg, &mut self.buf, pr)?;
        bits::mask_tail(&mut self.buf, n_bits);
        self.ones += bits::count_ones(&self.buf);
        encode_chunk(self.encoding, &self.buf, n_bits, &mut out);
        self.bits_done += n_bits;
        if self.bits_done == self.req.n_bits {
            self.finish(&mut out);
        }
        Ok(Some(Bytes::from(out)))
    }

    fn finish(&mut self, out: &mut Vec<u8>) {
        if self.encoding == Encoding::Json {
            out.extend_from_slice(format!("\",\"ones\":{}}}", self.ones).as_bytes());
        }
        self.state.metrics.observe_bias(self.req.alg, self.req.n_bits, self.ones);
        self.finished = true;
    }
}

fn json_prefix(req: &BitsRequest) -> String {
    format!("{{\"alg\":\"{}\",\"n\":{},\"encoding\":\"hex\",\"data\":\"", req.alg.name(), req.n_bits)
}

/// Appends one chunk (holding `n_bits` bits) in `encoding`. Chunks other than the last are
/// multiples of 3 bytes, so base64 pieces concatenate into one valid encoding.
pub fn encode_chunk(encoding: Encoding, raw: &[u8], n_bits: u64, out: &mut Vec<u8>) {
    match encoding {
        Encoding::Binary => out.extend_from_slice(raw),
        Encoding::Bits => {
            let start = out.len();
            out.resize(start + n_bits as usize, 0);
            bits::write_ascii_bits(raw, n_bits as usize, &mut out[start..]);
        }
        other => out.extend_from_slice(other.encode(raw).as_bytes()),
    }
}

/// Renders a whole small output in `encoding`.
pub fn render(encoding: Encoding, req: &BitsRequest, generated: &Generated) -> Vec<u8> {
    let mut out = Vec::with_capacity(generated.data.len() * 2 + 64);
    if encoding == Encoding::Json {
        out.extend_from_slice(json_prefix(req).as_bytes());
    }
    encode_chunk(encoding, &generated.data, req.n_bits, &mut out);
    if encoding == Encoding::Json {
        out.extend_from_slice(format!("\",\"ones\":{}}}", generated.ones).as_bytes());
    }
    out
}

/// `count` RFC 9562 UUIDs of `version` 4 (random) or 7 (Unix time + random).
///
/// # Errors
/// See [`fill`].
pub fn uuids(
    state: &AppState,
    alg: Algorithm,
    count: usize,
    version: u8,
) -> Result<Vec<uuid::Uuid>, ApiError> {
    let mut random = vec![0u8; count * 16];
    fill(state, alg, &mut random, false)?;
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let ids = random
        .chunks_exact(16)
        .map(|c| {
            let bytes: [u8; 16] = c.try_into().unwrap_or_default();
            if version == 7 {
                let tail: [u8; 10] = bytes[..10].try_into().unwrap_or_default();
                uuid::Builder::from_unix_timestamp_millis(now_ms, &tail).into_uuid()
            } else {
                uuid::Builder::from_random_bytes(bytes).into_uuid()
            }
        })
        .collect();
    random.zeroize();
    Ok(ids)
}

/// `count` integers uniform on `[min, max]`, by Lemire's widening multiply with rejection
/// ([`UniformI64`], rand's method): no modulo bias. Words come from the pool through the same
/// fallible call as `/bits`, so a generator that refuses ends the request with its error.
///
/// # Errors
/// `invalid_range` if `min > max`; see [`fill`].
pub fn ints(
    state: &AppState,
    alg: Algorithm,
    min: i64,
    max: i64,
    count: usize,
) -> Result<Vec<i64>, ApiError> {
    let dist = UniformI64::new_inclusive(min, max)
        .ok_or_else(|| ApiError::invalid("invalid_range", "min", "min must not exceed max"))?;
    let start = Instant::now();
    let mut words = state.pool.words(alg);
    let values = (0..count).map(|_| dist.sample(|| words.next_u64())).collect::<Result<Vec<_>, _>>();
    state.metrics.generate_duration.with_label_values(&[alg.name()]).observe(start.elapsed().as_secs_f64());
    Ok(values?)
}
