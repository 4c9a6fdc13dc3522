//! Revocation: `coopcache cluster revoke NAME` on the CA's directory, and
//! every member, including those with no access to that directory, closes
//! and refuses NAME's links within a probe period or two.

use super::*;
use coopcache_node::handle::{NodeOptions, start};
use coopcache_node::origin::Origin;
use coopcache_node::revocation::{CRL_FILE, revoke};
use coopcache_node::tls::{init_cluster, issue};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_member_is_cut_off_by_every_member_within_seconds() {
    let tmp = tempfile::tempdir().unwrap();
    let origin_dir = tmp.path().join("origin");
    std::fs::create_dir_all(&origin_dir).unwrap();
    std::fs::write(origin_dir.join("x.bin"), b"x").unwrap();
    // The CA's directory is node 0's alone; nodes 1 and 2 hold only the
    // CA's certificate and their own pair.
    let ca_dir = tmp.path().join("ca");
    let names: Vec<String> = (0..3).map(|i| format!("node-{i}")).collect();
    init_cluster(&ca_dir, &names, 30).unwrap();
    let mut nodes: Vec<Arc<NodeHandle>> = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let dir = match i {
            0 => ca_dir.clone(),
            _ => {
                let dir = tmp.path().join(name);
                std::fs::create_dir_all(&dir).unwrap();
                for file in [
                    "ca.pem".to_string(),
                    format!("{name}.pem"),
                    format!("{name}.key"),
                ] {
                    std::fs::copy(ca_dir.join(&file), dir.join(&file)).unwrap();
                }
                dir
            }
        };
        let identity = Identity::load(&dir, name).unwrap();
        let origin = Origin::open(origin_dir.to_str().unwrap()).unwrap();
        let mut opts = NodeOptions::new(identity, "127.0.0.1:0".parse().unwrap(), origin);
        opts.memory = 64 << 20;
        if let Some(first) = nodes.first() {
            opts.join = vec![first.listen_addr().to_string()];
        }
        nodes.push(Arc::new(start(opts).await.unwrap()));
    }
    wait_for_members(&nodes, 3).await;

    issue_as(&ca_dir, EVE, Some(EVE_ID), 30).unwrap();
    let eve = Identity::load(&ca_dir, EVE).unwrap();
    let bs = Shape::default().block_size;
    let target = &nodes[2];
    let (mut before, answer) =
        handshake(target, &eve, &hello(EVE_ID, EVE, "127.0.0.1:9", bs)).await;
    assert!(answer.is_some(), "eve is a member before her revocation");

    let revoked = revoke(&ca_dir, EVE).unwrap();
    assert_eq!((revoked.number, revoked.certificates), (1, 1));
    let at = Instant::now();
    loop {
        let (_link, answer) = handshake(target, &eve, &hello(EVE_ID, EVE, "127.0.0.1:9", bs)).await;
        if answer.is_none() {
            break;
        }
        assert!(
            at.elapsed() < Duration::from_secs(5),
            "node 2 still answers eve 5 s after her revocation"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!("node 2 refuses eve {:?} after her revocation", at.elapsed());
    // Her open link is closed at its next frame.
    let _ = before.write_all(&frame(KIND_GOSSIP, &[])).await;
    let _ = before.flush().await;
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(Duration::from_secs(3), before.read(&mut byte)).await;
    assert!(
        matches!(read, Ok(Ok(0) | Err(_))),
        "eve's open link stayed open: {read:?}"
    );
    // Node 2 keeps the list, and the honest members stay members.
    assert!(tmp.path().join("node-2").join(CRL_FILE).is_file());
    keep_members(&nodes, &[0, 1, 2], Duration::from_millis(500)).await;
    // The name is never issued again.
    let err = issue(&ca_dir, EVE, 30).unwrap_err().to_string();
    assert!(err.contains("revoked"), "{err}");
}
