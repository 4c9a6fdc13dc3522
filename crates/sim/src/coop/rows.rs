//! One row of figures per algorithm of a cooperative study: a line of
//! `coopcache sim --algorithms ... --json`, a row of the Python package's
//! `simulate_cluster`.

use super::CoopResult;
use super::report::{Comparison, client_speedups, compare, find_base};
use coopcache_core::coop::{AlgorithmKind, Level};
use serde::Serialize;

/// One algorithm's figures (times in microseconds, fractions of reads).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CoopRow {
    /// The workload's or trace's name.
    pub workload: String,
    /// The algorithm.
    pub algorithm: &'static str,
    /// The nodes' local replacement policy.
    pub policy: String,
    /// Nodes.
    pub nodes: u32,
    /// Cache per node, in blocks.
    pub node_cache_blocks: usize,
    /// The manager's cache, in blocks.
    pub manager_cache_blocks: usize,
    /// The cost profile.
    pub profile: &'static str,
    /// Reads measured (after the warm-up).
    pub reads: u64,
    /// Writes measured.
    pub writes: u64,
    /// Mean read time.
    pub avg_read_us: f64,
    /// Reads served by the reader's own cache.
    pub local_hit: f64,
    /// Reads served by the manager's memory.
    pub server_mem_hit: f64,
    /// Reads served by another node's cache.
    pub remote_hit: f64,
    /// Reads served by the origin.
    pub origin_rate: f64,
    /// Reads missing the reader's own cache.
    pub local_miss_rate: f64,
    /// Mean network hops per read.
    pub avg_hops: f64,
    /// Read time spent at each level, per read.
    pub time_local_us: f64,
    /// See `time_local_us`.
    pub time_server_mem_us: f64,
    /// See `time_local_us`.
    pub time_remote_us: f64,
    /// See `time_local_us`.
    pub time_origin_us: f64,
    /// The manager's load (1 per message, +2 per block sent, 2 per origin
    /// read).
    pub server_load: u64,
    /// That load over Base's.
    pub server_load_vs_base: f64,
    /// The load of reads served by the origin.
    pub load_origin: u64,
    /// The load of reads served by another node.
    pub load_remote: u64,
    /// The load of reads served by the manager's memory.
    pub load_server_mem: u64,
    /// The rest of the load.
    pub load_other: u64,
    /// Base's mean read time over this algorithm's.
    pub speedup_vs_base: f64,
    /// The lowest per-client speedup.
    pub worst_client_speedup: Option<f64>,
    /// Clients slowed by more than 5%.
    pub clients_slowed_5pct: usize,
    /// Clients with enough reads to compare.
    pub clients_compared: usize,
    /// Directory bytes per tracked block at the end.
    pub directory_bytes_per_block: f64,
    /// Requests simulated (warm-up included).
    pub requests: u64,
    /// Simulation time.
    pub elapsed_s: f64,
    /// Requests per second of it.
    pub requests_per_s: f64,
    /// Per client: reads measured and speedup against Base.
    pub clients: Vec<ClientRow>,
}

/// One client's figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClientRow {
    /// Reads measured.
    pub reads: u64,
    /// Mean read time.
    pub avg_read_us: f64,
    /// Base's mean read time for this client over this algorithm's.
    pub speedup_vs_base: Option<f64>,
}

impl CoopRow {
    /// The row of `r` on `label`, compared (`c`) with `base`.
    pub fn new(label: &str, r: &CoopResult, c: &Comparison, base: &CoopResult) -> Self {
        let s = &r.stats;
        let per_read = |t: f64| {
            if s.reads == 0 {
                0.0
            } else {
                t / s.reads as f64
            }
        };
        CoopRow {
            workload: label.to_string(),
            algorithm: r.spec.algorithm.name(),
            policy: r.spec.config.policy.to_string(),
            nodes: r.spec.config.nodes,
            node_cache_blocks: r.spec.config.node_capacity,
            manager_cache_blocks: r.spec.config.manager_capacity,
            profile: r.spec.profile.name,
            reads: s.reads,
            writes: s.writes,
            avg_read_us: s.avg_read_us(),
            local_hit: s.fraction(Level::Local),
            server_mem_hit: s.fraction(Level::ManagerMemory),
            remote_hit: s.fraction(Level::RemoteNode),
            origin_rate: s.fraction(Level::Origin),
            local_miss_rate: s.local_miss_rate(),
            avg_hops: per_read(s.hops as f64),
            time_local_us: per_read(s.time_by_level_us[Level::Local.index()]),
            time_server_mem_us: per_read(s.time_by_level_us[Level::ManagerMemory.index()]),
            time_remote_us: per_read(s.time_by_level_us[Level::RemoteNode.index()]),
            time_origin_us: per_read(s.time_by_level_us[Level::Origin.index()]),
            server_load: s.load.total(),
            server_load_vs_base: c.load_vs_base,
            load_origin: s.load.origin,
            load_remote: s.load.remote,
            load_server_mem: s.load.manager_memory,
            load_other: s.load.other,
            speedup_vs_base: c.speedup,
            worst_client_speedup: c.worst_client_speedup,
            clients_slowed_5pct: c.clients_slowed_5pct,
            clients_compared: c.clients_compared,
            directory_bytes_per_block: r.directory_bytes_per_block,
            requests: s.requests,
            elapsed_s: r.elapsed.as_secs_f64(),
            requests_per_s: r.requests_per_s(),
            clients: client_speedups(r, base)
                .into_iter()
                .zip(&s.clients)
                .map(|((reads, speedup_vs_base), stats)| ClientRow {
                    reads,
                    avg_read_us: stats.avg_us(),
                    speedup_vs_base,
                })
                .collect(),
        }
    }
}

/// The results of `wanted`, in its order, each with its comparison with
/// Base; `None` if Base is not among `results`.
pub fn shown<'a>(
    wanted: &[AlgorithmKind],
    results: &'a [CoopResult],
) -> Option<(Vec<(&'a CoopResult, Comparison)>, &'a CoopResult)> {
    let base = find_base(results)?;
    let shown = wanted
        .iter()
        .filter_map(|&a| results.iter().find(|r| r.spec.algorithm == a))
        .map(|r| (r, compare(r, base)))
        .collect();
    Some((shown, base))
}

/// The rows of `wanted` among `results` on `label`; `None` without Base.
pub fn rows(label: &str, wanted: &[AlgorithmKind], results: &[CoopResult]) -> Option<Vec<CoopRow>> {
    let (shown, base) = shown(wanted, results)?;
    Some(
        shown
            .iter()
            .map(|(r, c)| CoopRow::new(label, r, c, base))
            .collect(),
    )
}
