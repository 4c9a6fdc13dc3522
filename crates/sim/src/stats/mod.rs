//! What a trace looks like to a cache: its requests, objects and bytes,
//! working set, object sizes, reuse distances and times, popularity with a
//! fitted Zipf exponent, one-hit wonders and request rate over time, from
//! one streaming pass ([`TraceStats::of`]).
//!
//! Reuse distances come from the same LRU stack as the miss-ratio curves
//! ([`crate::mrc::LruStack`]): a reference's distance is the number of
//! distinct other objects referenced since its object's previous
//! reference, so an LRU cache of `C` objects hits it iff the distance is
//! below `C`. Reads and writes reference their object; a delete takes it
//! off the stack, so its next reference counts as cold. Memory grows with
//! the distinct objects (a map entry each) and the requests (the stack's
//! Fenwick tree, 8 bytes a request).

mod hist;
mod rate;
mod zipf;

pub use hist::{Bucket, Log2Histogram};
pub use rate::RequestRate;
pub use zipf::ZipfFit;

use crate::chunks::for_each_chunk;
use crate::error::TraceError;
use crate::mrc::LruStack;
use crate::trace::{Op, Request, Requests};
use foldhash::fast::FixedState;
use serde::Serialize;
use std::collections::HashMap;

/// Objects listed in [`TraceStats::top`].
pub const TOP: usize = 10;

/// Requests counted by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OpCounts {
    /// Every request.
    pub requests: u64,
    /// Reads.
    pub reads: u64,
    /// Writes.
    pub writes: u64,
    /// Deletes.
    pub deletes: u64,
}

/// The distribution of the objects' sizes (each object once, at the size
/// of its first request).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SizeStats {
    /// Smallest size.
    pub min: u32,
    /// Percentiles 10, 25, 50, 75, 90, 99 (nearest rank).
    pub percentiles: Vec<Percentile>,
    /// Largest size.
    pub max: u32,
    /// Mean size.
    pub mean: f64,
    /// Objects by size, power-of-two buckets.
    pub histogram: Vec<Bucket>,
    /// Every object's size, ascending, for a CDF (not serialised).
    #[serde(skip)]
    pub sorted: Vec<u32>,
}

/// A percentile of the object sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Percentile {
    /// Which percentile (50 for the median).
    pub percent: u8,
    /// The smallest size with at least `percent`% of objects at or below it.
    pub size: u32,
}

/// One of the most requested objects.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Popular {
    /// Its id.
    pub id: u64,
    /// Its requests.
    pub requests: u64,
    /// Their fraction of all requests.
    pub fraction: f64,
}

/// Everything `coopcache trace stats` reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceStats {
    /// Requests by kind.
    pub ops: OpCounts,
    /// Distinct objects referenced (the working set's objects).
    pub objects: u64,
    /// Bytes of all requests (0 without sizes).
    pub bytes_requested: u64,
    /// Bytes of the distinct objects, each at its first size.
    pub working_set_bytes: u64,
    /// Whether requests carry sizes (else the size figures are 0).
    pub sized: bool,
    /// Object sizes (`None` without sizes or objects).
    pub sizes: Option<SizeStats>,
    /// References by reuse distance (distinct objects in between).
    pub reuse_distance: Vec<Bucket>,
    /// References with no previous one on the stack: first references,
    /// and first ones after a delete.
    pub cold: u64,
    /// References by reuse time (trace time since the object's previous
    /// reference, in the trace's unit).
    pub reuse_time: Vec<Bucket>,
    /// The most requested objects, most first.
    pub top: Vec<Popular>,
    /// Zipf fit of the popularity ranking (`None` below two objects).
    pub zipf: Option<ZipfFit>,
    /// Objects requested exactly once.
    pub one_hit_wonders: u64,
    /// Their fraction of the objects.
    pub one_hit_wonder_ratio: f64,
    /// Requests per time bucket.
    pub rate: RequestRate,
    /// Every object's request count, most first, for a popularity plot
    /// (not serialised).
    #[serde(skip)]
    pub frequencies: Vec<u64>,
}

/// What is kept per object during the pass.
#[derive(Clone, Copy, Debug)]
struct Object {
    requests: u64,
    size: u32,
    last_time: u64,
}

/// One pass in progress.
struct StatsPass {
    sized: bool,
    ops: OpCounts,
    bytes: u64,
    objects: HashMap<u64, Object, FixedState>,
    stack: LruStack,
    distance: Log2Histogram,
    cold: u64,
    reuse_time: Log2Histogram,
    rate: RequestRate,
}

impl StatsPass {
    fn new(sized: bool) -> Self {
        StatsPass {
            sized,
            ops: OpCounts::default(),
            bytes: 0,
            objects: HashMap::default(),
            stack: LruStack::new(false),
            distance: Log2Histogram::default(),
            cold: 0,
            reuse_time: Log2Histogram::default(),
            rate: RequestRate::default(),
        }
    }

    fn push(&mut self, r: &Request) {
        self.ops.requests += 1;
        match r.op {
            Op::Read => self.ops.reads += 1,
            Op::Write => self.ops.writes += 1,
            Op::Delete => self.ops.deletes += 1,
        }
        self.bytes += u64::from(r.size);
        self.rate.add(r.time);
        let object = self.objects.entry(r.id).or_insert(Object {
            requests: 0,
            size: r.size,
            last_time: r.time,
        });
        if object.requests > 0 {
            // Traces out of time order (composed ones) give no negative times.
            self.reuse_time.add(r.time.saturating_sub(object.last_time));
        }
        object.requests += 1;
        object.last_time = r.time;
        if r.op == Op::Delete {
            self.stack.remove(r.id);
            return;
        }
        match self.stack.reference(r.id, 0).0 {
            Some((reuse, _)) => self.distance.add(reuse.objects),
            None => self.cold += 1,
        }
    }

    fn finish(self) -> TraceStats {
        let n = self.objects.len() as u64;
        let mut ranked: Vec<(u64, u64)> = self
            .objects
            .iter()
            .map(|(&id, o)| (o.requests, id))
            .collect();
        // Most requested first; ties by id, so the listing is stable.
        ranked.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let frequencies: Vec<u64> = ranked.iter().map(|&(f, _)| f).collect();
        let total = self.ops.requests.max(1) as f64;
        let top = ranked
            .iter()
            .take(TOP)
            .map(|&(requests, id)| Popular {
                id,
                requests,
                fraction: requests as f64 / total,
            })
            .collect();
        let one_hit_wonders = frequencies.iter().filter(|&&f| f == 1).count() as u64;
        let working_set_bytes = self.objects.values().map(|o| u64::from(o.size)).sum();
        let sizes = self
            .sized
            .then(|| size_stats(self.objects.values().map(|o| o.size).collect()))
            .flatten();
        TraceStats {
            ops: self.ops,
            objects: n,
            bytes_requested: self.bytes,
            working_set_bytes,
            sized: self.sized,
            sizes,
            reuse_distance: self.distance.buckets(),
            cold: self.cold,
            reuse_time: self.reuse_time.buckets(),
            top,
            zipf: ZipfFit::of(&frequencies),
            one_hit_wonders,
            one_hit_wonder_ratio: if n == 0 {
                0.0
            } else {
                one_hit_wonders as f64 / n as f64
            },
            rate: self.rate,
            frequencies,
        }
    }
}

/// The distribution of `sizes`; `None` if there are none.
fn size_stats(mut sizes: Vec<u32>) -> Option<SizeStats> {
    sizes.sort_unstable();
    let (&min, &max) = (sizes.first()?, sizes.last()?);
    let n = sizes.len();
    // Nearest rank: the smallest size with at least p% of objects at or below.
    let percentile = |p: u8| sizes[(usize::from(p) * n).div_ceil(100).clamp(1, n) - 1];
    let mut histogram = Log2Histogram::default();
    for &s in &sizes {
        histogram.add(u64::from(s));
    }
    Some(SizeStats {
        min,
        percentiles: [10, 25, 50, 75, 90, 99]
            .into_iter()
            .map(|p| Percentile {
                percent: p,
                size: percentile(p),
            })
            .collect(),
        max,
        mean: sizes.iter().map(|&s| s as f64).sum::<f64>() / n as f64,
        histogram: histogram.buckets(),
        sorted: sizes,
    })
}

impl TraceStats {
    /// The statistics of `requests`; `sized` if they carry object sizes.
    /// `on_chunk` is told the requests read so far.
    pub fn of(
        requests: Requests,
        sized: bool,
        mut on_chunk: impl FnMut(u64),
    ) -> Result<TraceStats, TraceError> {
        let mut pass = StatsPass::new(sized);
        let mut read = 0u64;
        for_each_chunk(
            requests,
            || Vec::with_capacity(crate::chunks::CHUNK),
            |chunk: &Vec<Request>| {
                for r in chunk {
                    pass.push(r);
                }
                read += chunk.len() as u64;
                on_chunk(read);
                Ok::<(), TraceError>(())
            },
        )?;
        Ok(pass.finish())
    }

    /// The statistics of requests already in memory (tests, small traces).
    pub fn of_slice(requests: &[Request], sized: bool) -> TraceStats {
        let mut pass = StatsPass::new(sized);
        for r in requests {
            pass.push(r);
        }
        pass.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(id: u64, time: u64, size: u32, op: Op) -> Request {
        Request {
            id,
            time,
            size,
            op,
            ..Request::default()
        }
    }

    #[test]
    fn a_small_trace_by_hand() {
        // a b c b a a, then a write of c and a delete of b.
        let trace = [
            req(1, 0, 10, Op::Read),
            req(2, 1, 20, Op::Read),
            req(3, 2, 30, Op::Read),
            req(2, 3, 20, Op::Read),
            req(1, 4, 10, Op::Read),
            req(1, 6, 10, Op::Read),
            req(3, 7, 30, Op::Write),
            req(2, 9, 20, Op::Delete),
        ];
        let s = TraceStats::of_slice(&trace, true);
        assert_eq!(
            s.ops,
            OpCounts {
                requests: 8,
                reads: 6,
                writes: 1,
                deletes: 1
            }
        );
        assert_eq!((s.objects, s.working_set_bytes), (3, 60));
        assert_eq!(s.bytes_requested, 150);
        assert_eq!(s.cold, 3);
        // Distances: b after c (1), a after c, b (2), a after nothing (0),
        // c after b, a (2).
        let d: Vec<(u64, u64)> = s.reuse_distance.iter().map(|b| (b.lo, b.count)).collect();
        assert_eq!(d, [(0, 1), (1, 1), (2, 2)]);
        // Reuse times: b 2, a 4, a 2, c 5, b 6.
        let t: Vec<(u64, u64)> = s.reuse_time.iter().map(|b| (b.lo, b.count)).collect();
        assert_eq!(t, [(2, 2), (4, 3)]);
        assert_eq!(s.frequencies, [3, 3, 2]);
        assert_eq!(s.top[0].id, 1);
        assert_eq!(s.one_hit_wonders, 0);
        let sizes = s.sizes.unwrap();
        assert_eq!((sizes.min, sizes.max), (10, 30));
        assert_eq!(sizes.percentiles[2].size, 20);
    }
}
