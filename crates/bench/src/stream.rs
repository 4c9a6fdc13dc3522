//! `coopcache bench stream`: one node reads a large file held in a peer's
//! memory, through the library (`NodeHandle::stream`) and through its HTTP
//! gateway, next to the same file read from the holder's own memory (a
//! local hit), one TCP stream between two threads and one link of the
//! cluster's own TLS between two threads, all in one run.
//!
//! Two baselines, because they answer two questions: the share of a TCP
//! stream is what a user compares with (the target), and it moves
//! with the machine's CPU (encryption and hashing against copying: one TCP
//! stream ran at 2.4-3.6 GB/s on the machines of 2026-11 and 5.4 GB/s on
//! 2026-12-04's, where a peer stream ran at 1.0 GB/s on both); the share of
//! one TLS link, which pays the same encryption and hashing, is what
//! coopcache's own code costs on top, and what the performance guard
//! judges.
//!
//! Two nodes, on the multi-threaded runtime the daemon runs on (or each
//! on a thread of its own, `--runtime per-node`): the holder reads the
//! whole file first, so its memory
//! holds every block; the reader's cache is the least the budget allows,
//! so every block it reads is a peer hit (Greedy Forwarding: its manager
//! forwards the read to the holder). Every byte read is compared with the
//! origin's; each figure is the median of `--reps` passes.

use crate::ceiling;
use crate::latency::Layout;
use crate::loopback::{LoopbackSpec, NodeThread, start_cluster, start_cluster_threaded, totals};
use anyhow::{Context, Result, bail};
use coopcache_console::args::ReportArgs;
use coopcache_console::args::parse_size;
use coopcache_console::tasks::in_tempdir;
use coopcache_core::coop::{AlgorithmKind, Level};
use coopcache_node::NodeHandle;
use futures::StreamExt;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const FILE: &str = "stream.bin";
/// The reader's cache, in blocks: small against the file (so each pass
/// misses it and reads from the holder) but large enough for a stream's
/// full read-ahead, which reads at most half its node's cache ahead.
const READER_CACHE_BLOCKS: u64 = 128;

#[derive(clap::Args)]
pub struct StreamArgs {
    /// Size of the file read.
    #[arg(long, default_value = "1GiB", value_parser = parse_size)]
    size: u64,
    /// Block size.
    #[arg(long, default_value = "64KiB", value_parser = parse_size)]
    block_size: u64,
    /// Passes of each measurement; figures are their medians.
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Where the nodes run: `shared` (the default) runs both on one
    /// multi-threaded runtime, the runtime `coopcache node` runs on, so a
    /// node's link tasks and its driver can use several cores; `per-node`
    /// gives each node one thread of its own.
    #[arg(long, value_enum, default_value = "shared")]
    runtime: Layout,
    #[command(flatten)]
    report: ReportArgs,
}

/// One way of reading the file: its passes' throughputs.
#[derive(serde::Serialize)]
pub(crate) struct Row {
    /// What read the file.
    pub path: &'static str,
    /// Median throughput, GB/s (10^9 bytes).
    pub gb_s: f64,
    /// Every pass, GB/s.
    pub passes: Vec<f64>,
    /// Median over the TCP stream's median.
    pub of_tcp: f64,
    /// Median over the TLS link's median.
    pub of_tls: f64,
}

#[derive(serde::Serialize)]
pub(crate) struct Report {
    pub runtime: Layout,
    pub size: u64,
    pub block_size: u64,
    pub rows: Vec<Row>,
    /// The reader's block reads by level over all passes (local,
    /// manager, peer, origin): every one a peer hit.
    pub reader_levels: [u64; Level::ALL.len()],
    pub integrity_failures: u64,
    pub timeouts: u64,
    /// The target: peer reads through the gateway and the library
    /// at >= 50% of one TCP stream.
    pub target_met: bool,
}

pub(crate) fn run(args: StreamArgs) -> Result<()> {
    if args.reps == 0 {
        bail!("--reps must be at least 1");
    }
    let bs = args.block_size;
    if !(512..=(4 << 20)).contains(&bs) || !bs.is_power_of_two() {
        bail!("--block-size {bs}: expected a power of two from 512 B to 4 MiB");
    }
    if args.size < 2 * READER_CACHE_BLOCKS * bs {
        bail!(
            "--size must be at least {} bytes (twice the reader's cache), so reads miss locally",
            2 * READER_CACHE_BLOCKS * bs
        );
    }
    let a = &args;
    let report = in_tempdir("coopcache-bench-stream-", |dir| async move {
        bench(a, &dir).await
    })?;
    if args.report.json {
        coopcache_console::output::print_json([&report])?;
    } else {
        print(&report);
    }
    if let Some(dir) = &args.report.plot {
        plot(dir, &report)?;
        eprintln!("plot: {}", dir.join("stream-throughput.png").display());
    }
    Ok(())
}

async fn bench(args: &StreamArgs, dir: &Path) -> Result<Report> {
    let origin = dir.join("origin");
    std::fs::create_dir_all(&origin)?;
    eprintln!("writing a {} MiB file ...", args.size >> 20);
    let mut data = vec![0u8; args.size as usize];
    Pcg64Mcg::seed_from_u64(11).fill(&mut data[..]);
    std::fs::write(origin.join(FILE), &data)?;
    let data = Arc::new(data);
    let mut spec = LoopbackSpec::new(dir, 2, origin)?;
    spec.algorithm = AlgorithmKind::Greedy;
    spec.block_size = args.block_size as u32;
    let bs = args.block_size;
    let caches = [READER_CACHE_BLOCKS * bs, args.size + 64 * bs];
    let nodes = match args.runtime {
        Layout::PerNode => start_cluster_threaded(&spec, &caches).await?,
        Layout::Shared => start_cluster(&spec, &caches)
            .await?
            .into_iter()
            .map(|node| NodeThread::here(node, tokio::runtime::Handle::current()))
            .collect(),
    };
    let (reader, holder) = (&nodes[0], &nodes[1]);
    eprintln!("priming the holder ...");
    library_pass(holder, &data).await?;
    let gateway = start_gateway(reader).await?;
    let before = reader.node.status().await?.reads;
    let mut passes: [Vec<f64>; 5] = Default::default();
    for rep in 0..args.reps {
        let pass = format!("pass {} of {}", rep + 1, args.reps);
        eprintln!("{pass}: one TCP stream ...");
        let tcp = ceiling::stream_between_threads(Duration::from_secs(1)).await?;
        passes[0].push(tcp);
        eprintln!("{pass}: one link of the cluster's TLS ...");
        let second = Duration::from_secs(1);
        passes[1].push(ceiling::tls_link_between_threads(dir, second, bs as usize).await?);
        eprintln!("{pass}: local hits at the holder ...");
        passes[2].push(library_pass(holder, &data).await?);
        eprintln!("{pass}: peer hits through the library ...");
        passes[3].push(library_pass(reader, &data).await?);
        eprintln!("{pass}: peer hits through the gateway ...");
        passes[4].push(gateway_pass(gateway, args.size, &data).await?);
    }
    let after = reader.node.status().await?.reads;
    let level = |l: Level| {
        let name = coopcache_node::metrics::level_name(l);
        after.get(name).copied().unwrap_or(0) - before.get(name).copied().unwrap_or(0)
    };
    let reader_levels = Level::ALL.map(level);
    let handles: Vec<Arc<NodeHandle>> = nodes.iter().map(|n| n.node.clone()).collect();
    let t = totals(&handles).await?;
    drop(nodes);
    let names = [
        "one TCP stream",
        "one TLS link (BLAKE3 on receipt)",
        "local hit (holder, library)",
        "peer hit, library",
        "peer hit, HTTP gateway",
    ];
    let tcp = median(&passes[0]);
    let tls = median(&passes[1]);
    let rows: Vec<Row> = names
        .iter()
        .zip(passes)
        .map(|(&path, passes)| {
            let gb_s = median(&passes);
            Row {
                path,
                gb_s,
                passes,
                of_tcp: gb_s / tcp,
                of_tls: gb_s / tls,
            }
        })
        .collect();
    let target_met = rows[3].of_tcp >= 0.5 && rows[4].of_tcp >= 0.5;
    Ok(Report {
        runtime: args.runtime,
        size: args.size,
        block_size: args.block_size,
        rows,
        reader_levels,
        integrity_failures: t.integrity_failures,
        timeouts: t.timeouts,
        target_met,
    })
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(s.len() / 2).copied().unwrap_or(0.0)
}

/// Reads the whole file through `node`'s library API, on the node's own
/// runtime (a local client), checking every byte: GB/s.
async fn library_pass(node: &NodeThread, data: &Arc<Vec<u8>>) -> Result<f64> {
    let (handle, data) = (node.node.clone(), data.clone());
    let task = node.runtime.spawn(async move {
        let version = handle.stat(FILE).await?;
        let start = Instant::now();
        let mut stream = std::pin::pin!(handle.stream(Arc::from(FILE), version, 0..u64::MAX));
        let mut at = 0usize;
        while let Some(part) = stream.next().await {
            let part = part?;
            if part[..] != data[at..at + part.len()] {
                bail!("library read: wrong bytes at offset {at}");
            }
            at += part.len();
        }
        if at != data.len() {
            bail!("library read: {at} bytes of {}", data.len());
        }
        Ok(at as f64 / start.elapsed().as_secs_f64() / 1e9)
    });
    task.await.context("the reading task failed")?
}

/// Starts the reader's HTTP gateway on its runtime.
async fn start_gateway(node: &NodeThread) -> Result<std::net::SocketAddr> {
    let handle = node.node.clone();
    let listener = node
        .runtime
        .spawn(async { tokio::net::TcpListener::bind("127.0.0.1:0").await })
        .await??;
    let addr = listener.local_addr()?;
    node.runtime.spawn(async move {
        if let Err(e) = coopcache_node::gateway::serve(listener, handle, &Default::default()).await
        {
            tracing::warn!(error = %e, "gateway stopped");
        }
    });
    Ok(addr)
}

/// GETs the whole file from the gateway at `addr` with a plain HTTP/1.1
/// client on a thread of its own (another process, as it would be),
/// checking every byte: GB/s.
async fn gateway_pass(addr: std::net::SocketAddr, size: u64, data: &Arc<Vec<u8>>) -> Result<f64> {
    let data = data.clone();
    tokio::task::spawn_blocking(move || {
        let mut s = std::net::TcpStream::connect(addr)?;
        let start = Instant::now();
        write!(
            s,
            "GET /v1/files/{FILE} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )?;
        let mut buf = vec![0u8; 1 << 20];
        let mut head = Vec::new();
        let body_start = loop {
            let n = s.read(&mut buf)?;
            if n == 0 {
                bail!("gateway closed before its headers ended");
            }
            head.extend_from_slice(&buf[..n]);
            if let Some(i) = head.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
        };
        if !head.starts_with(b"HTTP/1.1 200") {
            bail!(
                "gateway answered {}",
                String::from_utf8_lossy(&head[..head.len().min(80)])
            );
        }
        let mut at = head.len() - body_start;
        if head[body_start..] != data[..at] {
            bail!("gateway read: wrong bytes at offset 0");
        }
        while (at as u64) < size {
            let n = s.read(&mut buf)?;
            if n == 0 {
                bail!("gateway read: {at} bytes of {size}");
            }
            if buf[..n] != data[at..at + n] {
                bail!("gateway read: wrong bytes at offset {at}");
            }
            at += n;
        }
        Ok(at as f64 / start.elapsed().as_secs_f64() / 1e9)
    })
    .await?
}

fn print(r: &Report) {
    let layout = match r.runtime {
        Layout::PerNode => "each node on a thread of its own",
        Layout::Shared => "both nodes on one multi-threaded runtime",
    };
    println!(
        "{} MiB file in {} KiB blocks, held in a peer's memory ({layout}); median of each pass:",
        r.size >> 20,
        r.block_size >> 10
    );
    let header = [
        "read",
        "GB/s",
        "of one TCP stream",
        "of one TLS link",
        "passes",
    ];
    let rows: Vec<Vec<String>> = r
        .rows
        .iter()
        .map(|row| {
            let passes: Vec<String> = row.passes.iter().map(|p| format!("{p:.2}")).collect();
            vec![
                row.path.to_string(),
                format!("{:.2}", row.gb_s),
                format!("{:.0}%", 100.0 * row.of_tcp),
                format!("{:.0}%", 100.0 * row.of_tls),
                passes.join(", "),
            ]
        })
        .collect();
    coopcache_console::table::print(&header, &rows, 1);
    let l = r.reader_levels;
    println!(
        "\nthe reader's block reads: local {}, peer {}, origin {}; integrity failures {}, peer timeouts {}",
        l[0], l[2], l[3], r.integrity_failures, r.timeouts
    );
    let verdict = if r.target_met { "met" } else { "missed" };
    println!("target peer reads >= 50% of one TCP stream (library and gateway): {verdict}");
}

fn plot(dir: &Path, r: &Report) -> Result<()> {
    use coopcache_console::plot::{Segment, grouped_bars};
    std::fs::create_dir_all(dir)?;
    let groups: Vec<String> = r.rows.iter().map(|row| row.path.to_string()).collect();
    grouped_bars(
        &dir.join("stream-throughput.png"),
        &format!("Reading a {} MiB file: throughput", r.size >> 20),
        "GB/s",
        &groups,
        &[Segment {
            name: "median",
            values: r.rows.iter().map(|row| row.gb_s).collect(),
        }],
    )
}
