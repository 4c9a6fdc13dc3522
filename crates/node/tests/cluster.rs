//! N nodes on 127.0.0.1 in one process: reads are right and cooperative.

use crate::common;
use common::*;
use coopcache_core::coop::{AlgorithmKind, live_policy};
use coopcache_core::policy::PolicyKind;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_node_reads_every_byte_right_and_peers_serve_repeats() {
    let files = [("a.bin", 1_000_000), ("dir/b.bin", 70_000), ("empty", 0)];
    let c = cluster(Shape::default(), &files).await;
    for (i, (name, len)) in files.iter().enumerate() {
        let want = contents(i as u64 + 1, *len);
        for node in &c.nodes {
            let got = node.read(name, None).await.unwrap();
            assert_eq!(got.len(), want.len(), "{name}");
            assert!(got[..] == want[..], "{name}: wrong bytes");
            let part = node.read(name, Some(100..(*len as u64).min(70_000))).await;
            if *len > 100 {
                assert!(part.unwrap()[..] == want[100..(*len).min(70_000)]);
            }
        }
    }
    let mut origin_reads = 0;
    let mut peer_reads = 0;
    for node in &c.nodes {
        let s = node.status().await.unwrap();
        origin_reads += s.origin_reads;
        peer_reads += s.reads["peer"];
        assert_eq!(s.integrity_failures, 0);
    }
    // 16 + 2 blocks; each comes from the origin once for the whole cluster.
    assert_eq!(origin_reads, 18, "origin read once per block");
    assert_eq!(peer_reads, 2 * 18, "the other two nodes read from a peer");
}

/// Every replacement policy a live node can run (`--policy`), under
/// N-Chance with caches far smaller than the files so each evicts and
/// forwards: every byte right, peers serving, each node caching with the
/// policy it was given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_live_policy_serves_right_bytes_under_eviction() {
    use coopcache_node::budget::{PER_BLOCK_OVERHEAD, RESERVE};
    let files = [("a.bin", 400_000), ("b.bin", 300_000)];
    for policy in PolicyKind::ALL
        .into_iter()
        .filter(|p| live_policy(*p).is_ok())
    {
        let shape = Shape {
            block_size: 4096,
            memory: RESERVE + 32 * (4096 + PER_BLOCK_OVERHEAD),
            ..Shape::default()
        };
        let c = cluster_with(shape, &files, |o| o.policy = policy).await;
        for _ in 0..2 {
            for (i, (name, len)) in files.iter().enumerate() {
                let want = contents(i as u64 + 1, *len);
                for node in &c.nodes {
                    let got = node.read(name, None).await.unwrap();
                    assert!(got[..] == want[..], "{policy:?}: {name}: wrong bytes");
                }
            }
        }
        let mut peer_reads = 0;
        for node in &c.nodes {
            let s = node.status().await.unwrap();
            assert_eq!(s.policy, policy.name());
            assert!(
                s.cached_blocks <= 32,
                "{policy:?}: {} cached",
                s.cached_blocks
            );
            assert_eq!((s.integrity_failures, s.protocol_violations), (0, 0));
            peer_reads += s.reads["peer"];
        }
        assert!(peer_reads > 0, "{policy:?}: no peer served");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_cooperation_every_node_reads_the_origin() {
    let shape = Shape {
        algorithm: AlgorithmKind::Base,
        ..Shape::default()
    };
    let c = cluster(shape, &[("a.bin", 300_000)]).await;
    for node in &c.nodes {
        node.read("a.bin", None).await.unwrap();
    }
    let mut origin_reads = 0;
    for node in &c.nodes {
        origin_reads += node.status().await.unwrap().origin_reads;
    }
    assert_eq!(origin_reads, 3 * 5);
}

/// Sums of every node's status: cached blocks.
async fn cached_blocks(c: &TestCluster) -> u64 {
    let mut n = 0;
    for node in &c.nodes {
        n += node.status().await.unwrap().cached_blocks;
    }
    n
}

/// Waits until the cluster caches `n` blocks in all (messages that fill
/// partitions or hosts are still in flight when a read returns).
async fn settle_at(c: &TestCluster, n: u64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while cached_blocks(c).await != n {
        assert!(
            std::time::Instant::now() < deadline,
            "cached {} blocks, expected {n}",
            cached_blocks(c).await
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hash_distributed_partitions_serve_what_one_node_read() {
    let shape = Shape {
        algorithm: AlgorithmKind::Hash,
        ..Shape::default()
    };
    let len = 1_000_000;
    // A peer is never late here (a busy test machine must not turn a
    // placement's check into a timeout).
    let c = cluster_with(shape, &[("a.bin", len)], |o| {
        o.min_timeout = std::time::Duration::from_secs(5)
    })
    .await;
    let want = contents(1, len);
    assert!(c.nodes[0].read("a.bin", None).await.unwrap()[..] == want[..]);
    // 16 blocks in node 0's local part, and each placed in its partition.
    settle_at(&c, 32).await;
    let got = c.nodes[1].read("a.bin", None).await.unwrap();
    assert!(got[..] == want[..], "wrong bytes");
    let s = c.nodes[1].status().await.unwrap();
    assert_eq!(s.origin_reads, 0, "every block from a partition: {s:?}");
    assert!(s.reads["peer"] > 0, "{s:?}");
    assert_eq!(s.reads["peer"] + s.reads["local"], 16, "{s:?}");
    for node in &c.nodes {
        assert_eq!(node.status().await.unwrap().integrity_failures, 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_node_reads_its_evictions_back_from_its_host() {
    // 16 blocks of budget each: node 0 reads 32, and parks 16 at node 1,
    // idle.
    let block: u64 = 64 << 10;
    let shape = Shape {
        nodes: 2,
        algorithm: AlgorithmKind::Direct,
        memory: coopcache_node::budget::RESERVE
            + 16 * (block + coopcache_node::budget::PER_BLOCK_OVERHEAD),
        ..Shape::default()
    };
    let len = 32 * block as usize;
    // A peer is never late here (a busy test machine must not turn a
    // placement's check into a timeout); idle after 200 ms, not 10 s.
    let c = cluster_with(shape, &[("a.bin", len)], |o| {
        o.min_timeout = std::time::Duration::from_secs(5);
        o.idle_after = std::time::Duration::from_millis(200);
    })
    .await;
    // Node 0 hears node 1 say it is idle (pings once a second).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let s = c.nodes[0].status().await.unwrap();
        if s.members
            .iter()
            .any(|m| m.id == 1 && m.memory.is_some_and(|m| m.idle))
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "node 1 never idle: {s:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let want = contents(1, len);
    let node = &c.nodes[0];
    assert!(node.read("a.bin", None).await.unwrap()[..] == want[..]);
    // Blocks 16..32 local, 0..16 parked at node 1.
    settle_at(&c, 32).await;
    let first_half = 0..(16 * block);
    let got = node.read("a.bin", Some(first_half.clone())).await.unwrap();
    assert!(got[..] == want[..16 * block as usize], "wrong bytes");
    let s = node.status().await.unwrap();
    assert_eq!(s.origin_reads, 32, "no block read twice: {s:?}");
    assert_eq!(s.reads["peer"], 16, "{s:?}");
    assert_eq!(s.integrity_failures, 0);
    assert_eq!(c.nodes[1].status().await.unwrap().origin_reads, 0);
}

/// Close-to-open against writers outside the cache: with versions asked on
/// every open (the default `attr_ttl` of 0), each read after a file was
/// replaced at the origin sees the new bytes on every node, though every
/// node still caches the old version's blocks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_open_sees_a_file_replaced_at_the_origin() {
    let c = cluster_with(Shape::default(), &[("a.bin", 200_000)], |o| {
        o.attr_ttl = std::time::Duration::ZERO
    })
    .await;
    let path = c.origin_dir.join("a.bin");
    for round in 0..3u64 {
        let want = if round == 0 {
            contents(1, 200_000)
        } else {
            let new = contents(100 + round, 150_000 + round as usize * 1000);
            let tmp = path.with_extension("tmp");
            std::fs::write(&tmp, &new).unwrap();
            std::fs::rename(&tmp, &path).unwrap();
            new
        };
        for node in &c.nodes {
            let got = node.read("a.bin", None).await.unwrap();
            assert!(got[..] == want[..], "round {round}: stale bytes");
        }
    }
}

/// A sequential read's window of origin reads goes in a few requests of
/// consecutive blocks, not one request per block, and every byte is
/// right. (On one thread, the stream asks for its whole window before the
/// driver runs, so the batch is the same every run.)
#[tokio::test(flavor = "current_thread")]
async fn a_sequential_read_fetches_runs_of_blocks_in_one_request() {
    let shape = Shape {
        nodes: 1,
        ..Shape::default()
    };
    let files = [("big.bin", 4 << 20)];
    let c = cluster(shape, &files).await;
    let node = &c.nodes[0];
    let got = node.read("big.bin", None).await.unwrap();
    assert!(got[..] == contents(1, 4 << 20)[..], "wrong bytes");
    let s = node.status().await.unwrap();
    assert_eq!(s.origin_reads, 64, "every block once");
    assert_eq!(s.origin_bytes, 4 << 20);
    // At most 16 blocks (1 MiB) per request.
    assert!(
        (4..=16).contains(&s.origin_requests),
        "{} requests for 64 blocks",
        s.origin_requests
    );
}

/// C2Cfs `exclusive` mode: an open learns the file's version from its
/// manager, which asked the origin once; later opens on every node cost no
/// origin stat. A close that wrote the file through commits, the manager
/// asks the origin itself, and the next open on another node reads the new
/// version, still without a stat of its own. A writer outside the cluster
/// is not seen (the mode's premise); `shared` mode's open is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exclusive_opens_read_the_managers_version_without_asking_the_origin() {
    let c = cluster_with(Shape::default(), &[("a.bin", 200_000)], |o| {
        o.attr_ttl = std::time::Duration::ZERO;
        o.commit_stable = std::time::Duration::ZERO;
    })
    .await;
    let stats = || async {
        let mut n = 0;
        for node in &c.nodes {
            n += node.status().await.unwrap().origin_stats;
        }
        n
    };
    let (topen, v0) = c.nodes[0].open_exclusive("a.bin").await.unwrap();
    let topen = topen.expect("the manager answered");
    assert_eq!(stats().await, 1, "the manager asked the origin once");
    for node in &c.nodes[1..] {
        let (t, v) = node.open_exclusive("a.bin").await.unwrap();
        assert_eq!((t, &v), (Some(topen), &v0));
    }
    assert_eq!(
        stats().await,
        1,
        "later opens came from the manager's table"
    );

    // Node 0 writes the file through to the origin, then commits.
    let path = c.origin_dir.join("a.bin");
    let new = contents(7, 150_000);
    std::fs::write(path.with_extension("tmp"), &new).unwrap();
    std::fs::rename(path.with_extension("tmp"), &path).unwrap();
    let done = c.nodes[0].commit_exclusive("a.bin", Some(topen)).await;
    let done = done.expect("recorded");
    assert!(done.valid, "no other close came between");
    assert!(done.tcommit > topen);
    assert_eq!(stats().await, 2, "the manager asked the origin, once");
    let (t, v1) = c.nodes[2].open_exclusive("a.bin").await.unwrap();
    assert_eq!(t, Some(done.tcommit));
    assert_ne!(v1, v0);
    assert_eq!(
        stats().await,
        2,
        "the open after the close asked no one but the manager"
    );
    let got = c.nodes[2]
        .read_version("a.bin".into(), v1.clone(), 0..v1.size)
        .await
        .unwrap();
    assert!(got[..] == new[..], "the committed bytes");

    // An outside writer: exclusive opens keep the last commit's version.
    std::fs::write(path.with_extension("tmp"), contents(8, 1000)).unwrap();
    std::fs::rename(path.with_extension("tmp"), &path).unwrap();
    let (_, v) = c.nodes[1].open_exclusive("a.bin").await.unwrap();
    assert_eq!(v, v1);
    assert_ne!(c.nodes[1].stat("a.bin").await.unwrap(), v1);
}

/// C2Cfs `exclusive` mode, the open in one round trip: the file's manager
/// (which manages its blocks too) answers the open and serves its first
/// block in the same breath, so the opener sends the manager one message
/// (the `Open`) for both, and takes the block from the holder's memory.
/// Its next open, its copy being the latest, is served nothing and reads
/// its own memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exclusive_open_is_served_its_first_block_in_the_same_round_trip() {
    use coopcache_core::c2cfs::exclusive::manager_key;
    use coopcache_core::coop::Level;
    use coopcache_node::block::manager_of;
    let names: Vec<String> = (0..64).map(|i| format!("f{i}.bin")).collect();
    let name = names
        .iter()
        .find(|n| manager_of(manager_key(n), &[0, 1, 2]) == Some(2))
        .expect("a file node 2 manages")
        .clone();
    let shape = Shape {
        algorithm: AlgorithmKind::Greedy,
        ..Shape::default()
    };
    let c = cluster_with(shape, &[(name.as_str(), 200_000)], |o| {
        o.commit_stable = std::time::Duration::ZERO;
    })
    .await;
    let want = contents(1, 200_000);
    c.nodes[0].read(&name, None).await.unwrap();
    let path: std::sync::Arc<str> = name.as_str().into();
    let sent_to_manager = || async {
        c.nodes[1]
            .status()
            .await
            .unwrap()
            .sent
            .get(&2)
            .copied()
            .unwrap_or(0)
    };

    let reads = || async {
        let s = c.nodes[1].status().await.unwrap();
        (s.reads.get("peer").copied().unwrap_or(0), s.origin_reads)
    };
    let (peer_before, origin_before) = reads().await;
    let before = sent_to_manager().await;
    let (topen, version) = c.nodes[1].open_exclusive(&path).await.unwrap();
    assert!(topen.is_some(), "the manager answered");
    let (data, level) = c.nodes[1].read_block(&path, &version, 0).await.unwrap();
    assert!(data[..] == want[..data.len()], "wrong bytes");
    // The carried read starts when the answer arrives, before the caller
    // asks: the caller joins it (a peer's block) or, when node 0's block
    // came first, finds it in node 1's memory. Either way node 1 read it
    // once, from a peer, and never from the origin.
    assert!(
        matches!(level, Level::RemoteNode | Level::Local),
        "{level:?}"
    );
    let (peer, origin) = reads().await;
    assert_eq!(peer - peer_before, 1, "from node 0's memory");
    assert_eq!(origin, origin_before, "nothing from the origin");
    assert_eq!(
        sent_to_manager().await - before,
        1,
        "the Open carried the block's read"
    );
    assert_eq!(c.nodes[2].status().await.unwrap().first_served, 1);

    let before = sent_to_manager().await;
    let (_, again) = c.nodes[1].open_exclusive(&path).await.unwrap();
    assert_eq!(again, version);
    let (_, level) = c.nodes[1].read_block(&path, &again, 0).await.unwrap();
    assert_eq!(level, Level::Local);
    assert_eq!(sent_to_manager().await - before, 1, "the Open alone");
    assert_eq!(c.nodes[2].status().await.unwrap().first_served, 1);
    for node in &c.nodes {
        let s = node.status().await.unwrap();
        assert_eq!((s.protocol_violations, s.timeouts), (0, 0), "{}", s.name);
    }
}
