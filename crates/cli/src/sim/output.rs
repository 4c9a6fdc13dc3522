//! The simulator's runs as an aligned table.

use coopcache_console::output::human_bytes;
use coopcache_console::table;
use coopcache_sim::local::{IntervalRow, SimRow};

/// The cache as a table shows it: blocks, or bytes with a binary unit.
fn cache_cell(row: &SimRow, with_unit: bool) -> String {
    match (row.cache_size_objects, row.cache_size_bytes) {
        (Some(n), _) if with_unit => format!("{n} blocks"),
        (Some(n), _) => n.to_string(),
        (None, Some(b)) => human_bytes(b),
        (None, None) => String::new(),
    }
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
    table::print(&header, &cells, 2);
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
    table::print(&header, &cells, 2);
}
