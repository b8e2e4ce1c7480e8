//! A peer as per-peer limits count it ([`PeerKey`]): the key of the callers' per-peer limits
//! (`callers::peer`) and of the beacon's bound on requests waiting for a round
//! (`beacon::Beacon::waiter`), and the canonical form of the networks addresses are compared
//! with ([`canonical_net`]: `server.trusted_proxies`). Values of their own, below both; they
//! name nothing of the crate.

use std::net::{IpAddr, Ipv6Addr};

use ipnet::IpNet;

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

/// `net` canonical, as addresses are compared with it: an IPv4-mapped IPv6 network
/// (`::ffff:10.0.0.0/104`) is the IPv4 network it maps (`10.0.0.0/8`); a mapped network wider
/// than the mapped range (prefix under 96) is kept as written.
pub fn canonical_net(net: IpNet) -> IpNet {
    match net {
        IpNet::V6(v6) if v6.prefix_len() >= 96 => match v6.addr().to_ipv4_mapped() {
            Some(v4) => ipnet::Ipv4Net::new(v4, v6.prefix_len() - 96).map_or(net, IpNet::V4),
            None => net,
        },
        _ => net,
    }
}
