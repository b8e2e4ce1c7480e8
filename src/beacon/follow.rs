//! The requests to a followed drand network's nodes or relays (`[beacon] upstreams`): their
//! `/{chainhash}/info` and `/{chainhash}/public/{round|latest}`, each checked by
//! [`super::upstream`] before anything is kept. The task that asks as rounds fall due is
//! [`super::Beacon::follow`]'s; this file holds the client and the upstreams' standing.
//!
//! - One HTTP/1.1 client (hyper's, with rustls: `tls_client.rs`'s roots), no redirects
//!   followed (a redirect could lead off the pinned scheme), `http://` only when
//!   `beacon.allow_http` says so, each request bounded by `beacon.upstream_timeout_ms` and its
//!   body by [`MAX_BODY`].
//! - Upstreams are asked in order, starting with the one that last answered well: one that
//!   serves an invalid round (or `/info` of another chain) is logged and counted
//!   (`drbgd_beacon_upstream_rounds_total{outcome="invalid"}`) and passed over for the others;
//!   one whose `/info` names another chain is refused for good (by name, in the log).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio_rustls::rustls;

use super::chain::Chain;
use super::round::SignedRound;
use super::scheme::Verifier;
use super::upstream::{Pins, check_info, check_round};

/// A followed drand network's series (registered by `metrics.rs` with `[beacon] source =
/// "drand"`).
#[derive(Debug, Clone)]
pub struct BeaconSeries {
    /// `drbgd_beacon_upstream_rounds_total{upstream,outcome}`: answers of each upstream (to
    /// `/info` and for rounds): `verified`, `invalid` (a round that does not verify: passed
    /// over), `unavailable` (no answer, or not a 200), `refused` (its `/info` is another
    /// chain's).
    pub rounds: prometheus::IntCounterVec,
    /// `drbgd_beacon_latest_round`: the latest round verified.
    pub latest: prometheus::IntGauge,
    /// `drbgd_beacon_lag_rounds`: the clock's round less the latest verified.
    pub lag: prometheus::IntGauge,
}

impl BeaconSeries {
    /// The series, not registered.
    ///
    /// # Panics
    /// Never: the names and labels are constants prometheus accepts.
    pub fn new() -> Self {
        let opts = |name: &str, help: &str| prometheus::Opts::new(name, help).namespace("drbgd");
        BeaconSeries {
            rounds: prometheus::IntCounterVec::new(
                opts(
                    "beacon_upstream_rounds_total",
                    "Answers of a followed drand network's upstreams: verified, invalid (does not verify), unavailable, refused (another chain).",
                ),
                &["upstream", "outcome"],
            )
            .expect("a valid counter"),
            latest: prometheus::IntGauge::with_opts(opts(
                "beacon_latest_round",
                "The latest round of the followed drand network verified.",
            ))
            .expect("a valid gauge"),
            lag: prometheus::IntGauge::with_opts(opts(
                "beacon_lag_rounds",
                "Rounds the followed drand network's latest verified round is behind the clock.",
            ))
            .expect("a valid gauge"),
        }
    }
}

impl Default for BeaconSeries {
    fn default() -> Self {
        Self::new()
    }
}

/// The largest body read from an upstream: a round is under 400 bytes, `/info` under 600.
pub const MAX_BODY: usize = 16 * 1024;

/// What asking every upstream for `/info` found.
#[derive(Debug)]
pub enum InfoOutcome {
    /// One named the pinned chain (the others may be down, or refused).
    Found(Box<Chain>),
    /// None answered with a matching `/info`, and some did not answer at all: asked again later.
    Down,
    /// Every upstream answered, and each named another chain (or none verifies): the pins or
    /// the upstreams are wrong.
    AllRefused,
}

/// The upstreams and the client that asks them (see the module documentation).
pub struct Upstreams {
    client: Client<HttpsConnector<HttpConnector>, Empty<Bytes>>,
    list: Vec<Upstream>,
    pins: Pins,
    timeout: Duration,
    /// The chain's key, once an upstream's `/info` matched the pins.
    verifier: OnceLock<Verifier>,
    /// The upstream that last answered well, asked first.
    preferred: AtomicUsize,
    series: BeaconSeries,
}

struct Upstream {
    /// The base URL, no trailing slash.
    base: String,
    /// Its `/info` named another chain: never asked again.
    refused: AtomicBool,
}

impl std::fmt::Debug for Upstreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let bases: Vec<&str> = self.list.iter().map(|u| u.base.as_str()).collect();
        f.debug_struct("Upstreams").field("upstreams", &bases).finish_non_exhaustive()
    }
}

/// How one request went.
enum Fetched {
    Body(Bytes),
    /// No answer, or not a 200 (the round not out yet, the node down).
    Unavailable(String),
}

impl Upstreams {
    /// The upstreams at `bases` (validated URLs), following the chain `pins` name.
    pub fn new(
        bases: &[String],
        pins: Pins,
        timeout: Duration,
        tls: rustls::ClientConfig,
        allow_http: bool,
        series: BeaconSeries,
    ) -> Self {
        let builder = hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls);
        let builder = if allow_http { builder.https_or_http() } else { builder.https_only() };
        let connector = builder.enable_http1().build();
        let client = Client::builder(TokioExecutor::new()).build(connector);
        let list: Vec<Upstream> = bases
            .iter()
            .map(|b| Upstream { base: b.trim_end_matches('/').to_string(), refused: AtomicBool::new(false) })
            .collect();
        // Every upstream's series from the start, at 0.
        for upstream in &list {
            for outcome in ["verified", "invalid", "unavailable", "refused"] {
                series.rounds.with_label_values(&[&upstream.base, outcome]);
            }
        }
        Upstreams {
            client,
            list,
            pins,
            timeout,
            verifier: OnceLock::new(),
            preferred: AtomicUsize::new(0),
            series,
        }
    }

    /// The metrics of the network followed.
    pub fn series(&self) -> &BeaconSeries {
        &self.series
    }

    async fn get(&self, base: &str, path: &str) -> Fetched {
        let uri = format!("{base}{path}");
        let request = async {
            let response = self
                .client
                .get(uri.parse().map_err(|e| format!("{e}"))?)
                .await
                .map_err(|e| format!("{e}"))?;
            if response.status() != hyper::StatusCode::OK {
                return Err(format!("HTTP {}", response.status().as_u16()));
            }
            let body =
                Limited::new(response.into_body(), MAX_BODY).collect().await.map_err(|e| format!("{e}"))?;
            Ok(body.to_bytes())
        };
        match tokio::time::timeout(self.timeout, request).await {
            Ok(Ok(body)) => Fetched::Body(body),
            Ok(Err(why)) => Fetched::Unavailable(why),
            Err(_) => Fetched::Unavailable(format!("no answer within {} ms", self.timeout.as_millis())),
        }
    }

    /// Asks every upstream not refused for `/info` (see [`InfoOutcome`]): one that names
    /// another chain is logged by name and refused for good. The first matching one's chain
    /// is the one followed, its key kept for [`Upstreams::round`].
    pub async fn info(&self) -> InfoOutcome {
        let path = format!("/{}/info", const_hex::encode(self.pins.chain_hash));
        let (mut found, mut down) = (None, false);
        for upstream in self.list.iter().filter(|u| !u.refused.load(Ordering::Relaxed)) {
            let body = match self.get(&upstream.base, &path).await {
                Fetched::Body(body) => body,
                Fetched::Unavailable(why) => {
                    tracing::warn!(upstream = %upstream.base, why, "beacon upstream: no chain info");
                    self.series.rounds.with_label_values(&[&upstream.base, "unavailable"]).inc();
                    down = true;
                    continue;
                }
            };
            match check_info(&body, &self.pins) {
                Ok((chain, verifier)) => {
                    let _ = self.verifier.set(verifier);
                    found.get_or_insert(chain);
                }
                Err(why) => {
                    tracing::error!(upstream = %upstream.base, %why, "beacon upstream refused: its /info is not the pinned chain's");
                    upstream.refused.store(true, Ordering::Relaxed);
                    self.series.rounds.with_label_values(&[&upstream.base, "refused"]).inc();
                }
            }
        }
        match (found, down) {
            (Some(chain), _) => InfoOutcome::Found(Box::new(chain)),
            (None, true) => InfoOutcome::Down,
            (None, false) => InfoOutcome::AllRefused,
        }
    }

    /// Round `round` (`None`: the latest) of `chain` from the first upstream that serves one
    /// that verifies, starting with the preferred one; `None` if none does (each failure logged
    /// and counted).
    pub async fn round(&self, chain: &Chain, round: Option<u64>) -> Option<SignedRound> {
        let verifier = self.verifier.get()?;
        let which = round.map_or_else(|| "latest".to_string(), |r| r.to_string());
        let path = format!("/{}/public/{which}", chain.hash_hex());
        let first = self.preferred.load(Ordering::Relaxed);
        let n = self.list.len();
        for i in (0..n).map(|k| (first + k) % n) {
            let upstream = &self.list[i];
            if upstream.refused.load(Ordering::Relaxed) {
                continue;
            }
            let outcome = match self.get(&upstream.base, &path).await {
                Fetched::Body(body) => {
                    check_round(&body, verifier, round).map_err(|e| ("invalid", e.to_string()))
                }
                Fetched::Unavailable(why) => Err(("unavailable", why)),
            };
            match outcome {
                Ok(signed) => {
                    self.series.rounds.with_label_values(&[&upstream.base, "verified"]).inc();
                    self.preferred.store(i, Ordering::Relaxed);
                    return Some(signed);
                }
                Err((kind, why)) => {
                    self.series.rounds.with_label_values(&[&upstream.base, kind]).inc();
                    if kind == "invalid" {
                        tracing::error!(upstream = %upstream.base, round = %which, why, "beacon upstream served a round that does not verify: passed over");
                    } else {
                        tracing::debug!(upstream = %upstream.base, round = %which, why, "beacon upstream: no round");
                    }
                }
            }
        }
        None
    }
}
