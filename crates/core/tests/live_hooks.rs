//! The hooks a live driver needs from the cooperation state machines: a
//! manager without memory (a node managing a slice of the files), forgetting
//! a failed node, N-Chance forwarding over the live members only, and
//! Hash-Distributed partitions over the live members.

use coopcache_core::coop::LiveNode;
use coopcache_core::coop::{
    Addr, DirectNode, DirectoryManager, HashNode, Level, ManagerMachine, ManagerMode, Msg,
    NChanceNode, NoData, NodeMachine, Outbox, Owners, hash_owner,
};
use coopcache_core::policy::Lru;

type Out = Outbox<u64, ()>;

fn drain(out: &mut Out) -> Vec<(Addr, Addr, Msg<u64, ()>)> {
    std::iter::from_fn(|| out.next_message())
        .map(|e| (e.from, e.to, e.msg))
        .collect()
}

fn manager(mode: ManagerMode) -> DirectoryManager<u64, Lru<u64>, NoData> {
    DirectoryManager::new(4, Lru::new(8).unwrap(), NoData, mode)
}

fn read(m: &mut impl ManagerMachine<u64, ()>, node: u32, block: u64, out: &mut Out) {
    let msg = Msg::Read {
        block,
        reader: node,
        hops: 1,
    };
    m.handle(Addr::Node(node), msg, 0, out);
}

fn fetched(m: &mut impl ManagerMachine<u64, ()>, node: u32, block: u64, out: &mut Out) {
    let msg = Msg::Fetched {
        block,
        data: (),
        reader: node,
        hops: 2,
    };
    m.handle(Addr::Origin, msg, 0, out);
}

#[test]
fn a_manager_without_memory_never_serves_from_it() {
    let mut out = Out::default();
    for (memory, second_read_goes_to) in [(true, Addr::Node(1)), (false, Addr::Origin)] {
        let m = manager(ManagerMode::default());
        let mut m = if memory { m } else { m.without_memory() };
        read(&mut m, 0, 7, &mut out);
        fetched(&mut m, 0, 7, &mut out);
        drain(&mut out);
        read(&mut m, 1, 7, &mut out);
        let sent = drain(&mut out);
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert_eq!(sent[0].1, second_read_goes_to, "memory {memory}: {sent:?}");
        if let Msg::Data { level, .. } = sent[0].2 {
            assert_eq!(level, Level::ManagerMemory);
        }
    }
}

#[test]
fn a_forgotten_node_is_never_forwarded_to() {
    let forwarding = ManagerMode {
        forward: true,
        ..ManagerMode::default()
    };
    let mut m = manager(forwarding).without_memory();
    let mut out = Out::default();
    for node in [0, 1] {
        read(&mut m, node, 7, &mut out);
    }
    read(&mut m, 2, 9, &mut out);
    drain(&mut out);
    assert_eq!(m.forget_node(0), 1);
    assert_eq!(m.forget_node(2), 1);
    assert_eq!(m.directory().len(), 1, "block 9 had no other holder");
    read(&mut m, 3, 7, &mut out);
    let sent = drain(&mut out);
    assert_eq!(sent[0].1, Addr::Node(1), "{sent:?}");
    read(&mut m, 3, 9, &mut out);
    assert_eq!(drain(&mut out)[0].1, Addr::Origin);
}

/// Node 2 of 5 evicting singlets: which peer each forward goes to.
fn forward_targets(peers: Option<&[u32]>) -> Vec<u32> {
    let mut node = NChanceNode::new(2, 5, 2, Lru::new(1).unwrap(), NoData, 42).unwrap();
    if let Some(peers) = peers {
        node.set_peers(peers);
    }
    let mut out = Out::default();
    let mut targets = Vec::new();
    for block in 0..400u64 {
        node.read(block, 0, &mut out);
        node.handle(
            Addr::Manager,
            Msg::Data {
                block,
                data: (),
                level: Level::Origin,
                hops: 2,
            },
            0,
            &mut out,
        );
        // The previous block was evicted and asked about: it is a singlet.
        if block > 0 {
            let answer = Msg::Singlet {
                block: block - 1,
                singlet: true,
            };
            node.handle(Addr::Manager, answer, 0, &mut out);
        }
        for (_, to, msg) in drain(&mut out) {
            if let (Addr::Node(peer), Msg::Recirculate { .. }) = (to, msg) {
                targets.push(peer);
            }
        }
    }
    targets
}

#[test]
fn nchance_over_all_live_members_draws_as_the_simulator() {
    let sim = forward_targets(None);
    assert!(sim.len() > 300, "{} forwards", sim.len());
    assert_eq!(forward_targets(Some(&[4, 0, 3, 1, 2])), sim);
}

#[test]
fn nchance_forwards_only_to_live_members() {
    let targets = forward_targets(Some(&[3, 9]));
    assert!(targets.iter().all(|&p| p == 3 || p == 9), "{targets:?}");
    assert!(targets.contains(&3) && targets.contains(&9));
    assert!(forward_targets(Some(&[2])).is_empty(), "no peer but itself");
}

/// What node 0 (2 blocks of cache) sends when its own miss needs room while
/// it holds its own block 10 (older) and block 99 forwarded by node 1.
fn evicted_for_own_miss(foreign_first: bool) -> Vec<(Addr, Msg<u64, ()>)> {
    let mut node = NChanceNode::new(0, 2, 2, Lru::new(2).unwrap(), NoData, 1)
        .unwrap()
        .with_foreign_first(foreign_first);
    let mut out = Out::default();
    node.read(10, 0, &mut out);
    let data = Msg::Data {
        block: 10,
        data: (),
        level: Level::Origin,
        hops: 2,
    };
    node.handle(Addr::Manager, data, 0, &mut out);
    let parked = Msg::Recirculate {
        block: 99,
        data: (),
        chances: 2,
    };
    node.handle(Addr::Node(1), parked, 0, &mut out);
    drain(&mut out);
    node.read(11, 0, &mut out);
    drain(&mut out)
        .into_iter()
        .filter(|(_, _, m)| !matches!(m, Msg::Read { .. }))
        .map(|(_, to, m)| (to, m))
        .collect()
}

#[test]
fn foreign_first_evicts_a_forwarded_block_before_the_nodes_own() {
    // The paper's N-Chance evicts by recency: its own block 10 goes (and,
    // of unknown status, is asked about).
    assert_eq!(
        evicted_for_own_miss(false),
        vec![(Addr::Manager, Msg::IsSinglet { block: 10 })]
    );
    // Netcache's rule: the forwarded block goes, passed on with its last
    // chance, and the node keeps its own.
    assert_eq!(
        evicted_for_own_miss(true),
        vec![
            (Addr::Manager, Msg::Moved { block: 99, to: 1 }),
            (
                Addr::Node(1),
                Msg::Recirculate {
                    block: 99,
                    data: (),
                    chances: 1
                }
            ),
        ]
    );
}

#[test]
fn hash_partitions_over_all_live_members_are_the_simulators() {
    let all = Owners::live(&[3, 0, 2, 1, 3]);
    for block in 0..2000u64 {
        assert_eq!(all.of(&block), hash_owner(&block, 4), "block {block}");
    }
}

#[test]
fn hash_partitions_move_to_the_live_members() {
    // Node 3's misses go to a partition owner: itself (through the
    // manager) or node 9, never a node that is not live.
    let mut node = HashNode::new(
        3,
        12,
        Lru::new(4).unwrap(),
        NoData,
        Lru::new(4).unwrap(),
        NoData,
    );
    node.set_peers(&[9, 3]);
    let mut out = Out::default();
    let mut to = Vec::new();
    for block in 0..200u64 {
        node.read(block, 0, &mut out);
        for (_, dest, msg) in drain(&mut out) {
            if let Msg::Read { .. } = msg {
                to.push(dest);
            }
        }
    }
    assert!(
        to.iter()
            .all(|d| *d == Addr::Node(9) || *d == Addr::Manager),
        "{to:?}"
    );
    assert!(to.contains(&Addr::Node(9)) && to.contains(&Addr::Manager));

    // The manager places the blocks its memory evicts in live partitions.
    let mode = ManagerMode {
        hash_partitions: true,
        ..ManagerMode::default()
    };
    let mut m = DirectoryManager::new(12, Lru::new(1).unwrap(), NoData, mode);
    m.set_peers(&[5, 7]);
    let mut placed = Vec::new();
    for block in 0..100u64 {
        read(&mut m, 5, block, &mut out);
        fetched(&mut m, 5, block, &mut out);
        for (_, dest, msg) in drain(&mut out) {
            if let Msg::Place { .. } = msg {
                placed.push(dest);
            }
        }
    }
    assert!(placed.len() > 90, "{} placements", placed.len());
    assert!(
        placed
            .iter()
            .all(|d| *d == Addr::Node(5) || *d == Addr::Node(7)),
        "{placed:?}"
    );
}

/// Where node 0 of 2 sends `Place`s after reading blocks 0..100 from the
/// origin, and whether its own partition then serves its own later reads.
fn places_after_origin_reads(placing: bool) -> (Vec<Addr>, usize) {
    let node = HashNode::new(
        0,
        2,
        Lru::new(1).unwrap(),
        NoData,
        Lru::new(200).unwrap(),
        NoData,
    );
    let mut node = if placing {
        node.placing_fetches()
    } else {
        node
    };
    let mut out = Out::default();
    let mut placed = Vec::new();
    let mut own = Vec::new();
    for block in 0..100u64 {
        node.read(block, 0, &mut out);
        let data = Msg::Data {
            block,
            data: (),
            level: Level::Origin,
            hops: 2,
        };
        node.handle(Addr::Manager, data, 0, &mut out);
        for (_, dest, msg) in drain(&mut out) {
            if let Msg::Place { .. } = msg {
                placed.push(dest);
                if dest == Addr::Node(0) {
                    // The driver delivers a place to itself to its node.
                    node.handle(Addr::Node(0), msg, 0, &mut out);
                    own.push(block);
                }
            }
        }
    }
    drain(&mut out);
    // Its own partition's blocks are local hits once the local part (one
    // block) has moved on.
    let mut hits = 0;
    for &block in own.iter().filter(|&&b| b != 99) {
        node.read(block, 0, &mut out);
        hits += out.drain_done().filter(|d| d.level == Level::Local).count();
        drain(&mut out);
    }
    (placed, hits)
}

#[test]
fn a_reader_places_what_it_fetched_when_the_manager_keeps_nothing() {
    let (placed, hits) = places_after_origin_reads(true);
    assert_eq!(placed.len(), 100, "one place per block fetched");
    for block in 0..100u64 {
        assert_eq!(placed[block as usize], Addr::Node(hash_owner(&block, 2)));
    }
    assert!(placed.contains(&Addr::Node(1)) && placed.contains(&Addr::Node(0)));
    let own = placed.iter().filter(|&&d| d == Addr::Node(0)).count();
    assert!(
        hits >= own - 1 && hits > 0,
        "{hits} hits of {own} own blocks"
    );
    // The simulator's nodes leave it to the manager's memory.
    assert_eq!(places_after_origin_reads(false), (Vec::new(), 0));
}

type Direct = DirectNode<u64, Lru<u64>, NoData>;

/// A live Direct node of members 0 to 3 with `memory` blocks, parking up
/// to 4 blocks at `lenders`.
fn direct(id: u32, memory: usize, lenders: &[u32]) -> Direct {
    let remote = Lru::new(4).unwrap();
    let mut n = DirectNode::new(id, Lru::new(memory).unwrap(), NoData, remote, NoData)
        .hosted_by_peers(NoData, 1)
        .unwrap();
    n.set_peers(&[0, 1, 2, 3]);
    n.set_lenders(lenders);
    n
}

fn place(block: u64) -> Msg<u64, ()> {
    Msg::Place {
        block,
        data: (),
        replaces: None,
    }
}

/// Node `n` reads `block` from the origin; what it sends.
fn read_from_origin(n: &mut Direct, block: u64, out: &mut Out) -> Vec<(Addr, Addr, Msg<u64, ()>)> {
    n.read(block, 0, out);
    let data = Msg::Data {
        block,
        data: (),
        level: Level::Origin,
        hops: 2,
    };
    n.handle(Addr::Manager, data, 0, out);
    out.drain_done().for_each(drop);
    drain(out)
}

#[test]
fn a_live_direct_node_parks_its_evictions_at_its_host_and_reads_them_back() {
    let (mut client, mut host) = (direct(0, 1, &[1]), direct(1, 1, &[]));
    let mut out = Out::default();
    read_from_origin(&mut client, 1, &mut out);
    let sent = read_from_origin(&mut client, 2, &mut out);
    let place = Msg::Place {
        block: 1,
        data: (),
        replaces: None,
    };
    assert!(
        sent.contains(&(Addr::Node(0), Addr::Node(1), place.clone())),
        "{sent:?}"
    );
    host.handle(Addr::Node(0), place, 0, &mut out);
    assert_eq!(host.len(), 1, "the host keeps it");

    // Block 1 again: asked of the host, not the manager; the host hands
    // it back (it leaves the hosted region) in two hops.
    client.read(1, 0, &mut out);
    let sent = drain(&mut out);
    let ask = Msg::Forward {
        block: 1,
        reader: 0,
        hops: 1,
    };
    assert!(
        sent.contains(&(Addr::Node(0), Addr::Node(1), ask.clone())),
        "{sent:?}"
    );
    assert!(
        !sent.iter().any(|(_, to, _)| *to == Addr::Manager),
        "{sent:?}"
    );
    host.handle(Addr::Node(0), ask, 0, &mut out);
    let reply = drain(&mut out);
    assert_eq!(host.len(), 0);
    let [
        (
            _,
            Addr::Node(0),
            data @ Msg::Data {
                level: Level::RemoteNode,
                hops: 2,
                ..
            },
        ),
    ] = &reply[..]
    else {
        panic!("{reply:?}");
    };
    client.handle(Addr::Node(1), data.clone(), 0, &mut out);
    let done: Vec<_> = out.drain_done().collect();
    assert_eq!((done[0].block, done[0].level), (1, Level::RemoteNode));
}

#[test]
fn a_live_direct_node_whose_host_left_or_lost_a_block_reads_through_the_manager() {
    let mut client = direct(0, 1, &[1]);
    let mut out = Out::default();
    read_from_origin(&mut client, 1, &mut out);
    read_from_origin(&mut client, 2, &mut out);
    // Host 1 left, with block 1: asked of the manager, not of a dead host.
    client.set_peers(&[0, 2, 3]);
    client.read(1, 0, &mut out);
    let sent = drain(&mut out);
    assert!(
        sent.iter()
            .any(|m| matches!(m, (_, Addr::Manager, Msg::Read { block: 1, .. }))),
        "{sent:?}"
    );
    assert!(
        !sent.iter().any(|(_, to, _)| *to == Addr::Node(1)),
        "{sent:?}"
    );

    // A host asked for a block it does not have hands the read back.
    let mut other = direct(2, 1, &[]);
    let ask = Msg::Forward {
        block: 1,
        reader: 0,
        hops: 1,
    };
    other.handle(Addr::Node(0), ask, 0, &mut out);
    let reply = drain(&mut out);
    assert!(
        matches!(
            reply[..],
            [(
                _,
                Addr::Manager,
                Msg::NotHere {
                    block: 1,
                    reader: 0,
                    hops: 2
                }
            )]
        ),
        "{reply:?}"
    );

    // With no peer lending, an eviction is dropped and the manager told.
    let mut alone = direct(0, 1, &[]);
    read_from_origin(&mut alone, 1, &mut out);
    let sent = read_from_origin(&mut alone, 2, &mut out);
    assert!(
        sent.contains(&(Addr::Node(0), Addr::Manager, Msg::Dropped { block: 1 })),
        "{sent:?}"
    );
    assert!(!sent.iter().any(|(_, _, m)| matches!(m, Msg::Place { .. })));
    alone.read(1, 0, &mut out);
    let sent = drain(&mut out);
    assert!(
        sent.iter()
            .any(|m| matches!(m, (_, Addr::Manager, Msg::Read { block: 1, .. }))),
        "{sent:?}"
    );
}

/// Evictions go to the peers advertising room, drawn at random, never to a
/// member that does not lend.
#[test]
fn a_live_direct_node_parks_only_at_lenders_drawn_at_random() {
    let mut client = direct(0, 1, &[1, 3]);
    let mut out = Out::default();
    let mut at = [0usize; 4];
    for block in 0..41u64 {
        for (_, to, m) in read_from_origin(&mut client, block, &mut out) {
            if let (Addr::Node(n), Msg::Place { .. }) = (to, m) {
                at[n as usize] += 1;
            }
        }
    }
    assert_eq!(at[0] + at[2], 0, "parked at a member not lending: {at:?}");
    assert_eq!(at[1] + at[3], 40, "{at:?}");
    assert!(at[1] > 5 && at[3] > 5, "not drawn at random: {at:?}");
}

/// A host's memory is shared: its peers' blocks take free room, then the
/// oldest foreign block's; its own blocks give way only while it is idle,
/// and its own reads take room from foreign blocks first.
#[test]
fn a_host_lends_its_own_memory_only_while_idle_and_takes_it_back_first() {
    let mut out = Out::default();
    let mut host = direct(1, 2, &[]);
    read_from_origin(&mut host, 10, &mut out);
    // Busy (it just read): one free block taken, then foreign blocks
    // replace each other; its own block 10 stays.
    for b in [1, 2, 3] {
        host.handle(Addr::Node(0), place(b), 0, &mut out);
    }
    assert_eq!((host.len(), host.foreign()), (2, 1));
    host.read(10, 0, &mut out);
    assert_eq!(out.drain_done().next().map(|d| d.level), Some(Level::Local));
    // Its own read of a new block takes the foreign block's room.
    read_from_origin(&mut host, 11, &mut out);
    assert_eq!((host.len(), host.foreign()), (2, 0));
    // Busy with all of its memory its own: a parked block is refused.
    host.handle(Addr::Node(0), place(4), 0, &mut out);
    assert_eq!((host.len(), host.foreign()), (2, 0));
    // Idle: its own cold blocks make room (the manager told).
    host.set_idle(true);
    host.handle(Addr::Node(0), place(5), 0, &mut out);
    host.handle(Addr::Node(0), place(6), 0, &mut out);
    assert_eq!((host.len(), host.foreign()), (2, 2));
    let sent = drain(&mut out);
    for own in [10, 11] {
        assert!(
            sent.contains(&(Addr::Node(1), Addr::Manager, Msg::Dropped { block: own })),
            "{sent:?}"
        );
    }
}

#[test]
fn a_host_hands_back_a_parked_block_also_when_it_caches_one_itself() {
    let (mut client, mut host) = (direct(0, 1, &[1]), direct(1, 2, &[]));
    let mut out = Out::default();
    read_from_origin(&mut host, 1, &mut out);
    read_from_origin(&mut client, 1, &mut out);
    for (_, to, msg) in read_from_origin(&mut client, 2, &mut out) {
        if to == Addr::Node(1) {
            host.handle(Addr::Node(0), msg, 0, &mut out);
        }
    }
    assert_eq!(host.len(), 2, "its own block 1 and the parked block 1");
    client.read(1, 0, &mut out);
    for (_, to, msg) in drain(&mut out) {
        if to == Addr::Node(1) {
            host.handle(Addr::Node(0), msg, 0, &mut out);
        }
    }
    // Answered (from either copy), and the region no longer holds it: the
    // client's remote cache does not count it any more.
    assert!(
        drain(&mut out)
            .iter()
            .any(|m| matches!(m.2, Msg::Data { block: 1, .. }))
    );
    assert_eq!(host.len(), 2, "its own block 1 and the parked block 2");
}

/// With reads in flight at once, a live Direct node can evict a block
/// whose bytes have not come yet: there is nothing to park, so it is
/// dropped (the manager told), not recorded in the remote cache, where a
/// later read would ask the host for a block it never got.
#[test]
fn a_live_direct_node_parks_only_blocks_whose_bytes_have_come() {
    use coopcache_core::protocol::{Digest, MemStore};
    let store = MemStore::<u64, Digest>::default;
    let remote = Lru::new(4).unwrap();
    let mut client = DirectNode::new(0, Lru::new(1).unwrap(), store(), remote, store())
        .hosted_by_peers(store(), 1)
        .unwrap();
    client.set_peers(&[0, 1]);
    client.set_lenders(&[1]);
    let mut out = Outbox::<u64, Digest>::default();
    client.read(1, 0, &mut out);
    client.read(2, 0, &mut out);
    let sent: Vec<_> = std::iter::from_fn(|| out.next_message())
        .map(|e| (e.to, e.msg))
        .collect();
    assert!(
        sent.contains(&(Addr::Manager, Msg::Dropped { block: 1 })),
        "{sent:?}"
    );
    assert!(
        !sent.iter().any(|(_, m)| matches!(m, Msg::Place { .. })),
        "{sent:?}"
    );
    client.read(1, 0, &mut out);
    let sent: Vec<_> = std::iter::from_fn(|| out.next_message())
        .map(|e| (e.to, e.msg))
        .collect();
    assert!(
        sent.iter()
            .any(|(to, m)| *to == Addr::Manager && matches!(m, Msg::Read { block: 1, .. })),
        "{sent:?}"
    );
    assert!(
        !sent.iter().any(|(to, _)| *to == Addr::Node(1)),
        "asked the host for a block never parked: {sent:?}"
    );
}
