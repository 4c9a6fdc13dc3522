//! Unification (Netcache sections 2.5 and 3.5, opt-in), the daemon's
//! protocol simulated: private owners holding one cluster dedup key park
//! identical blocks under one keyed content id, which meets on one host
//! and is kept there once for all of them; each owner still reads back
//! exactly the bytes it parked, checked against its own digest. Blocks of
//! privacy-critical files never unify, and an owner that parks other
//! bytes under a content id gets no honest host blamed and no other owner
//! its bytes.

use crate::idle;

use coopcache_core::coop::{AlgorithmKind, Level, NodeId};
use coopcache_core::protocol::{Digest, PeerMsg};
use coopcache_sim::protocol::LiveCluster;
use idle::{CAPACITY, PING_US, read_all};
use std::cell::RefCell;
use std::rc::Rc;

/// The private owners (busy); the other members only host.
const OWNERS: [NodeId; 3] = [0, 1, 2];
const NODES: u32 = 6;
const DEDUP: u64 = 0xd3d0;

/// Files from this id on are privacy-critical.
const CRITICAL_FROM: u64 = 1_000_000;

fn critical(file: u64) -> bool {
    file >= CRITICAL_FROM
}

/// Blocks of its own (of a critical file, so never unified) each owner
/// reads first, to be busy.
const OWN: usize = 2;

/// Owners sealing with the dedup key (or each under its own key only),
/// made busy by reading `OWN` blocks of their own, and heard so by all.
fn cluster(unify: bool) -> LiveCluster<u64> {
    let mut c = idle::idle_cluster(AlgorithmKind::Direct, NODES, |c| {
        for o in OWNERS {
            match unify {
                true => c.set_private_unifying(o, 4 * CAPACITY, DEDUP, critical),
                false => c.set_private(o, 4 * CAPACITY),
            }
        }
    });
    for o in OWNERS {
        let own = 2 * CRITICAL_FROM + 100 * u64::from(o);
        read_all(&mut c, o, own..own + OWN as u64);
    }
    c.run_for(PING_US + PING_US / 2).unwrap();
    for o in OWNERS {
        for p in OWNERS.iter().filter(|&&p| p != o) {
            assert!(!c.nodes()[o as usize].peer_status(*p).unwrap().idle);
        }
    }
    c
}

/// The blocks every owner reads (identical contents: the same base
/// image): half again its memory, so some are parked.
fn shared(from: u64) -> std::ops::Range<u64> {
    from..from + (CAPACITY + CAPACITY / 2) as u64
}

/// Of `shared`, the blocks each owner parks in its first pass (beside
/// its `OWN` blocks, which go first).
const EVICTED: usize = CAPACITY / 2;

/// Foreign blocks the non-owners hold, as their pings say.
fn hosted(c: &mut LiveCluster<u64>) -> u32 {
    c.run_for(PING_US + PING_US / 2).unwrap();
    let observer = &c.nodes()[OWNERS[0] as usize];
    (OWNERS.len() as NodeId..NODES)
        .map(|h| observer.peer_status(h).expect("heard").foreign)
        .sum()
}

/// Every owner reads `blocks`, then again: (foreign blocks hosted after
/// the first pass, origin reads in the second).
fn run(c: &mut LiveCluster<u64>, blocks: std::ops::Range<u64>) -> (u32, usize) {
    for o in OWNERS {
        read_all(c, o, blocks.clone());
    }
    let foreign = hosted(c);
    let mut origin = 0;
    for o in OWNERS {
        origin += read_all(c, o, blocks.clone())[Level::Origin.index()];
    }
    (foreign, origin)
}

#[test]
fn identical_blocks_of_several_owners_are_hosted_once_and_read_back_by_each() {
    let (mut plain, mut unified) = (cluster(false), cluster(true));
    for c in [&mut plain, &mut unified] {
        for o in OWNERS {
            read_all(c, o, shared(0));
        }
    }
    let parked = 3 * (OWN + EVICTED) as u32;
    assert_eq!(hosted(&mut plain), parked, "each owner parks its own copy");
    let once = 3 * OWN as u32 + EVICTED as u32;
    assert_eq!(hosted(&mut unified), once, "one copy for the three owners");
    let hosts = &unified.nodes()[OWNERS.len()..];
    let kept: u64 = hosts.iter().map(|n| n.stats().unified_hosted).sum();
    assert_eq!(kept, 2 * EVICTED as u64, "the second and third owner's");
    // Each owner reads its parked blocks back from the host (copies while
    // other owners parked them too), none from the origin.
    for o in OWNERS {
        let levels = read_all(&mut unified, o, shared(0));
        assert_eq!(levels[Level::Origin.index()], 0, "owner {o}");
    }
    let hosts = &unified.nodes()[OWNERS.len()..];
    let served: u64 = hosts.iter().map(|n| n.stats().unified_served).sum();
    assert!(served >= 2 * EVICTED as u64, "{served}");
    for o in OWNERS {
        let s = unified.nodes()[o as usize].stats();
        assert!(s.unified >= EVICTED as u64, "owner {o}: {s:?}");
        assert_eq!(s.integrity_failures, 0);
    }
    assert!(unified.stats().blamed.is_empty());
}

/// Every Place the owners send: (owner, id at the host, sealed bytes).
type Placed = Rc<RefCell<Vec<(NodeId, u64, Digest)>>>;

fn log_places(c: &mut LiveCluster<u64>) -> Placed {
    let log: Placed = Rc::default();
    let sink = log.clone();
    c.set_tamper(Box::new(move |from, _, msg| {
        if let PeerMsg::Place { block, data } = msg {
            sink.borrow_mut().push((from, *block, *data));
        }
    }));
    log
}

#[test]
fn privacy_critical_blocks_never_unify_and_no_host_sees_a_block_id() {
    let mut c = cluster(true);
    let log = log_places(&mut c);
    let (foreign, origin) = run(&mut c, shared(CRITICAL_FROM));
    let parked = 3 * (OWN + EVICTED) as u32;
    assert_eq!((foreign, origin), (parked, 0), "one copy per owner");
    let log = log.borrow();
    for (i, (a, id_a, data_a)) in log.iter().enumerate() {
        assert!(!shared(CRITICAL_FROM).contains(id_a), "a block id left");
        for (b, id_b, data_b) in &log[i + 1..] {
            if a != b {
                assert_ne!(id_a, id_b, "owners {a} and {b} share an id");
                assert_ne!(data_a.hash, data_b.hash, "owners {a} and {b} share bytes");
            }
        }
    }
    // Shared files: the host sees content ids, never the owners' block
    // ids, and ciphertext, never the contents.
    drop(log);
    let mut c = cluster(true);
    let log = log_places(&mut c);
    run(&mut c, shared(0));
    for (_, id, data) in log.borrow().iter() {
        assert!(!shared(0).contains(id), "a block id left");
        assert!(
            shared(0).all(|b| c.content(b).hash != data.hash),
            "contents left in the clear"
        );
    }
}

/// Owner 1 parks other bytes under the content ids owner 0 parked first
/// (it lies, or its file changed): the host keeps them for owner 1 alone,
/// and owner 0, told the host lacks its blocks, reads them from the
/// origin; no honest host is blamed and owner 0 takes no byte of owner 1's.
#[test]
fn other_bytes_under_a_content_id_never_reach_the_owner_that_parked_first() {
    let mut c = cluster(true);
    c.set_tamper(Box::new(move |from, _, msg| {
        if let PeerMsg::Place { data, .. } = msg
            && from == 1
        {
            data.hash[0] ^= 1;
        }
    }));
    read_all(&mut c, 0, shared(0));
    read_all(&mut c, 1, shared(0));
    let levels = read_all(&mut c, 0, shared(0));
    assert_eq!(levels[Level::Origin.index()], EVICTED);
    let owner = c.nodes()[0].stats();
    assert_eq!(owner.integrity_failures, 0, "{owner:?}");
    assert!(c.stats().blamed.is_empty(), "{:?}", c.stats().blamed);
    // Owner 1 gets back what it parked, which its own digest rejects.
    let levels = read_all(&mut c, 1, shared(0));
    assert_eq!(levels[Level::Origin.index()], shared(0).count());
    assert!(c.nodes()[1].stats().integrity_failures >= EVICTED as u64);
}

/// A host that alters a unified block it returns is caught by the owner's
/// digest, blamed, and the read goes to the origin.
#[test]
fn a_unified_block_altered_by_its_host_is_rejected() {
    let mut c = cluster(true);
    c.set_tamper(Box::new(move |_, to, msg| {
        if let PeerMsg::Data { data, .. } = msg
            && OWNERS.contains(&to)
        {
            data.hash[3] ^= 0x10;
        }
    }));
    let (_, origin) = run(&mut c, shared(0));
    assert_eq!(
        origin,
        3 * shared(0).count(),
        "every block parked, then read"
    );
    for o in OWNERS {
        let s = c.nodes()[o as usize].stats();
        assert_eq!(s.opened, 0, "owner {o}: nothing altered accepted");
        assert!(s.integrity_failures >= EVICTED as u64, "owner {o}: {s:?}");
    }
    assert!(!c.stats().blamed.is_empty());
}
