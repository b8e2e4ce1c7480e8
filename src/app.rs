//! Builds the application from settings (self-tests, pool, listeners, state) and runs it
//! until a shutdown future completes: readiness off, drain, exit.
//!
//! A failed start-up self-test does not stop the process: the algorithm that failed is withheld
//! from the pool (every request for it is refused with 503 `selftest_failed`), the failure is
//! logged once and counted (`drbgd_startup_self_test_failures_total{alg}`), and readiness stays
//! false for the life of the process, `/readyz` naming the algorithm and the test.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;

use crate::beacon::{Beacon, Chain, Signer};
use crate::callers::Callers;
use crate::config::{ConfigSource, Settings};
use crate::drbg::entropy::{EntropySource, OsEntropy};
use crate::drbg::secret_mem::Protection;
use crate::drbg::selftest::{self, SelfTestError};
use crate::drbg::{Algorithm, Pool};
use crate::metrics::Metrics;
use crate::receipts::Receipts;
use crate::reload::{Reloader, Watched};
use crate::server::{Phase, ServeOptions, serve};
use crate::service::{Rules, Service};
use crate::state::{AppState, Inner, Readiness};
use crate::telemetry::request_id::ProcessRequestIds;
use crate::tls::ReloadableAcceptor;

/// Drain deadline of the admin listener, which stops after the API has drained.
const ADMIN_DRAIN: Duration = Duration::from_secs(2);

/// A built, bound, not yet running application.
pub struct App {
    tls: Option<Arc<ReloadableAcceptor>>,
    api: TcpListener,
    admin: TcpListener,
    state: AppState,
    /// Where the settings came from, read again to reload the callers (`None`: the settings
    /// the app was built with, and the keys file).
    source: Option<ConfigSource>,
}

impl App {
    /// Runs the self-tests, seeds the pool from the OS and binds both listeners. An algorithm
    /// whose self-test failed is withheld and keeps the app unready (see the module doc).
    ///
    /// # Errors
    /// An entropy source that cannot seed, invalid API key settings, a receipt or beacon key
    /// that cannot be read (or a beacon key that fails its self-test), or a listener that cannot
    /// bind. drbgd never starts serving in any of these cases.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        Self::build_with_entropy(settings, Arc::new(OsEntropy)).await
    }

    /// [`App::build`] with another entropy source (tests).
    ///
    /// # Errors
    /// See [`App::build`].
    pub async fn build_with_entropy(
        settings: Settings,
        entropy: Arc<dyn EntropySource>,
    ) -> anyhow::Result<Self> {
        settings.validate()?;
        // The process's rustls provider, for the configurations built without one named (the
        // Redis client's): AWS-LC's, as the listener's. Only this one is compiled in; named
        // here, a second one a dependency might enable some day cannot make rustls panic on
        // choosing. (Already installed by an earlier build in this process: kept.)
        let _ = tokio_rustls::rustls::crypto::aws_lc_rs::default_provider().install_default();
        let failures = start_up_self_tests();
        Self::build_tested(settings, entropy, failures).await
    }

    /// [`App::build_with_entropy`] once the self-tests have run, `failures` what they found: the
    /// algorithms named there are withheld from the pool, counted, and keep the app unready.
    async fn build_tested(
        settings: Settings,
        entropy: Arc<dyn EntropySource>,
        failures: Vec<SelfTestError>,
    ) -> anyhow::Result<Self> {
        let tls = ReloadableAcceptor::from_settings(&settings.tls)?;
        let mut pool_config = settings.pool_config();
        pool_config.withheld =
            Algorithm::ALL.into_iter().filter(|a| failures.iter().any(|f| f.alg == *a)).collect();
        let pool =
            Pool::new(&pool_config, entropy.clone()).context("cannot seed the generators from the OS")?;
        let mut prefix = [0u8; 8];
        entropy.fill(&mut prefix).context("cannot draw the request-id prefix from the OS")?;
        let request_ids = ProcessRequestIds::new(u64::from_le_bytes(prefix));
        warn_if_unprotected(pool.protection());
        let metrics = Arc::new(Metrics::new(pool.stats().clone()));
        let beacon = beacon_of(&settings.beacon, &metrics).await?;
        metrics.shards.set(pool.shard_count() as i64);
        metrics.approved_only.set(i64::from(settings.drbg.approved_only));
        for failure in &failures {
            metrics.startup_self_test_failures.with_label_values(&[failure.alg.name()]).inc();
        }
        let api = TcpListener::bind(settings.server.listen)
            .await
            .with_context(|| format!("cannot listen on {}", settings.server.listen))?;
        let admin = TcpListener::bind(settings.server.admin_listen)
            .await
            .with_context(|| format!("cannot listen on {}", settings.server.admin_listen))?;
        let pool = Arc::new(pool);
        let rules = Rules::from_settings(&settings);
        let receipts = Receipts::from_settings(&settings.receipts, settings.limits.max_count)?;
        let receipts_served = settings.receipts.enabled.then_some(settings.receipts.max_output_bytes);
        let openapi = serde_json::to_vec(&crate::http::openapi::document(
            &rules,
            settings.auth.enabled,
            receipts_served,
            beacon.is_some(),
            |route| settings.serves(route),
        ))
        .context("render the OpenAPI document")?;
        let service = Service::new(pool.clone(), metrics.clone(), rules);
        let tickets = match settings.tickets.enabled {
            true => {
                metrics.register_tickets();
                let series = metrics.tickets.clone();
                let opened =
                    crate::tickets::Tickets::open(&settings.tickets, &settings.results, &service, series)
                        .await;
                Some(Arc::new(opened.context("cannot open the tickets' store ([results])")?))
            }
            false => None,
        };
        let randomorg = match settings.randomorg.enabled {
            true => Some(Arc::new(
                crate::randomorg::RandomOrg::open(&settings.randomorg).context("[randomorg] signing_key")?,
            )),
            false => None,
        };
        let state = AppState::new(Inner {
            callers: Callers::from_settings(&settings, metrics.clone())?,
            receipts,
            service,
            pool,
            metrics,
            settings,
            readiness: Readiness { self_test_failures: failures, ..Readiness::default() },
            request_ids,
            openapi: openapi.into(),
            beacon,
            tickets,
            randomorg,
        });
        let passed = state.readiness.self_test_failures.is_empty();
        state.readiness.self_tests_passed.store(passed, Ordering::Release);
        Ok(App { tls, api, admin, state, source: None })
    }

    /// Reload the callers from `source` (the file and CLI flags the settings came from) rather
    /// than from the settings the app was built with.
    #[must_use]
    pub fn with_config_source(mut self, source: ConfigSource) -> Self {
        self.source = Some(source);
        self
    }

    /// Runs every reload (callers, receipt keys and TLS) at once: what SIGHUP does.
    pub fn reloader(&self) -> Reloader {
        Reloader::new(&self.watched(), self.state.metrics.reloads.clone())
    }

    /// Whether the API listener serves TLS.
    pub fn tls(&self) -> bool {
        self.tls.is_some()
    }

    /// The bound API address (port 0 resolved).
    pub fn api_addr(&self) -> SocketAddr {
        self.api.local_addr().expect("bound listener has an address")
    }

    /// The bound admin address.
    pub fn admin_addr(&self) -> SocketAddr {
        self.admin.local_addr().expect("bound listener has an address")
    }

    /// The shared state.
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serves until `shutdown` completes; then /readyz turns 503 at once, the listeners keep
    /// accepting for `server.shutdown_delay_ms` (endpoints and load balancers catch up), then
    /// the API stops accepting and drains in-flight requests within `server.drain_timeout_ms`,
    /// and the admin listener (still answering /readyz and /metrics during the drain) stops
    /// last.
    ///
    /// # Errors
    /// None today; the signature leaves room for listener failures.
    pub async fn run_until_stopped(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let s = &self.state.settings.server;
        let options = ServeOptions::of(s);
        let delay = Duration::from_millis(s.shutdown_delay_ms);
        if s.reload_interval_ms > 0 {
            let watched = self.watched();
            if !watched.is_empty() {
                let reloads = self.state.metrics.reloads.clone();
                tokio::spawn(crate::reload::watch(
                    watched,
                    Duration::from_millis(s.reload_interval_ms),
                    reloads,
                ));
            }
        }
        tokio::spawn(crate::memory::trim_when_idle(self.state.metrics.clone()));
        crate::vmgenid::start();
        // A shared quota store is heard from once before serving (within its deadline: an
        // unreachable one is a fallback, not a reason not to start), then kept current.
        self.state.callers.join_store().await;
        if let Some(tickets) = self.state.tickets.clone() {
            tickets.measure().await;
            tokio::spawn(async move { tickets.upkeep().await });
        }
        let follower = self.state.beacon.clone().filter(|b| b.follows()).map(|b| tokio::spawn(b.follow()));
        let store_keeper = {
            let state = self.state.clone();
            tokio::spawn(async move { state.callers.keep_store().await })
        };
        let (phase_tx, phase_rx) = tokio::sync::watch::channel(Phase::Serving);
        let state = self.state.clone();
        tokio::spawn(async move {
            shutdown.await;
            state.readiness.shutting_down.store(true, Ordering::Release);
            state.metrics.ready.set(0);
            tracing::info!(
                delay_ms = delay.as_millis() as u64,
                "shutting down: not ready; still accepting, asking connections to move"
            );
            let _ = phase_tx.send(Phase::Draining);
            tokio::time::sleep(delay).await;
            tracing::info!("draining");
            let _ = phase_tx.send(Phase::Stopped);
        });
        let api_router = crate::http::router(self.state.clone(), crate::grpc::router(self.state.clone()));
        let api = crate::http::service(&self.state, api_router);
        let admin_router = crate::admin::router(self.state.clone());
        let (admin_tx, admin_rx) = tokio::sync::watch::channel(Phase::Serving);
        // Admin requests are probes and scrapes: short, so a short drain of their own.
        let admin_options = ServeOptions {
            max_connection_age: None,
            drain_timeout: ADMIN_DRAIN.min(options.drain_timeout),
            ..options
        };
        let admin = tokio::spawn(serve(self.admin, admin_router, admin_options, None, admin_rx));
        let drained = serve(self.api, api, options, self.tls, phase_rx).await;
        store_keeper.abort();
        if let Some(follower) = follower {
            follower.abort();
        }
        self.state.callers.leave_store().await;
        let _ = admin_tx.send(Phase::Stopped);
        let _ = admin.await;
        tracing::info!(drained, "stopped");
        Ok(())
    }

    /// What reloads, and on which files' change: TLS (certificate, key, client CAs), the
    /// callers (the config file, the API keys file and the AWS secret files) and the receipt
    /// keys (the config file and the key files). A callers reload loads the settings
    /// again and takes `[callers]` from them (and the keys file's lines). A change of `[auth]`
    /// or `[tls]` refuses it (those never change by reload); a change of any other section
    /// needs a restart to apply, is warned of, and does not hold up `[callers]` and the keys.
    /// A receipts reload takes `[receipts] signing_keys` and reads the key files again.
    fn watched(&self) -> Vec<Watched> {
        let mut watched = Vec::new();
        if let Some(tls) = &self.tls {
            watched.push(tls.watched());
        }
        let settings = &self.state.settings;
        let fixed: Vec<_> = self
            .source
            .as_ref()
            .and_then(|s| s.file.clone())
            .into_iter()
            .chain(settings.api_keys_file())
            .collect();
        // The secret files of the callers in force: a reload may add, move or drop them.
        let callers = self.state.clone();
        let files: crate::reload::FilesFn = Arc::new(move || {
            fixed.iter().cloned().chain(callers.callers.registry().secret_files().iter().cloned()).collect()
        });
        let (state, source) = (self.state.clone(), self.source.clone());
        watched.push(Watched {
            what: "callers",
            loaded: crate::reload::fingerprint(&files()),
            files,
            reload: Arc::new(move || {
                // Read inside the reload lock: see `Callers::reload_from`.
                state.callers.reload_from(|| {
                    let fresh = match &source {
                        Some(source) => source.load()?,
                        None => state.settings.clone(),
                    };
                    callers_of(fresh, &state.settings)
                })
            }),
        });
        watched.push(self.watched_receipts());
        watched
    }

    /// The receipt keys' reload: on a change of the config file or of a key file in force (a
    /// key rotated in place), `[receipts] signing_keys` read again and the key files loaded.
    fn watched_receipts(&self) -> Watched {
        let config: Vec<_> = self.source.as_ref().and_then(|s| s.file.clone()).into_iter().collect();
        let state = self.state.clone();
        let files: crate::reload::FilesFn =
            Arc::new(move || config.iter().cloned().chain(state.receipts.files()).collect());
        let (state, source) = (self.state.clone(), self.source.clone());
        Watched {
            what: "receipts",
            loaded: crate::reload::fingerprint(&files()),
            files,
            reload: Arc::new(move || {
                state.receipts.reload_from(|| {
                    let fresh = match &source {
                        Some(source) => source.load()?,
                        None => state.settings.clone(),
                    };
                    Ok(fresh.receipts)
                })
            }),
        }
    }
}

/// The beacon `[beacon]` configures (`None` when off): its key read from its file (a file
/// others may read is warned of), self-tested (a known answer, then a pairwise check of the
/// key), kept in protected memory; its chain checked against `beacon.chain_hash`, and the
/// example key's chain logged as an error.
///
/// # Errors
/// The key file cannot be read or holds no key, the self-test fails, or the chain is not the
/// pinned one.
async fn beacon_of(
    settings: &crate::config::beacon::BeaconSettings,
    metrics: &Metrics,
) -> anyhow::Result<Option<Arc<Beacon>>> {
    if !settings.enabled {
        return Ok(None);
    }
    if settings.source == crate::config::beacon::BeaconSource::Drand {
        return followed_beacon(settings, metrics).await.map(Some);
    }
    let signer = beacon_signer(&settings.secret_key_file)?;
    crate::beacon::key::selftest(&signer)
        .map_err(|what| anyhow::anyhow!("beacon self-test failed ({what}); refusing to start"))?;
    let protection = signer.protection();
    if !protection.dontdump || !protection.locked {
        tracing::warn!(
            dontdump = protection.dontdump,
            locked = protection.locked,
            "the beacon's key page could not be both excluded from core dumps and locked in memory"
        );
    }
    let chain = Chain::of_signer(&signer, settings.chain_params());
    settings.check_chain_hash(chain.hash_hex())?;
    warn_if_example_key(&chain);
    if settings.chain_hash.is_empty() {
        tracing::warn!(
            chain_hash = chain.hash_hex(),
            "beacon.chain_hash is not pinned: a changed genesis_time or period_s with this key would \
             serve this chain's future rounds early; pin the hash logged here"
        );
    }
    tracing::info!(
        chain_hash = chain.hash_hex(),
        public_key = %const_hex::encode(chain.public_key()),
        period_s = settings.period_s,
        genesis_time = settings.genesis_time,
        "beacon on"
    );
    Ok(Some(Arc::new(Beacon::new(chain, signer))))
}

/// The beacon that follows the drand network `[beacon]` names: its upstreams asked for `/info`
/// once before serving (one naming the pinned chain is enough; none answering is not a reason
/// not to start, the follower asks again), then followed by [`Beacon::follow`] once serving.
///
/// # Errors
/// The CA file cannot be read, or every upstream answered and none named the pinned chain.
async fn followed_beacon(
    settings: &crate::config::beacon::BeaconSettings,
    metrics: &Metrics,
) -> anyhow::Result<Arc<Beacon>> {
    let pins = settings.pins().context("beacon.chain_hash or beacon.public_key (validated)")?;
    let ca = (!settings.ca_file.as_os_str().is_empty()).then_some(settings.ca_file.as_path());
    let tls = crate::tls_client::client_config(ca, "beacon.ca_file")?;
    metrics.register_beacon();
    let timeout = Duration::from_millis(settings.upstream_timeout_ms);
    let upstreams = crate::beacon::follow::Upstreams::new(
        &settings.upstream_bases(),
        pins,
        timeout,
        tls,
        settings.allow_http,
        metrics.beacon.clone(),
    );
    let beacon = Arc::new(Beacon::following(upstreams));
    match beacon.first_contact().await {
        Ok(true) => {
            let chain = beacon.chain().context("the chain, once found")?;
            tracing::info!(
                chain_hash = chain.hash_hex(),
                scheme = chain.scheme().id(),
                period_s = chain.schedule().period_s,
                genesis_time = chain.schedule().genesis_time,
                upstreams = settings.upstreams.len(),
                "beacon on: following a drand network"
            );
        }
        Ok(false) => tracing::warn!(
            chain_hash = settings.chain_hash,
            "beacon: no upstream answered; serving 503 on /beacon until one does (asked again in the background)"
        ),
        Err(_) => anyhow::bail!(
            "beacon.upstreams: every upstream answered, and none with the pinned chain {} (each is named in the log)",
            settings.chain_hash
        ),
    }
    Ok(beacon)
}

/// Logs at error level a chain whose key is the example key published with drbgd's source: its
/// every round, past and future, is anyone's to compute. Not refused: the example
/// configuration and CI serve it on purpose.
fn warn_if_example_key(chain: &Chain) {
    if const_hex::encode(chain.public_key()) == crate::beacon::key::EXAMPLE_PUBLIC_KEY {
        tracing::error!(
            chain_hash = chain.hash_hex(),
            "THE BEACON'S SECRET KEY IS PUBLIC: this is the example key (config/examples/beacon-example.key); \
             anyone can compute every round of this chain, past and future, and open any tlock ciphertext \
             made to it. Never serve it outside a laptop or a test: make a key with `drbgd beacon keygen`"
        );
    }
}

/// The beacon's key from its file (`beacon.secret_key_file`, read as [`crate::secret_file`]
/// reads); a file that others than its owner may read is warned of.
///
/// # Errors
/// The file cannot be read or holds no key.
pub fn beacon_signer(path: &std::path::Path) -> anyhow::Result<Signer> {
    let named = || format!("beacon.secret_key_file {}", path.display());
    let file = crate::secret_file::read(path).with_context(named)?;
    if file.open_to_others {
        tracing::warn!(
            file = %path.display(),
            "the beacon's secret key file may be read by others than its owner (chmod 600)"
        );
    }
    Signer::from_key_text(&file.text).with_context(named)
}

/// Runs every algorithm's self-tests (whether enabled or not: one that fails shows a fault in
/// the build or the CPU) and logs each failure once, at error level.
fn start_up_self_tests() -> Vec<SelfTestError> {
    let failures: Vec<SelfTestError> =
        Algorithm::ALL.into_iter().flat_map(|alg| selftest::run(alg).failures()).collect();
    for failure in &failures {
        tracing::error!(
            alg = failure.alg.name(),
            test = failure.what,
            "start-up self-test failed: the algorithm is not served, and /readyz answers 503 until a \
             restart passes the tests"
        );
    }
    failures
}

/// Warns of generator state pages the kernel would not protect.
fn warn_if_unprotected(protection: Protection) {
    if !protection.dontdump {
        tracing::warn!("generator state pages could not be excluded from core dumps (MADV_DONTDUMP)");
    }
    if !protection.locked {
        tracing::warn!(
            "generator state pages could not be locked in memory (mlock; raise RLIMIT_MEMLOCK): \
             they may be swapped"
        );
    }
}

/// The settings in force with the `[callers]` of `fresh`: only `[callers]` changes by reload;
/// everything else is what the process started with. `[auth]` and `[tls]` must not differ at
/// all (so an emptied or truncated file cannot turn auth off); other sections may, and wait for
/// a restart.
///
/// # Errors
/// `[auth]` or `[tls]` changed.
fn callers_of(fresh: Settings, running: &Settings) -> anyhow::Result<Settings> {
    // `[receipts]` has a reload of its own (`App::watched_receipts`), which says what of it
    // waits for a restart.
    let mut changed = changed_outside_callers(&fresh, running);
    changed.retain(|section| section != "receipts");
    let refused: Vec<&str> =
        changed.iter().map(String::as_str).filter(|s| ["auth", "tls"].contains(s)).collect();
    anyhow::ensure!(
        refused.is_empty(),
        "the configuration's [{}] changed; that needs a restart, so nothing was reloaded",
        refused.join("], [")
    );
    if !changed.is_empty() {
        tracing::warn!(
            sections = changed.join(","),
            "the configuration changed outside [callers]: [callers] and the keys file are reloaded, \
             the rest needs a restart"
        );
    }
    let mut settings = running.clone();
    settings.callers = fresh.callers;
    Ok(settings)
}

/// The top-level sections (`server`, `auth`, ...) in which `a` and `b` differ, `[callers]` left
/// out. A section that cannot be compared counts as changed.
fn changed_outside_callers(a: &Settings, b: &Settings) -> Vec<String> {
    let sections = |s: &Settings| match serde_json::to_value(s) {
        Ok(serde_json::Value::Object(mut map)) => {
            map.remove("callers");
            map
        }
        _ => serde_json::Map::new(),
    };
    let (a, b) = (sections(a), sections(b));
    let mut changed: Vec<String> =
        a.iter().filter(|(k, v)| b.get(*k) != Some(*v)).map(|(k, _)| k.clone()).collect();
    changed.extend(b.keys().filter(|k| !a.contains_key(*k)).cloned());
    if a.is_empty() || b.is_empty() {
        // Not serialisable (never, for these types): refuse rather than guess.
        changed.extend(["auth".to_string(), "tls".to_string()]);
    }
    changed.sort();
    changed.dedup();
    changed
}

#[cfg(test)]
mod tests {
    use tower::ServiceExt;

    use super::*;
    use serde_json::json;

    use crate::drbg::DrbgError;
    use crate::error::ApiError;
    use crate::service::{BitsRequest, Encoding};

    /// A flipped bit in HMAC_DRBG's state update, caught by the self-tests, leaves the app up
    /// but unready for good: `/readyz` names the algorithm and the failed tests, the algorithm
    /// is refused with `selftest_failed` (a stream too, before it opens), `/algorithms` lists
    /// it as not served, the failures are counted, and the others still serve.
    #[tokio::test]
    async fn a_failed_self_test_withholds_its_algorithm_and_keeps_the_app_unready() {
        let failures = selftest::mutation::mutated(Algorithm::HmacSha256).failures();
        let failed = failures.len();
        assert!(failures.iter().any(|f| f.what == "reseed"), "{failures:?}");
        let mut settings = Settings::defaults();
        settings.server.listen = "127.0.0.1:0".parse().unwrap();
        settings.server.admin_listen = "127.0.0.1:0".parse().unwrap();
        settings.drbg.shards = 1;
        let app = App::build_tested(settings, Arc::new(OsEntropy), failures).await.unwrap();
        let state = app.state().clone();
        assert!(!state.check_ready());
        let mut out = [0xAAu8; 32];
        let refused = state.pool.fill(Algorithm::HmacSha256, &mut out, false).unwrap_err();
        assert_eq!(refused, DrbgError::SelfTestFailed(Algorithm::HmacSha256));
        assert_eq!((ApiError::from(refused).code(), out), ("selftest_failed", [0u8; 32]));
        state.pool.fill(Algorithm::Aes256Ctr, &mut out, false).unwrap();
        let caller = state.callers.registry().anonymous().clone();
        let stream =
            |alg| BitsRequest::new(state.service.rules(), Some(1 << 20), alg, Encoding::Hex, true).unwrap();
        let opened = state.service.stream(&caller, stream(Some("hmac_sha256")), 4096);
        assert_eq!(opened.err().map(|e| e.code()), Some("selftest_failed"), "refused before any header");
        assert!(state.service.stream(&caller, stream(Some("aes256ctr")), 4096).is_ok());
        let listed = crate::http::meta::algorithms(&state);
        let listed = axum::body::to_bytes(listed.into_body(), usize::MAX).await.unwrap();
        let listed: serde_json::Value = serde_json::from_slice(&listed).unwrap();
        let entry = |name: &str| {
            let all = listed["algorithms"].as_array().unwrap();
            all.iter().find(|e| e["name"] == name).unwrap().clone()
        };
        let withheld = entry("hmac_sha256");
        assert_eq!(
            (&withheld["served"], &withheld["self_test"]),
            (&json!(false), &json!("failed")),
            "{withheld}"
        );
        assert_eq!(withheld["enabled"], json!(true), "still configured");
        let served = entry("hmac_sha512");
        assert_eq!((&served["served"], &served["self_test"]), (&json!(true), &json!("passed")), "{served}");
        let request = axum::http::Request::get("/readyz").body(axum::body::Body::empty()).unwrap();
        let response = crate::admin::router(state.clone()).oneshot(request).await.unwrap();
        assert_eq!(response.status(), axum::http::StatusCode::SERVICE_UNAVAILABLE);
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        let body = String::from_utf8(body.to_vec()).unwrap();
        assert!(body.contains(r#""code":"selftest_failed""#), "{body}");
        assert!(
            body.contains("hmac_sha256 (test: instantiate+generate), hmac_sha256 (test: reseed)"),
            "{body}"
        );
        let series = format!("drbgd_startup_self_test_failures_total{{alg=\"hmac_sha256\"}} {failed}");
        assert!(state.metrics.render().contains(&series), "{series}");
    }
}
