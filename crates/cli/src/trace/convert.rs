//! `coopcache trace convert`: any trace coopcache reads, written as
//! libCacheSim's oracleGeneral or lcs.

use super::Input;
use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use coopcache_console::progress::Progress;
use coopcache_sim::convert::{Plan, Target, write};
use std::io::BufWriter;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

const AFTER_HELP: &str = "\
Each record's next access is the 1-based position of the object's next request in the
trace, or none (-1 in oracleGeneral, i64::MAX in lcs) for its last, as libCacheSim's
traceConv writes it. Traces without sizes are written with size 1 (libCacheSim's default).
oracleGeneral and lcs v1 have no op or client: writes and deletes become plain requests
(said on stderr); lcs v2 and v3 keep them (the client as the tenant). Times must fit 32
bits (the formats' clock time, in seconds). The trace is read twice; OUT appears only once
written whole.

Examples:
  coopcache trace convert ../shared/traces/w106.trace.xz w106.oracleGeneral --format be32 --to oracle
  coopcache trace convert cluster52.sort.zst cluster52.lcs --to lcs --lcs-version 2
";

/// The formats `--to` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum To {
    /// libCacheSim's oracleGeneral (24-byte records).
    Oracle,
    /// libCacheSim's lcs (an 8 KiB header, then records of --lcs-version).
    Lcs,
}

/// Options of `coopcache trace convert`.
#[derive(Args)]
#[command(after_help = AFTER_HELP)]
pub struct ConvertArgs {
    #[command(flatten)]
    input: Input,

    /// The converted trace.
    #[arg(value_name = "OUT")]
    out: PathBuf,

    /// The format written.
    #[arg(long, value_enum)]
    to: To,

    /// lcs version: 1 (time, id, size, next access), 2 (adds op and tenant) or 3 (64-bit
    /// sizes and a TTL) [default: 1].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=3))]
    lcs_version: Option<u64>,
}

/// Runs `coopcache trace convert`.
pub fn run(args: &ConvertArgs) -> Result<()> {
    let target = match (args.to, args.lcs_version) {
        (To::Oracle, Some(_)) => bail!("--lcs-version applies to --to lcs"),
        (To::Oracle, None) => Target::Oracle,
        (To::Lcs, v) => Target::Lcs(v.unwrap_or(1)),
    };
    let input = args.input.path();
    if same_file(input, &args.out) {
        bail!(
            "OUT is the input trace {}: give another path",
            input.display()
        );
    }
    let label = args.input.label();
    let (stream, _, sized) = args.input.open()?;
    let progress = Progress::new(vec![(stream.progress.clone(), stream.file_len)]);
    let plan = Plan::of(stream.requests, sized);
    progress.finish();
    let plan = plan.with_context(|| format!("reading {label}"))?;
    let dir = args
        .out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| std::path::Path::new("."));
    let tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("creating a file in {}", dir.display()))?;
    let (stream, _, _) = args.input.open()?;
    let progress = Progress::new(vec![(stream.progress.clone(), stream.file_len)]);
    let mut out = BufWriter::with_capacity(1 << 20, tmp.as_file());
    let written = write(stream.requests, &plan, sized, target, &mut out);
    progress.finish();
    written.with_context(|| format!("converting {label} to {}", args.out.display()))?;
    drop(out);
    // A temporary file is private (0600); the trace is a plain file.
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644))
        .with_context(|| format!("writing {}", args.out.display()))?;
    tmp.persist(&args.out)
        .with_context(|| format!("writing {}", args.out.display()))?;
    let kept_ops = matches!(target, Target::Lcs(v) if v >= 2);
    let (writes, deletes) = plan.ops();
    if !kept_ops && writes + deletes > 0 {
        eprintln!(
            "note: the format has no op: {writes} writes and {deletes} deletes were written as plain requests (--to lcs --lcs-version 2 keeps them)"
        );
    }
    if !sized {
        eprintln!("note: the trace has no sizes: every request was written with size 1");
    }
    println!(
        "wrote {} requests to {}",
        plan.requests(),
        args.out.display()
    );
    Ok(())
}

/// Whether `a` and `b` name one file (an existing `b` only).
fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
