//! Zero-configuration discovery on one subnet, as Netcache's status
//! queries find peers without a list: each node multicasts a small
//! announcement (its cluster, id and listen address) once per
//! [`ANNOUNCE_PERIOD`], and dials the announcers of its own cluster.
//!
//! An announcement is unauthenticated and proves nothing: it only gives
//! an address to dial, and the mutual-TLS handshake under the cluster CA
//! decides whether that address is a member. Malformed announcements and
//! other clusters' are ignored and counted, never trusted.

use crate::driver::Event;
use crate::frame::MAX_NAME;
use crate::metrics::Metrics;
use coopcache_core::coop::NodeId;
use socket2::{Domain, Protocol, Socket, Type};
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::UdpSocket;
use tokio::sync::mpsc;

/// The default multicast group and port (administratively scoped, so it
/// stays inside the site).
pub const DEFAULT_GROUP: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(239, 255, 70, 67), 7172);

/// How often a node announces itself: one datagram of at most
/// [`MAX_DATAGRAM`] bytes per period, whatever it receives.
pub const ANNOUNCE_PERIOD: Duration = Duration::from_secs(1);

/// An announcer is dialled at most once per this period (dialling a
/// member already linked costs nothing, but a flood of announcements must
/// not become a flood of connections).
pub const REDIAL_PERIOD: Duration = Duration::from_secs(5);

/// Announcers remembered for [`REDIAL_PERIOD`]; beyond, the memory is
/// cleared (bounded, whatever arrives).
const MAX_ANNOUNCERS: usize = 1024;

/// First bytes of every announcement.
pub const MAGIC: [u8; 4] = *b"COOD";

/// The announcement format version.
pub const VERSION: u8 = 1;

/// Bytes of the cluster tag: the first bytes of the SHA-256 of the
/// cluster CA's certificate.
pub const TAG: usize = 16;

/// Longest announcement.
pub const MAX_DATAGRAM: usize = MAGIC.len() + 1 + TAG + 4 + 1 + MAX_NAME;

/// One node's announcement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Announcement {
    /// The cluster tag.
    pub cluster: [u8; TAG],
    /// The announcer's node id.
    pub node: NodeId,
    /// Where it accepts peers.
    pub listen: String,
}

/// Why an announcement was ignored.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DiscoveryError {
    /// Not a well-formed announcement.
    #[error("malformed announcement: {0}")]
    Malformed(&'static str),
    /// A version this build does not speak.
    #[error("announcement version {0}, this node speaks {VERSION}")]
    Version(u8),
}

/// The cluster tag of a cluster whose CA certificate hashes to `ca_sha256`.
pub fn cluster_tag(ca_sha256: &[u8; 32]) -> [u8; TAG] {
    let mut tag = [0; TAG];
    tag.copy_from_slice(&ca_sha256[..TAG]);
    tag
}

impl Announcement {
    /// The datagram.
    pub fn encode(&self) -> Vec<u8> {
        let listen = &self.listen.as_bytes()[..self.listen.len().min(MAX_NAME)];
        let mut out = Vec::with_capacity(MAX_DATAGRAM);
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&self.cluster);
        out.extend_from_slice(&self.node.to_be_bytes());
        out.push(listen.len() as u8);
        out.extend_from_slice(listen);
        out
    }

    /// Parses a datagram; never panics.
    pub fn decode(data: &[u8]) -> Result<Announcement, DiscoveryError> {
        let rest = data
            .strip_prefix(&MAGIC)
            .ok_or(DiscoveryError::Malformed("bad magic"))?;
        let (&version, rest) = rest
            .split_first()
            .ok_or(DiscoveryError::Malformed("no version"))?;
        if version != VERSION {
            return Err(DiscoveryError::Version(version));
        }
        let (cluster, rest) = rest
            .split_first_chunk::<TAG>()
            .ok_or(DiscoveryError::Malformed("short cluster tag"))?;
        let (node, rest) = rest
            .split_first_chunk::<4>()
            .ok_or(DiscoveryError::Malformed("short node id"))?;
        let (&len, rest) = rest
            .split_first()
            .ok_or(DiscoveryError::Malformed("no address length"))?;
        if rest.len() != usize::from(len) {
            return Err(DiscoveryError::Malformed("address length mismatch"));
        }
        let listen = std::str::from_utf8(rest)
            .map_err(|_| DiscoveryError::Malformed("address is not UTF-8"))?;
        Ok(Announcement {
            cluster: *cluster,
            node: NodeId::from_be_bytes(*node),
            listen: listen.to_owned(),
        })
    }

    /// The address to dial: the announced one, with the datagram's source
    /// address if the announcer listens on a wildcard address.
    pub fn dial_addr(&self, source: SocketAddr) -> String {
        match self.listen.parse::<SocketAddr>() {
            Ok(a) if a.ip().is_unspecified() => SocketAddr::new(source.ip(), a.port()).to_string(),
            _ => self.listen.clone(),
        }
    }
}

/// Opens the discovery socket: bound to `group`'s port (shared with other
/// nodes on this host), joined to the group on `interface` (the node's
/// listen address, or any), looping back so nodes on one host meet, and
/// with a TTL of one so announcements stay on the subnet.
pub fn open(group: SocketAddrV4, interface: Ipv4Addr) -> std::io::Result<UdpSocket> {
    let socket = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    // Bound to the group address, so unicast datagrams to the port are
    // not received.
    socket.bind(&SocketAddr::V4(group).into())?;
    socket.join_multicast_v4(group.ip(), &interface)?;
    socket.set_multicast_if_v4(&interface)?;
    socket.set_multicast_loop_v4(true)?;
    socket.set_multicast_ttl_v4(1)?;
    socket.set_nonblocking(true)?;
    UdpSocket::from_std(socket.into())
}

/// Announces `me` to `group` every [`ANNOUNCE_PERIOD`] and asks the driver
/// to dial every announcer of the same cluster, until the driver stops.
pub async fn run(
    socket: UdpSocket,
    group: SocketAddrV4,
    me: Announcement,
    events: mpsc::Sender<Event>,
    metrics: Arc<Metrics>,
) {
    let datagram = me.encode();
    let mut tick = tokio::time::interval(ANNOUNCE_PERIOD);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut dialled: HashMap<String, Instant> = HashMap::new();
    let mut buf = [0u8; MAX_DATAGRAM + 1];
    loop {
        tokio::select! {
            _ = tick.tick() => {
                if let Err(e) = socket.send_to(&datagram, group).await {
                    tracing::debug!(error = %e, %group, "discovery announcement not sent");
                }
            }
            r = socket.recv_from(&mut buf) => {
                let (n, source) = match r {
                    Ok(r) => r,
                    Err(e) => {
                        tracing::debug!(error = %e, "discovery receive failed");
                        continue;
                    }
                };
                let a = match Announcement::decode(&buf[..n]) {
                    Ok(a) if a.cluster == me.cluster => a,
                    Ok(_) => {
                        metrics.discovery_ignored.inc();
                        tracing::debug!(%source, "discovery: another cluster's announcement");
                        continue;
                    }
                    Err(e) => {
                        metrics.discovery_ignored.inc();
                        tracing::debug!(%source, error = %e, "discovery: ignored a datagram");
                        continue;
                    }
                };
                if a.node == me.node {
                    continue; // our own, looped back
                }
                let addr = a.dial_addr(source);
                let now = crate::clock::now();
                if dialled.get(&addr).is_some_and(|&t| now.duration_since(t) < REDIAL_PERIOD) {
                    continue;
                }
                if dialled.len() >= MAX_ANNOUNCERS {
                    dialled.retain(|_, t| now.duration_since(*t) < REDIAL_PERIOD);
                    if dialled.len() >= MAX_ANNOUNCERS {
                        dialled.clear();
                    }
                }
                dialled.insert(addr.clone(), now);
                tracing::debug!(node = a.node, %addr, "discovered a member; dialling");
                match events.try_send(Event::Join(addr)) {
                    Ok(()) => {}
                    Err(mpsc::error::TrySendError::Closed(_)) => return,
                    // A busy driver: the next announcement will do.
                    Err(mpsc::error::TrySendError::Full(_)) => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn me() -> Announcement {
        Announcement {
            cluster: [7; TAG],
            node: 42,
            listen: "10.1.2.3:7170".into(),
        }
    }

    #[test]
    fn an_announcement_roundtrips() {
        let a = me();
        let d = a.encode();
        assert!(d.len() <= MAX_DATAGRAM);
        assert_eq!(Announcement::decode(&d), Ok(a));
    }

    #[test]
    fn malformed_announcements_are_named() {
        let d = me().encode();
        assert_eq!(
            Announcement::decode(b"HTTP/1.1"),
            Err(DiscoveryError::Malformed("bad magic"))
        );
        for cut in 0..d.len() {
            assert!(Announcement::decode(&d[..cut]).is_err(), "cut at {cut}");
        }
        let mut long = d.clone();
        long.push(b'x');
        assert_eq!(
            Announcement::decode(&long),
            Err(DiscoveryError::Malformed("address length mismatch"))
        );
        let mut v2 = d.clone();
        v2[MAGIC.len()] = 2;
        assert_eq!(Announcement::decode(&v2), Err(DiscoveryError::Version(2)));
        let mut bad_utf8 = d;
        let last = bad_utf8.len() - 1;
        bad_utf8[last] = 0xff;
        assert!(Announcement::decode(&bad_utf8).is_err());
    }

    #[test]
    fn a_wildcard_listen_address_is_dialled_at_the_source() {
        let mut a = me();
        let source: SocketAddr = "10.9.9.9:5000".parse().unwrap();
        assert_eq!(a.dial_addr(source), "10.1.2.3:7170");
        a.listen = "0.0.0.0:7170".into();
        assert_eq!(a.dial_addr(source), "10.9.9.9:7170");
        a.listen = "node-a.example:7170".into();
        assert_eq!(a.dial_addr(source), "node-a.example:7170");
    }

    proptest! {
        #[test]
        fn arbitrary_datagrams_never_panic(d in prop::collection::vec(any::<u8>(), 0..MAX_DATAGRAM + 4)) {
            let _ = Announcement::decode(&d);
        }

        #[test]
        fn mutated_announcements_never_panic(at in any::<prop::sample::Index>(), bit in 0u8..8) {
            let mut d = me().encode();
            let i = at.index(d.len());
            d[i] ^= 1 << bit;
            if let Ok(a) = Announcement::decode(&d) {
                prop_assert_eq!(Announcement::decode(&a.encode()), Ok(a));
            }
        }
    }
}
