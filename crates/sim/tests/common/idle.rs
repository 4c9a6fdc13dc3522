//! A small simulated live cluster with pings on, every member idle and
//! heard saying so, and reads checked against the origin: what the
//! Netcache tests (`netcache.rs`, `private.rs`) start from.
#![allow(dead_code)] // each test crate uses some of these

use coopcache_core::coop::{AlgorithmKind, LiveShape, NodeId};
use coopcache_core::policy::PolicyKind;
use coopcache_core::protocol::IDLE_AFTER_US;
use coopcache_sim::protocol::LiveCluster;

/// Blocks each node caches.
pub(crate) const CAPACITY: usize = 16;
pub(crate) const BLOCK_SIZE: u32 = 4096;
/// How often every node pings every peer, virtual microseconds.
pub(crate) const PING_US: u64 = 1_000_000;

/// `nodes` nodes running `kind`, set up by `prepare`, then run until every
/// member has been idle long enough and said so to every other.
pub(crate) fn idle_cluster(
    kind: AlgorithmKind,
    nodes: u32,
    prepare: impl FnOnce(&mut LiveCluster<u64>),
) -> LiveCluster<u64> {
    let shape = LiveShape {
        capacity: CAPACITY,
        policy: PolicyKind::Lru,
        chances: 2,
        seed: 1,
        classes: Default::default(),
    };
    let mut c = LiveCluster::with_pings(kind, nodes, &shape, BLOCK_SIZE, PING_US).unwrap();
    prepare(&mut c);
    c.run_for(IDLE_AFTER_US + PING_US + PING_US / 2).unwrap();
    c
}

/// Node `node` reads `blocks` in order, each checked against the origin;
/// how many came from each level.
pub(crate) fn read_all(
    c: &mut LiveCluster<u64>,
    node: NodeId,
    blocks: impl IntoIterator<Item = u64>,
) -> [usize; 4] {
    let mut levels = [0usize; 4];
    for b in blocks {
        let served = c
            .read(node, b)
            .unwrap()
            .unwrap_or_else(|| panic!("read of {b} never completed"))
            .unwrap_or_else(|e| panic!("read of {b} failed: {e:?}"));
        assert_eq!(served.data, c.content(b), "block {b}");
        levels[served.level.index()] += 1;
    }
    levels
}
