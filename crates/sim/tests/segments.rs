//! Parallel segment fetch (C2Cfs section 4.3): when several peers hold a
//! file, a reader takes its blocks from all of them, not from the first
//! to have recorded it.

use coopcache_core::coop::{AlgorithmKind, Level, LiveShape, NodeId};
use coopcache_core::policy::PolicyKind;
use coopcache_core::protocol::PeerMsg;
use coopcache_sim::protocol::{LiveCluster, content_of};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

const BLOCK_SIZE: u32 = 4096;
const BLOCKS: u64 = 300;

#[test]
fn a_third_reader_takes_the_file_from_both_holders() {
    let shape = LiveShape {
        capacity: 2 * BLOCKS as usize,
        policy: PolicyKind::Lru,
        chances: 2,
        seed: 1,
        classes: Default::default(),
    };
    let mut c = LiveCluster::new(AlgorithmKind::Greedy, 3, &shape, BLOCK_SIZE).unwrap();
    // Who sent node 2 each block's bytes.
    let senders: Rc<RefCell<BTreeMap<NodeId, u64>>> = Rc::default();
    let seen = senders.clone();
    c.set_tamper(Box::new(move |from, to, msg| {
        if to == 2 && matches!(msg, PeerMsg::Data { .. }) {
            *seen.borrow_mut().entry(from).or_default() += 1;
        }
    }));

    // Node 0 reads the file from the origin, node 1 from node 0: both
    // hold every block.
    for reader in [0, 1] {
        for b in 0..BLOCKS {
            c.read(reader, b).unwrap().expect("completed").unwrap();
        }
    }
    assert_eq!(c.stats().origin_reads, BLOCKS);

    for b in 0..BLOCKS {
        let served = c.read(2, b).unwrap().expect("completed").unwrap();
        assert_eq!(served.data, content_of(&b, BLOCK_SIZE));
        assert_eq!(served.level, Level::RemoteNode);
    }
    assert_eq!(c.stats().origin_reads, BLOCKS, "node 2 read the origin");
    assert_eq!(c.stats().violations, 0);
    let senders = senders.borrow();
    assert_eq!(senders.values().sum::<u64>(), BLOCKS, "{senders:?}");
    // Each holder serves about half (binomial, 300 draws: 150 ± 26 at
    // three standard deviations).
    for holder in [0, 1] {
        let n = senders.get(&holder).copied().unwrap_or(0);
        assert!(
            (BLOCKS / 4..=3 * BLOCKS / 4).contains(&n),
            "holder {holder} served {n} of {BLOCKS}: {senders:?}"
        );
    }
}
