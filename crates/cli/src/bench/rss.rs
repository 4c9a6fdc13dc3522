//! `coopcache bench rss`: the resident memory of a real `coopcache node`
//! process against its `--memory` budget, sampled from `/proc/PID/status`
//! while readers hammer its gateway.
//!
//! Phases: `readers` (N readers fetch random files of a working set
//! several times the budget, for `--duration`), `burst` (`--burst`
//! connections at once, each fetching a file), `rest` (no load, to see
//! what is given back). The target is the issue's: resident memory at most
//! the larger of 1.1 x M and M + 24 MiB.

use super::common::{Bar, in_tempdir, plot_to, rng, write_origin_file};
use crate::live::{parse_duration, parse_size};
use crate::plot::{Series, Style, xy};
use anyhow::{Context, Result, bail};
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
    /// Concurrent readers in the `readers` phase.
    #[arg(long, default_value_t = 16)]
    readers: usize,
    /// Length of the `readers` phase.
    #[arg(long, default_value = "600s", value_parser = parse_duration)]
    duration: Duration,
    /// Connections opened at once in the `burst` phase.
    #[arg(long, default_value_t = 2000)]
    burst: usize,
    /// Length of the `rest` phase (no load).
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    rest: Duration,
    /// Time between samples of VmRSS.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    interval: Duration,
    /// Where to draw resident memory over time.
    #[arg(long, default_value = "rss.png")]
    plot: PathBuf,
    /// JSON lines (one per phase) instead of a table.
    #[arg(long)]
    json: bool,
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
    budget_mib: f64,
    target_mib: f64,
    within_target: bool,
    requests: u64,
    wrong_bytes: u64,
    failed_requests: u64,
}

pub fn run(args: RssArgs) -> Result<()> {
    if args.working_set == 0 || args.readers == 0 {
        bail!("--working-set and --readers must be at least 1");
    }
    // The burst needs a descriptor per connection here too.
    let _ = coopcache_node::gateway::raise_open_file_limit();
    let rows = in_tempdir("coopcache-rss-", |dir| soak(&args, dir))?;
    let Some((rows, samples)) = rows else {
        return Ok(());
    };
    if args.json {
        crate::output::print_json(&rows)?;
    } else {
        table(&rows);
    }
    let target = target_mib(args.memory);
    plot_to(&args.plot, |path| draw(path, &samples, args.memory, target))?;
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

/// A sample: seconds since start, VmRSS in bytes, phase index.
type Sample = (f64, u64, usize);

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
    let node = Node::start(&dir, &origin, args.memory).await?;
    eprintln!(
        "node pid {} on {}, --memory {:.0} MiB, working set {files} MiB, target {:.0} MiB",
        node.pid,
        node.http,
        args.memory as f64 / MIB,
        target_mib(args.memory)
    );

    let phase = Arc::new(AtomicU64::new(0));
    let samples = sampler(node.pid, args.interval, phase.clone());
    let mut totals = Vec::new();
    let t = Instant::now();
    totals.push((readers(args, &node, &contents).await, t.elapsed()));
    phase.store(1, Ordering::Relaxed);
    let t = Instant::now();
    totals.push((burst(args, &node, &contents).await, t.elapsed()));
    phase.store(2, Ordering::Relaxed);
    let t = Instant::now();
    tokio::time::sleep(args.rest).await;
    totals.push((Tally::default(), t.elapsed()));
    phase.store(3, Ordering::Relaxed);
    let samples = samples.await.context("sampler")??;
    drop(node);

    let target = target_mib(args.memory);
    let rows = PHASES
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut rss: Vec<f64> = samples
                .iter()
                .filter(|s| s.2 == i)
                .map(|s| s.1 as f64 / MIB)
                .collect();
            let last = rss.last().copied().unwrap_or(0.0);
            rss.sort_by(f64::total_cmp);
            let peak = rss.last().copied().unwrap_or(0.0);
            let (tally, took) = &totals[i];
            PhaseRow {
                phase: name,
                seconds: took.as_secs_f64(),
                samples: rss.len(),
                rss_median_mib: rss.get(rss.len() / 2).copied().unwrap_or(0.0),
                rss_peak_mib: peak,
                rss_last_mib: last,
                budget_mib: args.memory as f64 / MIB,
                target_mib: target,
                within_target: peak <= target,
                requests: tally.requests,
                wrong_bytes: tally.wrong,
                failed_requests: tally.failed,
            }
        })
        .collect();
    Ok((rows, samples))
}

/// Samples VmRSS of `pid` every `interval` until `phase` reaches 3.
fn sampler(
    pid: u32,
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
            out.push((start.elapsed().as_secs_f64(), vm_rss(pid)?, p));
            tokio::time::sleep(interval).await;
        }
    })
}

/// A process's resident set in bytes, from `/proc/PID/status`.
fn vm_rss(pid: u32) -> Result<u64> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .with_context(|| format!("no VmRSS line in {path}"))?;
    Ok(kib * 1024)
}

#[derive(Default)]
struct Tally {
    requests: u64,
    wrong: u64,
    failed: u64,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.requests += other.requests;
        self.wrong += other.wrong;
        self.failed += other.failed;
    }
}

async fn readers(args: &RssArgs, node: &Node, contents: &Arc<Vec<Vec<u8>>>) -> Tally {
    let deadline = Instant::now() + args.duration;
    let bar = Bar::new(args.duration.as_secs(), "readers (s)");
    let tasks: Vec<_> = (0..args.readers)
        .map(|k| {
            let (http, contents) = (node.http, contents.clone());
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
    let (done, ()) = tokio::join!(futures::future::join_all(tasks), ticker);
    drop(bar);
    let mut tally = Tally::default();
    for t in done.into_iter().flatten() {
        tally.add(t);
    }
    tally
}

async fn burst(args: &RssArgs, node: &Node, contents: &Arc<Vec<Vec<u8>>>) -> Tally {
    let tasks: Vec<_> = (0..args.burst)
        .map(|k| {
            let (http, contents) = (node.http, contents.clone());
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
        _ => tally.failed = 1,
    }
    tally
}

/// A `coopcache node` child process.
struct Node {
    child: tokio::process::Child,
    pid: u32,
    http: std::net::SocketAddr,
}

impl Node {
    async fn start(dir: &Path, origin: &Path, memory: u64) -> Result<Node> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let http: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
        let exe = std::env::current_exe().context("finding the coopcache binary")?;
        let mut child = tokio::process::Command::new(exe)
            .args(["node", "--listen", "127.0.0.1:0", "--memory"])
            .arg(memory.to_string())
            .arg("--origin")
            .arg(origin)
            .arg("--data-dir")
            .arg(dir.join("keys"))
            .arg("--http")
            .arg(http.to_string())
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
        Ok(Node { child, pid, http })
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

fn table(rows: &[PhaseRow]) {
    println!(
        "{:<8} {:>8} {:>9} {:>11} {:>9} {:>9} {:>10} {:>8} {:>6}",
        "phase",
        "seconds",
        "requests",
        "median MiB",
        "peak MiB",
        "last MiB",
        "target MiB",
        "within",
        "wrong"
    );
    for r in rows {
        println!(
            "{:<8} {:>8.0} {:>9} {:>11.1} {:>9.1} {:>9.1} {:>10.1} {:>8} {:>6}",
            r.phase,
            r.seconds,
            r.requests,
            r.rss_median_mib,
            r.rss_peak_mib,
            r.rss_last_mib,
            r.target_mib,
            if r.within_target { "yes" } else { "NO" },
            r.wrong_bytes
        );
    }
}

fn draw(path: &Path, samples: &[Sample], memory: u64, target: f64) -> Result<()> {
    let end = samples.last().map_or(1.0, |s| s.0);
    let mut series: Vec<Series<'_>> = PHASES
        .iter()
        .enumerate()
        .map(|(i, name)| Series {
            name,
            points: samples
                .iter()
                .filter(|s| s.2 == i)
                .map(|s| (s.0, s.1 as f64 / MIB))
                .collect(),
        })
        .collect();
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
        &format!("coopcache node resident memory, --memory {budget:.0} MiB"),
        ("seconds", "VmRSS (MiB)"),
        &series,
        false,
        Style::Lines,
    )
}
