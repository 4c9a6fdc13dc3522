//! `trace stats --plot DIR`: popularity (log-log, with the Zipf fit),
//! reuse distances, object size CDF and request rate, as PNGs.

use anyhow::{Context, Result};
use coopcache_console::plot::{Segment, Series, Style, grouped_bars, xy};
use coopcache_sim::stats::TraceStats;
use std::path::Path;

/// Points drawn of a long curve (popularity, size CDF): more would only
/// cover each other.
const POINTS: usize = 300;

/// Draws the charts into `dir`; how many were written.
pub fn draw(dir: &Path, label: &str, s: &TraceStats) -> Result<usize> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut written = 0;
    if s.frequencies.len() >= 2 {
        popularity(&dir.join("popularity.png"), label, s)?;
        written += 1;
    }
    if !s.reuse_distance.is_empty() || s.cold > 0 {
        reuse_distance(&dir.join("reuse-distance.png"), label, s)?;
        written += 1;
    }
    if let Some(sizes) = s.sizes.as_ref().filter(|z| !z.sorted.is_empty()) {
        let n = sizes.sorted.len();
        // Evenly spaced fractions: a CDF's tail matters as much as its head.
        let points: Vec<(f64, f64)> = (0..POINTS.min(n))
            .map(|k| k * (n - 1) / (POINTS.min(n) - 1).max(1))
            .map(|i| (f64::from(sizes.sorted[i].max(1)), (i + 1) as f64 / n as f64))
            .collect();
        let series = [Series {
            name: "objects",
            points,
        }];
        xy(
            &dir.join("size-cdf.png"),
            &format!("Object sizes, {label}"),
            ("object size (bytes)", "fraction of objects at or below"),
            &series,
            true,
            Style::Lines,
        )?;
        written += 1;
    }
    let r = &s.rate;
    let points: Vec<(f64, f64)> = r
        .counts
        .iter()
        .enumerate()
        .map(|(i, &c)| ((i as u64 * r.width) as f64, c as f64))
        .collect();
    let name = format!("requests per {} time units", r.width);
    xy(
        &dir.join("request-rate.png"),
        &format!("Request rate, {label}"),
        ("time since the first request (trace units)", "requests"),
        &[Series {
            name: &name,
            points,
        }],
        false,
        Style::Lines,
    )?;
    Ok(written + 1)
}

/// Up to [`POINTS`] indices of `0..n`, spaced evenly on a log scale (the
/// head of a ranking matters most), always with the first and last.
fn sample(n: usize) -> impl Iterator<Item = usize> {
    let mut picked: Vec<usize> = (0..POINTS)
        .map(|k| {
            let t = k as f64 / (POINTS - 1) as f64;
            ((n as f64).powf(t) - 1.0).round() as usize
        })
        .map(|i| i.min(n.saturating_sub(1)))
        .collect();
    picked.dedup();
    picked.into_iter()
}

/// Requests by rank on log10 axes, with the fitted line.
fn popularity(path: &Path, label: &str, s: &TraceStats) -> Result<()> {
    let f = &s.frequencies;
    let data: Vec<(f64, f64)> = sample(f.len())
        .map(|i| (((i + 1) as f64).log10(), (f[i] as f64).log10()))
        .collect();
    let mut series = vec![Series {
        name: "objects",
        points: data,
    }];
    let fit_name;
    if let Some(z) = &s.zipf {
        fit_name = format!("Zipf fit, alpha {:.3}", z.alpha);
        let last = f.len() as u64;
        series.push(Series {
            name: &fit_name,
            points: vec![
                (0.0, z.at(1).log10()),
                ((last as f64).log10(), z.at(last).log10()),
            ],
        });
    }
    xy(
        path,
        &format!("Popularity, {label}"),
        ("log10 rank", "log10 requests"),
        &series,
        false,
        Style::Lines,
    )
}

/// References by reuse distance bucket, cold ones last.
fn reuse_distance(path: &Path, label: &str, s: &TraceStats) -> Result<()> {
    let mut groups: Vec<String> = s
        .reuse_distance
        .iter()
        .map(|b| {
            if b.hi == b.lo + 1 {
                b.lo.to_string()
            } else {
                format!("<{}", short(b.hi))
            }
        })
        .collect();
    let mut values: Vec<f64> = s.reuse_distance.iter().map(|b| b.count as f64).collect();
    groups.push("cold".into());
    values.push(s.cold as f64);
    grouped_bars(
        path,
        &format!("Reuse distance (distinct objects in between), {label}"),
        "references",
        &groups,
        &[Segment {
            name: "references",
            values,
        }],
    )
}

/// 1024 as 1k, 1048576 as 1M: bucket bounds on the axis.
fn short(x: u64) -> String {
    match x {
        x if x >= 1 << 30 => format!("{}G", x >> 30),
        x if x >= 1 << 20 => format!("{}M", x >> 20),
        x if x >= 1 << 10 => format!("{}k", x >> 10),
        x => x.to_string(),
    }
}
