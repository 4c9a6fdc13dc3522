//! What `coopcache bench scale` prints and plots: two tables (a node's
//! idle costs, a read's costs) and one chart of the per-node costs
//! relative to the smallest cluster, beside the linear and logarithmic
//! references the issue judges them by.

use crate::common::plot_to;
use crate::scale::ScaleRow;
use anyhow::{Result, bail};
use coopcache_console::args::ReportArgs;
use coopcache_console::plot::{Series, Style, xy};
use coopcache_console::table;
use std::path::Path;

/// Prints the rows (JSON lines with `--json`), draws them, and fails if
/// any read returned wrong bytes or failed.
pub(crate) fn report(args: &ReportArgs, rows: &[ScaleRow]) -> Result<()> {
    if args.json {
        coopcache_console::output::print_json(rows)?;
    } else {
        print_tables(rows);
    }
    plot_to(args.plot.as_deref(), |path| plot(path, rows))?;
    let wrong: u64 = rows.iter().map(|r| r.wrong_bytes).sum();
    let failed: u64 = rows.iter().map(|r| r.failed_reads).sum();
    if wrong > 0 || failed > 0 {
        bail!("{wrong} wrong bytes delivered, {failed} reads failed");
    }
    Ok(())
}

fn print_tables(rows: &[ScaleRow]) {
    let Some(first) = rows.first() else {
        return;
    };
    println!(
        "real `coopcache node` processes, --memory {:.0} MiB each. Boot: all but the last started at once (after the seed), seconds until all serve, then until all see all; join: the last one started, seconds until all see it. Per node: the median over nodes (max in parentheses), idle over the idle window\n",
        first.memory_mib
    );
    let header = [
        "nodes",
        "boot: serving s",
        "all see all s",
        "join s",
        "RSS MiB",
        "sockets",
        "link conns",
        "idle CPU %",
        "cluster CPU %",
        "idle segs/s",
        "idle KiB/s",
    ];
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.nodes.to_string(),
                format!("{:.2}", r.started_seconds),
                format!("{:.2}", r.boot_seconds),
                format!("{:.2}", r.join_seconds),
                format!("{:.1} ({:.1})", r.rss_mib, r.rss_max_mib),
                format!("{:.0} ({})", r.sockets, r.sockets_max),
                format!("{:.0}", r.link_connections),
                format!("{:.2} ({:.2})", r.idle_cpu_pct, r.idle_cpu_max_pct),
                format!("{:.0}", r.cluster_idle_cpu_pct),
                format!("{:.0}", r.idle_segments_per_s),
                format!("{:.1}", r.idle_kib_per_s),
            ]
        })
        .collect();
    table::print(&header, &body, 0);
    println!(
        "\nreads: 64 KiB blocks one at a time, each through a node other than the block's first reader; link segments and KiB per read less the idle rate (subtracted: the share of the window's segments it was)\n"
    );
    let header = [
        "nodes",
        "reads",
        "local",
        "peer",
        "origin",
        "timeouts",
        "RSS after MiB",
        "median ms",
        "p99 ms",
        "segs/read",
        "KiB/read",
        "subtracted %",
        "wrong",
        "failed",
    ];
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.nodes.to_string(),
                r.reads.to_string(),
                r.served_local.to_string(),
                r.served_peer.to_string(),
                r.served_origin.to_string(),
                r.timeouts.to_string(),
                format!("{:.1} ({:.1})", r.rss_after_mib, r.rss_after_max_mib),
                format!("{:.2}", r.median_ms),
                format!("{:.2}", r.p99_ms),
                format!("{:.1}", r.segments_per_read),
                format!("{:.1}", r.kib_per_read),
                format!("{:.0}", r.background_pct),
                r.wrong_bytes.to_string(),
                r.failed_reads.to_string(),
            ]
        })
        .collect();
    table::print(&header, &body, 0);
}

/// One of a row's figures.
type Figure = fn(&ScaleRow) -> f64;

/// Each per-node cost over its value at the smallest size, against N,
/// with `N/N0` (linear) and `log2 N / log2 N0` (logarithmic) drawn for
/// reference.
fn plot(path: &Path, rows: &[ScaleRow]) -> Result<()> {
    let Some(first) = rows.first() else {
        bail!("no cluster size measured");
    };
    // Six, with the two references eight: the palette's colours. The
    // times (membership, latency) are the table's: at 16 nodes they are
    // a poll's or a millisecond's, and a ratio to that says nothing.
    let figures: [(&str, Figure); 6] = [
        ("resident memory", |r| r.rss_mib),
        ("socket descriptors", |r| r.sockets),
        ("idle CPU", |r| r.idle_cpu_pct),
        ("idle link segments/s", |r| r.idle_segments_per_s),
        ("idle link bytes/s", |r| r.idle_kib_per_s),
        ("link bytes per read", |r| r.kib_per_read),
    ];
    let n0 = first.nodes as f64;
    let mut series: Vec<Series<'_>> = figures
        .iter()
        .filter(|(_, f)| f(first) > 0.0)
        .map(|(name, f)| Series {
            name,
            points: rows
                .iter()
                .map(|r| (r.nodes as f64, f(r) / f(first)))
                .collect(),
        })
        .collect();
    series.push(Series {
        name: "linear: N / N0",
        points: rows
            .iter()
            .map(|r| (r.nodes as f64, r.nodes as f64 / n0))
            .collect(),
    });
    if n0 > 1.0 {
        series.push(Series {
            name: "logarithmic: log N / log N0",
            points: rows
                .iter()
                .map(|r| (r.nodes as f64, (r.nodes as f64).ln() / n0.ln()))
                .collect(),
        });
    }
    xy(
        path,
        &format!(
            "coopcache per-node costs as the cluster grows (relative to {} nodes)",
            first.nodes
        ),
        ("nodes", &format!("cost / cost at {} nodes", first.nodes)),
        &series,
        false,
        Style::Lines,
    )
}
