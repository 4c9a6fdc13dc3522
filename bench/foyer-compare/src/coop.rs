//! coopcache's side: the node's store (`DiskStore`, slots in one
//! preallocated file) driven by the core's index (`DiskTier`), as the
//! daemon drives them: the core places a block in a slot, the store writes
//! it, the core is told; a read is a lookup, a `pread`, a BLAKE3 check.

use crate::measure::{
    allocated_bytes, drop_page_cache, heap, io_write_bytes, io_write_calls_bytes,
};
use crate::{Reads, Side, Workload};
use anyhow::{Context, Result};
use coopcache_core::protocol::{BlockId, Digest, DiskSettings, DiskTier};
use coopcache_node::disk::{DiskStore, FILE_NAME};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The block id of workload key `k`: files of 64 blocks, as a file's
/// blocks come.
fn block_id(k: u64) -> BlockId {
    BlockId::new(k / 64 + 1, (k % 64) as u32)
}

/// Slots a store of the workload's size has: what it holds at most.
pub fn slots(w: &Workload, scratch: &Path) -> Result<u64> {
    std::fs::create_dir_all(scratch)?;
    let (store, _) = DiskStore::open(&[scratch.to_path_buf()], w.device, w.block as u32)?;
    let slots = store.slots();
    drop(store);
    std::fs::remove_dir_all(scratch)?;
    Ok(u64::from(slots))
}

/// Runs the workload on a store in `dir`, reading `sample`.
pub fn run(w: &Workload, dir: &Path, sample: &[u64]) -> Result<Side> {
    std::fs::create_dir_all(dir)?;
    let dirs = [dir.to_path_buf()];
    let (io0, calls0) = (io_write_bytes(), io_write_calls_bytes());
    let (store, _) = DiskStore::open(&dirs, w.device, w.block as u32)?;
    let file = std::fs::File::open(dir.join(FILE_NAME))?;
    let mut unsynced = 0;
    let heap0 = heap();
    let mut tier = DiskTier::<BlockId>::new(DiskSettings::unbounded(store.slots()));
    let mut writing = Duration::ZERO;
    for k in 0..w.blocks() {
        let data = w.data(k);
        // A node has the digest before it writes (the block was checked
        // when it came): not the store's time.
        let hash = *blake3::hash(&data).as_bytes();
        let digest = Digest {
            hash,
            len: data.len() as u32,
        };
        let t = Instant::now();
        let block = block_id(k);
        let slot = tier.place(block, digest).context("a slot for each block")?;
        store.write(slot, block, &hash, &data)?;
        tier.written(block, slot, true);
        // The store never syncs, the kernel writes back later. A node's
        // writes come at the pace of its reads, each written back before
        // its slot is reused; the bench writes 2 GiB in seconds, so its
        // page cache would take a slot's second write over the first and
        // the device see it once. Syncing every `sync_every` bytes gives
        // the device every write, and puts the device's time in the
        // write time, as foyer's direct writes do.
        unsynced += data.len() as u64;
        if w.sync_every > 0 && unsynced >= w.sync_every {
            file.sync_data()?;
            unsynced = 0;
        }
        writing += t.elapsed();
    }
    let t = Instant::now();
    file.sync_all()?;
    writing += t.elapsed();
    let device_write_bytes = io_write_bytes() - io0;
    let write_call_bytes = io_write_calls_bytes() - calls0;
    let present = tier.len() as u64;
    let heap_per_block = (heap() - heap0) as f64 / present as f64;

    let warm = read(&store, &mut tier, sample, w.block)?;
    let dropped = drop_page_cache();
    let cold = read(&store, &mut tier, sample, w.block)?;
    drop_page_cache();
    let concurrent = read_concurrent(&store, &mut tier, sample, w)?;

    // Recovery: the process drops the engine (as a node stopping does),
    // then opens the same directory again, cold.
    drop(tier);
    drop(store);
    drop_page_cache();
    let t = Instant::now();
    let (store, found) = DiskStore::open(&dirs, w.device, w.block as u32)?;
    let mut tier = DiskTier::<BlockId>::new(DiskSettings::unbounded(store.slots()));
    let recovered = found
        .iter()
        .filter(|r| {
            let digest = Digest {
                hash: r.hash,
                len: r.len,
            };
            tier.recover(r.block, r.slot, digest)
        })
        .count() as u64;
    let recover_secs = t.elapsed().as_secs_f64();
    let after_recovery = read(&store, &mut tier, sample, w.block)?;

    Ok(Side {
        write_secs: writing.as_secs_f64(),
        device_write_bytes,
        write_call_bytes,
        allocated_bytes: allocated_bytes(dir),
        present,
        heap_per_block,
        heap_slope: None,
        warm,
        cold: dropped.then_some(cold),
        concurrent: dropped.then_some(concurrent),
        recovered,
        recover_secs,
        after_recovery,
    })
}

/// One block read as a node reads it: the core's lookup, the store's
/// `pread` of the slot, the BLAKE3 check of the data against the digest
/// (the store leaves it to the caller: a torn write passes the header's
/// checksum). Whether it was a hit.
fn read_one(store: &DiskStore, block: BlockId, slot: u32, digest: &Digest) -> Result<bool> {
    Ok(match store.read(slot, block)? {
        Some((data, _)) => blake3::hash(&data).as_bytes() == &digest.hash,
        None => false,
    })
}

fn read(
    store: &DiskStore,
    tier: &mut DiskTier<BlockId>,
    sample: &[u64],
    block: usize,
) -> Result<Reads> {
    let mut latencies = Vec::with_capacity(sample.len());
    let mut hits = 0;
    for &k in sample {
        let t = Instant::now();
        let id = block_id(k);
        let hit = match tier.lookup(id) {
            Some((slot, digest)) => read_one(store, id, slot, &digest)?,
            None => false,
        };
        latencies.push(t.elapsed());
        hits += usize::from(hit);
    }
    Ok(Reads::new(latencies, hits, block, None))
}

/// `w.threads` readers at once, each a share of the sample. The lookups
/// are done first: the core is one thread in a node, the reads are the
/// blocking pool's.
fn read_concurrent(
    store: &DiskStore,
    tier: &mut DiskTier<BlockId>,
    sample: &[u64],
    w: &Workload,
) -> Result<Reads> {
    let found: Vec<_> = sample
        .iter()
        .map(|&k| (block_id(k), tier.lookup(block_id(k))))
        .collect();
    let chunk = found.len().div_ceil(w.threads.max(1)).max(1);
    let t = Instant::now();
    let results: Vec<Result<(Vec<Duration>, usize)>> = std::thread::scope(|s| {
        let handles: Vec<_> = found
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    let mut latencies = Vec::with_capacity(part.len());
                    let mut hits = 0;
                    for (block, at) in part {
                        let t = Instant::now();
                        let hit = match at {
                            Some((slot, digest)) => read_one(store, *block, *slot, digest)?,
                            None => false,
                        };
                        latencies.push(t.elapsed());
                        hits += usize::from(hit);
                    }
                    Ok((latencies, hits))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let wall = t.elapsed();
    let (mut latencies, mut hits) = (Vec::new(), 0);
    for r in results {
        let (l, h) = r?;
        latencies.extend(l);
        hits += h;
    }
    Ok(Reads::new(latencies, hits, w.block, Some(wall)))
}

/// The directory of the store in `root`.
pub fn dir(root: &Path) -> PathBuf {
    root.join("coopcache")
}
