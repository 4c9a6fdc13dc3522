//! Issue 39, attack 1: the node id was a field of `Hello`. A member that
//! claimed another's id had every frame it sent labelled with that id: its
//! `Leaving` made the others drop the victim.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hello_claiming_another_members_id_or_name_is_refused() {
    let c = cluster(Shape::default(), &[("x.bin", 1000)]).await;
    let eve = eve(&c);
    let target = &c.nodes[1];
    let listen = "127.0.0.1:9";
    let bs = Shape::default().block_size;
    let errors = target.status().await.unwrap().peer_errors;
    for (id, name) in [(0, EVE), (2, EVE), (0, "node-0"), (EVE_ID, "node-0")] {
        let (mut link, answer) = handshake(target, &eve, &hello(id, name, listen, bs)).await;
        assert!(
            answer.is_none(),
            "a Hello as id {id}, name {name} on eve's certificate was answered: {answer:?}"
        );
        // Were it accepted, this would speak for the member claimed.
        let _ = link.write_all(&frame(KIND_LEAVING, &[])).await;
        let _ = link.flush().await;
    }
    keep_members(&c.nodes, &[0, 1, 2], Duration::from_secs(2)).await;
    let refused = target.status().await.unwrap().peer_errors - errors;
    assert!(refused >= 4, "{refused} refusals counted");

    // The control: her own id and name are answered with the node's Hello,
    // which carries the node's own id (1, issued second by `init`).
    let (_link, answer) = handshake(target, &eve, &hello(EVE_ID, EVE, listen, bs)).await;
    let (kind, body) = answer.expect("eve's own Hello is answered");
    assert_eq!(kind, KIND_HELLO);
    assert_eq!(&body[..4], b"COOP");
    assert_eq!(u16::from_be_bytes([body[4], body[5]]), VERSION);
    assert_eq!(u32::from_be_bytes(body[6..10].try_into().unwrap()), 1);
}

/// Issue 39, attack 3: two processes with one certificate (a copied
/// service file). While the first's link is open, the second's is refused,
/// and the first keeps its place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_process_with_a_members_certificate_is_refused() {
    let c = cluster(Shape::default(), &[("x.bin", 1000)]).await;
    let eve = eve(&c);
    let bs = Shape::default().block_size;
    let target = &c.nodes[0];
    let (mut first, answer) =
        handshake(target, &eve, &hello(EVE_ID, EVE, "127.0.0.1:7001", bs)).await;
    assert!(answer.is_some());
    let (_second, answer) =
        handshake(target, &eve, &hello(EVE_ID, EVE, "127.0.0.1:7002", bs)).await;
    assert!(answer.is_none(), "the second process was answered");
    // The first is still linked: a reconnection from its own address wins.
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(Duration::from_millis(300), first.read(&mut byte)).await;
    assert!(
        read.is_err(),
        "the first process's link was closed: {read:?}"
    );
    let (_again, answer) = handshake(target, &eve, &hello(EVE_ID, EVE, "127.0.0.1:7001", bs)).await;
    assert!(
        answer.is_some(),
        "the first process's reconnection was refused"
    );
}
