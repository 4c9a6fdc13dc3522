//! `coopcache bench mount --phases opens`: small files opened and read
//! whole through the mounts of a loopback cluster, as programs open their
//! configuration, code and data files, in three settings side by side:
//!
//! - `shared`: an open asks the origin for the file's version;
//! - `exclusive`: an open asks the file's manager, which serves the
//!   file's first block with its answer (one round trip for both,
//!   `coopcache_core::c2cfs::exclusive`);
//! - `exclusive, two round trips`: the same, the first block asked for
//!   after the answer (`NodeOptions::first_block_with_open` off), as
//!   before the first block was served with the answer.
//!
//! Each setting runs on a cluster of its own (three nodes, two mounted)
//! over the same origin directory; node 0's mount reads every file first,
//! so node 1's opens find them in a peer's memory and the managers' tables
//! filled. Settings alternate over the passes, so a load that comes and
//! goes touches each alike. Every byte is checked.

use super::common::{rng, write_origin_file, wrong_bytes};
use super::mount::MountBenchArgs;
use crate::loopback::{LoopbackSpec, shutdown, start_cluster};
use anyhow::{Context, Result};
use coopcache_mount::{Consistency, MountOptions};
use coopcache_node::NodeHandle;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The opens phase's knobs.
#[derive(clap::Args, Clone)]
pub(crate) struct OpensArgs {
    /// Opens phase: small files opened on each node.
    #[arg(long, default_value_t = 100)]
    pub(super) open_files: u32,
    /// Opens phase: the size of each.
    #[arg(long, default_value = "4KiB", value_parser = coopcache_console::args::parse_size)]
    open_size: u64,
    /// Opens phase: passes over the three settings.
    #[arg(long, default_value_t = 3)]
    pub(super) open_passes: u32,
}

/// A setting of the opens phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Setting {
    Shared,
    Exclusive,
    TwoTrips,
}

impl Setting {
    const ALL: [Setting; 3] = [Setting::Shared, Setting::Exclusive, Setting::TwoTrips];

    fn name(self) -> &'static str {
        match self {
            Setting::Shared => "shared",
            Setting::Exclusive => "exclusive",
            Setting::TwoTrips => "exclusive, two round trips",
        }
    }
}

/// One step of one setting in one pass.
#[derive(serde::Serialize)]
pub(crate) struct OpensRow {
    bench: &'static str,
    phase: &'static str,
    setting: &'static str,
    pass: u32,
    step: &'static str,
    files: u32,
    /// Time of one open, read whole and close, milliseconds.
    median_ms: f64,
    p90_ms: f64,
    /// Origin requests per open: names and attributes (lookups,
    /// `getattr`s), version questions (stats) and reads.
    origin_requests_per_open: f64,
    /// Messages between the nodes per open, pings aside.
    messages_per_open: f64,
    /// Blocks node 1 took from a peer, its own memory, the origin.
    peer_blocks: u64,
    local_blocks: u64,
    origin_blocks: u64,
    wrong_bytes: u64,
}

/// Runs the phase in `dir`: its rows, pass after pass.
pub(crate) async fn bench(
    args: &MountBenchArgs,
    opens: &OpensArgs,
    dir: &Path,
) -> Result<Vec<OpensRow>> {
    let origin = dir.join("origin");
    let mut files = Vec::new();
    let mut r = rng(args.seed.value, 7);
    for i in 0..opens.open_files {
        let name = format!("f{i:04}.txt");
        files.push((
            name.clone(),
            write_origin_file(&origin, &name, opens.open_size, &mut r)?,
        ));
    }
    let bar = super::common::Bar::new(u64::from(opens.open_passes) * 3, "settings");
    let mut rows = Vec::new();
    let mut run = 0;
    for pass in 1..=opens.open_passes {
        // Each pass starts with the next setting: none always goes first.
        for k in 0..3 {
            let setting = Setting::ALL[(k + pass as usize) % 3];
            run += 1;
            let at = dir.join(format!("run{run}"));
            rows.extend(one(args, setting, pass, &origin, &files, &at).await?);
            bar.inc();
        }
    }
    Ok(rows)
}

/// One setting on a cluster of its own.
async fn one(
    args: &MountBenchArgs,
    setting: Setting,
    pass: u32,
    origin: &Path,
    files: &[(String, Vec<u8>)],
    dir: &Path,
) -> Result<Vec<OpensRow>> {
    std::fs::create_dir_all(dir)?;
    let mut spec = LoopbackSpec::new(dir, 3, origin.to_path_buf())?;
    spec.origin_delay = args.origin_delay;
    // Close-to-open on every open, as `coopcache mount` by default.
    spec.attr_ttl = Duration::ZERO;
    // The members do not change once the cluster formed: managers answer
    // at once instead of 5 s later.
    spec.commit_stable = Some(Duration::ZERO);
    spec.first_block_with_open = setting != Setting::TwoTrips;
    let nodes = start_cluster(&spec, &[64 << 20; 3]).await?;
    let consistency = match setting {
        Setting::Shared => Consistency::Shared,
        _ => Consistency::Exclusive,
    };
    let opts = MountOptions {
        attr_ttl: Duration::from_secs(1),
        allow_other: false,
        consistency,
    };
    let mut mounts = Vec::new();
    for (i, node) in nodes.iter().take(2).enumerate() {
        let at = dir.join(format!("mnt{i}"));
        std::fs::create_dir_all(&at)?;
        let rt = tokio::runtime::Handle::current();
        let m = coopcache_mount::mount(&at, node.clone(), rt, &opts)
            .with_context(|| format!("mounting node {i} (root and /dev/fuse needed)"))?;
        mounts.push(m);
    }
    let result = async {
        let (m0, m1) = (mounts[0].dir(), mounts[1].dir());
        read_all(&nodes, m0, files).await?;
        let mut rows = Vec::new();
        for step in ["first open on a node", "reopen"] {
            let (times, c) = read_all(&nodes, m1, files).await?;
            rows.push(row(setting, pass, step, files.len() as u32, &times, &c));
        }
        Ok(rows)
    }
    .await;
    for m in mounts {
        let _ = tokio::task::spawn_blocking(move || m.unmount()).await;
    }
    shutdown(&nodes);
    result
}

/// What the cluster did during a step.
#[derive(Default)]
struct Moved {
    origin_requests: u64,
    messages: u64,
    peer: u64,
    local: u64,
    origin: u64,
    wrong: u64,
}

/// Reads every file whole through the mount at `dir`, one after another:
/// each one's seconds, and what the cluster did meanwhile.
async fn read_all(
    nodes: &[Arc<NodeHandle>],
    dir: &Path,
    files: &[(String, Vec<u8>)],
) -> Result<(Vec<f64>, Moved)> {
    let before = totals(nodes).await?;
    let (times, wrong) = tokio::task::block_in_place(|| {
        let mut times = Vec::with_capacity(files.len());
        let mut wrong = 0;
        for (name, want) in files {
            let path = dir.join(name);
            let t = Instant::now();
            let got =
                std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            times.push(t.elapsed().as_secs_f64());
            wrong += wrong_bytes(&got, want);
        }
        anyhow::Ok((times, wrong))
    })?;
    let after = totals(nodes).await?;
    let d = |f: fn(&Moved) -> u64| f(&after) - f(&before);
    let moved = Moved {
        origin_requests: d(|m| m.origin_requests),
        messages: d(|m| m.messages),
        peer: d(|m| m.peer),
        local: d(|m| m.local),
        origin: d(|m| m.origin),
        wrong,
    };
    Ok((times, moved))
}

/// The cluster's counters now (block levels: node 1's, where the opens
/// are measured; node 0's warm-up reads are before the first snapshot).
async fn totals(nodes: &[Arc<NodeHandle>]) -> Result<Moved> {
    let mut m = Moved::default();
    for (i, node) in nodes.iter().enumerate() {
        let s = node.status().await?;
        m.origin_requests += s.origin_stats + s.origin_requests + s.origin_metadata;
        m.messages += s.sent.values().sum::<u64>();
        if i == 1 {
            let at = |l: &str| s.reads.get(l).copied().unwrap_or(0);
            m.peer += at("peer") + at("manager");
            m.local += at("local");
            m.origin += at("origin");
        }
    }
    Ok(m)
}

fn row(
    setting: Setting,
    pass: u32,
    step: &'static str,
    files: u32,
    times: &[f64],
    c: &Moved,
) -> OpensRow {
    let mut ms: Vec<f64> = times.iter().map(|t| t * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    let per = |n: u64| n as f64 / f64::from(files.max(1));
    OpensRow {
        bench: "mount",
        phase: "opens",
        setting: setting.name(),
        pass,
        step,
        files,
        median_ms: super::common::median(&ms),
        p90_ms: ms.get(ms.len() * 9 / 10).copied().unwrap_or(0.0),
        origin_requests_per_open: per(c.origin_requests),
        messages_per_open: per(c.messages),
        peer_blocks: c.peer,
        local_blocks: c.local,
        origin_blocks: c.origin,
        wrong_bytes: c.wrong,
    }
}

/// The rows as a table, and the medians over the passes of each setting
/// and step.
pub(crate) fn table(rows: &[OpensRow]) {
    println!(
        "\n{:<27} {:<21} {:>4} {:>9} {:>9} {:>14} {:>12} {:>5} {:>5} {:>6}",
        "setting",
        "step",
        "pass",
        "median ms",
        "p90 ms",
        "origin req/open",
        "msgs/open",
        "peer",
        "local",
        "origin"
    );
    for r in rows {
        println!(
            "{:<27} {:<21} {:>4} {:>9.3} {:>9.3} {:>14.2} {:>12.2} {:>5} {:>5} {:>6}",
            r.setting,
            r.step,
            r.pass,
            r.median_ms,
            r.p90_ms,
            r.origin_requests_per_open,
            r.messages_per_open,
            r.peer_blocks,
            r.local_blocks,
            r.origin_blocks
        );
    }
    println!("\nmedian of the passes' medians (ms per open, read and close):");
    for setting in Setting::ALL {
        for step in ["first open on a node", "reopen"] {
            let of: Vec<f64> = rows
                .iter()
                .filter(|r| r.setting == setting.name() && r.step == step)
                .map(|r| r.median_ms)
                .collect();
            if !of.is_empty() {
                println!(
                    "  {:<27} {:<21} {:>9.3}",
                    setting.name(),
                    step,
                    super::common::median(&of)
                );
            }
        }
    }
}

/// Bytes that differed from the origin's, in all the rows.
pub(crate) fn wrong(rows: &[OpensRow]) -> u64 {
    rows.iter().map(|r| r.wrong_bytes).sum()
}
