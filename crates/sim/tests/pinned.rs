//! Pinned blocks (`coopcache pin`) in the simulated live cluster: a pinned
//! block outlives any amount of other reads, serves its node's reads and
//! the peers' its manager forwards, counts against the pinned share, and
//! goes when unpinned, evicted, or invalidated by its manager.

use coopcache_core::coop::{AlgorithmKind, Level, LiveShape, NodeId};
use coopcache_core::policy::PolicyKind;
use coopcache_core::protocol::{PeerMsg, PinRefused, manager_of};
use coopcache_sim::protocol::{LiveCluster, content_of, level_of};

const BLOCK_SIZE: u32 = 4096;
const NODES: u32 = 3;
const PINNED: u64 = 1;

fn cluster(kind: AlgorithmKind, max_pinned: usize) -> LiveCluster<u64> {
    let shape = LiveShape {
        capacity: 8,
        policy: PolicyKind::Lru,
        chances: 2,
        seed: 1,
        classes: Default::default(),
    };
    let mut c = LiveCluster::new(kind, NODES, &shape, BLOCK_SIZE).unwrap();
    for n in 0..NODES {
        c.node_mut(n).set_max_pinned(max_pinned);
    }
    c
}

fn read(c: &mut LiveCluster<u64>, node: NodeId, block: u64) -> Level {
    let done = c.read(node, block).unwrap().expect("read never finished");
    assert_eq!(done.as_ref().unwrap().data, content_of(&block, BLOCK_SIZE));
    level_of(&done).unwrap()
}

fn pin(c: &mut LiveCluster<u64>, node: NodeId, block: u64) -> Result<(), PinRefused> {
    let (data, now) = (content_of(&block, BLOCK_SIZE), c.now());
    let pinned = c.node_mut(node).pin(block, data, now);
    c.collect_node(node);
    c.run_until_quiet().unwrap();
    pinned
}

/// Reads on every node, many times what the cluster caches.
fn churn(c: &mut LiveCluster<u64>) {
    for block in 100..200 {
        for node in 0..NODES {
            read(c, node, block);
        }
    }
}

#[test]
fn a_pinned_block_outlives_other_reads_and_serves_the_peers() {
    for kind in [
        AlgorithmKind::Base,
        AlgorithmKind::Greedy,
        AlgorithmKind::NChance,
        AlgorithmKind::Hash,
    ] {
        let mut c = cluster(kind, 2);
        read(&mut c, 0, PINNED);
        pin(&mut c, 0, PINNED).unwrap();
        assert_eq!(c.nodes()[0].pinned_usage().blocks, 1);
        churn(&mut c);
        let origin = c.stats().origin_reads;
        assert_eq!(read(&mut c, 0, PINNED), Level::Local, "{kind}");
        assert_eq!(c.stats().origin_reads, origin, "{kind}");
        // A peer's read reaches the pinned copy where managers forward
        // reads to holders: not under Base (no cooperation) nor
        // Hash-Distributed (a peer reads the block's partition owner).
        let peer = read(&mut c, 1, PINNED);
        let forwarded = matches!(kind, AlgorithmKind::Greedy | AlgorithmKind::NChance);
        assert_eq!(peer != Level::Origin, forwarded, "{kind}: {peer:?}");
        assert_eq!(c.stats().violations, 0, "{kind}");
    }
}

#[test]
fn the_pinned_share_refuses_blocks_beyond_it_until_one_is_unpinned() {
    let mut c = cluster(AlgorithmKind::NChance, 1);
    // Pinned after a read, as the daemon pins: the manager has recorded
    // the digest its peers' copies are checked against.
    read(&mut c, 0, 1);
    read(&mut c, 0, 2);
    pin(&mut c, 0, 1).unwrap();
    assert_eq!(pin(&mut c, 0, 2), Err(PinRefused::Full { max: 1 }));
    assert_eq!(pin(&mut c, 0, 1), Ok(()), "pinning again is a no-op");
    let now = c.now();
    assert!(c.node_mut(0).unpin(1, now));
    c.collect_node(0);
    c.run_until_quiet().unwrap();
    pin(&mut c, 0, 2).unwrap();
    assert!(!c.nodes()[0].is_pinned(1));
    // Unpinned, block 1 is cached like any other, and churned out.
    churn(&mut c);
    assert_eq!(read(&mut c, 0, 1), Level::Origin);
    assert_eq!(read(&mut c, 1, 2), Level::RemoteNode);
}

#[test]
fn an_evicted_block_leaves_every_node_and_its_managers_directory() {
    let mut c = cluster(AlgorithmKind::Greedy, 1);
    read(&mut c, 0, 5);
    read(&mut c, 0, PINNED);
    pin(&mut c, 0, PINNED).unwrap();
    // Peers' copies, and one pinned on a peer: eviction drops them all.
    assert_eq!(read(&mut c, 2, 5), Level::RemoteNode);
    assert_eq!(read(&mut c, 2, PINNED), Level::RemoteNode);
    c.node_mut(2).set_max_pinned(1);
    pin(&mut c, 2, PINNED).unwrap();
    for block in [5, PINNED] {
        let now = c.now();
        assert!(c.node_mut(0).evict(block, now), "block {block}");
        c.collect_node(0);
        c.run_until_quiet().unwrap();
        let m = manager_of(block, &[0, 1, 2]).unwrap();
        assert!(c.nodes()[m as usize].directory().holders(block).is_empty());
        // The next reader, this node or a peer, goes to the origin.
        assert_eq!(read(&mut c, 1, block), Level::Origin, "block {block}");
    }
    for n in [0, 2] {
        assert_eq!(c.nodes()[n].pinned_usage().blocks, 0, "node {n}");
    }
    assert!(!c.node_mut(0).evict(77, 0), "nothing held here");
    assert_eq!(c.stats().violations, 0);
}

#[test]
fn a_managers_invalidate_drops_a_pinned_block() {
    let mut c = cluster(AlgorithmKind::NChance, 1);
    read(&mut c, 0, PINNED);
    pin(&mut c, 0, PINNED).unwrap();
    let m = manager_of(PINNED, &[0, 1, 2]).unwrap();
    c.inject(m, 0, PeerMsg::Invalidate { block: PINNED });
    c.run_until_quiet().unwrap();
    assert!(!c.nodes()[0].is_pinned(PINNED));
    assert_eq!(c.stats().violations, 0);
}
