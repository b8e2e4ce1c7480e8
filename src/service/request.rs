//! Typed requests. Each is built by one constructor that applies the [`Rules`] (limits,
//! defaults, enabled algorithms) and returns the one error type, [`ApiError`]; transports only
//! turn their wire format (query string, JSON body, protobuf message) into the constructor's
//! arguments. A value of one of these types is valid by construction.

use super::encoding::{Encoding, SecretFormat};
use crate::callers::Draw;
use crate::drbg::uniform::UniformI64;
use crate::drbg::{Algorithm, bits};
use crate::error::ApiError;
use crate::route::Route;

/// Token bytes when the request names none: 256 bits, the strength of every generator.
pub const DEFAULT_TOKEN_BYTES: u64 = 32;
/// Nonce bytes when the request names none: 96 bits, the AES-GCM and ChaCha20-Poly1305 nonce.
pub const DEFAULT_NONCE_BYTES: u64 = 12;
/// Token format when the request names none: URL- and cookie-safe.
pub const DEFAULT_TOKEN_FORMAT: SecretFormat = SecretFormat::Base64Url;
/// Nonce format when the request names none.
pub const DEFAULT_NONCE_FORMAT: SecretFormat = SecretFormat::Hex;
/// UUID version when the request names none (RFC 9562 random UUIDs).
pub const DEFAULT_UUID_VERSION: u8 = 4;
/// UUIDs or integers when the request names no count.
pub const DEFAULT_COUNT: u64 = 1;
/// Most bits in one unary gRPC reply (2 MiB of data): half of the 4 MiB that grpc-go,
/// grpc-java, grpcurl, k6 and tonic accept by default, so a default client always takes the
/// largest reply. Streams serve up to `max_bits`.
pub const MAX_UNARY_BITS: u64 = 1 << 24;

/// The limits, defaults and enabled algorithms every request is checked against, set once
/// from the configuration.
#[derive(Debug, Clone)]
pub struct Rules {
    /// Largest n for a bits request (streamed or whole).
    pub max_bits: u64,
    /// Largest n in one unary gRPC reply: `min(MAX_UNARY_BITS, max_bits)`.
    pub max_unary_bits: u64,
    /// Most bytes in a token or nonce.
    pub max_token_bytes: u64,
    /// Most UUIDs or integers per request.
    pub max_count: u64,
    /// Bits responses above this many raw bytes are streamed.
    pub stream_threshold_bytes: u64,
    /// Raw bytes per streamed chunk.
    pub stream_chunk_bytes: usize,
    /// Encoded bytes of streamed chunks alive at once, all streams together.
    pub stream_buffer_bytes: usize,
    /// The algorithm of requests that name none.
    pub default_alg: Algorithm,
    /// The algorithms callers may name.
    pub enabled: Vec<Algorithm>,
    /// Only SP 800-90A mechanisms are served (`drbg.approved_only`).
    pub approved_only: bool,
}

impl Rules {
    /// Resolves an optional algorithm name (any alias, any case) against the enabled set.
    ///
    /// # Errors
    /// `unknown_alg` for a name that is no algorithm, `alg_not_approved` for one that is no
    /// SP 800-90A mechanism when only those are served (before `alg_disabled`, which it
    /// explains better), `alg_disabled` for a disabled one.
    pub fn algorithm(&self, name: Option<&str>) -> Result<Algorithm, ApiError> {
        let Some(name) = name else { return Ok(self.default_alg) };
        let alg: Algorithm = name.parse().map_err(|_| {
            ApiError::invalid("unknown_alg", "alg", format!("alg must be one of {}", crate::drbg::names()))
        })?;
        if self.approved_only && !alg.approved() {
            return Err(ApiError::invalid(
                "alg_not_approved",
                "alg",
                format!("{alg} is not an SP 800-90A mechanism; this server serves approved mechanisms only"),
            ));
        }
        if !self.enabled.contains(&alg) {
            return Err(ApiError::invalid(
                "alg_disabled",
                "alg",
                format!("{alg} is disabled on this server"),
            ));
        }
        Ok(alg)
    }

    /// An integer range's bounds, both required, `min` at most `max`.
    ///
    /// # Errors
    /// `invalid_integer` (min or max absent), `invalid_range` (min > max).
    pub fn bounds(min: Option<i64>, max: Option<i64>) -> Result<(i64, i64), ApiError> {
        let min = min.ok_or_else(|| ApiError::invalid("invalid_integer", "min", "min is required"))?;
        let max = max.ok_or_else(|| ApiError::invalid("invalid_integer", "max", "max is required"))?;
        if min > max {
            return Err(ApiError::invalid("invalid_range", "min", "min must not exceed max"));
        }
        Ok((min, max))
    }

    /// A count of UUIDs or integers: 1..=`max_count`, [`DEFAULT_COUNT`] when absent.
    ///
    /// # Errors
    /// `invalid_count` outside that range.
    pub fn count(&self, count: Option<u64>) -> Result<usize, ApiError> {
        match count.unwrap_or(DEFAULT_COUNT) {
            n if (1..=self.max_count).contains(&n) => Ok(n as usize),
            _ => Err(ApiError::invalid(
                "invalid_count",
                "count",
                format!("count must be in 1..={}", self.max_count),
            )),
        }
    }
}

/// Checks a required size against 1..=`max`.
fn size(param: &'static str, n: Option<u64>, max: u64) -> Result<u64, ApiError> {
    match n {
        None => Err(ApiError::invalid("invalid_n", param, format!("{param} is required"))),
        Some(0) => Err(ApiError::invalid("invalid_n", param, format!("{param} must be at least 1"))),
        Some(n) if n > max => {
            Err(ApiError::TooLarge { param, detail: format!("{param} must be at most {max}") })
        }
        Some(n) => Ok(n),
    }
}

/// `n` random bits from `alg`, written in `format`; `pr` reseeds first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BitsRequest {
    n_bits: u64,
    alg: Algorithm,
    format: Encoding,
    pr: bool,
    receipt: bool,
}

impl BitsRequest {
    /// A request for up to `max_bits` bits (streamed above the threshold).
    ///
    /// # Errors
    /// `invalid_n` (absent or 0), `n_too_large` (400), `unknown_alg`, `alg_not_approved`, `alg_disabled`.
    pub fn new(
        rules: &Rules,
        n: Option<u64>,
        alg: Option<&str>,
        format: Encoding,
        pr: bool,
    ) -> Result<Self, ApiError> {
        Self::within(rules, rules.max_bits, n, alg, format, pr)
    }

    /// A request answered in one gRPC message: up to [`Rules::max_unary_bits`], binary.
    ///
    /// # Errors
    /// As [`BitsRequest::new`].
    pub fn unary(rules: &Rules, n: Option<u64>, alg: Option<&str>, pr: bool) -> Result<Self, ApiError> {
        Self::within(rules, rules.max_unary_bits, n, alg, Encoding::Binary, pr)
    }

    fn within(
        rules: &Rules,
        max: u64,
        n: Option<u64>,
        alg: Option<&str>,
        format: Encoding,
        pr: bool,
    ) -> Result<Self, ApiError> {
        let n_bits = size("n", n, max)?;
        let alg = rules.algorithm(alg)?;
        Ok(BitsRequest { n_bits, alg, format, pr, receipt: false })
    }

    /// Bits requested.
    pub fn n_bits(&self) -> u64 {
        self.n_bits
    }

    /// Packed bytes: `ceil(n / 8)`.
    pub fn byte_len(&self) -> u64 {
        bits::byte_len(self.n_bits)
    }

    /// The generator.
    pub fn alg(&self) -> Algorithm {
        self.alg
    }

    /// The output format.
    pub fn format(&self) -> Encoding {
        self.format
    }

    /// Prediction resistance: reseed from the OS before generating.
    pub fn pr(&self) -> bool {
        self.pr
    }

    /// The same request, answered with a signed receipt or not.
    #[must_use]
    pub fn with_receipt(self, receipt: bool) -> Self {
        BitsRequest { receipt, ..self }
    }

    /// What it draws, as the caller's policy reads it.
    pub fn draw(&self) -> Draw {
        Draw { alg: self.alg, n_bits: self.n_bits, pr: self.pr, receipt: self.receipt }
    }
}

/// `n` random bytes: a [`BitsRequest`] counted in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BytesRequest(BitsRequest);

impl BytesRequest {
    /// Up to `max_bits / 8` bytes.
    ///
    /// # Errors
    /// As [`BitsRequest::new`].
    pub fn new(
        rules: &Rules,
        n: Option<u64>,
        alg: Option<&str>,
        format: Encoding,
        pr: bool,
    ) -> Result<Self, ApiError> {
        Self::within(rules, rules.max_bits / 8, n, alg, format, pr)
    }

    /// Up to `max_unary_bits / 8` bytes in one gRPC message.
    ///
    /// # Errors
    /// As [`BitsRequest::new`].
    pub fn unary(rules: &Rules, n: Option<u64>, alg: Option<&str>, pr: bool) -> Result<Self, ApiError> {
        Self::within(rules, rules.max_unary_bits / 8, n, alg, Encoding::Binary, pr)
    }

    fn within(
        rules: &Rules,
        max: u64,
        n: Option<u64>,
        alg: Option<&str>,
        format: Encoding,
        pr: bool,
    ) -> Result<Self, ApiError> {
        let n_bytes = size("n", n, max)?;
        let alg = rules.algorithm(alg)?;
        Ok(BytesRequest(BitsRequest { n_bits: n_bytes * 8, alg, format, pr, receipt: false }))
    }

    /// The same request in bits.
    pub fn into_bits(self) -> BitsRequest {
        self.0
    }
}

/// What a secret value is for: a token (session ids, API keys, CSRF tokens; default 32 bytes,
/// base64url) or a nonce (AEADs and protocols; default 12 bytes, hex). One request type and
/// one path for both; the kind says their defaults and the route a receipt names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretKind {
    /// `/token`, `GetToken`.
    Token,
    /// `/nonce`, `GetNonce`.
    Nonce,
}

impl SecretKind {
    /// Bytes when the request names none.
    pub fn default_bytes(self) -> u64 {
        match self {
            SecretKind::Token => DEFAULT_TOKEN_BYTES,
            SecretKind::Nonce => DEFAULT_NONCE_BYTES,
        }
    }

    /// The encoding when the request names none.
    pub fn default_format(self) -> SecretFormat {
        match self {
            SecretKind::Token => DEFAULT_TOKEN_FORMAT,
            SecretKind::Nonce => DEFAULT_NONCE_FORMAT,
        }
    }

    /// The policy route of its endpoints.
    pub fn route(self) -> Route {
        match self {
            SecretKind::Token => Route::Token,
            SecretKind::Nonce => Route::Nonce,
        }
    }
}

/// A secret value (token or nonce): `bytes` random bytes in `format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SecretRequest {
    kind: SecretKind,
    bytes: u64,
    format: SecretFormat,
    alg: Algorithm,
    receipt: bool,
}

impl SecretRequest {
    /// A `kind` of `bytes` random bytes (its default when absent) in `format`.
    ///
    /// # Errors
    /// `invalid_bytes` outside 1..=`max_token_bytes`, `unknown_alg`, `alg_not_approved`,
    /// `alg_disabled`.
    pub fn new(
        rules: &Rules,
        kind: SecretKind,
        bytes: Option<u64>,
        format: Option<SecretFormat>,
        alg: Option<&str>,
    ) -> Result<Self, ApiError> {
        let max = rules.max_token_bytes;
        let bytes = bytes.unwrap_or(kind.default_bytes());
        if !(1..=max).contains(&bytes) {
            return Err(ApiError::invalid("invalid_bytes", "bytes", format!("bytes must be in 1..={max}")));
        }
        let format = format.unwrap_or(kind.default_format());
        Ok(SecretRequest { kind, bytes, format, alg: rules.algorithm(alg)?, receipt: false })
    }

    /// A token or a nonce.
    pub fn kind(&self) -> SecretKind {
        self.kind
    }

    /// Random bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The encoding.
    pub fn format(&self) -> SecretFormat {
        self.format
    }

    /// The generator.
    pub fn alg(&self) -> Algorithm {
        self.alg
    }

    /// The same request, answered with a signed receipt or not.
    #[must_use]
    pub fn with_receipt(self, receipt: bool) -> Self {
        SecretRequest { receipt, ..self }
    }

    /// What it draws, as the caller's policy reads it.
    pub fn draw(&self) -> Draw {
        Draw { receipt: self.receipt, ..Draw::plain(self.alg, self.bytes * 8) }
    }
}

/// `count` RFC 9562 UUIDs of version 4 (random) or 7 (Unix time + random).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UuidRequest {
    count: usize,
    version: u8,
    alg: Algorithm,
    receipt: bool,
}

impl UuidRequest {
    /// # Errors
    /// `invalid_count`, `invalid_version` (not 4 or 7), `unknown_alg`, `alg_not_approved`, `alg_disabled`.
    pub fn new(
        rules: &Rules,
        count: Option<u64>,
        version: Option<u64>,
        alg: Option<&str>,
    ) -> Result<Self, ApiError> {
        let count = rules.count(count)?;
        let version = match version.unwrap_or(u64::from(DEFAULT_UUID_VERSION)) {
            4 => 4,
            7 => 7,
            _ => return Err(ApiError::invalid("invalid_version", "version", "version must be 4 or 7")),
        };
        Ok(UuidRequest { count, version, alg: rules.algorithm(alg)?, receipt: false })
    }

    /// How many.
    pub fn count(&self) -> usize {
        self.count
    }

    /// 4 or 7.
    pub fn version(&self) -> u8 {
        self.version
    }

    /// The generator.
    pub fn alg(&self) -> Algorithm {
        self.alg
    }

    /// The same request, answered with a signed receipt or not.
    #[must_use]
    pub fn with_receipt(self, receipt: bool) -> Self {
        UuidRequest { receipt, ..self }
    }

    /// What it draws, as the caller's policy reads it: 128 bits a UUID.
    pub fn draw(&self) -> Draw {
        Draw { receipt: self.receipt, ..Draw::plain(self.alg, self.count as u64 * 128) }
    }
}

/// `count` integers uniform on `[min, max]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntRequest {
    min: i64,
    max: i64,
    dist: UniformI64,
    count: usize,
    alg: Algorithm,
    receipt: bool,
}

impl IntRequest {
    /// # Errors
    /// `invalid_integer` (min or max absent), `invalid_range` (min > max), `invalid_count`,
    /// `unknown_alg`, `alg_not_approved`, `alg_disabled`.
    pub fn new(
        rules: &Rules,
        min: Option<i64>,
        max: Option<i64>,
        count: Option<u64>,
        alg: Option<&str>,
    ) -> Result<Self, ApiError> {
        let (min, max) = Rules::bounds(min, max)?;
        let dist = UniformI64::new_inclusive(min, max)
            .ok_or_else(|| ApiError::invalid("invalid_range", "min", "min must not exceed max"))?;
        let (count, alg) = (rules.count(count)?, rules.algorithm(alg)?);
        Ok(IntRequest { min, max, dist, count, alg, receipt: false })
    }

    /// The lower bound.
    pub fn min(&self) -> i64 {
        self.min
    }

    /// The upper bound (inclusive).
    pub fn max(&self) -> i64 {
        self.max
    }

    /// How many.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The generator.
    pub fn alg(&self) -> Algorithm {
        self.alg
    }

    pub(super) fn dist(&self) -> &UniformI64 {
        &self.dist
    }

    /// The same request, answered with a signed receipt or not.
    #[must_use]
    pub fn with_receipt(self, receipt: bool) -> Self {
        IntRequest { receipt, ..self }
    }

    /// What it draws, as the caller's policy reads it: 64 bits an integer.
    pub fn draw(&self) -> Draw {
        Draw { receipt: self.receipt, ..Draw::plain(self.alg, self.count as u64 * 64) }
    }
}
