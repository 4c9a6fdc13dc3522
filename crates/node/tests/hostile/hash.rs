//! Hash-Distributed: Mallory owns a partition and serves bad blocks from it,
//! and places bad blocks in the real nodes' partitions.

use super::*;
use coopcache_core::coop::AlgorithmKind;
use coopcache_core::coop::Owners;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_owner_or_placer_sending_bad_blocks_is_caught() {
    let (c, mut mallory, names) =
        attacked_cluster("p", AlgorithmKind::Hash, Duration::from_secs(5)).await;
    let owners = Owners::live(&[0, 1, MALLORY]);

    let (mut sent_bad, mut served, mut placed) = (0u64, 0, 0);
    for (j, t) in targets(&c, &names).await.iter().enumerate() {
        let answer = ANSWERS[j % ANSWERS.len()];
        let bad = bad_bytes(answer, t, j);
        let m = &c.nodes[t.manager as usize];
        let owner = owners.of(&t.block);
        // The manager reads it first, from the origin (no hash recorded
        // yet, so nothing a peer sends could be checked), and records it.
        let (data, level) = m
            .read_block(&t.path, &t.version, t.block.index)
            .await
            .unwrap();
        assert_eq!((data, level), (t.now.clone(), Level::Origin));
        // Mallory has seen that read's question to her (the manager's
        // Pong comes after it on the same link) before she is told what
        // to answer.
        mallory.barrier(t.manager).await;
        if owner == MALLORY {
            // The other node's read goes to Mallory's partition.
            mallory
                .answers
                .lock()
                .unwrap()
                .insert(t.block, (answer, bad));
            sent_bad += u64::from(victim_reads_from_mallory(&c, t, answer).await);
            served += 1;
        } else if owner == t.manager && answer != Answer::Honest {
            // Mallory places bad bytes in the manager's own partition,
            // where its own next read would find them. The manager caches
            // the block verified already, so the placed copy is dropped
            // unchecked (rule `pushed-never-evicts`): nothing to detect,
            // and the honest copy stays.
            let place = Wire::Peer(PeerMsg::Place {
                block: t.block,
                data: bad,
            });
            mallory.send(owner, &place).await;
            mallory.barrier(owner).await;
            placed += 1;
            let (data, level) = m
                .read_block(&t.path, &t.version, t.block.index)
                .await
                .unwrap();
            assert!(data == t.now, "{answer:?}: a bad place was kept");
            assert_eq!(
                level,
                Level::Local,
                "{answer:?}: the honest copy was dropped"
            );
        } else {
            continue;
        }
        assert_eq!(
            integrity_failures(&c).await,
            sent_bad,
            "{answer:?} of block {:?} went undetected",
            t.block
        );
    }
    assert!(
        served >= 3 && placed >= 3,
        "{served} served, {placed} placed"
    );
    let answered = mallory.answered.lock().unwrap().len();
    assert_eq!(answered, served, "every read of her partition reached her");
    for node in &c.nodes {
        assert_eq!(node.status().await.unwrap().timeouts, 0);
    }
}
