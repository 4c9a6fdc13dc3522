//! foyer's side: a `HybridCache` whose memory tier holds about one block
//! (so that reads come from the disk), over foyer's block engine (a
//! log-structured store of large regions, FIFO eviction of whole regions)
//! on an `FsDevice` with direct I/O. Entries are written when inserted
//! (`WriteOnInsertion`), as coopcache writes a block when it comes.

use crate::measure::{
    allocated_bytes, drop_page_cache, heap, io_write_bytes, io_write_calls_bytes,
};
use crate::{Reads, Side, Workload};
use anyhow::Result;
use foyer::{
    BlockEngineConfig, DeviceBuilder, FsDeviceBuilder, HybridCache, HybridCacheBuilder,
    HybridCachePolicy, Load, RecoverMode,
};
use std::path::Path;
use std::time::{Duration, Instant};

type Cache = HybridCache<u64, Vec<u8>>;

/// Inserts between two waits for foyer's flushers: its write queue drops
/// entries past 16 MiB queued (`submit_queue_size_threshold`), and a
/// node's writes are bounded on their way too (4 MiB, `DISK_WRITE_BYTES`).
const WAIT_EVERY: u64 = 32;

async fn open(w: &Workload, dir: &Path) -> Result<Cache> {
    let device = FsDeviceBuilder::new(dir)
        .with_capacity(w.device as usize)
        .with_direct(w.direct)
        .build()?;
    let engine = BlockEngineConfig::new(device).with_block_size(w.region);
    let cache = HybridCacheBuilder::new()
        .with_name("foyer-compare")
        .with_policy(HybridCachePolicy::WriteOnInsertion)
        .memory(w.block)
        .with_shards(1)
        .with_weighter(|_: &u64, v: &Vec<u8>| v.len())
        .storage()
        .with_engine_config(engine)
        .with_recover_mode(RecoverMode::Quiet)
        .build()
        .await?;
    Ok(cache)
}

/// Blocks of keys `0..keys` that foyer's index holds.
fn present(cache: &Cache, keys: u64) -> u64 {
    (0..keys)
        .filter(|k| cache.storage().may_contains(k))
        .count() as u64
}

/// Runs the workload on a device in `dir`, reading `sample`.
pub async fn run(w: &Workload, dir: &Path, sample: &[u64]) -> Result<Side> {
    std::fs::create_dir_all(dir)?;
    let (io0, calls0) = (io_write_bytes(), io_write_calls_bytes());
    let cache = open(w, dir).await?;
    let heap_open = heap();
    // The index's growth per block is measured between a quarter and
    // three quarters of the first pass (no eviction yet, buffers warm):
    // the heap growth over the whole run also counts foyer's buffers.
    let fits = w.device / w.block as u64;
    let (quarter, three_quarters) = (fits / 4, fits * 3 / 4);
    let mut marks = Vec::new();
    let mut writing = Duration::ZERO;
    for k in 0..w.blocks() {
        let data = w.data(k);
        let t = Instant::now();
        cache.insert(k, data);
        if k % WAIT_EVERY == WAIT_EVERY - 1 {
            cache.storage().wait().await;
        }
        writing += t.elapsed();
        if k == quarter || k == three_quarters {
            cache.storage().wait().await;
            marks.push((heap(), present(&cache, k + 1)));
        }
    }
    let t = Instant::now();
    cache.storage().wait().await;
    writing += t.elapsed();
    let device_write_bytes = io_write_bytes() - io0;
    let write_call_bytes = io_write_calls_bytes() - calls0;
    let present_blocks = present(&cache, w.blocks());
    let heap_per_block = (heap() - heap_open) as f64 / present_blocks as f64;
    let heap_slope = match marks[..] {
        [(h1, n1), (h2, n2)] if n2 > n1 => Some((h2 as f64 - h1 as f64) / (n2 - n1) as f64),
        _ => None,
    };

    let warm = read(&cache, sample, w.block).await?;
    let dropped = drop_page_cache();
    let cold = read(&cache, sample, w.block).await?;
    drop_page_cache();
    let concurrent = read_concurrent(&cache, sample, w).await?;

    cache.close().await?;
    drop(cache);
    drop_page_cache();
    let t = Instant::now();
    let cache = open(w, dir).await?;
    let recover_secs = t.elapsed().as_secs_f64();
    let recovered = present(&cache, w.blocks());
    let after_recovery = read(&cache, sample, w.block).await?;
    cache.close().await?;

    Ok(Side {
        write_secs: writing.as_secs_f64(),
        device_write_bytes,
        write_call_bytes,
        allocated_bytes: allocated_bytes(dir),
        present: present_blocks,
        heap_per_block,
        heap_slope,
        warm,
        cold: dropped.then_some(cold),
        concurrent: dropped.then_some(concurrent),
        recovered,
        recover_secs,
        after_recovery,
    })
}

/// One read from foyer's disk engine (`Store::load`: its index, a read of
/// the entry, its checksum check, the decoding), not through the memory
/// tier. Whether it was a hit of the whole block.
async fn read_one(cache: &Cache, k: u64, block: usize) -> Result<bool> {
    Ok(match cache.storage().load(&k).await? {
        Load::Entry { value, .. } => value.len() == block,
        Load::Piece { piece, .. } => piece.value().len() == block,
        Load::Throttled | Load::Miss => false,
    })
}

async fn read(cache: &Cache, sample: &[u64], block: usize) -> Result<Reads> {
    let mut latencies = Vec::with_capacity(sample.len());
    let mut hits = 0;
    for &k in sample {
        let t = Instant::now();
        let hit = read_one(cache, k, block).await?;
        latencies.push(t.elapsed());
        hits += usize::from(hit);
    }
    Ok(Reads::new(latencies, hits, block, None))
}

/// `w.threads` readers at once (tasks on the runtime's worker threads),
/// each a share of the sample.
async fn read_concurrent(cache: &Cache, sample: &[u64], w: &Workload) -> Result<Reads> {
    let chunk = sample.len().div_ceil(w.threads.max(1)).max(1);
    let t = Instant::now();
    let tasks: Vec<_> = sample
        .chunks(chunk)
        .map(|part| {
            let (cache, part, block) = (cache.clone(), part.to_vec(), w.block);
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(part.len());
                let mut hits = 0;
                for k in part {
                    let t = Instant::now();
                    let hit = read_one(&cache, k, block).await?;
                    latencies.push(t.elapsed());
                    hits += usize::from(hit);
                }
                anyhow::Ok((latencies, hits))
            })
        })
        .collect();
    let (mut latencies, mut hits) = (Vec::new(), 0);
    for task in tasks {
        let (l, h) = task.await??;
        latencies.extend(l);
        hits += h;
    }
    Ok(Reads::new(latencies, hits, w.block, Some(t.elapsed())))
}
