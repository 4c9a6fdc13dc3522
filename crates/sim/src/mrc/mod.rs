//! Miss-ratio curves of LRU from one pass of stack distances (Mattson et
//! al., 1970), exact or sampled with SHARDS (Waldspurger et al., FAST'15).
//!
//! One pass over a trace gives an LRU cache's misses at every size:
//!
//! - **in objects** ([`CurveUnit::Objects`], a [`Capacity::Blocks`] cache):
//!   a read hits a cache of `C` objects iff fewer than `C` other distinct
//!   objects were referenced since its object's previous reference. This
//!   is exactly the simulator's LRU at every size.
//! - **in bytes** ([`CurveUnit::Bytes`], a [`Capacity::Bytes`] cache): a
//!   read hits a cache of `C` bytes iff the bytes of the distinct objects
//!   referenced since its previous reference, plus its own, are at most
//!   `C`; the curve gives both the object and the byte miss ratio.
//!
//! # Where the byte curve is exact
//!
//! The byte LRU of the simulator (and libCacheSim) evicts from the tail
//! until a missing object fits and inserts it at the head. That keeps the
//! cache equal to the longest prefix of the recency stack that fits in
//! `C` bytes, which is what the pass computes, with two exceptions:
//!
//! 1. **An object larger than the cache** is not admitted: the real cache
//!    keeps its contents, while on the stack the object sits on top and
//!    pushes everything below past `C`. The pass so computes an LRU whose
//!    too-large objects *flush* the cache; it equals the simulator's LRU
//!    at every `C` no smaller than the largest request
//!    ([`LruCurve::exact_from`]); below that it may count more misses.
//! 2. **An object whose size changes**: a cached object keeps the size
//!    it was cached with, and an object on the stack the size of its first
//!    reference since it came on the stack. Where a smaller cache missed
//!    and re-cached it at its new size, the two differ. Traces where an
//!    object keeps one size are unaffected; on the Tencent photo sample,
//!    which asks for a photo at several sizes, both miss ratios stay
//!    within 0.0004 of LRU's (`tests/lru_curve.rs`).
//!
//! Deletes take an object off the stack, which is not what a cache does
//! (it holds one object less, where the stack's prefix grows to the next
//! object): curves of traces with deletes are estimates, in both units.
//! Writes reference their object as reads do (write-allocate) and are not
//! counted; requests of size 0 are left out of byte curves, as byte
//! replays leave them out.
//!
//! # Sampling
//!
//! SHARDS keeps the references to objects whose id hashes below a
//! threshold, a fixed fraction `R` of the objects, and scales every
//! distance by `1/R`; its error against the exact curve on the shared
//! traces is in `docs/benchmarks.md`.
//!
//! [`Capacity::Blocks`]: coopcache_core::Capacity::Blocks
//! [`Capacity::Bytes`]: coopcache_core::Capacity::Bytes

mod curves;
mod shards;
mod stack;

pub use curves::{
    CurveError, CurveRow, CurveSpec, Curves, DEFAULT_SIZES, SizePoint, curves, parse_sizes,
};
pub use shards::Shards;
pub use stack::{LruStack, Reuse};

use crate::chunks::for_each_chunk;
use crate::error::TraceError;
use crate::trace::{Op, Request, Requests};

/// The unit of a curve's cache sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CurveUnit {
    /// Caches of so many objects (blocks), each of size 1.
    Objects,
    /// Caches of so many bytes, each object at its size.
    Bytes,
}

/// An LRU cache's figures at one size, from a curve.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CurvePoint {
    /// The cache size, in the curve's unit.
    pub capacity: u64,
    /// Reads that miss (estimated, for a sampled curve).
    pub misses: u64,
    /// Their bytes (0 where the trace has no sizes).
    pub byte_misses: u64,
    /// Read misses over reads.
    pub miss_ratio: f64,
    /// Missed bytes over bytes read (the miss ratio without sizes).
    pub byte_miss_ratio: f64,
}

/// The LRU miss-ratio curve of a trace: its misses at every cache size.
#[derive(Clone, Debug)]
pub struct LruCurve {
    unit: CurveUnit,
    /// The fraction of objects sampled (1 for an exact curve).
    rate: f64,
    /// Every read of the trace, and their bytes (sampled or not).
    reads: u64,
    read_bytes: u64,
    /// Sampled reads by the size at which they start to hit (ascending,
    /// `u64::MAX` for first references), with the number and bytes of the
    /// reads needing this size or more.
    needs: Vec<u64>,
    misses_from: Vec<u64>,
    bytes_from: Vec<u64>,
    /// Distinct objects, and their bytes (scaled up when sampled).
    objects: u64,
    object_bytes: u64,
    largest: u32,
    skipped: u64,
}

impl LruCurve {
    /// The curve of `requests` in `unit`: exact, or sampled by `shards`.
    /// `sized` if requests carry sizes (their bytes are then counted, and
    /// a byte curve needs them). `on_chunk` is told the requests read so
    /// far.
    pub fn of(
        requests: Requests,
        unit: CurveUnit,
        sized: bool,
        shards: Option<Shards>,
        mut on_chunk: impl FnMut(u64),
    ) -> Result<LruCurve, TraceError> {
        let mut pass = CurvePass::new(unit, sized, shards);
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

    /// The unit of the curve's sizes.
    pub fn unit(&self) -> CurveUnit {
        self.unit
    }

    /// The fraction of objects sampled: 1 for an exact curve.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Reads in the trace.
    pub fn reads(&self) -> u64 {
        self.reads
    }

    /// Requests of size 0 left out of a byte curve.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// The working set: distinct objects at the end of the trace, and
    /// their bytes (their count for an object curve); estimates when
    /// sampled.
    pub fn working_set(&self) -> (u64, u64) {
        (self.objects, self.object_bytes)
    }

    /// The smallest byte size from which the byte curve is the
    /// simulator's LRU exactly (no request is larger): the largest request
    /// size; 1 for an object curve.
    pub fn exact_from(&self) -> u64 {
        match self.unit {
            CurveUnit::Objects => 1,
            CurveUnit::Bytes => u64::from(self.largest).max(1),
        }
    }

    /// An LRU cache of `capacity` (in the curve's unit) on the trace.
    pub fn point(&self, capacity: u64) -> CurvePoint {
        // A sampled reuse needing `n` stands for one needing `n / R`.
        let threshold = if self.rate >= 1.0 {
            capacity
        } else {
            (capacity as f64 * self.rate).floor() as u64
        };
        let i = self.needs.partition_point(|&n| n <= threshold);
        let sampled_misses = self.misses_from.get(i).copied().unwrap_or(0);
        let sampled_bytes = self.bytes_from.get(i).copied().unwrap_or(0);
        // SHARDS_adj: over the reads expected in the sample (R times all),
        // not those sampled, so a sample with too many or too few reads
        // does not tilt every point.
        let ratio = |part: u64, whole: u64| {
            if whole == 0 {
                0.0
            } else {
                (part as f64 / (whole as f64 * self.rate)).min(1.0)
            }
        };
        let miss_ratio = ratio(sampled_misses, self.reads);
        let byte_miss_ratio = if self.read_bytes == 0 {
            miss_ratio
        } else {
            ratio(sampled_bytes, self.read_bytes)
        };
        let exact = self.rate >= 1.0;
        CurvePoint {
            capacity,
            misses: if exact {
                sampled_misses
            } else {
                (miss_ratio * self.reads as f64).round() as u64
            },
            byte_misses: if exact {
                sampled_bytes
            } else {
                (byte_miss_ratio * self.read_bytes as f64).round() as u64
            },
            miss_ratio,
            byte_miss_ratio,
        }
    }
}

/// One pass in progress.
struct CurvePass {
    unit: CurveUnit,
    sized: bool,
    shards: Option<Shards>,
    stack: LruStack,
    /// Per sampled read of a byte curve: the size from which it hits, and
    /// its bytes (sorted at the end: byte needs have no useful bound).
    needs: Vec<(u64, u32)>,
    /// An object curve's reads by the size from which they hit: at `n`,
    /// how many reads need `n` objects and their bytes. `n` is at most the
    /// objects on the stack plus one, so this stays within the objects,
    /// where a list per read would grow with the trace (85 MB on w106,
    /// and a sort that took 7% of the pass).
    by_need: Vec<(u64, u64)>,
    /// Reads of objects not on the stack (needing more than any cache).
    cold: (u64, u64),
    reads: u64,
    read_bytes: u64,
    largest: u32,
    skipped: u64,
}

impl CurvePass {
    fn new(unit: CurveUnit, sized: bool, shards: Option<Shards>) -> Self {
        CurvePass {
            unit,
            sized,
            shards,
            stack: LruStack::new(unit == CurveUnit::Bytes),
            needs: Vec::new(),
            by_need: Vec::new(),
            cold: (0, 0),
            reads: 0,
            read_bytes: 0,
            largest: 0,
            skipped: 0,
        }
    }

    fn push(&mut self, r: &Request) {
        let bytes = self.unit == CurveUnit::Bytes;
        if r.op != Op::Delete && bytes && r.size == 0 {
            self.skipped += 1;
            return;
        }
        if r.op == Op::Read {
            self.reads += 1;
            self.read_bytes += u64::from(r.size);
        }
        if self.shards.is_some_and(|s| !s.samples(r.id)) {
            return;
        }
        if r.op == Op::Delete {
            self.stack.remove(r.id);
            return;
        }
        self.largest = self.largest.max(r.size);
        let (reuse, _) = self.stack.reference(r.id, r.size);
        if r.op == Op::Read {
            let size = if self.sized { r.size } else { 0 };
            match reuse {
                None => {
                    self.cold.0 += 1;
                    self.cold.1 += u64::from(size);
                }
                Some((reuse, _)) if !bytes => {
                    let need = reuse.objects as usize + 1;
                    if need >= self.by_need.len() {
                        let len = (need + 1).max(2 * self.by_need.len());
                        self.by_need.resize(len, (0, 0));
                    }
                    let slot = &mut self.by_need[need];
                    slot.0 += 1;
                    slot.1 += u64::from(size);
                }
                // Its bytes on the stack, on top of what came since.
                Some((reuse, weight)) => {
                    self.needs.push((reuse.bytes + u64::from(weight), size));
                }
            }
        }
    }

    fn finish(mut self) -> LruCurve {
        // Distinct needs in increasing order with their reads and bytes;
        // cold reads need more than any cache (u64::MAX).
        let mut needs = Vec::new();
        let mut counts: Vec<(u64, u64)> = Vec::new();
        self.needs.sort_unstable_by_key(|&(need, _)| need);
        for &(need, size) in &self.needs {
            if needs.last() != Some(&need) {
                needs.push(need);
                counts.push((0, 0));
            }
            let c = counts.last_mut().expect("pushed with its need");
            c.0 += 1;
            c.1 += u64::from(size);
        }
        for (need, &count) in self.by_need.iter().enumerate() {
            if count.0 > 0 {
                needs.push(need as u64);
                counts.push(count);
            }
        }
        if self.cold.0 > 0 {
            needs.push(u64::MAX);
            counts.push(self.cold);
        }
        // Suffix sums: the reads needing `needs[i]` or more.
        let (mut misses_from, mut bytes_from) = (vec![0; needs.len()], vec![0; needs.len()]);
        let (mut m, mut b) = (0u64, 0u64);
        for i in (0..needs.len()).rev() {
            m += counts[i].0;
            b += counts[i].1;
            misses_from[i] = m;
            bytes_from[i] = b;
        }
        let rate = self.shards.map_or(1.0, |s| s.rate());
        let scale = |x: u64| (x as f64 / rate).round() as u64;
        LruCurve {
            unit: self.unit,
            rate,
            reads: self.reads,
            read_bytes: if self.sized { self.read_bytes } else { 0 },
            needs,
            misses_from,
            bytes_from,
            objects: scale(self.stack.objects()),
            object_bytes: scale(self.stack.bytes()),
            largest: self.largest,
            skipped: self.skipped,
        }
    }
}
