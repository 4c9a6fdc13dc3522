//! `Warm` (protocol 11, a warm-up placed on a file's manager) from eve, a
//! member, as docs/PROTOCOL.md gives its frame. A member may make a node
//! read files it manages from the origin, as many at once as one warm-up
//! reads and no more (the rest are answered `Busy` at once); never a path
//! outside the origin, and never at a node that does not manage the
//! path. An answer with a nonce nobody awaits changes nothing.

use super::wire::*;
use super::*;
use coopcache_core::c2cfs::exclusive::manager_key;
use coopcache_core::protocol::manager_of;

const K_WARM: u8 = 80;
const K_WARMED: u8 = 81;

/// nonce u64, path (len u16, UTF-8).
fn warm(nonce: u64, path: &str) -> Vec<u8> {
    let mut body = nonce.to_be_bytes().to_vec();
    body.extend_from_slice(&(path.len() as u16).to_be_bytes());
    body.extend_from_slice(path.as_bytes());
    frame(K_WARM, &body)
}

/// Answer codes: 0 read (then bytes u64), 1 not read, 2 busy, 3 not the
/// manager.
fn code_of(body: &[u8]) -> (u64, u8) {
    (u64::from_be_bytes(body[..8].try_into().unwrap()), body[8])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_has_a_node_read_at_most_one_warm_ups_files_and_only_its_own() {
    // Origin reads take 300 ms: the first files are still being read when
    // the rest arrive.
    let (c, mut eve) = data_cluster("w", Duration::from_millis(300)).await;
    let t = target(&c, "w", 0, &[]).await;
    let other = (t.manager + 1) % 3;
    let before = origin_reads(&c).await;
    // Eight files at once, one more than a warm-up's four.
    for nonce in 0..8 {
        eve.send(t.manager, warm(nonce, &t.path));
    }
    let answers = eve.heard_of(t.manager, K_WARMED, 8).await;
    let mut codes: Vec<(u64, u8)> = answers.iter().map(|b| code_of(b)).collect();
    codes.sort();
    let read: Vec<_> = codes.iter().filter(|c| c.1 == 0).collect();
    let busy = codes.iter().filter(|c| c.1 == 2).count();
    assert_eq!((read.len(), busy), (4, 4), "{codes:?}");
    for body in answers.iter().filter(|b| b[8] == 0) {
        let bytes = u64::from_be_bytes(body[9..17].try_into().unwrap());
        assert_eq!(bytes, t.bytes.len() as u64, "a read answer's size");
    }
    // One read of the file from the origin, however many asked.
    assert_eq!(origin_reads(&c).await - before, u64::from(BLOCKS));

    // At a node that does not manage the path: told so, nothing read.
    eve.send(other, warm(100, &t.path));
    let [body] = &eve.heard_of(other, K_WARMED, 1).await[..] else {
        unreachable!()
    };
    assert_eq!(code_of(body), (100, 3));
    // A path outside the origin, at the node that would manage it: not
    // read.
    let outside = (0..)
        .map(|i| format!("../w{i}"))
        .find(|p| manager_of(manager_key(p), &live(&c)) == Some(t.manager))
        .unwrap();
    eve.send(t.manager, warm(101, &outside));
    let [body] = &eve.heard_of(t.manager, K_WARMED, 1).await[..] else {
        unreachable!()
    };
    assert_eq!(code_of(body), (101, 1));
    // Answers nobody asked for: dropped, not blamed (a late answer looks
    // the same), nothing read.
    for n in 0..3 {
        let mut body = 7u64.to_be_bytes().to_vec();
        body.push(0);
        body.extend_from_slice(&1u64.to_be_bytes());
        eve.send(n, frame(K_WARMED, &body));
        eve.barrier(n).await;
    }
    assert_eq!(origin_reads(&c).await - before, u64::from(BLOCKS));
    assert_eq!(total(&c, |s| s.protocol_violations).await, 0);
}
