//! What `coopcache bench disk` prints and plots.

use crate::common::plot_to;
use crate::disk::{Levels, Outcome, Run};
use anyhow::{Result, bail};
use coopcache_console::args::ReportArgs;
use coopcache_console::plot::{Segment, stacked_bars};
use coopcache_console::table;
use std::path::Path;

/// Prints the outcome (JSON lines with `--json`), draws it, and fails if
/// any read returned wrong bytes.
pub(crate) fn report(args: &ReportArgs, out: &Outcome) -> Result<()> {
    if args.json {
        coopcache_console::output::print_json(&out.runs)?;
        coopcache_console::output::print_json(&out.latency)?;
        coopcache_console::output::print_json(&out.index)?;
    } else {
        print_tables(out);
    }
    plot_to(args.plot.as_deref(), |path| plot(path, out))?;
    warn_index(out);
    let wrong: u64 = (out.runs.iter().map(|r| r.wrong_bytes))
        .chain(out.latency.iter().map(|l| l.wrong_bytes))
        .sum();
    if wrong > 0 {
        bail!("{wrong} wrong bytes delivered");
    }
    Ok(())
}

fn label(r: &Run) -> String {
    let disk = if r.disk { "disk" } else { "no disk" };
    match r.kind {
        "restart" => format!("restarted, {disk}"),
        _ => disk.to_string(),
    }
}

fn print_tables(out: &Outcome) {
    let Some(first) = out.runs.first() else {
        return;
    };
    let mib = |b: u64| format!("{:.1}", b as f64 / 1048576.0);
    println!(
        "{}, {}: {} MiB working set, {} MiB of memory and {} MiB of disk tier in all; reads drawn {}, one at a time\n",
        first.algorithm,
        coopcache_console::output::count(u64::from(first.nodes), "node"),
        mib(first.working_set_bytes),
        mib(first.memory_bytes),
        mib(out.runs.iter().map(|r| r.disk_bytes).max().unwrap_or(0)),
        out.draw,
    );
    let header = [
        "run",
        "reads",
        "origin reads",
        "origin MiB",
        "local memory",
        "peer memory or disk",
        "of which peer disk",
        "local disk",
        "origin",
        "median ms",
        "p99 ms",
        "simulated origin reads",
        "live vs simulated",
        "wrong bytes",
    ];
    let rows: Vec<Vec<String>> = (out.runs.iter())
        .map(|r| {
            let l = &r.levels;
            vec![
                label(r),
                r.reads.to_string(),
                r.origin_reads.to_string(),
                mib(r.origin_bytes),
                l.local_memory.to_string(),
                l.peer_memory.to_string(),
                r.peer_disk.to_string(),
                l.local_disk.to_string(),
                l.origin.to_string(),
                format!("{:.2}", r.median_ms),
                format!("{:.2}", r.p99_ms),
                r.simulated.map_or("-".into(), |s| s.origin.to_string()),
                r.origin_reads_vs_simulated_pct
                    .map_or("-".into(), |p| format!("{p:+.1}%")),
                r.wrong_bytes.to_string(),
            ]
        })
        .collect();
    table::print(&header, &rows, 1);
    for r in out.runs.iter().filter(|r| r.met.is_some()) {
        println!(
            "\nwith the disk: live origin reads {:+.1}% from the simulated protocol's; target within {}%: {}",
            r.origin_reads_vs_simulated_pct.unwrap_or(0.0),
            r.target_pct.unwrap_or(0.0),
            if r.met == Some(true) { "met" } else { "missed" }
        );
    }
    for r in out.runs.iter().filter(|r| r.kind == "working_set") {
        if let Some(one) = r.one_cache_origin_reads {
            println!(
                "{}: {} origin reads against {one} for one LRU cache the size of the cluster's memory{} ({:+.1}%)",
                label(r),
                r.origin_reads,
                if r.disk { " and disks" } else { "" },
                100.0 * (r.origin_reads as f64 / one.max(1) as f64 - 1.0)
            );
        }
    }
    let restarts: Vec<&Run> = out.runs.iter().filter(|r| r.kind == "restart").collect();
    if let [without, with] = restarts[..] {
        println!(
            "restart: {} MiB from the origin to warm up again with the disk, {} MiB without",
            mib(with.origin_bytes),
            mib(without.origin_bytes)
        );
    }
    if !out.latency.is_empty() {
        println!(
            "\nsingle-block reads on node 0, each once, the cluster quiet: local disk hits on node 0 alone started again on its disk, peer memory hits on two nodes without a disk (N-Chance). The store is not opened with O_DIRECT: a 'warm' disk hit is a page-cache read.\n"
        );
        let header = [
            "source",
            "page cache",
            "samples",
            "median us",
            "p99 us",
            "other level",
        ];
        let rows: Vec<Vec<String>> = (out.latency.iter())
            .map(|l| {
                vec![
                    l.source.to_string(),
                    l.page_cache.to_string(),
                    l.samples.to_string(),
                    format!("{:.0}", l.median_us),
                    format!("{:.0}", l.p99_us),
                    l.other_level.to_string(),
                ]
            })
            .collect();
        table::print(&header, &rows, 2);
        if !out.latency.iter().any(|l| l.page_cache == "dropped") {
            println!("(page cache not dropped: not root, or --keep-page-cache)");
        }
    }
    if !out.index.is_empty() {
        println!("\ndisk index memory per slot (the budget charges DISK_ENTRY_BYTES)\n");
        let per = |x: Option<f64>| x.map_or("-".into(), |b| format!("{b:.1}"));
        let header = [
            "slots",
            "heap, empty",
            "heap, full",
            "resident, full",
            "charged",
            "within",
        ];
        let rows: Vec<Vec<String>> = (out.index.iter())
            .map(|i| {
                vec![
                    i.slots.to_string(),
                    per(i.heap_bytes_per_slot_empty),
                    per(i.heap_bytes_per_block),
                    per(i.resident_bytes_per_block),
                    i.entry_bytes.to_string(),
                    if i.within_entry_bytes { "yes" } else { "NO" }.to_string(),
                ]
            })
            .collect();
        table::print(&header, &rows, 0);
    }
}

/// Says on stderr, whatever the output format, when the index costs more
/// than the budget charges for it.
fn warn_index(out: &Outcome) {
    for i in out.index.iter().filter(|i| !i.within_entry_bytes) {
        let measured = (i.heap_bytes_per_block.into_iter())
            .chain(i.resident_bytes_per_block)
            .fold(0.0, f64::max);
        eprintln!(
            "WARNING: the disk index of {} slots takes {measured:.0} bytes per block, more than the {} bytes (DISK_ENTRY_BYTES) the memory budget charges: the budget undercounts it",
            i.slots, i.entry_bytes
        );
    }
}

/// Where each run's reads were served, stacked, with the simulated
/// protocol's prediction beside each working-set run.
fn plot(path: &Path, out: &Outcome) -> Result<()> {
    let mut bars = Vec::new();
    let mut levels: Vec<Levels> = Vec::new();
    for r in &out.runs {
        bars.push(label(r));
        levels.push(r.levels);
        if let Some(s) = r.simulated {
            bars.push(format!("{} (simulated)", label(r)));
            levels.push(s);
        }
    }
    let segment = |name, f: fn(&Levels) -> u64| Segment {
        name,
        values: levels.iter().map(|l| f(l) as f64).collect(),
    };
    stacked_bars(
        path,
        "Reads over a working set 4x the cluster's memory: where each was served",
        "reads",
        &bars,
        &[
            segment("local memory", |l| l.local_memory),
            segment("peer memory", |l| l.peer_memory),
            segment("local disk", |l| l.local_disk),
            segment("origin", |l| l.origin),
        ],
    )
}
