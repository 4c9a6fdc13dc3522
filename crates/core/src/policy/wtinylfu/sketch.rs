//! W-TinyLFU's frequency sketch, as libCacheSim sizes and hashes it.
//!
//! libCacheSim sizes the sketch by the main cache's capacity in its own
//! units, so a cache measured in bytes gets about 14 counters per byte:
//! 1.36 billion 32-bit counters (5.4 GB of address space) for a 100 MiB
//! cache. Results must stay exactly libCacheSim's, and a key's counters
//! are its hashes modulo that count, so the count cannot change; what
//! changes is how the counters are held. Up to [`DENSE_MAX`] they are one
//! array; past it, only the counters some key touched are kept, in a map
//! (a replay touches at most `hashes` counters per distinct key, however
//! large the cache). Before this the sim tests' three W-TinyLFU replays in
//! bytes touched 1.2-3.5 GB each and spent 45 s in the kernel for 7 s of
//! their own work.

use hashbrown::HashMap;

/// The most counters held as one array: 4 Mi counters, 16 MiB.
const DENSE_MAX: u32 = 1 << 22;

/// The counters, all of them or the nonzero ones by slot. Each operation
/// matches on this once, outside its loops over a key's slots: a match per
/// slot made `victim` twice as slow.
#[derive(Clone, Debug)]
enum Counters {
    Dense(Vec<u32>),
    Sparse(SparseMap),
}

type SparseMap = HashMap<u32, u32, foldhash::fast::FixedState>;

/// libCacheSim's `minimalIncrementCBF`: a counting Bloom filter sized for
/// the main cache's capacity at a 0.1% error, each key hashed with XXH64
/// under two seeds and double hashing. Despite its name it increments all
/// of a key's counters (libCacheSim's minimal-increment test guards only a
/// debug print); an estimate is the smallest of them.
#[derive(Clone, Debug)]
pub(super) struct Sketch {
    counters: Counters,
    /// How many counters libCacheSim's sizing gives (held or not).
    len: u32,
    hashes: u32,
}

const SEED0: u64 = 0x1234_5678;
const SEED1: u64 = 0x1234_4321;

/// XXH64 of the 8 little-endian bytes of `v` (xxHash's 64-bit hash,
/// specialised to one 8-byte lane), as libCacheSim hashes an object id.
fn xxh64_u64(v: u64, seed: u64) -> u64 {
    const P1: u64 = 0x9E37_79B1_85EB_CA87;
    const P2: u64 = 0xC2B2_AE3D_27D4_EB4F;
    const P3: u64 = 0x1656_67B1_9E37_79F9;
    const P4: u64 = 0x85EB_CA77_C2B2_AE63;
    const P5: u64 = 0x27D4_EB2F_1656_67C5;
    let mut h = seed.wrapping_add(P5).wrapping_add(8);
    let k = v.wrapping_mul(P2).rotate_left(31).wrapping_mul(P1);
    h ^= k;
    h = h.rotate_left(27).wrapping_mul(P1).wrapping_add(P4);
    h ^= h >> 33;
    h = h.wrapping_mul(P2);
    h ^= h >> 29;
    h = h.wrapping_mul(P3);
    h ^ (h >> 32)
}

impl Sketch {
    /// libCacheSim's `minimalIncrementCBF_init(entries, 0.001)`, with its
    /// truncated literals for ln 2 and ln^2 2 (not `LN_2`), so the sizes
    /// come out the same.
    #[allow(clippy::approx_constant)]
    pub(super) fn new(entries: u64) -> Self {
        let bpe = -(0.001f64.ln()) / 0.480_453_013_918_201;
        let hashes = (0.693_147_180_559_945 * bpe).ceil() as u32;
        // libCacheSim passes the entries as a C int.
        let entries = entries.min(i32::MAX as u64) as f64;
        let mut n = (bpe * entries).ceil().min(i32::MAX as f64) as u32;
        if n < hashes {
            n = hashes * 2;
        }
        let counters = if n <= DENSE_MAX {
            Counters::Dense(vec![0; n as usize])
        } else {
            Counters::Sparse(HashMap::default())
        };
        Sketch {
            counters,
            len: n,
            hashes,
        }
    }

    /// The counters of the object id `id` among `n` (the array's own
    /// length when it is held, so indexing it needs no bounds check), as
    /// libCacheSim computes them (in 32-bit arithmetic).
    #[inline]
    fn slots(&self, id: u64, n: u32) -> impl Iterator<Item = u32> + use<> {
        let a = xxh64_u64(id, SEED0) as u32;
        let b = xxh64_u64(id, SEED1) as u32;
        (0..self.hashes).map(move |i| a.wrapping_add(i.wrapping_mul(b)) % n)
    }

    #[inline]
    pub(super) fn estimate(&self, id: u64) -> u32 {
        match &self.counters {
            Counters::Dense(c) => self.slots(id, c.len() as u32).map(|x| c[x as usize]).min(),
            Counters::Sparse(m) => return self.sparse_estimate(m, id, &[]),
        }
        .unwrap_or(0)
    }

    /// The sparse counters' estimate, kept out of line so the array's
    /// path stays small (what is left of its cost: docs/benchmarks.md, "A
    /// sketch sized in bytes").
    #[inline(never)]
    fn sparse_estimate(&self, m: &SparseMap, id: u64, pending: &[u64]) -> u32 {
        self.estimate_by(id, pending, self.len, |x| m.get(&x).copied().unwrap_or(0))
    }

    /// Adds one to each of `slots`, out of line as [`Self::sparse_estimate`].
    #[inline(never)]
    fn sparse_add(m: &mut SparseMap, slots: impl Iterator<Item = u32>) {
        slots.for_each(|x| *m.entry(x).or_insert(0) += 1);
    }

    /// The estimate of `id` once the ids in `pending` are added too.
    #[inline]
    pub(super) fn estimate_with(&self, id: u64, pending: &[u64]) -> u32 {
        match &self.counters {
            Counters::Dense(c) => self.estimate_by(id, pending, c.len() as u32, |x| c[x as usize]),
            Counters::Sparse(m) => self.sparse_estimate(m, id, pending),
        }
    }

    #[inline]
    fn estimate_by(&self, id: u64, pending: &[u64], n: u32, get: impl Fn(u32) -> u32) -> u32 {
        self.slots(id, n)
            .map(|x| {
                let extra = pending
                    .iter()
                    .flat_map(|&p| self.slots(p, n))
                    .filter(|&y| y == x)
                    .count() as u32;
                get(x) + extra
            })
            .min()
            .unwrap_or(0)
    }

    #[inline]
    pub(super) fn add(&mut self, id: u64) {
        if self.estimate(id) == u32::MAX {
            return;
        }
        let n = self.len;
        let slots = self.slots(id, n);
        match &mut self.counters {
            Counters::Dense(c) => slots.for_each(|x| c[x as usize] += 1),
            Counters::Sparse(m) => Self::sparse_add(m, slots),
        }
    }

    /// Halves every counter: the sketch's aging.
    pub(super) fn decay(&mut self) {
        match &mut self.counters {
            Counters::Dense(c) => c.iter_mut().for_each(|c| *c >>= 1),
            Counters::Sparse(m) => m.retain(|_, c| {
                *c >>= 1;
                *c > 0
            }),
        }
    }

    /// The memory the counters take.
    pub(super) fn bytes(&self) -> usize {
        match &self.counters {
            Counters::Dense(c) => c.capacity() * 4,
            // A slot, a count and hashbrown's control byte per bucket.
            Counters::Sparse(m) => m.capacity() * 9,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xxHash's published XXH64 of the 8 bytes 0..8 under seed 0 is not at
    /// hand; check instead the properties the sketch relies on.
    #[test]
    fn xxh64_is_seeded_and_spreads() {
        assert_ne!(xxh64_u64(1, SEED0), xxh64_u64(1, SEED1));
        assert_ne!(xxh64_u64(1, SEED0), xxh64_u64(2, SEED0));
    }

    #[test]
    fn sketch_counts_and_decays() {
        let mut s = Sketch::new(1000);
        assert_eq!(s.hashes, 10);
        for _ in 0..4 {
            s.add(7);
        }
        assert!(s.estimate(7) >= 4);
        assert_eq!(s.estimate_with(7, &[7, 7]), s.estimate(7) + 2);
        s.decay();
        assert!(s.estimate(7) >= 2);
    }

    /// The map holds exactly what the array would: the same estimates
    /// through adds and decays, for a size either way could hold.
    #[test]
    fn sparse_counters_answer_as_the_array_does() {
        let mut dense = Sketch::new(1000);
        assert!(matches!(dense.counters, Counters::Dense(_)));
        let mut sparse = Sketch {
            counters: Counters::Sparse(HashMap::default()),
            ..dense.clone()
        };
        let mut x = 7u64;
        for step in 0..20_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let id = (x >> 40) % 3000;
            dense.add(id);
            sparse.add(id);
            if step % 4999 == 0 {
                dense.decay();
                sparse.decay();
            }
            let probe = (x >> 20) % 3000;
            assert_eq!(dense.estimate(probe), sparse.estimate(probe), "{step}");
            assert_eq!(
                dense.estimate_with(probe, &[id, id + 1]),
                sparse.estimate_with(probe, &[id, id + 1])
            );
        }
    }

    /// A cache of 100 MiB in bytes sizes 1.36 billion counters, as
    /// libCacheSim does, and holds only those its keys touched.
    #[test]
    fn a_sketch_sized_for_bytes_holds_only_touched_counters() {
        let mut s = Sketch::new(100 << 20);
        assert!(s.len > 1_000_000_000, "{}", s.len);
        for id in 0..10_000 {
            s.add(id);
        }
        assert!(s.bytes() < 10_000 * 10 * 16, "{} bytes", s.bytes());
        assert_eq!(s.estimate(5), 1);
    }
}
