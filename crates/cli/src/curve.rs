//! `coopcache sim mrc TRACE --format F`: local policies' miss-ratio curves.
//! LRU from one stack-distance pass (exact, or sampled with `--shards`),
//! every other policy replayed at each size, all sizes in parallel.

use crate::plot::{Series, Style, xy};
use crate::policies::{AdmissionList, PolicyList};
use anyhow::{Context, Result, bail};
use clap::Args;
use coopcache_core::{Capacity, PolicyKind, PolicySpec};
use coopcache_sim::mrc::{CurveUnit, LruCurve, Shards};
use coopcache_sim::replay::{RunSpec, replay_sized};
use coopcache_sim::size::parse_bytes;
use coopcache_sim::trace::{self, CsvSpec, ReadOptions, TraceFormat};
use serde::Serialize;
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

/// One point of a cache size as written: a size, or a fraction of the
/// working set.
#[derive(Clone, Copy, Debug, PartialEq)]
enum SizePoint {
    /// A plain number: objects.
    Objects(u64),
    /// A size with a unit.
    Bytes(u64),
    /// `10%`: a fraction of the working set.
    Fraction(f64),
}

impl SizePoint {
    fn parse(text: &str) -> Result<SizePoint> {
        let t = text.trim();
        let point = if let Some(pct) = t.strip_suffix('%') {
            pct.trim()
                .parse::<f64>()
                .ok()
                .filter(|p| p.is_finite() && *p > 0.0)
                .map(|p| SizePoint::Fraction(p / 100.0))
        } else if let Ok(n) = t.parse::<u64>() {
            (n > 0).then_some(SizePoint::Objects(n))
        } else {
            parse_bytes(t).filter(|&b| b > 0).map(SizePoint::Bytes)
        };
        point.with_context(|| {
            format!(
                "--cache-size: `{t}` is not a cache size; expected a positive count of objects (`1000`), bytes with a unit (`64MiB`) or a percentage of the working set (`10%`)"
            )
        })
    }

    fn value(self) -> f64 {
        match self {
            SizePoint::Objects(n) | SizePoint::Bytes(n) => n as f64,
            SizePoint::Fraction(f) => f,
        }
    }

    fn with_value(self, v: f64) -> SizePoint {
        match self {
            SizePoint::Objects(_) => SizePoint::Objects(v.round().max(1.0) as u64),
            SizePoint::Bytes(_) => SizePoint::Bytes(v.round().max(1.0) as u64),
            SizePoint::Fraction(_) => SizePoint::Fraction(v),
        }
    }
}

/// The most points one range may ask for.
const MAX_POINTS: usize = 10_000;

/// Parses `--cache-size`: sizes and ranges, comma-separated.
fn parse_sizes(text: &str) -> Result<Vec<SizePoint>> {
    let mut points = Vec::new();
    for item in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        match item.split_once("..") {
            None => points.push(SizePoint::parse(item)?),
            Some((from, rest)) => points.extend(parse_range(item, from, rest)?),
        }
    }
    if points.is_empty() {
        bail!("--cache-size is empty: give e.g. `1%..100%:50` or `1MiB..1GiB:20log`");
    }
    Ok(points)
}

/// `FROM..TO:N` or `FROM..TO:Nlog`.
fn parse_range(item: &str, from: &str, rest: &str) -> Result<Vec<SizePoint>> {
    let Some((to, count)) = rest.split_once(':') else {
        bail!("--cache-size {item}: a range needs its number of points, e.g. `{item}:20`");
    };
    let (count, log) = match count.trim().strip_suffix("log") {
        Some(n) => (n, true),
        None => (count.trim(), false),
    };
    let n: usize = count
        .trim()
        .parse()
        .ok()
        .filter(|n| (2..=MAX_POINTS).contains(n))
        .with_context(|| {
            format!(
                "--cache-size {item}: `{count}` points; expected 2 to {MAX_POINTS}, e.g. `:20` (or `:20log` for log spacing)"
            )
        })?;
    let (a, b) = (SizePoint::parse(from)?, SizePoint::parse(to)?);
    if std::mem::discriminant(&a) != std::mem::discriminant(&b) {
        bail!("--cache-size {item}: both ends need the same unit (objects, bytes or a percentage)");
    }
    let (lo, hi) = (a.value(), b.value());
    if lo >= hi {
        bail!("--cache-size {item}: FROM must be smaller than TO");
    }
    let mut points: Vec<SizePoint> = (0..n)
        .map(|i| {
            let t = i as f64 / (n - 1) as f64;
            let v = if log {
                lo * (hi / lo).powf(t)
            } else {
                lo + (hi - lo) * t
            };
            a.with_value(v)
        })
        .collect();
    points.dedup();
    Ok(points)
}

/// One policy at one size.
#[derive(Serialize)]
struct Row {
    trace: String,
    policy: String,
    /// `stack` (exact one pass), `shards` (sampled) or `replay`.
    method: &'static str,
    cache_size_objects: Option<u64>,
    cache_size_bytes: Option<u64>,
    /// The size as a fraction of the working set.
    working_set_fraction: f64,
    requests: u64,
    misses: u64,
    miss_ratio: f64,
    byte_miss_ratio: f64,
}

/// Runs the curves of `trace`.
pub fn run(trace: &Path, args: &CurveArgs, json: bool, plot: Option<&Path>) -> Result<()> {
    let format = args.format.expect("dispatched on --format");
    if format == TraceFormat::Csv && args.csv.is_none() {
        bail!("--format csv needs --csv to say which column holds the id, e.g. --csv id=1");
    }
    let points = parse_sizes(args.cache_size.as_deref().unwrap_or("1%..100%:50"))?;
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
    let sized = format.has_sizes(&opts);
    let unit = unit(&points, sized)?;
    let open = || trace::open(trace, format, &opts).map(|s| s.requests);
    let label = crate::sim::trace_label(&[trace.to_path_buf()]);
    let curve = LruCurve::of(open()?, unit, sized, shards, |_| {})
        .with_context(|| format!("reading {label}"))?;
    let (objects, bytes) = curve.working_set();
    let working_set = match unit {
        CurveUnit::Objects => objects,
        CurveUnit::Bytes => bytes,
    };
    let mut sizes: Vec<u64> = points
        .iter()
        .map(|p| match *p {
            SizePoint::Objects(n) | SizePoint::Bytes(n) => n,
            SizePoint::Fraction(f) => (f * working_set as f64).round().max(1.0) as u64,
        })
        .collect();
    sizes.dedup();
    let mut rows = Vec::new();
    let row = |policy: PolicySpec, method, size: u64, misses, mr, bmr| Row {
        trace: label.clone(),
        policy: policy.to_string(),
        method,
        cache_size_objects: (unit == CurveUnit::Objects).then_some(size),
        cache_size_bytes: (unit == CurveUnit::Bytes).then_some(size),
        working_set_fraction: size as f64 / working_set.max(1) as f64,
        requests: curve.reads(),
        misses,
        miss_ratio: mr,
        byte_miss_ratio: bmr,
    };
    let policies = match &args.policy {
        Some(list) if !list.0.is_empty() => list.0.clone(),
        _ => vec![PolicyKind::Lru.into()],
    };
    let policies = match &args.admission {
        Some(admissions) => admissions.cross(&policies),
        None => policies,
    };
    // Plain LRU comes from the stack-distance pass; LRU with knobs or
    // admission must be replayed like any other policy.
    let stack = PolicySpec::from(PolicyKind::Lru);
    let replayed: Vec<PolicySpec> = policies.iter().copied().filter(|&p| p != stack).collect();
    let specs: Vec<RunSpec> = replayed
        .iter()
        .flat_map(|&policy| {
            sizes.iter().map(move |&s| RunSpec {
                policy,
                capacity: match unit {
                    CurveUnit::Objects => Capacity::Blocks(s as usize),
                    CurveUnit::Bytes => Capacity::Bytes(s),
                },
            })
        })
        .collect();
    let results = if specs.is_empty() {
        Vec::new()
    } else {
        replay_sized(open()?, &specs, sized, |_| {})
            .with_context(|| format!("replaying {label}"))?
    };
    for &policy in &policies {
        if policy == stack {
            let method = if shards.is_some() { "shards" } else { "stack" };
            for &s in &sizes {
                let p = curve.point(s);
                rows.push(row(
                    policy,
                    method,
                    s,
                    p.misses,
                    p.miss_ratio,
                    p.byte_miss_ratio,
                ));
            }
        }
        for r in results.iter().filter(|r| r.spec.policy == policy) {
            let s = match r.spec.capacity {
                Capacity::Blocks(n) => n as u64,
                Capacity::Bytes(b) => b,
            };
            rows.push(row(
                policy,
                "replay",
                s,
                r.tally.misses,
                r.miss_ratio(),
                r.byte_miss_ratio(),
            ));
        }
    }
    notes(&curve, &sizes, &policies);
    if json {
        crate::output::print_json(&rows)?;
    } else {
        print_table(&rows, unit);
    }
    if let Some(path) = plot {
        draw(path, &label, &rows, unit)?;
        if !json {
            println!("wrote {}", path.display());
        }
    }
    Ok(())
}

/// Bytes where the trace has sizes and no size is a plain count of
/// objects; objects otherwise.
fn unit(points: &[SizePoint], sized: bool) -> Result<CurveUnit> {
    let objects = points.iter().any(|p| matches!(p, SizePoint::Objects(_)));
    let bytes = points.iter().any(|p| matches!(p, SizePoint::Bytes(_)));
    match (objects, bytes, sized) {
        (true, true, _) => bail!(
            "--cache-size mixes counts of objects (`1000`) and bytes (`64MiB`): one curve has one unit"
        ),
        (_, true, false) => bail!(
            "--cache-size in bytes needs a trace with object sizes (oracle, csv with size=); give this trace's sizes as counts of objects (`1000`) or percentages (`10%`)"
        ),
        (false, _, true) => Ok(CurveUnit::Bytes),
        _ => Ok(CurveUnit::Objects),
    }
}

/// What the table does not say: zero-size requests left out, and where the
/// one-pass byte curve is not LRU exactly.
fn notes(curve: &LruCurve, sizes: &[u64], policies: &[PolicySpec]) {
    if curve.skipped() > 0 {
        eprintln!(
            "note: {} of size 0 left out of the byte caches (as libCacheSim's readers do)",
            crate::output::count(curve.skipped(), "request")
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
    crate::table::print(&header, &cells, 2);
}

fn draw(path: &Path, label: &str, rows: &[Row], unit: CurveUnit) -> Result<()> {
    let mut names: Vec<&str> = rows.iter().map(|r| r.policy.as_str()).collect();
    names.dedup();
    let (x_label, scale) = match unit {
        CurveUnit::Objects => ("cache size (objects)", 1.0),
        CurveUnit::Bytes => ("cache size (MiB)", (1u64 << 20) as f64),
    };
    let series: Vec<Series> = names
        .iter()
        .map(|&name| Series {
            name,
            points: rows
                .iter()
                .filter(|r| r.policy == name)
                .map(|r| {
                    let size = r.cache_size_objects.or(r.cache_size_bytes).unwrap_or(0);
                    (size as f64 / scale, r.miss_ratio)
                })
                .collect(),
        })
        .collect();
    xy(
        path,
        &format!("Miss ratio, {label}"),
        (x_label, "miss ratio"),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_give_evenly_spaced_points() {
        let p = parse_sizes("1%..100%:4").unwrap();
        let fractions: Vec<f64> = p.iter().map(|p| p.value()).collect();
        for (got, want) in fractions.iter().zip([0.01, 0.34, 0.67, 1.0]) {
            assert!((got - want).abs() < 1e-12, "{fractions:?}");
        }
        let p = parse_sizes("1MiB..1GiB:4log").unwrap();
        assert_eq!(p.len(), 4);
        assert_eq!(
            (p[0], p[3]),
            (SizePoint::Bytes(1 << 20), SizePoint::Bytes(1 << 30))
        );
        // Evenly on a log scale: each point 1024^(1/3) = 10.08 times the last.
        let SizePoint::Bytes(second) = p[1] else {
            panic!("{p:?}")
        };
        assert!((second as f64 / (1 << 20) as f64 - 10.079).abs() < 0.001);
        assert_eq!(
            parse_sizes("100, 200..400:3").unwrap(),
            [100, 200, 300, 400].map(SizePoint::Objects).to_vec()
        );
    }

    #[test]
    fn bad_ranges_say_what_is_wrong() {
        for (bad, says) in [
            ("1%..100%", "needs its number of points"),
            ("1%..100%:1", "expected 2 to"),
            ("1%..100%:x", "`x` points"),
            ("100%..1%:5", "FROM must be smaller than TO"),
            ("1%..1GiB:5", "same unit"),
            ("0..10:5", "`0` is not a cache size"),
            ("1MiB..2Q:5", "`2Q` is not a cache size"),
            ("-5%", "`-5%`"),
            ("", "is empty"),
        ] {
            let err = parse_sizes(bad).unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
        let err = unit(&[SizePoint::Objects(1), SizePoint::Bytes(1)], true).unwrap_err();
        assert!(err.to_string().contains("mixes"), "{err}");
        let err = unit(&[SizePoint::Bytes(1)], false).unwrap_err();
        assert!(
            err.to_string().contains("needs a trace with object sizes"),
            "{err}"
        );
        assert_eq!(
            unit(&[SizePoint::Fraction(0.5)], true).unwrap(),
            CurveUnit::Bytes
        );
        assert_eq!(
            unit(&[SizePoint::Objects(5)], true).unwrap(),
            CurveUnit::Objects
        );
    }
}
