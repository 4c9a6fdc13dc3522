//! Hostile peers against a real 2-node cluster.
//!
//! - Mallory has a valid certificate from the cluster CA and speaks the
//!   frame protocol, but every block it serves is bad: flipped bits,
//!   truncated, padded, a stale version's bytes, another block's bytes
//!   (and, as a control that the attack path is live, honest bytes). It
//!   gets itself recorded as a holder by reading each block through the
//!   manager, so the manager forwards the next reader to it. It also
//!   pushes bad singlets (N-Chance recirculation) at the real nodes. Every
//!   bad block must be detected (`integrity_failures`) and no bad byte
//!   delivered or kept.
//! - Eve has a certificate from another CA: her handshakes fail both ways,
//!   none of her frames is processed, and she reads nothing.

mod common;
use bytes::Bytes;
use common::*;
use coopcache_core::coop::{Addr, Level, Msg, NodeId};
use coopcache_node::block::{BlockId, file_id, manager_of};
use coopcache_node::frame::{PROTOCOL_VERSION, Wire, max_frame};
use coopcache_node::link::{read_frame, write_frame};
use coopcache_node::origin::FileVersion;
use coopcache_node::tls::{Identity, SERVER_NAME, init_cluster, issue};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

const BLOCK_SIZE: u32 = 4096;
const BLOCKS_PER_FILE: u32 = 8;
const FILES: usize = 10;
const MALLORY: NodeId = 2;

/// What Mallory answers for a block forwarded to her.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Answer {
    /// One bit of the right bytes flipped.
    FlippedBit,
    /// The right bytes, cut short by one.
    Truncated,
    /// The right bytes and one more.
    Padded,
    /// The same block of the file's previous version.
    Stale,
    /// Another block of the same file version (right length, valid data).
    OtherBlock,
    /// The right bytes: the control.
    Honest,
}

const ANSWERS: [Answer; 6] = [
    Answer::FlippedBit,
    Answer::Truncated,
    Answer::Padded,
    Answer::Stale,
    Answer::OtherBlock,
    Answer::Honest,
];

type Conn = Arc<tokio::sync::Mutex<Box<dyn Stream>>>;

trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// The hostile member: her links to the real nodes, and what she has
/// answered.
struct Mallory {
    out: HashMap<NodeId, Conn>,
    /// Bytes to answer per block, and how many forwards she answered.
    answers: Arc<Mutex<HashMap<BlockId, (Answer, Bytes)>>>,
    answered: Arc<Mutex<Vec<(BlockId, Answer)>>>,
    pongs: mpsc::Receiver<u64>,
    nonce: u64,
}

fn hello(identity: &Identity, node: NodeId, listen: &str) -> Wire {
    Wire::Hello {
        version: PROTOCOL_VERSION,
        node,
        name: identity.name.clone(),
        listen: listen.to_string(),
        block_size: BLOCK_SIZE,
    }
}

/// Accepts the real nodes' links: TLS, `Hello` both ways, then every frame
/// to `frames`.
async fn accept_links(
    listener: TcpListener,
    identity: Identity,
    listen: String,
    frames: mpsc::Sender<(NodeId, Wire)>,
) {
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            return;
        };
        let (identity, listen, frames) = (identity.clone(), listen.clone(), frames.clone());
        tokio::spawn(async move {
            let acceptor = tokio_rustls::TlsAcceptor::from(identity.server.clone());
            let mut tls = acceptor.accept(tcp).await.unwrap();
            let max = max_frame(BLOCK_SIZE);
            let Some(Wire::Hello { node, .. }) = read_frame(&mut tls, max).await.unwrap() else {
                panic!("a real node's first frame is not a Hello");
            };
            write_frame(&mut tls, &hello(&identity, MALLORY, &listen))
                .await
                .unwrap();
            while let Ok(Some(wire)) = read_frame(&mut tls, max).await {
                if frames.send((node, wire)).await.is_err() {
                    return;
                }
            }
        });
    }
}

/// Dials a real node with `client` (presenting the certificate it holds),
/// sends `hello` and returns the connection and the node's `Hello` (or the
/// error that ended the attempt).
async fn dial(
    addr: &str,
    client: Arc<rustls::ClientConfig>,
    hello: &Wire,
) -> Result<(tokio_rustls::client::TlsStream<TcpStream>, Wire), String> {
    let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let connector = tokio_rustls::TlsConnector::from(client);
    let server = ServerName::try_from(SERVER_NAME).unwrap();
    let mut tls = connector
        .connect(server, tcp)
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    write_frame(&mut tls, hello)
        .await
        .map_err(|e| e.to_string())?;
    match read_frame(&mut tls, max_frame(BLOCK_SIZE)).await {
        Ok(Some(w)) => Ok((tls, w)),
        Ok(None) => Err("closed before Hello".into()),
        Err(e) => Err(e.to_string()),
    }
}

impl Mallory {
    /// Joins the cluster of `nodes` with a certificate issued by its CA in
    /// `keys`, and starts answering forwards from `answers`.
    async fn join(keys: &Path, nodes: &[String]) -> Mallory {
        issue(keys, "mallory", 30).unwrap();
        let identity = Identity::load(keys, "mallory").unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let listen = listener.local_addr().unwrap().to_string();
        let (frames_tx, mut frames) = mpsc::channel(1024);
        tokio::spawn(accept_links(
            listener,
            identity.clone(),
            listen.clone(),
            frames_tx,
        ));
        let mut out = HashMap::new();
        for addr in nodes {
            let me = hello(&identity, MALLORY, &listen);
            let (mut tls, their) = dial(addr, identity.client.clone(), &me).await.unwrap();
            let Wire::Hello { node, .. } = their else {
                panic!("{their:?}")
            };
            // Tell the node where to reach her, so it dials back.
            let members = Wire::Members(vec![(MALLORY, listen.clone())]);
            write_frame(&mut tls, &members).await.unwrap();
            let conn: Conn = Arc::new(tokio::sync::Mutex::new(Box::new(tls)));
            out.insert(node, conn);
        }
        let answers: Arc<Mutex<HashMap<BlockId, (Answer, Bytes)>>> = Arc::default();
        let answered: Arc<Mutex<Vec<(BlockId, Answer)>>> = Arc::default();
        let (pong_tx, pongs) = mpsc::channel(64);
        let (links, table, log) = (out.clone(), answers.clone(), answered.clone());
        tokio::spawn(async move {
            while let Some((from, wire)) = frames.recv().await {
                match wire {
                    Wire::Core {
                        msg:
                            Msg::Forward {
                                block,
                                reader,
                                hops,
                            },
                        ..
                    } => {
                        let Some((answer, data)) = table.lock().unwrap().get(&block).cloned()
                        else {
                            continue;
                        };
                        log.lock().unwrap().push((block, answer));
                        let reply = Wire::Core {
                            from: Addr::Node(MALLORY),
                            to: Addr::Node(reader),
                            msg: Msg::Data {
                                block,
                                data,
                                level: Level::RemoteNode,
                                hops: hops + 1,
                            },
                        };
                        let mut conn = links[&reader].lock().await;
                        write_frame(&mut *conn, &reply).await.unwrap();
                    }
                    Wire::Pong(n) => {
                        let _ = pong_tx.send(n).await;
                    }
                    Wire::Ping(n) => {
                        let mut conn = links[&from].lock().await;
                        write_frame(&mut *conn, &Wire::Pong(n)).await.unwrap();
                    }
                    _ => {}
                }
            }
        });
        Mallory {
            out,
            answers,
            answered,
            pongs,
            nonce: 1 << 60,
        }
    }

    async fn send(&self, to: NodeId, wire: &Wire) {
        let mut conn = self.out[&to].lock().await;
        write_frame(&mut *conn, wire).await.unwrap();
    }

    /// Returns once node `to` has handled every frame sent to it so far:
    /// frames on one link are handled in order, and its `Pong` comes back
    /// only after the `Ping` behind them.
    async fn barrier(&mut self, to: NodeId) {
        self.nonce += 1;
        self.send(to, &Wire::Ping(self.nonce)).await;
        let wait = async {
            while let Some(n) = self.pongs.recv().await {
                if n == self.nonce {
                    return;
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(5), wait)
            .await
            .expect("no Pong from the manager");
    }
}

/// Replaces `path` (a new inode, so a new version) with `data`.
fn rewrite(path: &Path, data: &[u8]) {
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, data).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

struct Target {
    path: Arc<str>,
    version: Arc<FileVersion>,
    block: BlockId,
    manager: NodeId,
    /// The right bytes, and those of the previous version.
    now: Bytes,
    before: Bytes,
    /// The other block of the file Mallory passes off as this one.
    other: Bytes,
}

fn slice(data: &[u8], index: u32) -> Bytes {
    let bs = BLOCK_SIZE as usize;
    let start = index as usize * bs;
    Bytes::copy_from_slice(&data[start..start + bs])
}

/// Every block of the files the real nodes manage (Mallory, a member,
/// manages some files too; a lying manager is another attack).
async fn targets(c: &TestCluster, names: &[String]) -> Vec<Target> {
    let len = (BLOCKS_PER_FILE * BLOCK_SIZE) as usize;
    let mut out = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let before = contents(i as u64 + 1, len);
        let now = contents(1000 + i as u64, len);
        rewrite(&c.origin_dir.join(name), &now);
        let version = c.nodes[0].stat(name).await.unwrap();
        let file = file_id(name, &version.version);
        let manager = manager_of(file, &[0, 1, MALLORY]).unwrap();
        if manager == MALLORY {
            continue;
        }
        for index in 0..BLOCKS_PER_FILE {
            out.push(Target {
                path: Arc::from(name.as_str()),
                version: version.clone(),
                block: BlockId { file, index },
                manager,
                now: slice(&now, index),
                before: slice(&before, index),
                other: slice(&now, (index + 1) % BLOCKS_PER_FILE),
            });
        }
    }
    out
}

fn bad_bytes(answer: Answer, t: &Target, salt: usize) -> Bytes {
    let mut v = t.now.to_vec();
    match answer {
        Answer::FlippedBit => {
            let bit = (salt * 7919) % (v.len() * 8);
            v[bit / 8] ^= 1 << (bit % 8);
        }
        Answer::Truncated => {
            v.pop();
        }
        Answer::Padded => v.push(0),
        Answer::Stale => v = t.before.to_vec(),
        Answer::OtherBlock => v = t.other.to_vec(),
        Answer::Honest => {}
    }
    Bytes::from(v)
}

async fn integrity_failures(c: &TestCluster) -> u64 {
    let mut n = 0;
    for node in &c.nodes {
        n += node.status().await.unwrap().integrity_failures;
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_serving_bad_blocks_is_caught_every_time() {
    let names: Vec<String> = (0..FILES).map(|i| format!("h{i}.bin")).collect();
    let len = (BLOCKS_PER_FILE * BLOCK_SIZE) as usize;
    let files: Vec<(&str, usize)> = names.iter().map(|n| (n.as_str(), len)).collect();
    let shape = Shape {
        nodes: 2,
        block_size: BLOCK_SIZE,
        ..Shape::default()
    };
    // A peer timeout far above loopback times: every bad block must be
    // caught by its hash, not by a late answer.
    let c = cluster_with(shape, &files, |o| o.min_timeout = Duration::from_secs(5)).await;
    let addrs: Vec<String> = c
        .nodes
        .iter()
        .map(|n| n.listen_addr().to_string())
        .collect();
    let mut mallory = Mallory::join(&c.keys, &addrs).await;
    wait_for_members(&c.nodes, 3).await;

    let targets = targets(&c, &names).await;
    // Half the blocks are forwarded to Mallory, half get a bad singlet.
    let (forwarded, pushed) = targets.split_at(targets.len() / 2);
    let mut sent_bad = 0u64;
    let mut by_answer: HashMap<Answer, usize> = HashMap::new();
    for (j, t) in forwarded.iter().enumerate() {
        let answer = ANSWERS[j % ANSWERS.len()];
        let bad = bad_bytes(answer, t, j);
        mallory
            .answers
            .lock()
            .unwrap()
            .insert(t.block, (answer, bad));
        // Mallory reads the block first, so the manager records her as
        // its first holder.
        let read = Msg::Read {
            block: t.block,
            reader: MALLORY,
            hops: 1,
        };
        let to = (Addr::Node(MALLORY), Addr::Manager);
        mallory
            .send(
                t.manager,
                &Wire::Core {
                    from: to.0,
                    to: to.1,
                    msg: read,
                },
            )
            .await;
        mallory.barrier(t.manager).await;
        // The manager reads it next: no hash is recorded yet, so it is not
        // forwarded to Mallory but read from the origin, and recorded.
        let m = &c.nodes[t.manager as usize];
        let (data, level) = m
            .read_block(&t.path, &t.version, t.block.index)
            .await
            .unwrap();
        assert_eq!((data, level), (t.now.clone(), Level::Origin));
        // The other node's read is forwarded to Mallory, the first holder.
        let victim = &c.nodes[1 - t.manager as usize];
        let (data, level) = victim
            .read_block(&t.path, &t.version, t.block.index)
            .await
            .unwrap();
        assert!(data == t.now, "{answer:?}: bad bytes delivered");
        let want = match answer {
            Answer::Honest => Level::RemoteNode,
            _ => Level::Origin,
        };
        assert_eq!(level, want, "{answer:?}");
        if answer != Answer::Honest {
            sent_bad += 1;
        }
        *by_answer.entry(answer).or_default() += 1;
        assert_eq!(
            integrity_failures(&c).await,
            sent_bad,
            "{answer:?} of block {:?} went undetected",
            t.block
        );
    }
    let answered = mallory.answered.lock().unwrap().clone();
    assert_eq!(
        answered.len(),
        forwarded.len(),
        "every read reached Mallory"
    );
    assert!(
        ANSWERS.iter().all(|a| by_answer.get(a) >= Some(&2)),
        "{by_answer:?}"
    );

    // Bad singlets pushed at the node that does not hold the block: each
    // is checked against the manager's hash and dropped.
    for (j, t) in pushed.iter().enumerate() {
        let m = &c.nodes[t.manager as usize];
        m.read_block(&t.path, &t.version, t.block.index)
            .await
            .unwrap();
        let answer = ANSWERS[j % (ANSWERS.len() - 1)];
        let victim = 1 - t.manager;
        let push = Wire::Core {
            from: Addr::Node(MALLORY),
            to: Addr::Node(victim),
            msg: Msg::Recirculate {
                block: t.block,
                data: bad_bytes(answer, t, j),
                chances: 2,
            },
        };
        mallory.send(victim, &push).await;
        sent_bad += 1;
        let deadline = Instant::now() + Duration::from_secs(5);
        while integrity_failures(&c).await < sent_bad {
            assert!(
                Instant::now() < deadline,
                "bad singlet ({answer:?}) of block {:?} went undetected",
                t.block
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // Not kept: the victim reads the right bytes from a peer.
        let (data, level) = c.nodes[victim as usize]
            .read_block(&t.path, &t.version, t.block.index)
            .await
            .unwrap();
        assert!(data == t.now, "{answer:?} singlet kept");
        assert_eq!(level, Level::RemoteNode);
    }
    assert_eq!(integrity_failures(&c).await, sent_bad);
    println!(
        "forwards answered by kind {by_answer:?}; bad singlets pushed {}; bad blocks caught {sent_bad}",
        pushed.len()
    );

    // Nothing bad stayed anywhere: every byte of every file attacked, read
    // through both nodes, is the origin's. (The files Mallory manages are
    // left alone: she ignores their reads, and each waits out the peer
    // timeout before reading the origin.)
    for (i, name) in names.iter().enumerate() {
        if !targets.iter().any(|t| &*t.path == name) {
            continue;
        }
        let want = contents(1000 + i as u64, len);
        for node in &c.nodes {
            let got = node.read(name, None).await.unwrap();
            assert!(got[..] == want[..], "{name}: bad bytes delivered");
        }
    }
    for node in &c.nodes {
        let s = node.status().await.unwrap();
        assert_eq!(s.timeouts, 0, "node {}: a read waited out a peer", s.id);
    }
}

/// `name`'s certificate chain and key from `dir`.
fn chain_and_key(dir: &Path, name: &str) -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
    let chain = CertificateDer::pem_file_iter(dir.join(format!("{name}.pem")))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(dir.join(format!("{name}.key"))).unwrap();
    (chain, key)
}

/// A client config that trusts the cluster CA in `trusted` but presents
/// the certificate and key of `name` in `presented` (another CA's).
fn mixed_client(trusted: &Path, presented: &Path, name: &str) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_file(trusted.join("ca.pem")).unwrap())
        .unwrap();
    let (chain, key) = chain_and_key(presented, name);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)
        .unwrap();
    Arc::new(config)
}

/// A server presenting `name`'s certificate from `dir` and accepting any
/// client, so only the dialling node's own check can refuse it.
fn lax_server(dir: &Path, name: &str) -> Arc<rustls::ServerConfig> {
    let (chain, key) = chain_and_key(dir, name);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    Arc::new(config)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_without_a_cluster_certificate_gets_nothing() {
    let len = (BLOCKS_PER_FILE * BLOCK_SIZE) as usize;
    let shape = Shape {
        nodes: 2,
        block_size: BLOCK_SIZE,
        ..Shape::default()
    };
    let c = cluster_with(shape, &[("x.bin", len)], |o| {
        o.min_timeout = Duration::from_secs(5)
    })
    .await;
    let other = tempfile::tempdir().unwrap();
    let other_keys = other.path().join("keys");
    init_cluster(&other_keys, &["node-7".to_string()], 30).unwrap();
    let eve = Identity::load(&other_keys, "node-7").unwrap();

    // Eve's listener: counts connections and completed handshakes.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let eve_listen = listener.local_addr().unwrap().to_string();
    let connections = Arc::new(AtomicUsize::new(0));
    let handshakes = Arc::new(AtomicUsize::new(0));
    let frames = Arc::new(AtomicUsize::new(0));
    {
        let server = lax_server(&other_keys, "node-7");
        let (connections, handshakes, frames) =
            (connections.clone(), handshakes.clone(), frames.clone());
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                connections.fetch_add(1, Ordering::SeqCst);
                let acceptor = tokio_rustls::TlsAcceptor::from(server.clone());
                let (handshakes, frames) = (handshakes.clone(), frames.clone());
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    handshakes.fetch_add(1, Ordering::SeqCst);
                    while let Ok(Some(_)) = read_frame(&mut tls, max_frame(BLOCK_SIZE)).await {
                        frames.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
        });
    }
    let version = c.nodes[0].stat("x.bin").await.unwrap();
    let block = BlockId {
        file: file_id("x.bin", &version.version),
        index: 0,
    };
    let errors_before = c.nodes[0].status().await.unwrap().peer_errors;

    // 1. Eve dials node 0 trusting its CA, presenting her own certificate:
    //    the node refuses her certificate. Whatever she sends (her Hello,
    //    a member list naming her, a claim to cache a block, a read) is
    //    never processed, and nothing comes back.
    let client = mixed_client(&c.keys, &other_keys, "node-7");
    let eve_hello = hello(&eve, 7, &eve_listen);
    let attempt = async {
        let tcp = TcpStream::connect(c.nodes[0].listen_addr()).await.unwrap();
        let connector = tokio_rustls::TlsConnector::from(client);
        let server = ServerName::try_from(SERVER_NAME).unwrap();
        // In TLS 1.3 the client may finish its side before the server has
        // judged its certificate: the refusal then arrives as an alert.
        let Ok(mut tls) = connector.connect(server, tcp).await else {
            return None;
        };
        let from = Addr::Node(7);
        let frames = [
            eve_hello.clone(),
            Wire::Members(vec![(7, eve_listen.clone())]),
            Wire::Core {
                from,
                to: Addr::Manager,
                msg: Msg::Cached { block },
            },
            Wire::Core {
                from,
                to: Addr::Manager,
                msg: Msg::Read {
                    block,
                    reader: 7,
                    hops: 1,
                },
            },
        ];
        for f in &frames {
            if write_frame(&mut tls, f).await.is_err() {
                return None;
            }
        }
        match read_frame(&mut tls, max_frame(BLOCK_SIZE)).await {
            Ok(Some(w)) => Some(w),
            _ => None,
        }
    };
    let got = tokio::time::timeout(Duration::from_secs(10), attempt)
        .await
        .expect("the node neither refused nor answered");
    assert_eq!(got, None, "Eve got a frame back");

    // 2. With her own CA's configs she does not even finish a handshake.
    let refused = dial(
        &c.nodes[1].listen_addr().to_string(),
        eve.client.clone(),
        &eve_hello,
    )
    .await;
    assert!(refused.is_err(), "Eve connected to node 1");

    // Node 0 never acted on her member list: nobody dialled her.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "a node dialled Eve after her member list"
    );

    // 3. A node told to join Eve refuses her server certificate (and
    //    keeps retrying, refusing each time).
    c.nodes[1].join(eve_listen.clone()).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while connections.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "node 1 never dialled Eve");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;

    let errors_after = c.nodes[0].status().await.unwrap().peer_errors;
    assert!(errors_after > errors_before, "node 0 counted no refusal");
    for node in &c.nodes {
        let s = node.status().await.unwrap();
        let ids: Vec<NodeId> = s.members.iter().map(|m| m.id).collect();
        assert_eq!(ids.len(), 2, "node {}: members {ids:?}", s.id);
    }
    assert_eq!(
        handshakes.load(Ordering::SeqCst),
        0,
        "a node finished a handshake with Eve"
    );
    assert_eq!(frames.load(Ordering::SeqCst), 0, "a node sent Eve a frame");

    // Her claim to cache the block was not recorded: the second reader is
    // served by the first, not forwarded to her (and left to time out).
    // The block's manager reads first, so its hash is recorded at once.
    let path: Arc<str> = Arc::from("x.bin");
    let want = contents(1, len);
    let first = manager_of(block.file, &[0, 1]).unwrap() as usize;
    let mut levels = Vec::new();
    for node in [&c.nodes[first], &c.nodes[1 - first]] {
        let (data, level) = node.read_block(&path, &version, 0).await.unwrap();
        assert!(data[..] == want[..BLOCK_SIZE as usize]);
        levels.push(level);
    }
    assert_eq!(levels, [Level::Origin, Level::RemoteNode]);
    for node in &c.nodes {
        assert_eq!(node.status().await.unwrap().timeouts, 0);
    }
}

/// A node takes a forwarded singlet at once (the order the simulator
/// delivers it in) but serves no local read from it until the manager's
/// hash clears it. Here Mallory manages the block's file and never answers
/// the check: the read waits, the singlet is dropped unverified when the
/// wait runs out, and the read gets the origin's bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_singlet_is_not_served_before_its_hash_is_confirmed() {
    let names: Vec<String> = (0..FILES).map(|i| format!("s{i}.bin")).collect();
    let len = (BLOCKS_PER_FILE * BLOCK_SIZE) as usize;
    let files: Vec<(&str, usize)> = names.iter().map(|n| (n.as_str(), len)).collect();
    let shape = Shape {
        nodes: 2,
        block_size: BLOCK_SIZE,
        ..Shape::default()
    };
    let c = cluster_with(shape, &files, |o| {
        o.min_timeout = Duration::from_millis(300)
    })
    .await;
    let addrs: Vec<String> = c
        .nodes
        .iter()
        .map(|n| n.listen_addr().to_string())
        .collect();
    let mut mallory = Mallory::join(&c.keys, &addrs).await;
    wait_for_members(&c.nodes, 3).await;

    let mut checked = 0;
    for (i, name) in names.iter().enumerate() {
        let version = c.nodes[0].stat(name).await.unwrap();
        let file = file_id(name, &version.version);
        if manager_of(file, &[0, 1, MALLORY]) != Some(MALLORY) {
            continue;
        }
        let want = contents(i as u64 + 1, len);
        let block = BlockId { file, index: 0 };
        let mut bad = want[..BLOCK_SIZE as usize].to_vec();
        bad[0] ^= 0xff;
        let push = Wire::Core {
            from: Addr::Node(MALLORY),
            to: Addr::Node(0),
            msg: Msg::Recirculate {
                block,
                data: Bytes::from(bad),
                chances: 2,
            },
        };
        mallory.send(0, &push).await;
        // Node 0 has handled the push (frames on a link are handled in
        // order): the machine holds the singlet, its check is unanswered.
        mallory.barrier(0).await;
        let path: Arc<str> = Arc::from(name.as_str());
        let started = Instant::now();
        let (data, level) = c.nodes[0].read_block(&path, &version, 0).await.unwrap();
        assert!(
            data[..] == want[..BLOCK_SIZE as usize],
            "{name}: an unverified singlet's bytes were served"
        );
        assert_eq!(level, Level::Origin, "{name}");
        assert!(
            started.elapsed() >= Duration::from_millis(250),
            "{name}: not held"
        );
        checked += 1;
    }
    assert!(checked >= 1, "no file managed by Mallory among {FILES}");
    let s = c.nodes[0].status().await.unwrap();
    assert!(s.timeouts >= checked, "{s:?}");
    assert_eq!(
        s.integrity_failures, 0,
        "no hash came, so nothing was compared"
    );
}
