//! A loopback cluster in one test process, over a generated origin.
#![allow(dead_code)]

use coopcache_core::coop::AlgorithmKind;
use coopcache_node::origin::Origin;
use coopcache_node::tls::{Identity, init_cluster};
use coopcache_node::{NodeHandle, NodeOptions, start};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) struct TestCluster {
    pub nodes: Vec<Arc<NodeHandle>>,
    pub origin_dir: PathBuf,
    pub keys: PathBuf,
    _tmp: tempfile::TempDir,
}

/// Deterministic file contents: distinct per file and offset.
pub(crate) fn contents(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

pub(crate) fn write_files(dir: &Path, files: &[(&str, usize)]) {
    for (i, (name, len)) in files.iter().enumerate() {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, contents(i as u64 + 1, *len)).unwrap();
    }
}

pub(crate) struct Shape {
    pub nodes: u32,
    pub algorithm: AlgorithmKind,
    pub memory: u64,
    pub block_size: u32,
    pub origin_delay: Duration,
}

impl Default for Shape {
    fn default() -> Self {
        Shape {
            nodes: 3,
            algorithm: AlgorithmKind::NChance,
            memory: 64 << 20,
            block_size: 64 << 10,
            origin_delay: Duration::ZERO,
        }
    }
}

pub(crate) async fn cluster(shape: Shape, files: &[(&str, usize)]) -> TestCluster {
    cluster_with(shape, files, |_| {}).await
}

pub(crate) async fn wait_for_members(nodes: &[Arc<NodeHandle>], n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut all = true;
        for node in nodes {
            if node.status().await.unwrap().members.len() != n {
                all = false;
            }
        }
        if all {
            return;
        }
        assert!(Instant::now() < deadline, "cluster did not form");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Like [`cluster`], with every node's options adjusted by `tweak` before
/// it starts (a longer peer timeout, another seed, ...).
pub(crate) async fn cluster_with(
    shape: Shape,
    files: &[(&str, usize)],
    tweak: impl Fn(&mut NodeOptions),
) -> TestCluster {
    let tmp = tempfile::tempdir().unwrap();
    let origin_dir = tmp.path().join("origin");
    std::fs::create_dir_all(&origin_dir).unwrap();
    write_files(&origin_dir, files);
    let keys = tmp.path().join("keys");
    let names: Vec<String> = (0..shape.nodes).map(|i| format!("node-{i}")).collect();
    init_cluster(&keys, &names, 30).unwrap();
    let mut nodes: Vec<Arc<NodeHandle>> = Vec::new();
    for i in 0..shape.nodes {
        let identity = Identity::load(&keys, &names[i as usize]).unwrap();
        let origin = Origin::open(origin_dir.to_str().unwrap())
            .unwrap()
            .with_delay(shape.origin_delay);
        let mut opts = NodeOptions::new(identity, "127.0.0.1:0".parse().unwrap(), origin);
        opts.algorithm = shape.algorithm;
        opts.memory = shape.memory;
        opts.block_size = shape.block_size;
        opts.attr_ttl = Duration::from_secs(60);
        if let Some(first) = nodes.first() {
            opts.join = vec![first.listen_addr().to_string()];
        }
        tweak(&mut opts);
        nodes.push(Arc::new(start(opts).await.unwrap()));
    }
    wait_for_members(&nodes, shape.nodes as usize).await;
    TestCluster {
        nodes,
        origin_dir,
        keys,
        _tmp: tmp,
    }
}

/// A file's modification time.
pub(crate) fn mtime(path: &Path) -> std::time::SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .expect("mtime")
}

/// Sets the mtime back, as `cp -p`, `touch -d` and `rsync -t` do.
pub(crate) fn set_mtime(path: &Path, when: std::time::SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(when))
        .expect("set mtime");
}

/// `node`'s gateway on a free loopback port, with a client for it.
pub(crate) async fn serve_gateway(
    node: Arc<NodeHandle>,
) -> (coopcache_node::client::Client, std::net::SocketAddr) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let opts = coopcache_node::gateway::GatewayOptions::default();
    tokio::spawn(async move { coopcache_node::gateway::serve(listener, node, &opts).await });
    (coopcache_node::client::Client::new(&addr.to_string()), addr)
}

/// Blocks `c`'s nodes have read from the origin, all together.
pub(crate) async fn origin_reads(c: &TestCluster) -> u64 {
    let mut n = 0;
    for node in &c.nodes {
        n += node.status().await.unwrap().origin_reads;
    }
    n
}
