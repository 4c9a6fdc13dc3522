//! A live node's disk tier (`coopcache node --disk`) in the simulated live
//! cluster: blocks a node read come back from its disk instead of the
//! origin once its memory dropped them, after the cluster's memory has
//! been asked; contents that do not match what was written are never
//! served; the disk's own LRU bounds it.

use coopcache_core::coop::{AlgorithmKind, Level, LiveShape, NodeId};
use coopcache_core::policy::PolicyKind;
use coopcache_sim::protocol::{LiveCluster, content_of, level_of};

pub(crate) const BLOCK_SIZE: u32 = 4096;
/// Blocks each node's memory holds.
const MEMORY: usize = 8;

pub(crate) fn cluster(kind: AlgorithmKind, nodes: u32) -> LiveCluster<u64> {
    let shape = LiveShape {
        capacity: MEMORY,
        policy: PolicyKind::Lru,
        chances: 2,
        seed: 1,
        classes: Default::default(),
    };
    LiveCluster::new(kind, nodes, &shape, BLOCK_SIZE).unwrap()
}

pub(crate) fn read(c: &mut LiveCluster<u64>, node: NodeId, block: u64) -> Level {
    let done = c.read(node, block).unwrap().expect("read never finished");
    assert_eq!(done.as_ref().unwrap().data, content_of(&block, BLOCK_SIZE));
    level_of(&done).unwrap()
}

#[test]
fn blocks_memory_dropped_come_back_from_the_disk_not_the_origin() {
    let mut c = cluster(AlgorithmKind::Base, 1);
    c.set_disk(0, 64);
    for block in 0..32 {
        assert_eq!(read(&mut c, 0, block), Level::Origin);
    }
    let origin = c.stats().origin_reads;
    // Memory holds the last 8; the first 24 come from the disk.
    for block in 0..24 {
        assert_eq!(read(&mut c, 0, block), Level::LocalDisk, "block {block}");
    }
    assert_eq!(c.stats().origin_reads, origin);
    assert_eq!(c.stats().disk_reads, 24);
    let stats = c.nodes()[0].stats();
    assert_eq!((stats.disk_hits, stats.disk_failures), (24, 0));
    assert_eq!(stats.disk_writes, 32, "each block written once");
}

#[test]
fn without_a_disk_the_same_reads_go_to_the_origin() {
    let mut c = cluster(AlgorithmKind::Base, 1);
    for block in (0..32).chain(0..24) {
        assert_ne!(read(&mut c, 0, block), Level::LocalDisk);
    }
    assert_eq!(c.stats().origin_reads, 56);
    assert_eq!(c.stats().disk_reads, 0);
}

#[test]
fn contents_that_are_not_what_was_written_go_to_the_origin_and_are_rewritten() {
    let mut c = cluster(AlgorithmKind::Base, 1);
    c.set_disk(0, 64);
    for block in 0..16 {
        read(&mut c, 0, block);
    }
    // Block 0's slot rots; block 1's slot now holds another block (a slot
    // reused by a write the index did not see, after a crash).
    let slots = c.disk_mut(0).unwrap();
    let (slot0, slot1) = {
        let find = |b: u64| slots.iter().find(|(_, (k, _))| *k == b).map(|(s, _)| *s);
        (find(0).unwrap(), find(1).unwrap())
    };
    slots.get_mut(&slot0).unwrap().1.hash[0] ^= 1;
    let other = slots[&slot0];
    slots.insert(slot1, (99, other.1));
    let origin = c.stats().origin_reads;
    assert_eq!(read(&mut c, 0, 0), Level::Origin);
    assert_eq!(read(&mut c, 0, 1), Level::Origin);
    assert_eq!(c.stats().origin_reads, origin + 2);
    let stats = c.nodes()[0].stats().clone();
    assert_eq!(stats.disk_failures, 2);
    assert_eq!(stats.disk_writes, 18, "both written again from the origin");
    // Evicted from memory again, both come back from the disk, right.
    for block in 16..32 {
        read(&mut c, 0, block);
    }
    assert_eq!(read(&mut c, 0, 0), Level::LocalDisk);
    assert_eq!(read(&mut c, 0, 1), Level::LocalDisk);
}

#[test]
fn the_disk_drops_its_least_recently_used_block_when_full() {
    let mut c = cluster(AlgorithmKind::Base, 1);
    c.set_disk(0, 16);
    for block in 0..24 {
        read(&mut c, 0, block);
    }
    // 16 slots: blocks 0-7 gave theirs to 16-23.
    let origin = c.stats().origin_reads;
    assert_eq!(read(&mut c, 0, 8), Level::LocalDisk);
    assert_eq!(read(&mut c, 0, 0), Level::Origin);
    assert_eq!(c.stats().origin_reads, origin + 1);
    // Block 0 took the slot of the least recently used, 9.
    assert_eq!(read(&mut c, 0, 9), Level::Origin);
    assert!(c.nodes()[0].disk().unwrap().len() <= 16);
}

#[test]
fn the_clusters_memory_is_asked_before_the_local_disk() {
    let mut c = cluster(AlgorithmKind::Greedy, 2);
    c.set_disk(0, 64);
    for block in 0..16 {
        read(&mut c, 0, block);
    }
    // Node 1 now holds block 0 in memory; node 0's memory dropped it, its
    // disk has it: the peer serves.
    read(&mut c, 1, 0);
    assert_eq!(read(&mut c, 0, 0), Level::RemoteNode);
    // Block 1 only node 0's disk has.
    assert_eq!(read(&mut c, 0, 1), Level::LocalDisk);
    assert_eq!(c.stats().violations, 0);
}

#[test]
fn a_disk_failing_every_call_is_given_up_and_reads_go_on() {
    use coopcache_core::protocol::{DiskMiss, MAX_DISK_ERRORS};
    let mut c = cluster(AlgorithmKind::Base, 1);
    c.set_disk(0, 64);
    // Slots holding another block are no failure of the disk.
    for i in 0..u64::from(MAX_DISK_ERRORS) * 2 {
        let now = c.now();
        c.node_mut(0)
            .handle_disk_read(1000 + i, Err(DiskMiss::NotThere), now);
    }
    assert!(c.nodes()[0].disk().is_some());
    for i in 0..u64::from(MAX_DISK_ERRORS) {
        assert!(c.nodes()[0].disk().is_some(), "given up after {i}");
        let now = c.now();
        c.node_mut(0)
            .handle_disk_read(1000 + i, Err(DiskMiss::Io), now);
    }
    assert!(c.nodes()[0].disk().is_none());
    for block in 0..4 {
        assert_eq!(read(&mut c, 0, block), Level::Origin);
    }
    assert_eq!(c.stats().disk_reads, 0);
}
