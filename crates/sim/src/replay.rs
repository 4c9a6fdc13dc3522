//! Replaying a trace through several caches at once.
//!
//! The trace is read once, on its own thread, in chunks of block ids; every
//! cache under test consumes each chunk, spread over all cores. Memory stays
//! bounded by a few chunks whatever the trace's length, decompression and
//! parsing overlap the simulation, and each cache's time counts only its
//! own request loop.

use crate::chunks::for_each_chunk;
use crate::error::TraceError;
use crate::trace::{Op, Request, Requests};
use coopcache_core::CapacityError;
use coopcache_core::policy::{BLOCK, Capacity, Policy, PolicyKind, PolicyVisitor, access};
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
    /// The replacement policy.
    pub policy: PolicyKind,
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
    /// Bytes the reads asked for (each read's size).
    pub bytes: u64,
    /// Bytes of the reads that missed.
    pub byte_misses: u64,
    /// Writes: write-allocate, each caches its object as a read would.
    pub writes: u64,
    /// Deletes: each drops its object if cached.
    pub deletes: u64,
    /// Reads and writes of size 0 left out of a byte cache.
    pub skipped: u64,
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
        ratio(self.tally.misses, self.tally.requests)
    }

    /// Bytes missed over bytes read (0 if nothing was read).
    pub fn byte_miss_ratio(&self) -> f64 {
        ratio(self.tally.byte_misses, self.tally.bytes)
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

/// One request as a replay sees it: the object, its size in bytes, and
/// what is done to it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Item {
    /// The object (block) id.
    pub id: u64,
    /// Its size in bytes where the trace gives one, else 0 (a block cache
    /// does not look at it).
    pub size: u32,
    /// Read, write or delete.
    pub op: Op,
}

impl From<&Request> for Item {
    fn from(r: &Request) -> Self {
        Item {
            id: r.id,
            size: r.size,
            op: r.op,
        }
    }
}

/// A cache being fed chunks of requests; boxed so one list holds every
/// policy, with dynamic dispatch once per chunk rather than per request.
trait Run: Send {
    fn feed(&mut self, items: &[Item]);
    fn result(&self) -> RunResult;
}

struct PolicyRun<P> {
    policy: P,
    spec: RunSpec,
    tally: Tally,
    elapsed: Duration,
}

impl<P: Policy<u64> + Send> Run for PolicyRun<P> {
    fn feed(&mut self, items: &[Item]) {
        let start = Instant::now();
        let bytes = matches!(self.spec.capacity, Capacity::Bytes(_));
        replay_items(&mut self.policy, items, bytes, &mut self.tally);
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

/// The request loop of a replay: every request through `policy`, counted in
/// `tally`. `bytes` says the cache is sized in bytes, so each object takes
/// its size (and size-0 requests are skipped); otherwise each is one block.
/// Allocation-free once the cache is full.
///
/// Reads go through [`access`]. Writes are write-allocate: they go through
/// [`access`] too (a cached object is referenced, a missing one cached) but
/// are counted as writes, not as read hits or misses. Deletes drop the
/// object.
#[inline]
pub fn replay_items<P: Policy<u64>>(
    policy: &mut P,
    items: &[Item],
    bytes: bool,
    tally: &mut Tally,
) {
    let mut t = *tally;
    for item in items {
        if item.op == Op::Delete {
            t.deletes += 1;
            policy.remove(item.id);
            continue;
        }
        let size = match (bytes, item.size) {
            (false, _) => BLOCK,
            (true, 0) => {
                t.skipped += 1;
                continue;
            }
            (true, size) => size,
        };
        let hit = access(policy, item.id, size, |_| {});
        if item.op == Op::Write {
            t.writes += 1;
        } else {
            t.requests += 1;
            t.bytes += u64::from(item.size);
            if !hit {
                t.misses += 1;
                t.byte_misses += u64::from(item.size);
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
        Box::new(PolicyRun {
            policy,
            spec: self.0,
            tally: Tally::default(),
            elapsed: Duration::ZERO,
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
/// chunk with the number of requests replayed so far (for progress).
pub fn replay(
    requests: Requests,
    specs: &[RunSpec],
    mut on_chunk: impl FnMut(u64),
) -> Result<Vec<RunResult>, ReplayError> {
    let mut runs = specs
        .iter()
        .map(|&spec| spec.policy.build(spec.capacity, BoxRun(spec)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut replayed = 0u64;
    for_each_chunk(
        requests,
        |r: &Request| Item::from(r),
        |items: &[Item]| {
            runs.par_iter_mut().for_each(|run| run.feed(items));
            replayed += items.len() as u64;
            on_chunk(replayed);
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
                policy: PolicyKind::Lru,
                capacity: Capacity::Blocks(2),
            },
            RunSpec {
                policy: PolicyKind::Lru,
                capacity: Capacity::Blocks(3),
            },
        ];
        let results = replay(ids(trace), &specs, |_| {}).unwrap();
        assert_eq!(results[0].tally.requests, 3 * CHUNK as u64);
        assert_eq!(results[0].tally.misses, 3 * CHUNK as u64);
        assert_eq!(results[1].tally.misses, 3);
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
            policy: PolicyKind::Lru,
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
            policy: PolicyKind::Lru,
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
            policy: PolicyKind::Fifo,
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
            policy: PolicyKind::Lru,
            capacity: Capacity::Blocks(0),
        }];
        assert!(matches!(
            replay(ids([1]), &spec, |_| {}),
            Err(ReplayError::Capacity(_))
        ));
    }
}
