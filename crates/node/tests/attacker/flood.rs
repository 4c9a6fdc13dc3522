//! Issue 39, attack 4: connections unbounded in time. Idle connections
//! that had sent a Hello, or plain TCP that never sent one, filled every
//! node's connection cap and a new member could not join.

use super::*;
use coopcache_node::handle::{NodeOptions, start};
use coopcache_node::origin::Origin;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_never_authenticate_or_sit_idle_cannot_keep_a_member_out() {
    let shape = Shape {
        nodes: 2,
        ..Shape::default()
    };
    let bs = shape.block_size;
    let c = cluster(shape, &[("x.bin", 1000)]).await;
    let eve = eve(&c);
    let seed = &c.nodes[0];

    // 40 links of one member that say Hello and then nothing: only the
    // newest few stay open.
    let mut idle = Vec::new();
    for _ in 0..40 {
        let (link, answer) = handshake(seed, &eve, &hello(EVE_ID, EVE, "127.0.0.1:9", bs)).await;
        assert!(answer.is_some());
        idle.push(link);
    }
    let mut closed = 0;
    for link in &mut idle {
        let mut byte = [0u8; 1];
        let read = tokio::time::timeout(Duration::from_millis(200), link.read(&mut byte)).await;
        if matches!(read, Ok(Ok(0) | Err(_))) {
            closed += 1;
        }
    }
    assert!(closed >= 36, "{closed} of eve's 40 idle links closed");

    // 300 plain TCP connections that never start TLS, held open.
    let mut plain = Vec::new();
    for _ in 0..300 {
        plain.push(TcpStream::connect(seed.listen_addr()).await.unwrap());
    }
    // The oldest are closed at once to make room, not at their deadline.
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(Duration::from_secs(1), plain[0].read(&mut byte)).await;
    assert!(
        matches!(read, Ok(Ok(0) | Err(_))),
        "the oldest of 300 unauthenticated connections still open"
    );

    // A new member joins through the flooded node.
    issue_as(&c.keys, "late", None, 30).unwrap();
    let identity = Identity::load(&c.keys, "late").unwrap();
    let late_id = identity.id;
    let origin = Origin::open(c.origin_dir.to_str().unwrap()).unwrap();
    let mut opts = NodeOptions::new(identity, "127.0.0.1:0".parse().unwrap(), origin);
    opts.memory = 64 << 20;
    opts.join = vec![seed.listen_addr().to_string()];
    let late = Arc::new(start(opts).await.unwrap());
    let started = Instant::now();
    let all: Vec<Arc<NodeHandle>> = c.nodes.iter().cloned().chain([late.clone()]).collect();
    loop {
        let mut joined = true;
        for n in &all {
            joined &= members(n).await.contains(&late_id);
        }
        for n in &c.nodes {
            joined &= members(&late).await.len() == 3 && members(n).await.len() == 3;
        }
        if joined {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the new member did not join past the flood"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!("joined past the flood in {:?}", started.elapsed());

    // A connection that never says Hello is closed by the deadline.
    let mut lone = TcpStream::connect(seed.listen_addr()).await.unwrap();
    let opened = Instant::now();
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(Duration::from_secs(10), lone.read(&mut byte)).await;
    assert!(
        matches!(read, Ok(Ok(0) | Err(_))),
        "a silent connection left open 10 s"
    );
    assert!(
        opened.elapsed() <= Duration::from_millis(6500),
        "{:?}",
        opened.elapsed()
    );
    drop(plain);
}
