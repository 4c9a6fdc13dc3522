//! `coopcache sim`: replay traces through local replacement policies.

use crate::output::{self, Row};
use crate::progress::Progress;
use anyhow::{Context, Result, bail};
use clap::Args;
use coopcache_core::PolicyKind;
use coopcache_sim::replay::{RunSpec, replay};
use coopcache_sim::size::{CacheSize, parse_bytes};
use coopcache_sim::trace::{
    self, Compose, ComposeMode, CsvSpec, IdSpace, ReadOptions, Requests, TraceFormat,
};
use std::path::PathBuf;

const AFTER_HELP: &str = "\
Formats:
  lirs     one integer id per line, `*` lines skipped (LIRS traces)
  lis      `start count ...` per line, each block of the run one request (ARC traces)
  be32     big-endian u32 ids, no header (CloudPhysics)
  oracle   libCacheSim oracleGeneral: 24-byte records u32 time, u64 id, u32 size, i64 next
  csv      delimited text; map columns with --csv, e.g. id=2,time=1,op=4,client=5,header=yes
  msr      SNIA MSR Cambridge CSV; host+disk is the client, byte ranges become blocks
  tencent  Tencent block CSV; the volume is the client, sector ranges become blocks
Files compressed with gzip, xz, zstd or bzip2 are read transparently.

Examples:
  coopcache sim --workload sprite-like --algorithms base,greedy,central,nchance,best --plot figures
  coopcache sim tencent.csv.bz2 --format tencent --algorithms base,nchance --client-cache 1MiB --json
  coopcache sim sweep --workload sprite-like --out sweep
  coopcache sim mrc --configs 'unix;variable' --plot figures
  coopcache sim --workload web --class-policy cc-all.toml,cc-23-discard-01.toml
  coopcache sim --workload fs --algorithms nchance --cache-config variable
  coopcache sim w106.trace.xz --format be32 --policy lru,arc --cache-size 2750,27500
  coopcache sim cs.trace.gz ps.trace.gz --format lirs --compose round-robin --cache-size 1000
  coopcache sim trace.csv --format csv --csv id=2,header=yes --cache-size 64MiB --block-size 4KiB --json
";

/// Options of `coopcache sim`.
#[derive(Args)]
#[command(after_help = AFTER_HELP)]
pub struct SimArgs {
    /// Trace file(s); several are composed into one (see --compose).
    #[arg(value_name = "TRACE")]
    pub(crate) traces: Vec<PathBuf>,

    /// Trace format: lirs, lis, be32, oracle, csv, msr, tencent.
    #[arg(short, long)]
    pub(crate) format: Option<TraceFormat>,

    /// Replacement policies, comma-separated: lru, fifo, clock, sieve, arc, s3fifo, 2q, lirs
    /// (with --algorithms: the nodes' local policy).
    #[arg(short, long, value_delimiter = ',', default_value = "lru")]
    pub(crate) policy: Vec<PolicyKind>,

    /// Cache sizes, comma-separated: blocks (`2750`) or bytes with a unit (`16MiB`).
    #[arg(short = 's', long, value_delimiter = ',')]
    pub(crate) cache_size: Vec<CacheSize>,

    /// Block size: divides byte cache sizes, and splits msr/tencent requests into blocks.
    #[arg(long, default_value = "8KiB", value_parser = parse_block_size)]
    pub(crate) block_size: u64,

    /// Column map of the csv format (see Formats below).
    #[arg(long, value_name = "SPEC")]
    pub(crate) csv: Option<CsvSpec>,

    /// How several traces interleave: `time` (by timestamp) or `round-robin`.
    #[arg(long)]
    pub(crate) compose: Option<ComposeMode>,

    /// With several traces: ids are each trace's own data (`disjoint`) or one shared store (`shared`).
    #[arg(long, default_value = "disjoint", value_parser = parse_id_space)]
    pub(crate) ids: IdSpace,

    /// Print one JSON object per run instead of a table.
    #[arg(long)]
    pub(crate) json: bool,

    /// Worker threads for the runs (default: one per core).
    #[arg(short, long)]
    pub(crate) jobs: Option<usize>,

    #[command(flatten)]
    pub(crate) coop: crate::coop::CoopArgs,
}

/// Sizes the worker pool to `--jobs` when given (one thread per core
/// otherwise).
pub(crate) fn set_jobs(jobs: Option<usize>) -> Result<()> {
    if let Some(jobs) = jobs {
        rayon::ThreadPoolBuilder::new()
            .num_threads(jobs.max(1))
            .build_global()
            .context("starting worker threads")?;
    }
    Ok(())
}

fn parse_block_size(text: &str) -> Result<u64, String> {
    text.trim()
        .parse::<u64>()
        .ok()
        .or_else(|| parse_bytes(text))
        .filter(|&b| b > 0)
        .ok_or_else(|| format!("`{text}`: expected a positive size in bytes, e.g. 4096 or 8KiB"))
}

fn parse_id_space(text: &str) -> Result<IdSpace, String> {
    match text {
        "disjoint" => Ok(IdSpace::Disjoint),
        "shared" => Ok(IdSpace::Shared),
        _ => Err(format!("`{text}`: expected `disjoint` or `shared`")),
    }
}

/// Runs `coopcache sim`: cooperative algorithms with `--algorithms`,
/// otherwise local policies.
pub fn run(args: SimArgs) -> Result<()> {
    set_jobs(args.jobs)?;
    if !args.coop.class_policy.is_empty() {
        return crate::classes::run(&args);
    }
    if args.coop.algorithms.is_some() {
        return crate::coop::run(&args);
    }
    if args.coop.workload.is_some() {
        bail!(
            "--workload drives a cluster: add --algorithms (e.g. --algorithms base,greedy,nchance) or --class-policy"
        );
    }
    if args.traces.is_empty() {
        bail!("give a TRACE file (or --workload with --algorithms); see `coopcache sim --help`");
    }
    if args.cache_size.is_empty() {
        bail!("give --cache-size: blocks (`2750`) or bytes with a unit (`16MiB`), comma-separated");
    }
    let specs = run_specs(&args)?;
    let (requests, progress) = open_traces(&args)?;
    let label = trace_label(&args.traces);
    let results = replay(requests, &specs, |n| progress.update(n))
        .with_context(|| format!("replaying {label}"));
    progress.finish();
    let results = results?;
    let rows: Vec<Row> = results
        .iter()
        .map(|r| Row::new(&label, args.block_size, r))
        .collect();
    if args.json {
        output::print_json(&rows)
    } else {
        output::print_table(&rows);
        Ok(())
    }
}

/// Every (policy, size) pair, policy-major, sizes converted to blocks.
fn run_specs(args: &SimArgs) -> Result<Vec<RunSpec>> {
    let mut specs = Vec::new();
    for &policy in &args.policy {
        for size in &args.cache_size {
            let capacity = size.blocks(args.block_size)?;
            specs.push(RunSpec { policy, capacity });
        }
    }
    Ok(specs)
}

/// Opens the trace, or composes several; returns the requests and a
/// progress display over the files' bytes.
pub(crate) fn open_traces(args: &SimArgs) -> Result<(Requests, Progress)> {
    let Some(format) = args.format else {
        bail!("give --format for the trace: one of lirs, lis, be32, oracle, csv, msr, tencent");
    };
    if format == TraceFormat::Csv && args.csv.is_none() {
        bail!("--format csv needs --csv to say which column holds the id, e.g. --csv id=1");
    }
    let opts = ReadOptions {
        block_size: args.block_size,
        csv: args.csv.clone(),
    };
    let mut streams = Vec::new();
    for path in &args.traces {
        let stream = trace::open(path, format, &opts)?;
        streams.push((stream, path.clone()));
    }
    let progress = Progress::new(
        streams
            .iter()
            .map(|(s, _)| (s.progress.clone(), s.file_len))
            .collect(),
    );
    if streams.len() == 1 {
        let (stream, _) = streams.pop().expect("one stream");
        return Ok((stream.requests, progress));
    }
    let Some(mode) = args.compose else {
        bail!(
            "{} traces given: add --compose time or --compose round-robin to replay them as one multi-client trace",
            streams.len()
        );
    };
    let sources = streams.into_iter().map(|(s, p)| (s.requests, p)).collect();
    Ok((Box::new(Compose::new(sources, mode, args.ids)), progress))
}

/// The trace's name in reports: its file name, or names joined with `+`.
pub(crate) fn trace_label(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| {
            p.file_name().map_or_else(
                || p.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        })
        .collect::<Vec<_>>()
        .join("+")
}
