//! Bad blocks forwarded by a holder or pushed as N-Chance singlets.

use super::*;
use coopcache_core::coop::AlgorithmKind;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_serving_bad_blocks_is_caught_every_time() {
    // A peer timeout far above loopback times: every bad block must be
    // caught by its hash, not by a late answer.
    let (c, mut mallory, names) =
        attacked_cluster("h", AlgorithmKind::NChance, Duration::from_secs(5)).await;
    let len = (BLOCKS_PER_FILE * BLOCK_SIZE) as usize;

    let targets = targets(&c, &names).await;
    // Half the blocks are forwarded to Mallory, half get a bad singlet.
    let (forwarded, pushed) = targets.split_at(targets.len() / 2);
    let mut sent_bad = 0u64;
    let mut by_answer: HashMap<Answer, usize> = HashMap::new();
    for (j, t) in forwarded.iter().enumerate() {
        let answer = ANSWERS[j % ANSWERS.len()];
        let bad = bad_bytes(answer, t, j);
        mallory
            .answers
            .lock()
            .unwrap()
            .insert(t.block, (answer, bad));
        // Mallory reads the block first, so the manager records her as
        // its first holder (and her record of its digest, an honest one).
        mallory.read_first(t).await;
        // The other node's read is forwarded to Mallory, the first holder.
        sent_bad += u64::from(victim_reads_from_mallory(&c, t, answer).await);
        *by_answer.entry(answer).or_default() += 1;
        assert_eq!(
            integrity_failures(&c).await,
            sent_bad,
            "{answer:?} of block {:?} went undetected",
            t.block
        );
    }
    let answered = mallory.answered.lock().unwrap().clone();
    assert_eq!(
        answered.len(),
        forwarded.len(),
        "every read reached Mallory"
    );
    assert!(
        ANSWERS.iter().all(|a| by_answer.get(a) >= Some(&2)),
        "{by_answer:?}"
    );

    // Bad singlets pushed at the node that does not hold the block: each
    // is checked against the manager's hash and dropped.
    for (j, t) in pushed.iter().enumerate() {
        let m = &c.nodes[t.manager as usize];
        m.read_block(&t.path, &t.version, t.block.index)
            .await
            .unwrap();
        let answer = ANSWERS[j % (ANSWERS.len() - 1)];
        let victim = 1 - t.manager;
        let push = Wire::Peer(PeerMsg::Recirculate {
            block: t.block,
            data: bad_bytes(answer, t, j),
            chances: 2,
        });
        mallory.send(victim, &push).await;
        sent_bad += 1;
        let deadline = Instant::now() + Duration::from_secs(5);
        while integrity_failures(&c).await < sent_bad {
            assert!(
                Instant::now() < deadline,
                "bad singlet ({answer:?}) of block {:?} went undetected",
                t.block
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // Not kept: the victim reads the right bytes from a peer.
        let (data, level) = c.nodes[victim as usize]
            .read_block(&t.path, &t.version, t.block.index)
            .await
            .unwrap();
        assert!(data == t.now, "{answer:?} singlet kept");
        assert_eq!(level, Level::RemoteNode);
    }
    assert_eq!(integrity_failures(&c).await, sent_bad);
    println!(
        "forwards answered by kind {by_answer:?}; bad singlets pushed {}; bad blocks caught {sent_bad}",
        pushed.len()
    );

    // Nothing bad stayed anywhere: every byte of every file attacked, read
    // through both nodes, is the origin's. (The files Mallory manages are
    // left alone: she ignores their reads, and each waits out the peer
    // timeout before reading the origin.)
    for (i, name) in names.iter().enumerate() {
        if !targets.iter().any(|t| &*t.path == name) {
            continue;
        }
        let want = contents(1000 + i as u64, len);
        for node in &c.nodes {
            let got = node.read(name, None).await.unwrap();
            assert!(got[..] == want[..], "{name}: bad bytes delivered");
        }
    }
    for node in &c.nodes {
        let s = node.status().await.unwrap();
        assert_eq!(s.timeouts, 0, "node {}: a read waited out a peer", s.id);
    }
}

/// A node takes a forwarded singlet at once (the order the simulator
/// delivers it in) but serves no local read from it until the manager's
/// hash clears it. Here Mallory manages the block's file and never answers
/// the check: the read waits, the singlet is dropped unverified when the
/// wait runs out, and the read gets the origin's bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_singlet_is_not_served_before_its_hash_is_confirmed() {
    let (c, mut mallory, _) =
        attacked_cluster("s", AlgorithmKind::NChance, Duration::from_millis(300)).await;
    let len = (BLOCKS_PER_FILE * BLOCK_SIZE) as usize;

    // File ids hash the origin's version (inode, mtime): more files are
    // written until two are managed by Mallory.
    let mut checked = 0;
    for i in 0..200usize {
        if checked == 2 {
            break;
        }
        let name = &format!("s{i}.bin");
        if i >= FILES {
            std::fs::write(c.origin_dir.join(name), contents(i as u64 + 1, len)).unwrap();
        }
        let version = c.nodes[0].stat(name).await.unwrap();
        let block = first_block(name, &version.version);
        if manager_of(u64::from(block.route), &[0, 1, MALLORY]) != Some(MALLORY) {
            continue;
        }
        let want = contents(i as u64 + 1, len);
        let mut bad = want[..BLOCK_SIZE as usize].to_vec();
        bad[0] ^= 0xff;
        let push = Wire::Peer(PeerMsg::Recirculate {
            block,
            data: Bytes::from(bad),
            chances: 2,
        });
        mallory.send(0, &push).await;
        // Node 0 has handled the push (frames on a link are handled in
        // order): the machine holds the singlet, its check is unanswered.
        mallory.barrier(0).await;
        let path: Arc<str> = Arc::from(name.as_str());
        let started = Instant::now();
        let (data, level) = c.nodes[0].read_block(&path, &version, 0).await.unwrap();
        assert!(
            data[..] == want[..BLOCK_SIZE as usize],
            "{name}: an unverified singlet's bytes were served"
        );
        assert_eq!(level, Level::Origin, "{name}");
        assert!(
            started.elapsed() >= Duration::from_millis(250),
            "{name}: not held"
        );
        checked += 1;
    }
    assert_eq!(
        checked, 2,
        "fewer than two files managed by Mallory among 200"
    );
    let s = c.nodes[0].status().await.unwrap();
    assert!(s.timeouts >= checked, "{s:?}");
    assert_eq!(
        s.integrity_failures, 0,
        "no hash came, so nothing was compared"
    );
}

/// A node caching a block verified keeps it, whatever a member pushes for
/// it: a pushed copy of a block cached here already is dropped unchecked
/// (rule `pushed-never-evicts`). Before, garbage recirculated for it was
/// held, failed the manager's digest, and the verdict dropped the machine's
/// copy with it: one member could evict any honest copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_pushed_for_a_block_cached_verified_never_evicts_it() {
    let (c, mut mallory, names) =
        attacked_cluster("g", AlgorithmKind::NChance, Duration::from_secs(5)).await;
    let targets = targets(&c, &names).await;
    for (j, t) in targets.iter().take(BLOCKS_PER_FILE as usize).enumerate() {
        // The node that does not manage the file caches the block.
        let holder = 1 - t.manager;
        let node = &c.nodes[holder as usize];
        node.read_block(&t.path, &t.version, t.block.index)
            .await
            .unwrap();
        let answer = ANSWERS[j % (ANSWERS.len() - 1)];
        let push = Wire::Peer(PeerMsg::Recirculate {
            block: t.block,
            data: bad_bytes(answer, t, j),
            chances: 2,
        });
        mallory.send(holder, &push).await;
        mallory.barrier(holder).await;
        // Time for a manager's digest to come back, had one been asked.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (data, level) = node
            .read_block(&t.path, &t.version, t.block.index)
            .await
            .unwrap();
        assert!(data == t.now, "{answer:?}: bad bytes served");
        assert_eq!(
            level,
            Level::Local,
            "{answer:?}: the verified copy was evicted"
        );
    }
}
