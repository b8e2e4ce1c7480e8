//! The gRPC API (`drbgd.v1.RandomnessService`), with the standard health service (following
//! readiness) and server reflection, served on the API port beside HTTP (routed by path;
//! HTTP/2 is negotiated per connection). A thin adapter: each method turns its message into
//! a typed request of [`crate::service`], calls the service and builds the reply; limits,
//! defaults and errors are the HTTP ones.

use std::pin::Pin;
use std::time::{Duration, Instant};

use futures_util::Stream;
use tonic::{Request, Response, Status};
use tonic_health::ServingStatus;

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

/// The gRPC routes (Randomness behind API-key auth, health, reflection), ready to merge into
/// the API router. Spawns the task that keeps health in step with readiness.
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
    let auth_state = state.clone();
    let randomness = RandomnessServiceServer::new(RandomnessAdapter { state })
        .max_encoding_message_size(MAX_MESSAGE_BYTES);
    let randomness = tonic::service::interceptor::InterceptedService::new(randomness, move |req| {
        authorize(&auth_state, req)
    });
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

#[allow(clippy::result_large_err)] // tonic's interceptor signature
fn authorize(state: &AppState, req: Request<()>) -> Result<Request<()>, Status> {
    match &state.api_keys {
        Some(keys) if !keys.accepts_header(req.metadata().get("authorization").map(|v| v.as_bytes())) => {
            Err(ApiError::Unauthorized.to_status())
        }
        _ => Ok(req),
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
    /// Runs a unary call, recording latency by method, algorithm and code.
    fn unary<T>(
        &self,
        method: &'static str,
        call: impl FnOnce() -> Result<(T, Algorithm), ApiError>,
    ) -> Reply<T> {
        let start = Instant::now();
        let result = call();
        let (alg, code) = match &result {
            Ok((_, alg)) => (alg.name(), tonic::Code::Ok),
            Err(e) => {
                self.state.metrics.errors.with_label_values(&[e.code()]).inc();
                ("none", e.grpc_code())
            }
        };
        self.observe(method, alg, code, start);
        result.map(|(t, _)| Response::new(t)).map_err(|e| e.to_status())
    }

    fn observe(&self, method: &'static str, alg: &'static str, code: tonic::Code, start: Instant) {
        self.state
            .metrics
            .grpc_duration
            .with_label_values(&[method, alg, code_label(code)])
            .observe(start.elapsed().as_secs_f64());
    }

    /// One unary bits reply; the output is moved, not copied, into the message.
    fn bits(&self, req: &BitsRequest) -> Result<(Vec<u8>, u64), ApiError> {
        let mut generated = self.state.service.whole(req)?;
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
        _ => "UNKNOWN",
    }
}

type ChunkStream = Pin<Box<dyn Stream<Item = Result<pb::StreamBitsResponse, Status>> + Send>>;

#[tonic::async_trait]
impl Randomness for RandomnessAdapter {
    async fn get_bits(&self, request: Request<pb::GetBitsRequest>) -> Reply<pb::GetBitsResponse> {
        let r = request.into_inner();
        self.unary("GetBits", || {
            let alg = alg_name(r.alg)?;
            let req = BitsRequest::unary(
                self.state.service.rules(),
                Some(r.n),
                alg.as_deref(),
                r.prediction_resistance,
            )?;
            let (data, ones) = self.bits(&req)?;
            Ok((pb::GetBitsResponse { data, n: req.n_bits(), alg: wire_alg(req.alg()), ones }, req.alg()))
        })
    }

    async fn get_bytes(&self, request: Request<pb::GetBytesRequest>) -> Reply<pb::GetBytesResponse> {
        let r = request.into_inner();
        self.unary("GetBytes", || {
            let alg = alg_name(r.alg)?;
            let rules = self.state.service.rules();
            let req =
                BytesRequest::unary(rules, Some(r.n), alg.as_deref(), r.prediction_resistance)?.into_bits();
            let (data, ones) = self.bits(&req)?;
            Ok((pb::GetBytesResponse { data, n: req.byte_len(), alg: wire_alg(req.alg()), ones }, req.alg()))
        })
    }

    type StreamBitsStream = ChunkStream;

    async fn stream_bits(&self, request: Request<pb::StreamBitsRequest>) -> Reply<Self::StreamBitsStream> {
        let r = request.into_inner();
        let start = Instant::now();
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
            service.stream(req, chunk)
        });
        let chunks = match prepared {
            Ok(chunks) => chunks,
            Err(e) => {
                self.state.metrics.errors.with_label_values(&[e.code()]).inc();
                self.observe("StreamBits", "none", e.grpc_code(), start);
                return Err(e.to_status());
            }
        };
        let stream = ChunkStreamState { chunks, adapter: self.clone(), start, done: false };
        Ok(Response::new(Box::pin(futures_util::stream::unfold(stream, ChunkStreamState::next))))
    }

    async fn get_token(&self, request: Request<pb::GetTokenRequest>) -> Reply<pb::GetTokenResponse> {
        let r = request.into_inner();
        self.unary("GetToken", || {
            let alg = alg_name(r.alg)?;
            let req = TokenRequest::new(
                self.state.service.rules(),
                given(r.bytes),
                secret_format(r.format)?,
                alg.as_deref(),
            )?;
            let Secret { value, format, alg, .. } = self.state.service.token(req)?;
            Ok((pb::GetTokenResponse { token: value, format: wire_format(format), alg: wire_alg(alg) }, alg))
        })
    }

    async fn get_nonce(&self, request: Request<pb::GetNonceRequest>) -> Reply<pb::GetNonceResponse> {
        let r = request.into_inner();
        self.unary("GetNonce", || {
            let alg = alg_name(r.alg)?;
            let req = NonceRequest::new(
                self.state.service.rules(),
                given(r.bytes),
                secret_format(r.format)?,
                alg.as_deref(),
            )?;
            let Secret { value, format, alg, .. } = self.state.service.nonce(req)?;
            Ok((pb::GetNonceResponse { nonce: value, format: wire_format(format), alg: wire_alg(alg) }, alg))
        })
    }

    async fn get_uuids(&self, request: Request<pb::GetUuidsRequest>) -> Reply<pb::GetUuidsResponse> {
        let r = request.into_inner();
        self.unary("GetUuids", || {
            let alg = alg_name(r.alg)?;
            let req = UuidRequest::new(
                self.state.service.rules(),
                given(r.count),
                given(r.version),
                alg.as_deref(),
            )?;
            let out = self.state.service.uuids(req)?;
            let uuids = out.uuids.iter().map(ToString::to_string).collect();
            Ok((
                pb::GetUuidsResponse { uuids, version: u32::from(out.version), alg: wire_alg(out.alg) },
                out.alg,
            ))
        })
    }

    async fn get_ints(&self, request: Request<pb::GetIntsRequest>) -> Reply<pb::GetIntsResponse> {
        let r = request.into_inner();
        self.unary("GetInts", || {
            let alg = alg_name(r.alg)?;
            let req = IntRequest::new(
                self.state.service.rules(),
                Some(r.min),
                Some(r.max),
                given(r.count),
                alg.as_deref(),
            )?;
            let out = self.state.service.ints(req)?;
            Ok((pb::GetIntsResponse { values: out.values, alg: wire_alg(out.alg) }, out.alg))
        })
    }
}

/// StreamBits state: one chunk per poll; dropped (generation stops) when the client cancels.
struct ChunkStreamState {
    chunks: Chunks,
    adapter: RandomnessAdapter,
    start: Instant,
    done: bool,
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
                self.adapter.observe("StreamBits", alg.name(), tonic::Code::Ok, self.start);
                None
            }
            Err(e) => {
                self.done = true;
                self.adapter.state.metrics.errors.with_label_values(&[e.code()]).inc();
                self.adapter.observe("StreamBits", alg.name(), e.grpc_code(), self.start);
                Some((Err(e.to_status()), self))
            }
        }
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
