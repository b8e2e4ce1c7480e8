//! The gRPC API (`drbgd.v1.Randomness`), with the standard health service (following
//! readiness) and server reflection, served on the API port beside HTTP (routed by path;
//! HTTP/2 is negotiated per connection). Validation, limits and errors are the HTTP ones,
//! through [`crate::service`] and [`crate::error::ApiError`].

use std::pin::Pin;
use std::time::{Duration, Instant};

use futures_util::Stream;
use tonic::{Request, Response, Status};
use tonic_health::ServingStatus;

use crate::drbg::{Algorithm, bits};
use crate::error::ApiError;
use crate::service::{self, BitsRequest, ChunkedOutput, Encoding};
use crate::state::AppState;

/// Generated protobuf types and client/server code.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    tonic::include_proto!("drbgd.v1");
    /// The encoded descriptor set, for reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/drbgd_descriptor.bin"));
}

use pb::randomness_server::{Randomness, RandomnessServer};

/// Most bits in one unary GetBits (2 MiB of data; GetBytes: 2 MiB): half of the 4 MiB that
/// grpc-go, grpc-java, grpcurl, k6 and tonic accept by default, so a default client always
/// takes the largest reply. StreamBits serves up to `limits.max_bits`.
pub const MAX_UNARY_BITS: u64 = 1 << 24;
/// Largest StreamBits chunk: 1 MiB of data, a quarter of the default receive limit.
pub const MAX_STREAM_CHUNK_BYTES: usize = 1 << 20;
/// Smallest StreamBits chunk: every chunk costs a generator call, a health-test sample and a
/// message, so tiny chunks would multiply the work per bit for nothing.
pub const MIN_STREAM_CHUNK_BYTES: usize = 4096;
/// Largest message the server encodes: the unary limit plus framing.
const MAX_MESSAGE_BYTES: usize = (MAX_UNARY_BITS as usize / 8) + 64 * 1024;
/// The fully qualified service name.
pub const SERVICE_NAME: &str = "drbgd.v1.Randomness";
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
    let randomness =
        RandomnessServer::new(RandomnessService { state }).max_encoding_message_size(MAX_MESSAGE_BYTES);
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
        let status = if state.is_ready() { ServingStatus::Serving } else { ServingStatus::NotServing };
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

/// The `Randomness` service.
#[derive(Debug, Clone)]
pub struct RandomnessService {
    state: AppState,
}

type Reply<T> = Result<Response<T>, Status>;

impl RandomnessService {
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

    fn bits(&self, n: u64, max: u64, alg: &str, pr: bool) -> Result<(pb::BitsResponse, Algorithm), ApiError> {
        let n = service::check_n("n", n, max)?;
        let alg = service::resolve_alg(&self.state, named(alg))?;
        let req = BitsRequest { n_bits: n, alg, prediction_resistance: pr };
        let mut generated = service::generate(&self.state, &req)?;
        // Moved, not copied: the reply is the only place the output lives from here on.
        let data = std::mem::take(&mut generated.data);
        let reply = pb::BitsResponse { data, n, alg: alg.name().into(), ones: generated.ones };
        Ok((reply, alg))
    }
}

/// proto3 strings default to empty: empty means "the default algorithm".
fn named(alg: &str) -> Option<&str> {
    (!alg.is_empty()).then_some(alg)
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

/// proto3 numbers default to 0: 0 means the default count, 1.
fn count(state: &AppState, requested: u32) -> Result<usize, ApiError> {
    service::check_count(u64::from(requested.max(1)), state.settings.limits.max_count)
}

type ChunkStream = Pin<Box<dyn Stream<Item = Result<pb::BitsChunk, Status>> + Send>>;

#[tonic::async_trait]
impl Randomness for RandomnessService {
    async fn get_bits(&self, request: Request<pb::GetBitsRequest>) -> Reply<pb::BitsResponse> {
        let r = request.into_inner();
        let max = MAX_UNARY_BITS.min(self.state.settings.limits.max_bits);
        self.unary("GetBits", || self.bits(r.n, max, &r.alg, r.prediction_resistance))
    }

    async fn get_bytes(&self, request: Request<pb::GetBytesRequest>) -> Reply<pb::BitsResponse> {
        let r = request.into_inner();
        let max = MAX_UNARY_BITS.min(self.state.settings.limits.max_bits) / 8;
        self.unary("GetBytes", || {
            let n = service::check_n("n", r.n, max)?;
            self.bits(n * 8, n * 8, &r.alg, r.prediction_resistance)
        })
    }

    type StreamBitsStream = ChunkStream;

    async fn stream_bits(&self, request: Request<pb::StreamBitsRequest>) -> Reply<Self::StreamBitsStream> {
        let r = request.into_inner();
        let start = Instant::now();
        let chunk = match r.chunk_bytes as usize {
            0 => self.state.settings.limits.stream_chunk_bytes,
            n => n,
        }
        .clamp(MIN_STREAM_CHUNK_BYTES, MAX_STREAM_CHUNK_BYTES);
        let prepared = (|| {
            let n = service::check_n("n", r.n, self.state.settings.limits.max_bits)?;
            let alg = service::resolve_alg(&self.state, named(&r.alg))?;
            let req = BitsRequest { n_bits: n, alg, prediction_resistance: r.prediction_resistance };
            Ok::<_, ApiError>((req, ChunkedOutput::new(self.state.clone(), req, Encoding::Binary, chunk)?))
        })();
        let (req, output) = match prepared {
            Ok(prepared) => prepared,
            Err(e) => {
                self.state.metrics.errors.with_label_values(&[e.code()]).inc();
                self.observe("StreamBits", "none", e.grpc_code(), start);
                return Err(e.to_status());
            }
        };
        let stream = ChunkStreamState { output, req, offset: 0, service: self.clone(), start, done: false };
        Ok(Response::new(Box::pin(futures_util::stream::unfold(stream, ChunkStreamState::next))))
    }

    async fn get_token(&self, request: Request<pb::GetTokenRequest>) -> Reply<pb::TokenResponse> {
        let r = request.into_inner();
        self.unary("GetToken", || {
            let bytes = if r.bytes == 0 { 32 } else { u64::from(r.bytes) };
            let alg = service::resolve_alg(&self.state, named(&r.alg))?;
            let format = if r.format.is_empty() { "base64url" } else { &r.format };
            let format =
                Encoding::parse(format).filter(|e| service::SECRET_FORMATS.contains(e)).ok_or_else(|| {
                    ApiError::invalid(
                        "unknown_format",
                        "format",
                        "format must be one of base64url, hex, base32, base64",
                    )
                })?;
            let token = service::secret(&self.state, alg, bytes, format)?;
            Ok((pb::TokenResponse { token, format: format.name().into(), alg: alg.name().into() }, alg))
        })
    }

    async fn get_uuids(&self, request: Request<pb::GetUuidsRequest>) -> Reply<pb::UuidsResponse> {
        let r = request.into_inner();
        self.unary("GetUuids", || {
            let count = count(&self.state, r.count)?;
            let version = match r.version {
                0 | 4 => 4,
                7 => 7,
                _ => return Err(ApiError::invalid("invalid_version", "version", "version must be 4 or 7")),
            };
            let alg = service::resolve_alg(&self.state, named(&r.alg))?;
            let uuids =
                service::uuids(&self.state, alg, count, version)?.iter().map(ToString::to_string).collect();
            Ok((pb::UuidsResponse { uuids, alg: alg.name().into() }, alg))
        })
    }

    async fn get_ints(&self, request: Request<pb::GetIntsRequest>) -> Reply<pb::IntsResponse> {
        let r = request.into_inner();
        self.unary("GetInts", || {
            let count = count(&self.state, r.count)?;
            let alg = service::resolve_alg(&self.state, named(&r.alg))?;
            let values = service::ints(&self.state, alg, r.min, r.max, count)?;
            Ok((pb::IntsResponse { values, alg: alg.name().into() }, alg))
        })
    }
}

/// StreamBits state: one chunk per poll; dropped (generation stops) when the client cancels.
struct ChunkStreamState {
    output: ChunkedOutput,
    req: BitsRequest,
    offset: u64,
    service: RandomnessService,
    start: Instant,
    done: bool,
}

impl ChunkStreamState {
    async fn next(mut self) -> Option<(Result<pb::BitsChunk, Status>, Self)> {
        if self.done {
            return None;
        }
        match self.output.next_chunk() {
            Ok(Some(data)) => {
                let n_bits = (data.len() as u64 * 8).min(self.req.n_bits - self.offset);
                let chunk = pb::BitsChunk {
                    ones: bits::count_ones(&data),
                    data: data.to_vec(),
                    offset_bits: self.offset,
                    n_bits,
                    alg: self.req.alg.name().into(),
                };
                self.offset += n_bits;
                Some((Ok(chunk), self))
            }
            Ok(None) => {
                self.service.observe("StreamBits", self.req.alg.name(), tonic::Code::Ok, self.start);
                None
            }
            Err(e) => {
                self.done = true;
                self.service.state.metrics.errors.with_label_values(&[e.code()]).inc();
                self.service.observe("StreamBits", self.req.alg.name(), e.grpc_code(), self.start);
                Some((Err(e.to_status()), self))
            }
        }
    }
}
