//! A peer as per-peer limits count it ([`PeerKey`]): the key of the callers' per-peer limits
//! (`callers::peer`) and of the beacon's bound on requests waiting for a round
//! (`beacon::Beacon::waiter`). A value of its own, below both; it names nothing of the crate.

use std::net::{IpAddr, Ipv6Addr};

/// A peer as the limits count it: an IPv4 address or an IPv6 /64 (an IPv4-mapped IPv6
/// address is its IPv4 address); `None`: no address known, all such requests one peer. Its
/// streams are counted under a key of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PeerKey {
    addr: Option<IpAddr>,
    stream: bool,
}

impl PeerKey {
    /// The key of `addr`.
    pub fn of(addr: Option<IpAddr>) -> PeerKey {
        PeerKey { addr: Self::prefix(addr), stream: false }
    }

    /// The key of `addr`'s public streams.
    pub fn streams_of(addr: Option<IpAddr>) -> PeerKey {
        PeerKey { addr: Self::prefix(addr), stream: true }
    }

    /// Whether this is the key of a peer's public streams.
    pub fn is_stream(&self) -> bool {
        self.stream
    }

    fn prefix(addr: Option<IpAddr>) -> Option<IpAddr> {
        addr.map(|addr| match addr {
            IpAddr::V4(v4) => IpAddr::V4(v4),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
            },
        })
    }
}
