//! `coopcache bench staggered`: C2Cfs's synthetic read (Section 5.4).
//! Nodes read the same file one after another, each starting when the one
//! before has finished; only the first should touch the origin. Then the
//! single-node overhead (C2Cfs's Table 8): a cold read of a file through
//! one node against the same reads issued directly to the origin.

use super::common::{
    Bar, Counters, in_tempdir, median, plot_to, rng, timed, write_origin_file, wrong_bytes,
};
use crate::loopback::{LoopbackSpec, shutdown, start_cluster};
use anyhow::{Context, Result, bail};
use coopcache_console::args::{ReportArgs, Seed};
use coopcache_console::args::{parse_duration, parse_size};
use coopcache_console::plot::{Series, Style, xy};
use coopcache_core::coop::AlgorithmKind;
use coopcache_node::handle::read_ahead;
use coopcache_node::origin::Origin;
use futures::StreamExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

const FILE: &str = "staggered.bin";

#[derive(clap::Args)]
pub struct StaggeredArgs {
    /// Size of the file every reader reads (the paper's is 100 MB).
    #[arg(long, default_value = "16MiB", value_parser = parse_size)]
    file_size: u64,
    /// Readers (nodes), one after another.
    #[arg(long, default_value_t = 4)]
    readers: u32,
    /// Block cache per node; by default the file plus an eighth, so that
    /// every reader can keep the whole file as C2Cfs's clients did.
    #[arg(long, value_parser = parse_size)]
    cache: Option<u64>,
    /// Cache block size (also the request size of the direct reads).
    #[arg(long, default_value = "64KiB", value_parser = parse_size)]
    block_size: u64,
    /// Emulated latency of every origin request.
    #[arg(long, default_value = "10ms", value_parser = parse_duration)]
    origin_delay: Duration,
    /// Algorithm of the staggered readers.
    #[arg(long, default_value = "nchance")]
    algorithm: AlgorithmKind,
    /// File sizes of the single-node overhead measurement (C2Cfs's Table 8:
    /// 1, 10 and 100 MB); the targets apply to the first three in order.
    #[arg(long, value_delimiter = ',', default_value = "1MiB,10MiB,100MiB", value_parser = parse_size)]
    overhead_sizes: Vec<u64>,
    /// Repetitions of each overhead measurement (node and direct
    /// alternating); medians reported. 0 skips the measurement.
    #[arg(long, default_value_t = 5)]
    overhead_reps: u32,
    #[command(flatten)]
    pub(crate) seed: Seed,
    #[command(flatten)]
    report: ReportArgs,
}

/// One reader's pass over the file.
#[derive(serde::Serialize)]
struct Reader {
    bench: &'static str,
    kind: &'static str,
    reader: u32,
    file_size: u64,
    seconds: f64,
    /// Origin bytes and requests of the whole cluster during this reader's pass.
    origin_bytes: u64,
    origin_reads: u64,
    local: u64,
    peer: u64,
    origin: u64,
    /// Protocol messages this reader received from each node that read
    /// the file before it (the holders), in their order: a holder's `Data`
    /// for each block the manager striped to it, and the manager's own
    /// messages besides.
    from_holders: Vec<u64>,
    timeouts: u64,
    wrong_bytes: u64,
}

/// The staggered run's total.
#[derive(serde::Serialize)]
struct Total {
    bench: &'static str,
    kind: &'static str,
    readers: u32,
    file_size: u64,
    origin_bytes: u64,
    /// Total origin bytes over the file size.
    ratio: f64,
    /// Reduction against every reader reading the origin (C2Cfs: 75% with 4).
    reduction_pct: f64,
    target_ratio: f64,
    met: bool,
    integrity_failures: u64,
    wrong_bytes: u64,
}

/// One file size of the single-node overhead.
#[derive(serde::Serialize)]
struct Overhead {
    bench: &'static str,
    kind: &'static str,
    file_size: u64,
    reps: u32,
    node_seconds: f64,
    direct_seconds: f64,
    overhead_pct: f64,
    paper_pct: Option<f64>,
    target_pct: Option<f64>,
    met: Option<bool>,
    wrong_bytes: u64,
}

struct Outcome {
    readers: Vec<Reader>,
    total: Total,
    overhead: Vec<Overhead>,
}

/// C2Cfs's Table 8 and the targets, by position.
const PAPER_PCT: [f64; 3] = [24.5, 2.9, 0.5];
const TARGET_PCT: [f64; 3] = [5.0, 1.0, 0.5];

pub(crate) fn run(args: StaggeredArgs) -> Result<()> {
    if args.readers == 0
        || args.file_size == 0
        || args.block_size == 0
        || args.overhead_sizes.contains(&0)
    {
        bail!("--readers, --file-size, --block-size and --overhead-sizes must be at least 1");
    }
    let out = in_tempdir("coopcache-bench-staggered-", |dir| bench(&args, dir))?;
    report(&args, &out)
}

async fn bench(args: &StaggeredArgs, dir: PathBuf) -> Result<Outcome> {
    let origin = dir.join("origin");
    let data = write_origin_file(&origin, FILE, args.file_size, &mut rng(args.seed.value, 1))?;
    let mut spec = LoopbackSpec::new(&dir, args.readers, origin.clone())?;
    spec.origin_delay = args.origin_delay;
    spec.block_size = u32::try_from(args.block_size)?;
    spec.algorithm = args.algorithm;
    let cache = args.cache.unwrap_or(args.file_size + args.file_size / 8);
    eprintln!(
        "staggered: {} of a {} KiB file, {} KiB cache each, {} KiB blocks, {:?} per origin request, {}",
        coopcache_console::output::count(args.readers as u64, "reader"),
        args.file_size >> 10,
        cache >> 10,
        args.block_size >> 10,
        args.origin_delay,
        args.algorithm
    );
    let (readers, total) = staggered(args, &spec, cache, &data).await?;
    let mut overhead = Vec::new();
    if args.overhead_reps > 0 {
        for (i, &size) in args.overhead_sizes.iter().enumerate() {
            let name = format!("overhead-{i}.bin");
            let data = write_origin_file(
                &origin,
                &name,
                size,
                &mut rng(args.seed.value, 2 + i as u64),
            )?;
            overhead.push(single_node_overhead(args, &spec, &origin, &name, &data, i).await?);
        }
    }
    Ok(Outcome {
        readers,
        total,
        overhead,
    })
}

/// Each node reads the whole file after the one before it finished.
async fn staggered(
    args: &StaggeredArgs,
    spec: &LoopbackSpec,
    cache: u64,
    data: &[u8],
) -> Result<(Vec<Reader>, Total)> {
    let nodes = start_cluster(spec, &vec![cache; args.readers as usize]).await?;
    let bar = Bar::new(u64::from(args.readers), "readers");
    let mut readers = Vec::new();
    let mut ids = Vec::new();
    for node in &nodes {
        ids.push(node.status().await?.id);
    }
    for (k, node) in nodes.iter().enumerate() {
        let before = Counters::sum(&nodes).await?;
        let heard = node.status().await?.received;
        let (got, seconds) = timed(node.read(FILE, None)).await;
        let got = got.with_context(|| format!("reader {}", k + 1))?;
        let d = Counters::sum(&nodes).await?.since(&before);
        let now = node.status().await?.received;
        let count = |m: &std::collections::BTreeMap<u32, u64>, id| m.get(id).copied().unwrap_or(0);
        let from_holders = (ids[..k].iter())
            .map(|id| count(&now, id) - count(&heard, id))
            .collect();
        let mine = Counters::of(node).await?;
        readers.push(Reader {
            bench: "staggered",
            kind: "reader",
            reader: k as u32 + 1,
            file_size: args.file_size,
            seconds,
            origin_bytes: d.origin_bytes,
            origin_reads: d.origin_reads,
            local: d.at("local"),
            peer: d.at("peer") + d.at("manager"),
            origin: d.at("origin"),
            from_holders,
            timeouts: mine.timeouts,
            wrong_bytes: wrong_bytes(&got, data),
        });
        bar.inc();
    }
    let all = Counters::sum(&nodes).await?;
    shutdown(&nodes);
    let origin_bytes: u64 = readers.iter().map(|r| r.origin_bytes).sum();
    let ratio = origin_bytes as f64 / args.file_size as f64;
    let total = Total {
        bench: "staggered",
        kind: "total",
        readers: args.readers,
        file_size: args.file_size,
        origin_bytes,
        ratio,
        reduction_pct: 100.0 * (1.0 - ratio / f64::from(args.readers)),
        target_ratio: 1.01,
        met: ratio <= 1.01,
        integrity_failures: all.integrity_failures,
        wrong_bytes: readers.iter().map(|r| r.wrong_bytes).sum(),
    };
    Ok((readers, total))
}

/// A cold read of `name` through a fresh single node against the same
/// reads straight from an `Origin` with the same delay, alternating which
/// goes first.
async fn single_node_overhead(
    args: &StaggeredArgs,
    spec: &LoopbackSpec,
    origin_dir: &Path,
    name: &str,
    data: &[u8],
    position: usize,
) -> Result<Overhead> {
    let size = data.len() as u64;
    let (mut node_s, mut direct_s, mut wrong) = (Vec::new(), Vec::new(), 0);
    let bar = Bar::new(
        u64::from(args.overhead_reps),
        &format!("overhead {} KiB", size >> 10),
    );
    for rep in 0..args.overhead_reps {
        let direct_first = rep % 2 == 1;
        if direct_first {
            let (w, s) = direct_read(args, origin_dir, name, data).await?;
            direct_s.push(s);
            wrong += w;
        }
        // A fresh node each time: the cache is cold, the attribute cache empty.
        let nodes = start_cluster(spec, &[size.max(args.block_size * 16)]).await?;
        let (got, s) = timed(nodes[0].read(name, None)).await;
        shutdown(&nodes);
        node_s.push(s);
        wrong += wrong_bytes(&got?, data);
        if !direct_first {
            let (w, s) = direct_read(args, origin_dir, name, data).await?;
            direct_s.push(s);
            wrong += w;
        }
        bar.inc();
    }
    let (node_seconds, direct_seconds) = (median(&node_s), median(&direct_s));
    let overhead_pct = 100.0 * (node_seconds / direct_seconds.max(f64::MIN_POSITIVE) - 1.0);
    let target_pct = TARGET_PCT.get(position).copied();
    Ok(Overhead {
        bench: "staggered",
        kind: "overhead",
        file_size: size,
        reps: args.overhead_reps,
        node_seconds,
        direct_seconds,
        overhead_pct,
        paper_pct: PAPER_PCT.get(position).copied(),
        target_pct,
        met: target_pct.map(|t| overhead_pct <= t),
        wrong_bytes: wrong,
    })
}

/// What a client without the cache would do: stat the file, then read it
/// in block-sized ranges with the node's read-ahead in flight, straight
/// from an origin with the same emulated delay. Returns the wrong bytes
/// and the seconds taken.
async fn direct_read(
    args: &StaggeredArgs,
    dir: &Path,
    name: &str,
    data: &[u8],
) -> Result<(u64, f64)> {
    let origin = Origin::open(dir.to_str().context("origin path is not UTF-8")?)?
        .with_delay(args.origin_delay);
    let bs = args.block_size;
    // As far ahead as the node it is compared with reads (its cache holds
    // the file, at least 16 blocks).
    let capacity = ((data.len() as u64).max(bs * 16) / bs) as usize;
    let (got, seconds) = timed(async {
        let version = origin.stat(name).await?;
        let mut parts = futures::stream::iter((0..version.size.div_ceil(bs)).map(|b| {
            let (origin, version) = (&origin, &version);
            async move { origin.read(name, version, b * bs..(b + 1) * bs).await }
        }))
        .buffered(read_ahead(bs as u32, capacity));
        let mut out = Vec::with_capacity(data.len());
        while let Some(part) = parts.next().await {
            out.extend_from_slice(&part?);
        }
        anyhow::Ok(out)
    })
    .await;
    Ok((wrong_bytes(&got?, data), seconds))
}

fn report(args: &StaggeredArgs, out: &Outcome) -> Result<()> {
    if args.report.json {
        coopcache_console::output::print_json(&out.readers)?;
        coopcache_console::output::print_json([&out.total])?;
        coopcache_console::output::print_json(&out.overhead)?;
    } else {
        print_tables(out);
    }
    plot_to(args.report.plot.as_deref(), |path| plot(path, args, out))?;
    let wrong = out.total.wrong_bytes + out.overhead.iter().map(|o| o.wrong_bytes).sum::<u64>();
    if wrong > 0 {
        bail!("{wrong} wrong bytes delivered");
    }
    Ok(())
}

fn print_tables(out: &Outcome) {
    let header = [
        "reader",
        "time s",
        "origin MiB",
        "origin reads",
        "local",
        "peer",
        "origin",
        "messages from each holder",
        "timeouts",
        "wrong bytes",
    ];
    let mib = |b: u64| format!("{:.2}", b as f64 / 1048576.0);
    let cells: Vec<Vec<String>> = out
        .readers
        .iter()
        .map(|r| {
            vec![
                r.reader.to_string(),
                format!("{:.2}", r.seconds),
                mib(r.origin_bytes),
                r.origin_reads.to_string(),
                r.local.to_string(),
                r.peer.to_string(),
                r.origin.to_string(),
                match r.from_holders.is_empty() {
                    true => "-".into(),
                    false => (r.from_holders.iter())
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(" "),
                },
                r.timeouts.to_string(),
                r.wrong_bytes.to_string(),
            ]
        })
        .collect();
    coopcache_console::table::print(&header, &cells, 0);
    let t = &out.total;
    println!(
        "\ntotal origin bytes {} = {:.4}x the file ({:.1}% less than {} readers each reading the origin); target <= {}x: {}\n",
        t.origin_bytes,
        t.ratio,
        t.reduction_pct,
        t.readers,
        t.target_ratio,
        if t.met { "met" } else { "missed" }
    );
    if out.overhead.is_empty() {
        return;
    }
    let header = [
        "file",
        "node s",
        "direct s",
        "overhead %",
        "C2Cfs %",
        "target %",
        "met",
    ];
    let opt = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.1}"));
    let cells: Vec<Vec<String>> = out
        .overhead
        .iter()
        .map(|o| {
            vec![
                format!("{} KiB", o.file_size >> 10),
                format!("{:.4}", o.node_seconds),
                format!("{:.4}", o.direct_seconds),
                format!("{:.2}", o.overhead_pct),
                opt(o.paper_pct),
                opt(o.target_pct),
                o.met
                    .map_or("-".into(), |m| if m { "yes".into() } else { "no".into() }),
            ]
        })
        .collect();
    coopcache_console::table::print(&header, &cells, 1);
}

/// Origin bytes against the number of readers so far (cumulative), as
/// C2Cfs's Figure 4(b): the cache's line, every reader going to the
/// origin, and the target.
fn plot(path: &Path, args: &StaggeredArgs, out: &Outcome) -> Result<()> {
    let mib = |b: f64| b / 1048576.0;
    let mut sum = 0.0;
    let cache: Vec<(f64, f64)> = out
        .readers
        .iter()
        .map(|r| {
            sum += r.origin_bytes as f64;
            (f64::from(r.reader), mib(sum))
        })
        .collect();
    let file = args.file_size as f64;
    let readers = 1..=args.readers;
    // The cache's line last, so that it is drawn over the target's.
    let series = [
        Series {
            name: "target (1.01x the file)",
            points: readers
                .clone()
                .map(|k| (f64::from(k), mib(file * 1.01)))
                .collect(),
        },
        Series {
            name: "no cooperation (every reader reads the origin)",
            points: readers
                .map(|k| (f64::from(k), mib(file * f64::from(k))))
                .collect(),
        },
        Series {
            name: "coopcache",
            points: cache,
        },
    ];
    xy(
        path,
        "Staggered reads: origin bytes against number of readers",
        ("readers", "origin MiB, cumulative"),
        &series,
        false,
        Style::Lines,
    )
}
