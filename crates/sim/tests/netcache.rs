//! Netcache live (the daemon's protocol simulated, pings on): a busy Direct
//! node parks its evictions on the idle members advertising room, never on
//! a busy one, reads them back from there, and a host that turns busy gets
//! its memory back from its peers' blocks first.

use crate::idle;

use coopcache_core::coop::{AlgorithmKind, Level};
use coopcache_core::protocol::IDLE_AFTER_US;
use coopcache_sim::protocol::LiveCluster;
use idle::{CAPACITY, PING_US, read_all};

fn cluster(kind: AlgorithmKind, nodes: u32) -> LiveCluster<u64> {
    idle::idle_cluster(kind, nodes, |_| {})
}

/// The Netcache experiment in small: one busy node whose working set is
/// twice its memory, loops over it; alone it misses every block every time
/// (LRU on a loop), with idle peers every block after the first pass is in
/// the cluster's memory.
fn origin_reads_of_a_busy_node(kind: AlgorithmKind, idle_peers: u32) -> (usize, usize) {
    let mut c = cluster(kind, 1 + idle_peers);
    let set = 2 * CAPACITY as u64;
    read_all(&mut c, 0, 0..set);
    let levels = read_all(&mut c, 0, (0..4).flat_map(|_| 0..set));
    for n in c.nodes() {
        assert_eq!(n.stats().integrity_failures, 0);
    }
    (
        levels[Level::Origin.index()],
        levels[Level::RemoteNode.index()],
    )
}

#[test]
fn a_busy_direct_node_reads_its_evictions_back_from_idle_peers() {
    let (alone, _) = origin_reads_of_a_busy_node(AlgorithmKind::Direct, 0);
    assert_eq!(
        alone,
        4 * 2 * CAPACITY,
        "alone, a loop twice the memory always misses"
    );
    for peers in [1, 3] {
        let (origin, remote) = origin_reads_of_a_busy_node(AlgorithmKind::Direct, peers);
        assert_eq!(
            origin, 0,
            "{peers} idle peers: every block is in the cluster"
        );
        assert_eq!(
            remote,
            4 * 2 * CAPACITY,
            "{peers} idle peers: all from them"
        );
    }
}

/// Node 2 reads for itself (busy), node 1 reads nothing (idle): node 0's
/// evictions all go to node 1, none to node 2, though both are members.
#[test]
fn evictions_are_parked_only_on_members_advertising_room() {
    for kind in [AlgorithmKind::Direct, AlgorithmKind::NChance] {
        let mut c = cluster(kind, 3);
        read_all(&mut c, 2, 1000..1000 + CAPACITY as u64 / 2);
        c.run_for(PING_US + PING_US / 2).unwrap();
        assert!(!c.nodes()[0].peer_status(2).expect("heard").idle);
        assert!(c.nodes()[0].peer_status(1).expect("heard").idle);
        read_all(&mut c, 0, 0..3 * CAPACITY as u64);
        c.run_for(PING_US + PING_US / 2).unwrap();
        let foreign = |n: u32| c.nodes()[0].peer_status(n).map(|s| s.foreign);
        assert!(foreign(1) > Some(0), "{kind}: the idle member hosts");
        assert_eq!(foreign(2), Some(0), "{kind}: the busy member hosts nothing");
    }
}

/// An idle member lends all of its memory; once its own reads start, its
/// own blocks take that memory back from its peers' first (its own are
/// never evicted while a foreign block is left), it advertises itself busy,
/// and peers stop parking there.
#[test]
fn a_host_that_turns_busy_gets_its_memory_back_from_foreign_blocks_first() {
    let mut c = cluster(AlgorithmKind::Direct, 2);
    read_all(&mut c, 0, 0..3 * CAPACITY as u64);
    let host = |c: &LiveCluster<u64>| c.nodes()[1].own_status(c.now());
    assert_eq!(
        host(&c).foreign as usize,
        CAPACITY,
        "idle: all its memory lent"
    );

    let own = 100..100 + CAPACITY as u64 / 2;
    read_all(&mut c, 1, own.clone());
    let status = host(&c);
    assert_eq!(
        status.foreign as usize,
        CAPACITY / 2,
        "each own block took a foreign one's room"
    );
    assert_eq!(status.cached as usize, CAPACITY);
    assert!(!status.idle);
    let again = read_all(&mut c, 1, own.clone());
    assert_eq!(
        again[Level::Local.index()],
        own.clone().count(),
        "its own blocks all stayed"
    );

    // Its pings say busy: node 0 parks nothing more there (it has no
    // other lender, so it drops its evictions as Base would).
    c.run_for(PING_US + PING_US / 2).unwrap();
    let before = host(&c).foreign;
    read_all(&mut c, 0, 200..200 + 2 * CAPACITY as u64);
    assert_eq!(
        host(&c).foreign,
        before,
        "a busy host took new foreign blocks"
    );
    let again = read_all(&mut c, 1, own.clone());
    assert_eq!(
        again[Level::Local.index()],
        own.count(),
        "its own blocks all stayed"
    );

    // Idle again after IDLE_AFTER_US: it lends again.
    c.run_for(IDLE_AFTER_US + PING_US).unwrap();
    assert!(c.nodes()[0].peer_status(1).expect("heard").idle);
}
