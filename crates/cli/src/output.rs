//! Reporting replay results: an aligned table, or JSON lines.

use anyhow::Result;

/// `n` and `word`, plural unless `n` is 1: "1 node", "4 nodes".
pub fn count(n: impl Into<u64>, word: &str) -> String {
    let n = n.into();
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}
use coopcache_sim::replay::RunResult;
use serde::Serialize;
use std::io::Write;

/// One run's figures, as both outputs show them.
#[derive(Serialize)]
pub struct Row {
    trace: String,
    policy: String,
    cache_size_objects: usize,
    block_size: u64,
    cache_size_bytes: u64,
    requests: u64,
    misses: u64,
    miss_ratio: f64,
    elapsed_s: f64,
    requests_per_s: f64,
}

impl Row {
    /// The row of `result` on trace `trace`.
    pub fn new(trace: &str, block_size: u64, result: &RunResult) -> Self {
        Row {
            trace: trace.to_string(),
            policy: result.spec.policy.to_string(),
            cache_size_objects: result.spec.capacity,
            block_size,
            cache_size_bytes: result.spec.capacity as u64 * block_size,
            requests: result.requests,
            misses: result.misses,
            miss_ratio: result.miss_ratio(),
            elapsed_s: result.elapsed.as_secs_f64(),
            requests_per_s: result.requests_per_s(),
        }
    }
}

/// One JSON object per line, on stdout.
pub fn print_json<T: Serialize>(rows: impl IntoIterator<Item = T>) -> Result<()> {
    let mut out = std::io::stdout().lock();
    for row in rows {
        serde_json::to_writer(&mut out, &row)?;
        writeln!(out)?;
    }
    Ok(())
}

/// An aligned table of the runs.
pub fn print_table(rows: &[Row]) {
    let header = [
        "trace",
        "policy",
        "cache (blocks)",
        "requests",
        "misses",
        "miss ratio",
        "time (s)",
        "Mreq/s",
    ];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.trace.clone(),
                r.policy.clone(),
                r.cache_size_objects.to_string(),
                r.requests.to_string(),
                r.misses.to_string(),
                format!("{:.4}", r.miss_ratio),
                format!("{:.3}", r.elapsed_s),
                format!("{:.1}", r.requests_per_s / 1e6),
            ]
        })
        .collect();
    crate::table::print(&header, &cells, 2);
}

#[cfg(test)]
mod count_tests {
    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(super::count(1u64, "node"), "1 node");
        assert_eq!(super::count(0u64, "node"), "0 nodes");
        assert_eq!(super::count(4u64, "file"), "4 files");
    }
}
