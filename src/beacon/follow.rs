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
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
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
use super::upstream::{InfoError, Pins, check_info, check_round};

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
    /// Every upstream answered, and each named another chain or does not serve the pinned one
    /// (404): the pins or the upstreams are wrong.
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
    /// Failures in a row (no answer, or a round that does not verify).
    failures: AtomicU32,
    /// Not asked for rounds before this (Unix milliseconds).
    rest_until_ms: AtomicU64,
}

/// The longest an upstream rests after failures in a row.
pub const MAX_REST: Duration = Duration::from_secs(30);

impl Upstream {
    /// `base` as the URL parser writes it (validated with the settings), without a final `/`.
    fn new(base: &str) -> Self {
        let normalized = url::Url::parse(base).map_or_else(|_| base.to_string(), String::from);
        Upstream {
            base: normalized.trim_end_matches('/').to_string(),
            refused: AtomicBool::new(false),
            failures: AtomicU32::new(0),
            rest_until_ms: AtomicU64::new(0),
        }
    }

    fn now_ms() -> u64 {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        u64::try_from(now.as_millis()).unwrap_or(u64::MAX)
    }

    fn resting(&self) -> bool {
        self.rest_until_ms.load(Ordering::Relaxed) > Self::now_ms()
    }

    /// Rests `period`, doubled for each failure in a row before this one, at most [`MAX_REST`].
    fn rest(&self, period: Duration) {
        let failures = self.failures.fetch_add(1, Ordering::Relaxed).min(8);
        let rest = period.max(Duration::from_secs(1)).saturating_mul(1 << failures).min(MAX_REST);
        let until = Self::now_ms().saturating_add(u64::try_from(rest.as_millis()).unwrap_or(u64::MAX));
        self.rest_until_ms.store(until, Ordering::Relaxed);
    }
}

impl std::fmt::Debug for Upstreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let bases: Vec<&str> = self.list.iter().map(|u| u.base.as_str()).collect();
        f.debug_struct("Upstreams").field("upstreams", &bases).finish_non_exhaustive()
    }
}

/// How one request went.
enum Fetched {
    /// 200, and its body.
    Body(Bytes),
    /// Another status (the round not out yet, a chain not served).
    Status(u16),
    /// No answer (refused, reset, past the timeout, a body over [`MAX_BODY`]).
    Failed(String),
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
        let list: Vec<Upstream> = bases.iter().map(|b| Upstream::new(b)).collect();
        // -1 until the chain is known (`Beacon::follow` sets it once it is).
        series.lag.set(-1);
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
            let uri = uri.parse().map_err(|e| format!("{e}"))?;
            let response = self.client.get(uri).await.map_err(|e| causes(&e))?;
            if response.status() != hyper::StatusCode::OK {
                return Ok(Err(response.status().as_u16()));
            }
            let body =
                Limited::new(response.into_body(), MAX_BODY).collect().await.map_err(|e| format!("{e}"))?;
            Ok(Ok(body.to_bytes()))
        };
        match tokio::time::timeout(self.timeout, request).await {
            Ok(Ok(Ok(body))) => Fetched::Body(body),
            Ok(Ok(Err(status))) => Fetched::Status(status),
            Ok(Err(why)) => Fetched::Failed(why),
            Err(_) => Fetched::Failed(format!("no answer within {} ms", self.timeout.as_millis())),
        }
    }

    /// Asks every upstream not refused for `/info`, all at once (one timeout in all, however
    /// many there are; see [`InfoOutcome`]). One whose `/info` names another chain (another key,
    /// or values that make another chain hash) is logged by name and refused for good; one that
    /// does not serve this chain (404) counts against start-up but is asked again later; one
    /// that answers something else, or nothing, is down. The first matching one's chain is the
    /// one followed, its key kept for [`Upstreams::round`].
    pub async fn info(&self) -> InfoOutcome {
        let path = format!("/{}/info", const_hex::encode(self.pins.chain_hash));
        let asked: Vec<&Upstream> = self.list.iter().filter(|u| !u.refused.load(Ordering::Relaxed)).collect();
        let answers = futures_util::future::join_all(asked.iter().map(|u| self.get(&u.base, &path))).await;
        let (mut found, mut down) = (None, false);
        for (upstream, answer) in asked.into_iter().zip(answers) {
            let label =
                |outcome: &str| self.series.rounds.with_label_values(&[&upstream.base, outcome]).inc();
            let body = match answer {
                Fetched::Body(body) => body,
                Fetched::Status(404) => {
                    tracing::error!(upstream = %upstream.base, "beacon upstream does not serve the pinned chain (404 for its /info)");
                    label("refused");
                    continue;
                }
                Fetched::Status(status) => {
                    tracing::warn!(upstream = %upstream.base, status, "beacon upstream: no chain info");
                    label("unavailable");
                    down = true;
                    continue;
                }
                Fetched::Failed(why) => {
                    tracing::warn!(upstream = %upstream.base, why, "beacon upstream: no chain info");
                    label("unavailable");
                    down = true;
                    continue;
                }
            };
            match check_info(&body, &self.pins) {
                Ok((chain, verifier)) => {
                    let _ = self.verifier.set(verifier);
                    found.get_or_insert(chain);
                }
                Err(why @ InfoError::Malformed(_)) => {
                    tracing::warn!(upstream = %upstream.base, %why, "beacon upstream: no chain info");
                    label("unavailable");
                    down = true;
                }
                Err(why) => {
                    tracing::error!(upstream = %upstream.base, %why, "beacon upstream refused: its /info is not the pinned chain's");
                    upstream.refused.store(true, Ordering::Relaxed);
                    label("refused");
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
    /// that verifies and is not ahead of the clock, starting with the preferred one and passing
    /// over those resting; `None` if none does (each failure logged and counted). An upstream
    /// that did not answer, or served a round that does not verify, rests (is not asked) for
    /// a period, twice as long after each further failure up to [`MAX_REST`], so that a dead
    /// or lying upstream costs one timeout a rest, not one each time.
    pub async fn round(&self, chain: &Chain, round: Option<u64>) -> Option<SignedRound> {
        let verifier = self.verifier.get()?;
        let which = round.map_or_else(|| "latest".to_string(), |r| r.to_string());
        let path = format!("/{}/public/{which}", chain.hash_hex());
        let schedule = chain.schedule();
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let not_after = schedule.round_at(now).saturating_add(1);
        let period = Duration::from_secs(u64::from(schedule.period_s));
        let first = self.preferred.load(Ordering::Relaxed);
        let n = self.list.len();
        for i in (0..n).map(|k| (first + k) % n) {
            let upstream = &self.list[i];
            if upstream.refused.load(Ordering::Relaxed) || upstream.resting() {
                continue;
            }
            let outcome = match self.get(&upstream.base, &path).await {
                Fetched::Body(body) => check_round(&body, verifier, round, Some(not_after))
                    .map_err(|e| ("invalid", e.to_string())),
                Fetched::Status(status) => Err(("unavailable", format!("HTTP {status}"))),
                Fetched::Failed(why) => {
                    upstream.rest(period);
                    Err(("unavailable", why))
                }
            };
            match outcome {
                Ok(signed) => {
                    self.series.rounds.with_label_values(&[&upstream.base, "verified"]).inc();
                    upstream.failures.store(0, Ordering::Relaxed);
                    self.preferred.store(i, Ordering::Relaxed);
                    return Some(signed);
                }
                Err((kind, why)) => {
                    self.series.rounds.with_label_values(&[&upstream.base, kind]).inc();
                    if kind == "invalid" {
                        upstream.rest(period);
                        tracing::error!(upstream = %upstream.base, round = %which, why, "beacon upstream served a round that does not verify (or ahead of the clock): passed over");
                    } else {
                        tracing::debug!(upstream = %upstream.base, round = %which, why, "beacon upstream: no round");
                    }
                }
            }
        }
        None
    }
}

/// An error and its causes, `: `-separated (hyper's own message is only "client error
/// (Connect)"; the cause says which: refused, no route, a certificate not trusted...).
fn causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
