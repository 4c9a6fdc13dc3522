//! `coopcache demo`: a 4-node cluster on loopback over a generated origin
//! with an emulated per-read latency, read with and without cooperation,
//! side by side. Everything lives in a temporary directory removed at the
//! end, also on Ctrl-C.

use anyhow::{Result, bail};
use coopcache_bench::loopback::{LoopbackSpec, shutdown, start_cluster, totals};
use coopcache_console::args::{ReportArgs, Seed};
use coopcache_console::args::{parse_duration, parse_size};
use coopcache_console::plot::{Segment, stacked_bars};
use coopcache_console::tasks::in_tempdir;
use coopcache_core::coop::AlgorithmKind;
use coopcache_core::coop::Level;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use rand_pcg::Pcg64Mcg;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct DemoArgs {
    /// Nodes in the cluster.
    #[arg(long, default_value_t = 4)]
    nodes: u32,
    /// Files in the generated origin.
    #[arg(long, default_value_t = 64)]
    files: u32,
    /// Size of each file.
    #[arg(long, default_value = "512KiB", value_parser = parse_size)]
    file_size: u64,
    /// Block size.
    #[arg(long, default_value = "64KiB", value_parser = parse_size)]
    block_size: u64,
    /// Cache per node, beyond the runtime reserve (the cluster's total is a
    /// quarter of the data by default).
    #[arg(long, default_value = "2MiB", value_parser = parse_size)]
    cache: u64,
    /// Block reads per node.
    #[arg(long, default_value_t = 1500)]
    reads: u32,
    /// Zipf exponent of file popularity.
    #[arg(long, default_value_t = 0.9)]
    skew: f64,
    /// Emulated latency of every origin request (a WAN or busy NFS server;
    /// this kernel has no netem, so the origin sleeps before answering).
    #[arg(long, default_value = "5ms", value_parser = parse_duration)]
    origin_delay: Duration,
    /// Algorithms to compare.
    #[arg(long, value_delimiter = ',', default_value = "base,nchance")]
    algorithms: Vec<String>,
    #[command(flatten)]
    pub(crate) seed: Seed,
    #[command(flatten)]
    report: ReportArgs,
}

#[derive(serde::Serialize)]
struct Outcome {
    algorithm: String,
    nodes: u32,
    reads: u64,
    origin_reads: u64,
    origin_bytes: u64,
    local: u64,
    peer: u64,
    origin: u64,
    mean_ms: f64,
    p99_ms: f64,
    wrong_bytes: u64,
    integrity_failures: u64,
    seconds: f64,
}

pub fn run(args: DemoArgs) -> Result<()> {
    if args.nodes == 0 || args.files == 0 || args.reads == 0 {
        bail!("--nodes, --files and --reads must be at least 1");
    }
    let algorithms: Vec<AlgorithmKind> = args
        .algorithms
        .iter()
        .map(|a| AlgorithmKind::parse_live(a).map_err(anyhow::Error::from))
        .collect::<Result<_>>()?;
    let (a, algs) = (&args, &algorithms);
    let outcome = in_tempdir(
        "coopcache-demo-",
        |dir| async move { demo(a, algs, &dir).await },
    )?;
    let outcomes = outcome;
    report(&args, &outcomes)
}

async fn demo(args: &DemoArgs, algorithms: &[AlgorithmKind], dir: &Path) -> Result<Vec<Outcome>> {
    let origin_dir = dir.join("origin");
    let blocks_per_file = args.file_size.div_ceil(args.block_size);
    let digests = generate(&origin_dir, args, blocks_per_file)?;
    eprintln!(
        "origin: {} of {} KiB in {}, {} per origin request; {} with {} KiB of cache each",
        coopcache_console::output::count(args.files as u64, "file"),
        args.file_size >> 10,
        origin_dir.display(),
        humantime(args.origin_delay),
        coopcache_console::output::count(args.nodes as u64, "node"),
        args.cache >> 10
    );
    let mut spec = LoopbackSpec::new(dir, args.nodes, origin_dir.clone())?;
    spec.origin_delay = args.origin_delay;
    spec.block_size = u32::try_from(args.block_size)?;
    let mut out = Vec::new();
    for &algorithm in algorithms {
        eprintln!("running {algorithm} ...");
        spec.algorithm = algorithm;
        out.push(run_one(args, &spec, &digests, blocks_per_file).await?);
    }
    Ok(out)
}

fn humantime(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// Writes the origin's files and returns each block's SHA-256.
fn generate(dir: &Path, args: &DemoArgs, blocks_per_file: u64) -> Result<Vec<Vec<[u8; 32]>>> {
    std::fs::create_dir_all(dir)?;
    let mut rng = Pcg64Mcg::seed_from_u64(args.seed.value);
    let mut digests = Vec::new();
    for f in 0..args.files {
        let mut data = vec![0u8; args.file_size as usize];
        rng.fill(&mut data[..]);
        std::fs::write(dir.join(format!("file-{f:04}.bin")), &data)?;
        digests.push(
            (0..blocks_per_file)
                .map(|b| {
                    let s = (b * args.block_size) as usize;
                    let e = (s + args.block_size as usize).min(data.len());
                    Sha256::digest(&data[s..e]).into()
                })
                .collect(),
        );
    }
    Ok(digests)
}

async fn run_one(
    args: &DemoArgs,
    spec: &LoopbackSpec,
    digests: &[Vec<[u8; 32]>],
    blocks_per_file: u64,
) -> Result<Outcome> {
    let nodes = start_cluster(spec, &vec![args.cache; spec.names.len()]).await?;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        let node = node.clone();
        let (files, reads, skew, seed) = (args.files, args.reads, args.skew, args.seed.value);
        let digests: Vec<Vec<[u8; 32]>> = digests.to_vec();
        tasks.push(tokio::spawn(async move {
            let mut rng = Pcg64Mcg::seed_from_u64(seed ^ ((i as u64 + 1) * 0x9e37_79b9));
            let zipf = Zipf::new(f64::from(files), skew).map_err(|e| anyhow::anyhow!("{e}"))?;
            let mut lat = Vec::with_capacity(reads as usize);
            let (mut wrong, mut levels) = (0u64, [0u64; Level::ALL.len()]);
            for _ in 0..reads {
                let f = zipf.sample(&mut rng) as usize - 1;
                let b = rng.random_range(0..blocks_per_file) as u32;
                let path: Arc<str> = Arc::from(format!("file-{f:04}.bin"));
                let t = Instant::now();
                let version = node.stat(&path).await?;
                let (data, level) = node.read_block(&path, &version, b).await?;
                lat.push(t.elapsed());
                levels[level.index()] += 1;
                let digest: [u8; 32] = Sha256::digest(&data).into();
                if digest != digests[f][b as usize] {
                    wrong += data.len() as u64;
                }
            }
            anyhow::Ok((lat, wrong, levels))
        }));
    }
    let mut lat = Vec::new();
    let (mut wrong, mut levels) = (0, [0u64; Level::ALL.len()]);
    for t in tasks {
        let (l, w, lv) = t.await??;
        lat.extend(l);
        wrong += w;
        for (sum, n) in levels.iter_mut().zip(lv) {
            *sum += n;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let t = totals(&nodes).await?;
    shutdown(&nodes);
    lat.sort_unstable();
    let mean = lat.iter().map(Duration::as_secs_f64).sum::<f64>() / lat.len().max(1) as f64;
    let p99 = lat
        .get((lat.len() * 99 / 100).min(lat.len().saturating_sub(1)))
        .map_or(0.0, Duration::as_secs_f64);
    Ok(Outcome {
        algorithm: spec.algorithm.to_string(),
        nodes: args.nodes,
        reads: lat.len() as u64,
        origin_reads: t.origin_reads,
        origin_bytes: t.origin_bytes,
        local: levels[Level::Local.index()],
        peer: levels[Level::RemoteNode.index()],
        origin: levels[Level::Origin.index()],
        mean_ms: mean * 1e3,
        p99_ms: p99 * 1e3,
        wrong_bytes: wrong,
        integrity_failures: t.integrity_failures,
        seconds,
    })
}

fn report(args: &DemoArgs, outcomes: &[Outcome]) -> Result<()> {
    if args.report.json {
        coopcache_console::output::print_json(outcomes)?;
    } else {
        let header = [
            "algorithm",
            "reads",
            "origin reads",
            "origin MiB",
            "local",
            "peer",
            "origin",
            "mean ms",
            "p99 ms",
            "wrong bytes",
        ];
        let rows: Vec<Vec<String>> = outcomes
            .iter()
            .map(|o| {
                vec![
                    o.algorithm.clone(),
                    o.reads.to_string(),
                    o.origin_reads.to_string(),
                    format!("{:.1}", o.origin_bytes as f64 / 1048576.0),
                    o.local.to_string(),
                    o.peer.to_string(),
                    o.origin.to_string(),
                    format!("{:.2}", o.mean_ms),
                    format!("{:.2}", o.p99_ms),
                    o.wrong_bytes.to_string(),
                ]
            })
            .collect();
        coopcache_console::table::print(&header, &rows, 1);
        // Every other algorithm against Base (or the first, without it).
        let wrong: u64 = outcomes.iter().map(|o| o.wrong_bytes).sum();
        let reference = outcomes.iter().find(|o| o.algorithm == "base");
        if let Some(base) = reference.or(outcomes.first())
            && base.origin_reads > 0
        {
            let others: Vec<&Outcome> = outcomes
                .iter()
                .filter(|o| !std::ptr::eq(*o, base))
                .collect();
            println!();
            for (i, o) in others.iter().enumerate() {
                let saved = 1.0 - o.origin_reads as f64 / base.origin_reads as f64;
                let (pct, fewer) = if saved >= 0.0 {
                    (saved, "fewer")
                } else {
                    (-saved, "more")
                };
                let speed = base.mean_ms / o.mean_ms.max(1e-9);
                let (x, faster) = if speed >= 1.0 {
                    (speed, "faster")
                } else {
                    (1.0 / speed, "slower")
                };
                let end = if i + 1 == others.len() {
                    format!("; wrong bytes: {wrong}")
                } else {
                    String::new()
                };
                println!(
                    "{} needs {:.0}% {fewer} origin reads than {} and reads {x:.2}x {faster} on average{end}",
                    o.algorithm,
                    100.0 * pct,
                    base.algorithm,
                );
            }
        }
    }
    let bars: Vec<String> = outcomes.iter().map(|o| o.algorithm.clone()).collect();
    let seg = |name, f: fn(&Outcome) -> u64| Segment {
        name,
        values: outcomes.iter().map(|o| f(o) as f64).collect(),
    };
    if let Some(path) = &args.report.plot {
        stacked_bars(
            path,
            "coopcache demo: where each block read was served",
            "block reads",
            &bars,
            &[
                seg("local memory", |o| o.local),
                seg("peer memory", |o| o.peer),
                seg("origin", |o| o.origin),
            ],
        )?;
        eprintln!("plot: {}", path.display());
    }
    if outcomes.iter().any(|o| o.wrong_bytes > 0) {
        bail!("wrong bytes delivered");
    }
    Ok(())
}
