//! Size-class policies through daemons (`--class-policy`, the
//! request-distribution paper's per-class caching): a file's blocks are
//! named in its size's class, and each class's policy decides, live,
//! whether a read looks in peers' memory and whether an evicted singlet is
//! forwarded.

use crate::common::*;
use coopcache_core::coop::{ClassPolicies, ClassPolicy, SizeClass};
use coopcache_node::budget::{PER_BLOCK_OVERHEAD, RESERVE};
use std::time::{Duration, Instant};

/// Two classes split at `below` bytes: the smaller with `small`'s policy,
/// the larger with the default (cooperative, forwarded).
fn two_classes(below: u64, small: ClassPolicy) -> ClassPolicies {
    ClassPolicies::new(vec![
        SizeClass {
            name: "small".into(),
            below: Some(below),
            policy: small,
        },
        SizeClass {
            name: "large".into(),
            below: None,
            policy: ClassPolicy::default(),
        },
    ])
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_class_kept_off_peers_reads_the_origin_while_the_others_share() {
    let classes = two_classes(
        256 << 10,
        ClassPolicy {
            cooperative: false,
            ..ClassPolicy::default()
        },
    );
    let files = [("small.txt", 100_000), ("large.bin", 1_000_000)];
    let shape = Shape {
        nodes: 2,
        ..Shape::default()
    };
    let c = cluster_with(shape, &files, |o| o.classes = classes.clone()).await;
    for node in &c.nodes {
        for (i, (name, len)) in files.iter().enumerate() {
            let got = node.read(name, None).await.unwrap();
            assert!(got[..] == contents(i as u64 + 1, *len)[..], "{name}");
        }
    }
    let s = c.nodes[1].status().await.unwrap();
    // small.txt's 2 blocks from the origin although node 0 holds them;
    // large.bin's 16 from node 0.
    assert_eq!(s.origin_reads, 2, "{s:?}");
    assert_eq!(s.reads["peer"], 16, "{s:?}");
    assert_eq!((s.integrity_failures, s.protocol_violations), (0, 0));
}

/// Blocks `node` caches.
async fn cached(node: &coopcache_node::NodeHandle) -> u64 {
    node.status().await.unwrap().cached_blocks
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_class_whose_evictions_are_dropped_is_never_forwarded() {
    let classes = two_classes(
        512 << 10,
        ClassPolicy {
            forward_evictions: false,
            ..ClassPolicy::default()
        },
    );
    // 32 blocks of 4 KiB each: both files overflow node 0 many times.
    let shape = Shape {
        nodes: 2,
        block_size: 4096,
        memory: RESERVE + 32 * (4096 + PER_BLOCK_OVERHEAD),
        ..Shape::default()
    };
    let files = [("dropped.bin", 300_000), ("forwarded.bin", 600_000)];
    let c = cluster_with(shape, &files, |o| o.classes = classes.clone()).await;
    let want = contents(1, 300_000);
    assert!(c.nodes[0].read("dropped.bin", None).await.unwrap()[..] == want[..]);
    // Forwards cross a link after the read returns: give them time.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        cached(&c.nodes[1]).await,
        0,
        "a dropped class was forwarded"
    );
    let want = contents(2, 600_000);
    assert!(c.nodes[0].read("forwarded.bin", None).await.unwrap()[..] == want[..]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while cached(&c.nodes[1]).await == 0 {
        assert!(
            Instant::now() < deadline,
            "no singlet of the large class forwarded"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for node in &c.nodes {
        let s = node.status().await.unwrap();
        assert_eq!((s.integrity_failures, s.protocol_violations), (0, 0));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn class_policies_need_nchance_and_no_storage_memory() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    coopcache_node::tls::init_cluster(&keys, &["n".to_string()], 30).unwrap();
    let start = |algorithm, classes: ClassPolicies| {
        let identity = coopcache_node::tls::Identity::load(&keys, "n").unwrap();
        let origin = coopcache_node::origin::Origin::open(dir.path().to_str().unwrap()).unwrap();
        let mut o =
            coopcache_node::NodeOptions::new(identity, "127.0.0.1:0".parse().unwrap(), origin);
        o.algorithm = algorithm;
        o.classes = classes;
        coopcache_node::start(o)
    };
    use coopcache_core::coop::AlgorithmKind;
    let cooperative_off = ClassPolicy {
        cooperative: false,
        ..ClassPolicy::default()
    };
    let e = start(AlgorithmKind::Greedy, two_classes(1024, cooperative_off))
        .await
        .err()
        .expect("greedy refused")
        .to_string();
    assert!(e.contains("nchance"), "{e}");
    let discard = ClassPolicy {
        discard_cache: true,
        ..ClassPolicy::default()
    };
    let e = start(AlgorithmKind::NChance, two_classes(1024, discard))
        .await
        .err()
        .expect("a discard cache refused")
        .to_string();
    assert!(e.contains("discard_cache") && e.contains("`small`"), "{e}");
}
