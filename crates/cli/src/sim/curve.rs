//! `coopcache sim mrc TRACE --format F`: local policies' miss-ratio curves.
//! LRU from one stack-distance pass (exact, or sampled with `--shards`),
//! every other policy replayed at each size, all sizes in parallel.

use crate::sim::policies::{AdmissionList, PolicyList};
use anyhow::{Context, Result, bail};
use clap::Args;
use coopcache_console::output::Output;
use coopcache_console::plot::{Series, Style, xy};
use coopcache_core::{PolicyKind, PolicySpec};
use coopcache_sim::mrc::{
    CurveRow as Row, CurveSpec, CurveUnit, DEFAULT_SIZES, LruCurve, Shards, curves, parse_sizes,
};
use coopcache_sim::trace::{self, CsvSpec, ReadOptions, TraceFormat};
use std::path::Path;

/// Options of the local-policy curves (`sim mrc` with `--format`).
#[derive(Args)]
pub struct CurveArgs {
    /// Trace format of a block or object trace (lirs, lis, be32, oracle, csv, msr, tencent, lcs,
    /// txt, vscsi, twr):
    /// draws local policies' curves instead of attribute caches'.
    #[arg(short, long)]
    pub(crate) format: Option<TraceFormat>,

    /// Column map of the csv format, e.g. `id=2,size=5,sep=space`.
    #[arg(long, value_name = "SPEC")]
    pub(crate) csv: Option<CsvSpec>,

    /// Local policies, comma-separated, each optionally with knobs (`s3fifo(small=0.2)`, see
    /// Policy knobs below): LRU from one stack-distance pass, the others replayed at every
    /// size [default: lru].
    #[arg(short, long)]
    pub(crate) policy: Option<PolicyList>,

    /// Admission policies crossed with --policy: none, bloom, size(below=N), adaptsize (see
    /// Admission below); each replayed at every size.
    #[arg(long)]
    pub(crate) admission: Option<AdmissionList>,

    /// Cache sizes: a comma-separated list of sizes (`1000`, `64MiB`, `10%` of the working
    /// set) and ranges `FROM..TO:N` (N evenly spaced points; `:Nlog` spaced evenly on a
    /// log scale) [default: 1%..100%:50].
    #[arg(short = 's', long, value_name = "SIZES")]
    pub(crate) cache_size: Option<String>,

    /// Sample LRU's stack with SHARDS at this rate (e.g. 0.01) instead of the exact pass.
    #[arg(long, value_name = "RATE")]
    pub(crate) shards: Option<f64>,
}

/// Runs the curves of `trace`.
pub fn run(trace: &Path, args: &CurveArgs, output: Output, plot: Option<&Path>) -> Result<()> {
    let format = args.format.expect("dispatched on --format");
    if format == TraceFormat::Csv && args.csv.is_none() {
        bail!("--format csv needs --csv to say which column holds the id, e.g. --csv id=1");
    }
    let points = parse_sizes(args.cache_size.as_deref().unwrap_or(DEFAULT_SIZES))?;
    let shards = args
        .shards
        .map(|r| {
            Shards::new(r).with_context(|| {
                format!("--shards {r}: expected a sampling rate above 0 and at most 1, e.g. 0.01")
            })
        })
        .transpose()?;
    let opts = ReadOptions {
        csv: args.csv.clone(),
        ..ReadOptions::default()
    };
    let open = || trace::open(trace, format, &opts).map(|s| s.requests);
    let label = coopcache_sim::local::trace_label(&[trace.to_path_buf()]);
    let policies = match &args.policy {
        Some(list) if !list.0.is_empty() => list.0.clone(),
        _ => vec![PolicyKind::Lru.into()],
    };
    let policies = match &args.admission {
        Some(admissions) => admissions.cross(&policies),
        None => policies,
    };
    let spec = CurveSpec {
        policies,
        points,
        sized: format.has_sizes(&opts),
        shards,
    };
    let computed = curves(open, &label, &spec).with_context(|| format!("curves of {label}"))?;
    let (rows, unit) = (computed.rows, computed.unit);
    notes(&computed.lru, &computed.sizes, &spec.policies);
    coopcache_console::output::print_rows(output, &rows, |rows| print_table(rows, unit))?;
    if let Some(path) = plot {
        draw(path, &label, &rows, unit)?;
        if output == Output::Table {
            println!("wrote {}", path.display());
        }
    }
    Ok(())
}

/// What the table does not say: zero-size requests left out, and where the
/// one-pass byte curve is not LRU exactly.
fn notes(curve: &LruCurve, sizes: &[u64], policies: &[PolicySpec]) {
    if curve.skipped() > 0 {
        eprintln!(
            "note: {} of size 0 left out of the byte caches (as libCacheSim's readers do)",
            coopcache_console::output::count(curve.skipped(), "request")
        );
    }
    let from = curve.exact_from();
    if policies.contains(&PolicyKind::Lru.into()) && sizes.iter().any(|&s| s < from) {
        eprintln!(
            "note: below {from} bytes (the largest object) the one-pass LRU curve empties the cache where LRU refuses an object larger than itself: it may count more misses there (from {from} up it is LRU's curve exactly where each object keeps one size)"
        );
    }
}

fn print_table(rows: &[Row], unit: CurveUnit) {
    let header = [
        "policy",
        "method",
        match unit {
            CurveUnit::Objects => "cache (objects)",
            CurveUnit::Bytes => "cache (bytes)",
        },
        "of working set",
        "misses",
        "miss ratio",
        "byte miss ratio",
    ];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.policy.clone(),
                r.method.to_string(),
                r.cache_size_objects
                    .or(r.cache_size_bytes)
                    .unwrap_or(0)
                    .to_string(),
                format!("{:.1}%", r.working_set_fraction * 100.0),
                r.misses.to_string(),
                format!("{:.4}", r.miss_ratio),
                format!("{:.4}", r.byte_miss_ratio),
            ]
        })
        .collect();
    coopcache_console::table::print(&header, &cells, 2);
}

fn draw(path: &Path, label: &str, rows: &[Row], unit: CurveUnit) -> Result<()> {
    let points: Vec<(&str, u64, f64)> = rows
        .iter()
        .map(|r| {
            let size = r.cache_size_objects.or(r.cache_size_bytes).unwrap_or(0);
            (r.policy.as_str(), size, r.miss_ratio)
        })
        .collect();
    draw_curves(path, label, unit, "miss ratio", &points)
}

/// Draws `(policy, cache size, ratio)` points as one line per policy, in
/// the order policies first appear, against the cache size in `unit`:
/// `sim mrc`'s curves, and `sim --plot` over several cache sizes.
pub(crate) fn draw_curves(
    path: &Path,
    label: &str,
    unit: CurveUnit,
    y_label: &str,
    points: &[(&str, u64, f64)],
) -> Result<()> {
    let mut names: Vec<&str> = Vec::new();
    for &(name, _, _) in points {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let (x_label, scale) = match unit {
        CurveUnit::Objects => ("cache size (objects)", 1.0),
        CurveUnit::Bytes => ("cache size (MiB)", (1u64 << 20) as f64),
    };
    let series: Vec<Series> = names
        .iter()
        .map(|&name| Series {
            name,
            points: points
                .iter()
                .filter(|p| p.0 == name)
                .map(|&(_, size, ratio)| (size as f64 / scale, ratio))
                .collect(),
        })
        .collect();
    let title = y_label[..1].to_uppercase() + &y_label[1..];
    xy(
        path,
        &format!("{title}, {label}"),
        (x_label, y_label),
        &series,
        false,
        Style::Lines,
    )
}

impl CurveArgs {
    /// The options given that only local curves use, for the message
    /// refusing them without `--format`.
    pub(crate) fn given(&self) -> Vec<&'static str> {
        let mut given = Vec::new();
        if self.csv.is_some() {
            given.push("--csv");
        }
        if self.policy.is_some() {
            given.push("--policy");
        }
        if self.admission.is_some() {
            given.push("--admission");
        }
        if self.cache_size.is_some() {
            given.push("--cache-size");
        }
        if self.shards.is_some() {
            given.push("--shards");
        }
        given
    }
}

/// Checks that `--plot` names one PNG file.
pub fn plot_file(plot: &Path) -> Result<&Path> {
    if plot
        .extension()
        .is_none_or(|e| !e.eq_ignore_ascii_case("png"))
    {
        bail!(
            "--plot {}: local curves draw one chart; name a FILE.png",
            plot.display()
        );
    }
    Ok(plot)
}
