//! Who is at the other end, for requests that carry no credentials: the connection's peer
//! (its address, and the one request of its own whose proof is still in its body), the
//! client's address behind a trusted proxy (`X-Forwarded-For`), and the per-peer limits every
//! request without credentials is held to (places in progress and a token bucket per peer),
//! kept in a table of bounded size.
//!
//! A peer is an IPv4 address, or an IPv6 /64: one host or site is given a whole /64, so
//! counting its addresses one by one would let it take any number of shares.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::http::HeaderMap;
use ipnet::IpNet;
use tokio::time::Instant;

use crate::error::ApiError;
pub use crate::peer_key::PeerKey;

/// One connection's peer, put on each of its requests by the network layer.
#[derive(Debug)]
pub struct Peer {
    /// The socket's remote address (`None` over a transport without one: the fuzz targets'
    /// in-memory connections).
    pub addr: Option<IpAddr>,
    /// Signed requests of this connection reading their bodies (see [`Peer::signed`]).
    signed: AtomicUsize,
}

/// Signed requests one connection may have reading their bodies at once: HTTP/1 has one at a
/// time anyway; an HTTP/2 client making a few calls at once on one connection (as Go's and
/// Java's SDKs may) is not refused for it.
pub const SIGNED_PER_CONNECTION: usize = 4;

impl Peer {
    /// The peer at `addr`, canonical: an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, how a
    /// dual-stack listener sees an IPv4 client) is its IPv4 address, for every comparison,
    /// key, log and audit line after it.
    pub fn new(addr: Option<IpAddr>) -> Peer {
        Peer { addr: addr.map(|a| a.to_canonical()), signed: AtomicUsize::new(0) }
    }

    /// One of the connection's [`SIGNED_PER_CONNECTION`] places for a request whose credential
    /// is in its body (SigV4's), while that body is read; `None` when they are taken. So
    /// unverified claims hold no place that verified callers on other connections share, and
    /// the bodies they hold in memory number at most that many per connection.
    pub fn signed(self: &Arc<Self>) -> Option<SignedPlace> {
        self.signed
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < SIGNED_PER_CONNECTION).then_some(n + 1)
            })
            .ok()
            .map(|_| SignedPlace(self.clone()))
    }
}

/// A connection's place for a signed request's body, given back when dropped.
#[derive(Debug)]
pub struct SignedPlace(Arc<Peer>);

impl Drop for SignedPlace {
    fn drop(&mut self) {
        self.0.signed.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The per-peer limits of requests without credentials (`[server] peer_*`).
#[derive(Debug, Clone)]
pub struct PeerLimits {
    /// Requests of one peer in progress at once.
    pub max_in_flight: u32,
    /// Public streams of one peer open at once (a health `Watch`, a reflection session),
    /// counted apart from its other requests, so that streams held open never take its health
    /// checks' places.
    pub max_streams: u32,
    /// Requests one peer may start per second, on average...
    pub requests_per_second: f64,
    /// ...and at once after a pause.
    pub burst: f64,
    /// Peers tracked at once: the table's bound.
    pub table_size: usize,
}

/// The client's address: the peer's own, or, when the peer is a trusted proxy, the last
/// address of `X-Forwarded-For` (all its fields, in order) that is not one of the trusted
/// proxies, as proxies append the address they received from. A field that is not an
/// address stops the walk at the proxy that wrote it (what lies before it is the client's
/// to forge). Without a trusted proxy every client behind a load balancer is one peer. The
/// addresses compared are canonical where they come in (an IPv4-mapped IPv6 address is its
/// IPv4 address): the peer's in [`Peer::new`], the forwarded ones here, the trusted networks
/// in `ServerSettings::trusted_proxy_nets` ([`crate::peer_key::canonical_net`]).
pub fn client_addr(peer: Option<IpAddr>, headers: &HeaderMap, trusted: &[IpNet]) -> Option<IpAddr> {
    let trusts = |addr: &IpAddr| trusted.iter().any(|net| net.contains(addr));
    let mut client = peer?;
    if !trusts(&client) {
        return Some(client);
    }
    let fields = headers.get_all("x-forwarded-for").iter().flat_map(|v| v.as_bytes().split(|b| *b == b','));
    for field in fields.rev() {
        match std::str::from_utf8(field).ok().and_then(parse_forwarded) {
            Some(addr) => {
                client = addr;
                if !trusts(&addr) {
                    break;
                }
            }
            None => break,
        }
    }
    Some(client)
}

/// One `X-Forwarded-For` field: an address, IPv6 possibly in brackets, IPv4 possibly with a
/// port (some proxies append one).
fn parse_forwarded(field: &str) -> Option<IpAddr> {
    let field = field.trim();
    let addr = if let Ok(addr) = field.parse::<IpAddr>() {
        Some(addr)
    } else if let Some(inner) = field.strip_prefix('[') {
        inner.split_once(']').and_then(|(addr, _)| addr.parse().ok())
    } else {
        field.parse::<std::net::SocketAddr>().ok().map(|s| s.ip())
    };
    addr.map(|a| a.to_canonical())
}

/// The per-peer counts, bounded: at most `table_size` peers, an idle one (nothing in
/// progress, its bucket full again) forgotten when room is needed.
#[derive(Debug)]
pub struct PeerTable {
    limits: PeerLimits,
    peers: Mutex<Peers>,
}

/// The table proper, and when it was last swept for idle peers.
#[derive(Debug, Default)]
struct Peers {
    entries: HashMap<PeerKey, Entry>,
    swept: Option<Instant>,
}

/// How often a full table is swept for idle peers at most: between sweeps a newcomer to a full
/// table is refused without a scan, so a flood of new addresses costs one scan a second.
const SWEEP_INTERVAL: Duration = Duration::from_secs(1);

#[derive(Debug)]
struct Entry {
    in_flight: u32,
    tokens: f64,
    at: Instant,
}

impl Entry {
    fn refill(&mut self, limits: &PeerLimits, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * limits.requests_per_second).min(limits.burst);
        self.at = self.at.max(now);
    }

    fn idle(&self, limits: &PeerLimits, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.in_flight == 0 && self.tokens + elapsed * limits.requests_per_second >= limits.burst
    }
}

/// One request's place in its peer's count, given back when dropped.
#[derive(Debug)]
pub struct PeerPlace {
    table: Arc<PeerTable>,
    key: PeerKey,
}

impl PeerPlace {
    /// The peer it counts for.
    pub fn key(&self) -> PeerKey {
        self.key
    }
}

impl Drop for PeerPlace {
    fn drop(&mut self) {
        let mut peers = self.table.peers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = peers.entries.get_mut(&self.key) {
            entry.in_flight = entry.in_flight.saturating_sub(1);
        }
    }
}

impl PeerTable {
    /// An empty table with `limits`.
    pub fn new(limits: PeerLimits) -> Arc<PeerTable> {
        Arc::new(PeerTable { limits, peers: Mutex::default() })
    }

    /// A place for one request of `key` as of `now`, and a token of its bucket.
    ///
    /// # Errors
    /// 429 `peer_concurrency_limited` (its places are all taken) or `peer_rate_limited` (its
    /// bucket is empty), with the seconds until a retry can pass; 503 `overloaded` when the
    /// table is full of peers that are all busy.
    pub fn enter(self: &Arc<Self>, key: PeerKey, now: Instant) -> Result<PeerPlace, ApiError> {
        let limits = &self.limits;
        let mut guard = self.peers.lock().unwrap_or_else(PoisonError::into_inner);
        let peers = &mut *guard;
        if !peers.entries.contains_key(&key) && peers.entries.len() >= limits.table_size {
            // Forget every idle peer at once, at most once per SWEEP_INTERVAL.
            if peers.swept.is_some_and(|at| now.saturating_duration_since(at) < SWEEP_INTERVAL) {
                return Err(ApiError::Overloaded);
            }
            peers.swept = Some(now);
            peers.entries.retain(|_, entry| !entry.idle(limits, now));
            if peers.entries.len() >= limits.table_size {
                return Err(ApiError::Overloaded);
            }
        }
        let max_in_flight = if key.is_stream() { limits.max_streams } else { limits.max_in_flight };
        let entry = peers.entries.entry(key).or_insert(Entry { in_flight: 0, tokens: limits.burst, at: now });
        entry.refill(limits, now);
        if entry.in_flight >= max_in_flight {
            return Err(ApiError::rate_limited(
                "peer_concurrency_limited",
                1,
                format!(
                    "this address has {max_in_flight} requests without credentials in progress, its most"
                ),
            ));
        }
        if entry.tokens < 1.0 {
            let wait = (1.0 - entry.tokens) / limits.requests_per_second;
            return Err(ApiError::rate_limited(
                "peer_rate_limited",
                wait.clamp(1.0, 86_400.0).ceil() as u64,
                format!(
                    "this address is over its rate of requests without credentials ({}/s)",
                    limits.requests_per_second
                ),
            ));
        }
        entry.tokens -= 1.0;
        entry.in_flight += 1;
        Ok(PeerPlace { table: self.clone(), key })
    }

    /// Peers tracked.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.peers.lock().unwrap_or_else(PoisonError::into_inner).entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_in_flight: u32, rate: f64, burst: f64, table_size: usize) -> PeerLimits {
        PeerLimits { max_in_flight, max_streams: 2, requests_per_second: rate, burst, table_size }
    }

    fn key(s: &str) -> PeerKey {
        PeerKey::of(Some(s.parse().unwrap()))
    }

    #[test]
    fn an_ipv6_slash_64_is_one_peer_and_a_mapped_ipv4_is_its_ipv4() {
        assert_eq!(key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff::9"));
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_eq!(key("::ffff:192.0.2.7"), key("192.0.2.7"));
        assert_ne!(key("192.0.2.7"), key("192.0.2.8"));
    }

    #[test]
    fn places_and_rate_are_per_peer() {
        let table = PeerTable::new(limits(2, 1.0, 3.0, 16));
        let now = Instant::now();
        let a1 = table.enter(key("127.0.0.1"), now).unwrap();
        let _a2 = table.enter(key("127.0.0.1"), now).unwrap();
        let refused = table.enter(key("127.0.0.1"), now).unwrap_err();
        assert_eq!(refused.code(), "peer_concurrency_limited");
        // Another peer is untouched.
        let _b = table.enter(key("127.0.0.2"), now).unwrap();
        drop(a1);
        // A place back, one token left of three...
        let _a3 = table.enter(key("127.0.0.1"), now).unwrap();
        drop(_a3);
        let refused = table.enter(key("127.0.0.1"), now).unwrap_err();
        assert_eq!(refused.code(), "peer_rate_limited");
        assert_eq!(refused.retry_after(), Some(1));
        // ...and a second later one more.
        let _a4 = table.enter(key("127.0.0.1"), now + Duration::from_secs(1)).unwrap();
    }

    #[test]
    fn streams_are_counted_apart_and_fewer() {
        let table = PeerTable::new(limits(4, 100.0, 100.0, 16));
        let now = Instant::now();
        let addr = Some("192.0.2.1".parse().unwrap());
        let streams: Vec<PeerPlace> =
            std::iter::from_fn(|| table.enter(PeerKey::streams_of(addr), now).ok()).collect();
        assert_eq!(streams.len(), 2);
        // Its other requests keep their own places.
        let others: Vec<PeerPlace> =
            std::iter::from_fn(|| table.enter(PeerKey::of(addr), now).ok()).collect();
        assert_eq!(others.len(), 4);
    }

    #[test]
    fn the_table_forgets_idle_peers_and_refuses_when_all_are_busy() {
        let table = PeerTable::new(limits(4, 10.0, 10.0, 2));
        let now = Instant::now();
        let a = table.enter(key("10.0.0.1"), now).unwrap();
        let b = table.enter(key("10.0.0.2"), now).unwrap();
        assert_eq!(table.enter(key("10.0.0.3"), now).unwrap_err().code(), "overloaded");
        drop(a);
        // 10.0.0.1 has nothing in progress but its bucket is not full yet: still kept.
        assert_eq!(table.enter(key("10.0.0.3"), now).unwrap_err().code(), "overloaded");
        // Once refilled it is idle, and forgotten for the newcomer (the table is swept once a
        // second at most).
        let later = now + Duration::from_secs(1);
        let _c = table.enter(key("10.0.0.3"), later).unwrap();
        assert_eq!(table.len(), 2);
        drop(b);
    }

    #[test]
    fn a_few_signed_bodies_per_connection() {
        let peer = Arc::new(Peer::new(None));
        let places: Vec<SignedPlace> = std::iter::from_fn(|| peer.signed()).collect();
        assert_eq!(places.len(), SIGNED_PER_CONNECTION);
        assert!(peer.signed().is_none());
        drop(places);
        assert!(peer.signed().is_some());
    }

    #[test]
    fn forwarded_for_is_read_only_from_a_trusted_proxy() {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let mut headers = HeaderMap::new();
        headers.append("x-forwarded-for", "198.51.100.9, 203.0.113.5".parse().unwrap());
        headers.append("x-forwarded-for", "10.1.1.1".parse().unwrap());
        let from = |peer: &str| client_addr(Some(peer.parse().unwrap()), &headers, &trusted);
        // From an untrusted peer the header is the client's to write: ignored.
        assert_eq!(from("192.0.2.1"), Some("192.0.2.1".parse().unwrap()));
        // From the proxy: the last address that is not a trusted proxy.
        assert_eq!(from("10.2.2.2"), Some("203.0.113.5".parse().unwrap()));
        // A forged field stops the walk at the proxy that appended after it.
        let mut forged = HeaderMap::new();
        forged.append("x-forwarded-for", "not-an-address, 10.3.3.3".parse().unwrap());
        assert_eq!(
            client_addr(Some("10.2.2.2".parse().unwrap()), &forged, &trusted),
            Some("10.3.3.3".parse().unwrap())
        );
        // A field that is not text spoils only itself, not the addresses after it.
        let mut bad = HeaderMap::new();
        bad.append("x-forwarded-for", axum::http::HeaderValue::from_bytes(b"\xff, 198.51.100.7").unwrap());
        assert_eq!(
            client_addr(Some("10.2.2.2".parse().unwrap()), &bad, &trusted),
            Some("198.51.100.7".parse().unwrap())
        );
        // Ports and brackets as some proxies write them.
        assert_eq!(parse_forwarded(" [2001:db8::1]:443"), Some("2001:db8::1".parse().unwrap()));
        assert_eq!(parse_forwarded("192.0.2.4:8080"), Some("192.0.2.4".parse().unwrap()));
        assert_eq!(client_addr(None, &headers, &trusted), None);
    }

    /// A dual-stack listener (`[::]:port`) sees IPv4 peers as `::ffff:a.b.c.d`: they are their
    /// IPv4 addresses for the trusted proxies, the forwarded addresses and the peer itself.
    #[test]
    fn ipv4_mapped_addresses_are_ipv4_everywhere() {
        let trusted: Vec<IpNet> = vec!["127.0.0.1/32".parse().unwrap()];
        let mut headers = HeaderMap::new();
        headers.append("x-forwarded-for", "::ffff:198.51.100.9".parse().unwrap());
        // The peer as the network layer makes it (Peer::new) from what the socket says.
        let peer = |addr: &str| Peer::new(Some(addr.parse().unwrap())).addr;
        let from_proxy = client_addr(peer("::ffff:127.0.0.1"), &headers, &trusted);
        assert_eq!(from_proxy, Some("198.51.100.9".parse().unwrap()));
        // Not from the proxy: the peer itself, canonical.
        assert_eq!(peer("::ffff:192.0.2.3"), Some("192.0.2.3".parse().unwrap()));
        assert_eq!(
            client_addr(peer("::ffff:192.0.2.3"), &headers, &trusted),
            Some("192.0.2.3".parse().unwrap())
        );
        // A proxy listed in its mapped form matches its IPv4 address too.
        let listed = [crate::peer_key::canonical_net("::ffff:127.0.0.0/104".parse().unwrap())];
        assert_eq!(listed[0], "127.0.0.0/8".parse::<IpNet>().unwrap());
        let v4_proxy: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(client_addr(Some(v4_proxy), &headers, &listed), Some("198.51.100.9".parse().unwrap()));
        // Real IPv6 stays IPv6.
        assert_eq!(
            crate::peer_key::canonical_net("2001:db8::/32".parse().unwrap()),
            "2001:db8::/32".parse::<IpNet>().unwrap()
        );
        assert_eq!(parse_forwarded("[2001:db8::1]"), Some("2001:db8::1".parse().unwrap()));
    }
}
