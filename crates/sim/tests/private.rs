//! A private origin (Netcache section 3.5), the daemon's protocol
//! simulated: a busy Direct node whose origin no other member can read
//! parks its evictions on idle peers sealed, reads them back checked
//! against its own digests, tells no manager of its blocks, and serves
//! none of them to anyone; whatever a host returns altered is rejected and
//! read from the origin.

use crate::idle;

use coopcache_core::coop::{AlgorithmKind, Level, NodeId};
use coopcache_core::protocol::{Digest, PeerMsg, manager_of};
use coopcache_sim::protocol::LiveCluster;
use idle::{CAPACITY, read_all};
use std::cell::RefCell;
use std::rc::Rc;

/// The private node (busy); the others are idle.
const OWNER: NodeId = 0;

/// `nodes` Direct nodes, all idle and saying so, node 0's origin private.
fn cluster(nodes: u32) -> LiveCluster<u64> {
    idle::idle_cluster(AlgorithmKind::Direct, nodes, |c| {
        c.set_private(OWNER, 4 * CAPACITY)
    })
}

/// Every message delivered: (from, to, message).
type Log = Rc<RefCell<Vec<(NodeId, NodeId, PeerMsg<u64, Digest>)>>>;

fn log_messages(c: &mut LiveCluster<u64>) -> Log {
    let log: Log = Rc::default();
    let sink = log.clone();
    c.set_tamper(Box::new(move |from, to, msg| {
        sink.borrow_mut().push((from, to, msg.clone()))
    }));
    log
}

/// The working set: twice the owner's memory, looped over.
fn working_set() -> std::ops::Range<u64> {
    0..2 * CAPACITY as u64
}

#[test]
fn a_private_node_parks_sealed_reads_back_from_idle_peers_and_tells_no_manager() {
    let mut c = cluster(4);
    let log = log_messages(&mut c);
    read_all(&mut c, OWNER, working_set());
    let levels = read_all(&mut c, OWNER, (0..4).flat_map(|_| working_set()));
    assert_eq!(
        levels[Level::Origin.index()],
        0,
        "three idle peers hold every eviction"
    );
    assert_eq!(levels[Level::RemoteNode.index()], 4 * working_set().count());
    let owner = &c.nodes()[OWNER as usize];
    assert!(owner.stats().sealed > 0 && owner.stats().opened > 0);
    assert_eq!(owner.stats().integrity_failures, 0);
    assert!(owner.private_parked() <= 4 * CAPACITY);
    // More than its remote cache keeps (4x its memory): the oldest parked
    // blocks are dropped, which a shared node would tell their managers.
    read_all(&mut c, OWNER, 1000..1000 + 6 * CAPACITY as u64);
    assert!(c.nodes()[OWNER as usize].private_parked() <= 4 * CAPACITY);

    let read: Vec<u64> = working_set()
        .chain(1000..1000 + 6 * CAPACITY as u64)
        .collect();
    let mut placed = 0;
    for (from, to, msg) in log.borrow().iter() {
        if *from != OWNER {
            continue;
        }
        match msg {
            PeerMsg::Place { block, data } => {
                placed += 1;
                // The host sees neither the owner's block ids nor contents.
                assert!(!read.contains(block), "block id {block} left");
                assert!(
                    read.iter().all(|&b| c.content(b).hash != data.hash),
                    "a block left in the clear"
                );
                assert!(data.len > c.content(0).len, "sealed: nonce and tag added");
            }
            PeerMsg::Reclaim { .. } | PeerMsg::Ping { .. } | PeerMsg::Pong { .. } => {}
            other => panic!("the private node told node {to}: {other:?}"),
        }
    }
    assert!(placed > 0);
    for n in c.nodes() {
        for b in working_set() {
            assert!(
                n.directory().holders(b).is_empty(),
                "node {} lists holders of private block {b}",
                n.id()
            );
        }
    }
}

/// What a host may do to a sealed block it returns.
#[derive(Clone, Copy, Debug)]
enum Tampering {
    /// One bit of it flipped.
    Flip,
    /// Cut short.
    Truncate,
    /// Another block's sealed form returned in its place.
    Swap,
    /// Made up.
    Forge,
    /// An older sealed form of the same block id, as if of an older
    /// version (here: one sealed for a block id the owner parked earlier).
    Replay,
}

#[test]
fn a_sealed_block_altered_by_its_host_is_rejected_and_read_from_the_origin() {
    for how in [
        Tampering::Flip,
        Tampering::Truncate,
        Tampering::Swap,
        Tampering::Forge,
        Tampering::Replay,
    ] {
        let mut c = cluster(2);
        // Every sealed block the owner parks, remembered (what a replay or
        // a swap returns instead).
        let parked: Rc<RefCell<Vec<(u64, Digest)>>> = Rc::default();
        let seen = parked.clone();
        c.set_tamper(Box::new(move |from, to, msg| match msg {
            PeerMsg::Place { block, data } if from == OWNER => {
                seen.borrow_mut().push((*block, *data));
            }
            PeerMsg::Data { block, data } if to == OWNER => {
                let other = seen.borrow().iter().find(|(b, _)| b != block).copied();
                match how {
                    Tampering::Flip => data.hash[5] ^= 1,
                    Tampering::Truncate => data.len -= 1,
                    Tampering::Swap | Tampering::Replay => data.hash = other.unwrap().1.hash,
                    Tampering::Forge => data.hash = [0xab; 32],
                }
            }
            _ => {}
        }));
        read_all(&mut c, OWNER, working_set());
        let levels = read_all(&mut c, OWNER, working_set());
        assert_eq!(
            levels[Level::Origin.index()],
            working_set().count(),
            "{how:?}: every altered block read from the origin"
        );
        let owner = &c.nodes()[OWNER as usize];
        assert!(
            owner.stats().integrity_failures >= CAPACITY as u64,
            "{how:?}: {:?}",
            owner.stats()
        );
        assert_eq!(owner.stats().opened, 0, "{how:?}: nothing altered accepted");
        assert!(
            c.stats()
                .blamed
                .iter()
                .all(|&(by, blamed)| by == OWNER && blamed == 1),
            "{how:?}: the host is blamed: {:?}",
            c.stats().blamed
        );
    }
}

/// The member allowed to ask for the owner's blocks: none. A member that
/// learnt their ids (it hosts them) asks for them back as if it had parked
/// them, or, as their manager, forwards a read of one to itself: it is
/// told the owner lacks them, and gets no byte of them.
#[test]
fn no_member_is_served_a_private_block() {
    let mut c = cluster(2);
    let thief: NodeId = 9;
    c.add_outsider(thief);
    read_all(&mut c, OWNER, working_set());
    // Blocks now in the owner's own cache (the last ones read).
    let cached: Vec<u64> = working_set().rev().take(4).collect();
    let members: Vec<NodeId> = vec![0, 1, thief];
    let managed = (0..10_000u64)
        .find(|&b| manager_of(b, &members) == Some(thief))
        .expect("some block is the thief's to manage");
    read_all(&mut c, OWNER, [managed]);
    for &block in &cached {
        c.inject(thief, OWNER, PeerMsg::Reclaim { block });
    }
    c.inject(
        thief,
        OWNER,
        PeerMsg::Forward {
            block: managed,
            reader: thief,
        },
    );
    c.run_until_quiet().unwrap();
    let inbox = c.take_inbox(thief);
    for (_, msg) in &inbox {
        assert!(
            !matches!(msg, PeerMsg::Data { .. }),
            "private contents served: {msg:?}"
        );
    }
    let missing = inbox
        .iter()
        .filter(|(_, m)| matches!(m, PeerMsg::Missing { .. }))
        .count();
    let not_here = inbox
        .iter()
        .filter(|(_, m)| matches!(m, PeerMsg::NotHere { .. }))
        .count();
    assert_eq!(
        (missing, not_here),
        (cached.len(), 1),
        "every request refused: {inbox:?}"
    );
}
