//! `coopcache trace stats`: a trace's statistics as a table, one JSON
//! object or CSV rows, and PNG charts.

use super::Input;
use anyhow::{Context, Result, bail};
use clap::Args;
use coopcache_console::progress::Progress;
use coopcache_console::table;
use coopcache_sim::stats::{Bucket, TraceStats};
use serde::Serialize;
use std::path::PathBuf;

const AFTER_HELP: &str = "\
Reuse distance: distinct other objects referenced since the object's previous reference (an
LRU cache of C objects hits a reference iff its distance is below C), from the same LRU stack
as `sim mrc`; cold references (first ones, and first ones after a delete) are counted apart.
Reuse time: trace time since the previous reference, in the trace's unit (seconds for oracle,
lcs, vscsi and twr; the request's position for lirs, lis, txt and be32). Histograms have
power-of-two buckets [lo, hi).
Zipf alpha: minus the slope of the least-squares line of ln(requests) on ln(rank) over every
object (libCacheSim's fit), with its R^2.
Object sizes: each object once, at its first request's size (traces with sizes only).

--csv prints rows `section,key,lo,hi,value`: section summary (key = figure), size_percentile
(key = pNN), size_histogram / reuse_distance / reuse_time (lo, hi, value = count; the
reuse_distance row with key cold counts cold references), zipf (alpha, intercept, r_squared),
top (key = object id, lo = rank, value = requests), rate (lo, hi = bucket times, value =
requests).

Examples:
  coopcache trace stats ../shared/traces/w106.trace.xz --format be32
  coopcache trace stats w01.oracleGeneral.zst --json
  coopcache trace stats cluster52.sort.zst --plot figures
";

/// Options of `coopcache trace stats`.
#[derive(Args)]
#[command(after_help = AFTER_HELP)]
pub struct StatsArgs {
    #[command(flatten)]
    input: Input,

    /// Print one JSON object instead of a table.
    #[arg(long, conflicts_with = "csv_out")]
    json: bool,

    /// Print CSV rows `section,key,lo,hi,value` instead of a table.
    #[arg(long = "csv", id = "csv_out")]
    csv_out: bool,

    /// Write PNG charts here: popularity (log-log, with the Zipf fit), reuse distances,
    /// object size CDF, request rate.
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
}

/// The JSON object: the trace, its format and its statistics.
#[derive(Serialize)]
struct Report<'a> {
    trace: String,
    format: String,
    #[serde(flatten)]
    stats: &'a TraceStats,
}

/// Runs `coopcache trace stats`.
pub fn run(args: &StatsArgs) -> Result<()> {
    let (stream, format, sized) = args.input.open()?;
    let label = args.input.label();
    let progress = Progress::new(vec![(stream.progress.clone(), stream.file_len)]);
    let stats = TraceStats::of(stream.requests, sized, |n| progress.update(n));
    progress.finish();
    let stats = stats.with_context(|| format!("reading {label}"))?;
    if stats.ops.requests == 0 {
        bail!("{}: no requests", args.input.path().display());
    }
    if args.json {
        let report = Report {
            trace: label.clone(),
            format: format.to_string(),
            stats: &stats,
        };
        println!("{}", serde_json::to_string(&report)?);
    } else if args.csv_out {
        print_csv(&stats);
    } else {
        print_table(&label, &format.to_string(), &stats);
    }
    if let Some(dir) = &args.plot {
        let written = super::plots::draw(dir, &label, &stats)?;
        if !args.json && !args.csv_out {
            println!("\nwrote {} charts to {}", written, dir.display());
        }
    }
    Ok(())
}

/// `part` of `whole` as a percentage.
fn percent(part: u64, whole: u64) -> String {
    format!("{:.2}%", 100.0 * part as f64 / whole.max(1) as f64)
}

fn print_table(label: &str, format: &str, s: &TraceStats) {
    let o = &s.ops;
    let bytes = |b: u64| {
        if s.sized {
            format!("{b} ({})", coopcache_console::output::human_size(b))
        } else {
            "- (no sizes)".to_string()
        }
    };
    let mut rows: Vec<(&str, String)> = vec![
        ("trace", format!("{label} ({format})")),
        (
            "requests",
            format!(
                "{} (reads {}, writes {}, deletes {})",
                o.requests, o.reads, o.writes, o.deletes
            ),
        ),
        ("objects", s.objects.to_string()),
        ("bytes requested", bytes(s.bytes_requested)),
        (
            "working set",
            format!("{} objects, {}", s.objects, bytes(s.working_set_bytes)),
        ),
        (
            "one-hit wonders",
            format!(
                "{} ({} of objects)",
                s.one_hit_wonders,
                percent(s.one_hit_wonders, s.objects)
            ),
        ),
        (
            "cold references",
            format!("{} ({} of requests)", s.cold, percent(s.cold, o.requests)),
        ),
    ];
    if let Some(z) = &s.zipf {
        rows.push((
            "zipf alpha",
            format!(
                "{:.4} (least squares of ln requests on ln rank, all objects; R^2 {:.3})",
                z.alpha, z.r_squared
            ),
        ));
    }
    let r = &s.rate;
    let peak = r.counts.iter().max().copied().unwrap_or(0);
    rows.push((
        "request rate",
        format!(
            "{} buckets of {} time units from {}: mean {:.1}, peak {} requests per bucket",
            r.counts.len(),
            r.width,
            r.start,
            o.requests as f64 / r.counts.len().max(1) as f64,
            peak
        ),
    ));
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (k, v) in &rows {
        println!("{k:<width$}  {v}");
    }
    if let Some(sizes) = &s.sizes {
        println!();
        let mut header = vec!["min".to_string()];
        let mut cells = vec![sizes.min.to_string()];
        for p in &sizes.percentiles {
            header.push(format!("p{}", p.percent));
            cells.push(p.size.to_string());
        }
        header.extend(["max".into(), "mean".into()]);
        cells.extend([sizes.max.to_string(), format!("{:.1}", sizes.mean)]);
        println!("object sizes (bytes, each object once)");
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        table::print(&header, &[cells], 0);
        println!();
        histogram("object size (bytes)", &sizes.histogram, s.objects, None);
    }
    println!();
    histogram(
        "reuse distance (objects)",
        &s.reuse_distance,
        o.requests,
        Some(s.cold),
    );
    println!();
    histogram("reuse time (time units)", &s.reuse_time, o.requests, None);
    println!();
    let top: Vec<Vec<String>> = s
        .top
        .iter()
        .enumerate()
        .map(|(i, p)| {
            vec![
                (i + 1).to_string(),
                p.id.to_string(),
                p.requests.to_string(),
                format!("{:.4}", p.fraction),
            ]
        })
        .collect();
    println!("most requested objects");
    table::print(&["rank", "object", "requests", "fraction"], &top, 0);
}

/// A histogram as a table with counts, fractions of `whole` and the
/// cumulative fraction; `cold` as a last row where given. Empty buckets
/// are left out (JSON and CSV keep them).
fn histogram(what: &str, buckets: &[Bucket], whole: u64, cold: Option<u64>) {
    let mut cumulative = 0;
    let mut rows: Vec<Vec<String>> = buckets
        .iter()
        .filter(|b| b.count > 0)
        .map(|b| {
            cumulative += b.count;
            vec![
                range(b),
                b.count.to_string(),
                percent(b.count, whole),
                percent(cumulative, whole),
            ]
        })
        .collect();
    if let Some(cold) = cold {
        rows.push(vec![
            "cold".into(),
            cold.to_string(),
            percent(cold, whole),
            percent(cumulative + cold, whole),
        ]);
    }
    table::print(&[what, "count", "fraction", "cumulative"], &rows, 1);
}

fn range(b: &Bucket) -> String {
    if b.hi == b.lo + 1 {
        b.lo.to_string()
    } else {
        format!("{}-{}", b.lo, b.hi - 1)
    }
}

/// One CSV row.
fn row(section: &str, key: &str, lo: Option<u64>, hi: Option<u64>, value: impl ToString) {
    let opt = |x: Option<u64>| x.map_or_else(String::new, |x| x.to_string());
    println!(
        "{section},{key},{},{},{}",
        opt(lo),
        opt(hi),
        value.to_string()
    );
}

fn print_csv(s: &TraceStats) {
    println!("section,key,lo,hi,value");
    let o = &s.ops;
    for (key, value) in [
        ("requests", o.requests),
        ("reads", o.reads),
        ("writes", o.writes),
        ("deletes", o.deletes),
        ("objects", s.objects),
        ("bytes_requested", s.bytes_requested),
        ("working_set_bytes", s.working_set_bytes),
        ("one_hit_wonders", s.one_hit_wonders),
        ("cold", s.cold),
        ("rate_start", s.rate.start),
        ("rate_width", s.rate.width),
    ] {
        row("summary", key, None, None, value);
    }
    row(
        "summary",
        "one_hit_wonder_ratio",
        None,
        None,
        s.one_hit_wonder_ratio,
    );
    if let Some(sizes) = &s.sizes {
        row("size_percentile", "min", None, None, sizes.min);
        for p in &sizes.percentiles {
            row(
                "size_percentile",
                &format!("p{}", p.percent),
                None,
                None,
                p.size,
            );
        }
        row("size_percentile", "max", None, None, sizes.max);
        row("size_percentile", "mean", None, None, sizes.mean);
        for b in &sizes.histogram {
            row("size_histogram", "", Some(b.lo), Some(b.hi), b.count);
        }
    }
    for b in &s.reuse_distance {
        row("reuse_distance", "", Some(b.lo), Some(b.hi), b.count);
    }
    row("reuse_distance", "cold", None, None, s.cold);
    for b in &s.reuse_time {
        row("reuse_time", "", Some(b.lo), Some(b.hi), b.count);
    }
    if let Some(z) = &s.zipf {
        row("zipf", "alpha", None, None, z.alpha);
        row("zipf", "intercept", None, None, z.intercept);
        row("zipf", "r_squared", None, None, z.r_squared);
    }
    for (i, p) in s.top.iter().enumerate() {
        row(
            "top",
            &p.id.to_string(),
            Some(i as u64 + 1),
            None,
            p.requests,
        );
    }
    let r = &s.rate;
    for (i, &count) in r.counts.iter().enumerate() {
        let lo = r.start + i as u64 * r.width;
        row("rate", "", Some(lo), Some(lo + r.width), count);
    }
}
