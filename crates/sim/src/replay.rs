//! Replaying a trace through several caches at once.
//!
//! The trace is read once, on its own thread, in chunks of block ids; every
//! cache under test consumes each chunk, spread over all cores. Memory stays
//! bounded by a few chunks whatever the trace's length, decompression and
//! parsing overlap the simulation, and each cache's time counts only its
//! own request loop.

use crate::chunks::{CHUNK, Chunk, for_each_chunk_cut};
use crate::error::TraceError;
use crate::interval::Cut;
use crate::trace::{Op, Request, Requests};
use coopcache_core::CapacityError;
use coopcache_core::admission::{Admission, AdmissionSpec, NoAdmission};
use coopcache_core::policy::{
    BLOCK, Belady, Capacity, Policy, PolicySpec, PolicyVisitor, Unit, access, access_admitted,
    next_uses,
};
use rayon::prelude::*;
use std::time::{Duration, Instant};

/// One cache to simulate: a policy and a capacity, in blocks or bytes.
///
/// In a block cache ([`Capacity::Blocks`]) every request is one block of
/// size 1, whatever its bytes. In a byte cache ([`Capacity::Bytes`]) every
/// object takes its request's size; requests of size 0 are left out and
/// counted in [`Tally::skipped`], as libCacheSim's trace readers drop
/// them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunSpec {
    /// The replacement policy and its knobs.
    pub policy: PolicySpec,
    /// Capacity in blocks or bytes.
    pub capacity: Capacity,
}

/// What one simulated cache saw.
///
/// Reads are the requests measured; writes and deletes (from a trace's op
/// column) change the cache but are counted apart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Reads replayed.
    pub requests: u64,
    /// Reads that missed.
    pub misses: u64,
    /// Bytes the reads asked for: each read's size, where the replay
    /// carried sizes (see [`replay_sized`]), else 0.
    pub bytes: u64,
    /// Bytes of the reads that missed, likewise.
    pub byte_misses: u64,
    /// Writes: write-allocate, each caches its object as a read would.
    pub writes: u64,
    /// Deletes: each drops its object if cached.
    pub deletes: u64,
    /// Reads and writes of size 0 left out of a byte cache.
    pub skipped: u64,
}

impl Tally {
    /// What was counted since `earlier`, a tally of the same cache.
    pub fn since(&self, earlier: &Tally) -> Tally {
        Tally {
            requests: self.requests - earlier.requests,
            misses: self.misses - earlier.misses,
            bytes: self.bytes - earlier.bytes,
            byte_misses: self.byte_misses - earlier.byte_misses,
            writes: self.writes - earlier.writes,
            deletes: self.deletes - earlier.deletes,
            skipped: self.skipped - earlier.skipped,
        }
    }

    /// Read misses over reads (0 without reads).
    pub fn miss_ratio(&self) -> f64 {
        ratio(self.misses, self.requests)
    }

    /// Bytes missed over bytes read, or the miss ratio where reads carried
    /// no sizes.
    pub fn byte_miss_ratio(&self) -> f64 {
        if self.bytes == 0 {
            self.miss_ratio()
        } else {
            ratio(self.byte_misses, self.bytes)
        }
    }
}

/// What one simulated cache saw, and how long its request loop took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunResult {
    /// The cache simulated.
    pub spec: RunSpec,
    /// Its counts.
    pub tally: Tally,
    /// Time spent in this cache's request loop (trace reading excluded).
    pub elapsed: Duration,
}

impl RunResult {
    /// Read misses over reads (0 for an empty trace).
    pub fn miss_ratio(&self) -> f64 {
        self.tally.miss_ratio()
    }

    /// Bytes missed over bytes read; without sizes (a block replay of a
    /// trace without them), every read is one block and this is the miss
    /// ratio.
    pub fn byte_miss_ratio(&self) -> f64 {
        self.tally.byte_miss_ratio()
    }

    /// Requests (reads, writes and deletes) per second of request-loop time.
    pub fn requests_per_s(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        let t = &self.tally;
        if secs > 0.0 {
            (t.requests + t.writes + t.deletes) as f64 / secs
        } else {
            0.0
        }
    }
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// A chunk of requests as a replay sees them, field by field: the objects'
/// ids, what is done to each, and (only when some cache is sized in bytes)
/// their sizes. A block replay so moves 9 bytes a request, not 16.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Items {
    /// The object (block) ids.
    pub ids: Vec<u64>,
    /// Read, write or delete, per id.
    pub ops: Vec<Op>,
    /// Sizes in bytes per id, where the trace gives them (else 0); empty
    /// unless the replay has a byte cache.
    pub sizes: Vec<u32>,
    /// Whether `sizes` is kept.
    sized: bool,
}

impl Items {
    /// An empty chunk with room for `n` requests, keeping sizes if `sized`.
    pub fn with_capacity(n: usize, sized: bool) -> Self {
        Items {
            ids: Vec::with_capacity(n),
            ops: Vec::with_capacity(n),
            sizes: Vec::with_capacity(if sized { n } else { 0 }),
            sized,
        }
    }
}

impl Chunk for Items {
    fn clear(&mut self) {
        self.ids.clear();
        self.ops.clear();
        self.sizes.clear();
    }

    #[inline]
    fn push(&mut self, r: &Request) {
        self.ids.push(r.id);
        self.ops.push(r.op);
        if self.sized {
            self.sizes.push(r.size);
        }
    }

    fn len(&self) -> usize {
        self.ids.len()
    }
}

/// A cache being fed chunks of requests; boxed so one list holds every
/// policy, with dynamic dispatch once per chunk rather than per request.
trait Run: Send {
    fn feed(&mut self, items: &Items);
    fn result(&self) -> RunResult;
}

struct PolicyRun<P, A> {
    policy: P,
    /// [`NoAdmission`] (compiled away) unless the spec names one.
    admission: A,
    spec: RunSpec,
    tally: Tally,
    elapsed: Duration,
    /// [`replay_bytes`] or [`replay_blocks`] (behind `admission`), chosen
    /// once: each loop is its own function with one call of [`access`], so
    /// the policy inlines.
    request_loop: fn(&mut P, &mut A, &Items, &mut Tally),
}

impl<P: Policy<u64> + Send, A: Admission<u64> + Send> Run for PolicyRun<P, A> {
    fn feed(&mut self, items: &Items) {
        let start = Instant::now();
        (self.request_loop)(
            &mut self.policy,
            &mut self.admission,
            items,
            &mut self.tally,
        );
        self.elapsed += start.elapsed();
    }

    fn result(&self) -> RunResult {
        RunResult {
            spec: self.spec,
            tally: self.tally,
            elapsed: self.elapsed,
        }
    }
}

/// The request loop of a byte cache: every request through `policy`, each
/// object at its size, counted in `tally`; requests of size 0 are skipped.
/// `items` must carry sizes. Allocation-free once the cache has held its
/// largest number of objects (its index grows until then).
///
/// Reads go through [`access`]. Writes are write-allocate: they go through
/// [`access`] too (a cached object is referenced, a missing one cached) but
/// are counted as writes, not as read hits or misses. Deletes drop the
/// object.
pub fn replay_bytes<P: Policy<u64>>(policy: &mut P, items: &Items, tally: &mut Tally) {
    bytes_admitted(policy, &mut NoAdmission, items, tally);
}

/// [`replay_bytes`] behind `admission` (see [`access_admitted`]).
pub fn bytes_admitted<P: Policy<u64>, A: Admission<u64>>(
    policy: &mut P,
    admission: &mut A,
    items: &Items,
    tally: &mut Tally,
) {
    debug_assert_eq!(
        items.sizes.len(),
        items.ids.len(),
        "a byte replay needs sizes"
    );
    let mut t = *tally;
    for ((&id, &op), &size) in items.ids.iter().zip(&items.ops).zip(&items.sizes) {
        if op == Op::Delete {
            t.deletes += 1;
            policy.remove(id);
            continue;
        }
        if size == 0 {
            t.skipped += 1;
            continue;
        }
        let hit = access_admitted(policy, admission, id, size, |_| {});
        if op == Op::Write {
            t.writes += 1;
        } else {
            t.requests += 1;
            t.bytes += u64::from(size);
            if !hit {
                t.misses += 1;
                t.byte_misses += u64::from(size);
            }
        }
    }
    *tally = t;
}

/// The request loop of a block cache: every request one block (size 1)
/// through `policy`, counted in `tally`; where `items` carries sizes, reads
/// also count their bytes. Allocation-free once the cache is full. Reads,
/// writes and deletes as in [`replay_bytes`].
pub fn replay_blocks<P: Policy<u64>>(policy: &mut P, items: &Items, tally: &mut Tally) {
    blocks_admitted(policy, &mut NoAdmission, items, tally);
}

/// [`replay_blocks`] behind `admission` (see [`access_admitted`]).
pub fn blocks_admitted<P: Policy<u64>, A: Admission<u64>>(
    policy: &mut P,
    admission: &mut A,
    items: &Items,
    tally: &mut Tally,
) {
    let mut t = *tally;
    if items.sizes.is_empty() {
        for (&id, &op) in items.ids.iter().zip(&items.ops) {
            match op {
                Op::Read => {
                    t.requests += 1;
                    if !access_admitted(policy, admission, id, BLOCK, |_| {}) {
                        t.misses += 1;
                    }
                }
                Op::Write => {
                    t.writes += 1;
                    access_admitted(policy, admission, id, BLOCK, |_| {});
                }
                Op::Delete => {
                    t.deletes += 1;
                    policy.remove(id);
                }
            }
        }
    } else {
        for ((&id, &op), &size) in items.ids.iter().zip(&items.ops).zip(&items.sizes) {
            if op == Op::Delete {
                t.deletes += 1;
                policy.remove(id);
                continue;
            }
            let hit = access_admitted(policy, admission, id, BLOCK, |_| {});
            if op == Op::Write {
                t.writes += 1;
            } else {
                t.requests += 1;
                t.bytes += u64::from(size);
                if !hit {
                    t.misses += 1;
                    t.byte_misses += u64::from(size);
                }
            }
        }
    }
    *tally = t;
}

/// The request loop of a block replay of bare ids: every id one block read
/// through `policy`; returns the misses. Allocation-free once the cache is
/// full.
#[inline]
pub fn count_misses<P: Policy<u64>>(policy: &mut P, ids: &[u64]) -> u64 {
    let mut misses = 0;
    for &id in ids {
        if !access(policy, id, BLOCK, |_| {}) {
            misses += 1;
        }
    }
    misses
}

/// Builds the boxed run of a spec.
struct BoxRun(RunSpec);

impl PolicyVisitor<u64> for BoxRun {
    type Output = Box<dyn Run>;

    fn visit<P: Policy<u64> + Send + 'static>(self, policy: P) -> Box<dyn Run> {
        match self.0.policy.admission() {
            AdmissionSpec::None => self.boxed(policy, NoAdmission),
            admission => self.boxed(policy, admission.build::<u64>()),
        }
    }
}

impl BoxRun {
    fn boxed<P, A>(self, policy: P, admission: A) -> Box<dyn Run>
    where
        P: Policy<u64> + Send + 'static,
        A: Admission<u64> + Send + 'static,
    {
        let request_loop = match self.0.capacity {
            Capacity::Bytes(_) => bytes_admitted::<P, A>,
            Capacity::Blocks(_) => blocks_admitted::<P, A>,
        };
        Box::new(PolicyRun {
            policy,
            admission,
            spec: self.0,
            tally: Tally::default(),
            elapsed: Duration::ZERO,
            request_loop,
        })
    }
}

/// Why a replay stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The trace could not be read; no results are reported.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A cache size does not suit its policy; nothing was replayed.
    #[error(transparent)]
    Capacity(#[from] CapacityError),
}

/// Replays `requests` through one cache per spec, in parallel, and returns
/// their results in the order of `specs`. `on_chunk` is called after each
/// chunk with the number of requests replayed so far (for progress). Sizes
/// are carried only if some spec is a byte cache (see [`replay_sized`]).
pub fn replay(
    requests: Requests,
    specs: &[RunSpec],
    on_chunk: impl FnMut(u64),
) -> Result<Vec<RunResult>, ReplayError> {
    let sized = specs
        .iter()
        .any(|s| matches!(s.capacity, Capacity::Bytes(_)));
    replay_sized(requests, specs, sized, on_chunk)
}

/// [`replay`], carrying the requests' sizes if `sized` (the trace has
/// them): block caches then count bytes too. A byte cache needs them.
pub fn replay_sized(
    requests: Requests,
    specs: &[RunSpec],
    sized: bool,
    on_chunk: impl FnMut(u64),
) -> Result<Vec<RunResult>, ReplayError> {
    replay_every(requests, specs, sized, None, on_chunk, |_, _| {})
}

/// Where an interval of a replay ends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IntervalEnd {
    /// Trace requests (reads, writes and deletes) read by its end.
    pub requests: u64,
    /// For intervals of trace time, its end in seconds after the first
    /// request's time: a multiple of the interval, also for the last one
    /// (which the trace may end before).
    pub time_s: Option<f64>,
}

/// [`replay_sized`], also reporting at every interval `every` cuts (every
/// N trace requests, or every span of trace time): `on_interval` is called
/// with the interval's end and each cache's tally over the interval, in
/// the order of `specs`; the last call covers the rest of the trace, if
/// any. Intervals without requests (gaps in trace time) are not reported.
pub fn replay_every(
    requests: Requests,
    specs: &[RunSpec],
    sized: bool,
    every: Option<Cut>,
    on_chunk: impl FnMut(u64),
    on_interval: impl FnMut(IntervalEnd, &[Tally]),
) -> Result<Vec<RunResult>, ReplayError> {
    let sized = sized
        || specs
            .iter()
            .any(|s| matches!(s.capacity, Capacity::Bytes(_)));
    if specs.iter().any(|s| s.policy.kind().needs_future()) {
        return replay_with_future(requests, specs, sized, every, on_chunk, on_interval);
    }
    let runs = specs
        .iter()
        .map(|&spec| spec.policy.build(spec.capacity, BoxRun(spec)))
        .collect::<Result<Vec<_>, _>>()?;
    feed_all(requests, runs, sized, every, on_chunk, on_interval)
}

/// [`replay_sized`] with a policy that needs the future ([`Belady`]): the
/// trace is read whole first, and each request's next reference computed
/// in one backward pass, over the requests that reach a cache's
/// [`lookup`](Policy::lookup): reads and writes in a block cache, those of
/// size above 0 in a byte cache. A delete does not end an object's future
/// (it is next referenced when next requested).
fn replay_with_future(
    requests: Requests,
    specs: &[RunSpec],
    sized: bool,
    every: Option<Cut>,
    on_chunk: impl FnMut(u64),
    on_interval: impl FnMut(IntervalEnd, &[Tally]),
) -> Result<Vec<RunResult>, ReplayError> {
    let all = requests.collect::<Result<Vec<Request>, TraceError>>()?;
    let future = |keep: fn(&Request) -> bool| -> std::sync::Arc<[u64]> {
        next_uses(
            all.iter()
                .filter(|r| keep(r))
                .map(|r| r.id)
                .collect::<Vec<_>>()
                .into_iter(),
        )
        .into()
    };
    let mut block_future = None;
    let mut byte_future = None;
    let mut runs = Vec::with_capacity(specs.len());
    for &spec in specs {
        let run = match (spec.policy.kind().needs_future(), spec.capacity) {
            (false, capacity) => spec.policy.build(capacity, BoxRun(spec))?,
            (true, capacity @ Capacity::Blocks(_)) => {
                let future = block_future
                    .get_or_insert_with(|| future(|r| r.op != Op::Delete))
                    .clone();
                BoxRun(spec).visit(Belady::<u64, Unit>::with_future(capacity, future)?)
            }
            (true, capacity @ Capacity::Bytes(_)) => {
                let future = byte_future
                    .get_or_insert_with(|| future(|r| r.op != Op::Delete && r.size > 0))
                    .clone();
                BoxRun(spec).visit(Belady::<u64, u32>::with_future(capacity, future)?)
            }
        };
        runs.push(run);
    }
    feed_all(
        Box::new(all.into_iter().map(Ok)),
        runs,
        sized,
        every,
        on_chunk,
        on_interval,
    )
}

/// Feeds every chunk of `requests` to every run, in parallel, cutting
/// chunks where `every` ends an interval to report it.
fn feed_all(
    requests: Requests,
    mut runs: Vec<Box<dyn Run>>,
    sized: bool,
    every: Option<Cut>,
    mut on_chunk: impl FnMut(u64),
    mut on_interval: impl FnMut(IntervalEnd, &[Tally]),
) -> Result<Vec<RunResult>, ReplayError> {
    let mut replayed = 0u64;
    // Each run's tally at the last interval's end, then the interval's.
    let mut before = vec![Tally::default(); if every.is_some() { runs.len() } else { 0 }];
    let mut interval = before.clone();
    let mut report = |runs: &[Box<dyn Run>], end: IntervalEnd| {
        for ((run, before), interval) in runs.iter().zip(&mut before).zip(&mut interval) {
            let now = run.result().tally;
            *interval = now.since(before);
            *before = now;
        }
        on_interval(end, &interval);
    };
    for_each_chunk_cut(
        requests,
        every,
        || Items::with_capacity(CHUNK, sized),
        |items: &Items, end| {
            if items.len() > 0 {
                runs.par_iter_mut().for_each(|run| run.feed(items));
                replayed += items.len() as u64;
                on_chunk(replayed);
            }
            if let Some(end) = end {
                let time_s = match every {
                    Some(Cut::Time { per_second, .. }) => {
                        Some(end as f64 / per_second.max(1) as f64)
                    }
                    _ => None,
                };
                report(
                    &runs,
                    IntervalEnd {
                        requests: replayed,
                        time_s,
                    },
                );
            }
            Ok::<(), ReplayError>(())
        },
    )?;
    Ok(runs.iter().map(|run| run.result()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunks::CHUNK;
    use crate::trace::Request;
    use coopcache_core::PolicyKind;

    fn ids(ids: impl IntoIterator<Item = u64>) -> Requests {
        let requests: Vec<_> = ids
            .into_iter()
            .map(|id| {
                Ok(Request {
                    id,
                    ..Request::default()
                })
            })
            .collect();
        Box::new(requests.into_iter())
    }

    #[test]
    fn every_spec_sees_the_whole_trace() {
        // A loop over 3 blocks: a 2-block LRU misses every time, a 3-block
        // one only the first pass; more than one chunk long.
        let trace = (0..3 * CHUNK as u64).map(|i| i % 3);
        let specs = [
            RunSpec {
                policy: PolicyKind::Lru.into(),
                capacity: Capacity::Blocks(2),
            },
            RunSpec {
                policy: PolicyKind::Lru.into(),
                capacity: Capacity::Blocks(3),
            },
        ];
        let results = replay(ids(trace), &specs, |_| {}).unwrap();
        assert_eq!(results[0].tally.requests, 3 * CHUNK as u64);
        assert_eq!(results[0].tally.misses, 3 * CHUNK as u64);
        assert_eq!(results[1].tally.misses, 3);
    }

    #[test]
    fn intervals_cut_the_trace_at_every_multiple_and_sum_to_the_whole() {
        // 3 blocks in a loop, longer than two chunks: a 3-block LRU misses
        // in the first interval only, a 2-block one on every request.
        let total = 2 * CHUNK as u64 + 5;
        let trace = (0..total).map(|i| i % 3);
        let specs = [3, 2].map(|blocks| RunSpec {
            policy: PolicyKind::Lru.into(),
            capacity: Capacity::Blocks(blocks),
        });
        let mut seen: Vec<(u64, [Tally; 2])> = Vec::new();
        let results = replay_every(
            ids(trace),
            &specs,
            false,
            Some(Cut::Requests(1000)),
            |_| {},
            |end, t| seen.push((end.requests, [t[0], t[1]])),
        )
        .unwrap();
        let ends: Vec<u64> = seen.iter().map(|s| s.0).collect();
        let want: Vec<u64> = (1..=total / 1000)
            .map(|k| k * 1000)
            .chain([total])
            .collect();
        assert_eq!(ends, want);
        assert_eq!(seen[0].1[0].misses, 3);
        assert!(seen[1..].iter().all(|s| s.1[0].misses == 0));
        assert!(seen.iter().all(|s| s.1[1].misses == s.1[1].requests));
        assert_eq!(seen.last().unwrap().1[1].requests, total % 1000);
        for (k, result) in results.iter().enumerate() {
            let sum: u64 = seen.iter().map(|s| s.1[k].requests).sum();
            assert_eq!(sum, result.tally.requests);
        }
    }

    #[test]
    fn intervals_of_trace_time_cut_at_each_multiple_and_skip_empty_ones() {
        // One request a millisecond for 100 s (so intervals of 7 s are 7,000
        // requests, crossing the chunks' bounds), then nothing until 10
        // requests at 130 s: [105 s, 126 s) is empty and not reported, and
        // the last interval ends at 133 s, though its requests stop at 130.
        let times = (0..100_000).chain([130_000; 10]);
        let requests: Vec<_> = times
            .enumerate()
            .map(|(i, time)| {
                Ok(Request {
                    id: i as u64,
                    time,
                    ..Request::default()
                })
            })
            .collect();
        let spec = [RunSpec {
            policy: PolicyKind::Lru.into(),
            capacity: Capacity::Blocks(10),
        }];
        let cut = Cut::Time {
            every: 7_000,
            per_second: 1_000,
        };
        let mut seen: Vec<(IntervalEnd, Tally)> = Vec::new();
        let results = replay_every(
            Box::new(requests.into_iter()),
            &spec,
            false,
            Some(cut),
            |_| {},
            |end, t| seen.push((end, t[0])),
        )
        .unwrap();
        let ends: Vec<f64> = seen.iter().map(|s| s.0.time_s.unwrap()).collect();
        let want: Vec<f64> = (1..=15).map(|k| 7.0 * k as f64).chain([133.0]).collect();
        assert_eq!(ends, want);
        let reads: Vec<u64> = seen.iter().map(|s| s.1.requests).collect();
        let mut want = vec![7_000; 14];
        want.extend([2_000, 10]);
        assert_eq!(reads, want);
        assert_eq!(seen[13].0.requests, 98_000);
        assert_eq!(seen[15].0.requests, 100_010);
        // Every id is new: every read misses, in every interval.
        assert!(seen.iter().all(|s| s.1.misses == s.1.requests));
        assert_eq!(results[0].tally.requests, 100_010);
    }

    fn sized(requests: &[(u64, u32, Op)]) -> Requests {
        let requests: Vec<_> = requests
            .iter()
            .map(|&(id, size, op)| {
                Ok(Request {
                    id,
                    size,
                    op,
                    ..Request::default()
                })
            })
            .collect();
        Box::new(requests.into_iter())
    }

    #[test]
    fn a_byte_cache_holds_objects_of_their_sizes() {
        // 100 bytes of LRU: 1 (60 B) and 2 (30 B) fit, 3 (50 B) evicts 1,
        // 4 (200 B) is larger than the cache and left out, 0 B is skipped.
        let trace = [
            (1, 60, Op::Read),
            (2, 30, Op::Read),
            (3, 50, Op::Read),
            (4, 200, Op::Read),
            (2, 30, Op::Read),
            (1, 60, Op::Read),
            (5, 0, Op::Read),
        ];
        let spec = [RunSpec {
            policy: PolicyKind::Lru.into(),
            capacity: Capacity::Bytes(100),
        }];
        let r = replay(sized(&trace), &spec, |_| {}).unwrap()[0];
        let t = r.tally;
        assert_eq!((t.requests, t.misses, t.skipped), (6, 5, 1));
        assert_eq!((t.bytes, t.byte_misses), (430, 400));
        assert!((r.byte_miss_ratio() - 400.0 / 430.0).abs() < 1e-12);
    }

    #[test]
    fn writes_allocate_and_deletes_drop_without_counting_as_reads() {
        let trace = [
            (1, 10, Op::Write),
            (1, 10, Op::Read),
            (1, 0, Op::Delete),
            (1, 10, Op::Read),
        ];
        let spec = [RunSpec {
            policy: PolicyKind::Lru.into(),
            capacity: Capacity::Bytes(100),
        }];
        let t = replay(sized(&trace), &spec, |_| {}).unwrap()[0].tally;
        assert_eq!((t.requests, t.misses, t.writes, t.deletes), (2, 1, 1, 1));
    }

    #[test]
    fn a_trace_error_fails_the_replay() {
        let bad: Requests = Box::new(
            vec![
                Ok(Request::default()),
                Err(TraceError::Line {
                    path: "t".into(),
                    line: 2,
                    problem: "bad".into(),
                    expected: "good",
                }),
            ]
            .into_iter(),
        );
        let spec = [RunSpec {
            policy: PolicyKind::Fifo.into(),
            capacity: Capacity::Blocks(4),
        }];
        assert!(matches!(
            replay(bad, &spec, |_| {}),
            Err(ReplayError::Trace(_))
        ));
    }

    #[test]
    fn a_capacity_error_is_reported_before_reading() {
        let spec = [RunSpec {
            policy: PolicyKind::Lru.into(),
            capacity: Capacity::Blocks(0),
        }];
        assert!(matches!(
            replay(ids([1]), &spec, |_| {}),
            Err(ReplayError::Capacity(_))
        ));
    }
}
