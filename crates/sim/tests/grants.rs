//! A granted reader whose origin read outlasts its grant: the readers
//! forwarded to it stop waiting, but its record is still accepted, so the
//! block is recorded and the next reader is served from its memory. (A
//! writer's node taking in a whole file queues its origin reads behind
//! each other; a record refused for coming late left every such block
//! unrecorded, and every later reader went to the origin.)

use coopcache_core::coop::{AlgorithmKind, Level, LiveShape};
use coopcache_core::policy::PolicyKind;
use coopcache_core::protocol::manager_of;
use coopcache_sim::protocol::{LiveCluster, content_of};

const BLOCK_SIZE: u32 = 4096;

fn grants(c: &LiveCluster<u64>, node: usize) -> usize {
    let tables = c.nodes()[node].occupancy();
    tables
        .iter()
        .find(|o| o.table == "grants")
        .expect("grants table")
        .len
}

/// Two Greedy nodes and a block node 1 manages.
fn two_nodes() -> (LiveCluster<u64>, u64) {
    let shape = LiveShape {
        capacity: 16,
        policy: PolicyKind::Lru,
        chances: 2,
        seed: 1,
        classes: Default::default(),
    };
    let c = LiveCluster::new(AlgorithmKind::Greedy, 2, &shape, BLOCK_SIZE).unwrap();
    let b = (1000u64..)
        .find(|&b| manager_of(b, &[0, 1]) == Some(1))
        .unwrap();
    (c, b)
}

#[test]
fn a_record_after_the_grant_lapsed_is_still_accepted() {
    let (mut c, b) = two_nodes();

    // Node 0 asks node 1, is told to read the origin and record; its
    // origin read is in flight while time passes beyond the grant.
    c.start_read(0, b);
    assert!(c.step() && c.step(), "Read, then FetchOrigin");
    assert_eq!(grants(&c, 1), 1);
    let timeout = c.nodes()[1].peer_timeout();
    c.advance(c.now() + 4 * timeout);
    c.run_until_quiet().unwrap();
    let served = c.take_done(0, b).expect("completed").unwrap();
    assert_eq!(served.level, Level::Origin);
    assert_eq!(c.stats().violations, 0, "the late record was refused");

    // Node 1 reads it: from node 0's memory, checked against the record.
    let served = c.read(1, b).unwrap().expect("completed").unwrap();
    assert_eq!(served.data, content_of(&b, BLOCK_SIZE));
    assert_eq!(served.level, Level::RemoteNode, "the record was lost");
    assert_eq!(c.stats().origin_reads, 1);
    assert_eq!(grants(&c, 1), 0, "a used grant is forgotten");
}

#[test]
fn a_lapsed_grant_is_forgotten_at_its_second_deadline() {
    let (mut c, b) = two_nodes();
    c.start_read(0, b);
    assert!(c.step() && c.step(), "Read, then FetchOrigin");
    let timeout = c.nodes()[1].peer_timeout();
    c.advance(c.now() + 4 * timeout);
    assert_eq!(grants(&c, 1), 1, "lapsed, still remembered");
    // The origin read takes far longer still: the grant is forgotten
    // (the table holds no grant for ever), and the record, when it
    // comes, is refused.
    c.advance(c.now() + 1000 * timeout);
    assert_eq!(
        grants(&c, 1),
        0,
        "the lapsed grant outlived its second deadline"
    );
    c.run_until_quiet().unwrap();
    assert_eq!(c.stats().violations, 1);
    let served = c.read(1, b).unwrap().expect("completed").unwrap();
    assert_eq!(served.level, Level::Origin, "no record, no forward");
}
