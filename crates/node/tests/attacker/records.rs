//! Issue 39, the data path: a `Record` (a block's digest, which every later
//! reader checks the holders' bytes against) from a member the manager
//! never granted that block's record to. Accepted, eve's digest would make
//! every honest holder's bytes fail their check, and the failures would
//! blame the honest holders for her record.

use super::wire::*;
use super::*;
use coopcache_core::coop::Level;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_never_granted_changes_no_digest_and_is_blamed_on_its_sender() {
    let (c, mut eve) = data_cluster("r", Duration::ZERO).await;
    let t = target(&c, "r", 0, &[]).await;
    let (first, second) = ((t.manager + 1) % 3, (t.manager + 2) % 3);
    // Before any read (no digest, no grant), and below again once a
    // granted reader recorded the origin's.
    let forge = |eve: &Eve| {
        for i in 0..BLOCKS {
            eve.send(t.manager, record(t.block(i), &garbage(i)));
        }
    };
    forge(&eve);
    eve.barrier(t.manager).await;
    // The first reader is granted each record: it reads the origin.
    let node = &c.nodes[first as usize];
    for i in 0..BLOCKS {
        let (data, level) = node.read_block(&t.path, &t.version, i).await.unwrap();
        assert!(data[..] == *t.slice(i), "block {i}");
        assert_eq!(level, Level::Origin, "block {i}: not granted its record");
    }
    // The digests the manager keeps are the origin's, by the first reader.
    t.check_ids(&mut eve, first).await;
    forge(&eve);
    eve.barrier(t.manager).await;
    // The second reader is forwarded to the first, whose bytes pass the
    // check against its own record.
    let node = &c.nodes[second as usize];
    for i in 0..BLOCKS {
        let (data, level) = node.read_block(&t.path, &t.version, i).await.unwrap();
        assert!(data[..] == *t.slice(i), "block {i}");
        assert_eq!(level, Level::RemoteNode, "block {i}: the holder failed");
    }
    t.check_ids(&mut eve, first).await;
    assert_eq!(total(&c, |s| s.integrity_failures).await, 0);
    assert_eq!(total(&c, |s| s.timeouts).await, 0);
    // Each forged record counted once, at the manager, against eve.
    let blamed = only_eve_blamed(&c);
    let want: Vec<u64> = (0..3)
        .map(|n| {
            if n == t.manager {
                2 * u64::from(BLOCKS)
            } else {
                0
            }
        })
        .collect();
    assert_eq!(blamed, want, "violations per node");
}
