//! `Evict` (protocol 10, `coopcache evict`) from eve, a member. At a node
//! that does not manage the block it is refused and counted against her,
//! and the honest copies keep serving. At the block's manager it is
//! obeyed: a member may make the cluster drop a block (it costs origin
//! reads), never serve a wrong one, and the next reader gets the origin's
//! bytes.

use super::wire::*;
use super::*;
use coopcache_core::coop::Level;

const K_EVICT: u8 = 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evict_is_obeyed_only_at_the_blocks_manager() {
    let (c, mut eve) = data_cluster("e", Duration::ZERO).await;
    let t = target(&c, "e", 0, &[]).await;
    let (first, second) = ((t.manager + 1) % 3, (t.manager + 2) % 3);
    let read = |n: u32, i: u32| {
        let (node, t) = (c.nodes[n as usize].clone(), &t);
        async move {
            let (data, level) = node.read_block(&t.path, &t.version, i).await.unwrap();
            assert!(data[..] == *t.slice(i), "block {i} via node {n}");
            level
        }
    };
    for i in 0..BLOCKS {
        assert_eq!(read(first, i).await, Level::Origin, "block {i}");
    }
    for i in 0..BLOCKS {
        eve.send(second, block_frame(K_EVICT, t.block(i), &[]));
    }
    eve.barrier(second).await;
    for i in 0..BLOCKS {
        assert_eq!(read(second, i).await, Level::RemoteNode, "block {i}");
    }
    // A status syncs each node's per-peer counts into its metrics.
    assert_eq!(
        total(&c, |s| s.protocol_violations).await,
        u64::from(BLOCKS)
    );
    let blamed = only_eve_blamed(&c);
    let want: Vec<u64> = (0..3)
        .map(|n| if n == second { u64::from(BLOCKS) } else { 0 })
        .collect();
    assert_eq!(blamed, want, "violations per node");

    for i in 0..BLOCKS {
        eve.send(t.manager, block_frame(K_EVICT, t.block(i), &[]));
    }
    eve.barrier(t.manager).await;
    for i in 0..BLOCKS {
        assert_eq!(read(t.manager, i).await, Level::Origin, "block {i}");
    }
    assert_eq!(total(&c, |s| s.integrity_failures).await, 0);
    assert_eq!(only_eve_blamed(&c), want, "an obeyed Evict was blamed");
}
