//! The gRPC API (`drbgd.v1.RandomnessService`), with the standard health service (following
//! readiness) and server reflection, served on the API port beside HTTP (routed by path;
//! HTTP/2 is negotiated per connection). A thin adapter: each method turns its message into
//! a typed request of [`crate::service`], calls the service and builds the reply; limits,
//! defaults and errors are the HTTP ones. Callers are admitted in front of it, from the
//! call's head (the call pipeline, [`crate::pipeline`]), and their admission arrives in the
//! request's extensions; the pipeline also writes the access and audit lines and the
//! rate-limit metadata. A unary call with `receipt` set also replies with the signed receipt
//! REST would answer ([`crate::receipts`]). Health and reflection decode at most
//! [`MAX_REQUEST_MESSAGE_BYTES`] a message, the randomness service
//! [`MAX_RANDOMNESS_MESSAGE_BYTES`].

use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::Stream;
use tonic::{Request, Response, Status};
use tonic_health::ServingStatus;

use crate::callers::{Admission, Caller, Route};
use crate::drbg::Algorithm;
use crate::error::ApiError;
use crate::http::sequence::{self, SequenceRequest};
use crate::receipts::{Ask, Random};
use crate::service::{
    BitsRequest, BytesRequest, Chunks, IntRequest, Secret, SecretFormat, SecretKind, SecretRequest,
    UuidRequest,
};
use crate::state::AppState;

mod call;
mod tickets;

pub use call::pb;
use call::{Reply, admission, alg_name, served, wire_alg};
use pb::randomness_service_server::{RandomnessService as Randomness, RandomnessServiceServer};

pub use crate::service::request::MAX_UNARY_BITS;
/// Largest StreamBits chunk: 1 MiB of data, a quarter of the default receive limit.
pub const MAX_STREAM_CHUNK_BYTES: usize = 1 << 20;
/// Smallest StreamBits chunk: every chunk costs a generator call, a health-test sample and a
/// message, so tiny chunks would multiply the work per bit for nothing.
pub const MIN_STREAM_CHUNK_BYTES: usize = 4096;
/// Largest message the server encodes: the unary limit plus framing.
const MAX_MESSAGE_BYTES: usize = (MAX_UNARY_BITS as usize / 8) + 64 * 1024;
/// Largest reply the server encodes: a unary reply with a receipt, which carries the output a
/// second time, written out (at most 8 characters a byte, as bits) in its canonical JSON.
const MAX_REPLY_BYTES: usize = MAX_MESSAGE_BYTES + 8 * crate::config::MAX_RECEIPT_OUTPUT_BYTES as usize;
/// Largest request message any gRPC service here decodes: the largest valid request (a
/// `GetIntsRequest` with every field at its widest) is under 100 bytes, and reflection's
/// symbol lookups well under this. A length prefix above it is refused before the message
/// is read (`OUT_OF_RANGE`), so a client cannot make the server buffer tonic's default 4 MiB.
pub const MAX_REQUEST_MESSAGE_BYTES: usize = 1024;
/// Largest request message the randomness service decodes: a request with the largest
/// `user_data` (1 KiB, [`crate::receipts::USER_DATA_MAX`]) and every other field at its widest.
pub const MAX_RANDOMNESS_MESSAGE_BYTES: usize = 2048;
/// The fully qualified service name.
pub const SERVICE_NAME: &str = "drbgd.v1.RandomnessService";
/// How often the health service re-reads readiness.
const HEALTH_POLL: Duration = Duration::from_millis(250);

/// The gRPC routes (Randomness, health, reflection), ready to merge into the API router. Spawns
/// the task that keeps health in step with readiness.
///
/// # Panics
/// If the embedded descriptor sets are invalid (a build error, caught by the API tests).
pub fn router(state: AppState) -> axum::Router {
    let (reporter, health) = tonic_health::server::health_reporter();
    let health = health.max_decoding_message_size(MAX_REQUEST_MESSAGE_BYTES);
    tokio::spawn(follow_readiness(state.clone(), reporter));
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()
        .expect("valid descriptors")
        .max_decoding_message_size(MAX_REQUEST_MESSAGE_BYTES);
    let reflection_alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()
        .expect("valid descriptors")
        .max_decoding_message_size(MAX_REQUEST_MESSAGE_BYTES);
    let randomness = RandomnessServiceServer::new(RandomnessAdapter { state })
        .max_encoding_message_size(MAX_REPLY_BYTES)
        .max_decoding_message_size(MAX_RANDOMNESS_MESSAGE_BYTES);
    tonic::service::Routes::new(randomness)
        .add_service(health)
        .add_service(reflection)
        .add_service(reflection_alpha)
        .into_axum_router()
}

async fn follow_readiness(state: AppState, reporter: tonic_health::server::HealthReporter) {
    let mut last = None;
    loop {
        let status = if state.check_ready() { ServingStatus::Serving } else { ServingStatus::NotServing };
        if last != Some(status) {
            reporter.set_service_status("", status).await;
            reporter.set_service_status(SERVICE_NAME, status).await;
            last = Some(status);
        }
        tokio::time::sleep(HEALTH_POLL).await;
    }
}

/// The `RandomnessService` implementation: messages in, typed requests to the service, replies
/// out.
#[derive(Debug, Clone)]
pub struct RandomnessAdapter {
    state: AppState,
}

/// What a unary call answers: its reply, and what it served for the records.
struct Unary<T> {
    reply: T,
    alg: Algorithm,
    /// Random bits served (0 where the count is not a number of bits, as for `GetInts`).
    n_bits: u64,
    /// The serial of the receipt in the reply, if any.
    serial: Option<String>,
}

/// A unary reply's receipt fields: empty without `receipt`.
#[derive(Default)]
struct Signed {
    json: String,
    signature: String,
    serial: Option<String>,
}

impl RandomnessAdapter {
    /// Runs a unary call for its admitted caller: latency by method, algorithm and code, and
    /// what was served for the pipeline's records.
    fn unary<Q, T>(
        &self,
        request: Request<Q>,
        method: &'static str,
        call: impl FnOnce(&Arc<Caller>, Q) -> Result<Unary<T>, ApiError>,
    ) -> Reply<T> {
        let start = Instant::now();
        let admission = admission(&request)?;
        let result = call(&admission.caller, request.into_inner());
        self.finish(method, start, result)
    }

    /// A unary call's end: its latency by method, algorithm and code, and its reply with what
    /// it served recorded.
    fn finish<T>(
        &self,
        method: &'static str,
        start: Instant,
        result: Result<Unary<T>, ApiError>,
    ) -> Reply<T> {
        match result {
            Ok(Unary { reply, alg, n_bits, serial }) => {
                self.observe(method, alg.name(), None, start);
                Ok(served(Response::new(reply), alg, n_bits, serial))
            }
            Err(e) => {
                self.observe(method, "none", Some(&e), start);
                Err(e.to_status())
            }
        }
    }

    /// Runs an async call (a ticket's): latency by method and code, its refusal rendered.
    async fn observed<T>(
        &self,
        method: &'static str,
        call: impl Future<Output = tickets::Answered<T>>,
    ) -> Reply<T> {
        let start = Instant::now();
        let result = call.await;
        self.observe(method, "none", result.as_ref().err(), start);
        result.map_err(|e| e.to_status())
    }

    /// A draw of `method` under a ticket: `body` its message as its REST POST body, `reply` the
    /// reply built from the kept answer.
    async fn ticketed<Q, T>(
        &self,
        method: &'static str,
        request: Request<Q>,
        body: impl FnOnce(&Q) -> Result<tickets::Draw, ApiError>,
        reply: impl FnOnce(&mut tickets::Drawn) -> Result<T, ApiError>,
    ) -> Reply<T> {
        self.observed(method, async {
            let admission = call::caller(&request)?;
            let body = body(request.get_ref())?;
            let mut drawn = tickets::draw(&self.state, &admission, method, body).await?;
            let reply = reply(&mut drawn)?;
            Ok(drawn.respond(reply))
        })
        .await
    }

    /// [`RandomnessAdapter::unary`] for a method whose receipts `[results] keep_all` keeps:
    /// one drawn without a ticket is kept before the reply is sent (`{"random": ...,
    /// "signature": ...}`, as REST answers it), or the call is refused (503).
    async fn unary_kept<Q, T: tickets::Receipted>(
        &self,
        request: Request<Q>,
        method: &'static str,
        call: impl FnOnce(&Arc<Caller>, Q) -> Result<Unary<T>, ApiError>,
    ) -> Reply<T> {
        let start = Instant::now();
        let admission = admission(&request)?;
        let mut result = call(&admission.caller, request.into_inner());
        // A receipt drawn without a ticket, kept before the reply goes (its latency counted in
        // the call's, a failure the call's code).
        if let (Ok(unary), Some(keeping)) = (&result, tickets::keeping(&self.state, method))
            && let Some(serial) = &unary.serial
        {
            let kept =
                crate::http::tickets::calls::keep(keeping, &admission, serial, unary.reply.kept_form());
            if let Err(e) = kept.await {
                result = Err(e);
            }
        }
        self.finish(method, start, result)
    }

    /// Records a finished call: its latency by method, algorithm and code, and its error.
    fn observe(&self, method: &'static str, alg: &'static str, error: Option<&ApiError>, start: Instant) {
        let code = error.map_or(tonic::Code::Ok, ApiError::grpc_code);
        if let Some(e) = error {
            self.state.metrics.errors.with_label_values(&[e.code()]).inc();
        }
        self.state
            .metrics
            .grpc_duration
            .with_label_values(&[method, alg, crate::error::grpc_code_name(code)])
            .observe(start.elapsed().as_secs_f64());
    }

    /// One unary bits reply (the output is moved, not copied, into the message), and its
    /// receipt when `ask` is one (`route`: `/bits` or `/bytes`, as the receipt says).
    fn bits(
        &self,
        caller: &Arc<Caller>,
        req: &BitsRequest,
        ask: Option<&Ask>,
        route: Route,
    ) -> Result<(Vec<u8>, u64, Signed), ApiError> {
        if let Some(ask) = ask {
            ask.check_size(req.byte_len())?;
        }
        let mut generated = self.state.service.whole(caller, req)?;
        let signed = self.sign(caller, ask, || Random::bits(route, req, &generated.data))?;
        Ok((std::mem::take(&mut generated.data), generated.ones, signed))
    }

    /// A token or a nonce (`kind`) of a message's `bytes`, `format` and `alg`, and its receipt
    /// when the message asks for one (`receipt`, `user_data`).
    fn secret(
        &self,
        caller: &Caller,
        kind: SecretKind,
        (bytes, format, alg): (u32, i32, i32),
        (receipt, user_data): (bool, &str),
    ) -> Result<(Secret, Signed), ApiError> {
        let alg = alg_name(alg)?;
        let ask = self.ask(receipt, user_data)?;
        let rules = self.state.service.rules();
        let req = SecretRequest::new(rules, kind, nonzero(bytes), secret_format(format)?, alg.as_deref())?
            .with_receipt(ask.is_some());
        if let Some(ask) = &ask {
            ask.check_size(req.bytes())?;
        }
        let secret = self.state.service.secret(caller, &req)?;
        let signed = self.sign(caller, ask.as_ref(), || Random::secret(&secret))?;
        Ok((secret, signed))
    }

    /// The receipt a message asks for (`receipt`, `user_data`; an empty `user_data` is none).
    ///
    /// # Errors
    /// As [`crate::receipts::Receipts::ask`].
    fn ask(&self, receipt: bool, user_data: &str) -> Result<Option<Ask>, ApiError> {
        self.state.receipts.ask(receipt, Some(user_data), None)
    }

    /// The receipt of `random` when `ask` is one (else empty fields).
    ///
    /// # Errors
    /// 503 when no serial could be drawn.
    fn sign(
        &self,
        caller: &Caller,
        ask: Option<&Ask>,
        random: impl FnOnce() -> Random,
    ) -> Result<Signed, ApiError> {
        let Some(ask) = ask else { return Ok(Signed::default()) };
        let receipt = self.state.receipts.issue(&self.state.service, caller, ask, random())?;
        let serial = Some(receipt.serial().to_owned());
        let (json, signature) = receipt.into_parts();
        Ok(Signed { json, signature, serial })
    }
}

/// The secret format a wire enum stands for; `None` for unspecified (the method's default).
///
/// # Errors
/// `unknown_format` for a number this server does not know.
fn secret_format(value: i32) -> Result<Option<SecretFormat>, ApiError> {
    let unknown = || {
        ApiError::invalid("unknown_format", "format", "format must be one of base64url, hex, base32, base64")
    };
    match pb::Format::try_from(value).map_err(|_| unknown())? {
        pb::Format::Unspecified => Ok(None),
        f => f
            .as_str_name()
            .strip_prefix("FORMAT_")
            .and_then(SecretFormat::parse)
            .map(Some)
            .ok_or_else(unknown),
    }
}

fn wire_format(format: SecretFormat) -> i32 {
    static WIRE: std::sync::OnceLock<[(SecretFormat, i32); 4]> = std::sync::OnceLock::new();
    let table = WIRE.get_or_init(|| {
        SecretFormat::ALL.map(|f| {
            let wire = pb::Format::from_str_name(&format!("FORMAT_{}", f.name().to_ascii_uppercase()));
            (f, wire.map_or(pb::Format::Unspecified as i32, |w| w as i32))
        })
    });
    table.iter().find(|(f, _)| *f == format).map_or(pb::Format::Unspecified as i32, |(_, w)| *w)
}

/// The reply of a ticketed `GetBits` or `GetBytes` (`pb::$reply`, of the same fields) from its kept
/// answer `$drawn`: the packed output decoded from the receipt, its bits and ones.
macro_rules! packed_reply {
    ($reply:ident, $drawn:expr) => {{
        let d: &mut tickets::Drawn = $drawn;
        let data = d.packed()?;
        let ones = data.iter().map(|b| u64::from(b.count_ones())).sum();
        Ok(pb::$reply {
            data,
            n: d.integer("n")?,
            alg: d.alg()?.1,
            ones,
            receipt_json: std::mem::take(&mut d.receipt_json),
            receipt_signature: std::mem::take(&mut d.signature),
            next_ticket: std::mem::take(&mut d.next_ticket),
        })
    }};
}

/// The reply of a ticketed `GetInts` or `GetSequence` (`pb::$reply`, of the same fields) from its
/// kept answer `$drawn`: the values of its receipt.
macro_rules! integers_reply {
    ($reply:ident, $drawn:expr) => {{
        let d: &mut tickets::Drawn = $drawn;
        Ok(pb::$reply {
            values: d.integers()?,
            alg: d.alg()?.1,
            receipt_json: std::mem::take(&mut d.receipt_json),
            receipt_signature: std::mem::take(&mut d.signature),
            next_ticket: std::mem::take(&mut d.next_ticket),
        })
    }};
}

/// A `GetBits` or `GetBytes` message (`n`, `alg`, `prediction_resistance`, and its receipt and
/// ticket fields) as its REST body.
fn packed_draw(
    n: u64,
    alg: i32,
    pr: bool,
    (receipt, user_data, ticket): (bool, &str, &str),
) -> Result<tickets::Draw, ApiError> {
    let draw = tickets::Draw::default().with("n", n).alg(alg)?.set("pr", pr);
    Ok(draw.receipt(receipt, user_data, ticket))
}

/// A `GetInts` or `GetSequence` message (`min` and `max` always, `count`, `alg`, and its
/// receipt and ticket fields) as its REST body.
fn integers_draw(
    (min, max, count, alg): (i64, i64, u32, i32),
    (receipt, user_data, ticket): (bool, &str, &str),
) -> Result<tickets::Draw, ApiError> {
    let draw = tickets::Draw::default().with("min", min).with("max", max).set("count", count).alg(alg)?;
    Ok(draw.receipt(receipt, user_data, ticket))
}

/// proto3 numbers default to 0: 0 means "the default".
fn nonzero(n: u32) -> Option<u64> {
    (n != 0).then_some(u64::from(n))
}

type ChunkStream = Pin<Box<dyn Stream<Item = Result<pb::StreamBitsResponse, Status>> + Send>>;

#[tonic::async_trait]
impl Randomness for RandomnessAdapter {
    async fn get_bits(&self, request: Request<pb::GetBitsRequest>) -> Reply<pb::GetBitsResponse> {
        if !request.get_ref().ticket.is_empty() {
            return self
                .ticketed(
                    "GetBits",
                    request,
                    |r| {
                        packed_draw(r.n, r.alg, r.prediction_resistance, (r.receipt, &r.user_data, &r.ticket))
                    },
                    |d| packed_reply!(GetBitsResponse, d),
                )
                .await;
        }
        self.unary_kept(request, "GetBits", |caller, r| {
            let alg = alg_name(r.alg)?;
            let ask = self.ask(r.receipt, &r.user_data)?;
            let rules = self.state.service.rules();
            let req = BitsRequest::unary(rules, Some(r.n), alg.as_deref(), r.prediction_resistance)?
                .with_receipt(ask.is_some());
            let (data, ones, signed) = self.bits(caller, &req, ask.as_ref(), Route::Bits)?;
            let reply = pb::GetBitsResponse {
                data,
                n: req.n_bits(),
                alg: wire_alg(req.alg()),
                ones,
                receipt_json: signed.json,
                receipt_signature: signed.signature,
                next_ticket: String::new(),
            };
            Ok(Unary { reply, alg: req.alg(), n_bits: req.n_bits(), serial: signed.serial })
        })
        .await
    }

    async fn get_bytes(&self, request: Request<pb::GetBytesRequest>) -> Reply<pb::GetBytesResponse> {
        if !request.get_ref().ticket.is_empty() {
            return self
                .ticketed(
                    "GetBytes",
                    request,
                    |r| {
                        packed_draw(r.n, r.alg, r.prediction_resistance, (r.receipt, &r.user_data, &r.ticket))
                    },
                    |d| packed_reply!(GetBytesResponse, d),
                )
                .await;
        }
        self.unary_kept(request, "GetBytes", |caller, r| {
            let alg = alg_name(r.alg)?;
            let ask = self.ask(r.receipt, &r.user_data)?;
            let rules = self.state.service.rules();
            let req = BytesRequest::unary(rules, Some(r.n), alg.as_deref(), r.prediction_resistance)?
                .into_bits()
                .with_receipt(ask.is_some());
            let (data, ones, signed) = self.bits(caller, &req, ask.as_ref(), Route::Bytes)?;
            let reply = pb::GetBytesResponse {
                data,
                n: req.byte_len(),
                alg: wire_alg(req.alg()),
                ones,
                receipt_json: signed.json,
                receipt_signature: signed.signature,
                next_ticket: String::new(),
            };
            Ok(Unary { reply, alg: req.alg(), n_bits: req.n_bits(), serial: signed.serial })
        })
        .await
    }

    type StreamBitsStream = ChunkStream;

    async fn stream_bits(&self, request: Request<pb::StreamBitsRequest>) -> Reply<Self::StreamBitsStream> {
        let start = Instant::now();
        let admission = admission(&request)?;
        let id =
            request.metadata().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        let r = request.into_inner();
        let service = &self.state.service;
        let chunk = match r.chunk_bytes as usize {
            0 => service.rules().stream_chunk_bytes,
            n => n,
        }
        .clamp(MIN_STREAM_CHUNK_BYTES, MAX_STREAM_CHUNK_BYTES);
        let prepared = alg_name(r.alg).and_then(|alg| {
            let req = BitsRequest::new(
                service.rules(),
                Some(r.n),
                alg.as_deref(),
                crate::service::Encoding::Binary,
                r.prediction_resistance,
            )?;
            service.stream(&admission.caller, req, chunk)
        });
        let chunks = match prepared {
            Ok(chunks) => chunks,
            Err(e) => {
                self.observe("StreamBits", "none", Some(&e), start);
                return Err(e.to_status());
            }
        };
        let (alg, n) = (chunks.request().alg(), chunks.request().n_bits());
        // The call's server span, entered while the call runs: the chunks are generated in it,
        // and the stream's end is recorded on it.
        let span = tracing::Span::current();
        let trace_id = crate::telemetry::trace::trace_id(&span).unwrap_or_default();
        let stream = ChunkStreamState {
            chunks,
            adapter: self.clone(),
            start,
            done: false,
            admission,
            id,
            trace_id,
            span,
        };
        let mut response: Response<ChunkStream> =
            Response::new(Box::pin(futures_util::stream::unfold(stream, ChunkStreamState::next)));
        let served = crate::pipeline::Served { alg, n_bits: n };
        let outcome =
            crate::pipeline::Report { served: Some(served), recorded_at_end: true, ..Default::default() };
        response.extensions_mut().insert(outcome);
        Ok(response)
    }

    async fn get_token(&self, request: Request<pb::GetTokenRequest>) -> Reply<pb::GetTokenResponse> {
        self.unary(request, "GetToken", |caller, r| {
            let ask = (r.receipt, r.user_data.as_str());
            let (secret, signed) = self.secret(caller, SecretKind::Token, (r.bytes, r.format, r.alg), ask)?;
            let Secret { mut value, format, alg, bytes, .. } = secret;
            // Moved into the message, which tonic encodes and drops unwiped (docs/security.md).
            let token = std::mem::take(&mut *value);
            let reply = pb::GetTokenResponse {
                token,
                format: wire_format(format),
                alg: wire_alg(alg),
                receipt_json: signed.json,
                receipt_signature: signed.signature,
            };
            Ok(Unary { reply, alg, n_bits: bytes * 8, serial: signed.serial })
        })
    }

    async fn get_nonce(&self, request: Request<pb::GetNonceRequest>) -> Reply<pb::GetNonceResponse> {
        self.unary(request, "GetNonce", |caller, r| {
            let ask = (r.receipt, r.user_data.as_str());
            let (secret, signed) = self.secret(caller, SecretKind::Nonce, (r.bytes, r.format, r.alg), ask)?;
            let Secret { mut value, format, alg, bytes, .. } = secret;
            let nonce = std::mem::take(&mut *value);
            let reply = pb::GetNonceResponse {
                nonce,
                format: wire_format(format),
                alg: wire_alg(alg),
                receipt_json: signed.json,
                receipt_signature: signed.signature,
            };
            Ok(Unary { reply, alg, n_bits: bytes * 8, serial: signed.serial })
        })
    }

    async fn get_uuids(&self, request: Request<pb::GetUuidsRequest>) -> Reply<pb::GetUuidsResponse> {
        if !request.get_ref().ticket.is_empty() {
            let body = |r: &pb::GetUuidsRequest| {
                let draw =
                    tickets::Draw::default().set("count", r.count).set("version", r.version).alg(r.alg)?;
                Ok(draw.receipt(r.receipt, &r.user_data, &r.ticket))
            };
            return self
                .ticketed("GetUuids", request, body, |d| {
                    Ok(pb::GetUuidsResponse {
                        uuids: d.texts()?,
                        version: u32::try_from(d.integer("version")?).map_err(|_| ApiError::Internal)?,
                        alg: d.alg()?.1,
                        receipt_json: std::mem::take(&mut d.receipt_json),
                        receipt_signature: std::mem::take(&mut d.signature),
                        next_ticket: std::mem::take(&mut d.next_ticket),
                    })
                })
                .await;
        }
        self.unary_kept(request, "GetUuids", |caller, r| {
            let alg = alg_name(r.alg)?;
            let ask = self.ask(r.receipt, &r.user_data)?;
            let rules = self.state.service.rules();
            let req = UuidRequest::new(rules, nonzero(r.count), nonzero(r.version), alg.as_deref())?
                .with_receipt(ask.is_some());
            if let Some(ask) = &ask {
                ask.check_size(req.count() as u64 * 16)?;
            }
            let out = self.state.service.uuids(caller, req)?;
            let signed = self.sign(caller, ask.as_ref(), || Random::uuids(&out))?;
            let n_bits = out.uuids.len() as u64 * 122;
            let uuids = out.uuids.iter().map(ToString::to_string).collect();
            let reply = pb::GetUuidsResponse {
                uuids,
                version: u32::from(out.version),
                alg: wire_alg(out.alg),
                receipt_json: signed.json,
                receipt_signature: signed.signature,
                next_ticket: String::new(),
            };
            Ok(Unary { reply, alg: out.alg, n_bits, serial: signed.serial })
        })
        .await
    }

    async fn get_ints(&self, request: Request<pb::GetIntsRequest>) -> Reply<pb::GetIntsResponse> {
        if !request.get_ref().ticket.is_empty() {
            let body = |r: &pb::GetIntsRequest| {
                integers_draw((r.min, r.max, r.count, r.alg), (r.receipt, &r.user_data, &r.ticket))
            };
            return self.ticketed("GetInts", request, body, |d| integers_reply!(GetIntsResponse, d)).await;
        }
        self.unary_kept(request, "GetInts", |caller, r| {
            let alg = alg_name(r.alg)?;
            let ask = self.ask(r.receipt, &r.user_data)?;
            let rules = self.state.service.rules();
            let req = IntRequest::new(rules, Some(r.min), Some(r.max), nonzero(r.count), alg.as_deref())?
                .with_receipt(ask.is_some());
            if let Some(ask) = &ask {
                ask.check_size(req.count() as u64 * 8)?;
            }
            let out = self.state.service.ints(caller, req)?;
            let signed = self.sign(caller, ask.as_ref(), || Random::ints(&out))?;
            let alg = out.alg;
            let reply = pb::GetIntsResponse {
                values: out.values,
                alg: wire_alg(alg),
                receipt_json: signed.json,
                receipt_signature: signed.signature,
                next_ticket: String::new(),
            };
            Ok(Unary { reply, alg, n_bits: 0, serial: signed.serial })
        })
        .await
    }

    async fn get_sequence(&self, request: Request<pb::GetSequenceRequest>) -> Reply<pb::GetSequenceResponse> {
        if !request.get_ref().ticket.is_empty() {
            let body = |r: &pb::GetSequenceRequest| {
                integers_draw((r.min, r.max, r.count, r.alg), (r.receipt, &r.user_data, &r.ticket))
            };
            return self
                .ticketed("GetSequence", request, body, |d| integers_reply!(GetSequenceResponse, d))
                .await;
        }
        self.unary_kept(request, "GetSequence", |caller, r| {
            let alg = alg_name(r.alg)?;
            let ask = self.ask(r.receipt, &r.user_data)?;
            let rules = self.state.service.rules();
            let req =
                SequenceRequest::new(rules, Some(r.min), Some(r.max), nonzero(r.count), alg.as_deref())?
                    .with_receipt(ask.is_some());
            if let Some(ask) = &ask {
                ask.check_size(req.count() as u64 * 8)?;
            }
            let out = sequence::draw(&self.state.service, caller, &req)?;
            let signed = self.sign(caller, ask.as_ref(), || out.receipt())?;
            let reply = pb::GetSequenceResponse {
                values: out.values,
                alg: wire_alg(out.alg),
                receipt_json: signed.json,
                receipt_signature: signed.signature,
                next_ticket: String::new(),
            };
            Ok(Unary { reply, alg: out.alg, n_bits: 0, serial: signed.serial })
        })
        .await
    }

    async fn create_tickets(
        &self,
        request: Request<pb::CreateTicketsRequest>,
    ) -> Reply<pb::CreateTicketsResponse> {
        self.observed("CreateTickets", tickets::create(&self.state, request)).await
    }

    async fn list_tickets(&self, request: Request<pb::ListTicketsRequest>) -> Reply<pb::ListTicketsResponse> {
        self.observed("ListTickets", tickets::list(&self.state, request)).await
    }

    async fn get_ticket(&self, request: Request<pb::GetTicketRequest>) -> Reply<pb::GetTicketResponse> {
        self.observed("GetTicket", tickets::get(&self.state, request)).await
    }

    async fn reveal_ticket(
        &self,
        request: Request<pb::RevealTicketRequest>,
    ) -> Reply<pb::RevealTicketResponse> {
        self.observed("RevealTicket", tickets::reveal(&self.state, request)).await
    }

    async fn get_result(&self, request: Request<pb::GetResultRequest>) -> Reply<pb::GetResultResponse> {
        self.observed("GetResult", tickets::result(&self.state, request)).await
    }

    async fn get_usage(&self, request: Request<pb::GetUsageRequest>) -> Reply<pb::GetUsageResponse> {
        let start = Instant::now();
        let admission = admission(&request)?;
        self.observe("GetUsage", "none", None, start);
        Ok(Response::new(usage_reply(admission.caller.usage())))
    }
}

/// `GET /usage` as a message.
fn usage_reply(u: crate::callers::Usage) -> pb::GetUsageResponse {
    let bucket = |b: Option<crate::callers::BucketUsage>| {
        b.map(|b| pb::QuotaBucket {
            per_second: b.per_second,
            burst: b.burst,
            remaining: b.remaining,
            full_in_seconds: b.full_in_seconds,
        })
    };
    pb::GetUsageResponse {
        caller: u.caller,
        allowed_algorithms: u.policy.algs.into_iter().map(wire_alg).collect(),
        allowed_routes: u.policy.routes.iter().map(|r| r.name().to_string()).collect(),
        max_bits: u.policy.max_bits,
        prediction_resistance_allowed: u.policy.pr,
        requests: bucket(u.quota.requests),
        bytes: bucket(u.quota.bytes),
        max_in_flight: u.quota.max_in_flight.unwrap_or(0),
        in_flight: u.quota.in_flight,
        quota_scope: u.quota.scope.to_string(),
        receipts_allowed: u.policy.receipts,
        requests_total: u.counters.requests,
        output_bytes_total: u.counters.output_bytes,
        denied: u.counters.denied.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
    }
}

/// StreamBits state: one chunk per poll; dropped (generation stops) when the client cancels.
/// Its end (complete, failed or cancelled) is one latency observation, one access line and
/// (with `log.audit`) one audit line, with the stream's real status.
struct ChunkStreamState {
    chunks: Chunks,
    adapter: RandomnessAdapter,
    start: Instant,
    done: bool,
    /// The caller, in flight until the stream ends.
    admission: Admission,
    /// The request id, for the lines.
    id: String,
    /// The OpenTelemetry trace id, for the lines (empty with traces off).
    trace_id: String,
    /// The call's server span (disabled with traces off), open until the stream ends.
    span: tracing::Span,
}

impl ChunkStreamState {
    async fn next(mut self) -> Option<(Result<pb::StreamBitsResponse, Status>, Self)> {
        if self.done {
            return None;
        }
        let alg = self.chunks.request().alg();
        let span = self.span.clone();
        match span.in_scope(|| self.chunks.next_chunk()) {
            Ok(Some(chunk)) => {
                let reply = pb::StreamBitsResponse {
                    data: chunk.encoded.into(),
                    offset_bits: chunk.offset_bits,
                    n_bits: chunk.n_bits,
                    alg: wire_alg(alg),
                    ones: chunk.ones,
                };
                Some((Ok(reply), self))
            }
            Ok(None) => {
                self.end(tonic::Code::Ok, "", self.chunks.request().n_bits());
                self.adapter.observe("StreamBits", alg.name(), None, self.start);
                None
            }
            Err(e) => {
                self.end(e.grpc_code(), e.code(), 0);
                self.adapter.observe("StreamBits", alg.name(), Some(&e), self.start);
                Some((Err(e.to_status()), self))
            }
        }
    }
}

impl ChunkStreamState {
    /// The stream's lines, once: `n` bits served in full (0 unless it completed).
    fn end(&mut self, code: tonic::Code, error: &'static str, n: u64) {
        self.done = true;
        let (caller, alg) = (self.admission.caller.name(), self.chunks.request().alg().name());
        crate::telemetry::trace::record_end(&self.span, caller, alg, n, code as u16, error, true);
        let access = crate::telemetry::Access {
            request_id: &self.id,
            trace_id: &self.trace_id,
            caller: self.admission.caller.name(),
            method: "POST",
            route: "StreamBits",
            alg: self.chunks.request().alg().name(),
            n,
            status: code as u16,
            code: error,
            latency_us: self.start.elapsed().as_micros() as u64,
        };
        access.log();
        if self.adapter.state.settings.log.audit {
            access.audit("grpc").log();
        }
    }
}

/// A stream dropped before its end (the client cancelled or went away) is still one latency
/// observation and its lines, as `CANCELLED`, with no bits counted as served in full.
impl Drop for ChunkStreamState {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        self.end(tonic::Code::Cancelled, "cancelled", 0);
        let alg = self.chunks.request().alg().name();
        let code = crate::error::grpc_code_name(tonic::Code::Cancelled);
        self.adapter
            .state
            .metrics
            .grpc_duration
            .with_label_values(&["StreamBits", alg, code])
            .observe(self.start.elapsed().as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_algorithm_has_its_wire_value_and_back() {
        for alg in Algorithm::ALL {
            let wire = wire_alg(alg);
            assert_ne!(wire, pb::Algorithm::Unspecified as i32, "{alg}");
            assert_eq!(alg_name(wire).unwrap().as_deref(), Some(alg.name()));
        }
        assert_eq!(alg_name(0).unwrap(), None);
        assert_eq!(alg_name(99).unwrap_err().code(), "unknown_alg");
        // And no wire value without an algorithm.
        for value in 1..=16 {
            if let Ok(Some(name)) = alg_name(value) {
                assert!(name.parse::<Algorithm>().is_ok(), "{name}");
            }
        }
    }

    #[test]
    fn every_secret_format_has_its_wire_value_and_back() {
        for f in SecretFormat::ALL {
            assert_eq!(secret_format(wire_format(f)).unwrap(), Some(f));
        }
        assert_eq!(secret_format(0).unwrap(), None);
        assert_eq!(secret_format(42).unwrap_err().code(), "unknown_format");
    }
}
