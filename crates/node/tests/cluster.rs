//! N nodes on 127.0.0.1 in one process: reads are right and cooperative.

mod common;
use common::*;
use coopcache_node::LiveAlgorithm;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_cooperation_every_node_reads_the_origin() {
    let shape = Shape {
        algorithm: LiveAlgorithm::Base,
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
