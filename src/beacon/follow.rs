//! The requests to a followed drand network's nodes or relays (`[beacon] upstreams`): their
//! `/{chainhash}/info` and `/{chainhash}/public/{round|latest}`, each checked by
//! [`super::upstream`] before anything is kept. The task that asks as rounds fall due is
//! [`super::Beacon::follow`]'s; this file holds the client and the upstreams' standing.
//!
//! - One HTTP/1.1 client (hyper's, with rustls: `tls_client.rs`'s roots), no redirects
//!   followed (a redirect could lead off the pinned scheme), `http://` only when
//!   `beacon.allow_http` says so, each request bounded by `beacon.upstream_timeout_ms` and its
//!   body by [`MAX_BODY`].
//! - Upstreams are asked for rounds in order, starting with the one that last answered well:
//!   one that serves a round that does not verify is logged and counted
//!   (`drbgd_beacon_upstream_rounds_total{outcome="invalid"}`) and passed over for the others;
//!   one that does not answer, or serves such a round to the follower, rests a while
//!   ([`rest_after`]). `/info` is asked of all at once: one whose `/info` names another chain is
//!   refused for good (by name, in the log, `outcome="refused"`; a 404 for the pinned chain is
//!   counted so too).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio_rustls::rustls;

use super::chain::Chain;
use super::clock::wall_clock;
use super::round::SignedRound;
use super::scheme::Verifier;
use super::upstream::{InfoError, Pins, check_info, check_round};

/// A followed drand network's series (registered by `metrics.rs` with `[beacon] source =
/// "drand"`).
#[derive(Debug, Clone)]
pub struct BeaconSeries {
    /// `drbgd_beacon_upstream_rounds_total{upstream,outcome}`: answers of each upstream (to
    /// `/info` and for rounds): `verified`, `invalid` (a round that does not verify, or ahead of
    /// the clock: passed over), `unavailable` (no answer, not a 200, or a malformed `/info`),
    /// `refused` (its `/info` is another chain's, or 404 for the pinned chain).
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
    /// Not asked for rounds before this (the monotonic clock).
    rest_until: std::sync::Mutex<Option<Instant>>,
}

/// The longest an upstream rests after failures in a row.
pub const MAX_REST: Duration = Duration::from_secs(30);

/// How long an upstream rests after `failures` in a row: a period (a second at least), doubled
/// for each failure before the last, at most [`MAX_REST`].
pub fn rest_after(failures: u32, period: Duration) -> Duration {
    let doublings = failures.saturating_sub(1).min(8);
    period.max(Duration::from_secs(1)).saturating_mul(1 << doublings).min(MAX_REST)
}

impl Upstream {
    /// The upstream at `base` (normalized with the settings: `BeaconSettings::upstream_bases`).
    fn new(base: &str) -> Self {
        Upstream {
            base: base.to_string(),
            refused: AtomicBool::new(false),
            failures: AtomicU32::new(0),
            rest_until: std::sync::Mutex::new(None),
        }
    }

    fn until(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.rest_until.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn resting(&self) -> bool {
        self.until().is_some_and(|until| Instant::now() < until)
    }

    /// Rests [`rest_after`] its failures in a row, this one included.
    fn rest(&self, period: Duration) {
        let failures = self.failures.fetch_add(1, Ordering::Relaxed).saturating_add(1);
        *self.until() = Some(Instant::now() + rest_after(failures, period));
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
    /// The upstreams at `bases` (validated, normalized URLs without a final `/`), following the
    /// chain `pins` name.
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
    /// over those resting; `None` if none does (each failure logged and counted). `follower`:
    /// asked by the task that follows the network, whose failures make an upstream rest: one
    /// that did not answer, or served a round that does not verify, is not asked for a period,
    /// twice as long after each further failure up to [`MAX_REST`], so that a dead or lying
    /// upstream costs one timeout a rest, not one each time. A client's request for an old
    /// round (`follower` false) makes none rest, so no client can bench the follower's
    /// upstreams.
    pub async fn round(&self, chain: &Chain, round: Option<u64>, follower: bool) -> Option<SignedRound> {
        let verifier = self.verifier.get()?;
        let which = round.map_or_else(|| "latest".to_string(), |r| r.to_string());
        let path = format!("/{}/public/{which}", chain.hash_hex());
        let schedule = chain.schedule();
        let period = Duration::from_secs(u64::from(schedule.period_s));
        let first = self.preferred.load(Ordering::Relaxed);
        let n = self.list.len();
        for i in (0..n).map(|k| (first + k) % n) {
            let upstream = &self.list[i];
            if upstream.refused.load(Ordering::Relaxed) || upstream.resting() {
                continue;
            }
            let fetched = self.get(&upstream.base, &path).await;
            // The clock read when the answer came (earlier upstreams may have taken seconds).
            let not_after = schedule.round_at(wall_clock()).saturating_add(1);
            let outcome = match fetched {
                Fetched::Body(body) => check_round(&body, chain, verifier, round, Some(not_after))
                    .map_err(|e| ("invalid", e.to_string())),
                Fetched::Status(status) => {
                    // An answer: the upstream is alive.
                    upstream.failures.store(0, Ordering::Relaxed);
                    Err(("unavailable", format!("HTTP {status}")))
                }
                Fetched::Failed(why) => {
                    if follower {
                        upstream.rest(period);
                    }
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
                        if follower {
                            upstream.rest(period);
                        }
                        tracing::error!(upstream = %upstream.base, round = %which, why, "beacon upstream served a round that does not verify (or ahead of the clock): passed over");
                    } else {
                        tracing::debug!(upstream = %upstream.base, round = %which, why, "beacon upstream: no round");
                    }
                }
            }
        }
        None
    }

    /// The bound of one request to an upstream.
    pub fn timeout(&self) -> Duration {
        self.timeout
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rests_double_from_a_period_to_thirty_seconds() {
        let quicknet = Duration::from_secs(3);
        let rests: Vec<u64> = (1..=6).map(|f| rest_after(f, quicknet).as_secs()).collect();
        assert_eq!(rests, [3, 6, 12, 24, 30, 30]);
        // A sub-second period rests a second at least; a long one, at most the cap.
        assert_eq!(rest_after(1, Duration::from_millis(100)), Duration::from_secs(1));
        assert_eq!(rest_after(1, Duration::from_secs(30 * 60)), MAX_REST);
        assert_eq!(rest_after(u32::MAX, quicknet), MAX_REST);
    }

    #[test]
    fn an_upstream_rests_after_a_failure_and_not_before() {
        let upstream = Upstream::new("https://relay.example");
        assert!(!upstream.resting());
        upstream.rest(Duration::from_secs(3));
        assert!(upstream.resting());
        assert_eq!(upstream.failures.load(Ordering::Relaxed), 1);
        upstream.rest(Duration::from_secs(3));
        let left = upstream.until().unwrap().saturating_duration_since(Instant::now());
        assert!(left > Duration::from_secs(5) && left <= Duration::from_secs(6), "{left:?}");
    }
}
