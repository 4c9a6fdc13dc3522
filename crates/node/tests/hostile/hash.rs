//! Hash-Distributed: Mallory owns a partition and serves bad blocks from it,
//! and places bad blocks in the real nodes' partitions.

use super::*;
use coopcache_core::coop::Owners;
use coopcache_node::LiveAlgorithm;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_owner_or_placer_sending_bad_blocks_is_caught() {
    let names: Vec<String> = (0..FILES).map(|i| format!("p{i}.bin")).collect();
    let len = (BLOCKS_PER_FILE * BLOCK_SIZE) as usize;
    let files: Vec<(&str, usize)> = names.iter().map(|n| (n.as_str(), len)).collect();
    let shape = Shape {
        nodes: 2,
        block_size: BLOCK_SIZE,
        algorithm: LiveAlgorithm::Hash,
        ..Shape::default()
    };
    let c = cluster_with(shape, &files, |o| o.min_timeout = Duration::from_secs(5)).await;
    let addrs: Vec<String> = c
        .nodes
        .iter()
        .map(|n| n.listen_addr().to_string())
        .collect();
    let mallory = Mallory::join(&c.keys, &addrs).await;
    wait_for_members(&c.nodes, 3).await;
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
        if owner == MALLORY {
            // The other node's read goes to Mallory's partition.
            mallory
                .answers
                .lock()
                .unwrap()
                .insert(t.block, (answer, bad));
            let victim = &c.nodes[1 - t.manager as usize];
            let (data, level) = victim
                .read_block(&t.path, &t.version, t.block.index)
                .await
                .unwrap();
            assert!(data == t.now, "{answer:?}: bad bytes delivered");
            let want = match answer {
                Answer::Honest => Level::RemoteNode,
                _ => Level::Origin,
            };
            assert_eq!(level, want, "{answer:?}");
            sent_bad += u64::from(answer != Answer::Honest);
            served += 1;
        } else if owner == t.manager && answer != Answer::Honest {
            // Mallory places bad bytes in the manager's own partition,
            // where its own next read would find them.
            let place = Wire::Core {
                from: Addr::Node(MALLORY),
                to: Addr::Node(owner),
                msg: Msg::Place {
                    block: t.block,
                    data: bad,
                    replaces: None,
                },
            };
            mallory.send(owner, &place).await;
            sent_bad += 1;
            placed += 1;
            let deadline = Instant::now() + Duration::from_secs(5);
            while integrity_failures(&c).await < sent_bad {
                assert!(
                    Instant::now() < deadline,
                    "bad place ({answer:?}) of block {:?} went undetected",
                    t.block
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let (data, _) = m
                .read_block(&t.path, &t.version, t.block.index)
                .await
                .unwrap();
            assert!(data == t.now, "{answer:?}: a bad place was kept");
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
        served >= 6 && placed >= 3,
        "{served} served, {placed} placed"
    );
    let answered = mallory.answered.lock().unwrap().len();
    assert_eq!(answered, served, "every read of her partition reached her");
    for node in &c.nodes {
        assert_eq!(node.status().await.unwrap().timeouts, 0);
    }
}
