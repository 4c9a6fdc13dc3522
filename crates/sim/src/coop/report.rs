//! The paper's comparisons against the Base case: speedup, server load,
//! and per-client fairness (Figures 4, 6 and 7).

use super::CoopResult;
use coopcache_core::coop::AlgorithmKind;

/// Clients with fewer measured reads than this are left out of the
/// fairness figures: a client that read a handful of blocks can swing
/// either way on one disk access (the paper makes the same caveat about
/// its inactive clients, section 4.1).
pub const MIN_CLIENT_READS: u64 = 100;

/// One algorithm's figures relative to Base.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Comparison {
    /// Base's average read time over this algorithm's.
    pub speedup: f64,
    /// This algorithm's manager load over Base's.
    pub load_vs_base: f64,
    /// The lowest per-client speedup (below 1 is a slowdown); `None` if
    /// no client read enough to compare.
    pub worst_client_speedup: Option<f64>,
    /// Clients slowed by more than 5%.
    pub clients_slowed_5pct: usize,
    /// Clients compared (those with enough reads in both runs).
    pub clients_compared: usize,
}

/// Each client's speedup against Base (Base's average read time over this
/// algorithm's), with its reads under this algorithm; `None` for a client
/// without reads in either run.
pub fn client_speedups(result: &CoopResult, base: &CoopResult) -> Vec<(u64, Option<f64>)> {
    result
        .stats
        .clients
        .iter()
        .zip(&base.stats.clients)
        .map(|(r, b)| {
            let speedup = (r.reads > 0 && b.reads > 0).then(|| b.avg_us() / r.avg_us());
            (r.reads, speedup)
        })
        .collect()
}

/// Compares `result` with `base` (the same trace under Base).
pub fn compare(result: &CoopResult, base: &CoopResult) -> Comparison {
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    let speeds: Vec<f64> = result
        .stats
        .clients
        .iter()
        .zip(&base.stats.clients)
        .filter(|(r, b)| r.reads >= MIN_CLIENT_READS && b.reads >= MIN_CLIENT_READS)
        .map(|(r, b)| ratio(b.avg_us(), r.avg_us()))
        .collect();
    Comparison {
        speedup: ratio(base.stats.avg_read_us(), result.stats.avg_read_us()),
        load_vs_base: ratio(
            result.stats.load.total() as f64,
            base.stats.load.total() as f64,
        ),
        worst_client_speedup: speeds.iter().copied().reduce(f64::min),
        clients_slowed_5pct: speeds.iter().filter(|&&s| s < 1.0 / 1.05).count(),
        clients_compared: speeds.len(),
    }
}

/// The Base run among `results`, if any.
pub fn find_base(results: &[CoopResult]) -> Option<&CoopResult> {
    results
        .iter()
        .find(|r| r.spec.algorithm == AlgorithmKind::Base)
}
