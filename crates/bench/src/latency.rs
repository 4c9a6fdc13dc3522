//! `coopcache bench latency`: remote-memory hits for 8 KiB blocks between
//! two nodes on loopback, at several reader concurrencies, next to the
//! loopback TCP ceiling and memcached and Redis, all in one run.
//!
//! The reader's reads are made peer hits: the peer reads (primes) the
//! whole file first, so it caches every block; the reader's cache is the
//! smallest the budget allows (16 blocks), and its readers take the file's
//! blocks in turn from a shared cursor, so a block comes round again only
//! after `--blocks` reads, long after the reader's LRU dropped it. Every
//! read therefore misses locally and Greedy Forwarding sends it to the
//! peer. Each read's returned `Level` is counted, and the share of
//! measured reads that were peer hits is reported next to the figures.

use crate::baseline::{self, GetWorker, Kind};
use crate::ceiling::{self, Ceiling, on_own_thread};
use crate::latency_report;
use crate::loopback::{LoopbackSpec, shutdown, start_cluster, start_cluster_threaded, totals};
use crate::measure::{Summary, Worker, closed_loop};
use anyhow::{Result, bail};
use coopcache_console::args::ReportArgs;
use coopcache_console::args::parse_duration;
use coopcache_console::tasks::{in_tempdir_on, runtime};
use coopcache_core::coop::AlgorithmKind;
use coopcache_core::coop::Level;
use coopcache_node::NodeHandle;
use coopcache_node::origin::FileVersion;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Block (and value) size: the papers' 8 KiB.
const BLOCK: usize = 8 << 10;
/// The reader's cache: the least the memory budget accepts.
const READER_CACHE_BLOCKS: u64 = 16;
/// The file read.
const FILE: &str = "blocks.bin";

#[derive(clap::Args)]
pub struct LatencyArgs {
    /// Concurrent readers (and baseline connections), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,48")]
    concurrency: Vec<usize>,
    /// Measured time per system and concurrency.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    duration: Duration,
    /// Unmeasured time before each measurement.
    #[arg(long, default_value = "300ms", value_parser = parse_duration)]
    warmup: Duration,
    /// Distinct blocks read in turn (and baseline keys read at random).
    #[arg(long, default_value_t = 1024)]
    blocks: u32,
    /// memcached's worker threads (the figure used 2).
    #[arg(long, default_value_t = 2)]
    memcached_threads: u32,
    /// Skip memcached and Redis.
    #[arg(long)]
    no_baselines: bool,
    /// Where the nodes run: `per-node` (the default) gives each node a
    /// runtime and an OS thread of its own, as each real node has its own
    /// machine, with the readers on the reader node's thread and each
    /// baseline's clients on one thread of their own; `shared` runs both
    /// nodes, the readers and the baseline clients on one multi-threaded
    /// runtime (`--threads`).
    #[arg(long, value_enum, default_value = "per-node")]
    runtime: Layout,
    /// Worker threads of the shared runtime (default: one per core); 1
    /// puts every task on one thread.
    #[arg(long)]
    threads: Option<usize>,
    #[command(flatten)]
    report: ReportArgs,
}

/// Where the nodes and clients run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub(super) enum Layout {
    /// Each node on a runtime and thread of its own.
    PerNode,
    /// Everything on one multi-threaded runtime.
    Shared,
}

/// One system at one concurrency.
#[derive(serde::Serialize)]
pub(super) struct Row {
    pub(super) system: String,
    #[serde(flatten)]
    pub(super) summary: Summary,
    /// coopcache only: measured reads per level (local, manager memory,
    /// remote node, origin).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) levels: Option<[u64; Level::ALL.len()]>,
    /// coopcache only: the share of measured reads served from the peer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) peer_share: Option<f64>,
}

/// The targets, checked on this run.
#[derive(serde::Serialize)]
pub(super) struct Targets {
    /// coopcache p50 at the lowest concurrency over the loopback round
    /// trip between two threads each with a runtime of its own, the nodes'
    /// arrangement (target <= 2; with `--runtime shared`, over the
    /// one-thread round trip).
    pub(super) p50_over_rtt: Option<f64>,
    /// The same over the one-thread round trip (no thread wake-up).
    pub(super) p50_over_one_thread_rtt: Option<f64>,
    /// coopcache reads/s over memcached GET/s at the highest concurrency
    /// (target >= 1.25).
    pub(super) reads_over_memcached: Option<f64>,
}

#[derive(serde::Serialize)]
pub(super) struct Report {
    pub(super) runtime: Layout,
    pub(super) block_size: usize,
    pub(super) ceiling: Ceiling,
    pub(super) rows: Vec<Row>,
    /// A local hit's median latency on the reader (the hand-off to the
    /// node's driver task and back, no network), microseconds.
    pub(super) local_hit_p50_us: f64,
    pub(super) integrity_failures: u64,
    pub(super) timeouts: u64,
    /// Messages the nodes dropped because a peer's send queue was full.
    pub(super) dropped_messages: u64,
    pub(super) targets: Targets,
}

pub(crate) fn run(args: LatencyArgs) -> Result<()> {
    if args.concurrency.is_empty() || args.concurrency.contains(&0) {
        bail!("--concurrency needs positive numbers, e.g. 1,48");
    }
    if args.blocks < 2 * READER_CACHE_BLOCKS as u32 {
        bail!(
            "--blocks must be at least {} (twice the reader's cache), so reads miss locally",
            2 * READER_CACHE_BLOCKS
        );
    }
    // Missing servers are named before anything runs.
    let exes = if args.no_baselines {
        Vec::new()
    } else {
        vec![
            (Kind::Memcached, baseline::find(Kind::Memcached)?),
            (Kind::Redis, baseline::find(Kind::Redis)?),
        ]
    };
    let rt = match args.threads {
        None => runtime()?,
        Some(_) if args.runtime == Layout::PerNode => {
            bail!("--threads applies to --runtime shared only")
        }
        Some(0) => bail!("--threads must be at least 1"),
        Some(n) => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n)
            .enable_all()
            .build()?,
    };
    // Dropping the bench's future (on Ctrl-C or error) kills any server
    // still running.
    let (a, exes) = (&args, &exes);
    let outcome = in_tempdir_on(rt, "coopcache-bench-latency-", |dir| async move {
        bench(a, exes, &dir).await
    })?;
    let report = outcome;
    if args.report.json {
        coopcache_console::output::print_json([&report])?;
    } else {
        latency_report::print(&report);
    }
    if let Some(dir) = &args.report.plot {
        latency_report::plot(dir, &report)?;
        eprintln!("plots: {}", dir.display());
    }
    Ok(())
}

async fn bench(args: &LatencyArgs, exes: &[(Kind, PathBuf)], dir: &Path) -> Result<Report> {
    eprintln!("loopback ceiling ...");
    let ceiling = ceiling::measure(dir, args.duration).await?;
    let (mut rows, local_hit_p50_us, counters) = coopcache(args, dir).await?;
    for (kind, exe) in exes {
        rows.extend(run_baseline(args, *kind, exe, dir).await?);
    }
    let at = |system: &str, c: usize| {
        rows.iter()
            .find(|r| r.system == system && r.summary.concurrency == c)
    };
    let low = args.concurrency.iter().copied().min().unwrap_or(1);
    let high = args.concurrency.iter().copied().max().unwrap_or(1);
    let rtt = match args.runtime {
        Layout::PerNode => ceiling.rtt_node_threads_p50_us,
        Layout::Shared => ceiling.rtt_p50_us,
    };
    let p50 = at("coopcache", low).map(|r| r.summary.p50_us);
    let targets = Targets {
        p50_over_rtt: p50.map(|p| p / rtt),
        p50_over_one_thread_rtt: p50.map(|p| p / ceiling.rtt_p50_us),
        reads_over_memcached: at("coopcache", high)
            .zip(at("memcached", high))
            .map(|(c, m)| c.summary.per_s / m.summary.per_s),
    };
    Ok(Report {
        runtime: args.runtime,
        block_size: BLOCK,
        ceiling,
        rows,
        local_hit_p50_us,
        integrity_failures: counters.integrity_failures,
        timeouts: counters.timeouts,
        dropped_messages: counters.dropped_messages,
        targets,
    })
}

/// A reader on node 0 reading the primed file's blocks in turn.
struct Reader {
    node: Arc<NodeHandle>,
    path: Arc<str>,
    version: Arc<FileVersion>,
    blocks: u32,
    /// Shared by all readers: the next block to read.
    cursor: Arc<AtomicU64>,
    levels: [u64; Level::ALL.len()],
}

impl Worker for Reader {
    async fn op(&mut self, measured: bool) -> Result<()> {
        let b = (self.cursor.fetch_add(1, Ordering::Relaxed) % u64::from(self.blocks)) as u32;
        let (data, level) = self.node.read_block(&self.path, &self.version, b).await?;
        if data.len() != BLOCK {
            bail!("block {b}: {} bytes, expected {BLOCK}", data.len());
        }
        if measured {
            self.levels[level.index()] += 1;
        }
        Ok(())
    }
}

/// What went wrong in the cluster during the run, summed over nodes.
struct Counters {
    integrity_failures: u64,
    timeouts: u64,
    dropped_messages: u64,
}

/// The two-node cluster: primes the peer, then measures the reader at
/// each concurrency. Returns the rows, the local-hit p50, and the
/// cluster's counters.
async fn coopcache(args: &LatencyArgs, dir: &Path) -> Result<(Vec<Row>, f64, Counters)> {
    let origin = dir.join("origin");
    std::fs::create_dir_all(&origin)?;
    let mut data = vec![0u8; args.blocks as usize * BLOCK];
    Pcg64Mcg::seed_from_u64(7).fill(&mut data[..]);
    std::fs::write(origin.join(FILE), &data)?;
    drop(data);
    let mut spec = LoopbackSpec::new(dir, 2, origin)?;
    spec.algorithm = AlgorithmKind::Greedy;
    spec.block_size = BLOCK as u32;
    let bs = BLOCK as u64;
    // The peer holds the whole file with room to spare.
    let caches = [READER_CACHE_BLOCKS * bs, 2 * u64::from(args.blocks) * bs];
    // With each node on a thread of its own, the readers run on the
    // reader's (they are its local clients).
    let (nodes, threads, place) = match args.runtime {
        Layout::PerNode => {
            let threads = start_cluster_threaded(&spec, &caches).await?;
            let nodes: Vec<_> = threads.iter().map(|t| t.node.clone()).collect();
            let place = Place::On(threads[0].runtime.clone());
            (nodes, threads, place)
        }
        Layout::Shared => (
            start_cluster(&spec, &caches).await?,
            Vec::new(),
            Place::Here,
        ),
    };
    let result = measure_reader(args, &nodes, &place).await;
    let local = local_hit(args, &nodes[0], &place).await;
    let t = totals(&nodes).await;
    let dropped_messages = nodes
        .iter()
        .map(|n| n.metrics().dropped_messages.get())
        .sum();
    shutdown(&nodes);
    drop(threads);
    let t = t?;
    let counters = Counters {
        integrity_failures: t.integrity_failures,
        timeouts: t.timeouts,
        dropped_messages,
    };
    Ok((result?, local?, counters))
}

/// Where a closed loop's workers run.
enum Place {
    /// On the bench's own runtime.
    Here,
    /// On this runtime (a node's, its local clients).
    On(tokio::runtime::Handle),
    /// On a runtime and thread of their own (a baseline's clients).
    OwnThread,
}

impl Place {
    /// Runs a closed loop of the workers `make` builds (on the place's
    /// runtime, so their connections are its too).
    async fn closed_loop<W, F, Fut>(
        &self,
        make: F,
        warmup: Duration,
        duration: Duration,
    ) -> Result<(Summary, Vec<W>)>
    where
        W: Worker,
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = Result<Vec<W>>> + Send + 'static,
    {
        let run = async move { closed_loop(make().await?, warmup, duration).await };
        match self {
            Place::Here => run.await,
            Place::On(rt) => rt.spawn(run).await?,
            Place::OwnThread => on_own_thread(run).await,
        }
    }
}

/// A reader that reads one block over and over: after the first read,
/// every read is a local hit.
struct LocalReader(Reader);

impl Worker for LocalReader {
    async fn op(&mut self, measured: bool) -> Result<()> {
        let r = &mut self.0;
        let (_, level) = r.node.read_block(&r.path, &r.version, 0).await?;
        if measured && level != Level::Local {
            bail!("a repeated read of one block was served from {level:?}, not the local cache");
        }
        Ok(())
    }
}

/// The median of local hits on the reader, one reader at a time: what
/// the node's own hand-offs cost without the network.
async fn local_hit(args: &LatencyArgs, reader: &Arc<NodeHandle>, place: &Place) -> Result<f64> {
    let worker = LocalReader(Reader {
        node: reader.clone(),
        path: Arc::from(FILE),
        version: reader.stat(FILE).await?,
        blocks: args.blocks,
        cursor: Arc::new(AtomicU64::new(0)),
        levels: [0; Level::ALL.len()],
    });
    let make = || async move { Ok(vec![worker]) };
    let (s, _) = place
        .closed_loop(make, args.warmup, args.duration / 2)
        .await?;
    Ok(s.p50_us)
}

async fn measure_reader(
    args: &LatencyArgs,
    nodes: &[Arc<NodeHandle>],
    place: &Place,
) -> Result<Vec<Row>> {
    let (reader, peer) = (&nodes[0], &nodes[1]);
    eprintln!(
        "coopcache: priming the peer with {} blocks ...",
        args.blocks
    );
    let primed = peer.read(FILE, None).await?;
    if primed.len() != args.blocks as usize * BLOCK {
        bail!("priming read {} bytes", primed.len());
    }
    let path: Arc<str> = Arc::from(FILE);
    let version = reader.stat(FILE).await?;
    let mut rows = Vec::new();
    let cursor = Arc::new(AtomicU64::new(0));
    for &c in &args.concurrency {
        eprintln!("coopcache: {c} readers ...");
        let workers: Vec<Reader> = (0..c)
            .map(|_| Reader {
                node: reader.clone(),
                path: path.clone(),
                version: version.clone(),
                blocks: args.blocks,
                cursor: cursor.clone(),
                levels: [0; Level::ALL.len()],
            })
            .collect();
        let make = || async move { Ok(workers) };
        let (summary, workers) = place.closed_loop(make, args.warmup, args.duration).await?;
        let mut levels = [0u64; Level::ALL.len()];
        for w in &workers {
            for (l, n) in levels.iter_mut().zip(w.levels) {
                *l += n;
            }
        }
        let peer_share = levels[Level::RemoteNode.index()] as f64 / summary.ops.max(1) as f64;
        rows.push(Row {
            system: "coopcache".into(),
            summary,
            levels: Some(levels),
            peer_share: Some(peer_share),
        });
    }
    Ok(rows)
}

async fn run_baseline(args: &LatencyArgs, kind: Kind, exe: &Path, dir: &Path) -> Result<Vec<Row>> {
    eprintln!("{}: starting {} ...", kind.name(), exe.display());
    let server = baseline::start(kind, exe, args.memcached_threads, dir).await?;
    baseline::load(&server, args.blocks, BLOCK).await?;
    // The clients on one thread of their own, as coopcache's readers run
    // on the reader node's.
    let place = match args.runtime {
        Layout::PerNode => Place::OwnThread,
        Layout::Shared => Place::Here,
    };
    let mut rows = Vec::new();
    for &c in &args.concurrency {
        eprintln!("{}: {c} connections ...", kind.name());
        let (endpoint, blocks) = (server.endpoint(), args.blocks);
        let make = move || async move {
            let mut workers = Vec::with_capacity(c);
            for i in 0..c {
                workers.push(GetWorker::new(&endpoint, blocks, BLOCK, i as u64 + 1).await?);
            }
            Ok(workers)
        };
        let (summary, _) = place.closed_loop(make, args.warmup, args.duration).await?;
        rows.push(Row {
            system: kind.name().into(),
            summary,
            levels: None,
            peer_share: None,
        });
    }
    server.stop().await?;
    Ok(rows)
}
