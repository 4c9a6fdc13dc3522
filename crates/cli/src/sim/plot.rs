//! `coopcache sim TRACE --plot FILE.png`: a local-policy study's chart.
//! With `--report-interval`, the miss ratio over time, one line per run;
//! without, the miss ratio against cache size, one line per policy, drawn
//! as `sim mrc` draws its curves.

use crate::sim::curve::draw_curves;
use anyhow::{Result, bail};
use coopcache_console::output::human_bytes;
use coopcache_console::plot::{Series, Style, xy};
use coopcache_sim::local::{IntervalRow, SimRow};
use coopcache_sim::mrc::CurveUnit;
use std::path::Path;

/// Which ratio `--plot` draws (`--plot-metric`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum PlotMetric {
    /// Read misses over reads.
    #[default]
    MissRatio,
    /// Bytes missed over bytes read: where objects have sizes, what a
    /// byte cache is judged by.
    ByteMissRatio,
}

impl PlotMetric {
    fn label(self) -> &'static str {
        match self {
            PlotMetric::MissRatio => "miss ratio",
            PlotMetric::ByteMissRatio => "byte miss ratio",
        }
    }
}

/// Refuses a plot of one point per policy before anything is replayed:
/// without intervals the chart is against cache size, so it needs several.
pub fn check_sizes(sizes: usize, intervals: bool) -> Result<()> {
    if !intervals && sizes < 2 {
        bail!(
            "--plot draws the miss ratio against cache size, which needs several: give --cache-size a list (e.g. 1000,2000,4000), or add --report-interval (e.g. 100000 or 1h) for the miss ratio over time"
        );
    }
    Ok(())
}

/// The miss ratio (or byte miss ratio) against cache size, one line per
/// policy; the sizes must all count objects (blocks) or all bytes.
pub fn sizes(path: &Path, label: &str, rows: &[SimRow], metric: PlotMetric) -> Result<()> {
    let unit = if rows.iter().all(|r| r.cache_size_objects.is_some()) {
        CurveUnit::Objects
    } else if rows.iter().all(|r| r.cache_size_objects.is_none()) {
        CurveUnit::Bytes
    } else {
        bail!(
            "--plot draws against one cache size axis: give every --cache-size in objects (`1000`) or every one in bytes (`64MiB`)"
        );
    };
    let points: Vec<(&str, u64, f64)> = rows
        .iter()
        .map(|r| {
            let size = r
                .cache_size_objects
                .map_or(r.cache_size_bytes, |n| Some(n as u64));
            (r.policy.as_str(), size.unwrap_or(0), ratio(metric, r))
        })
        .collect();
    draw_curves(path, label, unit, metric.label(), &points)
}

fn ratio(metric: PlotMetric, r: &SimRow) -> f64 {
    match metric {
        PlotMetric::MissRatio => r.miss_ratio,
        PlotMetric::ByteMissRatio => r.byte_miss_ratio,
    }
}

/// The miss ratio (or byte miss ratio) of each interval at its end, one
/// line per run (policy and cache size, named as the table names them),
/// against trace time where the intervals are of time, else requests read.
/// An interval without reads (only writes, say) has no ratio and no point.
/// `rows` are run-major, as the table prints them.
pub fn intervals(path: &Path, label: &str, rows: &[IntervalRow], metric: PlotMetric) -> Result<()> {
    let last_time = rows.iter().filter_map(|r| r.end_time_s).fold(0.0, f64::max);
    let (x_label, scale) = match rows.first().and_then(|r| r.end_time_s) {
        None => ("trace requests read", 1.0),
        Some(_) if last_time >= 3.0 * 86400.0 => ("trace time (days)", 86400.0),
        Some(_) if last_time >= 3.0 * 3600.0 => ("trace time (hours)", 3600.0),
        Some(_) if last_time >= 3.0 * 60.0 => ("trace time (minutes)", 60.0),
        Some(_) => ("trace time (seconds)", 1.0),
    };
    let mut runs: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for r in rows {
        let name = run_name(r);
        let x = r.end_time_s.unwrap_or(r.interval_end as f64) / scale;
        let y = match metric {
            PlotMetric::MissRatio => r.miss_ratio,
            PlotMetric::ByteMissRatio => r.byte_miss_ratio,
        };
        let point = (r.requests > 0).then_some((x, y));
        match runs.last_mut() {
            Some((last, points)) if *last == name => points.extend(point),
            _ => runs.push((name, point.into_iter().collect())),
        }
    }
    let series: Vec<Series> = runs
        .iter()
        .map(|(name, points)| Series {
            name,
            points: points.clone(),
        })
        .collect();
    let y_label = metric.label();
    let title = y_label[..1].to_uppercase() + &y_label[1..];
    xy(
        path,
        &format!("{title} over time, {label}"),
        (x_label, y_label),
        &series,
        false,
        Style::Lines,
    )
}

/// A run as the interval table names it: `lru 1000 blocks`, `arc 64MiB`.
fn run_name(r: &IntervalRow) -> String {
    match (r.cache_size_objects, r.cache_size_bytes) {
        (Some(n), _) => format!("{} {n} blocks", r.policy),
        (None, Some(b)) => format!("{} {}", r.policy, human_bytes(b)),
        (None, None) => r.policy.clone(),
    }
}
