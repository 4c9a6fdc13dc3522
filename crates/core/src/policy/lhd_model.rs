//! LHD's model: per class, the hits and evictions seen at each age, and the
//! hit density they imply.

/// Ages are counted up to this many coarsened steps (libCacheSim's
/// `MAX_AGE`); a block older than the last is always a victim.
pub(super) const MAX_AGE: u64 = 20_000;
/// Updates between two refits of the model.
pub(super) const ACCESSES_PER_RECONFIGURATION: u64 = 1 << 20;
/// Decay of the counts at each refit, and of the victims' mean density.
pub(super) const EWMA_DECAY: f32 = 0.9;
/// Classes by hit age (libCacheSim's `HIT_AGE_CLASSES`).
const HIT_AGE_CLASSES: u64 = 16;
/// libCacheSim files every block under application `DEFAULT_APP_ID %
/// APP_CLASSES` = 1, so only the classes 16..32 of its 256 are ever used;
/// their number enters the initial densities.
const FIRST_CLASS: u64 = HIT_AGE_CLASSES;
/// The age coarsening aims at this relative error.
const AGE_COARSENING_ERROR_TOLERANCE: f32 = 0.01;
const AGES: usize = MAX_AGE as usize;

/// The hit and eviction counts of each (class, age), and the hit density
/// fitted from them (libCacheSim's `Class` vectors, all in `f32` as
/// there, computed in the same order so a refit gives the same bits).
#[derive(Clone, Debug)]
pub(super) struct HitDensity {
    hits: Vec<f32>,
    evictions: Vec<f32>,
    densities: Vec<f32>,
    /// Request counts are shifted down by this many bits into ages.
    age_coarsening_shift: u32,
    ewma_num_objects: f32,
    ewma_num_objects_mass: f32,
}

impl HitDensity {
    /// The initial model, GDSF-like as libCacheSim's: density
    /// `(class + 1) / (age + 1)`.
    pub(super) fn new() -> Self {
        let cells = HIT_AGE_CLASSES as usize * AGES;
        let mut densities = vec![0.0; cells];
        for (i, d) in densities.iter_mut().enumerate() {
            let class = FIRST_CLASS + (i / AGES) as u64;
            let age = (i % AGES) as u64;
            *d = ((class + 1) as f64 / (age + 1) as f64) as f32;
        }
        HitDensity {
            hits: vec![0.0; cells],
            evictions: vec![0.0; cells],
            densities,
            age_coarsening_shift: 10,
            ewma_num_objects: 0.0,
            ewma_num_objects_mass: 0.0,
        }
    }

    /// Heap bytes the model occupies.
    pub(super) fn allocated_bytes(&self) -> usize {
        (self.hits.capacity() + self.evictions.capacity() + self.densities.capacity())
            * std::mem::size_of::<f32>()
    }

    /// The coarsened age of a block last touched `elapsed` updates ago,
    /// capped at the last.
    #[inline]
    fn age(&self, elapsed: u64) -> u64 {
        (elapsed >> self.age_coarsening_shift).min(MAX_AGE - 1)
    }

    /// The first cell of the class of a block whose last two hit ages sum
    /// to `hit_ages` (libCacheSim's `hitAgeClass`: about log2(MAX_AGE /
    /// hit_ages), and the last class for a sum of 0).
    #[inline]
    fn class(hit_ages: u64) -> usize {
        if hit_ages == 0 {
            return (HIT_AGE_CLASSES as usize - 1) * AGES;
        }
        let (mut age, mut log) = (hit_ages, 0);
        while age < MAX_AGE && log < HIT_AGE_CLASSES - 1 {
            age <<= 1;
            log += 1;
        }
        log as usize * AGES
    }

    /// libCacheSim's `getHitDensity` of a block of `size`, last touched
    /// `elapsed` updates ago, whose hit ages sum to `hit_ages`.
    #[inline]
    pub(super) fn density(&self, elapsed: u64, hit_ages: u64, size: f32, explorer: bool) -> f32 {
        let age = self.age(elapsed);
        if age == MAX_AGE - 1 {
            return f32::MIN;
        }
        let density = self.densities[Self::class(hit_ages) + age as usize] / size;
        if explorer { density + 1.0 } else { density }
    }

    /// Counts a hit on a block touched `elapsed` updates ago; returns its
    /// age, its new last hit age.
    #[inline]
    pub(super) fn hit(&mut self, elapsed: u64, hit_ages: u64) -> u64 {
        let age = self.age(elapsed);
        self.hits[Self::class(hit_ages) + age as usize] += 1.0;
        age
    }

    /// Counts the eviction of a block touched `elapsed` updates ago.
    pub(super) fn evicted(&mut self, elapsed: u64, hit_ages: u64) {
        let age = self.age(elapsed);
        self.evictions[Self::class(hit_ages) + age as usize] += 1.0;
    }

    /// libCacheSim's `reconfigure`, the `reconfigurations`th, with `cached`
    /// blocks in the cache: decays the counts, may rescale ages, refits.
    pub(super) fn reconfigure(&mut self, reconfigurations: u32, cached: usize) {
        for v in self.hits.iter_mut().chain(self.evictions.iter_mut()) {
            *v *= EWMA_DECAY;
        }
        self.adapt_age_coarsening(reconfigurations, cached);
        for class in 0..HIT_AGE_CLASSES as usize {
            self.fit(class * AGES);
        }
    }

    /// libCacheSim's `modelHitDensity` for the class at cell `base`: the
    /// density at an age is the hits expected from it on, over the
    /// lifetime expected from it on, summed backwards in one pass.
    fn fit(&mut self, base: usize) {
        let last = base + AGES - 1;
        let mut total_events = self.hits[last] + self.evictions[last];
        let mut total_hits = self.hits[last];
        let mut lifetime = total_events;
        for i in (base..last).rev() {
            total_hits += self.hits[i];
            total_events += self.hits[i] + self.evictions[i];
            lifetime += total_events;
            self.densities[i] = if f64::from(total_events) > 1e-5 {
                total_hits / lifetime
            } else {
                0.0
            };
        }
    }

    /// libCacheSim's `adaptAgeCoarsening`: tracks the number of cached
    /// blocks and, at the 5th and 25th refit only, sets the shift so ages
    /// span about 100 times the cache, rescaling the counts to match.
    fn adapt_age_coarsening(&mut self, reconfigurations: u32, cached: usize) {
        self.ewma_num_objects *= EWMA_DECAY;
        self.ewma_num_objects_mass *= EWMA_DECAY;
        self.ewma_num_objects += cached as f32;
        self.ewma_num_objects_mass += 1.0;
        let num_objects = self.ewma_num_objects / self.ewma_num_objects_mass;
        let optimal = (f64::from(num_objects)
            / f64::from(AGE_COARSENING_ERROR_TOLERANCE * MAX_AGE as f32))
            as f32;
        if reconfigurations != 5 && reconfigurations != 25 {
            return;
        }
        let mut log2 = 1u32;
        // libCacheSim compares the int `1 << log2` as a float; 2^62 ends
        // the loop where its int would overflow.
        while log2 < 62 && ((1u64 << log2) as f32) < optimal {
            log2 += 1;
        }
        let delta = i64::from(log2) - i64::from(self.age_coarsening_shift);
        self.age_coarsening_shift = log2;
        self.ewma_num_objects *= 8.0;
        self.ewma_num_objects_mass *= 8.0;
        for base in (0..HIT_AGE_CLASSES as usize).map(|c| c * AGES) {
            for counts in [&mut self.hits, &mut self.evictions] {
                let class = &mut counts[base..base + AGES];
                match delta {
                    d if d < 0 => stretch(class, (-d) as u32),
                    d if d > 0 => compress(class, d as u32),
                    _ => {}
                }
            }
        }
    }
}

/// Counts of one class after ages got `2^shift` times finer: the ages
/// that no longer fit go to the last, the rest spread evenly.
fn stretch(counts: &mut [f32], shift: u32) {
    let last = AGES - 1;
    for a in (AGES >> shift)..last {
        counts[last] += counts[a];
    }
    for a in (0..last).rev() {
        counts[a] = counts[a >> shift] / (1u64 << shift) as f32;
    }
}

/// Counts of one class after ages got `2^shift` times coarser: each new
/// age sums the old ages it covers, in libCacheSim's order.
fn compress(counts: &mut [f32], shift: u32) {
    let last = AGES - 1;
    for a in 0..(AGES >> shift) {
        counts[a] = counts[a << shift];
        for i in 1..(1usize << shift) {
            counts[a] += counts[(a << shift) + i];
        }
    }
    for c in counts.iter_mut().take(last).skip(AGES >> shift) {
        *c = 0.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_never_hit_twice_start_in_class_zero_at_libcachesims_guess() {
        let model = HitDensity::new();
        // A new block: hit ages 0 + MAX_AGE, age 0, class 16 of 256.
        assert_eq!(model.density(0, MAX_AGE, 1.0, false), 17.0);
        assert_eq!(
            model.density(1 << 10, MAX_AGE, 2.0, false),
            17.0 / 2.0 / 2.0
        );
        assert_eq!(model.density(u64::MAX, MAX_AGE, 1.0, false), f32::MIN);
    }

    #[test]
    fn a_refit_turns_counts_into_hits_per_expected_lifetime() {
        let mut model = HitDensity::new();
        // Class 0: one hit at age 0, one eviction at age 1.
        model.hit(0, MAX_AGE);
        model.evicted(1 << 10, MAX_AGE);
        model.reconfigure(0, 2);
        // From age 1 on: no hits; from age 0: 0.9 hits over an expected
        // lifetime of 0.9 (the events past age 0) + 1.8 (all) = 1/3.
        assert_eq!(model.density(1 << 10, MAX_AGE, 1.0, false), 0.0);
        assert!((model.density(0, MAX_AGE, 1.0, false) - 1.0 / 3.0).abs() < 1e-6);
    }
}
