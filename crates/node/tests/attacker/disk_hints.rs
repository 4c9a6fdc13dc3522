//! Protocol 14's disk hints (`Dropped` with `on_disk` 1) from eve, a
//! member: she says her disk holds blocks no member's memory does, so
//! their manager forwards reads of them to her. What she sends is checked
//! against the manager's record like any holder's bytes: the reader gets
//! the origin's bytes, never hers, and counts an integrity failure.

use super::wire::*;
use super::*;
use coopcache_core::coop::Level;

const K_DROPPED: u8 = 18;
const K_EVICT: u8 = 20;
const K_FORWARD: u8 = 32;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_eve_claims_is_asked_and_her_bytes_are_refused() {
    let (c, mut eve) = data_cluster("k", Duration::ZERO).await;
    let t = Arc::new(target(&c, "k", 0, &[]).await);
    let (first, second) = ((t.manager + 1) % 3, (t.manager + 2) % 3);
    let read = |n: u32, i: u32| {
        let (node, t) = (c.nodes[n as usize].clone(), t.clone());
        async move {
            let (data, level) = node.read_block(&t.path, &t.version, i).await.unwrap();
            assert!(
                data[..] == *t.slice(i),
                "block {i} via node {n}: wrong bytes"
            );
            level
        }
    };
    // The first reader records every block's digest.
    for i in 0..BLOCKS {
        assert_eq!(read(first, i).await, Level::Origin, "block {i}");
    }
    // Every copy goes (an `Evict` at the manager is obeyed), the records
    // stay; eve says her disk has each block.
    for i in 0..BLOCKS {
        eve.send(t.manager, block_frame(K_EVICT, t.block(i), &[]));
        eve.send(t.manager, block_frame(K_DROPPED, t.block(i), &[1]));
    }
    eve.barrier(t.manager).await;
    let failures = c.nodes[second as usize]
        .status()
        .await
        .unwrap()
        .integrity_failures;
    for i in 0..BLOCKS {
        let reading = tokio::spawn(read(second, i));
        // The manager asks her disk for it, for the second reader.
        let forward = eve.heard_of(t.manager, K_FORWARD, 1).await.remove(0);
        let mut want = Vec::new();
        t.block(i).put(&mut want);
        want.extend_from_slice(&second.to_be_bytes());
        assert_eq!(forward, want, "block {i}: the forward");
        eve.send(second, block_frame(K_DATA, t.block(i), &garbage(i)));
        let level = reading.await.unwrap();
        assert_eq!(level, Level::Origin, "block {i}: eve's bytes served");
    }
    let s = c.nodes[second as usize].status().await.unwrap();
    assert_eq!(s.integrity_failures - failures, u64::from(BLOCKS));
    assert_eq!(total(&c, |s| s.disk_forwards).await, u64::from(BLOCKS));
    assert_eq!(total(&c, |s| s.disk_served).await, 0);
    // Sent by the node the manager named, her bytes broke no role rule.
    assert_eq!(only_eve_blamed(&c), vec![0, 0, 0]);
}
