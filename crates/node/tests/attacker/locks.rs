//! Issue 40's cluster locks, attacked as docs/PROTOCOL.md describes their
//! frames: a member holding one valid certificate cannot unlock or
//! release another node's lock (no frame names a node: she only ever
//! acts as herself), and her forged answers and grants, for every nonce a
//! node could have used, take nobody's lock for them.

use super::*;
use coopcache_core::c2cfs::locks::{LockCall, LockKind, LockRange, LockSpace};

const K_UNLOCK: u8 = 72;
const K_RELEASE: u8 = 73;
const K_LOCK_ANSWER: u8 = 77;
const K_GRANTED: u8 = 78;

/// nonce u64, path (len u16, UTF-8), space u8 (0: POSIX), owner u64.
fn target(nonce: u64, path: &str, owner: u64) -> Vec<u8> {
    let mut body = nonce.to_be_bytes().to_vec();
    body.extend_from_slice(&(path.len() as u16).to_be_bytes());
    body.extend_from_slice(path.as_bytes());
    body.push(0);
    body.extend_from_slice(&owner.to_be_bytes());
    body
}

fn exclusive(path: &str, owner: u64, wait: bool) -> LockCall {
    LockCall::Lock {
        path: path.into(),
        space: LockSpace::Posix,
        owner,
        kind: LockKind::Exclusive,
        range: LockRange::WHOLE,
        wait,
        pid: 1,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_cannot_unlock_another_nodes_lock_or_grant_a_wait() {
    let c = cluster(Shape::default(), &[("x", 1000)]).await;
    let eve = eve(&c);
    // A file node 2 manages whether or not eve counts as a member (the
    // rendezvous of the document's "Roles"), so the honest nodes' calls
    // never wait on her.
    let f = (0..)
        .map(|i| format!("f{i}"))
        .find(|p| {
            let key = coopcache_core::c2cfs::exclusive::manager_key(p);
            let of = |m: &[u32]| coopcache_core::protocol::manager_of(key, m);
            of(&[0, 1, 2]) == Some(2) && of(&[0, 1, 2, EVE_ID]) == Some(2)
        })
        .unwrap();
    let f = f.as_str();
    let bs = Shape::default().block_size;
    // Node 0's process (owner 7) holds the file; node 1's waits for it.
    assert_eq!(c.nodes[0].lock(exclusive(f, 7, false)).await, Ok(None));
    let waiter = {
        let (node, call) = (c.nodes[1].clone(), exclusive(f, 7, true));
        tokio::spawn(async move { node.lock(call).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiter.is_finished(), "node 1 was granted a held lock");
    let violations = c.nodes[1].status().await.unwrap().protocol_violations;

    let mut links = Vec::new();
    for (i, node) in c.nodes.iter().enumerate() {
        let listen = format!("127.0.0.1:{}", 7100 + i);
        let (mut link, answer) = handshake(node, &eve, &hello(EVE_ID, EVE, &listen, bs)).await;
        assert!(answer.is_some(), "eve's own Hello was refused");
        let mut frames = Vec::new();
        // Whoever manages the file: unlock and release node 0's owner 7.
        let mut unlock = target(1, f, 7);
        unlock.extend_from_slice(&0u64.to_be_bytes());
        unlock.extend_from_slice(&u64::MAX.to_be_bytes());
        frames.extend(frame(K_UNLOCK, &unlock));
        frames.extend(frame(K_RELEASE, &target(2, f, 7)));
        // Every nonce node 1 could be waiting under: granted, and done.
        for nonce in 0..64u64 {
            let mut granted = nonce.to_be_bytes().to_vec();
            granted.push(0);
            frames.extend(frame(K_GRANTED, &granted));
            let mut answer = nonce.to_be_bytes().to_vec();
            answer.push(0);
            frames.extend(frame(K_LOCK_ANSWER, &answer));
        }
        link.write_all(&frames).await.unwrap();
        link.flush().await.unwrap();
        links.push(link);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !waiter.is_finished(),
        "eve's frames granted node 1 the lock"
    );
    // Node 0's lock stands: node 2's try is refused, naming node 0.
    let refused = c.nodes[2].lock(exclusive(f, 9, false)).await;
    assert!(matches!(refused, Ok(Some(_))), "{refused:?}");
    let counted = c.nodes[1].status().await.unwrap().protocol_violations - violations;
    assert!(
        counted >= 64,
        "{counted} of eve's grants counted against her"
    );

    // The control: node 0's own unlock grants the waiter.
    let unlock = LockCall::Unlock {
        path: f.into(),
        space: LockSpace::Posix,
        owner: 7,
        range: LockRange::WHOLE,
    };
    assert_eq!(c.nodes[0].lock(unlock).await, Ok(None));
    let granted = tokio::time::timeout(Duration::from_secs(10), waiter).await;
    assert_eq!(granted.unwrap().unwrap(), Ok(None));
    drop(links);
}
