//! Peers' disk tiers in the simulated live cluster (the core's
//! `disk_peers.rs`): a block no member holds in memory is read from the
//! disk of a member that said it has it, checked against the manager's
//! record, before the origin; a reader's own disk comes first; a disk
//! holding other bytes never serves them; N-Chance's singlets end on a
//! peer's disk instead of nowhere.

use crate::disk::{cluster, read};
use coopcache_core::coop::{AlgorithmKind, Level};
use coopcache_sim::protocol::LiveCluster;

/// Every node's count of reads forwarded to a disk, and of blocks its
/// disk served to peers.
fn disk_traffic(c: &LiveCluster<u64>) -> (u64, u64) {
    let stats = c.nodes().iter().map(|n| n.stats());
    stats.fold((0, 0), |(f, s), st| {
        (f + st.disk_forwards, s + st.disk_served)
    })
}

#[test]
fn a_block_no_memory_holds_is_read_from_a_peers_disk_not_the_origin() {
    let mut c = cluster(AlgorithmKind::Greedy, 2);
    c.set_disk(0, 64);
    for block in 0..32 {
        assert_eq!(read(&mut c, 0, block), Level::Origin);
    }
    let origin = c.stats().origin_reads;
    // Node 0's memory holds 24-31; 0-23 only its disk has. Node 1 has no
    // disk: its reads of them come from node 0's.
    for block in 0..16 {
        assert_eq!(read(&mut c, 1, block), Level::RemoteNode, "block {block}");
    }
    assert_eq!(c.stats().origin_reads, origin);
    assert_eq!(disk_traffic(&c), (16, 16));
    assert_eq!(c.nodes()[0].stats().disk_served, 16);
    assert_eq!(c.stats().violations, 0);
}

#[test]
fn without_the_peers_disk_the_same_reads_go_to_the_origin() {
    let mut c = cluster(AlgorithmKind::Greedy, 2);
    for block in 0..32 {
        read(&mut c, 0, block);
    }
    let origin = c.stats().origin_reads;
    for block in 0..16 {
        assert_eq!(read(&mut c, 1, block), Level::Origin, "block {block}");
    }
    assert_eq!(c.stats().origin_reads, origin + 16);
    assert_eq!(disk_traffic(&c), (0, 0));
}

#[test]
fn base_reads_no_peers_disk() {
    let mut c = cluster(AlgorithmKind::Base, 2);
    c.set_disk(0, 64);
    for block in 0..32 {
        read(&mut c, 0, block);
    }
    for block in 0..4 {
        assert_eq!(read(&mut c, 1, block), Level::Origin);
    }
    assert_eq!(disk_traffic(&c), (0, 0));
}

#[test]
fn a_readers_own_disk_comes_before_a_peers() {
    let mut c = cluster(AlgorithmKind::Greedy, 2);
    c.set_disk(0, 64);
    c.set_disk(1, 64);
    for block in 0..32 {
        read(&mut c, 0, block);
    }
    for block in 0..32 {
        read(&mut c, 1, block);
    }
    // Blocks 0-15: neither memory has them, both disks do.
    let served = c.nodes()[0].stats().disk_served;
    for block in 0..8 {
        assert_eq!(read(&mut c, 1, block), Level::LocalDisk, "block {block}");
    }
    assert_eq!(c.nodes()[0].stats().disk_served, served);
    assert_eq!(c.stats().violations, 0);
}

#[test]
fn a_peers_disk_holding_other_bytes_never_serves_them() {
    let mut c = cluster(AlgorithmKind::Greedy, 2);
    c.set_disk(0, 64);
    for block in 0..32 {
        read(&mut c, 0, block);
    }
    // Block 0's slot on node 0 rots.
    let slots = c.disk_mut(0).unwrap();
    let slot = slots.iter().find(|(_, (k, _))| *k == 0).map(|(s, _)| *s);
    slots.get_mut(&slot.unwrap()).unwrap().1.hash[0] ^= 1;
    let origin = c.stats().origin_reads;
    // Node 0 finds out itself and says `NotHere`: the origin, and no
    // member blamed (node 0 sent nothing wrong).
    assert_eq!(read(&mut c, 1, 0), Level::Origin);
    assert_eq!(c.stats().origin_reads, origin + 1);
    assert_eq!(c.stats().violations, 0);
    assert!(c.stats().blamed.is_empty(), "{:?}", c.stats().blamed);
    assert_eq!(c.nodes()[0].stats().disk_served, 0);
    assert!(!c.nodes()[0].disk().unwrap().holds(0), "the slot forgotten");
    // The other slots still serve.
    assert_eq!(read(&mut c, 1, 1), Level::RemoteNode);
    assert_eq!(c.nodes()[0].stats().disk_served, 1);
}

/// Node 0 (no disk) reads 32 blocks through 8 blocks of memory under
/// N-Chance with node 1 idle, then reads them all again: the origin
/// reads of the second pass.
fn nchance_second_pass(peer_disk: bool) -> u64 {
    let mut c = cluster(AlgorithmKind::NChance, 2);
    if peer_disk {
        c.set_disk(1, 64);
    }
    for block in 0..32 {
        read(&mut c, 0, block);
    }
    let origin = c.stats().origin_reads;
    for block in 0..32 {
        read(&mut c, 0, block);
    }
    assert_eq!(c.stats().violations, 0);
    if peer_disk {
        assert!(c.nodes()[1].stats().disk_writes >= 24, "singlets written");
        assert!(c.nodes()[1].stats().disk_served > 0);
    }
    c.stats().origin_reads - origin
}

#[test]
fn nchance_singlets_end_on_a_peers_disk_not_nowhere() {
    let without = nchance_second_pass(false);
    let with = nchance_second_pass(true);
    assert!(without >= 16, "memory alone loses most: {without}");
    assert_eq!(with, 0, "every singlet on node 1's disk");
}
