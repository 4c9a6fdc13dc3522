//! A node's disk tier (`--disk`, issue 43) through a real daemon: a file
//! larger than the node's memory is read back from the disk, not the
//! origin; a node restarted with the same directory serves what its disk
//! held without reading the origin again; slots whose bytes rotted while
//! it was down are read from the origin, never served. A disk that fails
//! (EIO) or fills up (ENOSPC) under a running node, or fails at its start,
//! leaves it memory alone: no reader sees an error.

use crate::common::*;
use crate::faultfs::{Fault, FaultMount};
use coopcache_core::coop::AlgorithmKind;
use coopcache_node::disk::DiskStore;
use coopcache_node::origin::Origin;
use coopcache_node::tls::Identity;
use coopcache_node::{NodeHandle, NodeOptions, start};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// 16 MiB in 64 KiB blocks: 256 blocks, four times what the node's
/// memory caches at 44 MiB (35 MiB of it reserved, 4 MiB for disk writes).
const FILE: usize = 16 << 20;
const BLOCKS: u64 = (FILE as u64) >> 16;

fn with_disk(opts: &mut NodeOptions, dir: &Path) {
    opts.algorithm = AlgorithmKind::Base;
    opts.memory = 44 << 20;
    opts.disk = vec![dir.to_path_buf()];
    opts.disk_size = 64 << 20;
}

/// A node of `c`'s keys and origin started again with the disk in `dir`
/// (the stopped one's store may take a moment to close: its lock).
async fn restart(c: &TestCluster, dir: &Path, private: bool) -> Arc<NodeHandle> {
    for _ in 0..50 {
        let identity = Identity::load(&c.keys, "node-0").unwrap();
        let origin = Origin::open(c.origin_dir.to_str().unwrap()).unwrap();
        let mut opts = NodeOptions::new(identity, "127.0.0.1:0".parse().unwrap(), origin);
        opts.attr_ttl = Duration::from_secs(60);
        with_disk(&mut opts, dir);
        opts.private = private;
        match start(opts).await {
            Ok(node) => return Arc::new(node),
            Err(e) if e.to_string().contains("in use") => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("restart: {e}"),
        }
    }
    panic!("the stopped node's disk store never closed");
}

async fn read_all(node: &Arc<NodeHandle>) {
    let got = node.read("big.bin", None).await.expect("read");
    assert!(got[..] == contents(1, FILE)[..], "wrong bytes");
}

async fn levels(node: &Arc<NodeHandle>) -> (u64, u64) {
    let s = node.status().await.unwrap();
    (s.origin_reads, s.reads.get("disk").copied().unwrap_or(0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_serves_what_memory_dropped_and_what_it_held_before_a_restart() {
    let disk = tempfile::tempdir().unwrap();
    let shape = Shape {
        nodes: 1,
        ..Shape::default()
    };
    let c = cluster_with(shape, &[("big.bin", FILE)], |o| with_disk(o, disk.path())).await;
    let node = c.nodes[0].clone();
    read_all(&node).await;
    assert_eq!(levels(&node).await, (BLOCKS, 0));
    // Its memory holds about a quarter of the file: the rest from disk.
    read_all(&node).await;
    let (origin, from_disk) = levels(&node).await;
    assert_eq!(origin, BLOCKS, "a block read from the origin again");
    assert!(from_disk > BLOCKS / 2, "{from_disk} blocks from the disk");

    // Restarted empty of memory, it reads its disk, not the origin.
    // (The cluster's handle stays, stopped: its driver and store go.)
    node.shutdown();
    let node = restart(&c, disk.path(), false).await;
    let s = node.status().await.unwrap();
    assert_eq!((s.disk_blocks, s.disk_writes), (BLOCKS, 0), "recovered");
    assert!(s.disk_slots >= BLOCKS, "{} slots", s.disk_slots);
    read_all(&node).await;
    assert_eq!(levels(&node).await, (0, BLOCKS));

    // Every slot's data rots while it is down: the origin, never the
    // rotten bytes.
    node.shutdown();
    drop(node);
    let dirs = [disk.path().to_path_buf()];
    let slot = {
        let mut opened = DiskStore::open(&dirs, 64 << 20, 64 << 10);
        for _ in 0..50 {
            if !matches!(opened, Err(coopcache_node::disk::DiskError::InUse { .. })) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            opened = DiskStore::open(&dirs, 64 << 20, 64 << 10);
        }
        let (store, found) = opened.unwrap();
        assert_eq!(found.len() as u64, BLOCKS, "recovered");
        store.slot_bytes() as usize
    };
    let file = disk.path().join(coopcache_node::disk::FILE_NAME);
    let mut bytes = std::fs::read(&file).unwrap();
    for s in 0..BLOCKS as usize {
        // Past the superblock (4 KiB) and the slot's header, in its data.
        bytes[4096 + s * slot + 1000] ^= 0xff;
    }
    std::fs::write(&file, &bytes).unwrap();
    let node = restart(&c, disk.path(), false).await;
    read_all(&node).await;
    let (origin, from_disk) = levels(&node).await;
    assert_eq!((origin, from_disk), (BLOCKS, 0));
    let s = node.status().await.unwrap();
    assert_eq!(s.integrity_failures, 0, "a rotten slot is not a peer's lie");
    // Each rotten slot failed once, and the origin's bytes replaced it.
    assert_eq!((s.disk_failures, s.disk_writes), (BLOCKS, BLOCKS));
}

/// A node whose disk tier is on `mount`, having read the file once (its
/// blocks written to the disk).
async fn on_faulty_disk(mount: &FaultMount) -> (TestCluster, Arc<NodeHandle>) {
    // Not opened again during the test (a minute away).
    on_faulty_disk_retried(mount, Duration::from_secs(60)).await
}

/// As [`on_faulty_disk`], the disk opened again `retry` after it is given
/// up.
async fn on_faulty_disk_retried(
    mount: &FaultMount,
    retry: Duration,
) -> (TestCluster, Arc<NodeHandle>) {
    let shape = Shape {
        nodes: 1,
        ..Shape::default()
    };
    let c = cluster_with(shape, &[("big.bin", FILE)], |o| {
        with_disk(o, &mount.dir);
        o.disk_retry = retry;
    })
    .await;
    let node = c.nodes[0].clone();
    // A megabyte at a time, each written before the next is read: read
    // at once, the file would outrun the fault layer's writes by more
    // than the writes in flight allowed, and some blocks would stay off
    // the disk (`disk_writes_skipped`).
    for at in (0..FILE as u64).step_by(1 << 20) {
        node.read("big.bin", Some(at..at + (1 << 20)))
            .await
            .unwrap();
        let mut quiet = false;
        for _ in 0..200 {
            quiet = node.status().await.unwrap().quiet;
            if quiet {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(quiet, "the node's writes never landed");
    }
    let s = node.status().await.unwrap();
    assert!(s.disk_slots >= BLOCKS, "{} slots", s.disk_slots);
    assert_eq!(
        (s.disk_writes, s.disk_failures),
        (BLOCKS, 0),
        "before the fault"
    );
    (c, node)
}

/// After `fault`, reads keep their bytes and the node gives its disk up.
async fn gives_the_disk_up(node: &Arc<NodeHandle>) {
    for _ in 0..2 {
        read_all(node).await;
    }
    let s = node.status().await.unwrap();
    assert_eq!(s.disk_slots, 0, "the tier was not given up");
    let failures = s.disk_failures + s.disk_write_failures;
    assert!(failures >= 16, "{failures} failures");
    assert!(
        s.origin_reads > BLOCKS,
        "the origin served what the disk could not"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_failing_with_eio_leaves_the_node_memory_alone_and_no_read_fails() {
    let Some(mount) = FaultMount::new() else {
        return;
    };
    let (_c, node) = on_faulty_disk(&mount).await;
    mount.set(Fault::Eio);
    gives_the_disk_up(&node).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_leaves_the_node_memory_alone_and_no_read_fails() {
    let Some(mount) = FaultMount::new() else {
        return;
    };
    let (c, node) = on_faulty_disk(&mount).await;
    mount.set(Fault::Full);
    // What the disk holds is still read; only new blocks fail to land.
    // Another file, so every read needs a write.
    std::fs::write(c.origin_dir.join("more.bin"), contents(2, FILE)).unwrap();
    let got = node.read("more.bin", None).await.expect("read");
    assert!(got[..] == contents(2, FILE)[..], "wrong bytes");
    gives_the_disk_up(&node).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_removed_under_a_running_node_comes_back_without_a_restart() {
    let Some(mount) = FaultMount::new() else {
        return;
    };
    let (_c, node) = on_faulty_disk_retried(&mount, Duration::from_millis(200)).await;
    mount.set(Fault::Gone);
    gives_the_disk_up(&node).await;
    // Tried again every 0.2, 0.4, 0.8 s...: not there.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let s = node.status().await.unwrap();
    assert_eq!((s.disk_slots, s.disk_reopened), (0, 0), "opened while gone");
    assert_eq!(s.disk_given_up, 1);
    // Plugged back: used again with what it held, the origin untouched.
    mount.set(Fault::None);
    let mut s = node.status().await.unwrap();
    for _ in 0..100 {
        if s.disk_slots > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        s = node.status().await.unwrap();
    }
    assert_eq!(s.disk_reopened, 1, "not opened again");
    assert_eq!(s.disk_blocks, BLOCKS, "what it held");
    let (origin, from_disk) = levels(&node).await;
    read_all(&node).await;
    let (origin_after, from_disk_after) = levels(&node).await;
    assert_eq!(origin_after, origin, "read from the origin again");
    assert!(
        from_disk_after - from_disk > BLOCKS / 2,
        "{} blocks from the disk",
        from_disk_after - from_disk
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_whose_disk_fails_at_start_starts_with_memory_alone() {
    let Some(mount) = FaultMount::new() else {
        return;
    };
    let (c, node) = on_faulty_disk(&mount).await;
    node.shutdown();
    drop(node);
    mount.set(Fault::Eio);
    let node = restart(&c, &mount.dir, false).await;
    read_all(&node).await;
    let s = node.status().await.unwrap();
    assert_eq!((s.disk_slots, s.origin_reads), (0, BLOCKS));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_origins_blocks_reach_the_disk_sealed_and_come_back_checked() {
    let disk = tempfile::tempdir().unwrap();
    let shape = Shape {
        nodes: 1,
        ..Shape::default()
    };
    let c = cluster_with(shape, &[("big.bin", FILE)], |o| {
        with_disk(o, disk.path());
        o.private = true;
    })
    .await;
    let node = c.nodes[0].clone();
    read_all(&node).await;
    read_all(&node).await;
    let (origin, from_disk) = levels(&node).await;
    assert_eq!(origin, BLOCKS, "a block read from the origin again");
    assert!(from_disk > BLOCKS / 2, "{from_disk} blocks from the disk");

    // Not one 64-byte run of the file is on the disk in the clear.
    let plain = contents(1, FILE);
    let stored = std::fs::read(disk.path().join(coopcache_node::disk::FILE_NAME)).unwrap();
    let runs: std::collections::HashSet<&[u8]> = stored.chunks(64).collect();
    let leaked = (0..FILE - 64)
        .step_by(4096)
        .filter(|&at| (0..64).any(|shift| runs.contains(&plain[at + shift..at + shift + 64])))
        .count();
    assert_eq!(
        leaked, 0,
        "{leaked} pages of the file found in the clear on disk"
    );

    // Its key and salt die with it: a restart recovers nothing to serve.
    node.shutdown();
    drop(node);
    let node = restart(&c, disk.path(), true).await;
    assert_eq!(node.status().await.unwrap().disk_blocks, 0, "recovered");
    read_all(&node).await;
    assert_eq!(levels(&node).await, (BLOCKS, 0));
}
