//! The service: typed, validated requests in, output out, for HTTP and gRPC alike.
//!
//! [`Service`] owns the [`Rules`] (limits, defaults, enabled algorithms), the generator pool
//! and the metrics it records (generator time, bias, bytes served). Transports parse their
//! wire format into a request of [`request`], call one method here, and encode what comes
//! back ([`output`]); none of them knows a limit or a default.
//!
//! - [`request`]: `BitsRequest`, `BytesRequest`, `SecretRequest` (tokens and nonces),
//!   `UuidRequest`, `IntRequest`, each with one validating constructor.
//! - [`output`]: one chunk or a chunk stream, secrets, UUIDs, integers.
//! - [`encoding`]: the output formats.
//! - [`wiped`]: wiping buffers that held output.

pub mod budget;
mod buffers;
pub mod encoding;
mod handle;
pub mod output;
pub mod request;
pub mod wiped;

use std::sync::Arc;
use std::time::{Duration, Instant};

use zeroize::Zeroizing;

pub use encoding::{Encoding, SecretFormat};
pub use handle::Service;
pub use output::{BitsOutput, Chunk, Chunks, Generated, Ints, Rendered, Secret, Uuids};
pub use request::{BitsRequest, BytesRequest, IntRequest, Rules, SecretKind, SecretRequest, UuidRequest};

use crate::callers::{Caller, Draw};
use crate::config::Settings;
use crate::drbg::{Algorithm, DrbgError, Pool, Words, bits};
use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::peer_key::PeerKey;
use handle::Inner;

impl Rules {
    /// The rules the settings describe.
    pub fn from_settings(settings: &Settings) -> Self {
        let l = &settings.limits;
        Rules {
            max_bits: l.max_bits,
            max_unary_bits: request::MAX_UNARY_BITS.min(l.max_bits),
            max_token_bytes: l.max_token_bytes as u64,
            max_count: l.max_count as u64,
            stream_threshold_bytes: l.stream_threshold_bytes as u64,
            stream_chunk_bytes: l.stream_chunk_bytes,
            stream_buffer_bytes: l.stream_buffer_bytes,
            default_alg: settings.drbg.default_alg,
            enabled: settings.drbg.enabled.clone(),
            approved_only: settings.drbg.approved_only,
        }
    }
}

impl Service {
    /// A service over `pool`, recording into `metrics`.
    pub fn new(pool: Arc<Pool>, metrics: Arc<Metrics>, rules: Rules) -> Self {
        let buffers = Arc::new(buffers::Buffers::new(budget::chunk_cost(rules.stream_chunk_bytes)));
        let budget = budget::StreamBudget::new(rules.stream_buffer_bytes);
        Service(Arc::new(Inner { pool, buffers, budget, metrics, rules }))
    }

    /// The limits, defaults and enabled algorithms.
    pub fn rules(&self) -> &Rules {
        &self.0.rules
    }

    /// Random bits for `caller`: whole up to `stream_threshold_bytes`, else a stream of
    /// `stream_chunk_bytes` chunks in recycled buffers under the stream budget, in the share
    /// of `peer` when one is given (`anonymous`'s streams: [`budget::Owner`]), else of the
    /// caller (for a
    /// transport that sends the bytes as they are: HTTP). The first chunk is generated here
    /// when the budget has room for it now (so a generator that refuses is an error before
    /// anything is sent); else the transport waits for the budget before generating it
    /// ([`Chunks::shares`]), and a refusal then cuts the stream.
    ///
    /// # Errors
    /// 403/429 from the caller's policy and byte quota ([`Caller::permit`]); 503
    /// `entropy_unavailable`, `generator_failed` or `selftest_failed`. Nothing was produced.
    pub fn bits(
        &self,
        caller: &Arc<Caller>,
        peer: Option<PeerKey>,
        req: BitsRequest,
    ) -> Result<BitsOutput, ApiError> {
        self.admit(caller, &req.draw(), req.byte_len())?;
        let rules = &self.0.rules;
        if req.byte_len() <= rules.stream_threshold_bytes {
            return self.render_whole(caller, &req).map(BitsOutput::Whole);
        }
        let owner = match peer {
            Some(peer) => budget::Owner::Peer(peer),
            None => budget::Owner::Caller(caller.name_arc()),
        };
        let shares = self.0.budget.shares(owner, budget::chunk_cost(rules.stream_chunk_bytes));
        let permit = shares.try_take();
        let mut rest = self.open_stream(caller, req, rules.stream_chunk_bytes)?;
        rest.recycle_buffers(shares);
        let first = match permit {
            Some(permit) => {
                rest.grant(permit);
                Some(rest.next_chunk()?.map(|c| c.encoded).unwrap_or_default())
            }
            None => None,
        };
        Ok(BitsOutput::Stream { first, rest })
    }

    /// Random bits in one piece, whatever their size (gRPC unary; its constructor bounds n).
    ///
    /// # Errors
    /// As [`Service::bits`].
    pub fn whole(&self, caller: &Arc<Caller>, req: &BitsRequest) -> Result<Generated, ApiError> {
        self.admit(caller, &req.draw(), req.byte_len())?;
        self.generate_whole(caller, req)
    }

    /// [`Service::whole`], encoded in `req`'s format (the drop-in front-ends, whose requests
    /// are bounded): the raw bytes never leave the service.
    ///
    /// # Errors
    /// As [`Service::bits`].
    pub fn rendered(&self, caller: &Arc<Caller>, req: &BitsRequest) -> Result<Rendered, ApiError> {
        self.admit(caller, &req.draw(), req.byte_len())?;
        self.render_whole(caller, req)
    }

    fn generate_whole(&self, caller: &Caller, req: &BitsRequest) -> Result<Generated, ApiError> {
        let mut data = zeroed(req.byte_len() as usize);
        let (generate_time, ones, _) = self.generate_bits(caller, req, &mut data)?;
        Ok(Generated { data, ones, generate_time })
    }

    /// [`Service::generate_whole`], encoded here: the raw bytes stay in this call, on the stack
    /// when they are few (no allocation), and are wiped once encoded.
    fn render_whole(&self, caller: &Caller, req: &BitsRequest) -> Result<Rendered, ApiError> {
        with_raw(req.byte_len() as usize, |raw| {
            let (generate_time, ones, generated) = self.generate_bits(caller, req, raw)?;
            let body = output::render(raw, ones, req);
            Ok(Rendered { body, ones, generate_time, encode_time: generated.elapsed() })
        })
    }

    /// Fills `data` with `req`'s bits (unused tail bits zero) and counts them: the time in
    /// the generator, the ones, and when the generator finished (what follows it, the count
    /// and the encoding, is timed from there).
    fn generate_bits(
        &self,
        caller: &Caller,
        req: &BitsRequest,
        data: &mut [u8],
    ) -> Result<(Duration, u64, Instant), ApiError> {
        let (generate_time, generated) = self.fill(req.alg(), data, req.pr())?;
        bits::mask_tail(data, req.n_bits());
        let ones = bits::count_ones(data);
        self.observe_bias(req.alg(), req.n_bits(), ones);
        caller.count_output(req.byte_len());
        Ok((generate_time, ones, generated))
    }

    /// A chunk stream of `chunk_bytes` raw bytes per chunk (rounded down to a multiple of 3,
    /// so base64 pieces join; an eighth of it for ASCII bits). The calling thread's shard
    /// serves every chunk, and reseeds now if the whole stream would otherwise need a reseed
    /// midway (not for `pr`, whose first chunk reseeds anyway).
    ///
    /// # Errors
    /// As [`Service::bits`]; 503 `entropy_unavailable` if that reseed failed, `selftest_failed`
    /// if the algorithm is withheld (whether or not `pr`). Nothing was sent.
    pub fn stream(
        &self,
        caller: &Arc<Caller>,
        req: BitsRequest,
        chunk_bytes: usize,
    ) -> Result<Chunks, ApiError> {
        self.admit(caller, &req.draw(), req.byte_len())?;
        self.open_stream(caller, req, chunk_bytes)
    }

    /// A withheld algorithm (failed self-test) refused before the caller's quota is charged,
    /// then the caller's policy and byte quota ([`Caller::permit`]).
    fn admit(&self, caller: &Caller, draw: &Draw, bytes: u64) -> Result<(), ApiError> {
        self.0.pool.serves(draw.alg)?;
        caller.permit(draw, bytes)
    }

    /// Opens a stream of `req` for a caller already admitted ([`Service::admit`]: a withheld
    /// algorithm is refused there).
    fn open_stream(
        &self,
        caller: &Arc<Caller>,
        req: BitsRequest,
        chunk_bytes: usize,
    ) -> Result<Chunks, ApiError> {
        let chunk_bytes = if req.format() == Encoding::Bits { chunk_bytes / 8 } else { chunk_bytes };
        let chunk_bytes = (chunk_bytes / 3 * 3).max(3);
        let pool = &self.0.pool;
        let shard = pool.current_shard();
        let reserved = if req.pr() {
            0
        } else {
            pool.prepare_on_shard(shard, req.alg(), req.byte_len(), chunk_bytes as u64)?
        };
        Ok(Chunks {
            service: self.clone(),
            caller: caller.clone(),
            shard,
            reserved,
            req,
            chunk_bytes,
            bits_done: 0,
            ones: 0,
            started: false,
            finished: false,
            buf: Vec::new(),
            recycle: None,
            granted: None,
        })
    }

    /// A token or a nonce; its raw bytes are wiped once encoded.
    ///
    /// # Errors
    /// As [`Service::bits`].
    pub fn secret(&self, caller: &Caller, req: &SecretRequest) -> Result<Secret, ApiError> {
        self.admit(caller, &req.draw(), req.bytes())?;
        with_raw(req.bytes() as usize, |raw| {
            self.fill(req.alg(), raw, false)?;
            let value = output::encode_span(req.bytes()).in_scope(|| req.format().encode(raw));
            self.count_output(caller, req.alg(), req.bytes());
            Ok(Secret {
                kind: req.kind(),
                value: Zeroizing::new(value),
                bytes: req.bytes(),
                format: req.format(),
                alg: req.alg(),
            })
        })
    }

    /// RFC 9562 UUIDs: version 4 from 122 random bits, version 7 from the Unix time in
    /// milliseconds and 74 random bits.
    ///
    /// # Errors
    /// As [`Service::bits`].
    pub fn uuids(&self, caller: &Caller, req: UuidRequest) -> Result<Uuids, ApiError> {
        let bytes = req.count() as u64 * 16;
        self.admit(caller, &req.draw(), bytes)?;
        let mut random = zeroed(req.count() * 16);
        self.fill(req.alg(), &mut random, false)?;
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let uuids = random
            .chunks_exact(16)
            .map(|c| {
                let bytes: [u8; 16] = c.try_into().unwrap_or_default();
                if req.version() == 7 {
                    let tail: [u8; 10] = bytes[..10].try_into().unwrap_or_default();
                    uuid::Builder::from_unix_timestamp_millis(now_ms, &tail).into_uuid()
                } else {
                    uuid::Builder::from_random_bytes(bytes).into_uuid()
                }
            })
            .collect();
        wiped::wipe(&mut random);
        self.count_output(caller, req.alg(), bytes);
        Ok(Uuids { uuids, version: req.version(), alg: req.alg() })
    }

    /// Integers uniform on `[min, max]` by Lemire's widening multiply with rejection (rand's
    /// method; no modulo bias), over [`Service::draw_words`].
    ///
    /// # Errors
    /// As [`Service::bits`].
    /// Each integer is charged as 64 random bits to the caller's policy and byte quota (a
    /// rejection may draw more words, which are not charged).
    pub fn ints(&self, caller: &Caller, req: IntRequest) -> Result<Ints, ApiError> {
        let dist = req.dist();
        let values = self.draw_words(caller, &req.draw(), |words| {
            (0..req.count()).map(|_| dist.sample(|| words.next_u64())).collect::<Result<Vec<_>, _>>()
        })?;
        Ok(Ints { values, min: req.min(), max: req.max(), alg: req.alg() })
    }

    /// What `f` makes of the 64-bit words of `draw`'s generator on the calling thread's shard,
    /// for `caller`: the draw admitted first (a withheld algorithm, the caller's policy, its
    /// byte quota for `draw.n_bits / 8` bytes, which is what its output is counted as), the
    /// time in `f` observed as generator time. Words come through the same fallible pool call
    /// as bits, so a generator that refuses ends the request with its error, never a retry
    /// loop. The integer endpoints are written on this, with the unbiased draws of
    /// [`crate::drbg::uniform`].
    ///
    /// # Errors
    /// As [`Service::bits`]; `f`'s generator error (503).
    pub fn draw_words<T>(
        &self,
        caller: &Caller,
        draw: &Draw,
        f: impl FnOnce(&mut Words<'_>) -> Result<T, DrbgError>,
    ) -> Result<T, ApiError> {
        let bytes = draw.n_bits / 8;
        self.admit(caller, draw, bytes)?;
        let start = Instant::now();
        let mut words = self.0.pool.words(draw.alg);
        let out = f(&mut words);
        self.observe_generate(draw.alg, start.elapsed());
        let out = out?;
        self.count_output(caller, draw.alg, bytes);
        Ok(out)
    }

    /// Fills `buf` from the default generator for the server's own use (a receipt's serial):
    /// charged to no caller, counted in no caller's output.
    ///
    /// # Errors
    /// 503 `entropy_unavailable` or `generator_failed`; `buf` is then zeroed.
    pub fn fill_own(&self, buf: &mut [u8]) -> Result<(), ApiError> {
        self.fill(self.0.rules.default_alg, buf, false).map(drop)
    }

    /// Fills `buf` from the calling thread's shard: the time in the generator, and when it
    /// finished.
    fn fill(&self, alg: Algorithm, buf: &mut [u8], pr: bool) -> Result<(Duration, Instant), ApiError> {
        self.fill_reserved(self.0.pool.current_shard(), alg, buf, pr, &mut 0)
    }

    /// The recycled chunk buffers of streams.
    pub(crate) fn buffers(&self) -> &Arc<buffers::Buffers> {
        &self.0.buffers
    }

    /// Fills `buf` from `shard`, drawing down the stream reservation `mine` (0 for requests
    /// that are not streams): the time in the generator, and when it finished.
    ///
    /// # Errors
    /// 503 `entropy_unavailable` or `generator_failed`; `buf` is then zeroed.
    pub(crate) fn fill_reserved(
        &self,
        shard: usize,
        alg: Algorithm,
        buf: &mut [u8],
        pr: bool,
        mine: &mut u64,
    ) -> Result<(Duration, Instant), ApiError> {
        let _span = tracing::info_span!(
            target: crate::telemetry::trace::TRACE_TARGET,
            "generate",
            drbgd.alg = alg.name(),
            drbgd.bytes = buf.len(),
            drbgd.prediction_resistance = pr,
        )
        .entered();
        let start = Instant::now();
        let result = self.0.pool.fill_reserved_on_shard(shard, alg, buf, pr, mine);
        let end = Instant::now();
        let elapsed = end.saturating_duration_since(start);
        self.observe_generate(alg, elapsed);
        result?;
        Ok((elapsed, end))
    }

    fn observe_generate(&self, alg: Algorithm, elapsed: Duration) {
        self.0.metrics.alg(alg).generate.observe(elapsed.as_secs_f64());
    }

    pub(crate) fn prepare(
        &self,
        shard: usize,
        alg: Algorithm,
        bytes: u64,
        chunk_bytes: usize,
    ) -> Result<u64, ApiError> {
        Ok(self.0.pool.prepare_on_shard(shard, alg, bytes, chunk_bytes as u64)?)
    }

    pub(crate) fn release(&self, shard: usize, alg: Algorithm, amount: u64) {
        self.0.pool.release_on_shard(shard, alg, amount);
    }

    pub(crate) fn observe_bias(&self, alg: Algorithm, n_bits: u64, ones: u64) {
        self.0.metrics.observe_bias(alg, n_bits, ones);
    }

    fn count_output(&self, caller: &Caller, alg: Algorithm, bytes: u64) {
        self.0.metrics.alg(alg).output_bytes.inc_by(bytes);
        caller.count_output(bytes);
    }
}

/// Calls `f` with `len` zero bytes for raw output, on the stack when they are few (most
/// secrets and small `/bits`: no allocation), and wipes them after, on the error path too.
fn with_raw<T>(len: usize, f: impl FnOnce(&mut [u8]) -> T) -> T {
    let mut small = wiped::WipedArray([0u8; 64]);
    if let Some(raw) = small.0.get_mut(..len) {
        return f(raw);
    }
    f(&mut wiped::Wiped(zeroed(len)).0)
}

/// `len` zero bytes. Small buffers (most requests') as `malloc` + `memset`: `vec![0; len]`
/// asks for zeroed memory (`calloc`), which glibc serves without its per-thread cache, at
/// several times the cost. Large ones from `calloc`, which maps fresh zero pages for them
/// instead of writing every byte once more.
#[expect(clippy::slow_vector_initialization, reason = "calloc is the slow one here (measured)")]
fn zeroed(len: usize) -> Vec<u8> {
    if len > 128 * 1024 {
        return vec![0; len];
    }
    let mut buffer = Vec::with_capacity(len);
    buffer.resize(len, 0);
    buffer
}

#[cfg(test)]
mod tests;
