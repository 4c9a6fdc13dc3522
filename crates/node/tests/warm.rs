//! Warm-up through a node's gateway (`coopcache warm`, `POST /v1/warm`;
//! issue 42, item 3): the files under a path are read once from the
//! origin, and then every node reads them from the cluster.

use crate::common::*;
use coopcache_core::coop::AlgorithmKind;
use coopcache_node::client::ClientError;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warmed_directory_is_read_from_the_cluster_not_the_origin() {
    let files = [
        ("set/a.bin", 300_000),
        ("set/sub/b.bin", 70_000),
        ("set/sub/empty", 0),
        ("other.bin", 10_000),
    ];
    let c = cluster(Shape::default(), &files).await;
    let (client, _) = serve_gateway(c.nodes[0].clone()).await;
    let mut lines = Vec::new();
    let done = client
        .warm("set", |p| lines.push(p.clone()))
        .await
        .expect("warm");
    assert!(done.listed && done.done && done.error.is_none(), "{done:?}");
    assert_eq!(
        (done.listed_files, done.files, done.failed, done.bytes),
        (3, 3, 0, 370_000),
        "{done:?}"
    );
    assert!(
        lines.windows(2).all(|w| w[0].bytes <= w[1].bytes),
        "progress went back: {lines:?}"
    );
    // Each file was read on its manager, wherever that is.
    let (mut files_read, mut bytes_read) = (0, 0);
    for node in &c.nodes {
        files_read += node.metrics().warmed_files.get();
        bytes_read += node.metrics().warmed_bytes.get();
    }
    assert_eq!((files_read, bytes_read), (3, 370_000));
    let here = c.nodes[0].metrics().warmed_files.get();
    assert_eq!(done.elsewhere + here, 3, "{done:?}");
    // 64 KiB blocks: 5 + 2 + 0, each read from the origin once.
    assert_eq!(origin_reads(&c).await, 7);
    for node in &c.nodes {
        for (i, (name, len)) in files[..3].iter().enumerate() {
            let got = node.read(name, None).await.unwrap();
            assert!(got[..] == contents(i as u64 + 1, *len)[..], "{name}");
        }
    }
    assert_eq!(origin_reads(&c).await, 7, "a reader went to the origin");

    // A file alone; the whole origin ("/"); a path that names nothing.
    let one = client.warm("other.bin", |_| {}).await.expect("warm a file");
    assert_eq!((one.files, one.bytes), (1, 10_000));
    assert_eq!(origin_reads(&c).await, 8);
    let all = client.warm("/", |_| {}).await.expect("warm all");
    assert_eq!((all.files, all.bytes, all.failed), (4, 380_000, 0));
    assert_eq!(origin_reads(&c).await, 8, "warmed files read again");
    std::fs::create_dir(c.origin_dir.join("set/empty-dir")).unwrap();
    let none = client
        .warm("set/empty-dir", |_| {})
        .await
        .expect("an empty directory");
    assert_eq!((none.listed_files, none.files, none.failed), (0, 0, 0));
    match client.warm("set/nope", |_| {}).await {
        Err(ClientError::Status { status, .. }) => assert_eq!(status.as_u16(), 404),
        other => panic!("a missing path: {other:?}"),
    }
}

/// A client that goes away stops its warm-up: with the origin answering
/// each read in 20 ms, 200 files take a second or more; the client reads
/// the first progress line and closes, and the origin reads stop soon
/// after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_up_stops_when_its_client_goes_away() {
    let names: Vec<String> = (0..200).map(|i| format!("set/f{i}")).collect();
    let files: Vec<(&str, usize)> = names.iter().map(|n| (n.as_str(), 1000)).collect();
    let shape = Shape {
        nodes: 1,
        origin_delay: Duration::from_millis(20),
        ..Shape::default()
    };
    let c = cluster(shape, &files).await;
    let (_, addr) = serve_gateway(c.nodes[0].clone()).await;
    tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(addr).expect("connect");
        s.write_all(b"POST /v1/warm/set HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
            .expect("send");
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&got).contains("\"listed\":true") {
            let n = s.read(&mut buf).expect("read");
            assert!(n > 0, "closed before any progress");
            got.extend_from_slice(&buf[..n]);
        }
    })
    .await
    .expect("client");
    // Reads in flight when the client left may finish; none starts after.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let stopped = origin_reads(&c).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let later = origin_reads(&c).await;
    assert_eq!(later, stopped, "the warm-up went on without its client");
    assert!(stopped < 200, "the warm-up ended before the client left");
}

/// A warm-up is read on each file's manager, so one larger than a node's
/// memory fills the cluster (issue 42: "blocks spread over the cluster by
/// the algorithm's own placement, not all into the node that asked").
/// Under Greedy nothing else would: a node's evictions are dropped, so a
/// warm-up read on the node asked would keep only what its memory holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_up_is_read_on_each_files_manager_and_fills_the_cluster() {
    // 48 files of 128 KiB (96 blocks of 64 KiB) against 64 blocks a node.
    let names: Vec<String> = (0..48).map(|i| format!("set/f{i:02}")).collect();
    let files: Vec<(&str, usize)> = names.iter().map(|n| (n.as_str(), 128 << 10)).collect();
    let shape = Shape {
        algorithm: AlgorithmKind::Greedy,
        memory: coopcache_node::budget::Budget::holding(64, 64 << 10, false).total,
        ..Shape::default()
    };
    let c = cluster(shape, &files).await;
    let (client, _) = serve_gateway(c.nodes[0].clone()).await;
    let done = client.warm("set", |_| {}).await.expect("warm");
    assert_eq!(
        (done.files, done.failed, done.bytes),
        (48, 0, 6 << 20),
        "{done:?}"
    );
    assert_eq!(origin_reads(&c).await, 96, "each block read once");
    let mut cached = Vec::new();
    let mut warmed = Vec::new();
    for node in &c.nodes {
        cached.push(node.status().await.unwrap().cached_blocks);
        warmed.push(node.metrics().warmed_files.get());
    }
    assert_eq!(warmed.iter().sum::<u64>(), 48, "{warmed:?}");
    assert_eq!(done.elsewhere, 48 - warmed[0], "{done:?} {warmed:?}");
    // The placement's counters (a status syncs them into the metrics).
    let m = |i: usize| c.nodes[i].metrics();
    assert_eq!(m(0).warm_placed.get(), done.elsewhere);
    assert_eq!(m(0).warm_fell_back.get(), 0);
    let served: u64 = (1..3).map(|i| m(i).warm_served.get()).sum();
    assert_eq!(served, done.elsewhere);
    assert_eq!(
        cached.iter().sum::<u64>(),
        96,
        "the cluster holds it once: {cached:?}"
    );
    // Rendezvous over the members: about 32 blocks each (a node with 8
    // or fewer, 4 files of 48, comes about once in 6,500 runs).
    assert!(
        cached.iter().all(|&n| n > 8),
        "spread over the members: {cached:?}"
    );
    // Readers on every node find files in the cluster (a few each, which
    // fit beside what each holds: under Greedy a reader keeps a copy).
    for (i, name) in names.iter().enumerate().take(9) {
        let node = &c.nodes[i % 3];
        let got = node.read(name, None).await.unwrap();
        assert!(got[..] == contents(i as u64 + 1, 128 << 10)[..], "{name}");
    }
    assert_eq!(origin_reads(&c).await, 96, "a reader went to the origin");
}
