//! Issue 39, the data path: answers nobody asked eve for. A reader takes a
//! block's digest and its holder only from the block's manager, its bytes
//! only from the node it was told to expect them from, and an answer to an
//! `exclusive`-mode open or commit only from the node the request went to.
//! Eve, a member that manages none of the files, sends each of these
//! while honest reads and opens wait for their real answers.

use super::wire::*;
use super::*;
use coopcache_core::coop::Level;

/// Every origin read and stat takes this long: the window in which a read
/// (or an open) waits on honest nodes and eve answers first.
const DELAY: Duration = Duration::from_millis(700);

/// An `Opened` with a version of `path` no manager gave: nonce u64,
/// present 1, Tcommit (epoch u64, serial u64), path (u16 + UTF-8), size
/// u64, version (u16 + UTF-8), modified 0, permission bits u16, owner 0,
/// then served 0.
fn opened(nonce: u64, path: &str, size: u64) -> Vec<u8> {
    let mut body = nonce.to_be_bytes().to_vec();
    body.push(1);
    body.extend_from_slice(&FORGED_EPOCH.to_be_bytes());
    body.extend_from_slice(&1u64.to_be_bytes());
    body.extend_from_slice(&(path.len() as u16).to_be_bytes());
    body.extend_from_slice(path.as_bytes());
    body.extend_from_slice(&size.to_be_bytes());
    body.extend_from_slice(&6u16.to_be_bytes());
    body.extend_from_slice(b"forged");
    body.push(0);
    body.extend_from_slice(&0o644u16.to_be_bytes());
    body.push(0);
    body.push(0);
    frame(K_OPENED, &body)
}

/// A `Committed`: nonce u64, present 1, Tcommit, valid 1.
fn committed(nonce: u64) -> Vec<u8> {
    let mut body = nonce.to_be_bytes().to_vec();
    body.push(1);
    body.extend_from_slice(&FORGED_EPOCH.to_be_bytes());
    body.extend_from_slice(&1u64.to_be_bytes());
    body.push(1);
    frame(K_COMMITTED, &body)
}

/// The epoch of eve's `Tcommit`s: no manager's.
const FORGED_EPOCH: u64 = 0xbad;

/// Polls `f` of `node`'s status until it reaches `want` (5 s at most).
async fn until(node: &NodeHandle, want: u64, f: impl Fn(&coopcache_node::driver::Status) -> u64) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while f(&node.status().await.unwrap()) < want {
        assert!(Instant::now() < deadline, "a count stayed below {want}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_nobody_asked_eve_for_are_refused_and_counted_against_her() {
    let (c, mut eve) = data_cluster("a", DELAY).await;

    // Reads. The first reader is granted each block's record and reads
    // the origin (DELAY); the victim's reads of the same blocks are
    // forwarded to it and wait there, the manager's `Expect` following
    // the record: for about DELAY the victim has asked, and been told
    // neither the digest nor whom to take the bytes from.
    let t = target(&c, "a", 0, &[]).await;
    let (first, victim) = ((t.manager + 1) % 3, (t.manager + 2) % 3);
    let (a, v) = (
        c.nodes[first as usize].clone(),
        c.nodes[victim as usize].clone(),
    );
    let origin_reads = a.status().await.unwrap().origin_reads;
    let read_all = |node: Arc<NodeHandle>| {
        (0..BLOCKS)
            .map(|i| {
                let (node, path, version) = (node.clone(), t.path.clone(), t.version.clone());
                tokio::spawn(async move { node.read_block(&path, &version, i).await.unwrap() })
            })
            .collect::<Vec<_>>()
    };
    let firsts = read_all(a.clone());
    until(&a, origin_reads + u64::from(BLOCKS), |s| s.origin_reads).await;
    let victim_origin_reads = v.status().await.unwrap().origin_reads;
    let reads = read_all(v.clone());
    // Meanwhile eve answers every block, over and over: its bytes, and,
    // as if she were its manager, a digest of them naming her as holder
    // (`Expect`), an order to read the origin and record it
    // (`FetchOrigin`) and a digest for a copy held unverified (`HashIs`).
    let mut rounds = 0u64;
    while !reads.iter().all(|r| r.is_finished()) {
        for i in 0..BLOCKS {
            let (block, bad) = (t.block(i), garbage(i));
            eve.send(victim, block_frame(K_DATA, block, &bad));
            eve.send(victim, expect(block, &bad, EVE_ID, EVE_ID));
            eve.send(victim, block_frame(K_FETCH_ORIGIN, block, &[1]));
            eve.send(victim, hash_is(block, &bad, EVE_ID));
        }
        rounds += 1;
        assert!(rounds < 250, "the victim's reads never finished");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eve.barrier(victim).await;
    for (i, (got, read)) in firsts.into_iter().zip(reads).enumerate() {
        let slice = t.slice(i as u32);
        let (data, level) = got.await.unwrap();
        assert!(data[..] == *slice, "block {i}: first reader");
        assert_eq!(level, Level::Origin, "block {i}: first reader");
        let (data, level) = read.await.unwrap();
        assert!(data[..] == *slice, "block {i}: eve's bytes served");
        assert_eq!(level, Level::RemoteNode, "block {i}: not the holder's");
    }
    let s = v.status().await.unwrap();
    assert_eq!(
        s.origin_reads, victim_origin_reads,
        "the victim read the origin"
    );
    assert_eq!(total(&c, |s| s.integrity_failures).await, 0);
    assert_eq!(total(&c, |s| s.timeouts).await, 0);
    t.check_ids(&mut eve, first).await;
    // Every `Expect`, `FetchOrigin` and `HashIs` is refused; her bytes
    // are refused (once a read waits for the manager's word, one per
    // read: one early answer is kept per sender) while a read is in
    // flight, and dropped as late otherwise.
    let blamed = only_eve_blamed(&c);
    let roles = 3 * u64::from(BLOCKS) * rounds;
    let data = blamed[victim as usize] - roles.min(blamed[victim as usize]);
    assert!(
        blamed[victim as usize] >= roles
            && (u64::from(BLOCKS)..=u64::from(BLOCKS) * rounds).contains(&data),
        "{blamed:?}: {rounds} rounds"
    );
    assert_eq!(blamed[first as usize] + blamed[t.manager as usize], 0);
    let counted = blamed[victim as usize];
    eprintln!("{rounds} rounds of answers; {data} of eve's Data refused in flight");

    // Opens. The victim opens a file another honest node manages in
    // `exclusive` mode; while the manager's stat of the origin takes
    // DELAY, eve answers it and commits under every nonce a node could
    // have used. The open's nonce is refused as hers, twice (`Opened` and
    // `Committed`); the others are late answers, dropped uncounted.
    let t2 = target(&c, "a", 1, &[victim]).await;
    let m2 = &c.nodes[t2.manager as usize];
    let real = v.stat_fresh(&t2.path).await.unwrap();
    let stats = m2.status().await.unwrap().origin_stats;
    let open = tokio::spawn({
        let (v, path) = (v.clone(), t2.path.clone());
        async move { v.open_exclusive(&path).await.unwrap() }
    });
    until(m2, stats + 1, |s| s.origin_stats).await;
    for nonce in 0..200 {
        eve.send(victim, opened(nonce, &t2.path, real.size));
        eve.send(victim, committed(nonce));
    }
    eve.barrier(victim).await;
    let early = open.is_finished();
    let (topen, version) = open.await.unwrap();
    assert_eq!(version, real, "the open took eve's version");
    assert!(topen.is_some_and(|t| t.epoch != FORGED_EPOCH), "{topen:?}");
    assert!(
        !early,
        "the manager answered before eve: nothing was tested"
    );
    let blamed = only_eve_blamed(&c);
    assert_eq!(blamed[victim as usize] - counted, 2, "{blamed:?}");
    assert!(members(&v).await.contains(&EVE_ID));
}
