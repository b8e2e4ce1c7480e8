//! `/bits` and `/bytes` (GET, and POST with a JSON body): random output in any encoding,
//! streamed when large, or with `receipt=true` a signed receipt of it. Parse into a typed
//! request, call the service, encode.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::body::Body;
use axum::http::HeaderValue;
use bytes::Bytes;
use http_body::{Frame, SizeHint};

use super::receipt;
use super::respond::{served, wiped};
use crate::callers::{Admission, Route};
use crate::error::ApiError;
use crate::pipeline::params::{self, Accept, Param, Params, choose_format};
use crate::pipeline::{self, Answer};
use crate::service::budget::Permit;
use crate::service::{BitsOutput, BitsRequest, BytesRequest, Chunks};
use crate::state::AppState;

const SERVER_TIMING: axum::http::HeaderName = axum::http::HeaderName::from_static("server-timing");

/// `/bits?n=&alg=&format=&pr=&receipt=&user_data=` (a GET's query or a POST's JSON body).
pub fn bits(
    state: &AppState,
    admission: &Admission,
    accept: Accept<'_>,
    params: &Params<'_>,
) -> Result<Answer, ApiError> {
    packed(Route::Bits, state, admission, accept, params)
}

/// `/bytes?n=&alg=&format=&pr=&receipt=&user_data=`: the same, counted in bytes.
pub fn bytes(
    state: &AppState,
    admission: &Admission,
    accept: Accept<'_>,
    params: &Params<'_>,
) -> Result<Answer, ApiError> {
    packed(Route::Bytes, state, admission, accept, params)
}

/// `/bits` or `/bytes` (`route`, which says what `n` counts): one request type for both, with
/// or without a receipt.
fn packed(
    route: Route,
    state: &AppState,
    admission: &Admission,
    accept: Accept<'_>,
    params: &Params<'_>,
) -> Result<Answer, ApiError> {
    params.allow(params::BITS)?;
    let ask = receipt::ask(state, params)?;
    let format = choose_format(params.get(Param::Format), receipt::accept(ask.as_ref(), accept))?;
    let (n, alg, pr) = (params.u64(Param::N)?, params.get(Param::Alg), params.flag(Param::Pr)?);
    let rules = state.service.rules();
    let req = match route {
        Route::Bytes => BytesRequest::new(rules, n, alg, format, pr)?.into_bits(),
        _ => BitsRequest::new(rules, n, alg, format, pr)?,
    }
    .with_receipt(ask.is_some());
    match ask {
        Some(ask) => receipt::bits(state, admission, &ask, route, &req),
        None => respond(state, admission, req),
    }
}

fn respond(state: &AppState, admission: &Admission, req: BitsRequest) -> Result<Answer, ApiError> {
    let content_type = req.format().content_type();
    let response = match state.service.bits(&admission.caller, admission.peer, req)? {
        BitsOutput::Whole(mut rendered) => {
            let timing = server_timing(rendered.generate_time, rendered.encode_time);
            let body = wiped(std::mem::take(&mut rendered.body));
            let mut response = pipeline::response_with(body, content_type, 1);
            if let Some(v) = timing {
                response.headers_mut().insert(SERVER_TIMING, v);
            }
            response
        }
        BitsOutput::Stream { first, rest } => {
            let len = req.format().encoded_len(req.n_bits());
            // The admission travels with the body: the caller's in-flight place is held
            // until the last chunk is sent or the client goes away, as for gRPC streams.
            let body = Body::new(ChunkBody {
                first,
                rest,
                waiting: None,
                wait_limit: Duration::from_millis(state.settings.server.write_timeout_ms),
                left: len,
                failed: false,
                _admission: admission.clone(),
                // Called within the request's server span (the pipeline enters it).
                span: tracing::Span::current(),
            });
            pipeline::response(body, content_type)
        }
    };
    Ok(served(response, req.alg(), req.n_bits()))
}

/// `Server-Timing: gen;dur=<ms>;desc="generate", enc;dur=<ms>;desc="encode"`: the time in the
/// generator, then from its end to the encoded body (the ones counted for the bias histogram,
/// then the encoding); milliseconds with three decimals, written with integers into a stack
/// buffer (no float formatting, and one allocation: the header value's own).
fn server_timing(generate: std::time::Duration, encode: std::time::Duration) -> Option<HeaderValue> {
    let mut out = StackText::<128>::default();
    for (i, (label, d, desc)) in
        [("gen", generate, "generate"), ("enc", encode, "encode")].into_iter().enumerate()
    {
        // (u64 microseconds: 584,000 years; u128's formatting costs twice as much)
        let micros = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        if i > 0 {
            out.push(", ");
        }
        out.push(label);
        out.push(";dur=");
        out.push(itoa::Buffer::new().format(micros / 1000));
        out.push(".");
        out.push(&itoa::Buffer::new().format(1000 + micros % 1000)[1..]);
        out.push(";desc=\"");
        out.push(desc);
        out.push("\"");
    }
    HeaderValue::from_bytes(out.as_bytes()).ok()
}

/// Text of at most `N` bytes on the stack; a piece that does not fit is dropped, so `N` is
/// sized for the longest text (Server-Timing's: 90 bytes with two durations of 17-digit
/// milliseconds, `Duration::MAX`).
struct StackText<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> Default for StackText<N> {
    fn default() -> Self {
        StackText { buf: [0; N], len: 0 }
    }
}

impl<const N: usize> StackText<N> {
    fn push(&mut self, s: &str) {
        let end = self.len + s.len();
        if let Some(dst) = self.buf.get_mut(self.len..end) {
            dst.copy_from_slice(s.as_bytes());
            self.len = end;
        }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// A streamed response body: each chunk generated when hyper asks for it (so a slow or gone
/// client stops generation), with its exact length where the encoding allows (everything but
/// JSON), so the response has a `Content-Length` instead of chunked framing. A generator that
/// refuses, or a panic while generating, ends the body with an error: the client sees a cut
/// response (HTTP/1 connection closed, HTTP/2 stream reset), never a short one that looks whole.
struct ChunkBody {
    first: Option<Bytes>,
    rest: Chunks,
    /// Waiting for the stream budget's bytes for the next chunk (see `service::budget`).
    waiting: Option<Pin<Box<BudgetWait>>>,
    /// How long a chunk may wait for them (`server.write_timeout_ms`: a stream that makes no
    /// progress that long is cut, whatever holds it up).
    wait_limit: Duration,
    /// Encoded bytes still to send, when known in advance.
    left: Option<u64>,
    /// The body ended with an error.
    failed: bool,
    _admission: Admission,
    /// The request's server span (disabled with traces off): the chunks are generated inside
    /// it, and it stays open until the body ends.
    span: tracing::Span,
}

/// A wait for the stream budget, bounded.
type BudgetWait = dyn Future<Output = Result<Permit, tokio::time::error::Elapsed>> + Send;

impl ChunkBody {
    /// The stream budget's bytes for the next chunk, granted to the stream: at once when the
    /// budget has room, else once chunks of any stream are dropped; an error when none came
    /// within the wait limit (the stream is then cut).
    fn poll_budget(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ()>> {
        let Some(shares) = self.rest.shares() else { return Poll::Ready(Ok(())) };
        let waiting = match &mut self.waiting {
            Some(waiting) => waiting,
            None => match shares.try_take() {
                Some(permit) => {
                    self.rest.grant(permit);
                    return Poll::Ready(Ok(()));
                }
                None => {
                    let wait = tokio::time::timeout(self.wait_limit, shares.clone().take());
                    self.waiting.insert(Box::pin(wait))
                }
            },
        };
        let waited = ready!(waiting.as_mut().poll(cx));
        self.waiting = None;
        match waited {
            Ok(permit) => {
                self.rest.grant(permit);
                Poll::Ready(Ok(()))
            }
            Err(_) => Poll::Ready(Err(())),
        }
    }

    fn data(&mut self, chunk: Bytes) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        if let Some(left) = &mut self.left {
            *left = left.saturating_sub(chunk.len() as u64);
        }
        Poll::Ready(Some(Ok(Frame::data(chunk))))
    }

    fn fail(&mut self, code: &'static str) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        self.failed = true;
        crate::telemetry::trace::record_failure(&self.span, code);
        Poll::Ready(Some(Err(std::io::Error::other(code.to_owned()))))
    }
}

impl http_body::Body for ChunkBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        if self.failed {
            return Poll::Ready(None);
        }
        if let Some(first) = self.first.take() {
            return self.data(first);
        }
        if self.rest.is_finished() {
            return Poll::Ready(None);
        }
        if ready!(self.poll_budget(cx)).is_err() {
            self.span.in_scope(|| {
                tracing::warn!("aborting a streamed response: no stream budget within the write timeout")
            });
            return self.fail("overloaded");
        }
        // The layers' panic catcher does not reach into a body: catch here, so that a panic
        // while generating cuts this response only, not the connection's task.
        let span = self.span.clone();
        let next = span
            .in_scope(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.rest.next_chunk())));
        match next {
            Ok(Ok(Some(chunk))) => self.data(chunk.encoded),
            Ok(Ok(None)) => Poll::Ready(None),
            Ok(Err(e)) => {
                span.in_scope(|| {
                    tracing::warn!(
                        code = e.code(),
                        "aborting a streamed response: generator refused mid-stream"
                    );
                });
                self.fail(e.code())
            }
            Err(_) => {
                span.in_scope(|| tracing::error!("aborting a streamed response: panic while generating"));
                self.fail("internal")
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.failed || (self.first.is_none() && self.rest.is_finished())
    }

    fn size_hint(&self) -> SizeHint {
        self.left.map_or_else(SizeHint::default, SizeHint::with_exact)
    }
}

/// The OpenAPI operations of `/bits` and `/bytes`: each row's `doc` column (`http.rs`), built from the
/// pieces of `http/openapi/describe.rs`.
pub(crate) mod doc {
    use crate::pipeline::Describe;
    use utoipa::openapi::path::OperationBuilder;

    use utoipa::openapi::{Components, PathItem, ResponseBuilder};

    use crate::http::openapi::describe::{Context, binary_schema, content, string_schema};
    use crate::pipeline::params::{self};

    use crate::http::openapi::describe::{RANDOM_ERRORS, get_and_post};

    /// `/bits`: GET and POST.
    pub(crate) fn bits(d: &Describe<'_>, _: &mut Components) -> PathItem {
        let context = Context { n: Some((d.rules.max_bits, "Number of bits.")), ..Context::default() };
        packed(
            d,
            "Bits",
            ["n random bits (packed MSB-first)", "n random bits, parameters in a JSON body"],
            &context,
        )
    }

    /// `/bytes`: GET and POST.
    pub(crate) fn bytes(d: &Describe<'_>, _: &mut Components) -> PathItem {
        let context = Context { n: Some((d.rules.max_bits / 8, "Number of bytes.")), ..Context::default() };
        packed(d, "Bytes", ["n random bytes", "n random bytes, parameters in a JSON body"], &context)
    }

    /// `/bits` or `/bytes` (`get{id}`, `post{id}`, each with its summary): the output in any
    /// encoding, or a receipt.
    fn packed(d: &Describe<'_>, id: &str, [get, post]: [&str; 2], context: &Context) -> PathItem {
        let responses = |op: OperationBuilder| {
            let ok = ResponseBuilder::new()
                .description("OK; streamed above the configured threshold")
                .content("text/plain", content(string_schema()))
                .content("application/octet-stream", content(binary_schema()))
                .content("application/json", content(d.json_or_receipt("BitsJson")));
            d.errors(op.response("200", ok.build()), RANDOM_ERRORS)
        };
        let get = responses(d.op(&format!("get{id}"), get).parameters(Some(d.query(params::BITS, context))));
        let post =
            responses(d.op(&format!("post{id}"), post).request_body(Some(d.body(params::BITS, context))));
        get_and_post(d, get, post)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    #[test]
    fn server_timing_is_milliseconds_with_three_decimals() {
        assert_eq!(
            super::server_timing(Duration::from_nanos(12_345), Duration::from_micros(2_003_004)).unwrap(),
            "gen;dur=0.012;desc=\"generate\", enc;dur=2003.004;desc=\"encode\""
        );
        assert_eq!(
            super::server_timing(Duration::ZERO, Duration::from_micros(1_000)).unwrap(),
            "gen;dur=0.000;desc=\"generate\", enc;dur=1.000;desc=\"encode\""
        );
        // The longest durations fit the buffer whole.
        let longest = super::server_timing(Duration::MAX, Duration::MAX).unwrap();
        assert_eq!(longest.len(), 90);
        assert!(longest.to_str().unwrap().ends_with(";desc=\"encode\""));
    }
}
