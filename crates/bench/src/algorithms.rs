//! `coopcache bench algorithms`: a multi-client workload (the simulator's
//! `sprite-like` by default) replayed through a live loopback cluster for
//! each algorithm the daemon runs, next to the same protocol simulated
//! with the live cluster's block ids (`coopcache_sim::protocol`) and to the
//! paper's simulator, for the same trace, seed, cache sizes and block size.
//!
//! All three get the same shape: one node per client, each caching
//! `--cache-blocks` blocks under LRU, a manager without memory (a live
//! node's manager slice keeps a directory only), N-Chance with n = 2 and
//! seed 1 (the daemon's defaults). Live nodes serve a read-only origin, so
//! writes are dropped from the trace everywhere (the default workload has
//! none).

use crate::algorithms_report;
use crate::loopback::{LoopbackSpec, shutdown, start_cluster, totals};
use crate::replay::{self, file_name, file_of};
use anyhow::{Context, Result, bail};
use coopcache_console::args::parse_size;
use coopcache_console::args::{ReportArgs, Seed};
use coopcache_console::tasks::in_tempdir;
use coopcache_core::coop::{AlgorithmKind, ClusterConfig, Level, LiveShape};
use coopcache_core::policy::PolicyKind;
use coopcache_node::block::{BlockId, first_block};
use coopcache_node::origin::FileVersion;
use coopcache_sim::protocol::LiveCluster;
use coopcache_sim::trace::{Op, Request};
use coopcache_sim::workload::Workload;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The default workload: four clients all active, sharing a small set of
/// files, so that a few thousand requests already exercise cooperation.
const DEFAULT_PARAMS: &str =
    "clients=4,requests=3000,active_clients=4,shared_files=200,write_fraction=0";

#[derive(clap::Args)]
pub struct AlgorithmsArgs {
    /// Algorithms, comma-separated (the daemon runs base, greedy, nchance,
    /// hash and direct).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "base,greedy,nchance,hash,direct"
    )]
    algorithms: Vec<String>,
    /// The simulator's workload.
    #[arg(long, default_value = "sprite-like")]
    workload: Workload,
    /// Workload parameters as key=value pairs, applied after the defaults
    /// (sprite-like: `clients=4,requests=3000,active_clients=4,shared_files=200,write_fraction=0`);
    /// `requests=N` scales the run.
    #[arg(long, value_name = "KEY=VALUE,...")]
    workload_params: Option<String>,
    #[command(flatten)]
    pub(crate) seed: Seed,
    /// Blocks each node caches (at least 16, the least the budget takes).
    #[arg(long, default_value_t = 64)]
    cache_blocks: u64,
    /// Block size.
    #[arg(long, default_value = "8KiB", value_parser = parse_size)]
    block_size: u64,
    #[command(flatten)]
    report: ReportArgs,
}

/// Reads per level: local, manager memory, remote node, origin.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub(super) struct Counts {
    pub(super) local: u64,
    pub(super) manager_memory: u64,
    pub(super) remote_node: u64,
    pub(super) origin: u64,
}

impl Counts {
    fn of(levels: &[Level]) -> Self {
        let mut c = [0u64; Level::ALL.len()];
        for l in levels {
            c[l.index()] += 1;
        }
        Counts {
            local: c[0],
            manager_memory: c[1],
            remote_node: c[2],
            origin: c[3],
        }
    }

    pub(super) fn get(&self, l: Level) -> u64 {
        [
            self.local,
            self.manager_memory,
            self.remote_node,
            self.origin,
        ][l.index()]
    }
}

/// One algorithm's figures.
#[derive(serde::Serialize)]
pub(super) struct Outcome {
    pub(super) algorithm: String,
    pub(super) workload: String,
    pub(super) nodes: u32,
    pub(super) cache_blocks: u64,
    pub(super) block_size: u64,
    pub(super) reads: u64,
    pub(super) live: Counts,
    /// The live protocol simulated, with the live cluster's block ids.
    pub(super) protocol: Counts,
    /// The paper's simulator (trace ids as block ids).
    pub(super) simulated: Counts,
    /// Reads served from the same level live and by the simulated protocol.
    pub(super) same_level_as_protocol: u64,
    /// The first read served from another level, if any.
    pub(super) first_difference_from_protocol: Option<usize>,
    /// Reads served from the same level live and by the paper's simulator.
    pub(super) same_level: u64,
    /// The first read served from another level, if any.
    pub(super) first_difference: Option<usize>,
    /// Origin requests the live nodes counted (equals `live.origin`).
    pub(super) live_origin_requests: u64,
    pub(super) timeouts: u64,
    pub(super) integrity_failures: u64,
    pub(super) live_seconds: f64,
}

pub(crate) fn run(args: AlgorithmsArgs) -> Result<()> {
    let algorithms: Vec<AlgorithmKind> = args
        .algorithms
        .iter()
        .map(|a| AlgorithmKind::parse_live(a).map_err(anyhow::Error::from))
        .collect::<Result<_>>()?;
    if algorithms.is_empty() {
        bail!("--algorithms needs at least one of base, greedy, nchance");
    }
    if args.cache_blocks < 16 {
        bail!("--cache-blocks must be at least 16 (the least a node's memory budget accepts)");
    }
    let (label, nodes, requests) = trace(&args)?;
    let (a, algs, label, requests) = (&args, &algorithms, &label, &requests);
    let outcome = in_tempdir("coopcache-bench-algorithms-", |dir| async move {
        bench(a, algs, label, nodes, requests, &dir).await
    })?;
    let outcomes = outcome;
    if args.report.json {
        coopcache_console::output::print_json(&outcomes)?;
    } else {
        algorithms_report::print(&outcomes);
    }
    if let Some(dir) = &args.report.plot {
        algorithms_report::plot(dir, &outcomes)?;
        eprintln!("plots: {}", dir.display());
    }
    Ok(())
}

/// The workload's read requests, its label and node count.
fn trace(args: &AlgorithmsArgs) -> Result<(String, u32, Vec<Request>)> {
    let mut w = args.workload.clone();
    if matches!(w, Workload::SpriteLike(_)) {
        w.set_all(DEFAULT_PARAMS)?;
    }
    w.set("seed", &args.seed.value.to_string())?;
    if let Some(params) = &args.workload_params {
        w.set_all(params)?;
    }
    if let Some(b) = w.block_size()
        && b != args.block_size
    {
        bail!(
            "the {} workload is in {b}-byte blocks: pass --block-size {b}",
            w.name()
        );
    }
    let nodes = w.clients();
    if nodes == 0 {
        bail!("the workload has no clients: set clients=N");
    }
    let mut requests = Vec::new();
    let mut writes = 0u64;
    for r in w.requests_iter() {
        let r = r?;
        match r.op {
            Op::Read => requests.push(r),
            Op::Write | Op::Delete => writes += 1,
        }
    }
    if writes > 0 {
        eprintln!(
            "{writes} writes and deletes dropped from both replays: live nodes serve a read-only origin"
        );
    }
    if requests.is_empty() {
        bail!("the workload has no reads");
    }
    Ok((w.name().to_string(), nodes, requests))
}

/// Writes one sparse origin file per trace file, long enough for every
/// block the trace reads (contents do not matter to where reads are
/// served; the nodes still verify every peer block).
fn write_origin(dir: &Path, requests: &[Request], block_size: u64) -> Result<BTreeMap<u64, u64>> {
    std::fs::create_dir_all(dir)?;
    let mut blocks: BTreeMap<u64, u64> = BTreeMap::new();
    for r in requests {
        let (file, index) = file_of(r.id);
        let n = blocks.entry(file).or_default();
        *n = (*n).max(u64::from(index) + 1);
    }
    for (&file, &n) in &blocks {
        let f = std::fs::File::create(dir.join(file_name(file)))?;
        f.set_len(n * block_size)?;
    }
    Ok(blocks)
}

async fn bench(
    args: &AlgorithmsArgs,
    algorithms: &[AlgorithmKind],
    label: &str,
    nodes: u32,
    requests: &[Request],
    dir: &Path,
) -> Result<Vec<Outcome>> {
    let origin = dir.join("origin");
    let files = write_origin(&origin, requests, args.block_size)?;
    eprintln!(
        "{label}: {} reads by {} over {}; {} of {} blocks of {} KiB",
        requests.len(),
        coopcache_console::output::count(nodes as u64, "client"),
        coopcache_console::output::count(files.len() as u64, "file"),
        coopcache_console::output::count(nodes as u64, "node"),
        args.cache_blocks,
        args.block_size >> 10
    );
    let mut spec = LoopbackSpec::new(dir, nodes, origin)?;
    spec.block_size = u32::try_from(args.block_size).context("--block-size")?;
    // A peer is never late here: a timeout would send a read to the
    // origin, which the simulator never does.
    spec.min_timeout = Some(Duration::from_secs(10));
    // The daemon's defaults; `simulated` adds how the daemon runs each
    // algorithm (no manager memory, parked blocks evicted first, ...).
    let config = ClusterConfig {
        nodes,
        node_capacity: args.cache_blocks as usize,
        chances: 2,
        seed: 1,
        ..ClusterConfig::paper(nodes)
    };
    let mut out = Vec::new();
    for &algorithm in algorithms {
        let shape = algorithm.live_config(&config)?;
        let simulated = replay::simulate(algorithm, &shape, requests)?;
        spec.algorithm = algorithm;
        eprintln!("{algorithm}: replaying live ...");
        out.push(run_live(args, &spec, &files, requests, label, &simulated).await?);
    }
    Ok(out)
}

/// The live protocol simulated over `blocks` (the live cluster's ids of
/// the requests' blocks): each read's level.
fn simulate_protocol(
    algorithm: AlgorithmKind,
    args: &AlgorithmsArgs,
    nodes: u32,
    requests: &[Request],
    blocks: &[BlockId],
) -> Result<Vec<Level>> {
    let shape = LiveShape {
        capacity: args.cache_blocks as usize,
        policy: PolicyKind::Lru,
        chances: 2,
        seed: 1,
        classes: Default::default(),
    };
    let bs = u32::try_from(args.block_size).context("--block-size")?;
    let mut sim = LiveCluster::new(algorithm, nodes, &shape, bs)?;
    let mut levels = Vec::with_capacity(requests.len());
    for (i, (r, &block)) in requests.iter().zip(blocks).enumerate() {
        let served = sim
            .read(r.client, block)?
            .with_context(|| format!("{algorithm}: simulated read {i} never completed"))?
            .map_err(|e| anyhow::anyhow!("{algorithm}: simulated read {i}: {e}"))?;
        levels.push(served.level);
    }
    Ok(levels)
}

async fn run_live(
    args: &AlgorithmsArgs,
    spec: &LoopbackSpec,
    files: &BTreeMap<u64, u64>,
    requests: &[Request],
    label: &str,
    simulated: &[Level],
) -> Result<Outcome> {
    let caches = vec![args.cache_blocks * args.block_size; spec.names.len()];
    let nodes = start_cluster(spec, &caches).await?;
    let started = Instant::now();
    let mut protocol = Vec::new();
    let result = async {
        let mut versions: HashMap<u64, Arc<FileVersion>> = HashMap::new();
        for &f in files.keys() {
            versions.insert(f, nodes[0].stat(&file_name(f)).await?);
        }
        // The live cluster's block ids (the file id hashes the path and
        // the origin's version), for the simulated protocol.
        let blocks: Vec<BlockId> = requests
            .iter()
            .map(|r| {
                let (file, index) = file_of(r.id);
                let version = &versions[&file].version;
                BlockId {
                    index,
                    ..first_block(&file_name(file), version)
                }
            })
            .collect();
        let nodes_n = spec.names.len() as u32;
        protocol = simulate_protocol(spec.algorithm, args, nodes_n, requests, &blocks)?;
        let bar = super::common::Bar::new(requests.len() as u64, "reads replayed");
        replay::live(&nodes, &versions, requests, |_| bar.inc()).await
    }
    .await;
    let live_seconds = started.elapsed().as_secs_f64();
    let t = totals(&nodes).await;
    shutdown(&nodes);
    let (live, t) = (result?, t?);
    let first_difference = live.iter().zip(simulated).position(|(a, b)| a != b);
    let first_difference_from_protocol = live.iter().zip(&protocol).position(|(a, b)| a != b);
    Ok(Outcome {
        algorithm: spec.algorithm.to_string(),
        workload: label.to_string(),
        nodes: spec.names.len() as u32,
        cache_blocks: args.cache_blocks,
        block_size: args.block_size,
        reads: live.len() as u64,
        live: Counts::of(&live),
        protocol: Counts::of(&protocol),
        simulated: Counts::of(simulated),
        same_level_as_protocol: live.iter().zip(&protocol).filter(|(a, b)| a == b).count() as u64,
        first_difference_from_protocol,
        same_level: live.iter().zip(simulated).filter(|(a, b)| a == b).count() as u64,
        first_difference,
        live_origin_requests: t.origin_reads,
        timeouts: t.timeouts,
        integrity_failures: t.integrity_failures,
        live_seconds,
    })
}
