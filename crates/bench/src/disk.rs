//! `coopcache bench disk`: does a node's disk tier (`--disk`, issue 43)
//! keep a working set larger than the cluster's memory off the origin?
//!
//! Four measurements in one run, side by side:
//!
//! 1. **Working set beyond memory.** Random block reads over a working set
//!    four times the cluster's memory and half its disk, for several
//!    passes, once on a cluster without a disk tier and once on one with
//!    (each started fresh), next to the live protocol simulated
//!    (`coopcache_sim::protocol::LiveCluster`, `set_disk`) for the same
//!    reads, memory and slots.
//! 2. **Restart.** Each cluster stopped and started again (the disk's on
//!    the same directories): one more pass, and what warming up costs.
//! 3. **A disk hit against a peer's memory** (`disk_probes.rs`).
//! 4. **What the disk index costs per block** (`disk_probes.rs`).
//!
//! Reads go one at a time, each after the cluster is quiet again
//! (`coopcache_node::quiescence`, as `bench algorithms` does): the
//! simulator runs every read to quiescence, so only this makes the live
//! figures comparable with its prediction read for read.

use super::common::{Counters, in_tempdir, rng, write_origin_file};
use crate::disk_probes::{self, Index, Latency, median_p99_ms};
use crate::disk_replay::{
    DiskCounts, Read, WorkingSet, disk_slots, one_cache_misses, replay, simulate, start_again,
};
use crate::disk_report;
use crate::loopback::{LoopbackSpec, shutdown};
use anyhow::{Context, Result, anyhow, bail};
use coopcache_console::args::{ReportArgs, Seed};
use coopcache_console::args::{parse_duration, parse_size};
use coopcache_core::coop::{AlgorithmKind, Level};
use coopcache_node::NodeHandle;
use coopcache_node::origin::FileVersion;
use rand::Rng;
use rand::seq::SliceRandom;
use rand_distr::{Distribution, Zipf};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The target: the live cluster's origin reads with a disk within
/// this many percent of the simulated protocol's.
const TARGET_PCT: f64 = 10.0;

#[derive(clap::Args)]
pub struct DiskArgs {
    /// Bytes of the working set, in `--files` files. Each node's memory
    /// caches a quarter of it over `--nodes`, each node's disk tier holds
    /// twice it over `--nodes` (the working set is 4x the cluster's
    /// memory, 0.5x its disk).
    #[arg(long, default_value = "64MiB", value_parser = parse_size)]
    working_set: u64,
    /// Nodes, each with a reader issuing its share of the reads.
    #[arg(long, default_value_t = 2)]
    nodes: u32,
    /// Cache block size.
    #[arg(long, default_value = "64KiB", value_parser = parse_size)]
    block_size: u64,
    /// Files the working set is split into (each file's blocks have the
    /// manager its path chooses).
    #[arg(long, default_value_t = 8)]
    files: u32,
    /// Passes over the working set: each is as many reads as it has
    /// blocks, every one a block drawn at random.
    #[arg(long, default_value_t = 3)]
    passes: u32,
    /// Zipf exponent of the blocks' popularity (popular blocks spread over
    /// the files at random); 0: every block equally likely.
    #[arg(long, default_value_t = 0.0)]
    zipf: f64,
    /// Emulated latency of every origin request.
    #[arg(long, default_value = "5ms", value_parser = parse_duration)]
    origin_delay: Duration,
    /// Algorithm: base or nchance.
    #[arg(long, default_value = "nchance")]
    algorithm: AlgorithmKind,
    /// Single-block reads timed for each source (a local disk hit, a peer
    /// memory hit); 0 skips the measurement.
    #[arg(long, default_value_t = 200)]
    latency_reads: u32,
    /// Leave the page cache alone even when running as root (by default
    /// root also times disk hits after `echo 1 > /proc/sys/vm/drop_caches`).
    #[arg(long)]
    keep_page_cache: bool,
    /// Slots of the disk index whose memory is measured, comma-separated
    /// (what it costs per block depends on where the count falls between
    /// two sizes of its hash table); 0 skips the measurement.
    #[arg(long, value_delimiter = ',', default_value = "1000000")]
    index_slots: Vec<u32>,
    #[command(flatten)]
    pub(crate) seed: Seed,
    #[command(flatten)]
    report: ReportArgs,
}

/// Reads served at each level.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub(crate) struct Levels {
    pub(crate) local_memory: u64,
    /// The manager's or another node's memory.
    pub(crate) peer_memory: u64,
    pub(crate) local_disk: u64,
    pub(crate) origin: u64,
}

impl Levels {
    pub(crate) fn add(&mut self, level: Level) {
        match level {
            Level::Local => self.local_memory += 1,
            Level::ManagerMemory | Level::RemoteNode => self.peer_memory += 1,
            Level::LocalDisk => self.local_disk += 1,
            Level::Origin => self.origin += 1,
        }
    }

    fn of(levels: impl IntoIterator<Item = Level>) -> Levels {
        let mut l = Levels::default();
        levels.into_iter().for_each(|level| l.add(level));
        l
    }
}

/// One cluster's reads: a run of passes (`working_set`) or the pass after
/// a restart (`restart`).
#[derive(serde::Serialize)]
pub(crate) struct Run {
    pub(crate) bench: &'static str,
    pub(crate) kind: &'static str,
    pub(crate) disk: bool,
    pub(crate) algorithm: String,
    pub(crate) nodes: u32,
    pub(crate) reads: u64,
    pub(crate) working_set_bytes: u64,
    /// Block cache of the whole cluster.
    pub(crate) memory_bytes: u64,
    /// `--disk-size` of the whole cluster, and the slots it makes.
    pub(crate) disk_bytes: u64,
    pub(crate) disk_slots: u64,
    pub(crate) origin_reads: u64,
    pub(crate) origin_bytes: u64,
    pub(crate) levels: Levels,
    /// Of the reads a peer served, those from its disk (the nodes'
    /// `disk_served`; a reader sees a peer's answer either way).
    pub(crate) peer_disk: u64,
    pub(crate) median_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) seconds: f64,
    /// The live protocol simulated over the same reads (working-set runs).
    pub(crate) simulated: Option<Levels>,
    /// The origin reads of one LRU cache as large as the cluster's memory
    /// and disk tiers together, over the same reads (working-set runs).
    pub(crate) one_cache_origin_reads: Option<u64>,
    /// Live origin reads over the simulated protocol's, less 1, in percent.
    pub(crate) origin_reads_vs_simulated_pct: Option<f64>,
    pub(crate) target_pct: Option<f64>,
    pub(crate) met: Option<bool>,
    pub(crate) disk_writes: u64,
    pub(crate) disk_failures: u64,
    pub(crate) integrity_failures: u64,
    pub(crate) timeouts: u64,
    pub(crate) wrong_bytes: u64,
}

pub(crate) struct Outcome {
    pub(crate) runs: Vec<Run>,
    pub(crate) latency: Vec<Latency>,
    pub(crate) index: Vec<Index>,
    /// How the reads were drawn, for the report.
    pub(crate) draw: String,
}

/// The run's sizes, derived from the arguments.
struct Shape {
    blocks: usize,
    /// Blocks each node's memory caches.
    memory_blocks: u64,
    /// `--disk-size` of each node.
    disk_size: u64,
}

pub(crate) fn run(args: DiskArgs) -> Result<()> {
    let shape = check(&args)?;
    let out = in_tempdir("coopcache-bench-disk-", |dir| bench(&args, &shape, dir))?;
    disk_report::report(&args.report, &out)
}

fn check(args: &DiskArgs) -> Result<Shape> {
    if args.nodes == 0 || args.files == 0 || args.passes == 0 || args.block_size == 0 {
        bail!("--nodes, --files, --passes and --block-size must be at least 1");
    }
    if !matches!(args.algorithm, AlgorithmKind::Base | AlgorithmKind::NChance) {
        bail!("--algorithm: base or nchance (the disk tier's first steps are measured with those)");
    }
    if !(args.zipf >= 0.0 && args.zipf.is_finite()) {
        bail!("--zipf must be 0 (uniform) or a positive exponent");
    }
    let blocks = args.working_set / args.block_size;
    let memory_blocks = blocks / (4 * u64::from(args.nodes));
    if memory_blocks < 16 {
        bail!(
            "--working-set {} bytes over {} makes {memory_blocks} blocks of memory per node: at least 16 are needed (the least a node's budget takes); give a larger working set or smaller blocks",
            args.working_set,
            coopcache_console::output::count(u64::from(args.nodes), "node"),
        );
    }
    Ok(Shape {
        blocks: usize::try_from(blocks)?,
        memory_blocks,
        disk_size: 2 * blocks * args.block_size / u64::from(args.nodes),
    })
}

/// `count` blocks of `blocks`, drawn uniformly, or by Zipf popularity
/// with the ranks dealt to blocks at random.
fn draws(args: &DiskArgs, blocks: usize, stream: u64, count: usize) -> Result<Vec<usize>> {
    let mut r = rng(args.seed.value, stream);
    if args.zipf == 0.0 {
        return Ok((0..count).map(|_| r.random_range(0..blocks)).collect());
    }
    let mut by_rank: Vec<usize> = (0..blocks).collect();
    by_rank.shuffle(&mut r);
    let zipf = Zipf::new(blocks as f64, args.zipf).map_err(|e| anyhow!("--zipf: {e}"))?;
    Ok((0..count)
        .map(|_| {
            by_rank[(zipf.sample(&mut r) as usize)
                .saturating_sub(1)
                .min(blocks - 1)]
        })
        .collect())
}

/// `count` reads from stream `stream`, the nodes' readers taking turns.
fn reads(args: &DiskArgs, shape: &Shape, stream: u64, count: usize) -> Result<Vec<Read>> {
    let nodes = args.nodes as usize;
    Ok(draws(args, shape.blocks, stream, count)?
        .into_iter()
        .enumerate()
        .map(|(i, block)| Read {
            node: i % nodes,
            block,
        })
        .collect())
}

fn working_set(args: &DiskArgs, shape: &Shape, origin: &Path) -> Result<WorkingSet> {
    let per_file = shape.blocks.div_ceil(args.files as usize);
    let mut r = rng(args.seed.value, 1);
    let (mut names, mut data) = (Vec::new(), Vec::new());
    for (f, first) in (0..shape.blocks).step_by(per_file).enumerate() {
        let name = format!("set-{f}.bin");
        let size = (shape.blocks - first).min(per_file) as u64 * args.block_size;
        data.push(write_origin_file(origin, &name, size, &mut r)?);
        names.push(Arc::from(name.as_str()));
    }
    Ok(WorkingSet {
        names,
        data,
        per_file,
        block_size: args.block_size,
    })
}

async fn bench(args: &DiskArgs, shape: &Shape, dir: PathBuf) -> Result<Outcome> {
    // First, while the process holds little else: heap and resident
    // memory move with the index alone.
    let index = (args.index_slots.iter())
        .filter(|&&n| n > 0)
        .map(|&n| disk_probes::index_cost(n))
        .collect::<Result<Vec<_>>>()?;
    let origin = dir.join("origin");
    let set = working_set(args, shape, &origin)?;
    // Certificates for two nodes at least: the latency phase's peer.
    let mut spec = LoopbackSpec::new(&dir, args.nodes.max(2), origin)?;
    spec.origin_delay = args.origin_delay;
    spec.block_size = u32::try_from(args.block_size).context("--block-size")?;
    spec.algorithm = args.algorithm;
    let draw = match args.zipf {
        0.0 => "uniform".to_string(),
        s => format!("Zipf {s}"),
    };
    eprintln!(
        "disk: {} MiB working set in {} of {} KiB blocks, {} of {draw} random reads, {}: {} KiB of memory and a {} KiB disk tier each, {:?} per origin request, {}",
        args.working_set >> 20,
        coopcache_console::output::count(set.names.len() as u64, "file"),
        args.block_size >> 10,
        match args.passes {
            1 => "1 pass".to_string(),
            n => format!("{n} passes"),
        },
        coopcache_console::output::count(u64::from(args.nodes), "node"),
        (shape.memory_blocks * args.block_size) >> 10,
        shape.disk_size >> 10,
        args.origin_delay,
        args.algorithm
    );
    let passes = reads(args, shape, 2, shape.blocks * args.passes as usize)?;
    let restart = reads(args, shape, 3, shape.blocks)?;
    let mut runs = Vec::new();
    for disk in [false, true] {
        if disk {
            spec.disk_dir = Some(dir.join("disks"));
            spec.disk_size = shape.disk_size;
        }
        let cluster = Cluster {
            args,
            shape,
            spec: &spec,
            set: &set,
        };
        runs.push(cluster.working_set_run(&passes).await?);
        runs.push(cluster.restart_run(&restart).await?);
    }
    let latency = match args.latency_reads {
        0 => Vec::new(),
        n => {
            let probe = disk_probes::Probe {
                spec: &mut spec,
                set: &set,
                memory_blocks: shape.memory_blocks,
                samples: n as usize,
                drop_caches: !args.keep_page_cache,
                seed: args.seed.value,
            };
            probe.latencies().await?
        }
    };
    Ok(Outcome {
        runs,
        latency,
        index,
        draw,
    })
}

/// One kind of cluster (with or without a disk) of the run.
struct Cluster<'a> {
    args: &'a DiskArgs,
    shape: &'a Shape,
    spec: &'a LoopbackSpec,
    set: &'a WorkingSet,
}

impl Cluster<'_> {
    fn caches(&self) -> Vec<u64> {
        let cache = self.shape.memory_blocks * self.args.block_size;
        vec![cache; self.args.nodes as usize]
    }

    fn disk(&self) -> bool {
        self.spec.disk_dir.is_some()
    }

    /// The passes over the working set on a fresh cluster, and the
    /// simulated protocol's levels for the same reads.
    async fn working_set_run(&self, reads: &[Read]) -> Result<Run> {
        let what = if self.disk() { "with" } else { "without" };
        eprintln!("{what} a disk tier: {} reads ...", reads.len());
        let nodes = start_again(self.spec, &self.caches()).await?;
        let result = async {
            let versions = self.set.versions(&nodes[0]).await?;
            let slots = disk_slots(&nodes).await?;
            let slots = self.disk().then_some(&slots[..]);
            let (algorithm, memory) = (self.args.algorithm, self.shape.memory_blocks);
            let simulated = simulate(
                algorithm,
                self.args.nodes,
                memory,
                self.set,
                &versions,
                reads,
                slots,
            )?;
            let mut run = self
                .replay_run("working_set", &nodes, &versions, reads)
                .await?;
            let (live, sim) = (run.origin_reads as f64, simulated.origin as f64);
            let pct = 100.0 * (live / sim.max(1.0) - 1.0);
            run.simulated = Some(simulated);
            let blocks = u64::from(self.args.nodes) * memory + slots.map_or(0, |s| s.iter().sum());
            run.one_cache_origin_reads = Some(one_cache_misses(reads, blocks)?);
            run.origin_reads_vs_simulated_pct = Some(pct);
            if self.disk() {
                run.target_pct = Some(TARGET_PCT);
                run.met = Some(pct.abs() <= TARGET_PCT);
            }
            anyhow::Ok(run)
        }
        .await;
        shutdown(&nodes);
        result
    }

    /// One pass on the cluster started again: memory empty, the disk tier
    /// (if any) as the last run left it.
    async fn restart_run(&self, reads: &[Read]) -> Result<Run> {
        let what = if self.disk() { "with" } else { "without" };
        eprintln!("restarted {what} a disk tier: {} reads ...", reads.len());
        let nodes = start_again(self.spec, &self.caches()).await?;
        let result = async {
            let versions = self.set.versions(&nodes[0]).await?;
            self.replay_run("restart", &nodes, &versions, reads).await
        }
        .await;
        shutdown(&nodes);
        result
    }

    async fn replay_run(
        &self,
        kind: &'static str,
        nodes: &[Arc<NodeHandle>],
        versions: &[Arc<FileVersion>],
        reads: &[Read],
    ) -> Result<Run> {
        let before = Counters::sum(nodes).await?;
        let disk_before = DiskCounts::sum(nodes).await?;
        let bar = super::common::Bar::new(reads.len() as u64, "reads");
        let r = replay(nodes, self.set, versions, reads, || bar.inc()).await?;
        let c = Counters::sum(nodes).await?.since(&before);
        let d = DiskCounts::sum(nodes).await?;
        let (median_ms, p99_ms) = median_p99_ms(&r.latencies);
        let nodes_n = u64::from(self.args.nodes);
        Ok(Run {
            bench: "disk",
            kind,
            disk: self.disk(),
            algorithm: self.args.algorithm.to_string(),
            nodes: self.args.nodes,
            reads: reads.len() as u64,
            working_set_bytes: self.shape.blocks as u64 * self.args.block_size,
            memory_bytes: nodes_n * self.shape.memory_blocks * self.args.block_size,
            disk_bytes: if self.disk() {
                nodes_n * self.shape.disk_size
            } else {
                0
            },
            disk_slots: d.slots,
            origin_reads: c.origin_reads,
            origin_bytes: c.origin_bytes,
            levels: Levels::of(r.levels.iter().copied()),
            peer_disk: d.served.saturating_sub(disk_before.served),
            median_ms,
            p99_ms,
            seconds: r.seconds,
            simulated: None,
            one_cache_origin_reads: None,
            origin_reads_vs_simulated_pct: None,
            target_pct: None,
            met: None,
            disk_writes: d.writes.saturating_sub(disk_before.writes),
            disk_failures: d.failures.saturating_sub(disk_before.failures),
            integrity_failures: c.integrity_failures,
            timeouts: c.timeouts,
            wrong_bytes: r.wrong,
        })
    }
}
