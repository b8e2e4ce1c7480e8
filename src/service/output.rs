//! What the service hands back: bits as one chunk or as a chunk stream, secrets, UUIDs and
//! integers — each carrying its algorithm and size as data, for the transports to encode and
//! for the metrics and access log to read.

use std::time::Duration;

use bytes::Bytes;

use super::budget::{Permit, Shares};
use super::encoding::{Encoding, JSON_SUFFIX_MAX, SecretFormat, json_prefix, json_suffix};
use super::handle::Service;
use super::request::{BitsRequest, SecretKind};
use crate::drbg::{Algorithm, bits};
use crate::error::ApiError;

/// Random bits generated in one piece.
pub struct Generated {
    /// `ceil(n/8)` packed bytes, unused tail bits zero.
    pub data: Vec<u8>,
    /// Ones among the n bits.
    pub ones: u64,
    /// Time spent in the generator.
    pub generate_time: Duration,
}

impl Drop for Generated {
    fn drop(&mut self) {
        super::wiped::wipe(&mut self.data);
    }
}

/// `data` (`ceil(n/8)` bytes with `ones` ones) in `req`'s format, in a buffer of its own.
pub(super) fn render(data: &[u8], ones: u64, req: &BitsRequest) -> Vec<u8> {
    let format = req.format();
    let mut out = Vec::with_capacity(data.len() * format.expansion() + 96);
    if format == Encoding::Json {
        out.extend_from_slice(json_prefix(req.alg().name(), req.n_bits()).as_bytes());
    }
    format.encode_into(data, req.n_bits(), &mut out);
    if format == Encoding::Json {
        out.extend_from_slice(json_suffix(ones).as_bytes());
    }
    out
}

/// Random bits generated in one piece and already encoded: the raw bytes never left the
/// service (on its stack when small), and were wiped once encoded.
pub struct Rendered {
    /// The encoded output (wiped on drop unless taken).
    pub body: Vec<u8>,
    /// Ones among the n bits.
    pub ones: u64,
    /// Time spent in the generator.
    pub generate_time: Duration,
    /// Time from the generator's end to the encoded body: the ones counted, then the encoding.
    pub encode_time: Duration,
}

impl Drop for Rendered {
    fn drop(&mut self) {
        super::wiped::wipe(&mut self.body);
    }
}

/// The answer to a [`BitsRequest`]: whole, or a stream whose first chunk is already generated
/// (so a generator that refuses is an error before anything is sent).
pub enum BitsOutput {
    /// At most `stream_threshold_bytes`: one piece, encoded.
    Whole(Rendered),
    /// A stream: the first encoded chunk, then the rest.
    Stream {
        /// The first encoded chunk, when the stream budget had room for it at once.
        first: Option<Bytes>,
        /// The chunks after it.
        rest: Chunks,
    },
}

/// Never shows output bytes.
impl std::fmt::Debug for BitsOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BitsOutput::Whole(g) => {
                f.debug_struct("Whole").field("encoded_bytes", &g.body.len()).finish_non_exhaustive()
            }
            BitsOutput::Stream { rest, .. } => {
                f.debug_struct("Stream").field("request", &rest.req).finish_non_exhaustive()
            }
        }
    }
}

/// A large output produced chunk by chunk: memory stays at one chunk whatever `n` is, and
/// dropping the stream (a client that went away) stops generation. Every chunk comes from the
/// shard that was prepared for the whole stream.
pub struct Chunks {
    pub(super) service: Service,
    /// Charged per chunk for the bytes it holds.
    pub(super) caller: std::sync::Arc<crate::callers::Caller>,
    pub(super) shard: usize,
    /// What is left of the reseed budget set aside for this stream.
    pub(super) reserved: u64,
    pub(super) req: BitsRequest,
    pub(super) chunk_bytes: usize,
    pub(super) bits_done: u64,
    pub(super) ones: u64,
    pub(super) started: bool,
    pub(super) finished: bool,
    pub(super) buf: Vec<u8>,
    /// Chunks go out in recycled buffers, under these shares of the stream budget
    /// ([`Chunks::recycle_buffers`]).
    pub(super) recycle: Option<Shares>,
    /// The stream budget's bytes for the next chunk ([`Chunks::grant`]).
    pub(super) granted: Option<Permit>,
}

impl Drop for Chunks {
    fn drop(&mut self) {
        super::wiped::wipe(&mut self.buf);
        self.service.release(self.shard, self.req.alg(), std::mem::take(&mut self.reserved));
    }
}

impl Chunks {
    /// The request being served.
    pub fn request(&self) -> &BitsRequest {
        &self.req
    }

    /// Hands the chunks after this call out in recycled buffers, which come back when the
    /// transport drops them, each under a permit of `shares` ([`Chunks::grant`]): for
    /// transports that send the bytes as they are (HTTP). A transport that copies them into a
    /// message of its own (gRPC) gains nothing from it.
    pub(super) fn recycle_buffers(&mut self, shares: Shares) {
        self.recycle = Some(shares);
    }

    /// Whether every chunk has been handed out.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// The shares of the stream budget the next chunk's permit is taken from (`None`: the
    /// chunks go out without one, as gRPC's).
    pub fn shares(&self) -> Option<&Shares> {
        self.recycle.as_ref()
    }

    /// The budget's bytes for the next chunk, which go back when the transport drops it.
    pub fn grant(&mut self, budget: Permit) {
        self.granted = Some(budget);
    }

    /// The next encoded chunk with the raw bits it holds and their ones, `None` at the end.
    ///
    /// # Errors
    /// A generator failure mid-stream; the transport must abort the response (a truncated
    /// body, or a gRPC error status, is the only honest signal once output was sent).
    pub fn next_chunk(&mut self) -> Result<Option<Chunk>, ApiError> {
        if self.finished {
            return Ok(None);
        }
        let format = self.req.format();
        let remaining = self.req.n_bits() - self.bits_done;
        let n_bits = remaining.min(self.chunk_bytes as u64 * 8);
        let len = bits::byte_len(n_bits) as usize;
        let buffers = self.recycle.is_some().then(|| self.service.buffers().clone());
        // Binary: generated straight into the bytes that go to the socket (no copy), a
        // recycled buffer when the transport gives them back, overwritten whole just below.
        // Other formats: into the wiped scratch buffer, then encoded.
        let mut out = match (&buffers, format) {
            (Some(buffers), Encoding::Binary) => buffers.take(len),
            (Some(buffers), _) => buffers.take_empty(),
            (None, Encoding::Binary) => vec![0; len],
            (None, _) => Vec::new(),
        };
        if !self.started && format == Encoding::Json {
            out.extend_from_slice(json_prefix(self.req.alg().name(), self.req.n_bits()).as_bytes());
        }
        self.started = true;
        let mut chunk_ones = 0;
        if n_bits > 0 {
            let pr = self.req.pr() && self.bits_done == 0;
            let raw = if format == Encoding::Binary {
                &mut out[..]
            } else {
                // Recycled scratch, given back (wiped) below: a waiting stream holds none.
                if let (Some(buffers), 0) = (&buffers, self.buf.capacity()) {
                    self.buf = buffers.take(len);
                }
                self.buf.resize(len, 0);
                &mut self.buf[..]
            };
            self.service.fill_reserved(self.shard, self.req.alg(), raw, pr, &mut self.reserved)?;
            if pr {
                // Right after the prediction-resistance reseed: set the rest of the stream's
                // budget aside now (it could not be before the reseed replaced the budget).
                let rest = bits::byte_len(self.req.n_bits() - n_bits);
                self.reserved = self.service.prepare(self.shard, self.req.alg(), rest, self.chunk_bytes)?;
            }
            bits::mask_tail(raw, n_bits);
            self.caller.count_output(len as u64);
            chunk_ones = bits::count_ones(raw);
            self.ones += chunk_ones;
            if format != Encoding::Binary {
                let _span = encode_span(len as u64).entered();
                // Room for the JSON suffix too: appending it must not grow (and so copy, and
                // free unwiped) a buffer holding output.
                let suffix = if format == Encoding::Json { JSON_SUFFIX_MAX } else { 0 };
                out.reserve_exact(self.buf.len() * format.expansion() + suffix);
                format.encode_into(&self.buf, n_bits, &mut out);
            }
        }
        let offset_bits = self.bits_done;
        self.bits_done += n_bits;
        if self.bits_done == self.req.n_bits() {
            if format == Encoding::Json {
                out.extend_from_slice(json_suffix(self.ones).as_bytes());
            }
            self.service.observe_bias(self.req.alg(), self.req.n_bits(), self.ones);
            self.finished = true;
        }
        let encoded = match &buffers {
            Some(buffers) => {
                if self.buf.capacity() > 0 {
                    buffers.give_back(std::mem::take(&mut self.buf));
                }
                super::buffers::Buffers::share(buffers, out, self.granted.take())
            }
            None => Bytes::from(out),
        };
        Ok(Some(Chunk { encoded, offset_bits, n_bits, ones: chunk_ones }))
    }
}

/// One piece of a stream.
pub struct Chunk {
    /// The chunk in the stream's format.
    pub encoded: Bytes,
    /// Position of its first bit in the output.
    pub offset_bits: u64,
    /// Bits it holds.
    pub n_bits: u64,
    /// Ones among them.
    pub ones: u64,
}

/// A token or nonce, encoded (its raw bytes were wiped). `Debug` shows no value.
pub struct Secret {
    /// A token or a nonce.
    pub kind: SecretKind,
    /// The encoded value, wiped when dropped.
    pub value: zeroize::Zeroizing<String>,
    /// Raw bytes it encodes.
    pub bytes: u64,
    /// Its encoding.
    pub format: SecretFormat,
    /// The generator.
    pub alg: Algorithm,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secret")
            .field("bytes", &self.bytes)
            .field("format", &self.format)
            .field("alg", &self.alg)
            .finish_non_exhaustive()
    }
}

/// UUIDs with the generator that made them.
#[derive(Debug)]
pub struct Uuids {
    /// The UUIDs.
    pub uuids: Vec<uuid::Uuid>,
    /// 4 or 7.
    pub version: u8,
    /// The generator.
    pub alg: Algorithm,
}

/// Integers with their range and generator.
#[derive(Debug)]
pub struct Ints {
    /// The values, each in `[min, max]`.
    pub values: Vec<i64>,
    /// The lower bound.
    pub min: i64,
    /// The upper bound.
    pub max: i64,
    /// The generator.
    pub alg: Algorithm,
}

/// The span of encoding `bytes` raw bytes into a response's format.
pub(super) fn encode_span(bytes: u64) -> tracing::Span {
    tracing::info_span!(target: crate::telemetry::trace::TRACE_TARGET, "encode", drbgd.bytes = bytes)
}
