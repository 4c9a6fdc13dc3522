//! Mallory: a member with a valid certificate who serves bad blocks, and the blocks she attacks.

use super::*;

/// What Mallory answers for a block forwarded to her (or read from her
/// partition).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Answer {
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

pub(crate) const ANSWERS: [Answer; 6] = [
    Answer::FlippedBit,
    Answer::Truncated,
    Answer::Padded,
    Answer::Stale,
    Answer::OtherBlock,
    Answer::Honest,
];

pub(crate) type Conn = Arc<tokio::sync::Mutex<Box<dyn Stream>>>;

pub(crate) trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// The hostile member: her links to the real nodes, and what she has
/// answered.
pub(crate) struct Mallory {
    pub(crate) out: HashMap<NodeId, Conn>,
    /// Bytes to answer per block, and how many forwards she answered.
    pub(crate) answers: Arc<Mutex<HashMap<BlockId, (Answer, Bytes)>>>,
    pub(crate) answered: Arc<Mutex<Vec<(BlockId, Answer)>>>,
    pub(crate) pongs: mpsc::Receiver<u64>,
    /// Every other protocol message the real nodes sent her.
    pub(crate) heard: mpsc::Receiver<(NodeId, PeerMsg<BlockId, Bytes>)>,
    /// Every C2Cfs `exclusive`-mode message the real nodes sent her.
    pub(crate) commits: mpsc::Receiver<(NodeId, CommitMsg<PathVersion>)>,
    pub(crate) nonce: u64,
}

pub(crate) fn hello(identity: &Identity, node: NodeId, listen: &str) -> Wire {
    Wire::Hello {
        version: PROTOCOL_VERSION,
        node,
        name: identity.name.clone(),
        listen: listen.to_string(),
        block_size: BLOCK_SIZE,
        release: "mallory".into(),
    }
}

/// Accepts the real nodes' links: TLS, `Hello` both ways, then every frame
/// to `frames`.
pub(crate) async fn accept_links(
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
pub(crate) async fn dial(
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
    pub(crate) async fn join(keys: &Path, nodes: &[String]) -> Mallory {
        issue_as(keys, "mallory", Some(MALLORY), 30).unwrap();
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
        let (heard_tx, heard) = mpsc::channel(1024);
        let (commits_tx, commits) = mpsc::channel(1024);
        let (links, table, log) = (out.clone(), answers.clone(), answered.clone());
        tokio::spawn(async move {
            while let Some((from, wire)) = frames.recv().await {
                let msg = match wire {
                    Wire::Peer(msg) => msg,
                    Wire::Commit(msg) => {
                        let _ = commits_tx.try_send((from, msg));
                        continue;
                    }
                    _ => continue,
                };
                match msg {
                    // A holder's forward, or a read sent to her as the
                    // block's Hash-Distributed partition owner.
                    PeerMsg::Forward { block, .. } | PeerMsg::PartitionRead { block }
                        if table.lock().unwrap().contains_key(&block) =>
                    {
                        let (answer, data) = table.lock().unwrap()[&block].clone();
                        log.lock().unwrap().push((block, answer));
                        let to = match msg {
                            PeerMsg::Forward { reader, .. } => reader,
                            _ => from,
                        };
                        let reply = Wire::Peer(PeerMsg::Data { block, data });
                        let mut conn = links[&to].lock().await;
                        write_frame(&mut *conn, &reply).await.unwrap();
                    }
                    PeerMsg::Pong { nonce, .. } => {
                        let _ = pong_tx.send(nonce).await;
                    }
                    PeerMsg::Ping { nonce, status } => {
                        let mut conn = links[&from].lock().await;
                        let pong = Wire::Peer(PeerMsg::Pong { nonce, status });
                        write_frame(&mut *conn, &pong).await.unwrap();
                    }
                    msg => {
                        let _ = heard_tx.try_send((from, msg));
                    }
                }
            }
        });
        Mallory {
            out,
            answers,
            answered,
            pongs,
            heard,
            commits,
            nonce: 1 << 60,
        }
    }

    pub(crate) async fn send(&self, to: NodeId, wire: &Wire) {
        let mut conn = self.out[&to].lock().await;
        write_frame(&mut *conn, wire).await.unwrap();
    }

    /// Returns once node `to` has handled every frame sent to it so far:
    /// frames on one link are handled in order, and its `Pong` comes back
    /// only after the `Ping` behind them.
    pub(crate) async fn barrier(&mut self, to: NodeId) {
        self.nonce += 1;
        let ping = Wire::Peer(PeerMsg::Ping {
            nonce: self.nonce,
            status: Default::default(),
        });
        self.send(to, &ping).await;
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

    /// Reads `t`'s block first, as its first holder: she asks its manager,
    /// is told to read it from the origin and record it, and records the
    /// right digest (lying here is the one thing a first reader can do;
    /// `roles` shows what else she cannot). The manager then forwards
    /// readers to her.
    pub(crate) async fn read_first(&mut self, t: &Target) {
        let read = Wire::Peer(PeerMsg::Read { block: t.block });
        self.send(t.manager, &read).await;
        let wait = async {
            while let Some((from, msg)) = self.heard.recv().await {
                if from == t.manager
                    && msg
                        == (PeerMsg::FetchOrigin {
                            block: t.block,
                            record: true,
                        })
                {
                    return;
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(5), wait)
            .await
            .expect("the manager did not send her to the origin");
        let digest = Block::new(t.now.clone()).digest();
        let record = Wire::Peer(PeerMsg::Record {
            block: t.block,
            digest,
        });
        self.send(t.manager, &record).await;
        self.barrier(t.manager).await;
    }

    /// The next `exclusive`-mode message a real node sends her that
    /// `want` accepts (others are dropped), within 5 s.
    pub(crate) async fn next_commit_msg(
        &mut self,
        mut want: impl FnMut(NodeId, &CommitMsg<PathVersion>) -> bool,
    ) -> (NodeId, CommitMsg<PathVersion>) {
        let wait = async {
            while let Some((from, msg)) = self.commits.recv().await {
                if want(from, &msg) {
                    return (from, msg);
                }
            }
            panic!("Mallory's links closed");
        };
        tokio::time::timeout(Duration::from_secs(5), wait)
            .await
            .expect("no such commit message came to Mallory")
    }
}

/// Replaces `path` (a new inode, so a new version) with `data`.
pub(crate) fn rewrite(path: &Path, data: &[u8]) {
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, data).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

pub(crate) struct Target {
    pub(crate) path: Arc<str>,
    pub(crate) version: Arc<FileVersion>,
    pub(crate) block: BlockId,
    pub(crate) manager: NodeId,
    /// The right bytes, and those of the previous version.
    pub(crate) now: Bytes,
    pub(crate) before: Bytes,
    /// The other block of the file Mallory passes off as this one.
    pub(crate) other: Bytes,
}

pub(crate) fn slice(data: &[u8], index: u32) -> Bytes {
    let bs = BLOCK_SIZE as usize;
    let start = index as usize * bs;
    Bytes::copy_from_slice(&data[start..start + bs])
}

/// Every block of the files the real nodes manage (Mallory, a member,
/// manages some files too; a lying manager is another attack).
pub(crate) async fn targets(c: &TestCluster, names: &[String]) -> Vec<Target> {
    let len = (BLOCKS_PER_FILE * BLOCK_SIZE) as usize;
    let mut out = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let before = contents(i as u64 + 1, len);
        let now = contents(1000 + i as u64, len);
        rewrite(&c.origin_dir.join(name), &now);
        let version = c.nodes[0].stat(name).await.unwrap();
        let first = first_block(name, &version.version);
        let mut members: Vec<NodeId> = (0..c.nodes.len() as NodeId).collect();
        members.push(MALLORY);
        let manager = manager_of(u64::from(first.route), &members).unwrap();
        if manager == MALLORY {
            continue;
        }
        for index in 0..BLOCKS_PER_FILE {
            out.push(Target {
                path: Arc::from(name.as_str()),
                version: version.clone(),
                block: BlockId { index, ..first },
                manager,
                now: slice(&now, index),
                before: slice(&before, index),
                other: slice(&now, (index + 1) % BLOCKS_PER_FILE),
            });
        }
    }
    out
}

pub(crate) fn bad_bytes(answer: Answer, t: &Target, salt: usize) -> Bytes {
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

pub(crate) async fn integrity_failures(c: &TestCluster) -> u64 {
    let mut n = 0;
    for node in &c.nodes {
        n += node.status().await.unwrap().integrity_failures;
    }
    n
}

/// A 2-node cluster running `algorithm` over `FILES` files named
/// `{prefix}{i}.bin`, with the peer timeout floor `timeout`, and Mallory
/// joined as a third member.
pub(crate) async fn attacked_cluster(
    prefix: &str,
    algorithm: coopcache_core::coop::AlgorithmKind,
    timeout: Duration,
) -> (TestCluster, Mallory, Vec<String>) {
    attacked_cluster_of(2, prefix, algorithm, timeout).await
}

/// As [`attacked_cluster`], with `nodes` real nodes.
pub(crate) async fn attacked_cluster_of(
    nodes: u32,
    prefix: &str,
    algorithm: coopcache_core::coop::AlgorithmKind,
    timeout: Duration,
) -> (TestCluster, Mallory, Vec<String>) {
    let shape = Shape {
        nodes,
        algorithm,
        ..Shape::default()
    };
    attacked_cluster_shaped(shape, prefix, timeout).await
}

/// As [`attacked_cluster`], with the cluster's `shape` (its nodes,
/// algorithm and origin delay; the block size is always [`BLOCK_SIZE`]).
/// Managers answer `exclusive`-mode opens as soon as Mallory has joined
/// (`commit_stable` zero).
pub(crate) async fn attacked_cluster_shaped(
    shape: Shape,
    prefix: &str,
    timeout: Duration,
) -> (TestCluster, Mallory, Vec<String>) {
    let nodes = shape.nodes;
    let names: Vec<String> = (0..FILES).map(|i| format!("{prefix}{i}.bin")).collect();
    let len = (BLOCKS_PER_FILE * BLOCK_SIZE) as usize;
    let files: Vec<(&str, usize)> = names.iter().map(|n| (n.as_str(), len)).collect();
    let shape = Shape {
        block_size: BLOCK_SIZE,
        ..shape
    };
    let c = cluster_with(shape, &files, |o| {
        o.min_timeout = timeout;
        o.commit_stable = Duration::ZERO;
    })
    .await;
    let addrs: Vec<String> = c
        .nodes
        .iter()
        .map(|n| n.listen_addr().to_string())
        .collect();
    let mallory = Mallory::join(&c.keys, &addrs).await;
    wait_for_members(&c.nodes, nodes as usize + 1).await;
    (c, mallory, names)
}

/// The node that does not manage `t`'s file reads it while Mallory answers
/// with `answer`'s bytes: it gets the right bytes, from Mallory only if
/// they were honest, else from the origin. Returns whether they were bad.
pub(crate) async fn victim_reads_from_mallory(c: &TestCluster, t: &Target, answer: Answer) -> bool {
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
    answer != Answer::Honest
}
