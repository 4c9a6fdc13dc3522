//! `coopcache bench disk`'s two probes: what a local disk hit costs
//! against a peer's memory hit, and what the disk tier's index costs in
//! memory per block against what the budget charges for it
//! ([`DISK_ENTRY_BYTES`]).

use crate::disk_replay::{Read, WorkingSet, replay, start_again};
use crate::loopback::{LoopbackSpec, shutdown};
use crate::measure::quantile_us;
use anyhow::{Context, Result};
use coopcache_core::coop::{AlgorithmKind, Level};
use coopcache_core::protocol::{DISK_ENTRY_BYTES, Digest, DiskSettings, DiskTier};
use coopcache_node::NodeHandle;
use coopcache_node::block::BlockId;
use coopcache_node::origin::FileVersion;
use rand::seq::SliceRandom;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Timed single-block reads from one source.
#[derive(serde::Serialize)]
pub(crate) struct Latency {
    pub(crate) bench: &'static str,
    pub(crate) kind: &'static str,
    /// `local disk` or `peer memory`.
    pub(crate) source: &'static str,
    /// For disk hits: `warm` (the store's pages were in the page cache, as
    /// they usually are: the file is not opened with O_DIRECT) or
    /// `dropped` (after `echo 1 > /proc/sys/vm/drop_caches`).
    pub(crate) page_cache: &'static str,
    pub(crate) block_size: u64,
    pub(crate) samples: u64,
    /// Reads served from another level than the one measured (not timed).
    pub(crate) other_level: u64,
    pub(crate) median_us: f64,
    pub(crate) p99_us: f64,
    pub(crate) wrong_bytes: u64,
}

/// What the disk index of `slots` slots costs in memory.
#[derive(serde::Serialize)]
pub(crate) struct Index {
    pub(crate) bench: &'static str,
    pub(crate) kind: &'static str,
    pub(crate) slots: u32,
    /// What the budget charges per slot.
    pub(crate) entry_bytes: u64,
    /// Live heap per slot of the empty index, and of the index with every
    /// slot holding a block (the allocator's count; `None` if the binary's
    /// allocator cannot say).
    pub(crate) heap_bytes_per_slot_empty: Option<f64>,
    pub(crate) heap_bytes_per_block: Option<f64>,
    /// Resident memory per block of the full index (`/proc/self/statm`).
    pub(crate) resident_bytes_per_block: Option<f64>,
    /// The larger measured figure is at most `entry_bytes`.
    pub(crate) within_entry_bytes: bool,
}

/// Median and 99th percentile of `latencies`, in milliseconds.
pub(crate) fn median_p99_ms(latencies: &[Duration]) -> (f64, f64) {
    let mut sorted = latencies.to_vec();
    sorted.sort();
    (
        quantile_us(&sorted, 0.5) / 1e3,
        quantile_us(&sorted, 0.99) / 1e3,
    )
}

/// The benchmark's measure of the process's live heap: the binary's
/// allocator's count, if it gave one ([`crate::set_heap_meter`]).
pub(crate) static HEAP_METER: OnceLock<fn() -> Option<u64>> = OnceLock::new();

fn heap() -> Option<u64> {
    HEAP_METER.get().and_then(|meter| meter())
}

/// Resident bytes of this process, once the allocator has had time to
/// give freed pages back (the binary's jemalloc does within 100 ms).
fn resident() -> Option<u64> {
    std::thread::sleep(Duration::from_millis(300));
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * rustix::param::page_size() as u64)
}

/// Builds the index a node with `slots` disk slots keeps (the core's
/// [`DiskTier`], what `NodeProtocol::set_disk` makes) and fills every
/// slot as a running node does (a place, then the driver's write
/// acknowledged), measuring the memory it takes.
pub(crate) fn index_cost(slots: u32) -> Result<Index> {
    let slots = slots.max(1);
    let (heap0, rss0) = (heap(), resident());
    let mut tier: DiskTier<BlockId> = DiskTier::new(DiskSettings::unbounded(slots));
    let heap_empty = heap();
    for i in 0..slots {
        // Blocks of 64-block files, as a file's blocks come.
        let file = coopcache_core::policy::splitmix64(&mut u64::from(i / 64));
        let block = BlockId::new(file, i % 64);
        let digest = Digest {
            hash: [i as u8; 32],
            len: 64 << 10,
        };
        let slot = tier
            .place(block, digest)
            .context("a free slot for each block")?;
        tier.written(block, slot, true);
    }
    let (heap_full, rss_full) = (heap(), resident());
    let per = |after: Option<u64>, before: Option<u64>| {
        Some(after?.saturating_sub(before?) as f64 / f64::from(slots))
    };
    let heap_bytes_per_block = per(heap_full, heap0);
    let resident_bytes_per_block = per(rss_full, rss0);
    let worst = heap_bytes_per_block
        .into_iter()
        .chain(resident_bytes_per_block);
    let within = worst.fold(0.0, f64::max) <= DISK_ENTRY_BYTES as f64;
    drop(tier);
    Ok(Index {
        bench: "disk",
        kind: "index",
        slots,
        entry_bytes: DISK_ENTRY_BYTES,
        heap_bytes_per_slot_empty: per(heap_empty, heap0),
        heap_bytes_per_block,
        resident_bytes_per_block,
        within_entry_bytes: within,
    })
}

/// Timed single-block reads on one node of the run's clusters.
pub(crate) struct Probe<'a> {
    /// The run's spec, its disk tier set: node 0 is started again on its
    /// disk directory, then two nodes without one.
    pub(crate) spec: &'a mut LoopbackSpec,
    pub(crate) set: &'a WorkingSet,
    pub(crate) memory_blocks: u64,
    pub(crate) samples: usize,
    /// Also time disk hits with the page cache dropped, if root.
    pub(crate) drop_caches: bool,
    pub(crate) seed: u64,
}

/// Reads timed at one level.
#[derive(Default)]
struct Sampled {
    latencies: Vec<Duration>,
    other_level: u64,
    wrong: u64,
}

impl Probe<'_> {
    pub(crate) async fn latencies(mut self) -> Result<Vec<Latency>> {
        let mut out = self.disk_hits().await?;
        out.push(self.peer_hits().await?);
        Ok(out)
    }

    fn cache(&self) -> u64 {
        self.memory_blocks * self.set.block_size
    }

    /// Every block of the working set, in an order of the run's seed.
    fn shuffled(&self) -> Vec<usize> {
        let mut all: Vec<usize> = (0..self.set.blocks()).collect();
        all.shuffle(&mut crate::common::rng(self.seed, 4));
        all
    }

    fn latency(&self, source: &'static str, page_cache: &'static str, s: &Sampled) -> Latency {
        let mut sorted = s.latencies.clone();
        sorted.sort();
        Latency {
            bench: "disk",
            kind: "latency",
            source,
            page_cache,
            block_size: self.set.block_size,
            samples: s.latencies.len() as u64,
            other_level: s.other_level,
            median_us: quantile_us(&sorted, 0.5),
            p99_us: quantile_us(&sorted, 0.99),
            wrong_bytes: s.wrong,
        }
    }

    /// Node 0 alone, started again on its disk: its memory is empty, so
    /// every block its disk kept from the runs before is a disk hit (each
    /// block read once; those it did not keep go to the origin, untimed).
    async fn disk_hits(&self) -> Result<Vec<Latency>> {
        eprintln!("local disk hits on node 0 started again ...");
        let nodes = start_again(self.spec, &[self.cache()]).await?;
        let result = async {
            let versions = self.set.versions(&nodes[0]).await?;
            let mut blocks = self.shuffled().into_iter();
            let is_disk = |l: Level| l == Level::LocalDisk;
            let mut out = Vec::new();
            for page_cache in ["warm", "dropped"] {
                if page_cache == "dropped" {
                    if !(self.drop_caches && is_root()) {
                        break;
                    }
                    // Dirty pages are written first: only clean ones are
                    // dropped.
                    rustix::fs::sync();
                    std::fs::write("/proc/sys/vm/drop_caches", "1\n")
                        .context("dropping the page cache")?;
                }
                let s = sample(
                    &nodes,
                    self.set,
                    &versions,
                    &mut blocks,
                    self.samples,
                    is_disk,
                )
                .await?;
                out.push(self.latency("local disk", page_cache, &s));
            }
            anyhow::Ok(out)
        }
        .await;
        shutdown(&nodes);
        result
    }

    /// Two nodes without a disk: node 1 reads a batch of blocks into its
    /// memory, then node 0 reads them from there. N-Chance whatever the
    /// run's algorithm: Base never reads a peer's memory.
    async fn peer_hits(&mut self) -> Result<Latency> {
        eprintln!("peer memory hits on two nodes without a disk (nchance) ...");
        self.spec.disk_dir = None;
        self.spec.disk_size = 0;
        self.spec.algorithm = AlgorithmKind::NChance;
        let nodes = start_again(self.spec, &[self.cache(); 2]).await?;
        let result = async {
            let versions = self.set.versions(&nodes[0]).await?;
            // Half of node 1's memory a batch, so that none of a batch is
            // evicted before node 0 reads it.
            let batch = usize::try_from(self.memory_blocks / 2)?.max(1);
            let mut all = Sampled::default();
            for chunk in self.shuffled().chunks(batch) {
                let want = self.samples.saturating_sub(all.latencies.len());
                if want == 0 {
                    break;
                }
                let fill: Vec<Read> = chunk.iter().map(|&block| Read { node: 1, block }).collect();
                all.wrong += replay(&nodes, self.set, &versions, &fill, || {})
                    .await?
                    .wrong;
                let from_peer = |l: Level| matches!(l, Level::RemoteNode | Level::ManagerMemory);
                let mut blocks = chunk.iter().copied();
                let s = sample(&nodes, self.set, &versions, &mut blocks, want, from_peer).await?;
                all.latencies.extend(s.latencies);
                all.other_level += s.other_level;
                all.wrong += s.wrong;
            }
            anyhow::Ok(self.latency("peer memory", "-", &all))
        }
        .await;
        shutdown(&nodes);
        result
    }
}

/// Node 0 reads blocks from `blocks`, one at a time with the cluster
/// quiet, until `want` of them were served at a level `timed` takes.
async fn sample(
    nodes: &[Arc<NodeHandle>],
    set: &WorkingSet,
    versions: &[Arc<FileVersion>],
    blocks: &mut impl Iterator<Item = usize>,
    want: usize,
    timed: impl Fn(Level) -> bool,
) -> Result<Sampled> {
    let mut s = Sampled::default();
    coopcache_node::quiescence::quiescence(nodes, Duration::from_secs(10)).await?;
    while s.latencies.len() < want {
        let Some(block) = blocks.next() else { break };
        let r = replay(nodes, set, versions, &[Read { node: 0, block }], || {}).await?;
        s.wrong += r.wrong;
        match (r.levels.first(), r.latencies.first()) {
            (Some(&l), Some(&t)) if timed(l) => s.latencies.push(t),
            _ => s.other_level += 1,
        }
    }
    Ok(s)
}

/// Whether this process runs as root (its effective uid, from
/// `/proc/self/status`): only root may drop the page cache.
fn is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        == Some("0")
}
