//! A cluster of nodes in this process on 127.0.0.1, for `demo` and the
//! benchmarks: certificates under one CA, one origin (a directory, or any
//! origin spec with its options, such as an S3 bucket) with an emulated
//! per-request delay, nodes joined through the first.

use anyhow::{Context, Result, bail};
use coopcache_core::coop::AlgorithmKind;
use coopcache_node::origin::Origin;
use coopcache_node::tls::{Identity, init_cluster};
use coopcache_node::{NodeHandle, NodeOptions, start};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What every node of a loopback cluster shares.
pub struct LoopbackSpec {
    /// Directory holding the cluster's CA and certificates.
    pub keys: PathBuf,
    /// Node names, one per node (their certificates).
    pub names: Vec<String>,
    /// The origin, as `coopcache node --origin` takes it: a directory
    /// (what [`LoopbackSpec::new`] sets), `s3://BUCKET/PREFIX`, ...
    pub origin: String,
    /// The origin's options ([`Origin::open_with`]): for S3 the endpoint
    /// and credentials, which override the `AWS_*` environment.
    pub origin_options: Vec<(String, String)>,
    /// Emulated latency of every origin request.
    pub origin_delay: Duration,
    /// Algorithm.
    pub algorithm: AlgorithmKind,
    /// Block size.
    pub block_size: u32,
    /// Least time a node waits on peers before reading the origin (the
    /// node's default if `None`).
    pub min_timeout: Option<Duration>,
    /// How long a file's version is trusted (an hour by default: the
    /// origin does not change during most runs).
    pub attr_ttl: Duration,
    /// How long a node's own reads must have stopped before it lends its
    /// memory (the node's default if `None`).
    pub idle_after: Option<Duration>,
    /// Nodes (by index) whose origin is private (`--private`).
    pub private: Vec<usize>,
    /// C2Cfs `exclusive` mode: how long after a membership change
    /// managers answer no open (the node's default if `None`).
    pub commit_stable: Option<Duration>,
    /// C2Cfs `exclusive` mode: whether an open's first block is served
    /// with its answer (`NodeOptions::first_block_with_open`).
    pub first_block_with_open: bool,
    /// Where the nodes keep their disk tiers (`--disk`): node `i` in
    /// `disk_dir/NAME` (its certificate's name, so that a node started
    /// again finds what it wrote). `None` (the default): memory alone.
    pub disk_dir: Option<PathBuf>,
    /// Bytes of each node's disk tier (`--disk-size`), when `disk_dir` is
    /// set; its index comes on top of the node's cache, not out of it.
    pub disk_size: u64,
    /// Size-class policies (`--class-policy`); one class by default.
    pub classes: coopcache_core::coop::ClassPolicies,
}

impl LoopbackSpec {
    /// A spec for `nodes` nodes with certificates created in `dir/keys`,
    /// over the origin directory `origin`.
    pub fn new(dir: &Path, nodes: u32, origin: PathBuf) -> Result<Self> {
        let origin = origin
            .into_os_string()
            .into_string()
            .map_err(|o| anyhow::anyhow!("origin path {o:?} is not UTF-8"))?;
        let keys = dir.join("keys");
        let names: Vec<String> = (0..nodes).map(|i| format!("node-{i}")).collect();
        init_cluster(&keys, &names, 1)?;
        Ok(LoopbackSpec {
            keys,
            names,
            origin,
            origin_options: Vec::new(),
            origin_delay: Duration::ZERO,
            algorithm: AlgorithmKind::NChance,
            block_size: 64 << 10,
            min_timeout: None,
            attr_ttl: Duration::from_secs(3600),
            idle_after: None,
            private: Vec::new(),
            commit_stable: None,
            first_block_with_open: true,
            disk_dir: None,
            disk_size: 0,
            classes: Default::default(),
        })
    }
}

/// The memory budget that leaves `cache` bytes for cached blocks of
/// `block_size` after the runtime reserve and per-block metadata (with a
/// private origin's hash table if `private`).
fn memory_for(cache: u64, block_size: u32, private: bool) -> u64 {
    let blocks = cache / u64::from(block_size);
    coopcache_node::budget::Budget::holding(blocks, block_size, private).total
}

/// Node `i`'s options: its certificate, `cache` bytes of blocks, joined
/// through `seed` if given.
fn options(spec: &LoopbackSpec, i: usize, cache: u64, seed: Option<String>) -> Result<NodeOptions> {
    let options: Vec<(&str, &str)> = spec
        .origin_options
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let origin = Origin::open_with(&spec.origin, &options)?.with_delay(spec.origin_delay);
    let identity = Identity::load(&spec.keys, &spec.names[i])?;
    let mut opts = NodeOptions::new(identity, "127.0.0.1:0".parse()?, origin);
    opts.algorithm = spec.algorithm;
    opts.block_size = spec.block_size;
    opts.private = spec.private.contains(&i);
    opts.memory = memory_for(cache, spec.block_size, opts.private);
    opts.attr_ttl = spec.attr_ttl;
    if let Some(t) = spec.min_timeout {
        opts.min_timeout = t;
    }
    if let Some(t) = spec.idle_after {
        opts.idle_after = t;
    }
    if let Some(t) = spec.commit_stable {
        opts.commit_stable = t;
    }
    opts.first_block_with_open = spec.first_block_with_open;
    opts.classes = spec.classes.clone();
    if let Some(dir) = &spec.disk_dir {
        let disk = dir.join(&spec.names[i]);
        std::fs::create_dir_all(&disk)
            .with_context(|| format!("creating the disk tier's directory {}", disk.display()))?;
        opts.disk = vec![disk];
        opts.disk_size = spec.disk_size;
        // The index is charged to --memory: added, so that a node with a
        // disk caches as many blocks in memory as one without.
        opts.memory += coopcache_node::disk_index_bytes(spec.disk_size, spec.block_size);
    }
    opts.join = seed.into_iter().collect();
    Ok(opts)
}

fn check_names(spec: &LoopbackSpec, nodes: usize) -> Result<()> {
    if nodes > spec.names.len() {
        bail!(
            "{nodes} nodes asked for but only {} certificates issued",
            spec.names.len()
        );
    }
    Ok(())
}

/// Starts one node per entry of `caches` (bytes of block cache each),
/// joined through the first, and waits until every node sees all members.
pub async fn start_cluster(spec: &LoopbackSpec, caches: &[u64]) -> Result<Vec<Arc<NodeHandle>>> {
    check_names(spec, caches.len())?;
    let mut nodes: Vec<Arc<NodeHandle>> = Vec::new();
    for (i, &cache) in caches.iter().enumerate() {
        let seed = nodes.first().map(|n| n.listen_addr().to_string());
        nodes.push(Arc::new(start(options(spec, i, cache, seed)?).await?));
    }
    wait_formed(&nodes).await?;
    Ok(nodes)
}

/// A node on a current-thread runtime of its own, on an OS thread of its
/// own, as each real node has its own machine: the node's tasks hand off
/// to each other without waking another thread, and the only wake-ups are
/// those between machines. Stopped (its runtime and thread) when dropped.
pub struct NodeThread {
    /// The node.
    pub node: Arc<NodeHandle>,
    /// Its runtime, to run its local clients on.
    pub runtime: tokio::runtime::Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl NodeThread {
    /// A node already running on `runtime` (shared with others), stopped
    /// when dropped.
    pub fn here(node: Arc<NodeHandle>, runtime: tokio::runtime::Handle) -> NodeThread {
        NodeThread {
            node,
            runtime,
            stop: None,
            thread: None,
        }
    }
}

impl Drop for NodeThread {
    fn drop(&mut self) {
        self.node.shutdown();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Like [`start_cluster`], each node on a thread of its own.
pub async fn start_cluster_threaded(
    spec: &LoopbackSpec,
    caches: &[u64],
) -> Result<Vec<NodeThread>> {
    check_names(spec, caches.len())?;
    let mut nodes: Vec<NodeThread> = Vec::new();
    for (i, &cache) in caches.iter().enumerate() {
        let seed = nodes.first().map(|n| n.node.listen_addr().to_string());
        let opts = options(spec, i, cache, seed)?;
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(format!("node-{i}"))
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(anyhow::Error::from(e)));
                        return;
                    }
                };
                let started = rt.block_on(start(opts)).map_err(anyhow::Error::from);
                let ready = started.map(|node| (Arc::new(node), rt.handle().clone()));
                if ready_tx.send(ready).is_ok() {
                    // Runs the node's tasks until told to stop.
                    let _ = rt.block_on(stop_rx);
                }
            })?;
        let (node, runtime) = ready_rx.await.context("a node thread died starting")??;
        nodes.push(NodeThread {
            node,
            runtime,
            stop: Some(stop),
            thread: Some(thread),
        });
    }
    let handles: Vec<Arc<NodeHandle>> = nodes.iter().map(|n| n.node.clone()).collect();
    wait_formed(&handles).await?;
    Ok(nodes)
}

/// Waits until every node sees all the others.
async fn wait_formed(nodes: &[Arc<NodeHandle>]) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    for n in nodes {
        while n.status().await?.members.len() < nodes.len() {
            if Instant::now() > deadline {
                bail!("the loopback cluster did not form within 10 s");
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    Ok(())
}

/// Cluster-wide counters summed over nodes.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct Totals {
    /// Origin requests.
    pub origin_reads: u64,
    /// Bytes from the origin.
    pub origin_bytes: u64,
    /// Peer blocks that failed verification.
    pub integrity_failures: u64,
    /// Reads that timed out on a peer.
    pub timeouts: u64,
}

/// Sums the nodes' counters.
pub async fn totals(nodes: &[Arc<NodeHandle>]) -> Result<Totals> {
    let mut t = Totals::default();
    for n in nodes {
        let s = n.status().await?;
        t.origin_reads += s.origin_reads;
        t.origin_bytes += s.origin_bytes;
        t.integrity_failures += s.integrity_failures;
        t.timeouts += s.timeouts;
    }
    Ok(t)
}

/// Stops every node.
pub fn shutdown(nodes: &[Arc<NodeHandle>]) {
    for n in nodes {
        n.shutdown();
    }
}
