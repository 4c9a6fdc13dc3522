//! Protocol versions (docs/PROTOCOL.md, "Versions"), from outside: the
//! version a link speaks is the one its TLS handshake agreed on (ALPN),
//! and the `Hello` must say it. A node of version 14 offers no ALPN and
//! sends a Hello that ends at the block size: it is answered in kind, so
//! a cluster can be upgraded one node at a time. A Hello naming another
//! version than the handshake's is refused either way.

use super::*;

/// Eve's client configuration without ALPN: a version-14 node's.
fn unnegotiated(eve: &Identity) -> Arc<rustls::ClientConfig> {
    let mut config = (*eve.client).clone();
    config.alpn_protocols.clear();
    Arc::new(config)
}

/// Sends `hello` over `link`; the node's answer.
async fn say(mut link: Link, hello: &[u8]) -> Option<(u8, Vec<u8>)> {
    link.write_all(hello).await.unwrap();
    link.flush().await.unwrap();
    read_frame(&mut link).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_14_peer_is_answered_in_version_14_and_a_mismatched_hello_is_refused() {
    let c = cluster(Shape::default(), &[("x.bin", 1000)]).await;
    let eve = eve(&c);
    let target = &c.nodes[0];
    let bs = Shape::default().block_size;
    let listen = "127.0.0.1:9";

    // As a version-14 node: no ALPN, a Hello of version 14 without a
    // release. The node answers with a version-14 Hello: the magic,
    // version 14, its id, name, listen address and block size, and not
    // one byte more (a version-14 decoder refuses leftovers).
    let link = connect_with(target, unnegotiated(&eve)).await.unwrap();
    let (kind, body) = say(link, &hello_of(14, EVE_ID, EVE, listen, bs))
        .await
        .expect("a version-14 Hello is answered");
    assert_eq!(kind, KIND_HELLO);
    assert_eq!(&body[..4], b"COOP");
    assert_eq!(u16::from_be_bytes([body[4], body[5]]), 14);
    let name_len = body[10] as usize;
    let listen_len = body[11 + name_len] as usize;
    let end = 12 + name_len + listen_len + 4;
    assert_eq!(body.len(), end, "a version-14 Hello ends at the block size");
    assert_eq!(u32::from_be_bytes(body[end - 4..].try_into().unwrap()), bs);

    // With ALPN, the handshake agrees on 15: the answer names 15 and
    // carries the node's release after the block size.
    let link = connect(target, &eve).await;
    let (_, body) = say(link, &hello(EVE_ID, EVE, listen, bs))
        .await
        .expect("a version-15 Hello is answered");
    assert_eq!(u16::from_be_bytes([body[4], body[5]]), VERSION);
    let name_len = body[10] as usize;
    let listen_len = body[11 + name_len] as usize;
    let release = &body[12 + name_len + listen_len + 4..];
    assert_eq!(release.len(), 1 + release[0] as usize);
    assert_eq!(&release[1..], env!("CARGO_PKG_VERSION").as_bytes());

    // A Hello naming another version than the handshake's is refused:
    // 14 on a link that agreed on 15, 15 on one that agreed on nothing,
    // and versions this node does not speak.
    let errors = target.status().await.unwrap().peer_errors;
    let link = connect(target, &eve).await;
    let answer = say(link, &hello_of(14, EVE_ID, EVE, listen, bs)).await;
    assert!(answer.is_none(), "14 on a version-15 link: {answer:?}");
    let link = connect_with(target, unnegotiated(&eve)).await.unwrap();
    let answer = say(link, &hello_of(15, EVE_ID, EVE, listen, bs)).await;
    assert!(answer.is_none(), "15 on an unnegotiated link: {answer:?}");
    for version in [13, 16, u16::MAX] {
        let link = connect_with(target, unnegotiated(&eve)).await.unwrap();
        let answer = say(link, &hello_of(version, EVE_ID, EVE, listen, bs)).await;
        assert!(
            answer.is_none(),
            "version {version} was answered: {answer:?}"
        );
    }
    let refused = target.status().await.unwrap().peer_errors - errors;
    assert!(refused >= 5, "{refused} refusals counted");

    // ALPN offering only a version this node does not speak fails the
    // TLS handshake itself (no_application_protocol), before any frame.
    let mut config = (*eve.client).clone();
    config.alpn_protocols = vec![b"coopcache/99".to_vec()];
    let linked = connect_with(target, Arc::new(config)).await;
    match linked {
        Err(e) => assert!(
            e.to_string().contains("NoApplicationProtocol") || e.to_string().contains("protocol"),
            "{e}"
        ),
        Ok(link) => {
            // TLS 1.3: the client may finish before the server's alert.
            let answer = say(link, &hello(EVE_ID, EVE, listen, bs)).await;
            assert!(answer.is_none(), "coopcache/99 was answered: {answer:?}");
        }
    }
}
