//! Protocol versions across a rolling upgrade (docs/PROTOCOL.md,
//! "Versions"). This build speaks every version from [`OLDEST_VERSION`]
//! to [`PROTOCOL_VERSION`]; a link speaks the newest both ends know.
//!
//! The two ends agree in the TLS handshake (ALPN), before either sends a
//! frame: the dialler offers `coopcache/N` for each version it speaks
//! above [`UNNEGOTIATED`], newest first, and the acceptor chooses the
//! newest it speaks. A node of version 14, the last before negotiation,
//! neither offers nor chooses: its links speak version 14. The agreement
//! cannot come from the `Hello`, since a version-14 node sends its own at
//! once and refuses any other version in the first frame it reads. Each
//! end's `Hello` then names the agreed version, and the other end checks
//! it ([`crate::link::LinkCtx::check_hello`]).
//!
//! A later version gates what it adds on the link's version: a frame
//! that version N adds is never sent on a link that agreed on less, and a
//! frame it changes is written in the form the link's version reads (the
//! `Hello` itself, which gained the sender's release in version 15, is
//! the first).

pub use crate::frame::PROTOCOL_VERSION;

/// The oldest protocol version this build speaks: nodes of that version
/// and this one form one cluster, so a cluster is upgraded one node at a
/// time.
pub const OLDEST_VERSION: u16 = 14;

/// The version a link speaks when its TLS handshake chose no protocol: a
/// version-14 node at either end.
pub const UNNEGOTIATED: u16 = 14;

/// ALPN's name for protocol version `v`.
fn alpn_name(v: u16) -> Vec<u8> {
    format!("coopcache/{v}").into_bytes()
}

/// The ALPN protocols a node offers (dialling) or accepts (listening):
/// each version it speaks above [`UNNEGOTIATED`], newest first, so an
/// acceptor, which prefers its own order, chooses the newest.
pub fn alpn_protocols() -> Vec<Vec<u8>> {
    (UNNEGOTIATED + 1..=PROTOCOL_VERSION)
        .rev()
        .map(alpn_name)
        .collect()
}

/// The version a link agreed on, from the protocol its TLS handshake
/// chose: [`UNNEGOTIATED`] if none, `None` for a protocol this build does
/// not speak (which the handshake itself does not let through).
pub fn agreed(alpn: Option<&[u8]>) -> Option<u16> {
    let Some(alpn) = alpn else {
        return Some(UNNEGOTIATED);
    };
    (UNNEGOTIATED + 1..=PROTOCOL_VERSION).find(|&v| alpn == alpn_name(v).as_slice())
}

/// Versions this build speaks, for messages: `14 to 15`.
pub fn spoken() -> String {
    format!("{OLDEST_VERSION} to {PROTOCOL_VERSION}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_version_is_offered_first_and_no_protocol_means_version_14() {
        assert_eq!(alpn_protocols()[0], b"coopcache/15".to_vec());
        assert_eq!(agreed(None), Some(14));
        assert_eq!(agreed(Some(b"coopcache/15")), Some(15));
        assert_eq!(agreed(Some(b"coopcache/16")), None);
        assert_eq!(agreed(Some(b"coopcache-join/1")), None);
    }
}
