//! Issue 39, the data path: garbage a member pushes for a block an honest
//! node caches verified. Under N-Chance any member may forward a singlet
//! (`Recirculate`) to any other; `Place` is no N-Chance message. Before
//! rule `pushed-never-evicts`, such a pushed copy was held, failed the
//! manager's digest, and the verdict dropped the node's verified copy with
//! it: one member could evict any honest copy and cost its origin reads.

use super::wire::*;
use super::*;
use coopcache_core::coop::Level;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_pushed_for_a_verified_block_neither_replaces_nor_evicts_it() {
    let (c, mut eve) = data_cluster("p", Duration::ZERO).await;
    let t = target(&c, "p", 0, &[]).await;
    let victim = (t.manager + 1) % 3;
    let node = &c.nodes[victim as usize];
    // The victim reads the file first: it reads the origin, records each
    // block's digest at the manager and caches the blocks verified.
    let got = node.read(&t.path, None).await.unwrap();
    assert!(got[..] == t.bytes[..]);
    t.check_ids(&mut eve, victim).await;
    let before = node.status().await.unwrap();

    for i in 0..BLOCKS {
        let bad = garbage(i);
        eve.send(victim, recirculate(t.block(i), 2, &bad));
        eve.send(victim, block_frame(K_PLACE, t.block(i), &bad));
    }
    eve.barrier(victim).await;
    // Had a pushed copy been taken, the machine would hold it in place of
    // the verified one and a read would wait for the manager's verdict,
    // then go to the origin: every block must come from memory, right.
    for i in 0..BLOCKS {
        let (data, level) = node.read_block(&t.path, &t.version, i).await.unwrap();
        assert!(data[..] == *t.slice(i), "block {i}: eve's bytes served");
        assert_eq!(level, Level::Local, "block {i}: the verified copy went");
    }
    let after = node.status().await.unwrap();
    assert_eq!(after.origin_reads, before.origin_reads, "origin reads");
    assert_eq!(after.cached_blocks, before.cached_blocks);
    assert_eq!(total(&c, |s| s.integrity_failures).await, 0);
    // Recirculate is an N-Chance member's to send (dropped unchecked);
    // Place is refused and counted, against her and nobody else.
    let blamed = only_eve_blamed(&c);
    let want: Vec<u64> = (0..3)
        .map(|n| if n == victim { u64::from(BLOCKS) } else { 0 })
        .collect();
    assert_eq!(blamed, want, "violations per node");
    // Every node serves the origin's bytes, eve still a member.
    for n in &c.nodes {
        assert!(n.read(&t.path, None).await.unwrap()[..] == t.bytes[..]);
        assert!(members(n).await.contains(&EVE_ID));
    }
}
