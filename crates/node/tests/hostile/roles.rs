//! Messages from a role the sender does not hold, against real daemons
//! over TLS: refused, counted against the sender the link authenticated,
//! and without effect. (`crates/sim/tests/roles.rs` has one test per rule
//! against the same protocol code, each shown to fail with its check
//! removed by `scripts/mutate-roles.sh`.)

use super::*;
use coopcache_core::coop::AlgorithmKind;

/// The attack that once made every node of a 3-node cluster serve a
/// member's bytes for a file already cached with an honest record, and go
/// on serving them after she left: with a plain member certificate,
/// Mallory (neither the files' manager nor their first reader) reads each
/// block to become a holder, records the digest of her own bytes for it,
/// and tells every node to invalidate its copy. Every node refuses the
/// record and the invalidations, keeps its copy, and serves the origin's
/// bytes. Her `Read` makes her one of each block's holders, so the manager
/// may send node 2's read to her (parallel segment fetch spreads reads over
/// holders): her bytes then fail the check against the honest record and
/// cost that read an origin read, never a wrong byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_cannot_forge_a_record_or_invalidate_other_nodes_copies() {
    let (c, mut mallory, names) =
        attacked_cluster_of(3, "f", AlgorithmKind::NChance, Duration::from_secs(5)).await;
    let targets = targets(&c, &names).await;
    assert!(targets.len() >= 16, "{} blocks to attack", targets.len());
    // Nodes 0 and 1 read every block: cached, with honest records.
    for t in &targets {
        for node in &c.nodes[..2] {
            node.read_block(&t.path, &t.version, t.block.index)
                .await
                .unwrap();
        }
    }
    let evil = |t: &Target| {
        let mut v = b"EVIL bytes ".repeat(BLOCK_SIZE as usize / 11 + 1);
        v.truncate(t.now.len());
        Bytes::from(v)
    };
    for t in &targets {
        mallory
            .answers
            .lock()
            .unwrap()
            .insert(t.block, (Answer::OtherBlock, evil(t)));
        let block = t.block;
        let digest = Block::new(evil(t)).digest();
        mallory
            .send(t.manager, &Wire::Peer(PeerMsg::Read { block }))
            .await;
        let record = PeerMsg::Record { block, digest };
        mallory.send(t.manager, &Wire::Peer(record)).await;
        for n in 0..3 {
            let invalidate = PeerMsg::Invalidate { block };
            mallory.send(n, &Wire::Peer(invalidate)).await;
        }
    }
    for n in 0..3 {
        mallory.barrier(n).await;
    }
    // Every node serves the origin's bytes: nodes 0 and 1 from their own
    // copies, node 2 from theirs, checked against the honest records, or
    // from the origin after the check caught Mallory's bytes.
    let mut from_origin = 0;
    for t in &targets {
        for (n, node) in c.nodes.iter().enumerate() {
            let (data, level) = node
                .read_block(&t.path, &t.version, t.block.index)
                .await
                .unwrap();
            assert!(data == t.now, "node {n} served bad bytes for {:?}", t.block);
            match (n, level) {
                (0 | 1, Level::Local) | (2, Level::RemoteNode) => {}
                (2, Level::Origin) => from_origin += 1,
                _ => panic!("node {n}, block {:?}: {level:?}", t.block),
            }
        }
    }
    let answered = mallory.answered.lock().unwrap().len();
    let mut violations = 0;
    let mut failures = 0;
    for node in &c.nodes {
        let s = node.status().await.unwrap();
        assert_eq!(s.timeouts, 0, "{s:?}");
        failures += s.integrity_failures;
        violations += s.protocol_violations;
    }
    // Each forward to her cost one failed check and one origin read.
    assert_eq!(failures, answered as u64, "checks failed, forwards to her");
    assert_eq!(from_origin, answered, "origin reads, forwards to her");
    // One record per block at its manager, three invalidations per block.
    assert_eq!(violations, 4 * targets.len() as u64);
    let metrics = c.nodes[0].metrics().encode();
    assert!(
        metrics.contains("coopcache_protocol_violations_total{peer=\"mallory\"}"),
        "{metrics}"
    );
}

/// Every other message from a role Mallory does not hold, once each, to a
/// node that is not the block's manager: each is refused and counted
/// against her name, and the node's cache is untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_message_from_a_role_the_sender_does_not_hold_is_refused() {
    let (c, mut mallory, names) =
        attacked_cluster("w", AlgorithmKind::NChance, Duration::from_secs(5)).await;
    let targets = targets(&c, &names).await;
    let t = &targets[0];
    let (victim, manager) = (1 - t.manager, t.manager);
    c.nodes[victim as usize]
        .read_block(&t.path, &t.version, t.block.index)
        .await
        .unwrap();
    let before = c.nodes[victim as usize].status().await.unwrap();
    let block = t.block;
    let digest = Block::new(t.now.clone()).digest();
    let data = t.now.clone();
    let to_victim = [
        PeerMsg::Forward {
            block,
            reader: manager,
        },
        PeerMsg::Expect {
            block,
            recorded: Recorded {
                digest,
                by: MALLORY,
            },
            holder: MALLORY,
        },
        PeerMsg::FetchOrigin {
            block,
            record: true,
        },
        PeerMsg::HashIs {
            block,
            recorded: None,
        },
        PeerMsg::Singlet {
            block,
            singlet: false,
        },
        PeerMsg::Invalidate { block },
        PeerMsg::PartitionRead { block },
        PeerMsg::Reclaim { block },
        PeerMsg::Place { block, data },
    ];
    for msg in &to_victim {
        mallory.send(victim, &Wire::Peer(msg.clone())).await;
    }
    // To the manager: answers only a manager sends, a hand-back of a
    // read never forwarded to her, a record never granted.
    let to_manager = [
        PeerMsg::HashIs {
            block,
            recorded: None,
        },
        PeerMsg::NotHere { block },
        PeerMsg::Record { block, digest },
    ];
    for msg in &to_manager {
        mallory.send(manager, &Wire::Peer(msg.clone())).await;
    }
    mallory.barrier(victim).await;
    mallory.barrier(manager).await;
    let after = c.nodes[victim as usize].status().await.unwrap();
    let at_manager = c.nodes[manager as usize].status().await.unwrap();
    assert_eq!(after.protocol_violations, to_victim.len() as u64);
    assert_eq!(at_manager.protocol_violations, to_manager.len() as u64);
    assert_eq!(after.cached_blocks, before.cached_blocks);
    let (data, level) = c.nodes[victim as usize]
        .read_block(&t.path, &t.version, t.block.index)
        .await
        .unwrap();
    assert_eq!((data, level), (t.now.clone(), Level::Local));
    assert_eq!(mallory.answered.lock().unwrap().len(), 0);
}
