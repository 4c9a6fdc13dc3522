//! The trust boundary, rule by rule: Mallory, a member with no protocol
//! of her own (a test speaks for her), sends each message from a role she
//! does not hold. Each is refused and counted against her, and each test
//! checks what the message would have done had it been accepted, so it
//! fails when its rule's check is removed (`scripts/mutate-roles.sh`
//! removes them one at a time).

use coopcache_core::coop::{AlgorithmKind, Level, LiveShape, NodeId};
use coopcache_core::policy::PolicyKind;
use coopcache_core::protocol::{Digest, MIN_TRACKED, PeerMsg, Recorded, Served, manager_of};
use coopcache_sim::protocol::{LiveCluster, content_of};

const MALLORY: NodeId = 9;
const BLOCK_SIZE: u32 = 4096;
const MEMBERS: [NodeId; 4] = [0, 1, 2, MALLORY];

fn cluster(kind: AlgorithmKind) -> LiveCluster<u64> {
    let shape = LiveShape {
        capacity: 16,
        policy: PolicyKind::Lru,
        chances: 2,
        seed: 1,
        classes: Default::default(),
    };
    let mut c = LiveCluster::new(kind, 3, &shape, BLOCK_SIZE).unwrap();
    c.add_outsider(MALLORY);
    c
}

fn evil() -> Digest {
    Digest {
        hash: [0xee; 32],
        len: BLOCK_SIZE,
    }
}

/// A block (its own file) whose manager is `m`, from `from` on.
fn managed_by(m: NodeId, from: u64) -> u64 {
    (from..)
        .find(|&b| manager_of(b, &MEMBERS) == Some(m))
        .unwrap()
}

fn violations(c: &LiveCluster<u64>, node: NodeId) -> u64 {
    let s = c.nodes()[node as usize].stats();
    s.violations.get(&MALLORY).copied().unwrap_or(0)
}

/// Node `node` reads `block` to quiescence: its level, after checking
/// the contents are the origin's.
fn read(c: &mut LiveCluster<u64>, node: NodeId, block: u64) -> Level {
    let served = c.read(node, block).unwrap().expect("completed").unwrap();
    assert_eq!(
        served.data,
        content_of(&block, BLOCK_SIZE),
        "wrong contents"
    );
    served.level
}

/// Node `node` starts reading `block`, Mallory sends it `msgs`, and the
/// cluster runs until quiet: how the read was served.
fn read_while_mallory_sends(
    c: &mut LiveCluster<u64>,
    node: NodeId,
    block: u64,
    msgs: &[PeerMsg<u64, Digest>],
) -> Served<Digest> {
    c.start_read(node, block);
    for msg in msgs {
        c.inject(MALLORY, node, msg.clone());
    }
    c.run_until_quiet().unwrap();
    c.take_done(node, block).expect("completed").unwrap()
}

#[test]
fn a_record_is_accepted_only_from_the_granted_reader_and_only_once() {
    let mut c = cluster(AlgorithmKind::Greedy);
    let b = managed_by(0, 1000);
    assert_eq!(
        read(&mut c, 1, b),
        Level::Origin,
        "node 1 reads and records"
    );
    // Mallory overwrites the record with her digest: refused.
    c.inject(
        MALLORY,
        0,
        PeerMsg::Record {
            block: b,
            digest: evil(),
        },
    );
    c.run_until_quiet().unwrap();
    assert_eq!(violations(&c, 0), 1);
    // The honest record stands: node 2 is forwarded to node 1 and checks
    // its contents against it.
    assert_eq!(read(&mut c, 2, b), Level::RemoteNode);
    // Granted herself (the first reader of another block), she records
    // once; a second record is refused.
    let d = managed_by(0, b + 1);
    c.inject(MALLORY, 0, PeerMsg::Read { block: d });
    c.run_until_quiet().unwrap();
    let told = c.take_inbox(MALLORY);
    assert!(
        told.contains(&(
            0,
            PeerMsg::FetchOrigin {
                block: d,
                record: true
            }
        )),
        "{told:?}"
    );
    let honest = content_of(&d, BLOCK_SIZE);
    c.inject(
        MALLORY,
        0,
        PeerMsg::Record {
            block: d,
            digest: honest,
        },
    );
    c.inject(
        MALLORY,
        0,
        PeerMsg::Record {
            block: d,
            digest: evil(),
        },
    );
    c.inject(MALLORY, 0, PeerMsg::HashOf { block: d });
    c.run_until_quiet().unwrap();
    assert_eq!(violations(&c, 0), 2);
    let answer = PeerMsg::HashIs {
        block: d,
        recorded: Some(Recorded {
            digest: honest,
            by: MALLORY,
        }),
    };
    assert_eq!(c.take_inbox(MALLORY), [(0, answer)]);
}

#[test]
fn an_invalidate_is_accepted_only_from_the_blocks_manager() {
    let mut c = cluster(AlgorithmKind::NChance);
    let b = managed_by(0, 2000);
    read(&mut c, 1, b);
    c.inject(MALLORY, 1, PeerMsg::Invalidate { block: b });
    c.run_until_quiet().unwrap();
    assert_eq!(violations(&c, 1), 1);
    assert_eq!(read(&mut c, 1, b), Level::Local, "node 1 kept its copy");
}

#[test]
fn a_pushed_copy_never_evicts_a_copy_cached_verified() {
    let mut c = cluster(AlgorithmKind::NChance);
    let b = managed_by(0, 2500);
    read(&mut c, 1, b);
    c.inject(
        MALLORY,
        1,
        PeerMsg::Recirculate {
            block: b,
            data: evil(),
            chances: 2,
        },
    );
    c.run_until_quiet().unwrap();
    assert_eq!(read(&mut c, 1, b), Level::Local, "node 1 kept its copy");
}

#[test]
fn an_expect_and_data_from_a_member_not_asked_are_refused() {
    let mut c = cluster(AlgorithmKind::Greedy);
    let b = managed_by(0, 3000);
    read(&mut c, 1, b);
    // Node 2's read is in flight when Mallory names herself its holder
    // and sends her own contents, digest to match.
    let expect = PeerMsg::Expect {
        block: b,
        recorded: Recorded {
            digest: evil(),
            by: MALLORY,
        },
        holder: MALLORY,
    };
    let data = PeerMsg::Data {
        block: b,
        data: evil(),
    };
    let served = read_while_mallory_sends(&mut c, 2, b, &[expect, data]);
    assert_eq!(
        served.data,
        content_of(&b, BLOCK_SIZE),
        "Mallory's contents taken"
    );
    assert_eq!(served.level, Level::RemoteNode);
    assert_eq!(violations(&c, 2), 2);
}

#[test]
fn data_from_a_member_other_than_the_holder_named_is_refused() {
    let mut c = cluster(AlgorithmKind::Greedy);
    let b = managed_by(0, 3500);
    read(&mut c, 1, b);
    // The manager has told node 2 which holder will send the block, and
    // what it hashes to, when Mallory's contents arrive.
    c.start_read(2, b);
    assert!(c.step(), "node 2's Read reaches the manager");
    assert!(c.step(), "the manager's Expect reaches node 2");
    c.inject(
        MALLORY,
        2,
        PeerMsg::Data {
            block: b,
            data: evil(),
        },
    );
    c.run_until_quiet().unwrap();
    let served = c.take_done(2, b).expect("completed").unwrap();
    assert_eq!(
        served.level,
        Level::RemoteNode,
        "Mallory's contents were checked"
    );
    assert_eq!(c.nodes()[2].stats().integrity_failures, 0);
    assert_eq!(violations(&c, 2), 1);
}

#[test]
fn a_fetch_origin_is_accepted_only_from_the_blocks_manager() {
    let mut c = cluster(AlgorithmKind::Greedy);
    let b = managed_by(0, 4000);
    read(&mut c, 1, b);
    let fetch = PeerMsg::FetchOrigin {
        block: b,
        record: true,
    };
    let served = read_while_mallory_sends(&mut c, 2, b, &[fetch]);
    assert_eq!(
        served.level,
        Level::RemoteNode,
        "sent to the origin by Mallory"
    );
    assert_eq!(violations(&c, 2), 1);
    let blamed: u64 = c.nodes()[0].stats().violations_total();
    assert_eq!(
        blamed, 0,
        "node 2 was made to send a record it was not granted"
    );
}

#[test]
fn a_hash_is_accepted_only_from_the_blocks_manager() {
    let mut c = cluster(AlgorithmKind::Hash);
    // A block in node 1's partition, managed by node 0, read by node 2.
    let owners = coopcache_core::coop::Owners::live(&MEMBERS);
    let b = (5000..)
        .find(|b| manager_of(*b, &MEMBERS) == Some(0) && owners.of(b) == 1)
        .unwrap();
    assert_eq!(
        read(&mut c, 0, b),
        Level::Origin,
        "read and placed at its owner"
    );
    let forged = PeerMsg::HashIs {
        block: b,
        recorded: Some(Recorded {
            digest: evil(),
            by: MALLORY,
        }),
    };
    let served = read_while_mallory_sends(&mut c, 2, b, &[forged]);
    assert_eq!(
        served.level,
        Level::RemoteNode,
        "the owner's contents refused"
    );
    assert_eq!(c.nodes()[2].stats().integrity_failures, 0);
    assert_eq!(violations(&c, 2), 1);
}

#[test]
fn a_forward_is_accepted_only_from_the_blocks_manager() {
    let mut c = cluster(AlgorithmKind::Greedy);
    let b = managed_by(0, 6000);
    read(&mut c, 1, b);
    // Mallory makes node 1 send the block to node 2, which never asked.
    c.inject(
        MALLORY,
        1,
        PeerMsg::Forward {
            block: b,
            reader: 2,
        },
    );
    c.run_until_quiet().unwrap();
    assert_eq!(violations(&c, 1), 1);
    assert_eq!(
        c.nodes()[2].stats().late_replies,
        0,
        "node 1 sent unasked data"
    );
}

#[test]
fn a_singlet_answer_is_accepted_only_from_the_blocks_manager() {
    let mut c = cluster(AlgorithmKind::NChance);
    let b = managed_by(0, 7000);
    read(&mut c, 1, b);
    c.inject(
        MALLORY,
        1,
        PeerMsg::Singlet {
            block: b,
            singlet: true,
        },
    );
    c.run_until_quiet().unwrap();
    assert_eq!(violations(&c, 1), 1);
}

#[test]
fn cached_is_accepted_only_where_nodes_cache_without_asking() {
    let mut c = cluster(AlgorithmKind::Greedy);
    let b = managed_by(0, 9000);
    c.inject(MALLORY, 0, PeerMsg::Cached { block: b });
    c.run_until_quiet().unwrap();
    assert_eq!(violations(&c, 0), 1);
    assert!(c.nodes()[0].directory().holders(b).is_empty());
    assert_eq!(read(&mut c, 1, b), Level::Origin);
}

#[test]
fn evict_is_accepted_only_at_the_blocks_manager_from_a_live_member() {
    const DOWN: NodeId = 8;
    let mut c = cluster(AlgorithmKind::Greedy);
    let b = managed_by(0, 9200);
    read(&mut c, 1, b);
    // At a node that does not manage the block; from a member declared
    // down (its link is up, it is in no live set): both refused, and node
    // 1's copy still serves.
    c.inject(MALLORY, 2, PeerMsg::Evict { block: b });
    c.inject(DOWN, 0, PeerMsg::Evict { block: b });
    c.run_until_quiet().unwrap();
    assert_eq!(violations(&c, 2), 1);
    assert_eq!(c.nodes()[0].stats().violations.get(&DOWN).copied(), Some(1));
    assert_eq!(read(&mut c, 2, b), Level::RemoteNode);
    // From a live member at the manager: every holder drops it.
    c.inject(MALLORY, 0, PeerMsg::Evict { block: b });
    c.run_until_quiet().unwrap();
    assert_eq!(violations(&c, 0), 0);
    assert!(c.nodes()[0].directory().holders(b).is_empty());
    assert_eq!(read(&mut c, 1, b), Level::Origin);
}

#[test]
fn a_read_from_a_member_declared_down_is_refused() {
    // Node 8 holds a certificate (its link is up) but failure detection
    // has it down: it is in no node's live set.
    const DOWN: NodeId = 8;
    let mut c = cluster(AlgorithmKind::Greedy);
    let b = managed_by(0, 9500);
    c.inject(DOWN, 0, PeerMsg::Read { block: b });
    c.run_until_quiet().unwrap();
    let refused = c.nodes()[0].stats().violations.get(&DOWN).copied();
    assert_eq!(refused, Some(1));
    // Not recorded as a holder: node 1 is not forwarded to it.
    assert!(c.nodes()[0].directory().holders(b).is_empty());
    assert_eq!(read(&mut c, 1, b), Level::Origin);
}

#[test]
fn not_here_is_accepted_only_from_a_holder_forwarded_to() {
    let mut c = cluster(AlgorithmKind::Greedy);
    let b = managed_by(0, 10_000);
    read(&mut c, 1, b);
    c.inject(MALLORY, 0, PeerMsg::NotHere { block: b });
    c.run_until_quiet().unwrap();
    assert_eq!(violations(&c, 0), 1);
    assert_eq!(read(&mut c, 2, b), Level::RemoteNode);
}

#[test]
fn missing_is_accepted_only_from_the_node_asked() {
    let mut c = cluster(AlgorithmKind::Hash);
    let owners = coopcache_core::coop::Owners::live(&MEMBERS);
    let b = (11_000..)
        .find(|b| manager_of(*b, &MEMBERS) == Some(0) && owners.of(b) == 1)
        .unwrap();
    read(&mut c, 0, b);
    let missing = PeerMsg::Missing { block: b };
    let served = read_while_mallory_sends(&mut c, 2, b, &[missing]);
    assert_eq!(
        served.level,
        Level::RemoteNode,
        "sent to the origin by Mallory"
    );
    assert_eq!(violations(&c, 2), 1);
}

#[test]
fn a_partition_read_is_accepted_only_by_the_blocks_owner() {
    let mut c = cluster(AlgorithmKind::Hash);
    let owners = coopcache_core::coop::Owners::live(&MEMBERS);
    let b = (12_000..).find(|b| owners.of(b) == 1).unwrap();
    read(&mut c, 0, b);
    c.take_inbox(MALLORY);
    c.inject(MALLORY, 2, PeerMsg::PartitionRead { block: b });
    c.run_until_quiet().unwrap();
    assert_eq!(violations(&c, 2), 1);
    assert_eq!(c.take_inbox(MALLORY), [], "node 2 answered as an owner");
}

#[test]
fn place_is_accepted_only_at_the_owner_or_a_direct_node_from_a_live_member() {
    let mut c = cluster(AlgorithmKind::Hash);
    let owners = coopcache_core::coop::Owners::live(&MEMBERS);
    let b = (13_000..).find(|b| owners.of(b) == 1).unwrap();
    let before = c.nodes()[2].usage().blocks;
    c.inject(
        MALLORY,
        2,
        PeerMsg::Place {
            block: b,
            data: evil(),
        },
    );
    c.run_until_quiet().unwrap();
    assert_eq!(violations(&c, 2), 1);
    assert_eq!(c.nodes()[2].usage().blocks, before, "placed at a non-owner");

    // Direct: any live member may park here, one no longer live may not.
    let mut c = direct_cluster();
    c.set_members(2, &[0, 1, 2]);
    c.inject(
        MALLORY,
        2,
        PeerMsg::Place {
            block: b,
            data: evil(),
        },
    );
    c.run_until_quiet().unwrap();
    assert_eq!(violations(&c, 2), 1);
    assert_eq!(
        c.nodes()[2].usage().blocks,
        0,
        "a member no longer live parked a block"
    );
}

/// A Direct cluster hearing each other's status: node 0 busy (it read a
/// block), node 2 idle, so node 1 parks its evictions at node 2 only.
/// Mallory never answers a ping, so no one parks with her.
fn direct_cluster() -> LiveCluster<u64> {
    let shape = LiveShape {
        capacity: 16,
        policy: PolicyKind::Lru,
        chances: 2,
        seed: 1,
        classes: Default::default(),
    };
    let mut c =
        LiveCluster::with_pings(AlgorithmKind::Direct, 3, &shape, BLOCK_SIZE, 1_000_000).unwrap();
    c.add_outsider(MALLORY);
    c.run_for(coopcache_core::protocol::IDLE_AFTER_US).unwrap();
    read(&mut c, 0, 1);
    c.run_for(1_500_000).unwrap();
    c.take_inbox(MALLORY);
    c
}

/// Node 1 reads 20 blocks into its 16: the first 4 are parked at node 2.
fn park_four(c: &mut LiveCluster<u64>, from: u64) -> Vec<u64> {
    let blocks: Vec<u64> = (from..)
        .filter(|&b| manager_of(b, &MEMBERS) != Some(MALLORY))
        .take(20)
        .collect();
    for &b in &blocks {
        read(c, 1, b);
    }
    assert_eq!(c.nodes()[2].own_status(c.now()).foreign, 4);
    blocks[..4].to_vec()
}

#[test]
fn reclaim_is_accepted_only_from_a_live_member() {
    let mut c = direct_cluster();
    let parked = park_four(&mut c, 14_000)[0];
    c.set_members(2, &[0, 1, 2]);
    c.take_inbox(MALLORY);
    c.inject(MALLORY, 2, PeerMsg::Reclaim { block: parked });
    c.run_until_quiet().unwrap();
    assert_eq!(violations(&c, 2), 1);
    assert_eq!(
        c.take_inbox(MALLORY),
        [],
        "the host answered a member no longer live"
    );
    assert_eq!(
        read(&mut c, 1, parked),
        Level::RemoteNode,
        "the parked block is gone"
    );
}

/// A Direct host hands a parked block back only to the member that parked
/// it: another member (here Mallory) is told it is missing, and gets none
/// of its bytes.
#[test]
fn a_direct_host_hands_a_block_back_only_to_the_client_that_parked_it() {
    let mut c = direct_cluster();
    let parked = park_four(&mut c, 19_000)[0];
    c.take_inbox(MALLORY);
    c.inject(MALLORY, 2, PeerMsg::Reclaim { block: parked });
    c.run_until_quiet().unwrap();
    assert_eq!(violations(&c, 2), 0, "Mallory is a member");
    let told = c.take_inbox(MALLORY);
    assert!(
        !told.iter().any(|(_, m)| matches!(m, PeerMsg::Data { .. })),
        "the host handed Mallory a block node 1 parked: {told:?}"
    );
    assert!(
        told.contains(&(2, PeerMsg::Missing { block: parked })),
        "{told:?}"
    );
    assert_eq!(
        read(&mut c, 1, parked),
        Level::RemoteNode,
        "the parked block is still there for node 1"
    );
}

#[test]
fn recirculate_is_accepted_only_between_nchance_peers_with_1_to_8_chances() {
    let mut c = cluster(AlgorithmKind::NChance);
    let b = managed_by(0, 15_000);
    let data = content_of(&b, BLOCK_SIZE);
    for chances in [0, 9] {
        c.inject(
            MALLORY,
            1,
            PeerMsg::Recirculate {
                block: b,
                chances,
                data,
            },
        );
    }
    c.run_until_quiet().unwrap();
    assert_eq!(violations(&c, 1), 2);
    assert_eq!(
        c.nodes()[1].usage().blocks,
        0,
        "an out-of-range singlet was kept"
    );

    let mut c = cluster(AlgorithmKind::Hash);
    c.inject(
        MALLORY,
        1,
        PeerMsg::Recirculate {
            block: b,
            chances: 2,
            data,
        },
    );
    c.run_until_quiet().unwrap();
    assert_eq!(violations(&c, 1), 1);
}

#[test]
fn a_member_reading_blocks_it_never_drops_cannot_grow_a_directory_past_its_bound() {
    let mut c = cluster(AlgorithmKind::Greedy);
    // The bound is four tracked blocks per block a node caches, at least
    // MIN_TRACKED (ProtocolConfig::for_node).
    let n = MIN_TRACKED + 1000;
    let blocks: Vec<u64> = (100_000..)
        .filter(|&b| manager_of(b, &MEMBERS) == Some(0))
        .take(n)
        .collect();
    for &b in &blocks {
        c.inject(MALLORY, 0, PeerMsg::Read { block: b });
    }
    c.run_until_quiet().unwrap();
    assert_eq!(c.nodes()[0].directory().len(), MIN_TRACKED);
    // The untracked ones were still served (from the origin).
    let told = c.take_inbox(MALLORY);
    let fetches = told
        .iter()
        .filter(|(_, m)| matches!(m, PeerMsg::FetchOrigin { .. }))
        .count();
    assert_eq!(fetches, n);
    // A node's own reads of those blocks are served, from the origin.
    assert_eq!(read(&mut c, 1, blocks[n - 1]), Level::Origin);
}

/// Contents, not senders: bytes that come from the very holder the
/// manager named are still checked against the manager's digest
/// (`verify-data`).
#[test]
fn data_from_the_holder_named_is_checked_against_the_digest() {
    let mut c = cluster(AlgorithmKind::Greedy);
    let b = managed_by(0, 16_000);
    // Mallory is granted the first read of b and records its true digest:
    // she is b's only holder, so node 2's read is forwarded to her.
    c.inject(MALLORY, 0, PeerMsg::Read { block: b });
    c.run_until_quiet().unwrap();
    let digest = content_of(&b, BLOCK_SIZE);
    c.inject(MALLORY, 0, PeerMsg::Record { block: b, digest });
    c.run_until_quiet().unwrap();
    let bad = PeerMsg::Data {
        block: b,
        data: evil(),
    };
    let served = read_while_mallory_sends(&mut c, 2, b, &[bad]);
    assert_eq!(served.data, digest, "Mallory's bytes were served");
    assert_eq!(served.level, Level::Origin);
    assert_eq!(c.nodes()[2].stats().integrity_failures, 1);
    // The origin's copy matches the record: the sender is blamed.
    assert_eq!(c.stats().blamed, [(2, MALLORY)]);
}

/// A bad record is blamed on its recorder, not on the honest holder whose
/// good bytes failed it: the reader's origin read settles which lied.
#[test]
fn a_bad_record_is_blamed_on_its_recorder_not_on_the_honest_holder() {
    let mut c = cluster(AlgorithmKind::Greedy);
    let b = managed_by(0, 18_000);
    // Mallory is granted the first read of b, records a wrong digest and
    // says she dropped it: the directory names no holder.
    c.inject(MALLORY, 0, PeerMsg::Read { block: b });
    c.run_until_quiet().unwrap();
    c.inject(
        MALLORY,
        0,
        PeerMsg::Record {
            block: b,
            digest: evil(),
        },
    );
    c.inject(
        MALLORY,
        0,
        PeerMsg::Dropped {
            block: b,
            on_disk: false,
        },
    );
    c.run_until_quiet().unwrap();
    // Node 1 reads b from the origin and holds it; node 2's read is
    // forwarded to node 1, whose good bytes fail Mallory's digest.
    assert_eq!(read(&mut c, 1, b), Level::Origin);
    assert_eq!(read(&mut c, 2, b), Level::Origin);
    assert_eq!(c.nodes()[2].stats().integrity_failures, 1);
    assert_eq!(c.stats().blamed, [(2, MALLORY)], "node 1 blamed");
}

/// A forwarded singlet is held until its manager's digest matches
/// (`verify-held`): bad bytes pushed by a member are never served.
#[test]
fn a_held_singlet_is_checked_against_the_digest() {
    let mut c = cluster(AlgorithmKind::NChance);
    let b = managed_by(0, 17_000);
    assert_eq!(read(&mut c, 2, b), Level::Origin, "node 2 records b");
    c.inject(
        MALLORY,
        1,
        PeerMsg::Recirculate {
            block: b,
            chances: 2,
            data: evil(),
        },
    );
    c.run_until_quiet().unwrap();
    assert_eq!(c.nodes()[1].stats().integrity_failures, 1);
    assert_ne!(read(&mut c, 1, b), Level::Local, "the bad copy was kept");
}
