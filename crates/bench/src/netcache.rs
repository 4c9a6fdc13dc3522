//! `coopcache bench netcache`: the Netcache paper's experiment (Section
//! 4.3). One busy node primes its cache by reading a file 1.5-2x larger
//! than its memory sequentially, then times random 1 KiB reads of it; idle
//! peers with the same memory read nothing and only hold what the busy node
//! forwards. The time is reported relative to the same node without
//! cooperation (algorithm `base`, alone).
//!
//! The cooperative side runs N-Chance (its forwarding of evicted singlets
//! fills the idle peers, as Netcache's propagation to idle hosts did) and
//! Direct (Netcache's own arrangement: the busy node parks its evictions on
//! the idle members advertising room, which keep them for it alone). Both
//! place only on members that say they are idle, so every run first waits
//! until the busy node has heard each peer say so.

use super::common::{
    Bar, Counters, in_tempdir, median, report_rows, rng, timed, write_origin_file, wrong_bytes,
};
use crate::loopback::{LoopbackSpec, shutdown, start_cluster};
use anyhow::{Result, bail};
use coopcache_console::args::{ReportArgs, Seed};
use coopcache_console::args::{parse_duration, parse_size};
use coopcache_console::plot::{Series, Style, xy};
use coopcache_core::coop::AlgorithmKind;
use coopcache_node::NodeHandle;
use futures::StreamExt;
use rand::Rng;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

const FILE: &str = "netcache.bin";

#[derive(clap::Args)]
pub struct NetcacheArgs {
    /// Size of the file (the paper's is 200 MiB).
    #[arg(long, default_value = "32MiB", value_parser = parse_size)]
    file_size: u64,
    /// Block cache of every node (busy and idle); by default the file is
    /// 1.6x this, as the paper's 200 MB file was to its 128 MB machines.
    #[arg(long, value_parser = parse_size)]
    cache: Option<u64>,
    /// Numbers of idle peers to run, each against the same base run.
    #[arg(long, value_delimiter = ',', default_value = "0,1,2,3,4,6")]
    peers: Vec<u32>,
    /// Cooperative algorithms to run with the idle peers (`base`, alone,
    /// is always the reference) [default: nchance,direct; direct with
    /// --private].
    #[arg(long, value_delimiter = ',', value_parser = parse_coop)]
    algorithms: Option<Vec<AlgorithmKind>>,
    /// The busy node's origin is private (`coopcache node --private`): its
    /// evictions are parked on the idle peers encrypted, and checked when
    /// they come back. Only Direct parks blocks sealed.
    #[arg(long)]
    private: bool,
    /// How long a node's own reads must have stopped before it calls
    /// itself idle and lends its memory (the node's default is 10 s; the
    /// idle peers here never read, so only the wait before priming
    /// changes).
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    idle_after: Duration,
    /// Timed random reads (the paper's is about 10,000).
    #[arg(long, default_value_t = 2000)]
    reads: u32,
    /// Size of each random read.
    #[arg(long, default_value = "1KiB", value_parser = parse_size)]
    read_size: u64,
    /// Cache block size. 8 KiB by default: a 1 KiB read then moves at most
    /// two 8 KiB blocks between nodes (close to Netcache's 1-4 KiB buffer
    /// cache blocks), where the node's default of 64 KiB would move 64x
    /// the bytes asked for on every peer hit.
    #[arg(long, default_value = "8KiB", value_parser = parse_size)]
    block_size: u64,
    /// Emulated latency of every origin request (the paper's local disk).
    #[arg(long, default_value = "10ms", value_parser = parse_duration)]
    origin_delay: Duration,
    /// Sequential passes over the file before the timed reads (the paper
    /// read it twice so that every block reaches the idle peers).
    #[arg(long, default_value_t = 2)]
    prime_passes: u32,
    /// Block reads in flight while priming (priming is not timed; one at a
    /// time, as the paper did, takes 41 s per pass of the default file).
    /// Beyond about 8 the busy node forwards evicted blocks faster than
    /// its peers take them and the nodes drop them at their bounded queues
    /// (measured: 128-224 dropped with 32 in flight, and one idle peer then
    /// looked like Netcache's); the report counts such drops.
    #[arg(long, default_value_t = 8)]
    prime_concurrency: usize,
    /// Repetitions of every configuration, interleaved; medians reported.
    #[arg(long, default_value_t = 1)]
    reps: u32,
    #[command(flatten)]
    pub(crate) seed: Seed,
    #[command(flatten)]
    report: ReportArgs,
}

/// A live algorithm other than `base` (the reference every row is
/// compared with).
fn parse_coop(s: &str) -> Result<AlgorithmKind, String> {
    match AlgorithmKind::parse_live(s) {
        Ok(AlgorithmKind::Base) => Err("base is the reference, always run".into()),
        Ok(kind) => Ok(kind),
        Err(e) => Err(e.to_string()),
    }
}

/// One configuration: no cooperation alone, or an algorithm with idle
/// peers.
#[derive(Clone, Copy)]
struct Config {
    algorithm: AlgorithmKind,
    peers: u32,
}

/// One timed run.
struct Sample {
    seconds: f64,
    /// Blocks cached in the whole cluster when the timed reads start.
    cluster_blocks: u64,
    /// Messages the whole cluster dropped, priming included.
    dropped: u64,
    busy: Counters,
    wrong_bytes: u64,
    integrity_failures: u64,
    /// The busy node's round trip to its peers at the end (median).
    rtt_us: Option<u64>,
}

#[derive(serde::Serialize)]
struct Row {
    bench: &'static str,
    algorithm: String,
    peers: u32,
    reps: u32,
    file_size: u64,
    cache: u64,
    block_size: u64,
    reads: u32,
    /// Median time of the timed reads.
    seconds: f64,
    mean_read_ms: f64,
    /// Time against the base run's.
    relative: f64,
    /// Netcache's measured relative time, where the paper gives one.
    paper: Option<f64>,
    target: Option<f64>,
    met: Option<bool>,
    /// The busy node's timed block reads by level, per repetition.
    local: f64,
    peer: f64,
    origin: f64,
    origin_reads: f64,
    timeouts: f64,
    /// The file's blocks, and the blocks the whole cluster cached after
    /// priming (more than the file means duplicates).
    file_blocks: u64,
    cluster_blocks: f64,
    /// Messages the cluster dropped at its bounded queues.
    dropped_messages: f64,
    wrong_bytes: u64,
    integrity_failures: u64,
    /// The busy node's origin is private: its blocks parked sealed.
    private: bool,
    /// Blocks it parked sealed, and took back opened and verified, during
    /// the timed reads (per repetition).
    sealed: f64,
    opened: f64,
    /// Its median round trip to its peers (median over repetitions).
    rtt_us: Option<f64>,
    /// What sealing and opening one block costs (median), with --private.
    seal_us: Option<f64>,
    open_us: Option<f64>,
    /// The same for a unified block (content key, `--unify-key`).
    unified_seal_us: Option<f64>,
    unified_open_us: Option<f64>,
}

/// The paper's Figure 2 (as its text gives it) and the targets.
fn paper_and_target(peers: u32) -> (Option<f64>, Option<f64>) {
    match peers {
        0 => (Some(1.27), Some(1.03)),
        1 => (Some(0.62), Some(0.30)),
        // "levels out to approximately 35-40%" with three or four peers.
        3 | 4 => (Some(0.375), Some(0.15)),
        p if p > 4 => (None, Some(0.15)),
        _ => (None, None),
    }
}

pub(crate) fn run(args: NetcacheArgs) -> Result<()> {
    let cache = args.cache.unwrap_or(args.file_size * 5 / 8);
    check(&args, cache)?;
    let rows = in_tempdir("coopcache-bench-netcache-", |dir| bench(&args, cache, dir))?;
    report_rows(
        args.report.json,
        &rows,
        print_table,
        args.report.plot.as_deref(),
        plot,
        |r| r.wrong_bytes,
    )
}

/// The cooperative algorithms to run.
fn algorithms(args: &NetcacheArgs) -> Result<Vec<AlgorithmKind>> {
    use AlgorithmKind::{Direct, NChance};
    let chosen = match (&args.algorithms, args.private) {
        (Some(a), _) => a.clone(),
        (None, true) => vec![Direct],
        (None, false) => vec![NChance, Direct],
    };
    if args.private
        && let Some(other) = chosen.iter().find(|&&a| a != Direct)
    {
        bail!(
            "--private runs only with --algorithms direct: {other} would hand the busy node's private blocks to its peers in the clear"
        );
    }
    Ok(chosen)
}

fn check(args: &NetcacheArgs, cache: u64) -> Result<()> {
    algorithms(args)?;
    if args.reads == 0
        || args.reps == 0
        || args.read_size == 0
        || args.prime_concurrency == 0
        || args.block_size == 0
    {
        bail!(
            "--reads, --reps, --read-size, --prime-concurrency and --block-size must be at least 1"
        );
    }
    if args.read_size > args.file_size {
        bail!("--read-size is larger than --file-size");
    }
    let ratio = args.file_size as f64 / cache.max(1) as f64;
    if !(1.5..=2.0).contains(&ratio) {
        eprintln!(
            "note: the file is {ratio:.2}x the cache; the paper's was 1.5-2x the machines' memory"
        );
    }
    Ok(())
}

async fn bench(args: &NetcacheArgs, cache: u64, dir: PathBuf) -> Result<Vec<Row>> {
    let origin = dir.join("origin");
    let data = Arc::new(write_origin_file(
        &origin,
        FILE,
        args.file_size,
        &mut rng(args.seed.value, 1),
    )?);
    let most = args.peers.iter().copied().max().unwrap_or(0);
    let mut spec = LoopbackSpec::new(&dir, most + 1, origin)?;
    spec.origin_delay = args.origin_delay;
    spec.block_size = u32::try_from(args.block_size)?;
    spec.idle_after = Some(args.idle_after);
    if args.private {
        spec.private = vec![0];
    }
    let mut configs = vec![Config {
        algorithm: AlgorithmKind::Base,
        peers: 0,
    }];
    for &algorithm in &algorithms(args)? {
        configs.extend(args.peers.iter().map(|&peers| Config { algorithm, peers }));
    }
    eprintln!(
        "netcache: {} MiB file, {} MiB cache per node ({:.2}x), {} KiB blocks, {} random {} B reads, {:?} per origin request",
        args.file_size >> 20,
        cache >> 20,
        args.file_size as f64 / cache as f64,
        args.block_size >> 10,
        args.reads,
        args.read_size,
        args.origin_delay
    );
    let mut samples: Vec<Vec<Sample>> = configs.iter().map(|_| Vec::new()).collect();
    for rep in 0..args.reps {
        let offsets: Vec<u64> = {
            let mut r = rng(args.seed.value.wrapping_add(u64::from(rep)), 2);
            let last = args.file_size - args.read_size;
            (0..args.reads).map(|_| r.random_range(0..=last)).collect()
        };
        for (i, c) in configs.iter().enumerate() {
            spec.algorithm = c.algorithm;
            eprintln!(
                "rep {}: {} with {} idle peers ...",
                rep + 1,
                c.algorithm,
                c.peers
            );
            let s = run_one(args, &spec, cache, c.peers, &data, &offsets).await?;
            samples[i].push(s);
        }
    }
    let base = median(&samples[0].iter().map(|s| s.seconds).collect::<Vec<_>>());
    let cost = match args.private {
        true => Some(SealCost {
            own: seal_cost(args.block_size, None)?,
            unified: seal_cost(args.block_size, Some([9; 32]))?,
        }),
        false => None,
    };
    Ok(configs
        .iter()
        .zip(&samples)
        .map(|(c, s)| row(args, cache, *c, s, base, cost))
        .collect())
}

/// Median microseconds to seal and to open one block, under the node's
/// own key and unified (`--unify-key`).
#[derive(Clone, Copy)]
struct SealCost {
    own: (f64, f64),
    unified: (f64, f64),
}

/// Median microseconds to seal, and to open, one block of `block_size`
/// bytes, as a private node does to each block it parks and takes back;
/// with `dedup`, unified blocks.
pub(super) fn seal_cost(
    block_size: u64,
    dedup: Option<coopcache_node::seal::DedupKey>,
) -> Result<(f64, f64)> {
    use coopcache_core::protocol::Sealer;
    use coopcache_node::block::{Block, BlockId, UNIFIABLE};
    use coopcache_node::seal::BlockSealer;
    const ROUNDS: u32 = 2000;
    let bs = u32::try_from(block_size).unwrap_or(u32::MAX);
    let (mut sealer, file) = match dedup {
        Some(key) => (BlockSealer::unifying(bs, key), 1 | UNIFIABLE),
        None => (BlockSealer::new(bs), 1),
    };
    let (mut seal, mut open) = (Vec::new(), Vec::new());
    for index in 0..ROUNDS {
        // Distinct contents, as the blocks of a file have.
        let mut bytes = vec![7u8; block_size as usize];
        bytes[..4].copy_from_slice(&index.to_le_bytes());
        let data = Block::new(bytes.into());
        let block = BlockId::new(file, index);
        let started = std::time::Instant::now();
        let sealed = sealer.seal(block, &data);
        seal.push(started.elapsed().as_secs_f64() * 1e6);
        let started = std::time::Instant::now();
        let opened = sealed.and_then(|s| sealer.open(block, s.key.as_ref(), &s.data));
        open.push(started.elapsed().as_secs_f64() * 1e6);
        if opened.is_none_or(|o| o.bytes != data.bytes) {
            bail!("a sealed block did not open to its bytes");
        }
    }
    Ok((median(&seal), median(&open)))
}

fn row(
    args: &NetcacheArgs,
    cache: u64,
    c: Config,
    s: &[Sample],
    base: f64,
    cost: Option<SealCost>,
) -> Row {
    let seconds = median(&s.iter().map(|s| s.seconds).collect::<Vec<_>>());
    let relative = seconds / base.max(f64::MIN_POSITIVE);
    let (paper, target) = match c.algorithm {
        AlgorithmKind::Base => (None, None),
        _ => paper_and_target(c.peers),
    };
    let per_rep = |f: &dyn Fn(&Sample) -> u64| s.iter().map(f).sum::<u64>() as f64 / s.len() as f64;
    Row {
        bench: "netcache",
        algorithm: c.algorithm.to_string(),
        peers: c.peers,
        reps: s.len() as u32,
        file_size: args.file_size,
        cache,
        block_size: args.block_size,
        reads: args.reads,
        seconds,
        mean_read_ms: seconds * 1e3 / f64::from(args.reads),
        relative,
        paper,
        target,
        met: target.map(|t| relative <= t),
        local: per_rep(&|s| s.busy.at("local")),
        peer: per_rep(&|s| s.busy.at("peer") + s.busy.at("manager")),
        origin: per_rep(&|s| s.busy.at("origin")),
        origin_reads: per_rep(&|s| s.busy.origin_reads),
        timeouts: per_rep(&|s| s.busy.timeouts),
        file_blocks: args.file_size.div_ceil(args.block_size),
        cluster_blocks: per_rep(&|s| s.cluster_blocks),
        dropped_messages: per_rep(&|s| s.dropped),
        wrong_bytes: s.iter().map(|s| s.wrong_bytes).sum(),
        integrity_failures: s.iter().map(|s| s.integrity_failures).sum(),
        private: args.private,
        sealed: per_rep(&|s| s.busy.sealed_blocks),
        opened: per_rep(&|s| s.busy.opened_blocks),
        rtt_us: {
            let rtts: Vec<f64> = s
                .iter()
                .filter_map(|s| s.rtt_us)
                .map(|r| r as f64)
                .collect();
            (!rtts.is_empty()).then(|| median(&rtts))
        },
        seal_us: cost.map(|c| c.own.0),
        open_us: cost.map(|c| c.own.1),
        unified_seal_us: cost.map(|c| c.unified.0),
        unified_open_us: cost.map(|c| c.unified.1),
    }
}

/// Starts the busy node and `peers` idle ones, primes, and times the reads.
async fn run_one(
    args: &NetcacheArgs,
    spec: &LoopbackSpec,
    cache: u64,
    peers: u32,
    data: &Arc<Vec<u8>>,
    offsets: &[u64],
) -> Result<Sample> {
    let nodes = start_cluster(spec, &vec![cache; peers as usize + 1]).await?;
    let result = match wait_for_idle_peers(args, &nodes).await {
        Ok(()) => prime_and_time(args, &nodes, data, offsets).await,
        Err(e) => Err(e),
    };
    let cluster = Counters::sum(&nodes).await;
    shutdown(&nodes);
    let (mut sample, wrong) = result?;
    let cluster = cluster?;
    sample.wrong_bytes += wrong;
    sample.integrity_failures = cluster.integrity_failures;
    sample.dropped = cluster.dropped_messages;
    Ok(sample)
}

/// Waits until the busy node (the first) has heard every peer say it is
/// idle: before that, no algorithm parks anything there.
async fn wait_for_idle_peers(args: &NetcacheArgs, nodes: &[Arc<NodeHandle>]) -> Result<()> {
    wait_for_idle(nodes, args.idle_after).await
}

/// Waits until the first of `nodes` has heard every other say it is idle
/// (each is after `idle_after` without reads, heard on the next ping).
pub(super) async fn wait_for_idle(nodes: &[Arc<NodeHandle>], idle_after: Duration) -> Result<()> {
    let patience = idle_after + Duration::from_secs(5);
    let deadline = std::time::Instant::now() + patience;
    loop {
        let status = nodes[0].status().await?;
        let idle = status
            .members
            .iter()
            .filter(|m| m.id != status.id)
            .filter(|m| m.memory.is_some_and(|m| m.idle))
            .count();
        if idle + 1 >= nodes.len() {
            return Ok(());
        }
        if std::time::Instant::now() >= deadline {
            bail!(
                "the busy node heard {idle} of {} idle peers say so within {patience:?}",
                nodes.len() - 1
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn prime_and_time(
    args: &NetcacheArgs,
    nodes: &[Arc<NodeHandle>],
    data: &Arc<Vec<u8>>,
    offsets: &[u64],
) -> Result<(Sample, u64)> {
    let busy = &nodes[0];
    let mut wrong = 0;
    for _ in 0..args.prime_passes {
        wrong += prime(busy, FILE, data, args.block_size, args.prime_concurrency).await?;
    }
    // Let the last forwarded blocks land before the clock starts.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = Counters::of(busy).await?;
    let cluster_blocks = Counters::sum(nodes).await?.cached_blocks;
    let bar = Bar::new(offsets.len() as u64, "random reads");
    let (timed_wrong, seconds) = timed(async {
        let mut wrong = 0;
        for &off in offsets {
            let end = off + args.read_size;
            let got = busy.read(FILE, Some(off..end)).await?;
            wrong += wrong_bytes(&got, &data[off as usize..end as usize]);
            bar.inc();
        }
        anyhow::Ok(wrong)
    })
    .await;
    let busy_counters = Counters::of(busy).await?.since(&before);
    let rtts: Vec<f64> = busy
        .status()
        .await?
        .members
        .iter()
        .filter_map(|m| m.rtt_us)
        .map(|r| r as f64)
        .collect();
    let rtt_us = (!rtts.is_empty()).then(|| median(&rtts) as u64);
    Ok((
        Sample {
            seconds,
            cluster_blocks,
            dropped: 0,
            busy: busy_counters,
            wrong_bytes: timed_wrong?,
            integrity_failures: 0,
            rtt_us,
        },
        wrong,
    ))
}

/// Reads every block of the file `path` (whose bytes are `data`) in
/// order, `concurrency` at a time, and returns the wrong bytes seen.
pub(super) async fn prime(
    node: &Arc<NodeHandle>,
    path: &str,
    data: &[u8],
    block_size: u64,
    concurrency: usize,
) -> Result<u64> {
    let path: Arc<str> = Arc::from(path);
    let version = node.stat(&path).await?;
    let blocks = data.len().div_ceil(block_size as usize) as u32;
    let bar = Bar::new(u64::from(blocks), "priming");
    let mut reads = futures::stream::iter(0..blocks)
        .map(|b| {
            let (path, version) = (path.clone(), version.clone());
            async move { (b, node.read_block(&path, &version, b).await) }
        })
        .buffered(concurrency);
    let mut wrong = 0;
    while let Some((b, r)) = reads.next().await {
        let (got, _) = r?;
        let start = b as usize * block_size as usize;
        let end = (start + block_size as usize).min(data.len());
        wrong += wrong_bytes(&got, &data[start..end]);
        bar.inc();
    }
    Ok(wrong)
}

fn print_table(rows: &[Row]) {
    let header = [
        "algorithm",
        "idle peers",
        "time s",
        "mean read ms",
        "relative",
        "paper",
        "target",
        "met",
        "local",
        "peer",
        "origin",
        "timeouts",
        "cached blocks",
        "dropped",
        "sealed/opened",
        "rtt us",
        "wrong bytes",
    ];
    let opt = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.2}"));
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.algorithm.clone(),
                r.peers.to_string(),
                format!("{:.2}", r.seconds),
                format!("{:.3}", r.mean_read_ms),
                format!("{:.3}", r.relative),
                opt(r.paper),
                opt(r.target),
                r.met
                    .map_or("-".into(), |m| if m { "yes".into() } else { "no".into() }),
                format!("{:.0}", r.local),
                format!("{:.0}", r.peer),
                format!("{:.0}", r.origin),
                format!("{:.0}", r.timeouts),
                format!("{:.0}/{}", r.cluster_blocks, r.file_blocks),
                format!("{:.0}", r.dropped_messages),
                match r.private {
                    true => format!("{:.0}/{:.0}", r.sealed, r.opened),
                    false => "-".into(),
                },
                r.rtt_us.map_or("-".into(), |v| format!("{v:.0}")),
                r.wrong_bytes.to_string(),
            ]
        })
        .collect();
    coopcache_console::table::print(&header, &cells, 1);
    if let Some(r) = rows.first()
        && let (Some(seal), Some(open)) = (r.seal_us, r.open_us)
    {
        println!(
            "encryption per {} KiB block (median of 2000): seal {seal:.1} us, open {open:.1} us, beside the peer round trips above",
            r.block_size >> 10
        );
        if let (Some(seal), Some(open)) = (r.unified_seal_us, r.unified_open_us) {
            println!(
                "unified (--unify-key: keyed content hash, then seal): seal {seal:.1} us, open {open:.1} us"
            );
        }
    }
}

/// Relative time against idle peers, with the paper's points and the targets.
fn plot(path: &Path, rows: &[Row]) -> Result<()> {
    let coop: Vec<&Row> = rows.iter().filter(|r| r.algorithm != "base").collect();
    let points = |rows: &[&Row], f: &dyn Fn(&Row) -> Option<f64>| -> Vec<(f64, f64)> {
        rows.iter()
            .filter_map(|r| f(r).map(|y| (f64::from(r.peers), y)))
            .collect()
    };
    let most = coop.iter().map(|r| r.peers).max().unwrap_or(1).max(1);
    let mut algorithms: Vec<&str> = coop.iter().map(|r| r.algorithm.as_str()).collect();
    algorithms.dedup();
    let names: Vec<String> = algorithms
        .iter()
        .map(|a| format!("coopcache ({a})"))
        .collect();
    let mut series: Vec<Series> = algorithms
        .iter()
        .zip(&names)
        .map(|(&a, name)| {
            let rows: Vec<&Row> = coop.iter().copied().filter(|r| r.algorithm == a).collect();
            Series {
                name,
                points: points(&rows, &|r| Some(r.relative)),
            }
        })
        .collect();
    // One target line, whatever the number of algorithms.
    let mut targets = points(&coop, &|r| r.target);
    targets.sort_by(|a, b| a.0.total_cmp(&b.0));
    targets.dedup_by(|a, b| a.0 == b.0);
    series.extend([
        Series {
            name: "Netcache (paper, Figure 2)",
            points: [0, 1, 3, 4]
                .iter()
                .filter_map(|&p| paper_and_target(p).0.map(|y| (f64::from(p), y)))
                .collect(),
        },
        Series {
            name: "target",
            points: targets,
        },
        Series {
            name: "no cooperation",
            points: vec![(0.0, 1.0), (f64::from(most), 1.0)],
        },
    ]);
    xy(
        path,
        "Netcache's experiment: time relative to no cooperation",
        ("idle peers", "time / time without cooperation"),
        &series,
        false,
        Style::Lines,
    )
}
