//! What every live benchmark shares: a temporary directory and runtime that
//! are cleaned up also on Ctrl-C, seeded origin files, a progress bar on
//! terminals, per-node counters, and medians.

use anyhow::Result;
use coopcache_node::NodeHandle;
use coopcache_node::origin::OriginCounts;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::collections::BTreeMap;
use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

pub(crate) use coopcache_console::tasks::in_tempdir;

/// Writes `size` seeded random bytes to `dir/name` and returns them, so
/// that every byte read through the cache can be compared with the origin.
pub(crate) fn write_origin_file(
    dir: &Path,
    name: &str,
    size: u64,
    rng: &mut Pcg64Mcg,
) -> Result<Vec<u8>> {
    std::fs::create_dir_all(dir)?;
    let mut data = vec![0u8; usize::try_from(size)?];
    rng.fill(&mut data[..]);
    std::fs::write(dir.join(name), &data)?;
    Ok(data)
}

/// The benchmark's random generator for `seed` and `stream` (one stream
/// per purpose, so that changing one does not shift another).
pub(crate) fn rng(seed: u64, stream: u64) -> Pcg64Mcg {
    Pcg64Mcg::seed_from_u64(seed ^ stream.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// Bytes of `got` that differ from `expected` (a length mismatch counts
/// the missing or extra bytes as wrong).
pub(crate) fn wrong_bytes(got: &[u8], expected: &[u8]) -> u64 {
    let differ = got.iter().zip(expected).filter(|(a, b)| a != b).count();
    (differ + got.len().abs_diff(expected.len())) as u64
}

/// The median of `xs` (the mean of the middle two for an even count; 0
/// for none).
pub(crate) fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Seconds `fut` took, with its output.
pub(crate) async fn timed<T>(fut: impl Future<Output = T>) -> (T, f64) {
    let started = Instant::now();
    let out = fut.await;
    (out, started.elapsed().as_secs_f64())
}

/// A node's counters at one moment; subtracting two gives what happened
/// in between.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub(crate) struct Counters {
    /// Block reads by level (local, manager, peer, origin).
    pub reads: BTreeMap<String, u64>,
    /// Block reads sent to the origin.
    pub origin_reads: u64,
    /// The requests that carried them (a run of blocks goes in one).
    pub origin_requests: u64,
    /// Questions to the origin for a file's version.
    pub origin_stats: u64,
    /// What else the origin was asked: names, attributes, changes, writes,
    /// commits.
    pub origin: OriginCounts,
    /// Bytes from the origin.
    pub origin_bytes: u64,
    /// Reads that gave up on a peer and went to the origin.
    pub timeouts: u64,
    /// Peer blocks that failed verification.
    pub integrity_failures: u64,
    /// Messages dropped (a peer's queue full, or too many recirculated
    /// blocks awaiting verification).
    pub dropped_messages: u64,
    /// Forwarded singlets shed because their peer's link was busy.
    pub forwards_shed: u64,
    /// Blocks cached now (a level, not a count of events: `since` keeps
    /// the later value).
    pub cached_blocks: u64,
    /// Blocks of a private origin parked on peers sealed, and taken back
    /// opened and verified.
    pub sealed_blocks: u64,
    pub opened_blocks: u64,
}

impl Counters {
    /// `node`'s counters now.
    pub(crate) async fn of(node: &NodeHandle) -> Result<Counters> {
        let s = node.status().await?;
        Ok(Counters {
            reads: s.reads,
            origin_reads: s.origin_reads,
            origin_requests: s.origin_requests,
            origin_stats: s.origin_stats,
            origin: node.origin().counts(),
            origin_bytes: s.origin_bytes,
            timeouts: s.timeouts,
            integrity_failures: s.integrity_failures,
            cached_blocks: s.cached_blocks,
            dropped_messages: node.metrics().dropped_messages.get(),
            forwards_shed: node.metrics().forwards_shed.get(),
            sealed_blocks: s.sealed_blocks,
            opened_blocks: s.opened_blocks,
        })
    }

    /// The counters of all `nodes`, summed.
    pub(crate) async fn sum(nodes: &[Arc<NodeHandle>]) -> Result<Counters> {
        let mut total = Counters::default();
        for n in nodes {
            total = total.plus(&Counters::of(n).await?);
        }
        Ok(total)
    }

    fn plus(&self, other: &Counters) -> Counters {
        let mut reads = self.reads.clone();
        for (level, n) in &other.reads {
            *reads.entry(level.clone()).or_default() += n;
        }
        Counters {
            reads,
            origin_reads: self.origin_reads + other.origin_reads,
            origin_requests: self.origin_requests + other.origin_requests,
            origin_stats: self.origin_stats + other.origin_stats,
            origin: OriginCounts {
                metadata: self.origin.metadata + other.origin.metadata,
                changes: self.origin.changes + other.origin.changes,
                writes: self.origin.writes + other.origin.writes,
                written_bytes: self.origin.written_bytes + other.origin.written_bytes,
                commits: self.origin.commits + other.origin.commits,
            },
            origin_bytes: self.origin_bytes + other.origin_bytes,
            timeouts: self.timeouts + other.timeouts,
            integrity_failures: self.integrity_failures + other.integrity_failures,
            cached_blocks: self.cached_blocks + other.cached_blocks,
            dropped_messages: self.dropped_messages + other.dropped_messages,
            forwards_shed: self.forwards_shed + other.forwards_shed,
            sealed_blocks: self.sealed_blocks + other.sealed_blocks,
            opened_blocks: self.opened_blocks + other.opened_blocks,
        }
    }

    /// What happened between `earlier` and these counters.
    pub(crate) fn since(&self, earlier: &Counters) -> Counters {
        Counters {
            reads: self
                .reads
                .iter()
                .map(|(l, n)| {
                    let before = earlier.reads.get(l).copied().unwrap_or(0);
                    (l.clone(), n.saturating_sub(before))
                })
                .collect(),
            origin_reads: self.origin_reads.saturating_sub(earlier.origin_reads),
            origin_requests: self.origin_requests.saturating_sub(earlier.origin_requests),
            origin_stats: self.origin_stats.saturating_sub(earlier.origin_stats),
            origin: self.origin.since(&earlier.origin),
            origin_bytes: self.origin_bytes.saturating_sub(earlier.origin_bytes),
            timeouts: self.timeouts.saturating_sub(earlier.timeouts),
            integrity_failures: self
                .integrity_failures
                .saturating_sub(earlier.integrity_failures),
            cached_blocks: self.cached_blocks,
            dropped_messages: self
                .dropped_messages
                .saturating_sub(earlier.dropped_messages),
            forwards_shed: self.forwards_shed.saturating_sub(earlier.forwards_shed),
            sealed_blocks: self.sealed_blocks.saturating_sub(earlier.sealed_blocks),
            opened_blocks: self.opened_blocks.saturating_sub(earlier.opened_blocks),
        }
    }

    /// Block reads served at `level` (`local`, `manager`, `peer`, `origin`).
    pub(crate) fn at(&self, level: &str) -> u64 {
        self.reads.get(level).copied().unwrap_or(0)
    }
}

pub(crate) use coopcache_console::progress::Bar;

/// Writes a plot and says where.
pub(crate) fn plot_to(path: Option<&Path>, draw: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    if let Some(path) = path {
        draw(path)?;
        eprintln!("plot: {}", path.display());
    }
    Ok(())
}

/// Prints a benchmark's `rows` (JSON lines with `json`, else `table`),
/// draws them to `plot_path`, and fails if any row delivered wrong bytes.
pub(crate) fn report_rows<R: serde::Serialize>(
    json: bool,
    rows: &[R],
    table: fn(&[R]),
    plot_path: Option<&Path>,
    draw: fn(&Path, &[R]) -> Result<()>,
    wrong_bytes: fn(&R) -> u64,
) -> Result<()> {
    if json {
        coopcache_console::output::print_json(rows)?;
    } else {
        table(rows);
    }
    plot_to(plot_path, |path| draw(path, rows))?;
    let wrong: u64 = rows.iter().map(wrong_bytes).sum();
    if wrong > 0 {
        anyhow::bail!("{wrong} wrong bytes delivered");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }

    #[test]
    fn wrong_bytes_counts_differences_and_length() {
        assert_eq!(wrong_bytes(b"abc", b"abc"), 0);
        assert_eq!(wrong_bytes(b"abd", b"abc"), 1);
        assert_eq!(wrong_bytes(b"ab", b"abc"), 1);
        assert_eq!(wrong_bytes(b"xbcde", b"abc"), 3);
    }
}
