//! Pinning and eviction through a node's gateway (`coopcache pin`,
//! `unpin`, `evict`; issue 42, item 3): a pinned file outlives a working
//! set larger than the cluster's memory, on its node and for its peers;
//! the pinned share refuses a file it cannot hold whole; an evicted file
//! leaves every node and is read from the origin again.

use crate::common::*;
use coopcache_node::warm::Goal;
use std::time::Duration;

const MIB: usize = 1 << 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pinned_file_outlives_more_reads_than_the_cluster_holds() {
    // File 1 is pinned; files 2.. (96 MiB) are more than three nodes of
    // 64 MiB cache, their reserves aside.
    let mut files = vec![("pinned.bin".to_string(), MIB)];
    files.extend((0..48).map(|i| (format!("churn/{i}.bin"), 2 * MIB)));
    let named: Vec<(&str, usize)> = files.iter().map(|(n, l)| (n.as_str(), *l)).collect();
    let c = cluster_with(Shape::default(), &named, |o| o.max_pinned = 8 << 20).await;
    let (client, addr) = serve_gateway(c.nodes[0].clone()).await;
    let done = client.run(Goal::Pin, "pinned.bin", |_| {}).await.unwrap();
    assert_eq!((done.files, done.bytes, done.error), (1, MIB as u64, None));
    let s = c.nodes[0].status().await.unwrap();
    assert_eq!((s.pinned_bytes, s.pinned_blocks), (MIB as u64, 16));
    assert_eq!(s.max_pinned_bytes, 8 << 20);
    let pins = client.pins().await.unwrap();
    assert_eq!(pins.len(), 1);
    assert_eq!(
        (pins[0].path.as_str(), pins[0].bytes),
        ("pinned.bin", MIB as u64)
    );

    for node in &c.nodes {
        for (name, _) in &named[1..] {
            node.read(name, None).await.unwrap();
        }
    }
    let total: u64 = {
        let mut t = 0;
        for node in &c.nodes {
            t += node.status().await.unwrap().cached_bytes;
        }
        t
    };
    assert!(total < 96 << 20, "the churn fits in the cluster: {total}");

    let before = origin_reads(&c).await;
    for node in &c.nodes {
        let got = node.read("pinned.bin", None).await.unwrap();
        assert!(got[..] == contents(1, MIB)[..]);
    }
    assert_eq!(
        origin_reads(&c).await,
        before,
        "a pinned block was read from the origin"
    );
    let metrics = reqwest::get(format!("http://{addr}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(&format!("coopcache_pinned_bytes {MIB}")),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pinned_share_refuses_a_file_it_cannot_hold_whole() {
    let files = [("big.bin", 2 * MIB), ("small.bin", MIB / 2), ("empty", 0)];
    let shape = Shape {
        nodes: 1,
        ..Shape::default()
    };
    let c = cluster_with(shape, &files, |o| {
        o.max_pinned = 1 << 20;
        o.attr_ttl = Duration::ZERO;
    })
    .await;
    let (client, _) = serve_gateway(c.nodes[0].clone()).await;

    let big = client.run(Goal::Pin, "big.bin", |_| {}).await.unwrap();
    let why = big.error.expect("a 2 MiB file fits a 1 MiB share");
    assert!(
        why.contains("big.bin") && why.contains("--max-pinned"),
        "{why}"
    );
    // All or nothing: what was pinned of it is let go.
    assert_eq!(c.nodes[0].status().await.unwrap().pinned_bytes, 0);
    assert!(client.pins().await.unwrap().is_empty());

    let small = client.run(Goal::Pin, "small.bin", |_| {}).await.unwrap();
    assert_eq!((small.files, small.error), (1, None));
    // An empty file pins (nothing to keep) and is not listed.
    let empty = client.run(Goal::Pin, "empty", |_| {}).await.unwrap();
    assert_eq!((empty.files, empty.error), (1, None));
    // Changed at the origin and pinned again: the new version replaces
    // the old one in the share.
    std::fs::write(c.origin_dir.join("small.bin"), contents(9, MIB / 4)).unwrap();
    client.run(Goal::Pin, "small.bin", |_| {}).await.unwrap();
    let pins = client.pins().await.unwrap();
    assert_eq!((pins.len(), pins[0].bytes), (1, MIB as u64 / 4));
    assert_eq!(
        c.nodes[0].status().await.unwrap().pinned_bytes,
        MIB as u64 / 4
    );

    let gone = client.unpin("small.bin").await.unwrap();
    assert_eq!((gone.files, gone.bytes), (1, MIB as u64 / 4));
    assert_eq!(c.nodes[0].status().await.unwrap().pinned_bytes, 0);
    assert_eq!(client.unpin("small.bin").await.unwrap().files, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_without_a_pinned_share_refuses_to_pin() {
    let shape = Shape {
        nodes: 1,
        ..Shape::default()
    };
    let c = cluster(shape, &[("a.bin", 1000)]).await;
    let (client, _) = serve_gateway(c.nodes[0].clone()).await;
    let done = client.run(Goal::Pin, "a.bin", |_| {}).await.unwrap();
    let why = done.error.expect("no share, no pin");
    assert!(why.contains("--max-pinned"), "{why}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evicted_file_leaves_every_node_and_is_read_from_the_origin_again() {
    let files = [("dir/a.bin", 300_000), ("dir/b.bin", 100_000)];
    let c = cluster_with(Shape::default(), &files, |o| o.max_pinned = 1 << 20).await;
    let (client, _) = serve_gateway(c.nodes[0].clone()).await;
    let (other, _) = serve_gateway(c.nodes[1].clone()).await;
    let blocks = 5 + 2;
    // Node 0 reads a.bin and pins b.bin; nodes 1 and 2 read both from it.
    c.nodes[0].read("dir/a.bin", None).await.unwrap();
    client.run(Goal::Pin, "dir/b.bin", |_| {}).await.unwrap();
    for node in &c.nodes[1..] {
        for (name, _) in &files {
            node.read(name, None).await.unwrap();
        }
    }
    let before = origin_reads(&c).await;
    assert_eq!(before, blocks, "each block read once from the origin");

    // Evicted through another node: node 0's pin goes as its blocks'
    // managers tell it, and its list follows.
    let done = other.run(Goal::Evict, "dir", |_| {}).await.unwrap();
    assert_eq!((done.files, done.failed, done.error), (2, 0, None));
    // The managers tell the other holders, on their own links.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    for node in &c.nodes {
        loop {
            let s = node.status().await.unwrap();
            if (s.cached_bytes, s.pinned_bytes) == (0, 0) {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "still held: {s:?}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    assert!(client.pins().await.unwrap().is_empty());
    assert_eq!(client.unpin("dir").await.unwrap().files, 0);
    for (i, (name, len)) in files.iter().enumerate() {
        let got = c.nodes[2].read(name, None).await.unwrap();
        assert!(got[..] == contents(i as u64 + 1, *len)[..], "{name}");
    }
    assert_eq!(origin_reads(&c).await, before + blocks);
}
