//! Eve on the data path: a live member (the nodes dial her back and count
//! her among the members managers are chosen from) who encodes the block
//! frames of docs/PROTOCOL.md's table herself, and the blocks she aims at.
//!
//! A block id is `file: u64, index: u32, route: u32`. The route is the top
//! half of the path's key (`manager_key`, a pure function of the path, as
//! `locks.rs` uses it); the file id is 64 bits of BLAKE3 over a label, the
//! path, a zero byte and the origin's version string (the document gives
//! the layout). Each attack first asks the block's manager for its digest
//! (`HashOf`, which any member may send) and checks the answer against the
//! origin's bytes, so a wrong id cannot make an attack vacuous.

use super::*;
use coopcache_core::c2cfs::exclusive::manager_key;
use coopcache_core::protocol::manager_of;
use std::collections::HashMap;
use std::sync::Mutex;
use tokio::io::AsyncRead;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

pub(super) const K_MEMBERS: u8 = 2;
pub(super) const K_RECORD: u8 = 22;
pub(super) const K_HASH_OF: u8 = 23;
pub(super) const K_EXPECT: u8 = 33;
pub(super) const K_FETCH_ORIGIN: u8 = 34;
pub(super) const K_HASH_IS: u8 = 35;
pub(super) const K_DATA: u8 = 48;
pub(super) const K_RECIRCULATE: u8 = 52;
pub(super) const K_PLACE: u8 = 53;
pub(super) const K_PING: u8 = 54;
pub(super) const K_PONG: u8 = 55;
pub(super) const K_OPENED: u8 = 65;
pub(super) const K_COMMITTED: u8 = 67;

/// The data-path attacks' block size (a frame may be this + 1024 bytes).
pub(super) const BS: u32 = 4096;
/// Blocks per attacked file.
pub(super) const BLOCKS: u32 = 8;

/// A block id as the document gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct Bid {
    pub(super) file: u64,
    pub(super) index: u32,
    pub(super) route: u32,
}

impl Bid {
    /// Block `index` of `path` at the origin's version string `version`.
    pub(super) fn of(path: &str, version: &str, index: u32) -> Bid {
        let mut h = blake3::Hasher::new();
        h.update(b"coopcache file v1\0");
        h.update(path.as_bytes());
        h.update(b"\0");
        h.update(version.as_bytes());
        let file = u64::from_le_bytes(h.finalize().as_bytes()[..8].try_into().unwrap());
        Bid {
            file,
            index,
            route: manager_key(path) as u32,
        }
    }

    /// The 16 bytes of a block id: file u64, index u32, route u32.
    pub(super) fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.file.to_be_bytes());
        out.extend_from_slice(&self.index.to_be_bytes());
        out.extend_from_slice(&self.route.to_be_bytes());
    }
}

/// A digest: BLAKE3 `[32]`, then the length u32.
pub(super) fn put_digest(out: &mut Vec<u8>, data: &[u8]) {
    out.extend_from_slice(blake3::hash(data).as_bytes());
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
}

/// A frame of `kind` whose body is `block` and then `rest`.
pub(super) fn block_frame(kind: u8, block: Bid, rest: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(16 + rest.len());
    block.put(&mut body);
    body.extend_from_slice(rest);
    frame(kind, &body)
}

/// `Recirculate`: block, chances u8, data.
pub(super) fn recirculate(block: Bid, chances: u8, data: &[u8]) -> Vec<u8> {
    let mut rest = vec![chances];
    rest.extend_from_slice(data);
    block_frame(K_RECIRCULATE, block, &rest)
}

/// `Expect`: block, digest, recorder u32, holder u32.
pub(super) fn expect(block: Bid, data: &[u8], recorder: u32, holder: u32) -> Vec<u8> {
    let mut rest = Vec::new();
    put_digest(&mut rest, data);
    rest.extend_from_slice(&recorder.to_be_bytes());
    rest.extend_from_slice(&holder.to_be_bytes());
    block_frame(K_EXPECT, block, &rest)
}

/// `HashIs` with a digest: block, present 1, digest, recorder u32.
pub(super) fn hash_is(block: Bid, data: &[u8], recorder: u32) -> Vec<u8> {
    let mut rest = vec![1];
    put_digest(&mut rest, data);
    rest.extend_from_slice(&recorder.to_be_bytes());
    block_frame(K_HASH_IS, block, &rest)
}

/// `Record`: block, digest.
pub(super) fn record(block: Bid, data: &[u8]) -> Vec<u8> {
    let mut rest = Vec::new();
    put_digest(&mut rest, data);
    block_frame(K_RECORD, block, &rest)
}

/// A `Ping` or `Pong` body: nonce u64 and a status of capacity u32, cached
/// u32, cached bytes u64, foreign u32, idle u8, then eight u64 of read
/// counts (served from five levels, failed, errors, violations). Eve's
/// says she has no room and is busy, so no node parks or forwards
/// anything on her, and that she read nothing.
fn ping_body(nonce: u64) -> Vec<u8> {
    let mut body = nonce.to_be_bytes().to_vec();
    body.extend_from_slice(&[0; 21 + 8 * 8]);
    body
}

/// Bytes that are no block's: the same length as a block, none of its
/// contents.
pub(super) fn garbage(index: u32) -> Vec<u8> {
    let mut v = format!("eve's garbage for block {index} ")
        .into_bytes()
        .repeat(BS as usize / 16);
    v.truncate(BS as usize);
    v
}

/// The next frame (kind, body) on `r`, `None` when it ends.
async fn next_frame<R: AsyncRead + Unpin>(r: &mut R) -> Option<(u8, Vec<u8>)> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len).await.ok()?;
    let len = u32::from_be_bytes(len) as usize;
    if len == 0 || len > BS as usize + 1024 {
        return None;
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).await.ok()?;
    let kind = body.remove(0);
    Some((kind, body))
}

type Outs = Arc<Mutex<HashMap<u32, mpsc::UnboundedSender<Vec<u8>>>>>;

/// Eve joined as a member: her links to the nodes (she sends only on
/// those, the nodes only on the links they dial to her) and what the
/// nodes sent her.
pub(super) struct Eve {
    outs: Outs,
    pongs: mpsc::UnboundedReceiver<(u32, u64)>,
    /// Every frame but pings and pongs: (node, kind, body).
    heard: mpsc::UnboundedReceiver<(u32, u8, Vec<u8>)>,
    nonce: u64,
}

impl Eve {
    /// Links eve to every node of `c` and names her listener to them, so
    /// they dial her; returns once every node counts her a live member.
    pub(super) async fn join(c: &TestCluster) -> Eve {
        let me = eve(c);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let listen = listener.local_addr().unwrap().to_string();
        let outs: Outs = Arc::default();
        let (pong_tx, pongs) = mpsc::unbounded_channel();
        let (heard_tx, heard) = mpsc::unbounded_channel();
        tokio::spawn({
            let (me, listen, outs) = (me.clone(), listen.clone(), outs.clone());
            async move {
                while let Ok((tcp, _)) = listener.accept().await {
                    let (me, listen, outs) = (me.clone(), listen.clone(), outs.clone());
                    let (pong_tx, heard_tx) = (pong_tx.clone(), heard_tx.clone());
                    tokio::spawn(async move {
                        let acceptor = tokio_rustls::TlsAcceptor::from(me.server.clone());
                        let Ok(mut tls) = acceptor.accept(tcp).await else {
                            return;
                        };
                        let Some((KIND_HELLO, body)) = next_frame(&mut tls).await else {
                            return;
                        };
                        let node = u32::from_be_bytes(body[6..10].try_into().unwrap());
                        let h = hello(EVE_ID, EVE, &listen, BS);
                        if tls.write_all(&h).await.is_err() || tls.flush().await.is_err() {
                            return;
                        }
                        while let Some((kind, body)) = next_frame(&mut tls).await {
                            match kind {
                                // Answered on her own link to the node, as
                                // an honest member answers: the node's
                                // timeouts see her as a peer on loopback.
                                K_PING => {
                                    let nonce = u64::from_be_bytes(body[..8].try_into().unwrap());
                                    let out = outs.lock().unwrap().get(&node).cloned();
                                    if let Some(out) = out {
                                        let _ = out.send(frame(K_PONG, &ping_body(nonce)));
                                    }
                                }
                                K_PONG => {
                                    let nonce = u64::from_be_bytes(body[..8].try_into().unwrap());
                                    let _ = pong_tx.send((node, nonce));
                                }
                                _ => {
                                    let _ = heard_tx.send((node, kind, body));
                                }
                            }
                        }
                    });
                }
            }
        });
        for node in &c.nodes {
            let (mut link, answer) = handshake(node, &me, &hello(EVE_ID, EVE, &listen, BS)).await;
            let (kind, body) = answer.expect("eve's own Hello was refused");
            assert_eq!(kind, KIND_HELLO);
            let id = u32::from_be_bytes(body[6..10].try_into().unwrap());
            // Members: count u16, then id u32 and listen str each.
            let mut members = 1u16.to_be_bytes().to_vec();
            members.extend_from_slice(&EVE_ID.to_be_bytes());
            put_str(&mut members, &listen);
            link.write_all(&frame(K_MEMBERS, &members)).await.unwrap();
            link.flush().await.unwrap();
            let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
            tokio::spawn(async move {
                while let Some(bytes) = rx.recv().await {
                    if link.write_all(&bytes).await.is_err() || link.flush().await.is_err() {
                        return;
                    }
                }
            });
            outs.lock().unwrap().insert(id, tx);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        for node in &c.nodes {
            while !members(node).await.contains(&EVE_ID) {
                assert!(Instant::now() < deadline, "eve did not become a member");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        Eve {
            outs,
            pongs,
            heard,
            nonce: 0,
        }
    }

    /// Sends `bytes` (whole frames) to node `to` on her link to it.
    pub(super) fn send(&self, to: u32, bytes: Vec<u8>) {
        let out = self.outs.lock().unwrap()[&to].clone();
        out.send(bytes).unwrap();
    }

    /// Returns once node `to` has handled every frame she sent it so far:
    /// a link's frames are handled in order, and the `Pong` to the `Ping`
    /// behind them comes back only after.
    pub(super) async fn barrier(&mut self, to: u32) {
        self.nonce += 1;
        self.send(to, frame(K_PING, &ping_body(self.nonce)));
        let nonce = self.nonce;
        let wait = async {
            while let Some((from, n)) = self.pongs.recv().await {
                if (from, n) == (to, nonce) {
                    return;
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(5), wait)
            .await
            .expect("no Pong from the node");
    }

    /// The bodies of the next `n` frames of `kind` node `from` sends her
    /// (others are skipped), within 10 s.
    pub(super) async fn heard_of(&mut self, from: u32, kind: u8, n: usize) -> Vec<Vec<u8>> {
        let mut got = Vec::new();
        let wait = async {
            while got.len() < n {
                let Some((node, k, body)) = self.heard.recv().await else {
                    panic!("eve's links closed");
                };
                if (node, k) == (from, kind) {
                    got.push(body);
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .unwrap_or_else(|_| panic!("node {from} sent fewer than {n} frames of kind {kind}"));
        got
    }

    /// Asks `manager` for `block`'s digest, as any member may (`HashOf`),
    /// and returns its answer: the digest's hash and length and its
    /// recorder, `None` if it has none.
    pub(super) async fn hash_of(
        &mut self,
        manager: u32,
        block: Bid,
    ) -> Option<([u8; 32], u32, u32)> {
        self.send(manager, block_frame(K_HASH_OF, block, &[]));
        let mut id = Vec::new();
        block.put(&mut id);
        let wait = async {
            while let Some((from, kind, body)) = self.heard.recv().await {
                if from == manager && kind == K_HASH_IS && body[..16] == id[..] {
                    return body;
                }
            }
            panic!("eve's links closed");
        };
        let body = tokio::time::timeout(Duration::from_secs(5), wait)
            .await
            .expect("the manager did not answer eve's HashOf");
        match body[16] {
            0 => None,
            _ => Some((
                body[17..49].try_into().unwrap(),
                u32::from_be_bytes(body[49..53].try_into().unwrap()),
                u32::from_be_bytes(body[53..57].try_into().unwrap()),
            )),
        }
    }
}

/// A file under attack: its path, its version as the nodes see it, its
/// manager (an honest node) and the origin's bytes.
pub(super) struct Target {
    pub(super) path: Arc<str>,
    pub(super) version: Arc<coopcache_node::origin::FileVersion>,
    pub(super) manager: u32,
    pub(super) bytes: Vec<u8>,
}

impl Target {
    pub(super) fn block(&self, index: u32) -> Bid {
        Bid::of(&self.path, &self.version.version, index)
    }

    pub(super) fn slice(&self, index: u32) -> &[u8] {
        let bs = BS as usize;
        &self.bytes[index as usize * bs..(index as usize + 1) * bs]
    }

    /// Checks that eve names the blocks as the nodes do: the manager's
    /// digest of each (once recorded) is the origin's bytes', recorded by
    /// `recorder`.
    pub(super) async fn check_ids(&self, eve: &mut Eve, recorder: u32) {
        for i in 0..BLOCKS {
            let got = eve.hash_of(self.manager, self.block(i)).await;
            let want = (*blake3::hash(self.slice(i)).as_bytes(), BS, recorder);
            assert_eq!(got, Some(want), "{}: block {i}", self.path);
        }
    }
}

/// The members as every node sees them once eve joined.
pub(super) fn live(c: &TestCluster) -> Vec<u32> {
    let mut m: Vec<u32> = (0..c.nodes.len() as u32).collect();
    m.push(EVE_ID);
    m
}

/// A cluster of 3 N-Chance nodes over files `{prefix}{i}` of `BLOCKS`
/// blocks, each node's origin reads taking `delay`, and its peer timeout
/// at least 5 s (every refusal must be the check's, not a timeout's);
/// `exclusive`-mode managers answer as soon as eve has joined.
pub(super) async fn data_cluster(prefix: &str, delay: Duration) -> (TestCluster, Eve) {
    let names: Vec<String> = (0..12).map(|i| format!("{prefix}{i}")).collect();
    let len = (BLOCKS * BS) as usize;
    let files: Vec<(&str, usize)> = names.iter().map(|n| (n.as_str(), len)).collect();
    let shape = Shape {
        block_size: BS,
        origin_delay: delay,
        ..Shape::default()
    };
    let c = cluster_with(shape, &files, |o| {
        o.min_timeout = Duration::from_secs(5);
        o.commit_stable = Duration::ZERO;
    })
    .await;
    let eve = Eve::join(&c).await;
    (c, eve)
}

/// The `n`th file of `prefix` (in name order) whose manager, with eve a
/// member, is an honest node other than `not`, and that node.
pub(super) async fn target(c: &TestCluster, prefix: &str, n: usize, not: &[u32]) -> Target {
    let path = (0..12)
        .map(|i| format!("{prefix}{i}"))
        .filter(|p| {
            let m = manager_of(manager_key(p), &live(c)).unwrap();
            m != EVE_ID && !not.contains(&m)
        })
        .nth(n)
        .expect("too few files an honest node manages");
    let manager = manager_of(manager_key(&path), &live(c)).unwrap();
    let bytes = std::fs::read(c.origin_dir.join(&path)).unwrap();
    let version = c.nodes[manager as usize].stat(&path).await.unwrap();
    Target {
        path: Arc::from(path.as_str()),
        version,
        manager,
        bytes,
    }
}

/// The violations each node counted, by the peer name it counted them
/// against (its per-peer metric), where not zero.
pub(super) fn violations_by_peer(c: &TestCluster) -> Vec<(usize, String, u64)> {
    let mut out = Vec::new();
    for (i, node) in c.nodes.iter().enumerate() {
        let metrics = node.metrics().encode();
        for line in metrics.lines() {
            let Some(rest) = line.strip_prefix("coopcache_protocol_violations_total{peer=\"")
            else {
                continue;
            };
            let (peer, n) = rest.split_once("\"} ").unwrap();
            let n: u64 = n.trim().parse().unwrap();
            if n > 0 {
                out.push((i, peer.to_string(), n));
            }
        }
    }
    out
}

/// Fails if any node counted a violation against anyone but eve; returns
/// how many each node counted against her.
pub(super) fn only_eve_blamed(c: &TestCluster) -> Vec<u64> {
    let mut by_node = vec![0; c.nodes.len()];
    for (i, peer, n) in violations_by_peer(c) {
        assert_eq!(peer, EVE, "node {i} counted {n} violations against {peer}");
        by_node[i] += n;
    }
    by_node
}

/// The sum over `c`'s nodes of `f` of their status.
pub(super) async fn total(
    c: &TestCluster,
    f: impl Fn(&coopcache_node::driver::Status) -> u64,
) -> u64 {
    let mut n = 0;
    for node in &c.nodes {
        n += f(&node.status().await.unwrap());
    }
    n
}
