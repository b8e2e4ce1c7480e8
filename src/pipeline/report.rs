//! What the pipeline records of a response ([`Report`]: what was served, the error's code, the
//! caller an endpoint named, a receipt's serial), and an endpoint's response with its record
//! beside it ([`Answer`]). Both transports hand it over: REST endpoints beside their
//! response, the gRPC service in its response's extensions. An [`ApiError`] answered below the
//! pipeline records its code the same way.

use std::sync::Arc;

use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};

use crate::callers::Caller;
use crate::drbg::Algorithm;
use crate::error::ApiError;

/// What a response served, for the metrics and the access log.
#[derive(Debug, Clone, Copy)]
pub struct Served {
    /// The generator.
    pub alg: Algorithm,
    /// Random bits served (0 where the count is not a number of bits, as for `/int`).
    pub n_bits: u64,
}

/// What the pipeline records of a response (metrics, access and audit lines): what was
/// served, the error's code. Endpoints hand it over beside their response
/// ([`Answer`]); anything else that answers
/// (the router's HEAD and POST routes and its fallbacks, an error rendered below the front
/// layer, the pipeline's own refusals, the gRPC service) leaves it in the response's
/// extensions. Never read back from the headers.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// What was served (`None`: nothing generated).
    pub served: Option<Served>,
    /// The response's owner writes its access and audit lines when it ends (a gRPC stream,
    /// whose status is known only then), not the pipeline at its headers.
    pub recorded_at_end: bool,
    /// The error's machine code.
    pub code: Option<&'static str>,
    /// The caller the endpoint named itself, after the head (a signed request's, whose
    /// signature covers its body), and when: the records and rate-limit fields name it.
    pub named: Option<(Arc<Caller>, tokio::time::Instant)>,
    /// The serial of the signed receipt served, for the audit line.
    pub serial: Option<String>,
    /// The ticket the draw used (its use, or a retry answered its stored answer), for the audit
    /// line.
    pub ticket: Option<String>,
    /// The response's `Cache-Control` in place of `no-store` (and without `Pragma`): only the
    /// beacon's rounds and chain info set it, public values the same for every client, which
    /// proxies and clients may keep (a past round for ever, the latest until the next).
    pub cache_control: Option<HeaderValue>,
}

impl Report {
    /// The record of `response`, added if it has none yet.
    pub fn of<B>(response: &mut axum::http::Response<B>) -> &mut Report {
        response.extensions_mut().get_or_insert_default()
    }
}

/// An endpoint's response and its [`Report`], side by side: the pipeline takes the record
/// of an endpoint it calls directly as it is, without a type map for it in the response
/// (measured: about 700 instructions a request); through the router, it goes into the
/// response's extensions.
#[derive(Debug)]
pub struct Answer {
    /// The response.
    pub response: Response,
    /// What it records.
    pub report: Report,
}

impl From<Response> for Answer {
    fn from(response: Response) -> Self {
        Answer { response, report: Report::default() }
    }
}

impl From<ApiError> for Answer {
    fn from(error: ApiError) -> Self {
        Answer { report: Report { code: Some(error.code()), ..Report::default() }, response: error.render() }
    }
}

/// An error as the router answers it (a handler's, an extractor's, the fallbacks'): rendered
/// as problem+json ([`ApiError::render`]), its code recorded for the pipeline.
impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = self.render();
        Report::of(&mut response).code = Some(self.code());
        response
    }
}

impl IntoResponse for Answer {
    fn into_response(self) -> Response {
        let mut response = self.response;
        response.extensions_mut().insert(self.report);
        response
    }
}
