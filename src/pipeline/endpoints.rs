//! What the pipeline reads of the endpoint registry above it: the [`Endpoints`] trait, which
//! the registry implements over its rows (`http/registry.rs`), and what one row tells the
//! pipeline ([`Entry`]): its gate (how its caller's credentials are read from the head, the
//! policy route), what its requests take of the caps and quotas ([`Limits`]), how its errors
//! are written, whether it answers a GET at once. Each front-end's way of reading credentials
//! and of writing errors is a function its row supplies: nothing of a front-end (Vault's token
//! header, SigV4's head, KMS's or Vault's error bodies) is written in the pipeline.

use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;

use super::record::RecordedResponse;
use crate::callers::{Admission, Callers, Denied, Key};
use crate::error::ApiError;
use crate::route::{Endpoint, Route};
use crate::state::AppState;

/// The endpoint registry as the pipeline reads it, from a request's head: implemented once,
/// over the registry's rows (`http/registry.rs`).
pub trait Endpoints: std::fmt::Debug + Send + Sync + 'static {
    /// The endpoint a request's path is for, if the configuration serves it (a route it does
    /// not serve is none at all).
    fn served(&self, path: &str, state: &AppState) -> Option<Endpoint>;

    /// What the pipeline needs of `endpoint`'s row.
    fn entry(&self, endpoint: Endpoint) -> Entry;

    /// The method of the randomness service a gRPC path calls: its name (the metrics label) and
    /// the gate of the row that lists it. `None` for a path that is no such method (health,
    /// reflection, a method it does not have: public, tonic answers them without a caller).
    fn grpc_method(&self, path: &str) -> Option<(&'static str, Gate)>;

    /// The response to a GET of an endpoint whose entry says it answers at once
    /// ([`Entry::direct`]), for a caller admitted as its gate says (`None` only on a public
    /// endpoint): what the router would answer, without the router.
    fn answer(
        &self,
        endpoint: Endpoint,
        state: &AppState,
        admission: Option<&Admission>,
        parts: &Parts,
    ) -> RecordedResponse;
}

/// What the pipeline needs of one endpoint's registry row.
#[derive(Clone, Copy)]
pub struct Entry {
    /// Who may call it, and how the caller's credentials are read.
    pub gate: Gate,
    /// What its requests take of the caps and quotas.
    pub limits: Limits,
    /// How the pipeline's own answers on its route are written (as the service a drop-in
    /// front-end stands in for writes its errors, so that its clients read them).
    pub errors: Render,
    /// Whether it answers a GET at once, so that the pipeline may call it directly
    /// ([`Endpoints::answer`]) instead of the router.
    pub direct: bool,
}

/// Who may call an endpoint or a gRPC method: how its caller's credentials are read from the
/// head, and the policy route the caller's policy must allow (none: any admitted caller, or,
/// public, no caller at all).
#[derive(Clone, Copy)]
pub struct Gate {
    /// How the caller is named.
    pub credentials: Credentials,
    /// The policy route.
    pub route: Option<Route>,
}

impl Gate {
    /// Anyone, unadmitted: what no endpoint guards (the router's 404, gRPC health and
    /// reflection).
    pub const PUBLIC: Gate = Gate { credentials: Credentials::Public, route: None };

    /// Whether it names no caller at all.
    pub fn public(self) -> bool {
        matches!(self.credentials, Credentials::Public)
    }
}

/// How a request names its caller, from its head, as its row's front-end reads it.
#[derive(Clone, Copy)]
pub enum Credentials {
    /// No caller at all: anyone, under the public cap and each peer's share of it.
    Public,
    /// A key the front-end's function reads from the head (`None`: none presented), or a
    /// client certificate; with neither, the caller `anonymous` (with auth off, or on a route
    /// open to it).
    Key(ReadKey),
    /// A signature over the body: what the head shows is checked by the front-end's function
    /// before a place is taken, and the endpoint admits the caller the signature names once the
    /// body is read. Only a POST is a signed call.
    Signature(CheckHead),
}

/// Reads the key a request's head presents (a front-end's way: `Authorization`, Vault's token).
pub type ReadKey = fn(&HeaderMap) -> Option<Key<'_>>;

/// Checks what the head of a signed request shows (a front-end's way: AWS SigV4's key, scope
/// and date), refusing it as `unknown` before its body is read.
pub type CheckHead = fn(&Callers, &Method, &Uri, &HeaderMap) -> Result<(), Denied>;

/// Writes an error as a route's clients read it.
pub type Render = fn(&ApiError) -> Response;

/// What an endpoint's requests take of the server's caps and the caller's quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limits {
    /// The caller's quota under the server's cap: an in-flight place, and a request token on a
    /// policy route (none on metadata). A signed request holds only its connection's place for
    /// a signed body until its signature is checked.
    Quota,
    /// No caller: the public cap and the peer's share of it (`[server] peer_*`).
    Peer,
    /// As [`Limits::Peer`], and the handler bounds each peer's requests waiting (for the
    /// beacon's next round): the pipeline hands it the peer's key.
    PeerWaiting,
}
