//! Replay throughput on the CloudPhysics w106 trace (5.29M requests), the
//! benchmark of `docs/benchmarks.md`.
//!
//! The trace is parsed into memory first and timed separately; each policy
//! and size then replays it `--reps` times from a fresh cache, one run at a
//! time on one core, and the median is reported. Metadata per cached block
//! is measured by a counting allocator: the live heap bytes the policy holds
//! after the replay, divided by the blocks it caches.
//!
//! ```sh
//! cargo bench -p coopcache-sim --bench replay -- [--reps 5] [--trace PATH] [--policy lru,arc]
//! ```

use coopcache_core::policy::{Policy, PolicyKind, PolicyVisitor};
use coopcache_sim::replay::count_misses;
use coopcache_sim::trace::{self, ReadOptions, TraceFormat};
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::PathBuf;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

/// Counts live heap bytes, to measure what a policy's metadata occupies.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every method forwards to the system allocator with the caller's
// arguments unchanged, so its contract is the caller's; the counter is only
// bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same layout contract as our caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: `ptr` came from `alloc` with `layout`; the caller upholds
        // `realloc`'s contract for `new_size`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const SIZES: [usize; 3] = [2_750, 27_500, 137_500];

struct Measured {
    misses: u64,
    elapsed: Duration,
    bytes_per_block: f64,
}

/// Replays the whole trace through a fresh cache and measures it. `before`
/// is the live heap before the cache was built.
struct Replay<'a> {
    ids: &'a [u64],
    before: isize,
}

impl PolicyVisitor<u64> for Replay<'_> {
    type Output = Measured;

    fn visit<P: Policy<u64> + Send + 'static>(self, policy: P) -> Measured {
        let mut policy = policy;
        let start = Instant::now();
        let misses = count_misses(&mut policy, self.ids);
        let elapsed = start.elapsed();
        let live = LIVE.load(Ordering::Relaxed) - self.before;
        Measured {
            misses,
            elapsed,
            bytes_per_block: live as f64 / policy.len().max(1) as f64,
        }
    }
}

fn main() {
    let mut reps = 5usize;
    let mut trace_path = None;
    let mut policies = PolicyKind::ALL.to_vec();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--reps" => reps = args.next().and_then(|v| v.parse().ok()).expect("--reps N"),
            "--trace" => trace_path = args.next().map(PathBuf::from),
            "--policy" => {
                policies = args
                    .next()
                    .expect("--policy LIST")
                    .split(',')
                    .map(|p| p.parse().expect("a policy name"))
                    .collect()
            }
            _ => {} // cargo bench passes --bench
        }
    }
    let path = trace_path.unwrap_or_else(|| {
        let dir = std::env::var_os("COOPCACHE_TRACES")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces")
            });
        dir.join("w106.trace.xz")
    });

    let start = Instant::now();
    let stream = trace::open(&path, TraceFormat::Be32, &ReadOptions::default())
        .unwrap_or_else(|e| panic!("cannot open the benchmark trace: {e}"));
    let ids: Vec<u64> = stream
        .requests
        .map(|r| r.map(|r| r.id))
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("cannot read the benchmark trace: {e}"));
    println!(
        "trace {}: {} requests parsed into memory in {:.2} s (not included below)",
        path.display(),
        ids.len(),
        start.elapsed().as_secs_f64()
    );
    println!("median of {reps} replays per row, one at a time, from an empty cache\n");
    println!(
        "| policy | cache (blocks) | misses | miss ratio | median time (ms) | median Mreq/s | min-max Mreq/s | metadata (B/block) |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for policy in policies {
        for size in SIZES {
            let runs: Vec<Measured> = (0..reps)
                .map(|_| {
                    let before = LIVE.load(Ordering::Relaxed);
                    policy
                        .build(size, Replay { ids: &ids, before })
                        .expect("valid size")
                })
                .collect();
            assert!(
                runs.windows(2).all(|w| w[0].misses == w[1].misses),
                "replays disagree"
            );
            let mut times: Vec<Duration> = runs.iter().map(|m| m.elapsed).collect();
            times.sort();
            let rate = |d: Duration| ids.len() as f64 / d.as_secs_f64() / 1e6;
            let median = times[times.len() / 2];
            println!(
                "| {policy} | {size} | {} | {:.4} | {:.1} | {:.1} | {:.1}-{:.1} | {:.1} |",
                runs[0].misses,
                runs[0].misses as f64 / ids.len() as f64,
                median.as_secs_f64() * 1e3,
                rate(median),
                rate(times[times.len() - 1]),
                rate(times[0]),
                runs[0].bytes_per_block,
            );
        }
    }
}
