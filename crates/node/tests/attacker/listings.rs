//! Directory listings (protocol 12, kept by each directory's manager) from
//! eve, a member, as docs/PROTOCOL.md gives their frames. A node believes
//! a `Listed` only from the member it asked, and only of the directory it
//! asked; anything else is refused and blamed, and the lister's answer
//! stays the origin's. A member may ask for any listing inside the origin
//! and tell of changes (both only cost origin listings).

use super::wire::*;
use super::*;
use coopcache_core::c2cfs::exclusive::manager_key;
use coopcache_core::protocol::manager_of;

const K_LIST: u8 = 82;
const K_LISTED: u8 = 83;
const K_CHANGED: u8 = 84;
const K_NOTED: u8 = 85;

/// nonce u64, then a string (len u16, UTF-8).
fn with_path(kind: u8, nonce: u64, dir: &str, tail: &[u8]) -> Vec<u8> {
    let mut body = nonce.to_be_bytes().to_vec();
    body.extend_from_slice(&(dir.len() as u16).to_be_bytes());
    body.extend_from_slice(dir.as_bytes());
    body.extend_from_slice(tail);
    frame(kind, &body)
}

/// nonce u64, flag 1, dir (len u16, UTF-8), count u32, then per entry its
/// name (len u16, UTF-8), kind (0 a file) and version flag (0: none).
fn listed(nonce: u64, dir: &str, names: &[&str]) -> Vec<u8> {
    let mut body = nonce.to_be_bytes().to_vec();
    body.push(1);
    body.extend_from_slice(&(dir.len() as u16).to_be_bytes());
    body.extend_from_slice(dir.as_bytes());
    body.extend_from_slice(&(names.len() as u32).to_be_bytes());
    for n in names {
        body.extend_from_slice(&(n.len() as u16).to_be_bytes());
        body.extend_from_slice(n.as_bytes());
        body.extend_from_slice(&[0, 0]);
    }
    frame(K_LISTED, &body)
}

/// Directories `d{i}` of the origin, each holding `real.bin`: the first
/// one whose manager, with eve a member, is `want(manager)`.
fn dir_managed(c: &TestCluster, want: impl Fn(u32) -> bool) -> (String, u32) {
    (0..64)
        .map(|i| format!("d{i}"))
        .map(|d| {
            let m = manager_of(manager_key(&d), &live(c)).unwrap();
            (d, m)
        })
        .find(|(_, m)| want(*m))
        .map(|(d, m)| {
            std::fs::create_dir_all(c.origin_dir.join(&d)).unwrap();
            std::fs::write(c.origin_dir.join(&d).join("real.bin"), b"real").unwrap();
            (d, m)
        })
        .expect("a directory so managed")
}

fn names(l: &coopcache_node::listing::DirListing) -> Vec<&str> {
    l.entries().iter().map(|e| e.name.as_str()).collect()
}

async fn blamed(c: &TestCluster, node: u32) -> u64 {
    // The per-peer metric is synced by a status.
    c.nodes[node as usize].status().await.unwrap();
    (violations_by_peer(c).into_iter())
        .filter(|(n, peer, _)| *n == node as usize && peer == EVE)
        .map(|(_, _, v)| v)
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_is_believed_only_from_the_member_asked_and_only_of_the_directory_asked() {
    // Origin requests take 300 ms: a listing stays in flight meanwhile.
    let (c, mut eve) = data_cluster("l", Duration::from_millis(300)).await;
    let (dir, m) = dir_managed(&c, |m| m != EVE_ID);
    let x = (m + 1) % 3;
    // While x's listing waits on m, eve answers it for m, guessing its
    // nonce: refused and blamed, the listing is m's.
    let lister = c.nodes[x as usize].clone();
    let asked = tokio::spawn({
        let dir = dir.clone();
        async move { lister.list_exclusive(&dir).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    for nonce in 0..8 {
        eve.send(x, listed(nonce, &dir, &["evil.bin"]));
    }
    eve.barrier(x).await;
    let got = asked.await.unwrap().unwrap();
    assert_eq!(names(&got), ["real.bin"]);
    assert!(
        blamed(&c, x).await >= 1,
        "a listing from a member not asked"
    );

    // Eve manages a directory: her answer of another directory is
    // refused and blamed, and the lister lists the origin itself.
    let (hers, _) = dir_managed(&c, |m| m == EVE_ID);
    let before = blamed(&c, x).await;
    let lister = c.nodes[x as usize].clone();
    let asked = tokio::spawn({
        let hers = hers.clone();
        async move { lister.list_exclusive(&hers).await }
    });
    let [ask] = &eve.heard_of(x, K_LIST, 1).await[..] else {
        unreachable!()
    };
    let nonce = u64::from_be_bytes(ask[..8].try_into().unwrap());
    eve.send(x, listed(nonce, &dir, &["evil.bin"]));
    let got = asked.await.unwrap().unwrap();
    assert_eq!(names(&got), ["real.bin"], "the origin's");
    assert_eq!(
        blamed(&c, x).await,
        before + 1,
        "another directory's listing"
    );

    // Eve may ask a manager for a listing, and is answered; a directory
    // outside the origin is never listed (answered none).
    eve.send(m, with_path(K_LIST, 500, &dir, &[]));
    let [body] = &eve.heard_of(m, K_LISTED, 1).await[..] else {
        unreachable!()
    };
    assert_eq!(u64::from_be_bytes(body[..8].try_into().unwrap()), 500);
    assert_eq!(body[8], 1, "a listing");
    let outside = (0..)
        .map(|i| format!("../d{i}"))
        .find(|d| manager_of(manager_key(d), &live(&c)) == Some(m))
        .unwrap();
    eve.send(m, with_path(K_LIST, 501, &outside, &[]));
    let [body] = &eve.heard_of(m, K_LISTED, 1).await[..] else {
        unreachable!()
    };
    assert_eq!(&body[..9], &[&501u64.to_be_bytes()[..], &[0]].concat()[..]);
    // A change she tells of is noted (it only drops a listing).
    eve.send(m, with_path(K_CHANGED, 502, &dir, &[0]));
    let [body] = &eve.heard_of(m, K_NOTED, 1).await[..] else {
        unreachable!()
    };
    assert_eq!(&body[..], &[&502u64.to_be_bytes()[..], &[1]].concat()[..]);
    assert_eq!(blamed(&c, m).await, 0, "a member's rights");
}
