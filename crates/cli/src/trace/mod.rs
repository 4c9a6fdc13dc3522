//! `coopcache trace`: describing a trace (`stats`) and converting it to
//! libCacheSim's binary formats (`convert`).

mod convert;
mod plots;
mod stats;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use coopcache_sim::trace::{self, CsvSpec, ReadOptions, TraceFormat, TraceStream};
use std::path::{Path, PathBuf};

/// The `trace` subcommands.
#[derive(Subcommand)]
pub enum TraceCmd {
    /// Requests, objects, bytes, working set, object sizes, reuse distances and times,
    /// popularity with a fitted Zipf alpha, one-hit wonders and request rate over time.
    Stats(stats::StatsArgs),
    /// Writes a trace as libCacheSim's oracleGeneral or lcs, next accesses computed.
    Convert(convert::ConvertArgs),
}

/// Runs a `trace` subcommand.
pub fn run(cmd: TraceCmd) -> Result<()> {
    match cmd {
        TraceCmd::Stats(args) => stats::run(&args),
        TraceCmd::Convert(args) => convert::run(&args),
    }
}

/// How to read the input trace, shared by the subcommands.
#[derive(Args)]
pub struct Input {
    /// The trace file (compressed with gzip, xz, zstd or bzip2, or not).
    #[arg(value_name = "TRACE")]
    trace: PathBuf,

    /// Trace format (see `coopcache sim --help`); optional where the file name says it
    /// (.lcs, .oracleGeneral, .vscsi, .twr, .sort, .lis, before any .zst/.gz/.xz/.bz2).
    #[arg(short, long)]
    format: Option<TraceFormat>,

    /// Column map of the csv format, e.g. `id=2,size=5,sep=space,ids=hash` (what `coopcache
    /// sim` calls `--csv SPEC`; `trace stats --csv` asks for CSV output).
    #[arg(long = "csv-columns", value_name = "SPEC")]
    csv: Option<CsvSpec>,
}

impl Input {
    /// The format given or announced by the file name.
    fn format(&self) -> Result<TraceFormat> {
        let format = TraceFormat::resolve(self.format, &self.trace)?;
        if format == TraceFormat::Csv && self.csv.is_none() {
            bail!(
                "--format csv needs --csv-columns to say which column holds the id, e.g. --csv-columns id=1"
            );
        }
        if format != TraceFormat::Csv && self.csv.is_some() {
            bail!("--csv-columns maps the columns of --format csv; this trace is read as {format}");
        }
        Ok(format)
    }

    fn options(&self) -> ReadOptions {
        ReadOptions {
            csv: self.csv.clone(),
            ..ReadOptions::default()
        }
    }

    /// Opens the trace: its stream and whether its requests carry sizes.
    fn open(&self) -> Result<(TraceStream, TraceFormat, bool)> {
        let format = self.format()?;
        let opts = self.options();
        let stream = trace::open(&self.trace, format, &opts)?;
        Ok((stream, format, format.has_sizes(&opts)))
    }

    fn path(&self) -> &Path {
        &self.trace
    }

    /// The trace's name in reports.
    fn label(&self) -> String {
        coopcache_sim::local::trace_label(std::slice::from_ref(&self.trace))
    }
}
