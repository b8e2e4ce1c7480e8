//! What every gRPC call of drbgd's shares: the generated types ([`pb`]), the algorithms' wire
//! enums, the admission the pipeline made from the call's head, and the record of what a reply
//! served for the pipeline's lines.

use tonic::{Request, Response, Status};

use crate::callers::Admission;
use crate::drbg::Algorithm;
use crate::error::ApiError;

/// Generated protobuf types and client/server code.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    tonic::include_proto!("drbgd.v1");
    /// The encoded descriptor set, for reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/drbgd_descriptor.bin"));
}

/// A unary call's result.
pub type Reply<T> = Result<Response<T>, Status>;

/// The wire enum of an algorithm (`ALGORITHM_AES256CTR` for `aes256ctr`): derived from the
/// canonical names, so no second list of algorithms exists here.
pub fn wire_alg(alg: Algorithm) -> i32 {
    // Worked out once from the names, not per reply.
    static WIRE: std::sync::OnceLock<[i32; Algorithm::COUNT]> = std::sync::OnceLock::new();
    WIRE.get_or_init(|| {
        Algorithm::ALL.map(|a| {
            pb::Algorithm::from_str_name(&format!("ALGORITHM_{}", a.name().to_ascii_uppercase()))
                .map_or(pb::Algorithm::Unspecified as i32, |w| w as i32)
        })
    })[alg.index()]
}

/// The caller's admission, made by the pipeline from the call's head.
///
/// # Errors
/// `INTERNAL` when there is none: the service was reached without the pipeline (a wiring
/// fault), and serves nothing then.
#[allow(clippy::result_large_err)] // tonic's Status
pub fn admission<T>(request: &Request<T>) -> Result<Admission, Status> {
    caller(request).map_err(|e| e.to_status())
}

/// `response`, with what it serves (and the serial of its receipt) recorded for the front
/// layer's access and audit lines.
pub fn served<T>(
    mut response: Response<T>,
    alg: Algorithm,
    n_bits: u64,
    serial: Option<String>,
) -> Response<T> {
    let served = crate::pipeline::Served { alg, n_bits };
    let outcome =
        crate::pipeline::Report { served: Some(served), serial, ..crate::pipeline::Report::default() };
    response.extensions_mut().insert(outcome);
    response
}

/// The algorithm name a wire enum stands for; `None` for unspecified (the default).
///
/// # Errors
/// `unknown_alg` for a number this server does not know.
pub fn alg_name(value: i32) -> Result<Option<String>, ApiError> {
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

/// The caller's admission, as [`admission`] with the domain's error.
///
/// # Errors
/// 500 without one (a wiring fault, as there).
pub fn caller<T>(request: &Request<T>) -> Result<Admission, ApiError> {
    request.extensions().get::<Admission>().cloned().ok_or(ApiError::Internal)
}
