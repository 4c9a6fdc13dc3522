//! `coopcache sim --consistency nfs,c2cfs,c2cfs-exclusive`: a trace with
//! writes through close-to-open consistency, NFS's beside C2Cfs's: where
//! reads are served and what the origin and the file managers are asked.

use crate::sim::replay::SimArgs;
use anyhow::{Context, Result, bail};
use coopcache_console::table;
use coopcache_sim::c2cfs::{ConsistencySim, ConsistencyStats, Scheme, simulate};
use serde::Serialize;

/// One scheme's row, as `--json` prints it.
#[derive(Serialize)]
struct Row<'a> {
    trace: &'a str,
    consistency: &'static str,
    nodes: u32,
    node_cache_bytes: u64,
    #[serde(flatten)]
    stats: ConsistencyStats,
    origin_ops: u64,
}

/// Runs the comparison and prints it.
pub fn run(sim: &SimArgs) -> Result<()> {
    let args = &sim.coop;
    let schemes = args.consistency.clone().unwrap_or_default();
    if schemes.is_empty() {
        bail!("--consistency needs at least one of nfs, c2cfs, c2cfs-exclusive");
    }
    let input = args.input(sim)?;
    let config = args.config(sim, &input)?;
    let mut sims = schemes
        .iter()
        .map(|&s| {
            ConsistencySim::new(
                s,
                config.nodes,
                config.node_capacity as u64 * input.block_size,
                input.block_size,
                input.warmup,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let progress = input.progress;
    let done = simulate(input.requests, &mut sims, |n| {
        if let Some(p) = &progress {
            p.update(n);
        }
    })
    .with_context(|| format!("replaying {} through {}", input.label, names(&schemes)));
    if let Some(p) = &progress {
        p.finish();
    }
    done?;
    let rows: Vec<Row> = sims
        .iter()
        .map(|s| Row {
            trace: &input.label,
            consistency: s.scheme().name(),
            nodes: config.nodes,
            node_cache_bytes: config.node_capacity as u64 * input.block_size,
            stats: *s.stats(),
            origin_ops: s.stats().origin_ops(),
        })
        .collect();
    if sim.json {
        return coopcache_console::output::print_json(rows);
    }
    print_table(&input.label, &config, input.block_size, &rows);
    Ok(())
}

fn names(schemes: &[Scheme]) -> String {
    let names: Vec<&str> = schemes.iter().map(|s| s.name()).collect();
    names.join(", ")
}

fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / f64::from(1 << 20))
}

fn print_table(
    label: &str,
    config: &coopcache_core::coop::ClusterConfig,
    block_size: u64,
    rows: &[Row],
) {
    let Some(first) = rows.first() else {
        return;
    };
    println!(
        "{label}: {} x {} (LRU); {} reads and {} writes measured, each an open and a close\n",
        coopcache_console::output::count(config.nodes, "node"),
        coopcache_console::output::human_bytes(config.node_capacity as u64 * block_size),
        first.stats.reads,
        first.stats.writes,
    );
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let s = &r.stats;
            vec![
                r.consistency.to_string(),
                s.local.to_string(),
                s.from_peers.to_string(),
                s.origin_reads.to_string(),
                mib(s.peer_bytes),
                mib(s.origin_read_bytes),
                s.origin_writes.to_string(),
                mib(s.origin_write_bytes),
                s.origin_getattrs.to_string(),
                r.origin_ops.to_string(),
                s.manager_messages.to_string(),
                s.stale_reads.to_string(),
            ]
        })
        .collect();
    table::print(
        &[
            "consistency",
            "local",
            "from peers",
            "origin reads",
            "peer MiB",
            "origin read MiB",
            "origin writes",
            "origin write MiB",
            "origin getattrs",
            "origin ops",
            "manager msgs",
            "stale",
        ],
        &body,
        1,
    );
}
