//! How the drop-in front-ends read their callers' credentials from a request's head: the
//! functions their rows of the table hand the call pipeline (their guards' credentials), so
//! that the pipeline reads none of them itself: Vault's token (`X-Vault-Token`, then a bearer
//! key), and the head of an AWS SigV4 signature (KMS's: the access key, scope and date it
//! shows, checked before the body the signature covers is read). A bearer key is the
//! pipeline's own ([`crate::pipeline::bearer`]).

use axum::http::{HeaderMap, HeaderName, Method, Uri};

use crate::callers::sigv4::SignedRequest;
use crate::callers::{Callers, Denied, Key};

/// Vault's token header.
pub(crate) const X_VAULT_TOKEN: HeaderName = HeaderName::from_static("x-vault-token");

/// Vault's token (an empty one is none), else the `Authorization` header's bearer key.
pub(crate) fn vault_token(headers: &HeaderMap) -> Option<Key<'_>> {
    match headers.get(X_VAULT_TOKEN).filter(|t| !t.is_empty()) {
        Some(token) => Some(Key::Raw(token.as_bytes())),
        None => crate::pipeline::bearer(headers),
    }
}

/// What the head of an AWS SigV4 request shows (a known access key, the scope, the date),
/// checked before the request takes a place; a refusal is `unknown`'s. The signature, which
/// covers the body, is the endpoint's to check (`http/kms.rs`).
///
/// # Errors
/// As [`Callers::check_signed_head`].
pub(crate) fn sigv4_head(
    callers: &Callers,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
) -> Result<(), Denied> {
    let signed = SignedRequest::of(method, uri, headers);
    callers.check_signed_head(&signed, std::time::SystemTime::now())
}
