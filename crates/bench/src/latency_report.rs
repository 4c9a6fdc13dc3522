//! What `coopcache bench latency` prints and plots.

use crate::latency::Report;
use anyhow::Result;
use std::path::Path;

/// The tables and the targets' verdicts.
pub(crate) fn print(r: &Report) {
    let c = &r.ceiling;
    println!(
        "loopback ceiling: 1-byte round trip p50 {:.1} us on one thread (p99 {:.1} us), with an 8 KiB answer {:.1} us, across a runtime's worker threads {:.1} us, between two threads each with its own runtime {:.1} us, the same over the cluster's TLS with an 8 KiB answer hashed {:.1} us; one TCP stream {:.2} GB/s",
        c.rtt_p50_us,
        c.rtt_p99_us,
        c.rtt_8k_p50_us,
        c.rtt_threads_p50_us,
        c.rtt_node_threads_p50_us,
        c.tls_rtt_8k_node_threads_p50_us,
        c.stream_gb_s
    );
    let layout = match r.runtime {
        crate::latency::Layout::PerNode => {
            "each node on a thread of its own, readers on the reader's, each baseline's clients on one thread"
        }
        crate::latency::Layout::Shared => "everything on one multi-threaded runtime",
    };
    println!("runtime: {layout}");
    println!(
        "coopcache local hit on the reader (no network): p50 {:.1} us\n",
        r.local_hit_p50_us
    );
    let header = [
        "system",
        "concurrency",
        "p50 us",
        "p99 us",
        "reads/s",
        "peer hits",
    ];
    let rows: Vec<Vec<String>> = r
        .rows
        .iter()
        .map(|row| {
            let s = &row.summary;
            vec![
                row.system.clone(),
                s.concurrency.to_string(),
                format!("{:.1}", s.p50_us),
                format!("{:.1}", s.p99_us),
                format!("{:.0}", s.per_s),
                row.peer_share
                    .map_or("-".into(), |p| format!("{:.1}%", 100.0 * p)),
            ]
        })
        .collect();
    coopcache_console::table::print(&header, &rows, 1);
    println!(
        "\nintegrity failures {}, peer timeouts {}, messages dropped on full peer queues {}",
        r.integrity_failures, r.timeouts, r.dropped_messages
    );
    if let Some(x) = r.targets.p50_over_rtt {
        let verdict = if x <= 2.0 { "met" } else { "missed" };
        let over = match r.runtime {
            crate::latency::Layout::PerNode => "the round trip between two node threads",
            crate::latency::Layout::Shared => "the one-thread round trip",
        };
        println!("target p50 <= 2x {over}: {x:.2}x ({verdict})");
    }
    if let Some(x) = r.targets.p50_over_one_thread_rtt {
        println!("p50 over the one-thread round trip: {x:.2}x");
    }
    if let Some(x) = r.targets.reads_over_memcached {
        let verdict = if x >= 1.25 { "met" } else { "missed" };
        println!("target reads/s >= 1.25x memcached's: {x:.2}x ({verdict})");
    }
}

/// Latency bars (p50 and p99 per system and concurrency) and throughput
/// bars (per concurrency, a bar per system).
pub(crate) fn plot(dir: &Path, r: &Report) -> Result<()> {
    use coopcache_console::plot::{Segment, grouped_bars};
    std::fs::create_dir_all(dir)?;
    let groups: Vec<String> = r
        .rows
        .iter()
        .map(|row| format!("{} x{}", row.system, row.summary.concurrency))
        .collect();
    grouped_bars(
        &dir.join("latency-percentiles.png"),
        "8 KiB reads on loopback: latency",
        "microseconds",
        &groups,
        &[
            Segment {
                name: "p50",
                values: r.rows.iter().map(|row| row.summary.p50_us).collect(),
            },
            Segment {
                name: "p99",
                values: r.rows.iter().map(|row| row.summary.p99_us).collect(),
            },
        ],
    )?;
    let mut systems: Vec<&str> = Vec::new();
    let mut levels: Vec<usize> = Vec::new();
    for row in &r.rows {
        if !systems.contains(&row.system.as_str()) {
            systems.push(&row.system);
        }
        if !levels.contains(&row.summary.concurrency) {
            levels.push(row.summary.concurrency);
        }
    }
    let groups: Vec<String> = levels.iter().map(|c| format!("{c} concurrent")).collect();
    let series: Vec<Segment> = systems
        .iter()
        .map(|&s| Segment {
            name: s,
            values: levels
                .iter()
                .map(|&c| {
                    r.rows
                        .iter()
                        .find(|row| row.system == s && row.summary.concurrency == c)
                        .map_or(0.0, |row| row.summary.per_s)
                })
                .collect(),
        })
        .collect();
    grouped_bars(
        &dir.join("latency-throughput.png"),
        "8 KiB reads on loopback: throughput",
        "reads or GETs per second",
        &groups,
        &series,
    )
}
