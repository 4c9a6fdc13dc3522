//! `coopcache sim`: replay traces through local replacement policies.

use super::output as sim_output;
use super::plot::{self as sim_plot, PlotMetric};
use crate::sim::policies::{AdmissionList, PolicyList, knobs_help};
use anyhow::{Context, Result, bail};
use clap::Args;
use coopcache_console::output::{self, Output};
use coopcache_console::progress::Progress;
use coopcache_sim::interval::{Cut, Interval};
use coopcache_sim::local::{self, IntervalRow, SimRow, Sizing};
use coopcache_sim::replay::replay_every;
use coopcache_sim::size::{CacheSize, parse_bytes};
use coopcache_sim::trace::{
    self, Compose, ComposeMode, CsvSpec, IdSpace, ReadOptions, Requests, TraceFormat,
};
use std::path::PathBuf;

const AFTER_HELP: &str = concat!(
    "\
Formats:
  lirs     one integer id per line, `*` lines skipped (LIRS traces)
  lis      `start count ...` per line, each block of the run one request (ARC traces)
  be32     big-endian u32 ids, no header (CloudPhysics)
  oracle   libCacheSim oracleGeneral: 24-byte records u32 time, u64 id, u32 size, i64 next
  csv      delimited text; map columns with --csv, e.g. id=2,time=1,size=3,op=4,client=5,header=yes
           (time_unit=s, ms, us or ns: the time column's unit, for --report-interval 1h)
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

",
    knobs_help!(),
    "
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
  coopcache sim w106.trace.xz --format be32 --policy 's3fifo(small=0.2,ghost=0.5),2q(ain=0.3)' --cache-size 2750
  coopcache sim msr-cambridge1-sample.csv --format msr --policy lru,arc --cache-size 100,400 --report-interval 10s --plot msr.png
"
);

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

    /// Replacement policies, comma-separated: lru, fifo, clock, sieve, arc, s3fifo, s3fifo-v1, 2q, lirs, lfu, lfuda, gdsf, hyperbolic, wtinylfu, qdlp, mq, clockpro, lecar, lhd, slru, random, belady (opt: the bound, reads the trace whole first),
    /// each optionally with knobs, `s3fifo(small=0.2,ghost=0.5)` (see Policy knobs below)
    /// (with --algorithms: the nodes' local policy, a bare name).
    #[arg(short, long, default_value = "lru")]
    pub(crate) policy: PolicyList,

    /// Admission policies crossed with --policy, comma-separated: none, bloom, size(below=N),
    /// adaptsize (see Admission below); each run is labelled `lru+bloom`.
    #[arg(long, default_value = "none")]
    pub(crate) admission: AdmissionList,

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

    /// Print one JSON object per run instead of a table (same as --output json).
    #[arg(long, conflicts_with = "output")]
    pub(crate) json: bool,

    /// Output: `table`, `json` (one object per line) or `csv` (a header row, then one row per
    /// run; local policies only).
    #[arg(long, value_enum, default_value_t = Output::Table)]
    pub(crate) output: Output,

    /// Also report each local run's miss ratios over every N trace requests (reads, writes and
    /// deletes; the last interval may be shorter), or over every span of trace time (`30s`,
    /// `10min`, `1h`, from the first request's timestamp; intervals without requests are left
    /// out): the miss ratio over time. The table shows the intervals, then the whole runs;
    /// json and csv print the intervals' rows.
    #[arg(long, value_name = "N|SPAN", value_parser = parse_interval)]
    pub(crate) report_interval: Option<Interval>,

    /// What a local run's --plot draws: `miss-ratio` or `byte-miss-ratio` [default: miss-ratio].
    #[arg(long, value_enum)]
    pub(crate) plot_metric: Option<PlotMetric>,

    /// Worker threads for the runs (default: one per core).
    #[arg(short, long)]
    pub(crate) jobs: Option<usize>,

    #[command(flatten)]
    pub(crate) coop: crate::sim::coop::CoopArgs,
}

fn parse_interval(text: &str) -> Result<Interval, String> {
    text.parse()
        .map_err(|e: coopcache_sim::OptionError| e.to_string())
}

impl SimArgs {
    /// `--output`, or JSON for `--json`.
    pub(crate) fn output(&self) -> Output {
        if self.json { Output::Json } else { self.output }
    }

    /// Refuses what a cooperative run does not print: CSV and intervals.
    fn cooperative_output(&self) -> Result<()> {
        if self.output == Output::Csv {
            bail!(
                "--output csv prints local policies' runs; a cooperative run prints a table or --output json"
            );
        }
        if self.report_interval.is_some() {
            bail!(
                "--report-interval reports local policies' runs over time; this run simulates a cluster (--algorithms or --class-policy)"
            );
        }
        if self.plot_metric.is_some() {
            bail!(
                "--plot-metric chooses a local policies' chart; this run simulates a cluster (--algorithms or --class-policy), whose --plot draws the paper's figures"
            );
        }
        Ok(())
    }
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
    let cooperative = !args.coop.class_policy.is_empty()
        || args.coop.algorithms.is_some()
        || args.coop.consistency.is_some();
    if cooperative && args.admission.any() {
        bail!(
            "--admission applies to local-policy replays; a cooperative run's nodes cache every block they fetch"
        );
    }
    if !args.coop.class_policy.is_empty() {
        args.cooperative_output()?;
        return crate::sim::classes::run(&args);
    }
    if args.coop.algorithms.is_some() {
        args.cooperative_output()?;
        return crate::sim::coop::run(&args);
    }
    if args.coop.consistency.is_some() {
        args.cooperative_output()?;
        return crate::sim::consistency::run(&args);
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
    let cut = interval_cut(&args)?;
    let plot = args
        .coop
        .plot
        .as_deref()
        .map(crate::sim::curve::plot_file)
        .transpose()?;
    if plot.is_some() {
        sim_plot::check_sizes(args.cache_size.len(), cut.is_some())?;
    } else if args.plot_metric.is_some() {
        bail!("--plot-metric chooses what --plot draws: add --plot FILE.png");
    }
    let metric = args.plot_metric.unwrap_or_default();
    let policies = args.admission.cross(&args.policy.0);
    let specs = local::run_specs(&policies, &args.cache_size, sizing, args.block_size())?;
    let (requests, progress) = open_traces(&args)?;
    let label = local::trace_label(&args.traces);
    let mut intervals = Vec::new();
    let results = replay_every(
        requests,
        &specs,
        sizing.sized(),
        cut,
        |n| progress.update(n),
        |end, tallies| {
            for (run, (&spec, &tally)) in specs.iter().zip(tallies).enumerate() {
                intervals.push((run, IntervalRow::new(&label, sizing, spec, end, tally)));
            }
        },
    )
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
    let rows: Vec<SimRow> = results
        .iter()
        .map(|r| SimRow::new(&label, sizing, r))
        .collect();
    if cut.is_none() {
        output::print_rows(args.output(), &rows, sim_output::print_table)?;
        if let Some(path) = plot {
            sim_plot::sizes(path, &label, &rows, metric)?;
            wrote(&args, path);
        }
        return Ok(());
    }
    // Run-major, as the summary: each run's intervals in trace order (a
    // stable sort of the interval-major reports).
    intervals.sort_by_key(|(run, _)| *run);
    let intervals: Vec<IntervalRow> = intervals.into_iter().map(|(_, row)| row).collect();
    output::print_rows(args.output(), &intervals, |intervals| {
        sim_output::print_interval_table(intervals);
        println!();
        sim_output::print_table(&rows);
    })?;
    if let Some(path) = plot {
        sim_plot::intervals(path, &label, &intervals, metric)?;
        wrote(&args, path);
    }
    Ok(())
}

/// Says where the chart went, below a table (json and csv stay rows only).
fn wrote(args: &SimArgs, path: &std::path::Path) {
    if args.output() == Output::Table {
        println!("wrote {}", path.display());
    }
}

/// Where `--report-interval` cuts the trace: a span of time needs
/// timestamps in a known unit, which the format says.
fn interval_cut(args: &SimArgs) -> Result<Option<Cut>> {
    let Some(interval) = args.report_interval else {
        return Ok(None);
    };
    Ok(Some(interval.cut(format(args)?, &read_options(args))?))
}

/// Whether the trace's requests carry object sizes, or are blocks of
/// `--block-size` bytes; a note where a csv without sizes is given byte
/// cache sizes.
fn sizing(args: &SimArgs) -> Result<Sizing> {
    let Some(format) = args.format else {
        return Ok(Sizing::Blocks(args.block_size()));
    };
    let opts = read_options(args);
    let sizing = Sizing::of(format, &opts, args.block_size_arg)?;
    let byte_sizes = args
        .cache_size
        .iter()
        .any(|s| matches!(s, CacheSize::Bytes(_)));
    if format == TraceFormat::Csv && !sizing.sized() && byte_sizes {
        eprintln!(
            "note: --csv has no size column, so byte cache sizes count blocks of {} bytes (add size=N for a byte cache)",
            args.block_size()
        );
    }
    Ok(sizing)
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
    let format = format(args)?;
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

/// `--format`, or the one the file names said, or an error asking for it.
fn format(args: &SimArgs) -> Result<TraceFormat> {
    args.format.with_context(|| {
        format!(
            "give --format for the trace (its name does not say it): one of {}",
            TraceFormat::names()
        )
    })
}

/// The format every trace's file name announces (`.lcs`, `.oracleGeneral`,
/// ...), if they agree.
fn named_format(traces: &[PathBuf]) -> Option<TraceFormat> {
    let mut formats = traces.iter().map(|t| TraceFormat::from_path(t));
    let first = formats.next()??;
    formats.all(|f| f == Some(first)).then_some(first)
}
