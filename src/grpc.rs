//! The gRPC API (`drbgd.v1.RandomnessService`), with the standard health service (following
//! readiness) and server reflection, served on the API port beside HTTP (routed by path;
//! HTTP/2 is negotiated per connection). A thin adapter: each method turns its message into
//! a typed request of [`crate::service`], calls the service and builds the reply; limits,
//! defaults and errors are the HTTP ones.

use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::Stream;
use tonic::{Request, Response, Status};
use tonic_health::ServingStatus;

use crate::callers::headers::{RATELIMIT, RATELIMIT_POLICY, current_field};
use crate::callers::{Admission, Caller, ClientIdentity, Denied, Route};
use crate::drbg::Algorithm;
use crate::error::ApiError;
use crate::service::{
    BitsRequest, BytesRequest, Chunks, IntRequest, NonceRequest, Secret, SecretFormat, TokenRequest,
    UuidRequest,
};
use crate::state::AppState;

/// Generated protobuf types and client/server code.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    tonic::include_proto!("drbgd.v1");
    /// The encoded descriptor set, for reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/drbgd_descriptor.bin"));
}

use pb::randomness_service_server::{RandomnessService as Randomness, RandomnessServiceServer};

pub use crate::service::request::MAX_UNARY_BITS;
/// Largest StreamBits chunk: 1 MiB of data, a quarter of the default receive limit.
pub const MAX_STREAM_CHUNK_BYTES: usize = 1 << 20;
/// Smallest StreamBits chunk: every chunk costs a generator call, a health-test sample and a
/// message, so tiny chunks would multiply the work per bit for nothing.
pub const MIN_STREAM_CHUNK_BYTES: usize = 4096;
/// Largest message the server encodes: the unary limit plus framing.
const MAX_MESSAGE_BYTES: usize = (MAX_UNARY_BITS as usize / 8) + 64 * 1024;
/// The fully qualified service name.
pub const SERVICE_NAME: &str = "drbgd.v1.RandomnessService";
/// How often the health service re-reads readiness.
const HEALTH_POLL: Duration = Duration::from_millis(250);

/// The gRPC routes (Randomness, health, reflection), ready to merge into the API router. Spawns
/// the task that keeps health in step with readiness. Randomness admits its caller per method
/// (the method's route is known there), with the same rules as HTTP.
///
/// # Panics
/// If the embedded descriptor sets are invalid (a build error, caught by the API tests).
pub fn router(state: AppState) -> axum::Router {
    let (reporter, health) = tonic_health::server::health_reporter();
    tokio::spawn(follow_readiness(state.clone(), reporter));
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()
        .expect("valid descriptors");
    let reflection_alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()
        .expect("valid descriptors");
    let randomness = RandomnessServiceServer::new(RandomnessAdapter { state })
        .max_encoding_message_size(MAX_MESSAGE_BYTES);
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

type Reply<T> = Result<Response<T>, Status>;

impl RandomnessAdapter {
    /// Names the caller of `request` and admits it to `route` (`None`, for `GetUsage`: no route
    /// permission and no request token needed, but the caller's in-flight place is taken as
    /// for any call), or answers the refusal (counted, observed and audited here).
    #[allow(clippy::result_large_err)] // tonic's Status
    fn admit<T>(
        &self,
        request: &Request<T>,
        method: &'static str,
        route: Option<Route>,
    ) -> Result<Admission, Status> {
        let start = Instant::now();
        let bearer = request.metadata().get("authorization").map(|v| v.as_bytes());
        let client = request.extensions().get::<Arc<ClientIdentity>>().map(|c| &**c);
        match self.state.callers.admit(bearer, client, route) {
            Ok(admission) => Ok(admission),
            Err(Denied { caller, error, at }) => {
                let name = caller.as_deref().map_or(crate::callers::registry::UNKNOWN, Caller::name);
                self.finish_with_alg(method, name, request_id(request), "none", 0, Some(&error), start);
                let mut status = error.to_status();
                if let Some(caller) = &caller {
                    rate_limit_metadata(status.metadata_mut(), caller, at);
                }
                Err(status)
            }
        }
    }

    /// Runs a unary call for an admitted caller: latency by method, algorithm and code, the
    /// audit line, the rate-limit metadata.
    fn unary<Q, T>(
        &self,
        request: Request<Q>,
        method: &'static str,
        route: Route,
        call: impl FnOnce(&Arc<Caller>, Q) -> Result<(T, Algorithm, u64), ApiError>,
    ) -> Reply<T> {
        let start = Instant::now();
        let admission = self.admit(&request, method, Some(route))?;
        let id = request_id(&request).to_string();
        let caller = &admission.caller;
        let result = call(caller, request.into_inner());
        let (alg, n) = result.as_ref().map_or(("none", 0), |(_, alg, n)| (alg.name(), *n));
        self.finish_with_alg(method, caller.name(), &id, alg, n, result.as_ref().err(), start);
        let mut reply = match result {
            Ok((t, _, _)) => Ok(Response::new(t)),
            Err(e) => Err(e.to_status()),
        };
        match &mut reply {
            Ok(r) => rate_limit_metadata(r.metadata_mut(), caller, admission.at),
            Err(s) => rate_limit_metadata(s.metadata_mut(), caller, admission.at),
        }
        reply
    }

    /// Records a finished call: latency, errors by code, the audit line.
    #[allow(clippy::too_many_arguments)]
    fn finish_with_alg(
        &self,
        method: &'static str,
        caller: &str,
        request_id: &str,
        alg: &'static str,
        n: u64,
        error: Option<&ApiError>,
        start: Instant,
    ) {
        let code = error.map_or(tonic::Code::Ok, ApiError::grpc_code);
        if let Some(e) = error {
            self.state.metrics.errors.with_label_values(&[e.code()]).inc();
        }
        let line = crate::telemetry::Audit {
            transport: "grpc",
            request_id,
            caller,
            route: method,
            alg,
            n,
            status: code as u16,
            code: error.map_or("", ApiError::code),
        };
        self.record(&line, code, start);
    }

    /// One latency observation (by method, algorithm and code) and, with `log.audit`, the
    /// audit line of a finished call.
    fn record(&self, line: &crate::telemetry::Audit<'_>, code: tonic::Code, start: Instant) {
        self.state
            .metrics
            .grpc_duration
            .with_label_values(&[line.route, line.alg, code_label(code)])
            .observe(start.elapsed().as_secs_f64());
        if self.state.settings.log.audit {
            line.log();
        }
    }

    /// One unary bits reply; the output is moved, not copied, into the message.
    fn bits(&self, caller: &Arc<Caller>, req: &BitsRequest) -> Result<(Vec<u8>, u64), ApiError> {
        let mut generated = self.state.service.whole(caller, req)?;
        Ok((std::mem::take(&mut generated.data), generated.ones))
    }
}

/// The wire enum of an algorithm (`ALGORITHM_AES256CTR` for `aes256ctr`): derived from the
/// canonical names, so no second list of algorithms exists here.
fn wire_alg(alg: Algorithm) -> i32 {
    // Worked out once from the names, not per reply.
    static WIRE: std::sync::OnceLock<[i32; Algorithm::COUNT]> = std::sync::OnceLock::new();
    WIRE.get_or_init(|| {
        Algorithm::ALL.map(|a| {
            pb::Algorithm::from_str_name(&format!("ALGORITHM_{}", a.name().to_ascii_uppercase()))
                .map_or(pb::Algorithm::Unspecified as i32, |w| w as i32)
        })
    })[alg.index()]
}

/// The algorithm name a wire enum stands for; `None` for unspecified (the default).
///
/// # Errors
/// `unknown_alg` for a number this server does not know.
fn alg_name(value: i32) -> Result<Option<String>, ApiError> {
    match pb::Algorithm::try_from(value) {
        Ok(pb::Algorithm::Unspecified) => Ok(None),
        Ok(a) => Ok(a.as_str_name().strip_prefix("ALGORITHM_").map(str::to_ascii_lowercase)),
        Err(_) => Err(ApiError::invalid(
            "unknown_alg",
            "alg",
            format!("alg must be one of {}", crate::drbg::names()),
        )),
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

/// proto3 numbers default to 0: 0 means "the default".
fn given(n: u32) -> Option<u64> {
    (n != 0).then_some(u64::from(n))
}

fn code_label(code: tonic::Code) -> &'static str {
    match code {
        tonic::Code::Ok => "OK",
        tonic::Code::InvalidArgument => "INVALID_ARGUMENT",
        tonic::Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        tonic::Code::Unavailable => "UNAVAILABLE",
        tonic::Code::Unauthenticated => "UNAUTHENTICATED",
        tonic::Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        tonic::Code::Cancelled => "CANCELLED",
        tonic::Code::Internal => "INTERNAL",
        tonic::Code::PermissionDenied => "PERMISSION_DENIED",
        tonic::Code::NotFound => "NOT_FOUND",
        tonic::Code::Unimplemented => "UNIMPLEMENTED",
        tonic::Code::FailedPrecondition => "FAILED_PRECONDITION",
        tonic::Code::AlreadyExists => "ALREADY_EXISTS",
        tonic::Code::Aborted => "ABORTED",
        tonic::Code::OutOfRange => "OUT_OF_RANGE",
        tonic::Code::DataLoss => "DATA_LOSS",
        tonic::Code::Unknown => "UNKNOWN",
    }
}

type ChunkStream = Pin<Box<dyn Stream<Item = Result<pb::StreamBitsResponse, Status>> + Send>>;

#[tonic::async_trait]
impl Randomness for RandomnessAdapter {
    async fn get_bits(&self, request: Request<pb::GetBitsRequest>) -> Reply<pb::GetBitsResponse> {
        self.unary(request, "GetBits", Route::Bits, |caller, r| {
            let alg = alg_name(r.alg)?;
            let rules = self.state.service.rules();
            let req = BitsRequest::unary(rules, Some(r.n), alg.as_deref(), r.prediction_resistance)?;
            let (data, ones) = self.bits(caller, &req)?;
            let reply = pb::GetBitsResponse { data, n: req.n_bits(), alg: wire_alg(req.alg()), ones };
            Ok((reply, req.alg(), req.n_bits()))
        })
    }

    async fn get_bytes(&self, request: Request<pb::GetBytesRequest>) -> Reply<pb::GetBytesResponse> {
        self.unary(request, "GetBytes", Route::Bytes, |caller, r| {
            let alg = alg_name(r.alg)?;
            let rules = self.state.service.rules();
            let req =
                BytesRequest::unary(rules, Some(r.n), alg.as_deref(), r.prediction_resistance)?.into_bits();
            let (data, ones) = self.bits(caller, &req)?;
            let reply = pb::GetBytesResponse { data, n: req.byte_len(), alg: wire_alg(req.alg()), ones };
            Ok((reply, req.alg(), req.n_bits()))
        })
    }

    type StreamBitsStream = ChunkStream;

    async fn stream_bits(&self, request: Request<pb::StreamBitsRequest>) -> Reply<Self::StreamBitsStream> {
        let start = Instant::now();
        let admission = self.admit(&request, "StreamBits", Some(Route::Bits))?;
        let id = request_id(&request).to_string();
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
        let caller = admission.caller.clone();
        let chunks = match prepared {
            Ok(chunks) => chunks,
            Err(e) => {
                self.finish_with_alg("StreamBits", caller.name(), &id, "none", 0, Some(&e), start);
                let mut status = e.to_status();
                rate_limit_metadata(status.metadata_mut(), &caller, admission.at);
                return Err(status);
            }
        };
        let at = admission.at;
        let stream = ChunkStreamState { chunks, adapter: self.clone(), start, done: false, admission, id };
        let mut response: Response<ChunkStream> =
            Response::new(Box::pin(futures_util::stream::unfold(stream, ChunkStreamState::next)));
        rate_limit_metadata(response.metadata_mut(), &caller, at);
        Ok(response)
    }

    async fn get_token(&self, request: Request<pb::GetTokenRequest>) -> Reply<pb::GetTokenResponse> {
        self.unary(request, "GetToken", Route::Token, |caller, r| {
            let alg = alg_name(r.alg)?;
            let rules = self.state.service.rules();
            let req = TokenRequest::new(rules, given(r.bytes), secret_format(r.format)?, alg.as_deref())?;
            let Secret { value, format, alg, bytes } = self.state.service.token(caller, req)?;
            let reply =
                pb::GetTokenResponse { token: value, format: wire_format(format), alg: wire_alg(alg) };
            Ok((reply, alg, bytes * 8))
        })
    }

    async fn get_nonce(&self, request: Request<pb::GetNonceRequest>) -> Reply<pb::GetNonceResponse> {
        self.unary(request, "GetNonce", Route::Nonce, |caller, r| {
            let alg = alg_name(r.alg)?;
            let rules = self.state.service.rules();
            let req = NonceRequest::new(rules, given(r.bytes), secret_format(r.format)?, alg.as_deref())?;
            let Secret { value, format, alg, bytes } = self.state.service.nonce(caller, req)?;
            let reply =
                pb::GetNonceResponse { nonce: value, format: wire_format(format), alg: wire_alg(alg) };
            Ok((reply, alg, bytes * 8))
        })
    }

    async fn get_uuids(&self, request: Request<pb::GetUuidsRequest>) -> Reply<pb::GetUuidsResponse> {
        self.unary(request, "GetUuids", Route::Uuid, |caller, r| {
            let alg = alg_name(r.alg)?;
            let rules = self.state.service.rules();
            let req = UuidRequest::new(rules, given(r.count), given(r.version), alg.as_deref())?;
            let out = self.state.service.uuids(caller, req)?;
            let n = out.uuids.len() as u64 * 122;
            let uuids = out.uuids.iter().map(ToString::to_string).collect();
            let reply =
                pb::GetUuidsResponse { uuids, version: u32::from(out.version), alg: wire_alg(out.alg) };
            Ok((reply, out.alg, n))
        })
    }

    async fn get_ints(&self, request: Request<pb::GetIntsRequest>) -> Reply<pb::GetIntsResponse> {
        self.unary(request, "GetInts", Route::Int, |caller, r| {
            let alg = alg_name(r.alg)?;
            let rules = self.state.service.rules();
            let req = IntRequest::new(rules, Some(r.min), Some(r.max), given(r.count), alg.as_deref())?;
            let out = self.state.service.ints(caller, req)?;
            Ok((pb::GetIntsResponse { values: out.values, alg: wire_alg(out.alg) }, out.alg, 0))
        })
    }

    async fn get_usage(&self, request: Request<pb::GetUsageRequest>) -> Reply<pb::GetUsageResponse> {
        let start = Instant::now();
        let admission = self.admit(&request, "GetUsage", None)?;
        let caller = &admission.caller;
        self.finish_with_alg("GetUsage", caller.name(), request_id(&request), "none", 0, None, start);
        let mut response = Response::new(usage_reply(caller.usage()));
        rate_limit_metadata(response.metadata_mut(), caller, admission.at);
        Ok(response)
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
        allowed_routes: u.policy.routes.iter().map(|r| r.path().to_string()).collect(),
        max_bits: u.policy.max_bits,
        prediction_resistance_allowed: u.policy.pr,
        requests: bucket(u.quota.requests),
        bytes: bucket(u.quota.bytes),
        max_in_flight: u.quota.max_in_flight.unwrap_or(0),
        in_flight: u.quota.in_flight,
        requests_total: u.counters.requests,
        output_bytes_total: u.counters.output_bytes,
        denied: u.counters.denied.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
    }
}

/// The request id the HTTP stack set (`x-request-id`), or empty.
fn request_id<T>(request: &Request<T>) -> &str {
    request.metadata().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or("")
}

/// `ratelimit-policy` and `ratelimit` metadata (as of `at`, the admission decision), for a
/// caller with a rate quota.
fn rate_limit_metadata(metadata: &mut tonic::metadata::MetadataMap, caller: &Caller, at: Instant) {
    let Some(policy) = &caller.policy_field else { return };
    let ascii = |v: &axum::http::HeaderValue| tonic::metadata::MetadataValue::try_from(v.as_bytes()).ok();
    if let Some(v) = ascii(policy) {
        metadata.insert(RATELIMIT_POLICY, v);
    }
    if let Some(v) = current_field(caller, at).as_ref().and_then(ascii) {
        metadata.insert(RATELIMIT, v);
    }
}

/// StreamBits state: one chunk per poll; dropped (generation stops) when the client cancels.
struct ChunkStreamState {
    chunks: Chunks,
    adapter: RandomnessAdapter,
    start: Instant,
    done: bool,
    /// The caller, in flight until the stream ends.
    admission: Admission,
    /// The request id, for the audit line.
    id: String,
}

impl ChunkStreamState {
    async fn next(mut self) -> Option<(Result<pb::StreamBitsResponse, Status>, Self)> {
        if self.done {
            return None;
        }
        let alg = self.chunks.request().alg();
        match self.chunks.next_chunk() {
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
                self.done = true;
                let (caller, n) = (self.admission.caller.name(), self.chunks.request().n_bits());
                self.adapter.finish_with_alg("StreamBits", caller, &self.id, alg.name(), n, None, self.start);
                None
            }
            Err(e) => {
                self.done = true;
                let caller = self.admission.caller.name();
                self.adapter.finish_with_alg(
                    "StreamBits",
                    caller,
                    &self.id,
                    alg.name(),
                    0,
                    Some(&e),
                    self.start,
                );
                Some((Err(e.to_status()), self))
            }
        }
    }
}

/// A stream dropped before its end (the client cancelled or went away) is still one latency
/// observation and one audit line, as `CANCELLED`, with no bits counted as served in full.
impl Drop for ChunkStreamState {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let line = crate::telemetry::Audit {
            transport: "grpc",
            request_id: &self.id,
            caller: self.admission.caller.name(),
            route: "StreamBits",
            alg: self.chunks.request().alg().name(),
            n: 0,
            status: tonic::Code::Cancelled as u16,
            code: "cancelled",
        };
        self.adapter.record(&line, tonic::Code::Cancelled, self.start);
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
