//! Named callers: who is asking (a bearer key or a verified client certificate), what they may
//! ask for (policy) and how much (quota), counted per caller. Admission has two steps, which
//! the request pipeline of both transports calls with the server's cap between them:
//! [`Callers::authorize`] from the request's head, then [`Authorized::enter`] for the quota.
//! The service then checks each parsed request against the caller's policy and byte quota
//! ([`Caller::permit`]).
//!
//! - [`settings`]: the `[callers.<name>]` tables as written.
//! - [`registry`]: validated callers indexed by credential; state that survives a reload.
//! - [`policy`]: algorithms, routes, bits per request, prediction resistance (403).
//! - [`quota`]: token buckets and the in-flight cap (429), kept by a [`QuotaStore`].
//! - [`identity`]: the names of a verified client certificate.
//! - [`sigv4`]: verifying an AWS SigV4 signature (the KMS front-end's credential).
//!
//! The registry in force is swapped whole on reload ([`Callers::reload`]): a request admitted
//! before keeps its `Arc<Caller>` (old policy) to the end; the next one sees the new registry.
//! Quotas are per instance with `[quota] store = "local"` ([`quota::LocalStore`]), and hold
//! across the fleet with a shared store ([`quota::RedisStore`]); the in-flight cap is always
//! per instance (it protects this replica's own capacity).

pub mod identity;
pub mod peer;
pub mod policy;
pub mod quota;
pub mod registry;
pub mod sigv4;

use std::sync::{Arc, Mutex, RwLock};

use tokio::time::Instant;

use serde::Serialize;

pub use identity::ClientIdentity;
pub use policy::{Draw, Policy, Route};
pub use quota::{Kind, QuotaStore, Rate, Refusal};
pub use registry::{Caller, Key, Registry};

use crate::config::Settings;
use crate::config::quota::StoreKind;
use crate::drbg::Algorithm;
use crate::error::ApiError;
use crate::metrics::Metrics;
use quota::{Holder, LocalStore, RedisStore};

/// The registry in force, replaced whole on reload.
pub struct Callers {
    current: RwLock<Arc<Registry>>,
    /// Held from reading the settings to putting their registry in force, so two reloads at
    /// once (SIGHUP and a file change) cannot put an older read in force after a newer one.
    reloading: Mutex<()>,
    metrics: Arc<Metrics>,
    /// `drbgd_caller_requests_total{caller="unknown"}`, resolved once.
    unknown_requests: prometheus::IntCounter,
}

impl std::fmt::Debug for Callers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Callers").field(&*self.registry()).finish()
    }
}

/// An admitted request: its caller and its place in the caller's in-flight count (released
/// when this is dropped, with the request).
#[derive(Debug, Clone)]
pub struct Admission {
    /// Who is asking.
    pub caller: Arc<Caller>,
    /// When it was admitted: the rate-limit fields describe the buckets as of then.
    pub at: Instant,
    /// The peer (client address, canonical) of a request of `anonymous`, the caller of every
    /// request with auth off: its streams take that peer's share of the stream budget, as a
    /// named caller's take the caller's, so one address cannot hold every anonymous stream's
    /// share. `None` for a named caller.
    pub peer: Option<crate::peer_key::PeerKey>,
    _in_flight: Arc<quota::InFlight>,
}

/// A refused request: the error to answer, and the caller when it is known.
#[derive(Debug)]
pub struct Denied {
    /// The caller, if the credentials named one.
    pub caller: Option<Arc<Caller>>,
    /// 401, 403 or 429.
    pub error: ApiError,
    /// When it was refused: the rate-limit fields describe the buckets as of then (a token
    /// that arrives a moment later would otherwise show as `r=1` on a 429).
    pub at: Instant,
}

/// How long start-up waits for the quota store to answer before it serves without it.
pub const JOIN_DEADLINE: std::time::Duration = quota::redis_store::JOIN_DEADLINE;

impl Callers {
    /// The callers of `settings`, logging each warning.
    ///
    /// # Errors
    /// See [`Registry::build`].
    pub fn from_settings(settings: &Settings, metrics: Arc<Metrics>) -> anyhow::Result<Self> {
        let store: Arc<dyn QuotaStore> = match settings.quota.store {
            StoreKind::Local => Arc::new(LocalStore),
            StoreKind::Redis => {
                metrics.register_quota_store();
                let series = metrics.quota_store.clone();
                Arc::new(RedisStore::new(&settings.quota, &settings.drbg.instance, series)?)
            }
        };
        let (registry, warnings) = Registry::build_with_store(settings, &metrics, None, store)?;
        for w in warnings {
            tracing::warn!("{w}");
        }
        let unknown_requests = metrics.caller_requests.with_label_values(&[registry::UNKNOWN]);
        Ok(Callers {
            current: RwLock::new(Arc::new(registry)),
            reloading: Mutex::new(()),
            metrics,
            unknown_requests,
        })
    }

    /// The registry in force.
    pub fn registry(&self) -> Arc<Registry> {
        self.current.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Builds a registry from `settings` and puts it in force, keeping each caller's quota
    /// state and counters. See [`Callers::reload_from`].
    ///
    /// # Errors
    /// See [`Registry::build`]; the registry in force then stays.
    pub fn reload(&self, settings: &Settings) -> anyhow::Result<()> {
        self.reload_from(|| Ok(settings.clone()))
    }

    /// Reads the settings with `read` and puts the registry they make in force, both under the
    /// reload lock: of two reloads at once (SIGHUP and a file change), the one that reads later
    /// is put in force later, so an older `[callers]` never replaces a newer one. Warns of
    /// each caller whose policy it widens or whose limit it removes (a file caught half-written
    /// would do that, as would a deliberate edit).
    ///
    /// # Errors
    /// Those of `read` and of [`Registry::build`]; the registry in force then stays.
    pub fn reload_from(&self, read: impl FnOnce() -> anyhow::Result<Settings>) -> anyhow::Result<()> {
        let _one_at_a_time = self.reloading.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let settings = read()?;
        let previous = self.registry();
        let (registry, warnings) = Registry::build(&settings, &self.metrics, Some(&previous))?;
        for w in warnings.iter().chain(&registry.widened_from(&previous)) {
            tracing::warn!("{w}");
        }
        let names: Vec<&str> = registry.callers().iter().map(|c| c.name()).collect();
        tracing::info!(callers = names.join(","), auth = registry.auth(), "callers reloaded");
        *self.current.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(registry);
        Ok(())
    }

    /// Before the first request: what the quota store needs first (a shared store is
    /// announced to, so it is up before the first request when it can be reached, waiting up
    /// to [`JOIN_DEADLINE`]). See [`QuotaStore::join`].
    pub async fn join_store(&self) {
        let store = self.registry().store().clone();
        store.join().await;
    }

    /// For ever, while serving: the quota store's upkeep (a shared store's heartbeats, and
    /// idle leases given back). Ends at once with the local store. See [`QuotaStore::keep`].
    pub async fn keep_store(&self) {
        let store = self.registry().store().clone();
        let holders = || self.holders();
        store.keep(&holders).await;
    }

    /// At shutdown, after the drain: what the quota store is owed (a shared store is given
    /// back every lease's unspent tokens and what is owed is settled, then the replica leaves
    /// it). See [`QuotaStore::leave`].
    pub async fn leave_store(&self) {
        let store = self.registry().store().clone();
        let holders = || self.holders();
        store.leave(&holders).await;
    }

    /// Every caller's buckets in the registry in force, `anonymous` included.
    fn holders(&self) -> Vec<Holder> {
        self.registry()
            .all()
            .map(|caller| Holder {
                name: caller.name_arc(),
                state: caller.quota_state().clone(),
                quota: caller.quota,
            })
            .collect()
    }

    /// Identifies the caller and admits the request to `route` at once: [`Callers::authorize`]
    /// then [`Authorized::enter`] (what the request pipeline does with the server's cap on
    /// requests in progress between the two).
    ///
    /// # Errors
    /// See the two steps.
    pub fn admit(
        &self,
        bearer: Option<Key<'_>>,
        client: Option<&ClientIdentity>,
        route: Option<Route>,
    ) -> Result<Admission, Denied> {
        self.authorize(bearer, client, route, Instant::now())?.enter()
    }

    /// The first step of admission, from the request's head alone: identifies the caller and
    /// checks its policy allows `route`. `None` is a metadata route (`/algorithms`, `/usage`,
    /// `GetUsage`), which every caller may call. Nothing of the caller's quota is taken yet:
    /// [`Authorized::enter`] does that once the server has room for the request, so a request
    /// the server sheds costs the caller nothing. `now` is the request's start, the time its
    /// quota is taken at (the pipeline's own clock read, not another).
    ///
    /// # Errors
    /// [`Denied`] with 401, 403 (`unknown_client`, `credentials_conflict`,
    /// `route_not_allowed`); each is counted, and so is the request (under `unknown` when the
    /// credentials name no caller).
    pub fn authorize(
        &self,
        bearer: Option<Key<'_>>,
        client: Option<&ClientIdentity>,
        route: Option<Route>,
        now: Instant,
    ) -> Result<Authorized, Denied> {
        self.authorize_identified(self.registry().identify_for(bearer, client, route), route, now)
    }

    /// [`Callers::authorize`] for a signed request (the KMS front-end's AWS SigV4), whose
    /// signature covers its body and so is checked once the body is read: the caller is the
    /// owner of the access key whose secret verifies the signature, as of `now`.
    ///
    /// # Errors
    /// As [`Callers::authorize`], and 401 for a signature that does not verify
    /// ([`Registry::identify_signed`]).
    pub fn authorize_signed(
        &self,
        request: &sigv4::SignedRequest<'_>,
        client: Option<&ClientIdentity>,
        body: &[u8],
        now: std::time::SystemTime,
        route: Route,
    ) -> Result<Authorized, Denied> {
        let identified = self.registry().identify_signed(request, client, body, now);
        self.authorize_identified(identified, Some(route), Instant::now())
    }

    /// The checks of a signed request that its head allows ([`Registry::check_signed_head`]),
    /// before it takes a place or its body is read; a refusal is counted as `unknown`'s.
    ///
    /// # Errors
    /// 401, as [`Registry::check_signed_head`].
    pub fn check_signed_head(
        &self,
        request: &sigv4::SignedRequest<'_>,
        now: std::time::SystemTime,
    ) -> Result<(), Denied> {
        self.registry().check_signed_head(request, now).map_err(|error| self.unknown(error))
    }

    /// A refusal of a request whose credentials name no caller (or are not yet read), counted
    /// as `unknown`'s.
    pub fn unknown(&self, error: ApiError) -> Denied {
        self.unknown_requests.inc();
        self.metrics.caller_denials.with_label_values(&[registry::UNKNOWN, error.code()]).inc();
        Denied { caller: None, error, at: Instant::now() }
    }

    fn authorize_identified(
        &self,
        identified: Result<Arc<Caller>, ApiError>,
        route: Option<Route>,
        at: Instant,
    ) -> Result<Authorized, Denied> {
        let caller = match identified {
            Ok(caller) => caller,
            Err(error) => return Err(self.unknown(error)),
        };
        caller.count_request();
        if let Some(route) = route
            && let Err(error) = caller.policy.check_route(route)
        {
            caller.count_denial(&error);
            return Err(Denied { caller: Some(caller), error, at });
        }
        Ok(Authorized { caller, metadata: route.is_none(), at })
    }
}

/// A caller identified and allowed on its route, its quota not yet taken (see
/// [`Callers::authorize`]).
#[derive(Debug)]
pub struct Authorized {
    /// Who is asking.
    pub caller: Arc<Caller>,
    /// A metadata route: no request token.
    metadata: bool,
    /// When it was authorized.
    pub at: Instant,
}

impl Authorized {
    /// The second step of admission: a place in the caller's in-flight count and, for a
    /// random-output route, a token from its request bucket. Metadata routes take no token (a
    /// caller held at its rate can still read its own usage, which is what `/usage` is for;
    /// answering it costs what answering a 429 costs) but an in-flight place as any other, so
    /// they are no way around the caller's share of the concurrency limit.
    ///
    /// # Errors
    /// [`Denied`] with 429 (`concurrency_limited`, `rate_limited`), counted.
    pub fn enter(self) -> Result<Admission, Denied> {
        let Authorized { caller, metadata, at } = self;
        let deny = |caller: Arc<Caller>, error: ApiError| {
            caller.count_denial(&error);
            Err(Denied { caller: Some(caller), error, at })
        };
        let Some(in_flight) = caller.quota_state().enter(caller.quota.max_in_flight) else {
            let error = ApiError::rate_limited(
                "concurrency_limited",
                1,
                format!("this caller already has {} requests in progress", caller.quota_state().in_flight()),
            );
            return deny(caller, error);
        };
        if !metadata
            && let Some(rate) = caller.quota.requests
            && let Err(refusal) = caller.take(Kind::Requests, rate, 1.0, at)
        {
            let error = refusal_error(refusal, || {
                format!("this caller may make {} requests per second (burst {})", rate.per_second, rate.burst)
            });
            return deny(caller, error);
        }
        Ok(Admission { caller, at, peer: None, _in_flight: Arc::new(in_flight) })
    }
}

/// Whole seconds to wait, at least 1 (`Retry-After` takes integers).
fn retry_after(wait: quota::Wait) -> u64 {
    (wait.0.as_secs_f64().ceil() as u64).max(1)
}

/// The error to answer a [`Refusal`] with (429 `rate_limited` with `detail`, or 503).
fn refusal_error(refusal: Refusal, detail: impl FnOnce() -> String) -> ApiError {
    match refusal {
        Refusal::Wait(wait) => ApiError::rate_limited("rate_limited", retry_after(wait), detail()),
        Refusal::StoreUnavailable => ApiError::QuotaStoreUnavailable,
    }
}

impl Caller {
    /// Takes `cost` from the caller's `kind` bucket at `now`, as its quota store keeps it: the
    /// local bucket, or (with a shared store) the lease on the global one, or while the store is
    /// down what `quota.on_store_failure` says ([`QuotaStore::take`]).
    ///
    /// # Errors
    /// [`Refusal`]; nothing is taken.
    pub fn take(&self, kind: Kind, rate: Rate, cost: f64, now: Instant) -> Result<(), Refusal> {
        self.store.take(self.owner(), kind, rate, cost, now)
    }

    /// Takes `n` request tokens more from the caller's rate, for a request that counts as
    /// more than one (`POST /tickets`: one a ticket; its first was taken at admission).
    ///
    /// # Errors
    /// 429 `rate_limited` (nothing taken); 503 when the quota store is down. Counted.
    pub fn take_requests(&self, n: u64) -> Result<(), ApiError> {
        let Some(rate) = self.quota.requests.filter(|_| n > 0) else { return Ok(()) };
        let result = self.take(Kind::Requests, rate, n as f64, Instant::now()).map_err(|refusal| {
            refusal_error(refusal, || {
                format!("this caller may make {} requests per second (burst {})", rate.per_second, rate.burst)
            })
        });
        if let Err(e) = &result {
            self.count_denial(e);
        }
        result
    }

    /// What is left in the caller's `kind` bucket at `now`, as this replica knows it
    /// ([`QuotaStore::remaining`]).
    pub fn remaining(&self, kind: Kind, rate: Rate, now: Instant) -> f64 {
        self.store.remaining(self.quota_state(), kind, rate, now)
    }

    /// Where the caller's buckets are kept now: `instance` (this process), `global` (the
    /// shared store) or `replica_share` (the store is down: this replica's share)
    /// ([`QuotaStore::scope`]).
    pub fn quota_scope(&self) -> &'static str {
        self.store.scope(self.quota_state())
    }

    /// Checks a parsed request's draw against the caller's policy ([`Policy::check`]), then
    /// takes its random bytes from the byte bucket.
    ///
    /// # Errors
    /// 403 `alg_not_allowed`, `n_not_allowed`, `pr_not_allowed`, `receipts_not_allowed`; 429
    /// `rate_limited`. Counted.
    pub fn permit(&self, draw: &Draw, bytes: u64) -> Result<(), ApiError> {
        let result = self.policy.check(draw).and_then(|()| match self.quota.bytes {
            Some(rate) => self.take(Kind::Bytes, rate, bytes as f64, Instant::now()).map_err(|refusal| {
                refusal_error(refusal, || {
                    format!("this caller may draw {} random bytes per second", rate.per_second)
                })
            }),
            None => Ok(()),
        });
        if let Err(e) = &result {
            self.count_denial(e);
        }
        result
    }

    /// `GET /usage` / `GetUsage`: the caller's policy, what is left of its quota now, and its
    /// counters on this instance.
    pub fn usage(&self) -> Usage {
        let now = Instant::now();
        let state = self.quota_state();
        let bucket = |rate: Option<quota::Rate>, kind: Kind| {
            rate.map(|r| {
                let left = self.remaining(kind, r, now);
                BucketUsage {
                    per_second: r.per_second as u64,
                    burst: r.burst as u64,
                    remaining: left.max(0.0).floor() as u64,
                    full_in_seconds: quota::seconds_to_full(r, left),
                }
            })
        };
        Usage {
            caller: self.name().to_string(),
            policy: PolicyUsage {
                algs: self.policy.algs().collect(),
                routes: self.policy.routes().collect(),
                max_bits: self.policy.max_bits,
                pr: self.policy.pr,
                receipts: self.policy.receipts,
            },
            quota: QuotaUsage {
                scope: self.quota_scope(),
                requests: bucket(self.quota.requests, Kind::Requests),
                bytes: bucket(self.quota.bytes, Kind::Bytes),
                max_in_flight: self.quota.max_in_flight,
                in_flight: state.in_flight(),
            },
            counters: Counters {
                requests: self.requests(),
                output_bytes: self.output_bytes(),
                denied: self.denied(),
            },
        }
    }
}

/// What `GET /usage` returns.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Usage {
    /// The caller's name.
    pub caller: String,
    /// Its policy.
    pub policy: PolicyUsage,
    /// Its quota now.
    pub quota: QuotaUsage,
    /// Its counters on this instance.
    pub counters: Counters,
}

/// A policy, as `/usage` shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PolicyUsage {
    /// Allowed algorithms (canonical names).
    #[schema(value_type = Vec<String>)]
    pub algs: Vec<Algorithm>,
    /// Allowed random-output routes (`/bits`, `/token`, ...).
    #[schema(value_type = Vec<String>)]
    pub routes: Vec<Route>,
    /// Most bits per request.
    pub max_bits: u64,
    /// Whether `pr=true` is allowed.
    pub pr: bool,
    /// Whether signed receipts (`receipt=true`) are allowed.
    pub receipts: bool,
}

/// A quota now.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct QuotaUsage {
    /// `instance` (this replica's buckets, `[quota] store = "local"`), `global` (the shared
    /// store's, as of this replica's last exchange with it), or while the store is down
    /// `replica_share` (this replica's share of the rate), `unlimited` or `unavailable`.
    #[schema(value_type = String)]
    pub scope: &'static str,
    /// The request bucket (`null`: no limit).
    pub requests: Option<BucketUsage>,
    /// The random-byte bucket (`null`: no limit).
    pub bytes: Option<BucketUsage>,
    /// The in-flight cap (`null`: none).
    pub max_in_flight: Option<u32>,
    /// Requests in progress now.
    pub in_flight: u32,
}

/// One bucket now.
#[derive(Debug, Clone, Copy, Serialize, utoipa::ToSchema)]
pub struct BucketUsage {
    /// Sustained rate.
    pub per_second: u64,
    /// Bucket size.
    pub burst: u64,
    /// What may be spent now.
    pub remaining: u64,
    /// Seconds until full.
    pub full_in_seconds: u64,
}

/// Counters since the instance started.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Counters {
    /// Requests (admitted or denied).
    pub requests: u64,
    /// Random bytes served.
    pub output_bytes: u64,
    /// Denials by code.
    #[schema(value_type = std::collections::BTreeMap<String, u64>)]
    pub denied: std::collections::BTreeMap<&'static str, u64>,
}
