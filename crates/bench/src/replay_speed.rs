//! `coopcache bench replay-speed`: the simulator's request loop on a real
//! trace against a reference loop over the same requests in the same
//! process. The reference is LRU written the plain way (std's `HashMap`
//! with its default hasher, a doubly linked list in two `Vec`s), so it
//! counts exactly the misses of coopcache's LRU and moves with the
//! machine's speed but not with coopcache's code: the ratio of the two is
//! what `scripts/perf-guard.sh` watches, whatever the machine.

use anyhow::{Context, Result, bail};
use coopcache_console::args::parse_size;
use coopcache_core::policy::{Policy, PolicyKind, PolicyVisitor};
use coopcache_sim::replay::count_misses;
use coopcache_sim::trace::{self, ReadOptions, TraceFormat};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct ReplaySpeedArgs {
    /// The trace (default: the CloudPhysics w106 trace in ../shared/traces).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Its format.
    #[arg(long, default_value = "be32")]
    format: TraceFormat,
    /// Cache size in blocks.
    #[arg(long, default_value = "27500", value_parser = parse_size)]
    cache_size: u64,
    /// Replays of each loop, alternating; figures are their medians.
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// One JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(serde::Serialize)]
struct Report {
    trace: String,
    requests: usize,
    cache_size: usize,
    misses: u64,
    /// coopcache's LRU, millions of requests a second (median).
    lru_mreq_s: f64,
    /// The reference loop, millions of requests a second (median).
    reference_mreq_s: f64,
    /// coopcache's LRU over the reference.
    ratio: f64,
}

pub(crate) fn run(args: ReplaySpeedArgs) -> Result<()> {
    if args.reps == 0 {
        bail!("--reps must be at least 1");
    }
    let size = usize::try_from(args.cache_size)
        .ok()
        .filter(|&s| s > 0)
        .context("--cache-size must be at least one block")?;
    let path = match &args.trace {
        Some(path) => path.clone(),
        None => {
            let path = default_trace();
            if !path.exists() {
                bail!(
                    "no --trace given, and the default {} is not there: pass --trace PATH, or set COOPCACHE_TRACES to the directory of the shared traces",
                    path.display()
                );
            }
            path
        }
    };
    let ids = read_ids(&path, args.format)?;
    if ids.is_empty() {
        bail!("{}: no requests", path.display());
    }
    let (mut ours, mut reference) = (Vec::new(), Vec::new());
    let mut misses = None;
    for _ in 0..args.reps {
        let (m, t) = PolicyKind::Lru
            .build(size, Timed { ids: &ids })
            .context("the cache size")?;
        ours.push(t);
        let (r, u) = reference_lru(&ids, size);
        reference.push(u);
        if m != r {
            bail!("coopcache's LRU counted {m} misses, the reference {r}: they must agree");
        }
        misses = Some(m);
    }
    let rate = |times: &mut Vec<Duration>| {
        times.sort();
        ids.len() as f64 / times[times.len() / 2].as_secs_f64() / 1e6
    };
    let (lru, refr) = (rate(&mut ours), rate(&mut reference));
    let report = Report {
        trace: path.display().to_string(),
        requests: ids.len(),
        cache_size: size,
        misses: misses.unwrap_or(0),
        lru_mreq_s: lru,
        reference_mreq_s: refr,
        ratio: lru / refr,
    };
    if args.json {
        coopcache_console::output::print_json([&report])?;
    } else {
        println!(
            "{}: {} requests, LRU of {} blocks, {} misses; median of {} replays each, alternating",
            report.trace, report.requests, report.cache_size, report.misses, args.reps
        );
        println!("coopcache LRU   {:8.1} Mreq/s", report.lru_mreq_s);
        println!("reference LRU   {:8.1} Mreq/s", report.reference_mreq_s);
        println!("ratio           {:8.2}", report.ratio);
    }
    Ok(())
}

fn default_trace() -> PathBuf {
    std::env::var_os("COOPCACHE_TRACES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("../shared/traces"))
        .join("w106.trace.xz")
}

fn read_ids(path: &Path, format: TraceFormat) -> Result<Vec<u64>> {
    let stream = trace::open(path, format, &ReadOptions::default())
        .with_context(|| format!("cannot open {}", path.display()))?;
    stream
        .requests
        .map(|r| r.map(|r| r.id))
        .collect::<Result<_, _>>()
        .with_context(|| format!("cannot read {}", path.display()))
}

/// Replays the ids through a fresh policy: its misses and the time taken.
struct Timed<'a> {
    ids: &'a [u64],
}

impl PolicyVisitor<u64> for Timed<'_> {
    type Output = (u64, Duration);

    fn visit<P: Policy<u64> + Send + 'static>(self, mut policy: P) -> (u64, Duration) {
        let start = Instant::now();
        let misses = count_misses(&mut policy, self.ids);
        (misses, start.elapsed())
    }
}

/// LRU written the plain way, the reference loop: its misses and the time.
fn reference_lru(ids: &[u64], capacity: usize) -> (u64, Duration) {
    const NONE: usize = usize::MAX;
    let start = Instant::now();
    let mut slot: HashMap<u64, usize> = HashMap::with_capacity(capacity);
    let (mut keys, mut prev, mut next) = (Vec::new(), Vec::new(), Vec::new());
    let (mut head, mut tail) = (NONE, NONE); // most and least recent
    let mut misses = 0;
    for &id in ids {
        let i = match slot.get(&id) {
            Some(&i) => {
                // Unlink i.
                let (p, n) = (prev[i], next[i]);
                if p != NONE {
                    next[p] = n
                } else {
                    head = n
                }
                if n != NONE {
                    prev[n] = p
                } else {
                    tail = p
                }
                i
            }
            None => {
                misses += 1;
                let i = if keys.len() < capacity {
                    keys.push(id);
                    prev.push(NONE);
                    next.push(NONE);
                    keys.len() - 1
                } else {
                    // Evict the tail and reuse its slot.
                    let t = tail;
                    tail = prev[t];
                    if tail != NONE {
                        next[tail] = NONE
                    } else {
                        head = NONE
                    }
                    slot.remove(&keys[t]);
                    keys[t] = id;
                    t
                };
                slot.insert(id, i);
                i
            }
        };
        // Link i at the head.
        prev[i] = NONE;
        next[i] = head;
        if head != NONE {
            prev[head] = i;
        }
        head = i;
        if tail == NONE {
            tail = i;
        }
    }
    (misses, start.elapsed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_counts_the_misses_of_coopcaches_lru() {
        let ids: Vec<u64> = (0..20_000u64)
            .map(|i| ((i * 7919) % 1_013) ^ (i % 17))
            .collect();
        for size in [1, 2, 50, 1_000, 5_000] {
            let (ours, _) = PolicyKind::Lru.build(size, Timed { ids: &ids }).unwrap();
            let (reference, _) = reference_lru(&ids, size);
            assert_eq!(ours, reference, "size {size}");
        }
    }
}
