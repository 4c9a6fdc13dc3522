//! `coopcache bench zipf-web`: C2Cfs's Filebench web-server run (Section
//! 5.4, Table 7). A file set with Filebench's gamma-distributed sizes;
//! nodes in turn (each starts when the one before has finished) read whole
//! files picked by Zipf popularity; origin bytes per node against the
//! first.
//!
//! A node can only avoid the origin for files some earlier node read. The
//! bytes of files no earlier node read are *compulsory* for it, whatever
//! the cache does; the report gives them next to the measured origin bytes,
//! so that the cache's own excess (measured minus compulsory) is visible.

use super::common::{
    Bar, Counters, in_tempdir, report_rows, rng, timed, write_origin_file, wrong_bytes,
};
use crate::loopback::{LoopbackSpec, shutdown, start_cluster};
use anyhow::{Result, anyhow, bail};
use coopcache_console::args::{ReportArgs, Seed};
use coopcache_console::args::{parse_duration, parse_size};
use coopcache_console::plot::{Segment, stacked_bars};
use coopcache_core::coop::AlgorithmKind;
use futures::StreamExt;
use rand_distr::{Distribution, Gamma, Zipf};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Filebench's web-server personality draws file sizes from a gamma
/// distribution with this shape (`cvar-gamma`, `gamma:1.5`) around the
/// mean size.
const GAMMA_SHAPE: f64 = 1.5;

/// Whose file sequence a node follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
enum Sequence {
    /// Every node draws its own files (C2Cfs: "different clients may choose
    /// different files").
    Independent,
    /// Every node replays the same draws (what a benchmark with a fixed
    /// seed on every client does).
    Same,
}

#[derive(clap::Args)]
pub struct ZipfWebArgs {
    /// Files in the file set (the paper's is 5,000).
    #[arg(long, default_value_t = 1000)]
    files: u32,
    /// Mean file size (the paper's is 100 KB).
    #[arg(long, default_value = "32KiB", value_parser = parse_size)]
    mean_file_size: u64,
    /// Whole-file reads per node (the paper's is 5,000).
    #[arg(long, default_value_t = 1000)]
    reads: u32,
    /// Nodes, one after another.
    #[arg(long, default_value_t = 4)]
    nodes: u32,
    /// Zipf exponent of file popularity.
    #[arg(long, default_value_t = 1.0)]
    skew: f64,
    /// Whether nodes draw their own files or replay the same draws.
    #[arg(long, value_enum, default_value = "independent")]
    sequence: Sequence,
    /// Whole-file reads in flight per node (Filebench's web server runs
    /// many threads).
    #[arg(long, default_value_t = 16)]
    threads: usize,
    /// Block cache per node; by default the whole file set, so that a node
    /// keeps everything it reads as C2Cfs's clients did.
    #[arg(long, value_parser = parse_size)]
    cache: Option<u64>,
    /// Cache block size.
    #[arg(long, default_value = "64KiB", value_parser = parse_size)]
    block_size: u64,
    /// Emulated latency of every origin request.
    #[arg(long, default_value = "10ms", value_parser = parse_duration)]
    origin_delay: Duration,
    /// Algorithm.
    #[arg(long, default_value = "nchance")]
    algorithm: AlgorithmKind,
    #[command(flatten)]
    pub(crate) seed: Seed,
    #[command(flatten)]
    report: ReportArgs,
}

/// One node's turn.
#[derive(serde::Serialize)]
struct Row {
    bench: &'static str,
    node: u32,
    sequence: Sequence,
    reads: u32,
    distinct_files: usize,
    seconds: f64,
    /// Origin bytes of the whole cluster during this node's turn.
    origin_bytes: u64,
    /// Bytes of the files this node read that no earlier node read.
    compulsory_bytes: u64,
    /// Origin bytes against node 1's (C2Cfs: about 90% for every later node).
    reduction_pct: f64,
    /// The best reduction any cache could reach: compulsory bytes only.
    compulsory_reduction_pct: f64,
    target_pct: Option<f64>,
    met: Option<bool>,
    local: u64,
    peer: u64,
    origin: u64,
    timeouts: u64,
    wrong_bytes: u64,
    integrity_failures: u64,
}

pub(crate) fn run(args: ZipfWebArgs) -> Result<()> {
    if args.files == 0
        || args.reads == 0
        || args.nodes == 0
        || args.threads == 0
        || args.mean_file_size == 0
    {
        bail!("--files, --reads, --nodes, --threads and --mean-file-size must be at least 1");
    }
    if !args.skew.is_finite() || args.skew <= 0.0 {
        bail!("--skew must be positive");
    }
    let rows = in_tempdir("coopcache-bench-zipf-web-", |dir| bench(&args, dir))?;
    report_rows(
        args.report.json,
        &rows,
        print_table,
        args.report.plot.as_deref(),
        plot,
        |r| r.wrong_bytes,
    )
}

fn name(f: usize) -> String {
    format!("web-{f:05}.bin")
}

/// Writes the file set; sizes from Filebench's gamma distribution.
fn file_set(args: &ZipfWebArgs, dir: &Path) -> Result<Vec<Arc<Vec<u8>>>> {
    let gamma = Gamma::new(GAMMA_SHAPE, args.mean_file_size as f64 / GAMMA_SHAPE)
        .map_err(|e| anyhow!("{e}"))?;
    let mut sizes = rng(args.seed.value, 1);
    let mut bytes = rng(args.seed.value, 2);
    (0..args.files as usize)
        .map(|f| {
            let size = gamma.sample(&mut sizes).round().max(1.0) as u64;
            Ok(Arc::new(write_origin_file(
                dir,
                &name(f),
                size,
                &mut bytes,
            )?))
        })
        .collect()
}

/// Node `k`'s draws (file indices, most popular first in rank).
fn draws(args: &ZipfWebArgs, k: u32) -> Result<Vec<usize>> {
    let zipf = Zipf::new(f64::from(args.files), args.skew).map_err(|e| anyhow!("{e}"))?;
    let stream = match args.sequence {
        Sequence::Independent => 10 + u64::from(k),
        Sequence::Same => 10,
    };
    let mut r = rng(args.seed.value, stream);
    Ok((0..args.reads)
        .map(|_| zipf.sample(&mut r) as usize - 1)
        .collect())
}

async fn bench(args: &ZipfWebArgs, dir: PathBuf) -> Result<Vec<Row>> {
    let origin = dir.join("origin");
    let files = file_set(args, &origin)?;
    let total: u64 = files.iter().map(|f| f.len() as u64).sum();
    let cache = args.cache.unwrap_or(total + total / 8);
    eprintln!(
        "zipf-web: {}, {:.1} MiB in all, {} x {} reads (Zipf {}, {:?}), {} KiB blocks, {:.1} MiB cache each, {:?} per origin request",
        coopcache_console::output::count(files.len() as u64, "file"),
        total as f64 / 1048576.0,
        coopcache_console::output::count(args.nodes as u64, "node"),
        args.reads,
        args.skew,
        args.sequence,
        args.block_size >> 10,
        cache as f64 / 1048576.0,
        args.origin_delay
    );
    let mut spec = LoopbackSpec::new(&dir, args.nodes, origin)?;
    spec.origin_delay = args.origin_delay;
    spec.block_size = u32::try_from(args.block_size)?;
    spec.algorithm = args.algorithm;
    let nodes = start_cluster(&spec, &vec![cache; args.nodes as usize]).await?;
    let result = turns(args, &nodes, &files).await;
    shutdown(&nodes);
    result
}

/// Every node's turn, one after another.
async fn turns(
    args: &ZipfWebArgs,
    nodes: &[Arc<coopcache_node::NodeHandle>],
    files: &[Arc<Vec<u8>>],
) -> Result<Vec<Row>> {
    let mut seen: HashSet<usize> = HashSet::new();
    let mut rows: Vec<Row> = Vec::new();
    for (k, node) in nodes.iter().enumerate() {
        let seq = draws(args, k as u32)?;
        let distinct: HashSet<usize> = seq.iter().copied().collect();
        let compulsory: u64 = distinct
            .difference(&seen)
            .map(|&f| files[f].len() as u64)
            .sum();
        seen.extend(&distinct);
        let before = Counters::sum(nodes).await?;
        let bar = Bar::new(seq.len() as u64, &format!("node {}", k + 1));
        let (wrong, seconds) = timed(async {
            let mut reads = futures::stream::iter(seq.iter().copied())
                .map(|f| async move { (f, node.read(&name(f), None).await) })
                .buffer_unordered(args.threads);
            let mut wrong = 0;
            while let Some((f, got)) = reads.next().await {
                wrong += wrong_bytes(&got?, &files[f]);
                bar.inc();
            }
            anyhow::Ok(wrong)
        })
        .await;
        let d = Counters::sum(nodes).await?.since(&before);
        let first = rows
            .first()
            .map_or(d.origin_bytes, |r| r.origin_bytes)
            .max(1) as f64;
        let later = k > 0;
        let reduction_pct = 100.0 * (1.0 - d.origin_bytes as f64 / first);
        rows.push(Row {
            bench: "zipf-web",
            node: k as u32 + 1,
            sequence: args.sequence,
            reads: args.reads,
            distinct_files: distinct.len(),
            seconds,
            origin_bytes: d.origin_bytes,
            compulsory_bytes: compulsory,
            reduction_pct: if later { reduction_pct } else { 0.0 },
            compulsory_reduction_pct: if later {
                100.0 * (1.0 - compulsory as f64 / first)
            } else {
                0.0
            },
            target_pct: later.then_some(95.0),
            met: later.then_some(reduction_pct >= 95.0),
            local: d.at("local"),
            peer: d.at("peer") + d.at("manager"),
            origin: d.at("origin"),
            timeouts: d.timeouts,
            wrong_bytes: wrong?,
            integrity_failures: d.integrity_failures,
        });
    }
    Ok(rows)
}

fn print_table(rows: &[Row]) {
    let header = [
        "node",
        "files",
        "time s",
        "origin MiB",
        "compulsory MiB",
        "reduction %",
        "best %",
        "target %",
        "met",
        "local",
        "peer",
        "origin",
        "timeouts",
        "wrong bytes",
    ];
    let mib = |b: u64| format!("{:.2}", b as f64 / 1048576.0);
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let later = r.target_pct.is_some();
            let pct = |v: f64| if later { format!("{v:.1}") } else { "-".into() };
            vec![
                r.node.to_string(),
                r.distinct_files.to_string(),
                format!("{:.2}", r.seconds),
                mib(r.origin_bytes),
                mib(r.compulsory_bytes),
                pct(r.reduction_pct),
                pct(r.compulsory_reduction_pct),
                r.target_pct.map_or("-".into(), |t| format!("{t:.0}")),
                r.met
                    .map_or("-".into(), |m| if m { "yes".into() } else { "no".into() }),
                r.local.to_string(),
                r.peer.to_string(),
                r.origin.to_string(),
                r.timeouts.to_string(),
                r.wrong_bytes.to_string(),
            ]
        })
        .collect();
    coopcache_console::table::print(&header, &cells, 0);
}

/// Per-node origin bytes: the compulsory part and what the cache added.
fn plot(path: &Path, rows: &[Row]) -> Result<()> {
    let bars: Vec<String> = rows.iter().map(|r| format!("node {}", r.node)).collect();
    let mib = |b: u64| b as f64 / 1048576.0;
    stacked_bars(
        path,
        "Web-server run: origin bytes per node, in turn",
        "origin MiB",
        &bars,
        &[
            Segment {
                name: "files no earlier node read (compulsory)",
                values: rows
                    .iter()
                    .map(|r| mib(r.compulsory_bytes.min(r.origin_bytes)))
                    .collect(),
            },
            Segment {
                name: "beyond compulsory",
                values: rows
                    .iter()
                    .map(|r| mib(r.origin_bytes.saturating_sub(r.compulsory_bytes)))
                    .collect(),
            },
        ],
    )
}
