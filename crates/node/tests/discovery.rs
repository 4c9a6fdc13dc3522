//! Zero-configuration discovery: nodes started with a discovery group and
//! no seeds form one cluster over loopback multicast; another cluster's
//! node on the same group, and junk datagrams, are ignored and counted.

use crate::common;

use common::{Shape, cluster_with, contents};
use coopcache_node::discovery::{self, Announcement};
use coopcache_node::origin::Origin;
use coopcache_node::tls::{Identity, init_cluster};
use coopcache_node::{NodeOptions, start};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};

/// A group and port of this test process's own, so parallel runs on one
/// host do not meet.
fn group(salt: u16) -> SocketAddrV4 {
    let port = 20000 + (std::process::id() % 20000) as u16 + salt;
    SocketAddrV4::new(Ipv4Addr::new(239, 255, 70, 99), port)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_with_discovery_and_no_seeds_form_one_cluster() {
    let group = group(0);
    let files = [("a.bin", 300_000)];
    // cluster_with waits until every node lists all three members.
    let c = cluster_with(Shape::default(), &files, |o| {
        o.join.clear();
        o.discover = Some(group);
    })
    .await;
    let ids: Vec<u32> = {
        let s = c.nodes[2].status().await.unwrap();
        let mut ids: Vec<u32> = s.members.iter().map(|m| m.id).collect();
        ids.sort_unstable();
        ids
    };
    assert_eq!(ids, vec![0, 1, 2]);
    // And it serves the origin's bytes.
    let data = c.nodes[1].read("a.bin", None).await.unwrap();
    assert_eq!(&data[..], &contents(1, 300_000)[..]);

    // Another cluster's node on the same group is heard but not joined.
    let tmp = tempfile::tempdir().unwrap();
    let keys = tmp.path().join("keys");
    init_cluster(&keys, &["stranger".to_string()], 30).unwrap();
    let identity = Identity::load(&keys, "stranger").unwrap();
    let origin = Origin::open(c.origin_dir.to_str().unwrap()).unwrap();
    let mut opts = NodeOptions::new(identity, "127.0.0.1:0".parse().unwrap(), origin);
    opts.discover = Some(group);
    let stranger = start(opts).await.unwrap();

    // Junk on the group, and an announcement of a malformed length.
    let junk = discovery::open(group, Ipv4Addr::LOCALHOST).unwrap();
    junk.send_to(b"GET / HTTP/1.1\r\n\r\n", group)
        .await
        .unwrap();
    let mut bad = Announcement {
        cluster: [0; discovery::TAG],
        node: 5,
        listen: "127.0.0.1:1".into(),
    }
    .encode();
    bad.push(0);
    junk.send_to(&bad, group).await.unwrap();

    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        // Each node hears the stranger's announcements (another cluster)
        // and the junk.
        let ignored: Vec<u64> = c
            .nodes
            .iter()
            .map(|n| n.metrics().discovery_ignored.get())
            .collect();
        // The stranger hears the junk and our three nodes, and ignores
        // them all.
        let stranger_ignored = stranger.metrics().discovery_ignored.get();
        if ignored.iter().all(|&i| i >= 3) && stranger_ignored >= 5 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "ignored counts {ignored:?}, stranger {stranger_ignored}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for n in &c.nodes {
        assert_eq!(n.status().await.unwrap().members.len(), 3);
    }
    assert_eq!(stranger.status().await.unwrap().members.len(), 1);
}

/// The first pod of a Kubernetes DaemonSet joins through its headless
/// Service's name, which resolves to itself alone: the node skips its own
/// address instead of dialling itself every two seconds and counting each
/// refused link as a peer's error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seed_name_that_leads_to_the_node_itself_is_no_peer_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let shape = Shape {
        nodes: 1,
        ..Shape::default()
    };
    let c = cluster_with(shape, &[], |o| {
        o.listen = format!("127.0.0.1:{port}").parse().unwrap();
        o.join = vec![format!("localhost:{port}")];
    })
    .await;
    // Two of the membership's redials (every 2 s while alone).
    tokio::time::sleep(Duration::from_secs(5)).await;
    let s = c.nodes[0].status().await.unwrap();
    assert_eq!(s.peer_errors, 0, "the node dialled itself as a peer");
    assert_eq!(s.members.len(), 1);
}
