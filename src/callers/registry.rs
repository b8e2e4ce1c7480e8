//! The configured callers, validated and indexed: bearer-key digests and certificate
//! identities to callers, each with its policy, quota and counters. Built whole from the
//! settings (and the keys file) at start and on every reload; a caller's quota state and
//! counters carry over to the next registry by name, so a reload refills no bucket.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, bail, ensure};
use sha2::{Digest, Sha256};
use subtle::{ConditionallySelectable, ConstantTimeEq};

use super::identity::{ClientIdentity, valid_entry};
use super::policy::Policy;
use super::quota::{LocalStore, Owner, Quota, QuotaState, QuotaStore, Rate};
use super::sigv4::{Audience, SignedRequest, SigningSecret};
use crate::config::Settings;
use crate::config::callers::{CallerSettings, PolicySettings, QuotaSettings};
use crate::drbg::Algorithm;
use crate::error::ApiError;
use crate::metrics::Metrics;

/// The caller of every request when auth is off (unless a client certificate names another).
pub const ANONYMOUS: &str = "anonymous";
/// The caller of keys given without a name (`auth.api_key_sha256`, bare digests in the keys
/// file); open policy and no quota unless `[callers.default]` says otherwise.
pub const DEFAULT: &str = "default";
/// The `caller` label of requests whose credentials name no caller.
pub const UNKNOWN: &str = "unknown";

/// Denial codes counted per caller, in `/usage` and `drbgd_caller_denials_total`.
pub const DENIALS: [&str; 9] = [
    "unknown_client",
    "route_not_allowed",
    "alg_not_allowed",
    "n_not_allowed",
    "pr_not_allowed",
    "receipts_not_allowed",
    "rate_limited",
    "concurrency_limited",
    "quota_store_unavailable",
];

/// A caller: its name, policy, quota and (shared across reloads) state.
pub struct Caller {
    name: Arc<str>,
    /// What it may ask for.
    pub policy: Policy,
    /// Its limits.
    pub quota: Quota,
    state: Arc<CallerState>,
    /// Where its buckets are kept.
    pub store: Arc<dyn QuotaStore>,
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller")
            .field("name", &self.name)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// What outlives a reload: quota state, counters and resolved metric handles.
struct CallerState {
    quota: Arc<QuotaState>,
    requests: AtomicU64,
    output_bytes: AtomicU64,
    denied: [AtomicU64; DENIALS.len()],
    metrics: CallerMetrics,
}

/// The caller's series, resolved once (no label hashing per request).
struct CallerMetrics {
    requests: prometheus::IntCounter,
    output_bytes: prometheus::IntCounter,
    denials: [prometheus::IntCounter; DENIALS.len()],
}

impl CallerState {
    fn new(name: &str, metrics: &Metrics) -> Self {
        CallerState {
            quota: Arc::default(),
            requests: AtomicU64::new(0),
            output_bytes: AtomicU64::new(0),
            denied: Default::default(),
            metrics: CallerMetrics {
                requests: metrics.caller_requests.with_label_values(&[name]),
                output_bytes: metrics.caller_output_bytes.with_label_values(&[name]),
                denials: DENIALS.map(|code| metrics.caller_denials.with_label_values(&[name, code])),
            },
        }
    }
}

impl Caller {
    /// The name (the `caller` label and log field).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The shared name.
    pub fn name_arc(&self) -> Arc<str> {
        self.name.clone()
    }

    /// The quota state (buckets, requests in progress).
    pub fn quota_state(&self) -> &Arc<QuotaState> {
        &self.state.quota
    }

    /// Whose buckets these are, as the quota store takes from them.
    pub fn owner(&self) -> Owner<'_> {
        Owner { name: &self.name, state: &self.state.quota }
    }

    /// Counts a request that reached admission.
    pub fn count_request(&self) {
        self.state.requests.fetch_add(1, Ordering::Relaxed);
        self.state.metrics.requests.inc();
    }

    /// Counts random bytes served to this caller.
    pub fn count_output(&self, bytes: u64) {
        self.state.output_bytes.fetch_add(bytes, Ordering::Relaxed);
        self.state.metrics.output_bytes.inc_by(bytes);
    }

    /// Counts a denial by its code (codes outside [`DENIALS`] are not denials).
    pub fn count_denial(&self, error: &ApiError) {
        if let Some(i) = DENIALS.iter().position(|c| *c == error.code()) {
            self.state.denied[i].fetch_add(1, Ordering::Relaxed);
            self.state.metrics.denials[i].inc();
        }
    }

    /// Requests admitted or denied since start (this instance).
    pub fn requests(&self) -> u64 {
        self.state.requests.load(Ordering::Relaxed)
    }

    /// Random bytes served since start (this instance).
    pub fn output_bytes(&self) -> u64 {
        self.state.output_bytes.load(Ordering::Relaxed)
    }

    /// Denials by code since start (this instance).
    pub fn denied(&self) -> BTreeMap<&'static str, u64> {
        DENIALS.iter().zip(&self.state.denied).map(|(c, n)| (*c, n.load(Ordering::Relaxed))).collect()
    }
}

/// A request's key, as it came (its `Debug` shows the kind only).
#[derive(Clone, Copy)]
pub enum Key<'a> {
    /// An `Authorization` header's value (`Bearer <key>`).
    Bearer(&'a [u8]),
    /// A key on its own (Vault's `X-Vault-Token`).
    Raw(&'a [u8]),
}

impl std::fmt::Debug for Key<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Key::Bearer(_) => "Key::Bearer(..)",
            Key::Raw(_) => "Key::Raw(..)",
        })
    }
}

/// The callers in force, indexed by credential.
pub struct Registry {
    auth: bool,
    /// Routes served to requests without credentials (as `anonymous`) with auth on.
    open_routes: Vec<super::policy::Route>,
    digests: Vec<[u8; 32]>,
    /// Index into `callers` of each digest's owner.
    owners: Vec<u32>,
    identities: HashMap<String, u32>,
    /// AWS access key ids: the owner's index into `callers`, and the secret.
    aws_keys: HashMap<String, (u32, SigningSecret)>,
    /// The regions and hosts signed KMS requests may name (`[kms] regions`, `[kms] hosts`).
    kms: Audience,
    /// The files the secrets of `aws_keys` were read from (watched for changes).
    secret_files: Vec<std::path::PathBuf>,
    callers: Vec<Arc<Caller>>,
    anonymous: Arc<Caller>,
    store: Arc<dyn QuotaStore>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("auth", &self.auth)
            .field("callers", &self.callers.iter().map(|c| c.name()).collect::<Vec<_>>())
            .field("digests", &self.digests.len())
            .field("aws_access_keys", &self.aws_keys.len())
            .finish_non_exhaustive()
    }
}

impl Registry {
    /// Where the callers' buckets are kept.
    pub fn store(&self) -> &Arc<dyn QuotaStore> {
        &self.store
    }

    /// Every caller, `anonymous` included.
    pub fn all(&self) -> impl Iterator<Item = &Arc<Caller>> {
        self.callers.iter().chain([&self.anonymous])
    }

    /// Validates the callers of `settings` (and the keys file) and builds the registry; state
    /// of callers also in `previous` carries over. Returns warnings to log (clamped policies,
    /// callers without credentials).
    ///
    /// # Errors
    /// A malformed caller (named by its key), a key or identity claimed twice, an unreadable
    /// keys file (at start-up; on reload, a keys file that cannot be read revokes its keys), or
    /// auth on with no credential at all at start-up.
    pub fn build(
        settings: &Settings,
        metrics: &Metrics,
        previous: Option<&Registry>,
    ) -> anyhow::Result<(Self, Vec<String>)> {
        let store: Arc<dyn QuotaStore> = match previous {
            Some(p) => p.store.clone(),
            None => Arc::new(LocalStore),
        };
        Self::build_with_store(settings, metrics, previous, store)
    }

    /// [`Registry::build`], the callers' buckets kept in `store`.
    ///
    /// # Errors
    /// As [`Registry::build`].
    pub fn build_with_store(
        settings: &Settings,
        metrics: &Metrics,
        previous: Option<&Registry>,
        store: Arc<dyn QuotaStore>,
    ) -> anyhow::Result<(Self, Vec<String>)> {
        let mut warnings = Vec::new();
        let tables = caller_tables(settings, previous.is_some(), &mut warnings)?;
        let registry = Registry::empty(settings, caller_state(previous, ANONYMOUS, metrics), store.clone());
        let mut building = Building {
            settings,
            metrics,
            previous,
            store,
            registry,
            claimed: HashMap::new(),
            aws_owners: HashMap::new(),
            warnings,
        };
        for (name, table) in &tables {
            building.add(name, table)?;
        }
        building.finish()
    }

    /// A registry with no caller but the default `anonymous` one (its `state` carried over).
    fn empty(settings: &Settings, state: Arc<CallerState>, store: Arc<dyn QuotaStore>) -> Registry {
        Registry {
            auth: settings.auth.enabled,
            open_routes: if settings.pollen.enabled && settings.pollen.anonymous {
                vec![super::policy::Route::Pollen]
            } else {
                Vec::new()
            },
            digests: Vec::new(),
            owners: Vec::new(),
            identities: HashMap::new(),
            aws_keys: HashMap::new(),
            kms: Audience { regions: settings.kms.regions.clone(), hosts: settings.kms.hosts.clone() },
            secret_files: Vec::new(),
            callers: Vec::new(),
            anonymous: Arc::new(Caller {
                name: ANONYMOUS.into(),
                policy: Policy::new(
                    &settings.drbg.enabled,
                    &served_routes(settings),
                    settings.limits.max_bits,
                    true,
                ),
                quota: Quota::default(),
                state,
                store: store.clone(),
            }),
            store,
        }
    }

    /// Warnings for settings that leave the callers other than they seem: credentials that
    /// auth off does not check, and `pollen.anonymous` without effect or without bounds.
    fn warn_of_settings(&self, settings: &Settings, warnings: &mut Vec<String>) {
        if !settings.auth.enabled && !self.digests.is_empty() {
            warnings.push(
                "auth.enabled is false: bearer keys are not checked and every request without a \
                 listed client certificate is `anonymous`, with the default policy"
                    .into(),
            );
        }
        if !settings.auth.enabled && !self.identities.is_empty() {
            warnings.push(
                "auth.enabled is false: a client whose certificate names no caller, or that sends \
                 none, is `anonymous` with the default policy, so a caller's narrower policy binds \
                 only clients that present its certificate; set auth.enabled = true to refuse the rest"
                    .into(),
            );
        }
        let open = self.open_to_anonymous(super::policy::Route::Pollen);
        let anonymous = &self.anonymous;
        if settings.pollen.anonymous && !open {
            warnings.push("pollen.anonymous has no effect: it needs pollen.enabled and auth.enabled".into());
        }
        if open && anonymous.policy.check_route(super::policy::Route::Pollen).is_err() {
            warnings.push(
                "pollen.anonymous is on but [callers.anonymous.policy] routes leave out /pollen: every \
                 request without credentials is refused"
                    .into(),
            );
        }
        if open && (anonymous.quota.requests.is_none() || anonymous.quota.max_in_flight.is_none()) {
            warnings.push(
                "pollen.anonymous serves requests without credentials as `anonymous`, whose quota has no \
                 requests_per_second or no max_in_flight: set both in [callers.anonymous.quota], so that \
                 clients without credentials share a bounded part of the server"
                    .into(),
            );
        }
        if !settings.auth.enabled && !self.aws_keys.is_empty() {
            warnings.push(
                "auth.enabled is false: AWS signatures are not checked and every KMS request is \
                 `anonymous`, with the default policy"
                    .into(),
            );
        }
    }

    /// A warning for each caller whose policy is wider here than in `previous`, or that has
    /// lost a limit (a file caught half-written, a table left out): what a reload should not
    /// do unnoticed. Callers new here are not compared.
    pub fn widened_from(&self, previous: &Registry) -> Vec<String> {
        let before =
            |name: &str| previous.callers.iter().chain([&previous.anonymous]).find(|c| c.name() == name);
        let mut warnings = Vec::new();
        for caller in self.callers.iter().chain([&self.anonymous]) {
            let Some(old) = before(caller.name()) else { continue };
            let wider = caller.policy.wider_than(&old.policy);
            let (q, o) = (&caller.quota, &old.quota);
            let removed: Vec<&str> = [
                (q.requests.is_none() && o.requests.is_some(), "requests_per_second"),
                (q.bytes.is_none() && o.bytes.is_some(), "bytes_per_second"),
                (q.max_in_flight.is_none() && o.max_in_flight.is_some(), "max_in_flight"),
            ]
            .into_iter()
            .filter_map(|(gone, key)| gone.then_some(key))
            .collect();
            if wider.is_empty() && removed.is_empty() {
                continue;
            }
            let mut what = Vec::new();
            if !wider.is_empty() {
                what.push(format!("its policy now allows more ({})", wider.join(", ")));
            }
            if !removed.is_empty() {
                what.push(format!("its quota lost {}", removed.join(", ")));
            }
            warnings.push(format!(
                "reload widens caller {:?}: {}; if that was not meant, check the file is complete",
                caller.name(),
                what.join(" and ")
            ));
        }
        warnings
    }

    /// Whether bearer keys are required.
    pub fn auth(&self) -> bool {
        self.auth
    }

    /// The files the AWS secrets in force were read from.
    pub fn secret_files(&self) -> &[std::path::PathBuf] {
        &self.secret_files
    }

    /// Whether requests without credentials reach `route` as `anonymous` with auth on.
    pub fn open_to_anonymous(&self, route: super::policy::Route) -> bool {
        self.auth && self.open_routes.contains(&route)
    }

    /// [`Registry::identify`] for a request to `route`: one without credentials on a route
    /// open to them (`[pollen] anonymous`) is `anonymous`.
    ///
    /// # Errors
    /// As [`Registry::identify`].
    pub fn identify_for(
        &self,
        bearer: Option<Key<'_>>,
        client: Option<&ClientIdentity>,
        route: Option<super::policy::Route>,
    ) -> Result<Arc<Caller>, ApiError> {
        if bearer.is_none() && client.is_none() && route.is_some_and(|r| self.open_routes.contains(&r)) {
            return Ok(self.anonymous.clone());
        }
        self.identify(bearer, client)
    }

    /// The caller of a request, from its credentials (auth on):
    ///
    /// | bearer key | client certificate | caller |
    /// |---|---|---|
    /// | none | none | 401 `unauthorized` |
    /// | valid | none, or one that names no caller | the key's |
    /// | wrong or malformed | any | 401 `unauthorized` (a bad key is never passed over) |
    /// | none | names a caller | the certificate's |
    /// | none | names no caller | 403 `unknown_client` |
    /// | valid | names the key's caller | that caller |
    /// | valid | names another caller (and not the key's) | 403 `credentials_conflict` |
    ///
    /// With auth off, a certificate that names a caller picks it, and every other request is
    /// `anonymous` (keys are not read).
    ///
    /// # Errors
    /// As the table says.
    pub fn identify(
        &self,
        bearer: Option<Key<'_>>,
        client: Option<&ClientIdentity>,
    ) -> Result<Arc<Caller>, ApiError> {
        // The callers a certificate names, most specific name first.
        let by_certificate = self.named_by(client);
        if !self.auth {
            return Ok(by_certificate.first().copied().unwrap_or(&self.anonymous).clone());
        }
        let Some(bearer) = bearer else {
            return match (by_certificate.first(), client) {
                (Some(caller), _) => Ok((*caller).clone()),
                (None, Some(_)) => Err(ApiError::forbidden(
                    "unknown_client",
                    "the client certificate is trusted but names no configured caller".to_string(),
                )),
                (None, None) => Err(ApiError::Unauthorized),
            };
        };
        let token = match bearer {
            Key::Bearer(header) => bearer_token(header).ok_or(ApiError::Unauthorized)?,
            Key::Raw(key) if !key.is_empty() => key,
            Key::Raw(_) => return Err(ApiError::Unauthorized),
        };
        let by_key = self.find_key(token).map(|i| &self.callers[i]).ok_or(ApiError::Unauthorized)?;
        agreeing(by_key, &by_certificate, "bearer key")
    }

    /// What a signed request's head can show before its body is read: a well-formed
    /// signature by a known access key, scoped to kms, a served region and its date, for a
    /// served host (with `[kms] hosts` set), within AWS's window of `now`, with no signing
    /// header repeated and no security token. With auth off, nothing (signatures are not read).
    ///
    /// # Errors
    /// 401 `unrecognized_client` (an access key no caller has), or the signature's refusal.
    pub fn check_signed_head(
        &self,
        request: &SignedRequest<'_>,
        now: std::time::SystemTime,
    ) -> Result<(), ApiError> {
        if !self.auth {
            return Ok(());
        }
        let auth = request.authorization()?;
        self.signer(auth.key_id)?;
        request.check_head(&auth, &self.kms, now).map(drop)
    }

    /// The caller of a signed request (the KMS front-end's AWS SigV4) with `body`, as of `now`:
    /// the owner of the access key the signature names, if the signature verifies with its
    /// secret. A client certificate that names callers must name that one too (as with bearer
    /// keys). With auth off, the certificate's caller or `anonymous` (signatures are not read,
    /// as keys are not).
    ///
    /// # Errors
    /// 401 `unrecognized_client` (an access key no caller has), or the signature's refusal;
    /// 403 `credentials_conflict`.
    pub fn identify_signed(
        &self,
        request: &SignedRequest<'_>,
        client: Option<&ClientIdentity>,
        body: &[u8],
        now: std::time::SystemTime,
    ) -> Result<Arc<Caller>, ApiError> {
        let by_certificate = self.named_by(client);
        if !self.auth {
            return Ok(by_certificate.first().copied().unwrap_or(&self.anonymous).clone());
        }
        let auth = request.authorization()?;
        let (owner, secret) = self.signer(auth.key_id)?;
        request.verify(&auth, &self.kms, secret, body, now)?;
        agreeing(&self.callers[owner as usize], &by_certificate, "signing access key")
    }

    /// The callers a client certificate names, most specific name first.
    fn named_by(&self, client: Option<&ClientIdentity>) -> Vec<&Arc<Caller>> {
        let Some(client) = client else { return Vec::new() };
        client
            .names()
            .iter()
            .filter_map(|n| self.identities.get(n))
            .map(|&i| &self.callers[i as usize])
            .collect()
    }

    /// The owner and secret of access key `key_id`.
    fn signer(&self, key_id: &str) -> Result<(u32, &SigningSecret), ApiError> {
        match self.aws_keys.get(key_id) {
            Some((owner, secret)) => Ok((*owner, secret)),
            None => Err(ApiError::BadSignature {
                code: "unrecognized_client",
                detail: "the security token included in the request is invalid".into(),
            }),
        }
    }

    /// The owner of `key`: every digest is compared, in constant time, whatever matches.
    fn find_key(&self, key: &[u8]) -> Option<usize> {
        let digest: [u8; 32] = Sha256::digest(key).into();
        let mut found = 0u32;
        for (d, owner) in self.digests.iter().zip(&self.owners) {
            found.conditional_assign(&(owner + 1), d.ct_eq(&digest));
        }
        (found as usize).checked_sub(1)
    }

    /// The named callers (not `anonymous`).
    pub fn callers(&self) -> &[Arc<Caller>] {
        &self.callers
    }

    /// The caller of unauthenticated requests.
    pub fn anonymous(&self) -> &Arc<Caller> {
        &self.anonymous
    }
}

/// A registry being built: what it is built from, and the credentials claimed so far.
struct Building<'a> {
    settings: &'a Settings,
    metrics: &'a Metrics,
    /// The registry in force, on reload.
    previous: Option<&'a Registry>,
    store: Arc<dyn QuotaStore>,
    registry: Registry,
    /// Each key digest's caller.
    claimed: HashMap<[u8; 32], String>,
    /// Each AWS access key id's caller (its index in `registry.callers`).
    aws_owners: HashMap<String, u32>,
    warnings: Vec<String>,
}

impl Building<'_> {
    /// Validates the caller `name` and indexes its credentials; `anonymous` replaces the
    /// default one.
    fn add(&mut self, name: &str, table: &CallerSettings) -> anyhow::Result<()> {
        ensure!(
            valid_name(name),
            "callers.{name}: a caller name is 1-64 of a-z 0-9 _ - . (and not {UNKNOWN:?})"
        );
        let (policy, quota) = build_policy(name, table, self.settings, &mut self.warnings)?;
        let caller = Arc::new(Caller {
            name: name.into(),
            policy,
            quota,
            state: caller_state(self.previous, name, self.metrics),
            store: self.store.clone(),
        });
        if name == ANONYMOUS {
            ensure!(
                table.key_sha256.is_empty()
                    && table.identities.is_empty()
                    && table.aws_access_keys.is_empty(),
                "callers.anonymous: the caller of requests without credentials (auth off, or pollen.anonymous) has none"
            );
            self.registry.anonymous = caller;
            return Ok(());
        }
        let index = u32::try_from(self.registry.callers.len()).context("too many callers")?;
        self.add_keys(name, index, table)?;
        self.add_identities(name, index, table)?;
        self.add_aws_keys(name, index, table)?;
        if self.settings.auth.enabled
            && table.key_sha256.is_empty()
            && table.identities.is_empty()
            && (table.aws_access_keys.is_empty() || !self.settings.kms.enabled)
        {
            self.warnings.push(format!("callers.{name} has no key and no identity: no request can be it"));
        }
        self.registry.callers.push(caller);
        Ok(())
    }

    /// Indexes the key digests of caller `name` (at `index`); a key is claimed once.
    fn add_keys(&mut self, name: &str, index: u32, table: &CallerSettings) -> anyhow::Result<()> {
        let key = |field: &str| format!("callers.{name}.{field}");
        for hex in &table.key_sha256 {
            let digest = data_encoding::HEXLOWER_PERMISSIVE
                .decode(hex.trim().as_bytes())
                .ok()
                .and_then(|b| <[u8; 32]>::try_from(b).ok())
                .with_context(|| {
                    format!("{}: each digest must be 64 hex characters (SHA-256)", key("key_sha256"))
                })?;
            if let Some(other) = self.claimed.insert(digest, name.to_string()) {
                ensure!(other != *name, "{}: a key is listed twice", key("key_sha256"));
                bail!("{}: a key is listed for both {other:?} and {name:?}", key("key_sha256"));
            }
            self.registry.digests.push(digest);
            self.registry.owners.push(index);
        }
        Ok(())
    }

    /// Indexes the certificate identities of caller `name` (at `index`); each is claimed once.
    fn add_identities(&mut self, name: &str, index: u32, table: &CallerSettings) -> anyhow::Result<()> {
        let key = |field: &str| format!("callers.{name}.{field}");
        for id in &table.identities {
            ensure!(
                valid_entry(id),
                "{}: {id:?} is not spiffe://… (a URI SAN), dns:<name> or cn:<name>",
                key("identities")
            );
            if let Some(other) = self.registry.identities.insert(id.clone(), index) {
                // `index` is this caller's, not pushed yet: no lookup for it.
                ensure!(other != index, "{}: {id:?} is listed twice", key("identities"));
                let other = self.registry.callers[other as usize].name();
                bail!("{}: {id:?} is listed for both {other:?} and {name:?}", key("identities"));
            }
        }
        Ok(())
    }

    /// Indexes the AWS access keys of caller `name` (at `index`), each claimed once, and reads
    /// their secrets with the KMS front-end on (one that cannot be read on reload revokes its
    /// key alone, with a warning).
    fn add_aws_keys(&mut self, name: &str, index: u32, table: &CallerSettings) -> anyhow::Result<()> {
        let key = |field: &str| format!("callers.{name}.{field}");
        for aws in &table.aws_access_keys {
            ensure!(
                (16..=128).contains(&aws.id.len()) && aws.id.bytes().all(|b| b.is_ascii_alphanumeric()),
                "{}: an id is 16-128 letters and digits (AKIA…)",
                key("aws_access_keys")
            );
            if let Some(other) = self.aws_owners.insert(aws.id.clone(), index) {
                ensure!(other != index, "{}: {:?} is listed twice", key("aws_access_keys"), aws.id);
                let other = self.registry.callers[other as usize].name();
                bail!("{}: {:?} is listed for both {other:?} and {name:?}", key("aws_access_keys"), aws.id);
            }
            // The secrets stay unread (and out of memory) while the KMS front-end is off.
            if !self.settings.kms.enabled {
                continue;
            }
            let secret = match read_secret(&aws.secret_file, &mut self.warnings) {
                Ok(secret) => secret,
                // After start-up a secret that cannot be read revokes its key alone (fail
                // closed), not the whole reload: the other callers' changes still apply.
                Err(e) if self.previous.is_some() => {
                    self.warnings.push(format!(
                        "{}: secret_file {} cannot be read ({e:#}): access key {:?} is refused until it can",
                        key("aws_access_keys"),
                        aws.secret_file.display(),
                        aws.id
                    ));
                    continue;
                }
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!("{}: secret_file {}", key("aws_access_keys"), aws.secret_file.display())
                    });
                }
            };
            self.registry.aws_keys.insert(aws.id.clone(), (index, secret));
            self.registry.secret_files.push(aws.secret_file.clone());
        }
        Ok(())
    }

    /// The registry and its warnings, once every caller is in; with auth on, no credential at
    /// all is refused at start-up (and warned of on reload, where it revokes every key).
    fn finish(self) -> anyhow::Result<(Registry, Vec<String>)> {
        let Building { settings, previous, registry, mut warnings, .. } = self;
        registry.warn_of_settings(settings, &mut warnings);
        if settings.auth.enabled
            && registry.digests.is_empty()
            && registry.identities.is_empty()
            && registry.aws_keys.is_empty()
        {
            // At start-up a mistake; on reload the way to revoke every key at once.
            ensure!(
                previous.is_some(),
                "auth.enabled is true but no API key digest or client identity is configured"
            );
            warnings.push("no API key or client identity is configured: every API request is refused until one is added".into());
        }
        Ok((registry, warnings))
    }
}

/// The `[callers]` tables with the keys file's lines added to them, and the keys without a
/// caller name given to `default` (warned of beside named callers with auth on).
fn caller_tables(
    settings: &Settings,
    reloading: bool,
    warnings: &mut Vec<String>,
) -> anyhow::Result<BTreeMap<String, CallerSettings>> {
    let mut tables: BTreeMap<String, CallerSettings> = settings.callers.clone();
    let mut unnamed: Vec<String> = settings.auth.api_key_sha256.clone();
    if let Some(path) = settings.api_keys_file() {
        read_keys_file(&path, reloading, &mut tables, &mut unnamed, warnings)?;
    }
    if !unnamed.is_empty() {
        // Beside named callers, a key without a name is most likely a line that lost its
        // name, and it would get everything with no limit: said (not refused, since keys
        // without names are how a single-tenant set-up names its keys, and a keys file may
        // be rolled out before its callers' names).
        let named = tables.keys().any(|n| n != ANONYMOUS && n != DEFAULT);
        if settings.auth.enabled && named && !tables.contains_key(DEFAULT) {
            warnings.push(format!(
                "{} key(s) without a caller name (a bare digest in auth.api_keys_file, or \
                 auth.api_key_sha256) make the caller `default`, which has no [callers.default] \
                 table: open policy and no quota, beside the named callers; write \
                 `<caller> <digest>` lines, or add [callers.default] to limit it",
                unnamed.len()
            ));
        }
        tables.entry(DEFAULT.to_string()).or_default().key_sha256.extend(unnamed);
    }
    Ok(tables)
}

/// Adds the lines of the keys file at `path` to `tables` (`<caller> <digest>`) and to
/// `unnamed` (a digest alone).
fn read_keys_file(
    path: &std::path::Path,
    reloading: bool,
    tables: &mut BTreeMap<String, CallerSettings>,
    unnamed: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> anyhow::Result<()> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        // Gone or unreadable after start-up: its keys are revoked, not kept (fail
        // closed). The watcher acts only on a change seen on two polls, so a file being
        // swapped is not gone. A failure that may pass (no descriptor left, an I/O
        // error) fails the reload instead, which keeps the keys in force and is retried.
        Err(e) if reloading && lasting(&e) => {
            warnings.push(format!(
                "auth.api_keys_file {} cannot be read ({}): the keys it held are revoked until it can",
                path.display(),
                e.kind()
            ));
            String::new()
        }
        Err(e) => return Err(e).with_context(|| format!("auth.api_keys_file {}", path.display())),
    };
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match line.split_once(char::is_whitespace) {
            None => unnamed.push(line.to_string()),
            Some((name, digest)) => {
                // The first word is not echoed: a mangled line may start with a key.
                let table = tables.get_mut(name).with_context(|| {
                    format!(
                        "auth.api_keys_file {} line {}: the caller it names (its first word, not \
                         shown) is not configured",
                        path.display(),
                        i + 1
                    )
                })?;
                table.key_sha256.push(digest.trim().to_string());
            }
        }
    }
    Ok(())
}

/// The state of caller `name` in `previous` (its buckets and counters carry over), or a new one.
fn caller_state(previous: Option<&Registry>, name: &str, metrics: &Metrics) -> Arc<CallerState> {
    previous
        .and_then(|p| p.callers.iter().chain([&p.anonymous]).find(|c| c.name() == name))
        .map(|c| c.state.clone())
        .unwrap_or_else(|| Arc::new(CallerState::new(name, metrics)))
}

/// The caller a credential (`what`) names, unless a client certificate names callers and not
/// that one: 403 `credentials_conflict`.
fn agreeing(
    by_key: &Arc<Caller>,
    by_certificate: &[&Arc<Caller>],
    what: &str,
) -> Result<Arc<Caller>, ApiError> {
    if !by_certificate.is_empty() && !by_certificate.iter().any(|c| Arc::ptr_eq(c, by_key)) {
        return Err(ApiError::forbidden(
            "credentials_conflict",
            format!("the {what} and the client certificate name different callers"),
        ));
    }
    Ok(by_key.clone())
}

/// A secret access key: the first line of `path`, trimmed, in memory wiped when dropped. A file
/// that others than its owner may read is warned of.
fn read_secret(path: &std::path::Path, warnings: &mut Vec<String>) -> anyhow::Result<SigningSecret> {
    let file = crate::secret_file::read(path)?;
    if file.open_to_others {
        warnings.push(format!(
            "{} holds an AWS secret access key and others than its owner may read it (chmod 600)",
            path.display()
        ));
    }
    let line = file.text.lines().next().unwrap_or_default().trim();
    ensure!(!line.is_empty(), "the file is empty");
    Ok(SigningSecret::new(zeroize::Zeroizing::new(line.to_string())))
}

/// Whether a keys file's read error says something about the file (it is gone, not text, not
/// ours to read, not a file) rather than about the moment (descriptors, I/O).
fn lasting(error: &std::io::Error) -> bool {
    use std::io::ErrorKind::{InvalidData, IsADirectory, NotFound, PermissionDenied};
    matches!(error.kind(), NotFound | InvalidData | PermissionDenied | IsADirectory)
}

/// The credentials of an `Authorization: Bearer <token>` value: the scheme matched without
/// regard to case, then one or more spaces (RFC 7235 §2.1, RFC 6750 §2.1).
fn bearer_token(value: &[u8]) -> Option<&[u8]> {
    const SCHEME: &[u8] = b"bearer";
    let (scheme, rest) = value.split_at_checked(SCHEME.len())?;
    if !scheme.eq_ignore_ascii_case(SCHEME) || rest.first() != Some(&b' ') {
        return None;
    }
    let token = &rest[rest.iter().take_while(|&&b| b == b' ').count()..];
    (!token.is_empty()).then_some(token)
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name != UNKNOWN
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-.".contains(&b))
}

/// The routes this server serves: every random-output route but the drop-in front-ends that
/// are off. A policy that names no routes allows these (and `/usage` lists them).
fn served_routes(settings: &Settings) -> Vec<super::policy::Route> {
    super::policy::Route::ALL.into_iter().filter(|r| settings.serves(*r)).collect()
}

/// The caller's policy and quota, clamped to the server's limits (with a warning each).
fn build_policy(
    name: &str,
    table: &CallerSettings,
    settings: &Settings,
    warnings: &mut Vec<String>,
) -> anyhow::Result<(Policy, Quota)> {
    let p = &table.policy;
    let algs = policy_algs(name, p, settings, warnings)?;
    let routes = p.routes.clone().unwrap_or_else(|| served_routes(settings));
    let max_bits = policy_max_bits(name, p, settings.limits.max_bits, warnings)?;
    let quota = build_quota(name, &table.quota, settings, warnings)?;
    let max_bits = fit_to_byte_burst(name, max_bits, &quota, warnings);
    Ok((Policy::new(&algs, &routes, max_bits, p.pr).with_receipts(p.receipts), quota))
}

/// The algorithms of policy `p`: those it names that this server enables (the others warned
/// of), or all it enables; none but SP 800-90A mechanisms with `drbg.approved_only`.
fn policy_algs(
    name: &str,
    p: &PolicySettings,
    settings: &Settings,
    warnings: &mut Vec<String>,
) -> anyhow::Result<Vec<Algorithm>> {
    let enabled = &settings.drbg.enabled;
    if settings.drbg.approved_only
        && let Some(alg) = p.algs.iter().flatten().find(|alg| !alg.approved())
    {
        bail!("callers.{name}.policy.algs: {alg} is not an SP 800-90A mechanism (drbg.approved_only)");
    }
    let algs = match &p.algs {
        None => enabled.clone(),
        Some(algs) => {
            let (on, off): (Vec<Algorithm>, Vec<Algorithm>) = algs.iter().partition(|a| enabled.contains(a));
            if !off.is_empty() {
                let off: Vec<&str> = off.iter().map(|a| a.name()).collect();
                warnings.push(format!(
                    "callers.{name}.policy.algs: {} not enabled on this server (drbg.enabled); ignored",
                    off.join(", ")
                ));
            }
            ensure!(!on.is_empty(), "callers.{name}.policy.algs: none of them is enabled (drbg.enabled)");
            on
        }
    };
    Ok(algs)
}

/// The largest request of policy `p`, clamped to `limit` (`limits.max_bits`).
fn policy_max_bits(
    name: &str,
    p: &PolicySettings,
    limit: u64,
    warnings: &mut Vec<String>,
) -> anyhow::Result<u64> {
    let max_bits = match p.max_bits {
        None => limit,
        Some(0) => bail!("callers.{name}.policy.max_bits: must be positive"),
        Some(n) if n > limit => {
            warnings.push(format!(
                "callers.{name}.policy.max_bits {n} is above limits.max_bits; clamped to {limit}"
            ));
            limit
        }
        Some(n) => n,
    };
    Ok(max_bits)
}

/// The caller's quota `q`, its requests in progress clamped to `server.concurrency_limit`.
fn build_quota(
    name: &str,
    q: &QuotaSettings,
    settings: &Settings,
    warnings: &mut Vec<String>,
) -> anyhow::Result<Quota> {
    let rate = |per_second: u64, burst: u64| {
        (per_second > 0).then_some(Rate {
            per_second: per_second as f64,
            burst: if burst == 0 { per_second as f64 } else { burst as f64 },
        })
    };
    let cap = u32::try_from(settings.server.concurrency_limit).unwrap_or(u32::MAX);
    let max_in_flight = match q.max_in_flight {
        0 => None,
        n if n > cap => {
            warnings.push(format!(
                "callers.{name}.quota.max_in_flight {n} is above server.concurrency_limit; clamped to {cap}"
            ));
            Some(cap)
        }
        n => Some(n),
    };
    ensure!(
        q.requests_per_second > 0 || q.burst == 0,
        "callers.{name}.quota.burst: set requests_per_second too"
    );
    ensure!(
        q.bytes_per_second > 0 || q.bytes_burst == 0,
        "callers.{name}.quota.bytes_burst: set bytes_per_second too"
    );
    Ok(Quota {
        requests: rate(u64::from(q.requests_per_second), u64::from(q.burst)),
        bytes: rate(q.bytes_per_second, q.bytes_burst),
        max_in_flight,
    })
}

/// `max_bits` clamped to what the byte bucket of `quota` holds. A request larger than the byte
/// bucket would pass once and leave the caller in debt for its excess (hours, for a large n
/// and a small rate): such a request is refused instead (403 n_not_allowed, at once and with
/// a reason).
fn fit_to_byte_burst(name: &str, max_bits: u64, quota: &Quota, warnings: &mut Vec<String>) -> u64 {
    match quota.bytes {
        Some(bytes) if max_bits.div_ceil(8) > bytes.burst as u64 => {
            let fits = (bytes.burst as u64).saturating_mul(8);
            warnings.push(format!(
                "callers.{name}.policy.max_bits {max_bits} is more than its byte burst allows \
                 (quota.bytes_burst {} bytes); clamped to {fits}",
                bytes.burst
            ));
            fits
        }
        _ => max_bits,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry() -> Registry {
        let mut settings = Settings::defaults();
        settings.auth.enabled = true;
        let digest = data_encoding::HEXLOWER.encode(&Sha256::digest(b"k3y"));
        settings
            .callers
            .insert("web".into(), CallerSettings { key_sha256: vec![digest], ..Default::default() });
        Registry::build(&settings, &Metrics::new(Arc::default()), None).unwrap().0
    }

    /// A `[callers.web]` caught before its policy and quota tables: the reload names `web` and
    /// what it gained; a narrowing, or nothing changed, says nothing.
    /// Two callers, each with a key and a certificate identity.
    fn two_callers() -> Registry {
        let mut settings = Settings::defaults();
        settings.auth.enabled = true;
        for (name, key) in [("web", "web-key"), ("batch", "batch-key")] {
            let digest = data_encoding::HEXLOWER.encode(&Sha256::digest(key.as_bytes()));
            let identities = vec![format!("dns:{name}.internal")];
            let caller = CallerSettings { key_sha256: vec![digest], identities, ..Default::default() };
            settings.callers.insert(name.into(), caller);
        }
        Registry::build(&settings, &Metrics::new(Arc::default()), None).unwrap().0
    }

    #[test]
    fn credentials_name_one_caller_or_are_refused() {
        let registry = two_callers();
        let cert = |name: &str| ClientIdentity::from_names(vec![format!("dns:{name}")]);
        let (web, batch, stranger) =
            (cert("web.internal"), cert("batch.internal"), cert("stranger.internal"));
        let who = |bearer: Option<&str>, client: Option<&ClientIdentity>| {
            registry
                .identify(bearer.map(|b| Key::Bearer(b.as_bytes())), client)
                .map(|c| c.name().to_string())
                .map_err(|e| e.code())
        };
        let ok = |name: &str| Ok(name.to_string());
        // key only; certificate only; both naming the same caller
        assert_eq!(who(Some("Bearer web-key"), None), ok("web"));
        assert_eq!(who(None, Some(&batch)), ok("batch"));
        assert_eq!(who(Some("Bearer web-key"), Some(&web)), ok("web"));
        // both, naming different callers: refused, whichever way round
        assert_eq!(who(Some("Bearer web-key"), Some(&batch)), Err("credentials_conflict"));
        assert_eq!(who(Some("Bearer batch-key"), Some(&web)), Err("credentials_conflict"));
        // a wrong or malformed key is never passed over for the certificate
        assert_eq!(who(Some("Bearer nope"), Some(&web)), Err("unauthorized"));
        assert_eq!(who(Some("Basic d2ViOmtleQ=="), Some(&web)), Err("unauthorized"));
        // a certificate naming two callers, one of them the key's: the key's
        let both = ClientIdentity::from_names(vec!["dns:web.internal".into(), "dns:batch.internal".into()]);
        assert_eq!(who(Some("Bearer batch-key"), Some(&both)), ok("batch"));
        assert_eq!(who(None, Some(&both)), ok("web"), "most specific (first) name");
        // a certificate that names no caller: the key decides; without one, 403
        assert_eq!(who(Some("Bearer batch-key"), Some(&stranger)), ok("batch"));
        assert_eq!(who(None, Some(&stranger)), Err("unknown_client"));
        assert_eq!(who(None, None), Err("unauthorized"));
    }

    #[test]
    fn a_widening_reload_names_the_caller() {
        let metrics = Metrics::new(Arc::default());
        let mut strict = Settings::defaults();
        strict.auth.enabled = true;
        let mut web = CallerSettings {
            key_sha256: vec![data_encoding::HEXLOWER.encode(&Sha256::digest(b"k3y"))],
            ..Default::default()
        };
        web.policy.algs = Some(vec![Algorithm::ChaCha20]);
        web.policy.pr = false;
        (web.quota.requests_per_second, web.quota.max_in_flight) = (50, 4);
        strict.callers.insert("web".into(), web.clone());
        strict.callers.insert(
            "batch".into(),
            CallerSettings { identities: vec!["cn:batch".into()], ..Default::default() },
        );
        let mut half = strict.clone();
        half.callers
            .insert("web".into(), CallerSettings { key_sha256: web.key_sha256, ..Default::default() });
        let (strict, _) = Registry::build(&strict, &metrics, None).unwrap();
        let (half, _) = Registry::build(&half, &metrics, Some(&strict)).unwrap();
        let warnings = half.widened_from(&strict);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let w = &warnings[0];
        assert!(
            w.contains("\"web\"")
                && w.contains("algs, pr")
                && w.contains("requests_per_second, max_in_flight"),
            "{w}"
        );
        assert!(strict.widened_from(&half).is_empty(), "narrowing is not warned");
        assert!(strict.widened_from(&strict).is_empty());
    }

    /// With `drbg.approved_only`, a policy naming a non-approved algorithm is refused (not
    /// warned about and ignored, as an algorithm merely disabled is).
    #[test]
    fn an_approved_only_server_refuses_a_policy_naming_another_algorithm() {
        let metrics = Metrics::new(Arc::default());
        let mut settings = Settings::defaults();
        settings.drbg.approved_only = true;
        settings.drbg.default_alg = Algorithm::Aes256Ctr;
        settings.drbg.enabled = vec![Algorithm::Aes256Ctr, Algorithm::HmacSha256];
        let mut web = CallerSettings::default();
        web.policy.algs = Some(vec![Algorithm::HmacSha256, Algorithm::ChaCha20]);
        settings.callers.insert("web".into(), web.clone());
        let Err(e) = Registry::build(&settings, &metrics, None) else { panic!("a non-approved algorithm") };
        let e = e.to_string();
        assert!(e.contains("callers.web.policy.algs") && e.contains("chacha20"), "{e}");
        web.policy.algs = Some(vec![Algorithm::HmacSha256, Algorithm::HashSha512]);
        settings.callers.insert("web".into(), web);
        assert!(Registry::build(&settings, &metrics, None).is_ok(), "disabled but approved: warned");
    }

    /// RFC 7235: the auth scheme is case-insensitive, and one or more spaces follow it.
    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        let r = registry();
        for value in ["Bearer k3y", "bearer k3y", "BEARER k3y", "BeArEr k3y", "Bearer  k3y"] {
            let caller = r
                .identify(Some(Key::Bearer(value.as_bytes())), None)
                .unwrap_or_else(|e| panic!("{value}: {e:?}"));
            assert_eq!(caller.name(), "web", "{value}");
        }
        for value in ["Basic k3y", "Bearerk3y", "Bearer", "Bearer ", "Bearer k3y2", "k3y", "Bearer\tk3y"] {
            let e = r.identify(Some(Key::Bearer(value.as_bytes())), None).unwrap_err();
            assert_eq!(e.code(), "unauthorized", "{value}");
        }
        assert_eq!(r.identify(None, None).unwrap_err().code(), "unauthorized");
    }
}
