//! `coopcache bench rss`: the resident memory of a real `coopcache node`
//! process against its `--memory` budget, sampled from `/proc/PID/status`
//! while readers hammer its gateway.
//!
//! Phases: `readers` (N readers fetch random files of a working set
//! several times the budget, for `--duration`, with a burst of
//! connections every `--burst-every` if given: mixed load), `burst`
//! (`--burst` connections at once, each fetching a file), `rest` (no
//! load, to see what is given back). With `--nodes N` the nodes form one
//! cluster (peer links, forwarded blocks, frames in flight) and readers
//! spread over their gateways; each row reports the worst node. The
//! target is the issue's: resident memory at most the larger of 1.1 x M
//! and M + 24 MiB, on every node.

use super::common::{Bar, in_tempdir, plot_to, rng, write_origin_file};
use anyhow::{Context, Result, bail};
use coopcache_console::args::ReportArgs;
use coopcache_console::args::{parse_duration, parse_size};
use coopcache_console::plot::{Series, Style, xy};
use rand::Rng;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(clap::Args)]
pub struct RssArgs {
    /// The node's --memory.
    #[arg(long, default_value = "64MiB", value_parser = parse_size)]
    memory: u64,
    /// Working set as a multiple of --memory (1 MiB files).
    #[arg(long, default_value_t = 4)]
    working_set: u64,
    /// Nodes in the cluster, each a process with this --memory.
    #[arg(long, default_value_t = 1)]
    nodes: usize,
    /// Concurrent readers in the `readers` phase.
    #[arg(long, default_value_t = 16)]
    readers: usize,
    /// Length of the `readers` phase.
    #[arg(long, default_value = "600s", value_parser = parse_duration)]
    duration: Duration,
    /// Connections opened at once in the `burst` phase.
    #[arg(long, default_value_t = 2000)]
    burst: usize,
    /// During `readers`, also open --burst connections at once this often
    /// (mixed load for long soaks).
    #[arg(long, value_parser = parse_duration)]
    burst_every: Option<Duration>,
    /// Length of the `rest` phase (no load).
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    rest: Duration,
    /// Time between samples of VmRSS.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    interval: Duration,
    #[command(flatten)]
    report: ReportArgs,
}

const FILE: u64 = 1 << 20;
const MIB: f64 = 1048576.0;

/// One phase's resident memory.
#[derive(serde::Serialize)]
struct PhaseRow {
    phase: &'static str,
    seconds: f64,
    samples: usize,
    rss_median_mib: f64,
    rss_peak_mib: f64,
    rss_last_mib: f64,
    /// Live heap allocations (the allocator's count): what of resident
    /// memory is in use rather than kept by the allocator.
    heap_median_mib: f64,
    heap_peak_mib: f64,
    budget_mib: f64,
    target_mib: f64,
    within_target: bool,
    /// Median of the phase's last fifth minus median of its second fifth,
    /// worst node: growth over the phase (the first fifth is warm-up).
    drift_mib: f64,
    requests: u64,
    wrong_bytes: u64,
    failed_requests: u64,
    /// Of the failed, those answered 503 (the gateway's slots stayed full).
    busy_requests: u64,
}

pub(crate) fn run(args: RssArgs) -> Result<()> {
    if args.working_set == 0 || args.readers == 0 || args.nodes == 0 {
        bail!("--working-set, --readers and --nodes must be at least 1");
    }
    // The burst needs a descriptor per connection here too.
    let _ = coopcache_node::gateway::raise_open_file_limit();
    let rows = in_tempdir("coopcache-rss-", |dir| soak(&args, dir))?;
    let (rows, samples) = rows;
    if args.report.json {
        coopcache_console::output::print_json(&rows)?;
    } else {
        table(&rows);
    }
    let target = target_mib(args.memory);
    plot_to(args.report.plot.as_deref(), |path| {
        draw(path, &samples, args.nodes, args.memory, target)
    })?;
    let wrong: u64 = rows.iter().map(|r| r.wrong_bytes).sum();
    if wrong > 0 {
        bail!("{wrong} wrong bytes delivered");
    }
    Ok(())
}

fn target_mib(memory: u64) -> f64 {
    let m = memory as f64 / MIB;
    (1.1 * m).max(m + 24.0)
}

/// One node's memory at one moment.
struct Sample {
    /// Seconds since the start.
    t: f64,
    node: usize,
    /// VmRSS in bytes.
    rss: u64,
    /// Live heap bytes from the node's `/metrics`, when it answered in time.
    heap: Option<u64>,
    /// Index into `PHASES`.
    phase: usize,
}

const PHASES: [&str; 3] = ["readers", "burst", "rest"];

async fn soak(args: &RssArgs, dir: PathBuf) -> Result<(Vec<PhaseRow>, Vec<Sample>)> {
    let origin = dir.join("origin");
    std::fs::create_dir_all(&origin)?;
    let files = (args.working_set * args.memory).div_ceil(FILE);
    let mut r = rng(16, 0);
    let mut contents = Vec::new();
    for i in 0..files {
        contents.push(write_origin_file(&origin, &format!("f{i}"), FILE, &mut r)?);
    }
    let contents = Arc::new(contents);
    let mut nodes: Vec<Node> = Vec::new();
    for k in 0..args.nodes {
        let seed = nodes.first().map(|n| n.peer);
        nodes.push(Node::start(&dir, &origin, args.memory, k, seed).await?);
    }
    if args.nodes > 1 {
        settle(&nodes, args.nodes).await?;
    }
    let pids: Vec<u32> = nodes.iter().map(|n| n.pid).collect();
    let https: Arc<Vec<_>> = Arc::new(nodes.iter().map(|n| n.http).collect());
    eprintln!(
        "{}, pids {pids:?}, --memory {:.0} MiB each, working set {files} MiB, target {:.0} MiB",
        coopcache_console::output::count(args.nodes as u64, "node"),
        args.memory as f64 / MIB,
        target_mib(args.memory)
    );

    let phase = Arc::new(AtomicU64::new(0));
    let samples = sampler(pids, https.clone(), args.interval, phase.clone());
    let mut totals = Vec::new();
    let t = Instant::now();
    totals.push((readers(args, &https, &contents).await, t.elapsed()));
    phase.store(1, Ordering::Relaxed);
    let t = Instant::now();
    totals.push((burst(args.burst, &https, &contents).await, t.elapsed()));
    phase.store(2, Ordering::Relaxed);
    let t = Instant::now();
    tokio::time::sleep(args.rest).await;
    totals.push((Tally::default(), t.elapsed()));
    phase.store(3, Ordering::Relaxed);
    let samples = samples.await.context("sampler")??;
    drop(nodes);

    let target = target_mib(args.memory);
    let rows = PHASES
        .iter()
        .enumerate()
        .map(|(i, name)| {
            // Each figure is the worst node's.
            let per_node: Vec<NodeRss> = (0..args.nodes)
                .map(|k| NodeRss::of(samples.iter().filter(|s| s.phase == i && s.node == k)))
                .collect();
            let worst = |f: fn(&NodeRss) -> f64| per_node.iter().map(f).fold(0.0, f64::max);
            let peak = worst(|n| n.peak);
            let (tally, took) = &totals[i];
            PhaseRow {
                phase: name,
                seconds: took.as_secs_f64(),
                samples: per_node.iter().map(|n| n.samples).sum(),
                rss_median_mib: worst(|n| n.median),
                rss_peak_mib: peak,
                rss_last_mib: worst(|n| n.last),
                heap_median_mib: worst(|n| n.heap_median),
                heap_peak_mib: worst(|n| n.heap_peak),
                budget_mib: args.memory as f64 / MIB,
                target_mib: target,
                within_target: peak <= target,
                drift_mib: worst(|n| n.drift),
                requests: tally.requests,
                wrong_bytes: tally.wrong,
                failed_requests: tally.failed,
                busy_requests: tally.busy,
            }
        })
        .collect();
    Ok((rows, samples))
}

/// One node's resident memory over one phase, in MiB.
struct NodeRss {
    samples: usize,
    median: f64,
    peak: f64,
    last: f64,
    drift: f64,
    heap_median: f64,
    heap_peak: f64,
}

impl NodeRss {
    fn of<'a>(samples: impl Iterator<Item = &'a Sample>) -> NodeRss {
        let samples: Vec<&Sample> = samples.collect();
        let rss: Vec<f64> = samples.iter().map(|s| s.rss as f64 / MIB).collect();
        let heap: Vec<f64> = samples
            .iter()
            .filter_map(|s| s.heap)
            .map(|b| b as f64 / MIB)
            .collect();
        let median = |part: &[f64]| {
            let mut v = part.to_vec();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(0.0)
        };
        let fifth = rss.len() / 5;
        NodeRss {
            samples: rss.len(),
            median: median(&rss),
            peak: rss.iter().copied().fold(0.0, f64::max),
            last: rss.last().copied().unwrap_or(0.0),
            drift: if fifth == 0 {
                0.0
            } else {
                median(&rss[rss.len() - fifth..]) - median(&rss[fifth..2 * fifth])
            },
            heap_median: median(&heap),
            heap_peak: heap.iter().copied().fold(0.0, f64::max),
        }
    }
}

/// Samples VmRSS of every pid, and the live heap its gateway reports,
/// every `interval` until `phase` reaches 3.
fn sampler(
    pids: Vec<u32>,
    https: Https,
    interval: Duration,
    phase: Arc<AtomicU64>,
) -> tokio::task::JoinHandle<Result<Vec<Sample>>> {
    tokio::spawn(async move {
        let start = Instant::now();
        let mut out = Vec::new();
        loop {
            let p = phase.load(Ordering::Relaxed) as usize;
            if p >= PHASES.len() {
                return Ok(out);
            }
            let t = start.elapsed().as_secs_f64();
            let heaps = futures::future::join_all(https.iter().map(|h| heap_allocated(*h))).await;
            for (k, (pid, heap)) in pids.iter().zip(heaps).enumerate() {
                out.push(Sample {
                    t,
                    node: k,
                    rss: vm_rss(*pid)?,
                    heap,
                    phase: p,
                });
            }
            tokio::time::sleep(interval).await;
        }
    })
}

/// A process's resident set in bytes, from `/proc/PID/status`.
pub(crate) fn vm_rss(pid: u32) -> Result<u64> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .with_context(|| format!("no VmRSS line in {path}"))?;
    Ok(kib * 1024)
}

/// `coopcache_heap_allocated_bytes` from a node's `/metrics`; `None` if it
/// does not answer within a second (a burst fills its gateway) or reports 0.
async fn heap_allocated(http: std::net::SocketAddr) -> Option<u64> {
    let get = async {
        let mut s = tokio::net::TcpStream::connect(http).await?;
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await?;
        let mut raw = String::new();
        s.read_to_string(&mut raw).await?;
        Ok::<_, std::io::Error>(raw)
    };
    let raw = tokio::time::timeout(Duration::from_secs(1), get)
        .await
        .ok()?
        .ok()?;
    raw.lines()
        .find_map(|l| l.strip_prefix("coopcache_heap_allocated_bytes "))
        .and_then(|v| v.trim().parse().ok())
        .filter(|b| *b > 0)
}

#[derive(Default)]
struct Tally {
    requests: u64,
    wrong: u64,
    /// Not a 200 within 120 s, `busy` included.
    failed: u64,
    /// Answered 503: every gateway slot busy (none silent long enough to
    /// give way) when it connected.
    busy: u64,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.requests += other.requests;
        self.wrong += other.wrong;
        self.failed += other.failed;
        self.busy += other.busy;
    }
}

type Https = Arc<Vec<std::net::SocketAddr>>;

async fn readers(args: &RssArgs, https: &Https, contents: &Arc<Vec<Vec<u8>>>) -> Tally {
    let deadline = Instant::now() + args.duration;
    let bar = Bar::new(args.duration.as_secs(), "readers (s)");
    let tasks: Vec<_> = (0..args.readers)
        .map(|k| {
            let (http, contents) = (https[k % https.len()], contents.clone());
            tokio::spawn(async move {
                let mut r = rng(17, k as u64);
                let mut tally = Tally::default();
                while Instant::now() < deadline {
                    let i = r.random_range(0..contents.len());
                    tally.add(fetch(http, i, &contents[i]).await);
                }
                tally
            })
        })
        .collect();
    let ticker = async {
        while Instant::now() < deadline {
            tokio::time::sleep(Duration::from_secs(1)).await;
            bar.inc();
        }
    };
    // Mixed load: bursts on top of the readers, none started past the end.
    let bursts = async {
        let mut tally = Tally::default();
        let Some(every) = args.burst_every else {
            return tally;
        };
        while Instant::now() + every < deadline {
            tokio::time::sleep(every).await;
            tally.add(burst(args.burst, https, contents).await);
        }
        tally
    };
    let (done, (), mut tally) = tokio::join!(futures::future::join_all(tasks), ticker, bursts);
    drop(bar);
    for t in done.into_iter().flatten() {
        tally.add(t);
    }
    tally
}

async fn burst(n: usize, https: &Https, contents: &Arc<Vec<Vec<u8>>>) -> Tally {
    let tasks: Vec<_> = (0..n)
        .map(|k| {
            let (http, contents) = (https[k % https.len()], contents.clone());
            tokio::spawn(async move {
                let i = k % contents.len();
                fetch(http, i, &contents[i]).await
            })
        })
        .collect();
    let mut tally = Tally::default();
    for t in futures::future::join_all(tasks).await.into_iter().flatten() {
        tally.add(t);
    }
    tally
}

/// GETs file `i` over a fresh connection and checks its bytes.
async fn fetch(http: std::net::SocketAddr, i: usize, want: &[u8]) -> Tally {
    let got = async {
        let mut s = tokio::net::TcpStream::connect(http).await?;
        let req = format!("GET /v1/files/f{i} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        s.write_all(req.as_bytes()).await?;
        let mut raw = Vec::with_capacity(want.len() + 512);
        s.read_to_end(&mut raw).await?;
        Ok::<_, std::io::Error>(raw)
    };
    let mut tally = Tally {
        requests: 1,
        ..Tally::default()
    };
    match tokio::time::timeout(Duration::from_secs(120), got).await {
        Ok(Ok(raw)) if raw.starts_with(b"HTTP/1.1 200") => {
            let body = raw
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .map_or(&raw[..0], |e| &raw[e + 4..]);
            tally.wrong = super::common::wrong_bytes(body, want);
        }
        Ok(Ok(raw)) if raw.starts_with(b"HTTP/1.1 503") => (tally.failed, tally.busy) = (1, 1),
        _ => tally.failed = 1,
    }
    tally
}

/// A free loopback port (free when asked; the node binds it next).
fn free_addr() -> Result<std::net::SocketAddr> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    Ok(([127, 0, 0, 1], port).into())
}

/// A `coopcache node` child process.
struct Node {
    child: tokio::process::Child,
    pid: u32,
    http: std::net::SocketAddr,
    peer: std::net::SocketAddr,
}

impl Node {
    /// Starts node `k`, joining `seed` when given. Nodes share one data
    /// directory: the first creates the CA, the others are issued their
    /// certificates from it.
    async fn start(
        dir: &Path,
        origin: &Path,
        memory: u64,
        k: usize,
        seed: Option<std::net::SocketAddr>,
    ) -> Result<Node> {
        let (http, peer) = (free_addr()?, free_addr()?);
        let exe = std::env::current_exe().context("finding the coopcache binary")?;
        let mut command = tokio::process::Command::new(exe);
        command
            .arg("node")
            .arg("--name")
            .arg(format!("rss{k}"))
            .arg("--listen")
            .arg(peer.to_string())
            .arg("--memory")
            .arg(memory.to_string())
            .arg("--origin")
            .arg(origin)
            .arg("--data-dir")
            .arg(dir.join("keys"))
            .arg("--init")
            .arg("--http")
            .arg(http.to_string());
        if let Some(seed) = seed {
            command.arg("--join").arg(seed.to_string());
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("starting coopcache node")?;
        let pid = child.id().context("node exited at once")?;
        let deadline = Instant::now() + Duration::from_secs(30);
        while tokio::net::TcpStream::connect(http).await.is_err() {
            if let Some(status) = child.try_wait()? {
                bail!("coopcache node exited with {status} before serving");
            }
            if Instant::now() > deadline {
                bail!("coopcache node did not open its gateway {http} within 30 s");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(Node {
            child,
            pid,
            http,
            peer,
        })
    }
}

/// Waits until every node's status lists all `n` members.
async fn settle(nodes: &[Node], n: usize) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    for node in nodes {
        loop {
            let members = status_members(node.http).await.unwrap_or(0);
            if members >= n {
                break;
            }
            if Instant::now() > deadline {
                bail!(
                    "node on {} sees {members} of {n} members after 30 s",
                    node.http
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    Ok(())
}

/// The number of members a node's `/v1/status` lists.
async fn status_members(http: std::net::SocketAddr) -> Option<usize> {
    let client = coopcache_node::client::Client::new(&http.to_string());
    client.status().await.ok().map(|s| s.members.len())
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

fn table(rows: &[PhaseRow]) {
    println!(
        "{:<8} {:>8} {:>9} {:>11} {:>9} {:>9} {:>10} {:>10} {:>10} {:>8} {:>6} {:>7} {:>5}",
        "phase",
        "seconds",
        "requests",
        "median MiB",
        "peak MiB",
        "last MiB",
        "heap peak",
        "drift MiB",
        "target MiB",
        "within",
        "wrong",
        "failed",
        "503s"
    );
    for r in rows {
        println!(
            "{:<8} {:>8.0} {:>9} {:>11.1} {:>9.1} {:>9.1} {:>10.1} {:>10.1} {:>10.1} {:>8} {:>6} {:>7} {:>5}",
            r.phase,
            r.seconds,
            r.requests,
            r.rss_median_mib,
            r.rss_peak_mib,
            r.rss_last_mib,
            r.heap_peak_mib,
            r.drift_mib,
            r.target_mib,
            if r.within_target { "yes" } else { "NO" },
            r.wrong_bytes,
            r.failed_requests,
            r.busy_requests
        );
    }
}

fn draw(path: &Path, samples: &[Sample], nodes: usize, memory: u64, target: f64) -> Result<()> {
    let end = samples.last().map_or(1.0, |s| s.t);
    // One node: a line per phase; a cluster: a line per node.
    let names: Vec<String> = if nodes == 1 {
        PHASES.iter().map(|p| p.to_string()).collect()
    } else {
        (0..nodes).map(|k| format!("node {k}")).collect()
    };
    let mut series: Vec<Series<'_>> = names
        .iter()
        .enumerate()
        .map(|(i, name)| Series {
            name,
            points: samples
                .iter()
                .filter(|s| {
                    if nodes == 1 {
                        s.phase == i
                    } else {
                        s.node == i
                    }
                })
                .map(|s| (s.t, s.rss as f64 / MIB))
                .collect(),
        })
        .collect();
    // Live heap, a line per node: the gap up to resident memory is what
    // the allocator keeps.
    let heap_names: Vec<String> = (0..nodes)
        .map(|k| {
            if nodes == 1 {
                "live heap".to_string()
            } else {
                format!("node {k} live heap")
            }
        })
        .collect();
    for (k, name) in heap_names.iter().enumerate() {
        series.push(Series {
            name,
            points: samples
                .iter()
                .filter(|s| s.node == k)
                .filter_map(|s| Some((s.t, s.heap? as f64 / MIB)))
                .collect(),
        });
    }
    let budget = memory as f64 / MIB;
    series.push(Series {
        name: "--memory",
        points: vec![(0.0, budget), (end, budget)],
    });
    series.push(Series {
        name: "target",
        points: vec![(0.0, target), (end, target)],
    });
    xy(
        path,
        &format!(
            "coopcache node resident memory, {}, --memory {budget:.0} MiB each",
            coopcache_console::output::count(nodes as u64, "node")
        ),
        ("seconds", "VmRSS (MiB)"),
        &series,
        false,
        Style::Lines,
    )
}
