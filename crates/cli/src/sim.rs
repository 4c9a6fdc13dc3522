//! `coopcache sim`: replay traces through local replacement policies.

use crate::output::{self, Row, Sizing};
use crate::progress::Progress;
use anyhow::{Context, Result, bail};
use clap::Args;
use coopcache_core::{Capacity, PolicyKind};
use coopcache_sim::replay::{RunSpec, replay_sized};
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
  csv      delimited text; map columns with --csv, e.g. id=2,time=1,size=3,op=4,client=5,header=yes
  msr      SNIA MSR Cambridge CSV; host+disk is the client, byte ranges become blocks
  tencent  Tencent block CSV; the volume is the client, sector ranges become blocks
  lcs      libCacheSim lcs: 8 KiB header, records v1-v8 (ops and tenant as client from v2)
  txt      libCacheSim plain text: one numeric id per line (decimal or 0x hex)
  vscsi    VMware vscsi binary, versions 1 and 2: lbn the object, len its size, SCSI op
  twr      Twitter cluster csv `time,key,key size,value size,client,op,ttl`; size key+value
Files compressed with gzip, xz, zstd or bzip2 are read transparently. --format may be left
out where the file name says it: .lcs, .oracleGeneral, .vscsi, .twr, .sort (Twitter), .lis,
before any .zst, .gz, .xz or .bz2.

Cache sizes (local policies):
  A trace with object sizes (oracle, lcs, vscsi, twr, csv with size=) and a size with a unit
  (100MiB) make a byte cache: each object takes its size, the policy evicts
  until the new object fits, an object larger than the cache (or than the
  queue it must enter: 10% for s3fifo, 25% for 2q, 1% for lirs) is not
  cached and counts as a miss; requests of size 0 are left out (counted in
  zero_size_skipped), as libCacheSim's readers do. A plain number is a count
  of objects, whatever their sizes. For traces without sizes (lirs, lis,
  be32, csv without size=) and the block traces (msr, tencent), a size with
  a unit is divided by --block-size. Every run reports the object miss
  ratio and the byte miss ratio (each request of a block cache counts
  --block-size bytes, or its object's size where the trace has sizes).

Ops (csv op= column, msr, tencent):
  reads are the requests measured; writes are write-allocate (the object is
  cached or referenced as on a read) and counted as writes, not as read hits
  or misses; deletes drop the object from the cache and are counted apart.

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
  coopcache sim tencent-photo-sample.csv.bz2 --format csv --csv sep=space,id=2,size=5,ids=hash --cache-size 100MiB
";

/// Options of `coopcache sim`.
#[derive(Args)]
#[command(after_help = AFTER_HELP)]
pub struct SimArgs {
    /// Trace file(s); several are composed into one (see --compose).
    #[arg(value_name = "TRACE")]
    pub(crate) traces: Vec<PathBuf>,

    /// Trace format: lirs, lis, be32, oracle, csv, msr, tencent, lcs, txt, vscsi, twr (optional
    /// where the file name says it, see Formats below).
    #[arg(short, long)]
    pub(crate) format: Option<TraceFormat>,

    /// Replacement policies, comma-separated: lru, fifo, clock, sieve, arc, s3fifo, s3fifo-v1, 2q, lirs, lfu, lfuda, gdsf, hyperbolic, wtinylfu, lecar, lhd, slru, random, belady (opt: the bound, reads the trace whole first)
    /// (with --algorithms: the nodes' local policy).
    #[arg(short, long, value_delimiter = ',', default_value = "lru")]
    pub(crate) policy: Vec<PolicyKind>,

    /// Cache sizes, comma-separated: objects (`2750`) or bytes with a unit (`16MiB`; a byte cache
    /// where the trace has object sizes, see Cache sizes below).
    #[arg(short = 's', long, value_delimiter = ',')]
    pub(crate) cache_size: Vec<CacheSize>,

    /// Block size [default: 8KiB]: splits msr/tencent requests into blocks and divides byte cache
    /// sizes of traces without object sizes; refused for traces with sizes.
    #[arg(long = "block-size", value_name = "BLOCK_SIZE", value_parser = parse_block_size)]
    pub(crate) block_size_arg: Option<u64>,

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

/// The papers' block: 8 KiB.
const DEFAULT_BLOCK_SIZE: u64 = 8 << 10;

impl SimArgs {
    /// `--block-size`, or 8 KiB.
    pub(crate) fn block_size(&self) -> u64 {
        self.block_size_arg.unwrap_or(DEFAULT_BLOCK_SIZE)
    }
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
pub fn run(mut args: SimArgs) -> Result<()> {
    set_jobs(args.jobs)?;
    if args.format.is_none() {
        args.format = named_format(&args.traces);
    }
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
    // A local-policy run refuses what it would otherwise ignore.
    if let Some(flag) = args.coop.given().first() {
        bail!(
            "{flag} applies to cooperative caching (with --algorithms or --class-policy); this run replays local policies on a trace, which {flag} would not change"
        );
    }
    if args.cache_size.is_empty() {
        bail!("give --cache-size: blocks (`2750`) or bytes with a unit (`16MiB`), comma-separated");
    }
    let sizing = sizing(&args)?;
    let specs = run_specs(&args, sizing)?;
    let (requests, progress) = open_traces(&args)?;
    let label = trace_label(&args.traces);
    let sized = matches!(sizing, Sizing::Objects);
    let results = replay_sized(requests, &specs, sized, |n| progress.update(n))
        .with_context(|| format!("replaying {label}"));
    progress.finish();
    let results = results?;
    if let Some(skipped) = results
        .iter()
        .map(|r| r.tally.skipped)
        .max()
        .filter(|&n| n > 0)
    {
        eprintln!(
            "note: {} of size 0 left out of the byte caches (as libCacheSim's readers do)",
            output::count(skipped, "request")
        );
    }
    let rows: Vec<Row> = results
        .iter()
        .map(|r| Row::new(&label, sizing, r))
        .collect();
    if args.json {
        output::print_json(&rows)
    } else {
        output::print_table(&rows);
        Ok(())
    }
}

/// Whether the trace's requests carry object sizes, or are blocks of
/// `--block-size` bytes.
fn sizing(args: &SimArgs) -> Result<Sizing> {
    let Some(format) = args.format else {
        return Ok(Sizing::Blocks(args.block_size()));
    };
    if !format.has_sizes(&read_options(args)) {
        if format == TraceFormat::Csv
            && args
                .cache_size
                .iter()
                .any(|s| matches!(s, CacheSize::Bytes(_)))
        {
            eprintln!(
                "note: --csv has no size column, so byte cache sizes count blocks of {} bytes (add size=N for a byte cache)",
                args.block_size()
            );
        }
        return Ok(Sizing::Blocks(args.block_size()));
    }
    if args.block_size_arg.is_some() {
        bail!(
            "--block-size applies to block traces and traces without object sizes; this {format} trace has sizes, so a cache size with a unit (`100MiB`) holds each object at its size, and a plain number (`12800`) is a count of objects"
        );
    }
    Ok(Sizing::Objects)
}

/// Every (policy, size) pair, policy-major: a byte cache where the trace has
/// sizes and the size has a unit, else a cache of blocks.
fn run_specs(args: &SimArgs, sizing: Sizing) -> Result<Vec<RunSpec>> {
    let mut specs = Vec::new();
    for &policy in &args.policy {
        for &size in &args.cache_size {
            let capacity = match (size, sizing) {
                (CacheSize::Bytes(b), Sizing::Objects) => Capacity::Bytes(b),
                (size, _) => Capacity::Blocks(size.blocks(args.block_size())?),
            };
            specs.push(RunSpec { policy, capacity });
        }
    }
    Ok(specs)
}

fn read_options(args: &SimArgs) -> ReadOptions {
    ReadOptions {
        block_size: args.block_size(),
        csv: args.csv.clone(),
    }
}

/// Opens the trace, or composes several; returns the requests and a
/// progress display over the files' bytes.
pub(crate) fn open_traces(args: &SimArgs) -> Result<(Requests, Progress)> {
    let Some(format) = args.format else {
        bail!(
            "give --format for the trace (its name does not say it): one of {}",
            TraceFormat::names()
        );
    };
    if format == TraceFormat::Csv && args.csv.is_none() {
        bail!("--format csv needs --csv to say which column holds the id, e.g. --csv id=1");
    }
    let opts = read_options(args);
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

/// The format every trace's file name announces (`.lcs`, `.oracleGeneral`,
/// ...), if they agree.
fn named_format(traces: &[PathBuf]) -> Option<TraceFormat> {
    let mut formats = traces.iter().map(|t| TraceFormat::from_path(t));
    let first = formats.next()??;
    formats.all(|f| f == Some(first)).then_some(first)
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
