//! What the handlers' answers share: the headers naming what was served (`X-Drbg-Alg`,
//! `X-Drbg-Bits`) with the [`Report`] the pipeline writes its lines from, bodies of random
//! output wiped once sent, the plain-text content type. The responses themselves are built on
//! the pipeline's ([`crate::pipeline::response`]).

use axum::http::{HeaderName, HeaderValue};
use axum::response::Response;

use crate::drbg::Algorithm;
use crate::pipeline::{Answer, Report, Served};

/// Response header naming the algorithm that produced the output.
pub const X_DRBG_ALG: HeaderName = HeaderName::from_static("x-drbg-alg");
/// Response header with the number of bits served.
pub const X_DRBG_BITS: HeaderName = HeaderName::from_static("x-drbg-bits");

/// The content type of plain-text values.
pub const TEXT: &str = "text/plain; charset=utf-8";

/// A body of random output (or a secret) whose memory is wiped when the transport drops its
/// last reference to it. hyper's own write buffers, TLS records and the kernel's socket
/// buffers are copies out of reach (docs/security.md, "Where random output is wiped").
pub fn wiped(output: Vec<u8>) -> axum::body::Body {
    axum::body::Body::from(bytes::Bytes::from_owner(crate::service::wiped::Wiped(output)))
}

/// A body of `pieces` joined, holding random output, in a buffer sized exactly (one that grew
/// would leave a copy of the output behind, unwiped) and wiped as [`wiped`] says: the JSON
/// envelopes of the drop-in front-ends around their encoded output.
pub fn wiped_joined(pieces: &[&[u8]]) -> axum::body::Body {
    let mut joined = Vec::with_capacity(pieces.iter().map(|p| p.len()).sum());
    for piece in pieces {
        joined.extend_from_slice(piece);
    }
    wiped(joined)
}

/// `X-Drbg-Bits`: the counts served most (a token, a nonce, a UUID, small `/bits`) as static
/// values, without the allocation a formatted value costs.
fn bits_value(n_bits: u64) -> HeaderValue {
    match n_bits {
        96 => HeaderValue::from_static("96"),
        122 => HeaderValue::from_static("122"),
        128 => HeaderValue::from_static("128"),
        256 => HeaderValue::from_static("256"),
        512 => HeaderValue::from_static("512"),
        1024 => HeaderValue::from_static("1024"),
        n => HeaderValue::from(n),
    }
}

/// The answer of a response that served `n_bits` from `alg`: the `X-Drbg-Alg` / `X-Drbg-Bits`
/// headers set, what was served recorded.
pub fn served(mut response: Response, alg: Algorithm, n_bits: u64) -> Answer {
    let h = response.headers_mut();
    h.insert(X_DRBG_ALG, HeaderValue::from_static(alg.name()));
    if n_bits > 0 {
        h.insert(X_DRBG_BITS, bits_value(n_bits));
    }
    Answer { response, report: Report { served: Some(Served { alg, n_bits }), ..Report::default() } }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_values_read_as_the_number() {
        for n in (1..5000).chain([u64::MAX]) {
            assert_eq!(bits_value(n), n.to_string().as_str(), "{n}");
        }
    }
}
