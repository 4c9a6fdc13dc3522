//! The handshake after TLS: the peer's certificate name and id (`tls::peer_identity`
//! on the DER the peer presented) and its first frame decoded and checked
//! by `LinkCtx::check_hello` against a real node identity (block size
//! 64 KiB, name `self`). Input: a big-endian `u16` length, that many bytes of
//! certificate, then the `Hello` frame's body. Beyond not panicking: a
//! `Hello` is accepted only if it is one, speaks the protocol version the
//! TLS handshake agreed on (each version this node speaks is tried),
//! names the certificate's node under the certificate's id (never one the
//! frame chose), uses this node's block size and is not this node.

use bytes::Bytes;
use coopcache_node::frame::{PROTOCOL_VERSION, Wire, decode};
use coopcache_node::link::LinkCtx;
use coopcache_node::metrics::Metrics;
use coopcache_node::tls::{Identity, init_cluster, peer_identity};
use coopcache_node::version::OLDEST_VERSION;
use rustls_pki_types::CertificateDer;
use std::sync::{Arc, OnceLock};

const BLOCK_SIZE: u32 = 64 << 10;

/// A node's link context with a real identity, made once per process.
fn ctx() -> &'static LinkCtx {
    static CTX: OnceLock<LinkCtx> = OnceLock::new();
    CTX.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a key directory");
        init_cluster(dir.path(), &["self".to_string()], 30).expect("a cluster");
        let identity = Identity::load(dir.path(), "self").expect("an identity");
        let (events, rx) = tokio::sync::mpsc::channel(1);
        std::mem::forget(rx); // keep the channel open for the process
        LinkCtx::new(
            Arc::new(identity),
            "127.0.0.1:7170".into(),
            BLOCK_SIZE,
            events,
            Arc::new(Metrics::default()),
        )
    })
}

/// One input (the target's whole contract is in the module doc).
pub fn run(data: &[u8]) {
    let ctx = ctx();
    let Some((len, rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let len = usize::from(u16::from_be_bytes(*len)).min(rest.len());
    let (cert, body) = rest.split_at(len);
    let (cert_name, cert_id) = peer_identity(&[CertificateDer::from(cert)]).unwrap_or_default();
    let Ok(wire) = decode(Bytes::copy_from_slice(body)) else {
        return;
    };
    // Each version this node speaks, as the TLS handshake may agree on.
    for agreed in OLDEST_VERSION..=PROTOCOL_VERSION {
        check(ctx, &wire, (&cert_name, cert_id), agreed);
    }
}

/// One `Hello` on a link that agreed on `agreed`.
fn check(ctx: &LinkCtx, wire: &Wire, (cert_name, cert_id): (&str, u32), agreed: u16) {
    let Ok(greeting) = ctx.check_hello(wire.clone(), (cert_name, cert_id), agreed) else {
        return;
    };
    let Wire::Hello {
        version,
        node: said,
        name,
        listen: said_listen,
        block_size,
        release,
    } = wire.clone()
    else {
        panic!("accepted a frame that is not a Hello: {wire:?}");
    };
    assert_eq!(version, agreed);
    assert_eq!(greeting.version, agreed);
    assert_eq!(name, cert_name);
    assert_eq!(block_size, BLOCK_SIZE);
    assert_eq!(greeting.id, cert_id);
    assert_ne!(greeting.id, ctx.id);
    assert_eq!(said, cert_id);
    assert_eq!((greeting.listen, greeting.release), (said_listen, release));
}
