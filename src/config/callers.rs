//! The `[callers.<name>]` tables of the configuration, as written: credentials, a policy and a
//! quota per caller. The callers' registry validates them and builds the live callers.

use serde::{Deserialize, Serialize};

use crate::drbg::Algorithm;
use crate::route::Route;

/// One `[callers.<name>]` table.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CallerSettings {
    /// SHA-256 (hex) of each bearer key of this caller (several during a rotation). Keys may
    /// also come from `auth.api_keys_file`, as `<caller> <digest>` lines.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub key_sha256: Vec<String>,
    /// Verified client-certificate identities that are this caller: a URI SAN as written
    /// (`spiffe://example.org/ns/web/sa/web`), `dns:<DNS SAN>` or `cn:<subject CN>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub identities: Vec<String>,
    /// AWS access keys that are this caller on the KMS front-end (`[kms] enabled`): requests
    /// signed (SigV4) with one of them. Several during a rotation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aws_access_keys: Vec<AwsAccessKey>,
    /// What the caller may ask for.
    #[serde(default)]
    pub policy: PolicySettings,
    /// How much, how fast.
    #[serde(default)]
    pub quota: QuotaSettings,
}

/// One `[[callers.<name>.aws_access_keys]]` entry. SigV4 signs with the secret itself, so the
/// secret is kept (in memory wiped when the callers are reloaded), read from its own file (a
/// mounted Secret), never written in the configuration.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AwsAccessKey {
    /// The access key id (`AKIA…`), which the request's signature names.
    pub id: String,
    /// The file holding the secret access key (its first line; the path is taken as given,
    /// relative to the working directory). Read at start and on every reload.
    pub secret_file: std::path::PathBuf,
}

/// `[callers.<name>.policy]`; a key left out allows everything the server allows.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySettings {
    /// Algorithms the caller may use (names or aliases); all enabled ones when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algs: Option<Vec<Algorithm>>,
    /// Random-output endpoints the caller may call (`/bits`, `/bytes`, `/token`, `/nonce`,
    /// `/uuid`, `/int`; the gRPC method of each counts as the same endpoint); all when absent.
    /// `/algorithms` and `/usage` are open to every caller (and count against its quota),
    /// `/openapi.json`, `/keys` and `/verify` to everyone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routes: Option<Vec<Route>>,
    /// Most random bits per request, on every endpoint; `limits.max_bits` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bits: Option<u64>,
    /// Whether the caller may ask for prediction resistance (`pr=true`).
    #[serde(default = "yes")]
    pub pr: bool,
    /// Whether the caller may ask for signed receipts (`receipt=true`, with `[receipts]
    /// enabled`); refused: 403 `receipts_not_allowed`.
    #[serde(default = "yes")]
    pub receipts: bool,
}

impl Default for PolicySettings {
    fn default() -> Self {
        PolicySettings { algs: None, routes: None, max_bits: None, pr: true, receipts: true }
    }
}

fn yes() -> bool {
    true
}

/// `[callers.<name>.quota]`; 0 means no limit. Quotas are per instance.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct QuotaSettings {
    /// Sustained requests per second (token bucket).
    #[serde(default)]
    pub requests_per_second: u32,
    /// Requests allowed at once above the sustained rate (the bucket size); the rate when 0.
    #[serde(default)]
    pub burst: u32,
    /// Sustained random bytes per second (raw, before encoding).
    #[serde(default)]
    pub bytes_per_second: u64,
    /// The byte bucket size; one second of `bytes_per_second` when 0.
    #[serde(default)]
    pub bytes_burst: u64,
    /// Requests in progress at once (its share of `server.concurrency_limit`).
    #[serde(default)]
    pub max_in_flight: u32,
}
