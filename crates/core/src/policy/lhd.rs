//! LHD: evict the sampled block of least hit density.

use super::knobs::{Knob, KnobUnit, Knobs};
use super::lehmer::{LIBCACHESIM_SEED, Lehmer64};
use super::lhd_model::{HitDensity, MAX_AGE};
use super::param_error::ParamError;
use super::random::SEED_KNOB;
use super::{BlockKey, Capacity, Lookup, Policy, Weight, check_capacity};
use crate::error::CapacityError;
use crate::index::Index;
use crate::list::{Idx, List, Slab};

/// LHD's parameters, libCacheSim's by [`Default`] (which it does not let
/// a user change: `LHD_init` takes no parameters, and the 0.3.5 wheel
/// ignores any it is given), and its knobs, `lhd(samples=64,admissions=4)`:
/// the two constants libCacheSim passes its LHD (`associativity`,
/// `admissionSamples`) and the seed. No libCacheSim run can check them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LhdParams {
    /// libCacheSim's `associativity` (32): blocks sampled per eviction
    /// once the model has settled (after 50 reconfigurations; 8 before).
    pub associativity: u32,
    /// libCacheSim's `admission` (8): how many recently admitted blocks
    /// that looked like victims are also considered at each eviction.
    pub admissions: u32,
    /// Not a libCacheSim parameter: the generator's seed. The default,
    /// libCacheSim's initial state, draws libCacheSim's numbers.
    pub seed: u64,
}

impl Default for LhdParams {
    fn default() -> Self {
        LhdParams {
            associativity: 32,
            admissions: 8,
            seed: LIBCACHESIM_SEED,
        }
    }
}

impl Knobs for LhdParams {
    // Ranges within `check`, and bounded: `admissions` sizes a buffer.
    const KNOBS: &'static [Knob] = &[
        Knob {
            name: "samples",
            libcachesim: "none, associativity fixed at 32",
            min: 1.0,
            max: 1024.0,
            unit: KnobUnit::Integer,
            help: "blocks sampled per eviction once the model settles (50 refits, 2^20 updates each; 8 before)",
        },
        Knob {
            name: "admissions",
            libcachesim: "none, admission fixed at 8",
            min: 1.0,
            max: 1024.0,
            unit: KnobUnit::Integer,
            help: "recently admitted likely victims also considered at each eviction",
        },
        SEED_KNOB,
    ];

    fn get(&self, i: usize) -> f64 {
        [
            f64::from(self.associativity),
            f64::from(self.admissions),
            self.seed as f64,
        ][i]
    }

    fn set(&mut self, i: usize, value: f64) {
        match i {
            0 => self.associativity = value as u32,
            1 => self.admissions = value as u32,
            _ => self.seed = value as u64,
        }
    }
}

impl LhdParams {
    /// The first parameter out of range, if any.
    fn check(&self) -> Result<(), ParamError> {
        for (name, value) in [
            ("associativity", self.associativity),
            ("admission", self.admissions),
        ] {
            if value == 0 {
                return Err(ParamError::OutOfRange {
                    policy: "lhd",
                    name,
                    value: value.to_string(),
                    expected: "at least 1",
                });
            }
        }
        Ok(())
    }
}

/// What LHD tracks of a cached block (libCacheSim's `Tag`).
#[derive(Clone, Copy, Debug)]
struct Tag {
    /// The update (hit or insertion) that last touched it.
    timestamp: u64,
    last_hit_age: u64,
    last_last_hit_age: u64,
    /// Its size as the model's `f32`.
    size: f32,
    /// An explorer is never a likely victim (its density gains 1).
    explorer: bool,
    /// Its place in the dense array sampled from.
    pos: u32,
}

/// Blocks an eviction samples while the model is young (libCacheSim's
/// warm-up shortcut in `rank`).
const EARLY_SAMPLES: u32 = 8;
/// Reconfigurations after which explorers stop and sampling widens.
const SETTLED: u32 = 50;
/// One block in this many is drawn as an explorer.
const EXPLORE_INVERSE_PROBABILITY: u64 = 32;
/// Share of the cache explorers may take.
const EXPLORER_BUDGET_FRACTION: f32 = 0.01;

/// Least Hit Density (Beckmann, Chen and Cidon, "LHD: Improving Cache Hit
/// Rate by Maximizing Hit Density", NSDI 2018), as libCacheSim's `LHD`
/// (the authors' simulator, ported). A block's hit density is the hits it
/// can expect per unit of space and time it will occupy, estimated from
/// the ages at which the blocks of its class were hit or evicted; a class
/// groups blocks by the sum of their last two hit ages. The victim is the
/// block of least density among a few drawn at random and the last few
/// admitted that looked like victims. The model (`HitDensity`) is
/// refitted every 2^20 updates; in between it counts hits and evictions
/// per age. A small budget of explorers (1% of the cache, one insertion in
/// 32, until the model settles) is shielded so the model sees long lives.
///
/// It needs no tuning and adapts to whatever reuse distribution the trace
/// has, sizes included (density divides by size), so it shines on
/// key-value and CDN workloads with mixed sizes; it learns slowly (the
/// first refit comes after a million requests), so short traces run on its
/// initial GDSF-like guess, and each cache carries a 3.8 MB model.
///
/// libCacheSim draws from its thread's generator ([`Lehmer64`] from
/// [`LIBCACHESIM_SEED`]); here each cache owns one, seeded the same, and
/// the model computes in `f32` in libCacheSim's order, so the miss counts
/// are libCacheSim's when it runs the cache alone on a fresh thread, as
/// the golden scripts do (every block and byte row exact). One departure:
/// a hit keeps the size the block was cached with, as every policy here
/// and libCacheSim's C policies do, where libCacheSim's LHD (C++) takes
/// the request's size as the block's new size. On traces whose objects
/// change size between references libCacheSim's LHD then differs by up to
/// 1.5% of misses (msr at 5% of its working set; tencent-block 0.3%,
/// tencent-photo 0.2%); told the cached size on hits, as the byte golden
/// script tells it, it gives exactly these counts. Only the class rows of
/// libCacheSim's one application are kept (it allocates 16 times as many
/// and never reads them).
#[derive(Clone, Debug)]
pub struct Lhd<K, W = u32> {
    index: Index,
    slab: Slab<K, Tag, W>,
    /// Every cached block (for sizes).
    cached: List,
    /// Cached blocks in libCacheSim's `tags` order, to draw from.
    dense: Vec<Idx>,
    model: HitDensity,
    /// Recently admitted blocks that looked like victims, a ring.
    recently_admitted: Vec<Option<K>>,
    recently_admitted_head: u64,
    ewma_victim_density: f32,
    explorer_budget: i64,
    /// Updates (hits and insertions): LHD's clock.
    timestamp: u64,
    next_reconfiguration: u64,
    reconfigurations: u32,
    associativity: u32,
    rng: Lehmer64,
    capacity: usize,
}

impl<K: BlockKey> Lhd<K> {
    /// An empty LHD cache of `capacity` blocks or bytes (at least 1) with
    /// libCacheSim's parameters.
    pub fn new(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_weights(capacity)
    }
}

impl<K: BlockKey, W: Weight> Lhd<K, W> {
    /// An empty LHD cache of `capacity` with libCacheSim's parameters,
    /// storing sizes as `W`.
    pub fn with_weights(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::build(capacity.into(), LhdParams::default())
    }

    /// An empty LHD cache of `capacity` with `params`, checked.
    pub fn with_params(capacity: Capacity, params: LhdParams) -> Result<Self, ParamError> {
        params.check()?;
        Ok(Self::build(capacity, params)?)
    }

    fn build(capacity: Capacity, params: LhdParams) -> Result<Self, CapacityError> {
        let units = check_capacity("lhd", capacity, 1)?;
        let hint = capacity.objects_hint();
        Ok(Lhd {
            index: Index::with_capacity(hint),
            slab: Slab::with_capacity(hint),
            cached: List::default(),
            dense: Vec::with_capacity(hint),
            model: HitDensity::new(),
            recently_admitted: vec![None; params.admissions as usize],
            recently_admitted_head: 0,
            ewma_victim_density: 0.0,
            // libCacheSim: `cache_size * EXPLORER_BUDGET_FRACTION`, in f32.
            explorer_budget: (units as f32 * EXPLORER_BUDGET_FRACTION) as i64,
            timestamp: 0,
            next_reconfiguration: super::lhd_model::ACCESSES_PER_RECONFIGURATION,
            reconfigurations: 0,
            associativity: params.associativity,
            rng: Lehmer64::new(params.seed),
            capacity: units,
        })
    }

    /// The hit density of the block of `tag` now.
    #[inline]
    fn density(&self, tag: &Tag) -> f32 {
        self.model.density(
            self.timestamp - tag.timestamp,
            tag.last_hit_age + tag.last_last_hit_age,
            tag.size,
            tag.explorer,
        )
    }

    /// libCacheSim's `rank`: the least dense of the blocks drawn from
    /// `rng` and the recent admissions still cached, and its density.
    fn rank(&self, rng: &mut Lehmer64) -> Option<(Idx, f32)> {
        if self.dense.is_empty() {
            return None;
        }
        let samples = if self.reconfigurations > SETTLED {
            self.associativity
        } else {
            EARLY_SAMPLES
        };
        let mut victim: Option<(Idx, f32)> = None;
        let mut consider = |idx: Idx, density: f32| {
            if density < victim.map_or(f32::MAX, |(_, d)| d) {
                victim = Some((idx, density));
            }
        };
        for _ in 0..samples {
            let idx = self.dense[(rng.next_u64() % self.dense.len() as u64) as usize];
            consider(idx, self.density(&self.slab.meta(idx)));
        }
        for key in self.recently_admitted.iter().flatten() {
            if let Some(idx) = self.index.find(&self.slab, *key) {
                consider(idx, self.density(&self.slab.meta(idx)));
            }
        }
        victim
    }

    /// libCacheSim's `update`, after a hit or an insertion of node `idx`:
    /// stamps it, draws whether it explores, and may refit the model.
    fn update(&mut self, idx: Idx, inserted: bool) {
        let timestamp = self.timestamp;
        let explore = self
            .rng
            .next_u64()
            .is_multiple_of(EXPLORE_INVERSE_PROBABILITY);
        let budget = self.explorer_budget;
        let settled = self.reconfigurations >= SETTLED;
        let tag = self.slab.meta_mut(idx);
        tag.timestamp = timestamp;
        tag.explorer = explore && budget > 0 && !settled;
        if tag.explorer {
            // libCacheSim's `int64 -= float`, computed in f32.
            self.explorer_budget = (budget as f32 - tag.size) as i64;
        }
        let tag = *tag;
        if inserted && !explore && self.density(&tag) < self.ewma_victim_density {
            let slot = self.recently_admitted_head % self.recently_admitted.len() as u64;
            self.recently_admitted[slot as usize] = Some(self.slab.key(idx));
            self.recently_admitted_head += 1;
        }
        self.timestamp += 1;
        self.next_reconfiguration -= 1;
        if self.next_reconfiguration == 0 {
            self.model
                .reconfigure(self.reconfigurations, self.dense.len());
            self.next_reconfiguration = super::lhd_model::ACCESSES_PER_RECONFIGURATION;
            self.reconfigurations += 1;
        }
    }

    /// Returns a leaving explorer's share of the budget.
    fn refund(&mut self, tag: &Tag) {
        if tag.explorer {
            self.explorer_budget = (self.explorer_budget as f32 + tag.size) as i64;
        }
    }

    /// Unindexes, unlinks and frees node `idx` (libCacheSim's tags swap
    /// the last into its place); returns its key.
    fn forget(&mut self, idx: Idx) -> K {
        let pos = self.slab.meta(idx).pos as usize;
        self.dense.swap_remove(pos);
        if let Some(&moved) = self.dense.get(pos) {
            self.slab.meta_mut(moved).pos = pos as u32;
        }
        self.index.remove(&self.slab, idx);
        self.slab.unlink(&mut self.cached, idx);
        self.slab.release(idx);
        self.slab.key(idx)
    }
}

impl<K: BlockKey, W: Weight> Policy<K> for Lhd<K, W> {
    type Miss = ();

    fn name(&self) -> &'static str {
        "lhd"
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        self.dense.len()
    }

    fn used(&self) -> usize {
        self.cached.size() as usize
    }

    fn contains(&self, key: K) -> bool {
        self.index.find(&self.slab, key).is_some()
    }

    /// A hit counts at the block's age in its class, moves it to the class
    /// of its new hit ages and restamps it.
    #[inline]
    fn lookup(&mut self, key: K) -> Lookup<()> {
        let Some(idx) = self.index.find(&self.slab, key) else {
            return Lookup::Miss(());
        };
        let tag = self.slab.meta(idx);
        let age = self.model.hit(
            self.timestamp - tag.timestamp,
            tag.last_hit_age + tag.last_last_hit_age,
        );
        self.refund(&tag);
        let tag = self.slab.meta_mut(idx);
        tag.last_last_hit_age = tag.last_hit_age;
        tag.last_hit_age = age;
        self.update(idx, false);
        Lookup::Hit
    }

    fn victim(&self, _: &(), _: u32) -> Option<K> {
        let mut rng = self.rng;
        self.rank(&mut rng).map(|(idx, _)| self.slab.key(idx))
    }

    /// Evicts the ranked victim, counting its eviction at its age.
    fn evict(&mut self, _: &(), _: u32) -> Option<K> {
        let mut rng = self.rng;
        let (idx, density) = self.rank(&mut rng)?;
        self.rng = rng;
        self.ewma_victim_density = super::lhd_model::EWMA_DECAY * self.ewma_victim_density
            + (1.0 - super::lhd_model::EWMA_DECAY) * density;
        let tag = self.slab.meta(idx);
        self.model.evicted(
            self.timestamp - tag.timestamp,
            tag.last_hit_age + tag.last_last_hit_age,
        );
        self.refund(&tag);
        Some(self.forget(idx))
    }

    fn insert(&mut self, key: K, size: u32, _: ()) {
        let tag = Tag {
            timestamp: 0,
            last_hit_age: 0,
            last_last_hit_age: MAX_AGE,
            size: size as f32,
            explorer: false,
            pos: self.dense.len() as u32,
        };
        let idx = self.slab.alloc(key, size, tag);
        self.slab.push_head(&mut self.cached, idx);
        self.index.insert(&self.slab, idx);
        self.dense.push(idx);
        self.update(idx, true);
    }

    /// Drops the block without counting an eviction or refunding an
    /// explorer, as libCacheSim's `LHD_remove`.
    fn remove(&mut self, key: K) -> bool {
        self.index
            .find(&self.slab, key)
            .map(|idx| self.forget(idx))
            .is_some()
    }

    fn metadata_bytes(&self) -> usize {
        self.index.allocated_bytes()
            + self.slab.allocated_bytes()
            + self.dense.capacity() * std::mem::size_of::<Idx>()
            + self.recently_admitted.capacity() * std::mem::size_of::<Option<K>>()
            + self.model.allocated_bytes()
    }

    /// Cached blocks by hit density, the least (the likeliest victim)
    /// first.
    fn iter_oldest_first(&self) -> impl Iterator<Item = K> + '_ {
        let mut order = self.dense.clone();
        order.sort_by(|&a, &b| {
            let (a, b) = (self.slab.meta(a), self.slab.meta(b));
            self.density(&a).total_cmp(&self.density(&b))
        });
        order.into_iter().map(|i| self.slab.key(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::access;

    #[test]
    fn the_same_seed_replays_the_same_victims() {
        let trace: Vec<u64> = (0..5000u64)
            .map(|i| (i * 7919) % 211 % (1 + i % 37))
            .collect();
        let victims = |seed| {
            let params = LhdParams {
                seed,
                ..LhdParams::default()
            };
            let mut cache = Lhd::<u64>::with_params(Capacity::Blocks(16), params).unwrap();
            let mut evicted = Vec::new();
            for &k in &trace {
                access(&mut cache, k, 1, |v| evicted.push(v));
            }
            evicted
        };
        let first = victims(3);
        assert!(!first.is_empty());
        assert_eq!(first, victims(3));
        assert_ne!(first, victims(4));
    }

    #[test]
    fn zero_samples_are_refused() {
        let params = LhdParams {
            associativity: 0,
            ..LhdParams::default()
        };
        let err = Lhd::<u64>::with_params(Capacity::Blocks(8), params).unwrap_err();
        assert!(err.to_string().contains("associativity"), "{err}");
    }
}
