//! `coopcache sim mrc`: miss-ratio curves. With `--format`, a block or
//! object trace through local policies (see [`crate::sim::curve`]); without,
//! attribute caches' read request miss ratio over total cache size (the
//! attribute-cache paper's Figures 9 and 12), and their disk accesses
//! relative to a baseline (Figures 13 and 14).

use anyhow::{Context, Result, bail};
use clap::Args;
use coopcache_console::output::Output;
use coopcache_console::plot::{Series, Style, xy};
use coopcache_console::table;
use coopcache_core::attr::FileRequest;
use coopcache_sim::attr::{AttrPoint, Curves, Scheme, simulate};
use coopcache_sim::size::parse_bytes;
use coopcache_sim::trace::read_file_requests;
use coopcache_sim::workload::FsWorkload;
use rayon::prelude::*;
use serde::Serialize;
use std::path::PathBuf;

const AFTER_HELP: &str = concat!(
    "\
Two tools, chosen by --format:
  with --format   TRACE is a block or object trace (as `coopcache sim` reads); the curves of
                  local policies (--policy, default lru) at --cache-size; LRU from one exact
                  stack-distance pass (or sampled with --shards RATE), the others replayed at
                  every size in parallel; --plot FILE.png
  without         attribute caches (--configs, --sizes) on a file-request trace or the
                  generated file-system workload; --plot DIR

Cache sizes (--cache-size, with --format), comma-separated:
  1000      objects          64MiB     bytes (traces with sizes: a byte cache)
  10%       of the working set (distinct objects, or their bytes)
  A..B:N    N evenly spaced points from A to B;   A..B:Nlog   evenly on a log scale
  default 1%..100%:50. A byte curve of LRU is exact from the largest object up (see
  docs/guide/simulator.md, Miss-ratio curves); below, it can count more misses and says so. With
  --shards, percentages are of the estimated working set.

Configurations (--configs, separated by `;`):
  unix       32K/128 inode, x/4K Unix: the paper's baseline
  variable   the paper's Table 1, a configuration chosen by total size
  NOTATION   sub-caches `SIZE/BLOCK CATEGORY`, comma-separated; SIZE `x` takes the rest;
             categories ID, inode, General, Unix, Temporal, Sequential; e.g.
             `64K/128 ID, x/4K Temporal, 2M/128K Sequential`; `cutoff=1M` sets the
             Temporal/Sequential file-size cut-off (default 512K)

Trace (CSV with a header naming columns, any order):
  file, type (inode|directory|datafile|executable), size (file bytes),
  offset, length, op (read|write), client; the last four optional

",
    crate::sim::policies::knobs_help!(),
    "
Examples:
  coopcache sim mrc w106.trace.xz --format be32 --policy lru,arc,s3fifo --cache-size 1%..100%:20 --plot w106.png
  coopcache sim mrc tencent-photo-sample.csv.bz2 --format csv --csv sep=space,id=2,size=5,ids=hash --cache-size 1MiB..1GiB:20log
  coopcache sim mrc big.oracleGeneral.zst --format oracle --shards 0.01 --json
  coopcache sim mrc
  coopcache sim mrc --configs 'unix;variable;64K/128 ID, x/8K General' --plot figures
  coopcache sim mrc --workload-params requests=2000000,size_sample=tencent-photo-sample.csv.bz2
  coopcache sim mrc requests.csv --sizes 1M,4M,16M --json
  coopcache sim mrc w106.trace.xz --format be32 --policy 's3fifo(small=0.2),s3fifo' --cache-size 1%..50%:10
"
);

/// Options of `coopcache sim mrc`.
#[derive(Args)]
#[command(after_help = AFTER_HELP)]
pub struct MrcArgs {
    /// A file-request trace (CSV, see below); without one, the generated file-system workload.
    #[arg(value_name = "TRACE")]
    trace: Option<PathBuf>,

    /// Settings of the generated workload as key=value pairs (see docs/attribute-caches.md).
    #[arg(long, value_name = "KEY=VALUE,...")]
    workload_params: Option<String>,

    /// Seed of the generated workload.
    #[arg(long, default_value_t = 1)]
    seed: u64,

    /// Configurations separated by `;`; the first is the baseline the others are compared with
    /// [default: unix;variable].
    #[arg(long)]
    configs: Option<String>,

    /// Total cache sizes: comma-separated (`1M,4M`), or `FROM..TO` doubling [default:
    /// 32K..256M].
    #[arg(long)]
    sizes: Option<String>,

    /// Simulate every point directly instead of from one stack-distance pass (a cross-check).
    #[arg(long)]
    direct: bool,

    /// Print one JSON object per configuration and size instead of a table (same as --output
    /// json).
    #[arg(long, conflicts_with = "output")]
    json: bool,

    /// Output: `table`, `json` (one object per line) or `csv` (a header row, then one row per
    /// point).
    #[arg(long, value_enum, default_value_t = Output::Table)]
    output: Output,

    /// Write PNG charts here: miss ratio and write expulsion curves, disk accesses against the
    /// baseline (with --format: one chart, FILE.png).
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,

    #[command(flatten)]
    local: crate::sim::curve::CurveArgs,
}

/// One configuration at one size.
#[derive(Serialize)]
struct Row {
    trace: String,
    config: String,
    cache_bytes: u64,
    read_requests: u64,
    read_misses: u64,
    read_miss_ratio: f64,
    write_requests: u64,
    write_expulsions: u64,
    expulsions_per_write: f64,
    origin_accesses: u64,
    origin_read_bytes: u64,
    origin_write_bytes: u64,
    /// Read, write and total disk accesses over the baseline's at this size.
    read_accesses_vs_baseline: Option<f64>,
    write_accesses_vs_baseline: Option<f64>,
    total_accesses_vs_baseline: Option<f64>,
}

/// Parses `32K..256M` (doubling) or `1M,4M,16M`.
fn parse_sizes(text: &str) -> Result<Vec<u64>> {
    let bytes = |t: &str| {
        let t = t.trim();
        t.parse::<u64>()
            .ok()
            .or_else(|| parse_bytes(t))
            .filter(|&b| b > 0)
            .with_context(|| {
                format!("--sizes: `{t}` is not a size; expected bytes like 4096, 32K or 16MiB")
            })
    };
    if let Some((from, to)) = text.split_once("..") {
        let (from, to) = (bytes(from)?, bytes(to)?);
        if from > to {
            bail!("--sizes {text}: FROM is larger than TO");
        }
        let mut sizes = vec![from];
        while let Some(next) = sizes
            .last()
            .and_then(|s| s.checked_mul(2))
            .filter(|&s| s <= to)
        {
            sizes.push(next);
        }
        return Ok(sizes);
    }
    text.split(',').map(bytes).collect()
}

fn parse_configs(text: &str) -> Result<Vec<Scheme>> {
    let schemes: Vec<Scheme> = text
        .split(';')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| t.parse().with_context(|| format!("--configs: `{t}`")))
        .collect::<Result<_>>()?;
    if schemes.is_empty() {
        bail!("--configs is empty: give e.g. `unix;variable`");
    }
    Ok(schemes)
}

/// The requests: the trace, or the generated workload.
fn requests(args: &MrcArgs) -> Result<(String, Vec<FileRequest>)> {
    match &args.trace {
        Some(path) => {
            if args.workload_params.is_some() {
                bail!("--workload-params sets the generated workload: drop it with a TRACE");
            }
            let requests = read_file_requests(path)?;
            if requests.is_empty() {
                bail!("{}: no requests", path.display());
            }
            let label = coopcache_sim::local::trace_label(std::slice::from_ref(path));
            Ok((label, requests))
        }
        None => {
            let mut w = FsWorkload {
                seed: args.seed,
                ..FsWorkload::default()
            };
            if let Some(params) = &args.workload_params {
                w.set_all(params)?;
            }
            Ok(("fs".into(), w.generate().collect()))
        }
    }
}

/// Runs `coopcache sim mrc`: local curves with `--format`, else attribute
/// caches.
pub fn run(args: MrcArgs) -> Result<()> {
    if args.local.format.is_some() {
        return run_local(&args);
    }
    if let Some(first) = args.local.given().first() {
        bail!(
            "{first} applies to local policies' curves: add --format (e.g. --format lirs) with a block or object TRACE"
        );
    }
    let configs = args.configs.as_deref().unwrap_or("unix;variable");
    let sizes_text = args.sizes.as_deref().unwrap_or("32K..256M");
    let schemes = parse_configs(configs)?;
    let sizes = parse_sizes(sizes_text)?;
    let (label, requests) = requests(&args)?;
    let grid: Vec<(usize, u64)> = sizes
        .iter()
        .flat_map(|&t| (0..schemes.len()).map(move |s| (s, t)))
        .collect();
    // A point is `None` where the configuration does not fit the size.
    let points: Vec<Option<AttrPoint>> = if args.direct {
        grid.par_iter()
            .map(|&(s, total)| {
                let resolved = schemes[s].at(total).resolve(total).ok()?;
                simulate(&requests, &resolved).ok()
            })
            .collect()
    } else {
        let curves = Curves::new(&requests, &schemes);
        grid.iter()
            .map(|&(s, total)| curves.point(&schemes[s], total).ok())
            .collect()
    };
    let baseline = |i: usize| points[i - grid[i].0];
    let rows: Vec<Row> = grid
        .iter()
        .enumerate()
        .filter_map(|(i, &(s, total))| {
            let p = points[i]?;
            let base = baseline(i);
            let vs = |f: fn(&AttrPoint) -> u64| base.map(|b| f(&p) as f64 / f(&b).max(1) as f64);
            Some(Row {
                trace: label.clone(),
                config: schemes[s].to_string(),
                cache_bytes: total,
                read_requests: p.read_requests,
                read_misses: p.read_misses,
                read_miss_ratio: p.read_miss_ratio(),
                write_requests: p.write_requests,
                write_expulsions: p.write_expulsions,
                expulsions_per_write: p.expulsions_per_write(),
                origin_accesses: p.origin_accesses(),
                origin_read_bytes: p.origin_read_bytes,
                origin_write_bytes: p.origin_write_bytes,
                read_accesses_vs_baseline: vs(|p| p.read_misses),
                write_accesses_vs_baseline: vs(|p| p.write_expulsions),
                total_accesses_vs_baseline: vs(AttrPoint::origin_accesses),
            })
        })
        .collect();
    if rows.is_empty() {
        bail!("no configuration fits any of the sizes {sizes_text}");
    }
    let output = args.output();
    coopcache_console::output::print_rows(output, &rows, |rows| {
        print_table(rows);
        print_regions(rows, &schemes);
    })?;
    if let Some(dir) = &args.plot {
        plot(dir, &label, &rows, &schemes)?;
        if output == Output::Table {
            println!("wrote charts to {}", dir.display());
        }
    }
    Ok(())
}

impl MrcArgs {
    /// `--output`, or JSON for `--json`.
    fn output(&self) -> Output {
        if self.json { Output::Json } else { self.output }
    }
}

/// Local policies' curves on a block or object trace.
fn run_local(args: &MrcArgs) -> Result<()> {
    let refused = [
        ("--configs", args.configs.is_some()),
        ("--sizes", args.sizes.is_some()),
        ("--direct", args.direct),
        ("--workload-params", args.workload_params.is_some()),
    ];
    if let Some((flag, _)) = refused.iter().find(|(_, given)| *given) {
        bail!(
            "{flag} applies to attribute caches, not to local policies' curves (--format): use --policy and --cache-size"
        );
    }
    let Some(trace) = &args.trace else {
        bail!(
            "--format reads a TRACE file: give one, e.g. `coopcache sim mrc sprite.trace.gz --format lirs`"
        );
    };
    let plot = args
        .plot
        .as_deref()
        .map(crate::sim::curve::plot_file)
        .transpose()?;
    crate::sim::curve::run(trace, &args.local, args.output(), plot)
}

/// A byte count as the paper writes cache sizes: 32K, 4M.
fn short_bytes(b: u64) -> String {
    match b {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{}G", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{}M", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{}K", b >> 10),
        b => b.to_string(),
    }
}

fn percent(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), |x| format!("{:.0}%", x * 100.0))
}

fn print_table(rows: &[Row]) {
    let header = [
        "config",
        "cache",
        "read miss ratio",
        "expulsions/write",
        "disk accesses",
        "disk MiB",
        "reads vs base",
        "writes vs base",
        "total vs base",
    ];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.config.clone(),
                short_bytes(r.cache_bytes),
                format!("{:.4}", r.read_miss_ratio),
                format!("{:.4}", r.expulsions_per_write),
                r.origin_accesses.to_string(),
                format!(
                    "{:.1}",
                    (r.origin_read_bytes + r.origin_write_bytes) as f64 / (1 << 20) as f64
                ),
                percent(r.read_accesses_vs_baseline),
                percent(r.write_accesses_vs_baseline),
                percent(r.total_accesses_vs_baseline),
            ]
        })
        .collect();
    table::print(&header, &cells, 1);
}

/// The paper's three cache size regions (section 3.1).
const REGIONS: [(&str, u64, u64); 3] = [
    ("small (<= 128K)", 0, 128 << 10),
    ("medium (256K-4M)", (128 << 10) + 1, 4 << 20),
    ("large (>= 8M)", (4 << 20) + 1, u64::MAX),
];

/// Average change in disk accesses against the baseline per region, as the
/// paper's section 4.4 reports them.
fn print_regions(rows: &[Row], schemes: &[Scheme]) {
    let base = schemes[0].to_string();
    for scheme in &schemes[1..] {
        let name = scheme.to_string();
        let mut line = format!("{name} against {base}, mean change in disk accesses:");
        for (region, lo, hi) in REGIONS {
            let of = |f: fn(&Row) -> Option<f64>| {
                let v: Vec<f64> = rows
                    .iter()
                    .filter(|r| r.config == name && (lo..=hi).contains(&r.cache_bytes))
                    .filter_map(f)
                    .collect();
                (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64 - 1.0)
            };
            if let (Some(read), Some(total)) = (
                of(|r| r.read_accesses_vs_baseline),
                of(|r| r.total_accesses_vs_baseline),
            ) {
                line.push_str(&format!(
                    " {region} reads {:+.0}% total {:+.0}%;",
                    read * 100.0,
                    total * 100.0
                ));
            }
        }
        println!("{}", line.trim_end_matches(';'));
    }
}

/// Picks one figure of a row.
type Pick = fn(&Row) -> Option<f64>;

fn plot(dir: &std::path::Path, label: &str, rows: &[Row], schemes: &[Scheme]) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let names: Vec<String> = schemes.iter().map(Scheme::to_string).collect();
    let kib = |r: &Row| r.cache_bytes as f64 / 1024.0;
    let curve = |name: &str, f: fn(&Row) -> Option<f64>| -> Vec<(f64, f64)> {
        rows.iter()
            .filter(|r| r.config == name)
            .filter_map(|r| Some((kib(r), f(r)?)))
            .collect()
    };
    // One curve per configuration: read request miss ratio (the paper's
    // Figures 9 and 12) and write expulsions per write (Figure 11).
    let per_config: [(&str, &str, &str, Pick); 2] = [
        (
            "attr-miss-ratio.png",
            "Read request miss ratio",
            "read request miss ratio",
            |r| Some(r.read_miss_ratio),
        ),
        (
            "attr-expulsions.png",
            "Write expulsions per write request",
            "write expulsions / write",
            |r| Some(r.expulsions_per_write),
        ),
    ];
    for (file, title, y_label, pick) in per_config {
        let series: Vec<Series> = names
            .iter()
            .map(|n| Series {
                name: n,
                points: curve(n, pick),
            })
            .collect();
        xy(
            &dir.join(file),
            &format!("{title}, {label}"),
            ("total cache (KiB)", y_label),
            &series,
            true,
            Style::Lines,
        )?;
    }
    if names.len() < 2 {
        return Ok(());
    }
    let mut relative = Vec::new();
    let several = names.len() > 2;
    for n in &names[1..] {
        let picks: [(&str, Pick); 3] = [
            ("reads", |r| r.read_accesses_vs_baseline),
            ("writes", |r| r.write_accesses_vs_baseline),
            ("total", |r| r.total_accesses_vs_baseline),
        ];
        for (what, f) in picks {
            // With several configurations, reads and totals only.
            if several && what == "writes" {
                continue;
            }
            relative.push((format!("{n}: {what}"), curve(n, f)));
        }
    }
    let series: Vec<Series> = relative
        .iter()
        .map(|(name, points)| Series {
            name,
            points: points.clone(),
        })
        .collect();
    xy(
        &dir.join("attr-disk-accesses.png"),
        &format!("Disk accesses relative to {}, {label}", names[0]),
        ("total cache (KiB)", "disk accesses / baseline's"),
        &series,
        true,
        Style::Lines,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_double_or_list() {
        assert_eq!(
            parse_sizes("32K..256K").unwrap(),
            vec![32 << 10, 64 << 10, 128 << 10, 256 << 10]
        );
        assert_eq!(parse_sizes("1M, 3M").unwrap(), vec![1 << 20, 3 << 20]);
        let err = parse_sizes("1M..2Q").unwrap_err().to_string();
        assert!(err.contains("`2Q`"), "{err}");
        assert!(parse_sizes("4M..1M").is_err());
    }
}
