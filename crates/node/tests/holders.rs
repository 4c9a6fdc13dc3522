//! Segments from several holders (C2Cfs's parallel fetch; Dahlin's
//! forwarding with every copy a candidate): a reader of a file that three
//! peers hold takes its blocks from all three, each block from one, as
//! the manager stripes them over the holders (`Holders::stripe_except`).

use crate::common::{Shape, cluster, contents};
use coopcache_node::handle::NodeHandle;

/// Protocol messages node `of` received from each peer so far.
async fn received(of: &NodeHandle) -> std::collections::BTreeMap<u32, u64> {
    of.status().await.unwrap().received
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_takes_a_files_blocks_from_every_holder() {
    const BLOCKS: usize = 96;
    let size = BLOCKS * (64 << 10);
    let shape = Shape {
        nodes: 4,
        ..Shape::default()
    };
    let c = cluster(shape, &[("big.bin", size)]).await;
    let want = contents(1, size);
    // Nodes 0, 1 and 2 read the whole file: each holds every block.
    for node in &c.nodes[..3] {
        assert!(node.read("big.bin", None).await.unwrap()[..] == want[..]);
    }
    let before = received(&c.nodes[3]).await;
    let origin_before = c.nodes[3].status().await.unwrap().origin_reads;
    assert!(c.nodes[3].read("big.bin", None).await.unwrap()[..] == want[..]);
    let after = received(&c.nodes[3]).await;
    let status = c.nodes[3].status().await.unwrap();
    assert_eq!(
        status.origin_reads, origin_before,
        "every block from a peer"
    );
    // One `Data` per block from its holder (a manager's `FetchOrigin` or
    // `Expect` would count too, but every block had a holder).
    let from: Vec<u64> = (0..3)
        .map(|h| after.get(&h).copied().unwrap_or(0) - before.get(&h).copied().unwrap_or(0))
        .collect();
    eprintln!("messages from holders 0, 1, 2 while node 3 read {BLOCKS} blocks: {from:?}");
    assert!(from.iter().sum::<u64>() >= BLOCKS as u64, "{from:?}");
    for (h, &n) in from.iter().enumerate() {
        // Striped by block: about a third each.
        assert!(
            n >= BLOCKS as u64 / 6,
            "holder {h} served {n} of {BLOCKS} blocks: {from:?}"
        );
    }
}
