//! `coopcache sim --class-policy FILE,...`: N-Chance under each size-class
//! policy file, compared by cluster throughput (the request-distribution
//! paper's Figures 2-6).

use crate::sim::coop::simulate_input;
use crate::sim::replay::SimArgs;
use anyhow::{Context, Result, bail};
use coopcache_console::table;
use coopcache_core::coop::{AlgorithmKind, ClassPolicies, ClusterConfig, Level, class_key};
use coopcache_sim::class_file::read_class_policies;
use coopcache_sim::coop::{CoopResult, CoopSpec};
use coopcache_sim::trace::Requests;
use serde::Serialize;
use std::path::Path;

/// A policy file's label: its file name without `.toml`.
fn label(path: &Path) -> String {
    path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    )
}

/// The class names for which `flag` is on, as `{a,b}`, or `-`.
fn on(classes: &ClassPolicies, flag: fn(&coopcache_core::coop::ClassPolicy) -> bool) -> String {
    let names: Vec<&str> = classes
        .classes()
        .iter()
        .filter(|c| flag(&c.policy))
        .map(|c| c.name.as_str())
        .collect();
    if names.is_empty() {
        "-".into()
    } else {
        format!("{{{}}}", names.join(","))
    }
}

/// The class bounds, to check that a trace is classed one way for all files.
fn bounds(c: &ClassPolicies) -> Vec<Option<u64>> {
    c.classes().iter().map(|k| k.below).collect()
}

/// A trace's requests keyed by the class of their `size`.
fn classed(requests: Requests, classes: ClassPolicies) -> Requests {
    Box::new(requests.map(move |r| {
        r.map(|mut r| {
            let class = classes.class_of_size(u64::from(r.size));
            // Ids too large for a class in their top bits keep class 0's.
            r.id = class_key(class, r.id).unwrap_or(r.id);
            r
        })
    }))
}

/// Runs the comparison.
pub fn run(sim: &SimArgs) -> Result<()> {
    let args = &sim.coop;
    if let Some(algorithms) = &args.algorithms
        && algorithms.as_slice() != [AlgorithmKind::NChance]
    {
        bail!(
            "size-class policies are applied by N-Chance: drop --algorithms or give --algorithms nchance"
        );
    }
    if args.cache_config.is_some() {
        bail!(
            "--class-policy and --cache-config cannot be combined: both keep their tag in a block's id"
        );
    }
    let input = args.input(sim)?;
    let config = args.config(sim, &input)?;
    let mut policies = Vec::new();
    for path in &args.class_policy {
        policies.push((label(path), read_class_policies(path)?));
    }
    let requests = if input.web {
        input.requests
    } else {
        let first = &policies[0].1;
        if let Some((name, _)) = policies.iter().find(|(_, p)| bounds(p) != bounds(first)) {
            bail!(
                "with a trace, every policy file must define the same class bounds (a request's class is that of its size): {name} differs from {}",
                policies[0].0
            );
        }
        classed(input.requests, first.clone())
    };
    let specs: Vec<CoopSpec> = policies
        .iter()
        .map(|(_, classes)| CoopSpec {
            algorithm: AlgorithmKind::NChance,
            config: ClusterConfig {
                classes: classes.clone(),
                ..config.clone()
            },
            profile: args.profile(),
            warmup: input.warmup,
            hardware: Some((args.hardware(), input.block_size)),
            attribute: None,
        })
        .collect();
    let results = simulate_input(requests, &specs, input.progress, &input.label)?;
    let rows: Vec<Row> = policies
        .iter()
        .zip(&results)
        .map(|((name, classes), r)| Row::new(&input.label, name, classes, r))
        .collect();
    if sim.json {
        coopcache_console::output::print_json(&rows)?;
    } else {
        println!(
            "{}: {} x {} blocks of {} B, storage node {} blocks, N-Chance n = {}, hardware {}; {} reads measured after {} warm-up requests\n",
            input.label,
            coopcache_console::output::count(config.nodes as u64, "node"),
            config.node_capacity,
            input.block_size,
            config.manager_capacity,
            config.chances,
            args.hardware(),
            results.first().map_or(0, |r| r.stats.reads),
            input.warmup
        );
        print_table(&rows);
    }
    if let Some(dir) = &args.plot {
        plot(dir, &input.label, &rows)?;
    }
    Ok(())
}

/// One policy's figures.
#[derive(Serialize)]
struct Row {
    workload: String,
    policy: String,
    cooperative: String,
    forward_evictions: String,
    discard_cache: String,
    exclusive: String,
    replica: String,
    throughput_mb_s: f64,
    bottleneck: String,
    bytes_served: u64,
    reads: u64,
    local_hit: f64,
    storage_memory_hit: f64,
    peer_hit: f64,
    disk_rate: f64,
    storage_disk_reads: u64,
    storage_disk_seeks: u64,
    storage_disk_busy_s: f64,
    replica_disk_reads: u64,
    /// Share of all disk time per size class.
    disk_time_by_class: Vec<f64>,
    avg_read_us: f64,
}

impl Row {
    fn new(workload: &str, policy: &str, c: &ClassPolicies, r: &CoopResult) -> Row {
        let s = &r.stats;
        let busy = s.busy.clone().unwrap_or_default();
        Row {
            workload: workload.into(),
            policy: policy.into(),
            cooperative: on(c, |p| p.cooperative),
            forward_evictions: on(c, |p| p.forward_evictions),
            discard_cache: on(c, |p| p.discard_cache),
            exclusive: on(c, |p| p.exclusive),
            replica: on(c, |p| p.replica),
            throughput_mb_s: busy.throughput_mb_s(),
            bottleneck: busy.bottleneck().0,
            bytes_served: busy.bytes_served,
            reads: s.reads,
            local_hit: s.fraction(Level::Local),
            storage_memory_hit: s.fraction(Level::ManagerMemory),
            peer_hit: s.fraction(Level::RemoteNode),
            disk_rate: s.fraction(Level::Origin),
            storage_disk_reads: busy.disk_reads.first().copied().unwrap_or(0),
            storage_disk_seeks: busy.seeks.first().copied().unwrap_or(0),
            storage_disk_busy_s: busy.disk_us.first().copied().unwrap_or(0.0) / 1e6,
            replica_disk_reads: busy.disk_reads.iter().skip(1).sum(),
            disk_time_by_class: {
                let total: f64 = busy.class_disk_us.iter().sum();
                busy.class_disk_us[..c.classes().len()]
                    .iter()
                    .map(|t| if total > 0.0 { t / total } else { 0.0 })
                    .collect()
            },
            avg_read_us: s.avg_read_us(),
        }
    }
}

fn print_table(rows: &[Row]) {
    let pct = |x: f64| format!("{:.1}%", 100.0 * x);
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.policy.clone(),
                format!("{:.3}", r.throughput_mb_s),
                r.bottleneck.clone(),
                pct(r.local_hit),
                pct(r.storage_memory_hit),
                pct(r.peer_hit),
                pct(r.disk_rate),
                r.storage_disk_reads.to_string(),
                r.storage_disk_seeks.to_string(),
                r.replica_disk_reads.to_string(),
                r.disk_time_by_class
                    .iter()
                    .map(|x| format!("{:.0}", 100.0 * x))
                    .collect::<Vec<_>>()
                    .join("/"),
            ]
        })
        .collect();
    table::print(
        &[
            "policy",
            "MB/s",
            "bottleneck",
            "local",
            "storage mem",
            "peer",
            "disk",
            "storage disk reads",
            "seeks",
            "replica reads",
            "disk time % by class",
        ],
        &cells,
        1,
    );
    println!("\nPolicies (classes with each option on)");
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.policy.clone(),
                r.cooperative.clone(),
                r.forward_evictions.clone(),
                r.discard_cache.clone(),
                r.exclusive.clone(),
                r.replica.clone(),
            ]
        })
        .collect();
    table::print(
        &[
            "policy",
            "cooperative",
            "forward evictions",
            "discard cache",
            "exclusive",
            "replica",
        ],
        &cells,
        6,
    );
}

fn plot(dir: &Path, label: &str, rows: &[Row]) -> Result<()> {
    use coopcache_console::plot::{Segment, stacked_bars};
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let bars: Vec<String> = rows.iter().map(|r| r.policy.clone()).collect();
    let path = dir.join("class-throughput.png");
    stacked_bars(
        &path,
        &format!("Cluster throughput by size-class policy, {label}"),
        "MB/s",
        &bars,
        &[Segment {
            name: "throughput",
            values: rows.iter().map(|r| r.throughput_mb_s).collect(),
        }],
    )?;
    eprintln!("wrote {}", path.display());
    Ok(())
}
