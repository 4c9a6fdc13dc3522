//! `coopcache bench scale`: what one node costs as the cluster grows, on
//! clusters of 16, 32, 64 and 100 real `coopcache node` processes on this
//! machine (issue 44's first item).
//!
//! Why processes and not the in-process loopback cluster: resident
//! memory, descriptors and CPU are only a node's own when the node is a
//! process; in one process they would be the sum of all of them. So each
//! size starts N children of this binary (`std::env::current_exe`), each
//! on a loopback address of its own with a small `--memory`, all joining
//! through the first and reading one shared origin directory, and every
//! figure comes from them:
//!
//! - **membership**: keys issued for all N at once (`coopcache cluster
//!   init`), the first node (the seed) starts, then N-2 more at once, all
//!   joining through it: the time from the last of them serving until
//!   every one's `/v1/status` lists all N-1 (a cluster booting); then the
//!   N-th starts: the time from it serving until every node lists it (a
//!   node joining a formed cluster);
//! - **per node, idle** (after a 2 s settle, over `--idle`): resident
//!   memory (`VmRSS`), socket descriptors (`/proc/PID/fd`), CPU (utime +
//!   stime from `/proc/PID/stat`), and the data segments and bytes its
//!   peer links carried (the kernel's TCP counters, read with `ss`);
//! - **per read**: `--reads` single-block reads (64 KiB ranges), one at a
//!   time, each through a random node's gateway other than the one that
//!   read the block first (every block is read once beforehand, block b
//!   through node b mod N), so that a read is a cluster read (a manager
//!   looked up by rendezvous, a peer's memory) and not a local hit; its
//!   latency (median, p99), and the link segments and bytes of the read
//!   window less the idle window's rate over as long: the nodes count no
//!   messages of their own (their metrics have no per-link counters), so
//!   the kernel's are used, and a segment is one write of a batch of
//!   frames, not one message. The share subtracted is reported: at 64 and
//!   100 nodes the cluster's idle traffic is most of the window's.
//!
//! The sizes run one after another, each cluster stopped before the next
//! starts; nothing else should run on the machine, and a 2-core machine
//! is saturated by 100 nodes' idle work (the `cluster CPU` column says
//! so), which slows the figures that depend on scheduling (membership,
//! latency).

use super::common::{in_tempdir, median, rng, wrong_bytes};
use super::scale_procs::{
    LinkTraffic, MAX_NODES, NodeProc, NodeSpec, cpu_seconds, link_traffic, rss, sockets,
};
use anyhow::{Context, Result, bail};
use coopcache_console::args::{ReportArgs, parse_duration, parse_size};
use coopcache_node::client::Client;
use rand::Rng;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct ScaleArgs {
    /// Cluster sizes, comma-separated: each a fresh cluster of real
    /// `coopcache node` processes on loopback addresses of their own (at
    /// most 250).
    #[arg(long, default_value = "16,32,64,100", value_delimiter = ',')]
    nodes: Vec<usize>,
    /// Every node's --memory (small: 100 nodes share this machine).
    #[arg(long, default_value = "40MiB", value_parser = parse_size)]
    memory: u64,
    /// Single-block reads measured per size, one at a time.
    #[arg(long, default_value_t = 200)]
    reads: usize,
    /// Files in the origin (256 KiB each, four blocks).
    #[arg(long, default_value_t = 16)]
    files: usize,
    /// The idle window over which CPU and link traffic are measured.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    idle: Duration,
    /// Longest wait for every node to see every member.
    #[arg(long, default_value = "300s", value_parser = parse_duration)]
    converge_timeout: Duration,
    #[command(flatten)]
    report: ReportArgs,
}

/// Bytes per origin file: four 64 KiB blocks (the node's default size).
const FILE: u64 = 256 << 10;
/// The node's default block size: one read is one block.
const BLOCK: u64 = 64 << 10;
const MIB: f64 = 1048576.0;
/// Quiet time after the cluster formed before the idle window: the joins'
/// last member lists and link handshakes are done by then.
const SETTLE: Duration = Duration::from_secs(2);

/// One cluster size's figures; per-node ones are the median over nodes
/// (and the worst where said).
#[derive(Debug, serde::Serialize)]
pub(crate) struct ScaleRow {
    pub nodes: usize,
    pub memory_mib: f64,
    /// Nodes booted together: all but the last (the first, the seed,
    /// started just before them).
    pub booted: usize,
    /// Seconds from starting them until every one's gateway answered.
    pub started_seconds: f64,
    /// Seconds from then until each of them listed all of them.
    pub boot_seconds: f64,
    /// Seconds from the last node's gateway answering (it joins the
    /// formed cluster) until every node listed it.
    pub join_seconds: f64,
    pub rss_mib: f64,
    pub rss_max_mib: f64,
    /// Resident memory [`SETTLE`] after the reads.
    pub rss_after_mib: f64,
    pub rss_after_max_mib: f64,
    /// Socket descriptors of a node (links both ways, listeners).
    pub sockets: f64,
    pub sockets_max: usize,
    /// Established peer-link TCP connections a node is an end of
    /// (kernel's count over all links, times two ends, over N).
    pub link_connections: f64,
    /// A node's CPU while idle, percent of one core.
    pub idle_cpu_pct: f64,
    pub idle_cpu_max_pct: f64,
    /// Every node's together, percent of one core (200 is all of a
    /// 2-core machine).
    pub cluster_idle_cpu_pct: f64,
    /// Data segments a node sent on its links per second while idle.
    pub idle_segments_per_s: f64,
    /// Bytes a node sent on its links per second while idle (KiB/s).
    pub idle_kib_per_s: f64,
    pub reads: usize,
    pub read_seconds: f64,
    /// Link data segments per read, the idle rate subtracted.
    pub segments_per_read: f64,
    /// Link KiB per read, the idle rate subtracted.
    pub kib_per_read: f64,
    /// Of the read window's segments, the percentage subtracted as idle
    /// traffic (the closer to 100, the noisier the per-read figures).
    pub background_pct: f64,
    /// Where the measured reads were served (the nodes' own counters).
    pub served_local: u64,
    pub served_peer: u64,
    pub served_origin: u64,
    /// Reads that waited on a peer past the timeout (then read elsewhere).
    pub timeouts: u64,
    pub median_ms: f64,
    pub p99_ms: f64,
    pub wrong_bytes: u64,
    pub failed_reads: u64,
}

pub(crate) fn run(args: ScaleArgs) -> Result<()> {
    if args.nodes.is_empty() || args.nodes.iter().any(|&n| n == 0 || n > MAX_NODES) {
        bail!(
            "--nodes {:?}: each size must be between 1 and {MAX_NODES}",
            args.nodes
        );
    }
    if args.reads == 0 || args.files == 0 {
        bail!("--reads and --files must be at least 1");
    }
    if args.idle < Duration::from_secs(1) {
        bail!(
            "--idle {:?}: at least 1s (the nodes ping each member once a second)",
            args.idle
        );
    }
    // N processes of N links each: every child inherits the raised limit.
    let _ = coopcache_node::gateway::raise_open_file_limit();
    let args = &args;
    let rows = in_tempdir("coopcache-scale-", |dir| async move {
        let origin = dir.join("origin");
        let mut r = rng(44, 0);
        let mut contents = Vec::new();
        for i in 0..args.files {
            contents.push(super::common::write_origin_file(
                &origin,
                &format!("f{i}"),
                FILE,
                &mut r,
            )?);
        }
        let mut rows = Vec::new();
        for (run, &n) in args.nodes.iter().enumerate() {
            let keys = dir.join(format!("keys{run}"));
            let row = one_size(args, &keys, &origin, &contents, run, n)
                .await
                .with_context(|| format!("{n} nodes"))?;
            eprintln!(
                "{n} nodes: {:.1} MiB and {:.0} sockets per node, idle CPU {:.1}% of a core each, read median {:.2} ms",
                row.rss_mib, row.sockets, row.idle_cpu_pct, row.median_ms
            );
            rows.push(row);
        }
        Ok(rows)
    })?;
    super::scale_report::report(&args.report, &rows)
}

/// Starts `n` nodes, measures them, and stops them.
async fn one_size(
    args: &ScaleArgs,
    dir: &Path,
    origin: &Path,
    contents: &[Vec<u8>],
    run: usize,
    n: usize,
) -> Result<ScaleRow> {
    eprintln!("{n} nodes: issuing keys");
    super::scale_procs::issue_keys(dir, n).await?;
    let spec = |k: usize, seed: Option<SocketAddr>| NodeSpec {
        keys: dir,
        origin,
        memory: args.memory,
        run,
        k,
        seed,
    };
    // The seed first, so that no join finds it not yet listening.
    let mut first = NodeProc::spawn(spec(0, None))?;
    first.serving().await?;
    let seed = Some(first.peer);
    let mut nodes = vec![first];
    // Then all but the last at once: the cluster boots.
    let boot = n.saturating_sub(1).max(1);
    eprintln!("{n} nodes: starting {} at once", boot - 1);
    let spawned = Instant::now();
    for k in 1..boot {
        nodes.push(NodeProc::spawn(spec(k, seed))?);
    }
    let serving = futures::future::join_all(nodes[1..].iter_mut().map(NodeProc::serving)).await;
    serving.into_iter().collect::<Result<Vec<()>>>()?;
    let started_seconds = spawned.elapsed().as_secs_f64();
    let mut clients: Vec<Client> = nodes
        .iter()
        .map(|p| Client::new(&p.http.to_string()))
        .collect();
    let boot_seconds = converge(&clients, args.converge_timeout).await?;
    eprintln!(
        "{n} nodes: {boot} serving {started_seconds:.1} s after starting, all see all {boot_seconds:.1} s later"
    );
    // Then the last one joins the formed cluster.
    let mut join_seconds = 0.0;
    if n > boot {
        let mut last = NodeProc::spawn(spec(n - 1, seed))?;
        last.serving().await?;
        clients.push(Client::new(&last.http.to_string()));
        nodes.push(last);
        join_seconds = converge(&clients, args.converge_timeout).await?;
        eprintln!("{n} nodes: one more joined, seen by all in {join_seconds:.2} s");
    }

    eprintln!(
        "{n} nodes: idle for {:.0} s",
        (SETTLE + args.idle).as_secs_f64()
    );
    tokio::time::sleep(SETTLE).await;
    let pids: Vec<u32> = nodes.iter().map(|p| p.pid).collect();
    let idle = idle_window(&pids, run, args.idle).await?;

    eprintln!("{n} nodes: {} reads", args.reads);
    let reads = read_window(
        args,
        &clients,
        contents,
        run,
        (idle.segments_per_s, idle.bytes_per_s),
    )
    .await?;
    // Resident memory once the reads are over and the links quiet: what
    // the cache and the links kept of them.
    tokio::time::sleep(SETTLE).await;
    let after: Vec<f64> = pids
        .iter()
        .map(|&p| rss(p).map(|b| b as f64))
        .collect::<Result<_>>()?;

    futures::future::join_all(nodes.into_iter().map(NodeProc::stop)).await;
    let cpu = &idle.cpu_pct;
    let link = idle.traffic.sockets as f64 / n as f64;
    Ok(ScaleRow {
        nodes: n,
        memory_mib: args.memory as f64 / MIB,
        booted: boot,
        started_seconds,
        boot_seconds,
        join_seconds,
        rss_mib: median(&idle.rss) / MIB,
        rss_max_mib: idle.rss.iter().copied().fold(0.0, f64::max) / MIB,
        rss_after_mib: median(&after) / MIB,
        rss_after_max_mib: after.iter().copied().fold(0.0, f64::max) / MIB,
        sockets: median(&idle.sockets.iter().map(|&s| s as f64).collect::<Vec<_>>()),
        sockets_max: idle.sockets.iter().copied().max().unwrap_or(0),
        link_connections: link,
        idle_cpu_pct: median(cpu),
        idle_cpu_max_pct: cpu.iter().copied().fold(0.0, f64::max),
        cluster_idle_cpu_pct: cpu.iter().sum(),
        idle_segments_per_s: idle.segments_per_s / n as f64,
        idle_kib_per_s: idle.bytes_per_s / n as f64 / 1024.0,
        reads: args.reads,
        read_seconds: reads.seconds,
        segments_per_read: reads.segments,
        kib_per_read: reads.bytes / 1024.0,
        background_pct: reads.background_pct,
        served_local: reads.served[0],
        served_peer: reads.served[1],
        served_origin: reads.served[2],
        timeouts: reads.served[3],
        median_ms: reads.median_ms,
        p99_ms: reads.p99_ms,
        wrong_bytes: reads.wrong,
        failed_reads: reads.failed,
    })
}

/// Polls every node's status until each lists all of them; the seconds
/// from the call (every node serving) until the last one did.
async fn converge(clients: &[Client], timeout: Duration) -> Result<f64> {
    let n = clients.len();
    let started = Instant::now();
    let mut pending: Vec<usize> = (0..n).collect();
    let mut last = 0.0;
    while !pending.is_empty() {
        let seen = futures::future::join_all(pending.iter().map(|&k| async move {
            let status = tokio::time::timeout(Duration::from_secs(5), clients[k].status()).await;
            match status {
                Ok(Ok(s)) => s.members.len(),
                _ => 0,
            }
        }))
        .await;
        let now = started.elapsed().as_secs_f64();
        let mut still = Vec::new();
        let mut fewest = n;
        for (&k, m) in pending.iter().zip(seen) {
            if m >= n {
                last = now;
            } else {
                still.push(k);
                fewest = fewest.min(m);
            }
        }
        pending = still;
        if !pending.is_empty() && started.elapsed() > timeout {
            bail!(
                "after {:.0} s, {} nodes (node {} first) still see fewer than {n} members (one sees {fewest}): raise --converge-timeout?",
                timeout.as_secs_f64(),
                pending.len(),
                pending[0]
            );
        }
        if !pending.is_empty() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    Ok(last)
}

/// The links' counters, and the moment they stand for: the middle of
/// the walk `ss` took over the machine's sockets.
async fn traffic_at(run: usize) -> Result<(LinkTraffic, Instant)> {
    let before = Instant::now();
    let t = link_traffic(run).await?;
    Ok((t, before + before.elapsed() / 2))
}

/// What the idle window measured, per node where a list.
struct Idle {
    rss: Vec<f64>,
    sockets: Vec<usize>,
    cpu_pct: Vec<f64>,
    traffic: LinkTraffic,
    /// The whole cluster's link data segments and bytes per second.
    segments_per_s: f64,
    bytes_per_s: f64,
}

/// Measures CPU and link traffic over `window` with nothing asked of the
/// nodes, then their memory and descriptors.
async fn idle_window(pids: &[u32], run: usize, window: Duration) -> Result<Idle> {
    // Each measure over its own span: `ss` walks every socket of the
    // machine and takes a while when 100 nodes keep it busy.
    let cpu = |pids: &[u32]| {
        let at = Instant::now();
        let seconds = pids
            .iter()
            .map(|&p| cpu_seconds(p))
            .collect::<Result<Vec<_>>>();
        seconds.map(|s| (s, at))
    };
    let (cpu0, cpu_from) = cpu(pids)?;
    let (t0, from) = traffic_at(run).await?;
    tokio::time::sleep(window).await;
    let (t1, to) = traffic_at(run).await?;
    let secs = to.duration_since(from).as_secs_f64();
    let (cpu1, cpu_to) = cpu(pids)?;
    let cpu_secs = cpu_to.duration_since(cpu_from).as_secs_f64();
    let traffic = t1.since(&t0);
    Ok(Idle {
        rss: pids
            .iter()
            .map(|&p| rss(p).map(|b| b as f64))
            .collect::<Result<_>>()?,
        sockets: pids.iter().map(|&p| sockets(p)).collect::<Result<_>>()?,
        cpu_pct: cpu0
            .iter()
            .zip(&cpu1)
            .map(|(a, b)| (b - a) / cpu_secs * 100.0)
            .collect(),
        traffic,
        segments_per_s: traffic.segments as f64 / secs,
        bytes_per_s: traffic.bytes as f64 / secs,
    })
}

/// What the read window measured.
struct Reads {
    seconds: f64,
    /// Per read, the idle rate subtracted.
    segments: f64,
    bytes: f64,
    background_pct: f64,
    /// Local, peer (a manager's or another peer's memory), origin, and
    /// peer timeouts.
    served: [u64; 4],
    median_ms: f64,
    p99_ms: f64,
    wrong: u64,
    failed: u64,
}

/// Reads every block once (block b through node b mod N), then
/// `args.reads` random blocks one at a time, each through a node other
/// than its first reader. `idle_rate` is the cluster's link segments and
/// bytes per second while idle, subtracted from the window's.
async fn read_window(
    args: &ScaleArgs,
    clients: &[Client],
    contents: &[Vec<u8>],
    run: usize,
    idle_rate: (f64, f64),
) -> Result<Reads> {
    let n = clients.len();
    let per_file = FILE.div_ceil(BLOCK);
    let blocks = contents.len() as u64 * per_file;
    let block = |b: u64| {
        let (file, at) = ((b / per_file) as usize, (b % per_file) * BLOCK);
        let end = (at + BLOCK).min(FILE);
        (format!("f{file}"), at..end)
    };
    let (mut wrong, mut failed) = (0, 0);
    for b in 0..blocks {
        let (path, range) = block(b);
        let k = (b % n as u64) as usize;
        let got = clients[k]
            .read(&path, Some(range.clone()))
            .await
            .with_context(|| format!("node {k} reading {path} {range:?} first"))?;
        wrong += wrong_bytes(
            &got,
            &contents[(b / per_file) as usize][range_usize(&range)],
        );
    }
    let served0 = served(clients).await?;
    let (t0, from) = traffic_at(run).await?;
    let started = Instant::now();
    let mut r = rng(44, run as u64 + 1);
    let mut ms = Vec::with_capacity(args.reads);
    for _ in 0..args.reads {
        let b = r.random_range(0..blocks);
        let first = (b % n as u64) as usize;
        let k = if n == 1 {
            0
        } else {
            (first + 1 + r.random_range(0..n - 1)) % n
        };
        let (path, range) = block(b);
        let t = Instant::now();
        match clients[k].read(&path, Some(range.clone())).await {
            Ok(got) => {
                ms.push(t.elapsed().as_secs_f64() * 1000.0);
                wrong += wrong_bytes(
                    &got,
                    &contents[(b / per_file) as usize][range_usize(&range)],
                );
            }
            Err(e) => {
                failed += 1;
                eprintln!("  node {k} failed reading {path} {range:?}: {e}");
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let (t1, to) = traffic_at(run).await?;
    let window = to.duration_since(from).as_secs_f64();
    let served1 = served(clients).await?;
    let traffic = t1.since(&t0);
    let background = idle_rate.0 * window;
    let background_bytes = idle_rate.1 * window;
    let reads = args.reads as f64;
    let mut sorted = ms.clone();
    sorted.sort_by(f64::total_cmp);
    let p99 = sorted
        .get(((sorted.len() as f64 * 0.99).ceil() as usize).saturating_sub(1))
        .copied()
        .unwrap_or(0.0);
    Ok(Reads {
        seconds,
        segments: (traffic.segments as f64 - background) / reads,
        bytes: (traffic.bytes as f64 - background_bytes) / reads,
        background_pct: if traffic.segments == 0 {
            0.0
        } else {
            (background / traffic.segments as f64 * 100.0).min(100.0)
        },
        served: [0, 1, 2, 3].map(|i| served1[i].saturating_sub(served0[i])),
        median_ms: median(&ms),
        p99_ms: p99,
        wrong,
        failed,
    })
}

fn range_usize(r: &std::ops::Range<u64>) -> std::ops::Range<usize> {
    r.start as usize..r.end as usize
}

/// Block reads every node has served so far: local memory, a peer's
/// memory (through a manager or not), the origin; and peer timeouts.
async fn served(clients: &[Client]) -> Result<[u64; 4]> {
    let mut out = [0; 4];
    for (k, c) in clients.iter().enumerate() {
        let s = c
            .status()
            .await
            .with_context(|| format!("node {k}'s status"))?;
        let at = |l: &str| s.reads.get(l).copied().unwrap_or(0);
        out[0] += at("local") + at("disk");
        out[1] += at("manager") + at("peer");
        out[2] += at("origin");
        out[3] += s.timeouts;
    }
    Ok(out)
}
