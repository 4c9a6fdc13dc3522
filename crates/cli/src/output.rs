//! Reporting replay results: an aligned table, JSON lines or CSV.

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
use coopcache_sim::local::{IntervalRow, SimRow};
use serde::Serialize;
use std::io::Write;

/// The cache as a table shows it: blocks, or bytes with a binary unit.
fn cache_cell(row: &SimRow, with_unit: bool) -> String {
    match (row.cache_size_objects, row.cache_size_bytes) {
        (Some(n), _) if with_unit => format!("{n} blocks"),
        (Some(n), _) => n.to_string(),
        (None, Some(b)) => human_bytes(b),
        (None, None) => String::new(),
    }
}

/// `b` bytes with the largest binary unit that divides it: `100MiB`.
/// Bytes with a binary unit, to 1 decimal (`1.5 GiB`).
pub(crate) fn human_size(b: u64) -> String {
    let units = [
        (50, "PiB"),
        (40, "TiB"),
        (30, "GiB"),
        (20, "MiB"),
        (10, "KiB"),
    ];
    for (shift, unit) in units {
        if b >= 1 << shift {
            return format!("{:.1} {unit}", b as f64 / (1u64 << shift) as f64);
        }
    }
    format!("{b} B")
}

pub(crate) fn human_bytes(b: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if b >= 1 << shift && b.is_multiple_of(1 << shift) {
            return format!("{}{unit}", b >> shift);
        }
    }
    format!("{b}B")
}

/// How a command prints its rows (`--output`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// An aligned table, for people.
    #[default]
    Table,
    /// One JSON object per line.
    Json,
    /// A header row, then one comma-separated row per line (RFC 4180).
    Csv,
}

/// Prints `rows` as `output` says; a table through `table`.
pub fn print_rows<T: Serialize>(
    output: Output,
    rows: &[T],
    table: impl FnOnce(&[T]),
) -> Result<()> {
    match output {
        Output::Table => {
            table(rows);
            Ok(())
        }
        Output::Json => print_json(rows),
        Output::Csv => print_csv(rows),
    }
}

/// A header row named after the fields, then one row per record, on
/// stdout; a field that is `None` is empty.
pub fn print_csv<T: Serialize>(rows: impl IntoIterator<Item = T>) -> Result<()> {
    let mut out = csv::Writer::from_writer(std::io::stdout().lock());
    for row in rows {
        out.serialize(row)?;
    }
    out.flush()?;
    Ok(())
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
pub fn print_table(rows: &[SimRow]) {
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
                cache_cell(r, !all_blocks),
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

/// An aligned table of each run's intervals: the miss ratios over time,
/// with each interval's end in trace time where intervals are of time.
pub fn print_interval_table(rows: &[IntervalRow]) {
    let timed = rows.iter().any(|r| r.end_time_s.is_some());
    let mut header = vec!["trace", "policy", "cache"];
    if timed {
        header.push("end time (s)");
    }
    header.extend([
        "requests read",
        "reads",
        "misses",
        "miss ratio",
        "byte miss ratio",
    ]);
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let cache = match (r.cache_size_objects, r.cache_size_bytes) {
                (Some(n), _) => format!("{n} blocks"),
                (None, Some(b)) => human_bytes(b),
                (None, None) => String::new(),
            };
            let mut row = vec![r.trace.clone(), r.policy.clone(), cache];
            if timed {
                row.push(r.end_time_s.map_or_else(String::new, |t| format!("{t}")));
            }
            row.extend([
                r.interval_end.to_string(),
                r.requests.to_string(),
                r.misses.to_string(),
                format!("{:.4}", r.miss_ratio),
                format!("{:.4}", r.byte_miss_ratio),
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
