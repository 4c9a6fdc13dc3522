//! `coopcache bench disk`'s reads: the working set, its reads replayed
//! one at a time on a live cluster, and the same reads through the live
//! protocol simulated.

use super::common::{timed, wrong_bytes};
use crate::disk::Levels;
use crate::loopback::{LoopbackSpec, start_cluster};
use anyhow::{Context, Result, anyhow};
use coopcache_core::coop::{AlgorithmKind, Level, LiveShape};
use coopcache_core::policy::PolicyKind;
use coopcache_node::NodeHandle;
use coopcache_node::block::{BlockId, first_block};
use coopcache_node::origin::FileVersion;
use coopcache_node::quiescence::quiescence;
use coopcache_sim::protocol::LiveCluster;
use std::sync::Arc;
use std::time::Duration;

/// One read: which node's reader, which block of the working set.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Read {
    pub(crate) node: usize,
    pub(crate) block: usize,
}

/// The working set's files, their bytes and shape: what every cluster of
/// the run reads.
pub(crate) struct WorkingSet {
    pub(crate) names: Vec<Arc<str>>,
    pub(crate) data: Vec<Vec<u8>>,
    /// Blocks per file (the last may have fewer).
    pub(crate) per_file: usize,
    pub(crate) block_size: u64,
}

impl WorkingSet {
    /// Blocks in all.
    pub(crate) fn blocks(&self) -> usize {
        let bs = self.block_size as usize;
        self.data.iter().map(|d| d.len().div_ceil(bs)).sum()
    }

    /// Block `b` of the working set: its file and index there.
    pub(crate) fn locate(&self, b: usize) -> (usize, u32) {
        (b / self.per_file, (b % self.per_file) as u32)
    }

    /// The origin's bytes of block `b`.
    pub(crate) fn expected(&self, b: usize) -> &[u8] {
        let (f, i) = self.locate(b);
        let bs = self.block_size as usize;
        let data = &self.data[f];
        let start = (i as usize * bs).min(data.len());
        &data[start..(start + bs).min(data.len())]
    }

    /// Each file's version, as node `node` finds it at the origin.
    pub(crate) async fn versions(&self, node: &NodeHandle) -> Result<Vec<Arc<FileVersion>>> {
        let mut out = Vec::with_capacity(self.names.len());
        for name in &self.names {
            out.push(node.stat(name).await?);
        }
        Ok(out)
    }
}

/// What a replay on a live cluster gave.
pub(crate) struct Replayed {
    pub(crate) levels: Vec<Level>,
    pub(crate) latencies: Vec<Duration>,
    pub(crate) wrong: u64,
    pub(crate) seconds: f64,
}

/// Starts `spec`'s cluster, waiting for the last run's disk stores to be
/// closed (a stopped node's store goes with its last task, and holds its
/// file's lock until then).
pub(crate) async fn start_again(
    spec: &LoopbackSpec,
    caches: &[u64],
) -> Result<Vec<Arc<NodeHandle>>> {
    let mut tries = 0;
    loop {
        match start_cluster(spec, caches).await {
            Ok(nodes) => return Ok(nodes),
            Err(e) if tries < 100 && format!("{e:#}").contains("in use") => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Reads `reads` one at a time, each on its reader's node after the
/// cluster went quiet, checking every byte against the origin's.
pub(crate) async fn replay(
    nodes: &[Arc<NodeHandle>],
    set: &WorkingSet,
    versions: &[Arc<FileVersion>],
    reads: &[Read],
    mut progress: impl FnMut(),
) -> Result<Replayed> {
    let mut out = Replayed {
        levels: Vec::with_capacity(reads.len()),
        latencies: Vec::with_capacity(reads.len()),
        wrong: 0,
        seconds: 0.0,
    };
    for (i, read) in reads.iter().enumerate() {
        let node = nodes.get(read.node).context("a read on no node")?;
        let (f, index) = set.locate(read.block);
        let (got, seconds) = timed(node.read_block(&set.names[f], &versions[f], index)).await;
        let (bytes, level) = got.with_context(|| format!("read {i}"))?;
        out.wrong += wrong_bytes(&bytes, set.expected(read.block));
        out.levels.push(level);
        out.latencies.push(Duration::from_secs_f64(seconds));
        out.seconds += seconds;
        // What a read leaves behind (N-Chance's forwarded singlets, the
        // directory's updates) lands before the next, as in the simulator.
        quiescence(nodes, Duration::from_secs(10)).await?;
        progress();
    }
    Ok(out)
}

/// The disk tiers' counters, summed over nodes.
#[derive(Clone, Copy, Default)]
pub(crate) struct DiskCounts {
    pub(crate) slots: u64,
    pub(crate) writes: u64,
    pub(crate) failures: u64,
    /// Blocks the nodes' disks served to peers.
    pub(crate) served: u64,
}

impl DiskCounts {
    pub(crate) async fn sum(nodes: &[Arc<NodeHandle>]) -> Result<DiskCounts> {
        let mut d = DiskCounts::default();
        for n in nodes {
            let s = n.status().await?;
            d.slots += s.disk_slots;
            d.writes += s.disk_writes;
            d.failures += s.disk_failures;
            d.served += s.disk_served;
        }
        Ok(d)
    }
}

/// The origin reads of one LRU cache of `capacity` blocks over `reads`:
/// what a single cache the size of the whole cluster (its memory and its
/// disks together) would read, the yardstick for a cluster with
/// disk tiers.
pub(crate) fn one_cache_misses(reads: &[Read], capacity: u64) -> Result<u64> {
    use coopcache_core::policy::{BLOCK, Lookup, Lru, Policy};
    let mut lru = Lru::<u64>::new(usize::try_from(capacity.max(1))?)?;
    let mut misses = 0;
    for read in reads {
        let key = read.block as u64;
        if let Lookup::Miss(miss) = lru.lookup(key) {
            misses += 1;
            while lru.needs_room(&miss, BLOCK) && lru.evict(&miss, BLOCK).is_some() {}
            lru.insert(key, BLOCK, miss);
        }
    }
    Ok(misses)
}

/// Each node's disk slots (0 without a disk tier).
pub(crate) async fn disk_slots(nodes: &[Arc<NodeHandle>]) -> Result<Vec<u64>> {
    let mut out = Vec::with_capacity(nodes.len());
    for n in nodes {
        out.push(n.status().await?.disk_slots);
    }
    Ok(out)
}

/// The live protocol simulated over `reads`: the same block ids, the
/// same memory per node (LRU, N-Chance's n = 2 and seed 1, the
/// daemon's defaults) and, with `slots`, each node's disk slots.
pub(crate) fn simulate(
    algorithm: AlgorithmKind,
    nodes: u32,
    memory_blocks: u64,
    set: &WorkingSet,
    versions: &[Arc<FileVersion>],
    reads: &[Read],
    slots: Option<&[u64]>,
) -> Result<Levels> {
    let shape = LiveShape {
        capacity: usize::try_from(memory_blocks)?,
        policy: PolicyKind::Lru,
        chances: 2,
        seed: 1,
        classes: Default::default(),
    };
    let bs = u32::try_from(set.block_size)?;
    let mut sim = LiveCluster::new(algorithm, nodes, &shape, bs)?;
    for (node, &n) in slots.unwrap_or_default().iter().enumerate() {
        sim.set_disk(u32::try_from(node)?, u32::try_from(n)?);
    }
    let firsts: Vec<BlockId> = (set.names.iter().zip(versions))
        .map(|(name, v)| first_block(name, &v.version))
        .collect();
    let mut levels = Levels::default();
    for (i, read) in reads.iter().enumerate() {
        let (f, index) = set.locate(read.block);
        let block = BlockId { index, ..firsts[f] };
        let served = sim
            .read(u32::try_from(read.node)?, block)?
            .with_context(|| format!("simulated read {i} never completed"))?
            .map_err(|e| anyhow!("simulated read {i}: {e}"))?;
        levels.add(served.level);
    }
    Ok(levels)
}
