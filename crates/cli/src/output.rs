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
use coopcache_core::Capacity;
use coopcache_sim::replay::RunResult;
use serde::Serialize;
use std::io::Write;

/// How the trace's requests are sized, for the figures in bytes.
#[derive(Clone, Copy, Debug)]
pub enum Sizing {
    /// Every request is one block of this many bytes (block traces and
    /// traces without sizes).
    Blocks(u64),
    /// Requests carry their objects' sizes.
    Objects,
}

/// One run's figures, as both outputs show them.
#[derive(Serialize)]
pub struct Row {
    trace: String,
    policy: String,
    /// The cache in objects, for a block cache.
    cache_size_objects: Option<usize>,
    /// The block size, where every request is one block.
    block_size: Option<u64>,
    /// The cache in bytes: a byte cache's capacity, or blocks times the
    /// block size; none for a count of objects of varied sizes.
    cache_size_bytes: Option<u64>,
    requests: u64,
    misses: u64,
    miss_ratio: f64,
    bytes_requested: u64,
    bytes_missed: u64,
    byte_miss_ratio: f64,
    writes: u64,
    deletes: u64,
    zero_size_skipped: u64,
    elapsed_s: f64,
    requests_per_s: f64,
}

impl Row {
    /// The row of `result` on trace `trace`, whose requests are sized as
    /// `sizing` says.
    pub fn new(trace: &str, sizing: Sizing, result: &RunResult) -> Self {
        let t = &result.tally;
        // Where every request is one block, each counts the block's bytes.
        let (bytes_requested, bytes_missed) = match sizing {
            Sizing::Blocks(block) => (t.requests * block, t.misses * block),
            Sizing::Objects => (t.bytes, t.byte_misses),
        };
        let (objects, block_size, bytes) = match (result.spec.capacity, sizing) {
            (Capacity::Bytes(b), _) => (None, None, Some(b)),
            (Capacity::Blocks(n), Sizing::Blocks(block)) => {
                (Some(n), Some(block), Some(n as u64 * block))
            }
            (Capacity::Blocks(n), Sizing::Objects) => (Some(n), None, None),
        };
        Row {
            trace: trace.to_string(),
            policy: result.spec.policy.to_string(),
            cache_size_objects: objects,
            block_size,
            cache_size_bytes: bytes,
            requests: t.requests,
            misses: t.misses,
            miss_ratio: result.miss_ratio(),
            bytes_requested,
            bytes_missed,
            byte_miss_ratio: if bytes_requested == 0 {
                0.0
            } else {
                bytes_missed as f64 / bytes_requested as f64
            },
            writes: t.writes,
            deletes: t.deletes,
            zero_size_skipped: t.skipped,
            elapsed_s: result.elapsed.as_secs_f64(),
            requests_per_s: result.requests_per_s(),
        }
    }

    /// The cache as a table shows it: blocks, or bytes with a binary unit.
    fn cache_cell(&self, with_unit: bool) -> String {
        match (self.cache_size_objects, self.cache_size_bytes) {
            (Some(n), _) if with_unit => format!("{n} blocks"),
            (Some(n), _) => n.to_string(),
            (None, Some(b)) => human_bytes(b),
            (None, None) => String::new(),
        }
    }
}

/// `b` bytes with the largest binary unit that divides it: `100MiB`.
fn human_bytes(b: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if b >= 1 << shift && b.is_multiple_of(1 << shift) {
            return format!("{}{unit}", b >> shift);
        }
    }
    format!("{b}B")
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

/// An aligned table of the runs: object and byte miss ratios, and writes
/// and deletes when the trace had any.
pub fn print_table(rows: &[Row]) {
    let all_blocks = rows.iter().all(|r| r.cache_size_objects.is_some());
    let ops = rows.iter().any(|r| r.writes + r.deletes > 0);
    let mut header = vec![
        "trace",
        "policy",
        if all_blocks {
            "cache (blocks)"
        } else {
            "cache"
        },
        "requests",
        "misses",
        "miss ratio",
        "byte miss ratio",
    ];
    if ops {
        header.extend(["writes", "deletes"]);
    }
    header.extend(["time (s)", "Mreq/s"]);
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut row = vec![
                r.trace.clone(),
                r.policy.clone(),
                r.cache_cell(!all_blocks),
                r.requests.to_string(),
                r.misses.to_string(),
                format!("{:.4}", r.miss_ratio),
                format!("{:.4}", r.byte_miss_ratio),
            ];
            if ops {
                row.extend([r.writes.to_string(), r.deletes.to_string()]);
            }
            row.extend([
                format!("{:.3}", r.elapsed_s),
                format!("{:.1}", r.requests_per_s / 1e6),
            ]);
            row
        })
        .collect();
    crate::table::print(&header, &cells, 2);
}

#[cfg(test)]
mod tests {
    #[test]
    fn bytes_print_with_the_largest_unit_that_divides_them() {
        assert_eq!(super::human_bytes(100 << 20), "100MiB");
        assert_eq!(super::human_bytes(1536), "1536B");
        assert_eq!(super::human_bytes(3 << 10), "3KiB");
    }
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
