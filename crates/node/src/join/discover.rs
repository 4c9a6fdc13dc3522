//! Finding where to join on a LAN: the announcements of
//! [`crate::discovery`] carry the cluster tag, the first bytes
//! of the CA certificate's SHA-256, which a token's fingerprint gives, so
//! a joiner can pick out its cluster's members before it has any key.
//! The announcement proves nothing; the pinned TLS handshake does.

use super::JoinError;
use crate::discovery::{self, Announcement, MAX_DATAGRAM};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;

/// Longest a joiner listens for its cluster's announcements.
pub const LISTEN_FOR: Duration = Duration::from_secs(10);

/// After the first announcer, how long to listen for others (members
/// announce once a second), so a joiner can try every member.
const GATHER: Duration = Duration::from_millis(2500);

/// Most announcers remembered.
const MAX_FOUND: usize = 64;

/// The addresses of the members of the cluster whose CA has `fingerprint`
/// heard on `group`, in the order heard: at least one, or an error after
/// [`LISTEN_FOR`].
pub async fn members(
    group: SocketAddrV4,
    fingerprint: &[u8; 32],
) -> Result<Vec<String>, JoinError> {
    let socket = discovery::open(group, Ipv4Addr::UNSPECIFIED).map_err(|source| JoinError::Io {
        path: format!("discovery group {group}").into(),
        source,
    })?;
    let tag = discovery::cluster_tag(fingerprint);
    let mut found: Vec<String> = Vec::new();
    let mut buf = [0u8; MAX_DATAGRAM + 1];
    let start = tokio::time::Instant::from_std(crate::clock::now());
    let mut deadline = start + LISTEN_FOR;
    while found.len() < MAX_FOUND {
        let (n, source) = match tokio::time::timeout_at(deadline, socket.recv_from(&mut buf)).await
        {
            Err(_) => break,
            Ok(Err(_)) => {
                // Not a busy loop on a socket that keeps failing.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            Ok(Ok(r)) => r,
        };
        let Ok(a) = Announcement::decode(&buf[..n]) else {
            continue;
        };
        if a.cluster != tag {
            continue;
        }
        let addr = a.dial_addr(source);
        if !found.contains(&addr) {
            if found.is_empty() {
                deadline =
                    deadline.min(tokio::time::Instant::from_std(crate::clock::now()) + GATHER);
            }
            tracing::info!(%addr, "discovered a member of the token's cluster");
            found.push(addr);
        }
    }
    match found.is_empty() {
        true => Err(JoinError::NoneDiscovered {
            group,
            secs: LISTEN_FOR.as_secs(),
        }),
        false => Ok(found),
    }
}
