//! AdaptSize: size-aware probabilistic admission tuned by a Markov model.

use super::Admission;
use crate::policy::knobs::{Knob, KnobUnit, Knobs};
use crate::policy::{BlockKey, LIBCACHESIM_SEED, Lehmer64};
use hashbrown::HashMap;

/// AdaptSize's knobs, libCacheSim's `adaptsize` parameters
/// (`adaptsize(iterations=15,interval=30000)` are the defaults), and the
/// seed of its draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdaptSizeParams {
    /// Golden-section steps per reconfiguration (`max-iteration`).
    pub iterations: u32,
    /// Requests between reconfigurations (`reconf-interval`).
    pub interval: u64,
    /// The seed of the admission draws: libCacheSim's thread-local
    /// generator starts at `0xdeadbeef`.
    pub seed: u64,
}

impl Default for AdaptSizeParams {
    fn default() -> Self {
        AdaptSizeParams {
            iterations: 15,
            interval: 30_000,
            seed: LIBCACHESIM_SEED,
        }
    }
}

impl Knobs for AdaptSizeParams {
    const KNOBS: &'static [Knob] = &[
        Knob {
            name: "iterations",
            libcachesim: "max-iteration",
            min: 0.0,
            max: 1000.0,
            unit: KnobUnit::Integer,
            help: "golden-section search steps per reconfiguration",
        },
        Knob {
            name: "interval",
            libcachesim: "reconf-interval",
            min: 1.0,
            max: 1e12,
            unit: KnobUnit::Integer,
            help: "requests between reconfigurations",
        },
        Knob {
            name: "seed",
            libcachesim: "none, its generator's start 0xdeadbeef",
            min: 0.0,
            max: (1u64 << 53) as f64,
            unit: KnobUnit::Integer,
            help: "the seed of the admission draws",
        },
    ];

    fn get(&self, i: usize) -> f64 {
        [
            f64::from(self.iterations),
            self.interval as f64,
            self.seed as f64,
        ][i]
    }

    fn set(&mut self, i: usize, value: f64) {
        match i {
            0 => self.iterations = value as u32,
            1 => self.interval = value as u64,
            _ => self.seed = value as u64,
        }
    }
}

/// An object's statistics: requests (decayed in the long-term table) and
/// last size.
#[derive(Clone, Copy, Debug, Default)]
struct ObjInfo {
    seen: f64,
    size: i64,
}

// The original implementation's constants.
const EWMA_DECAY: f64 = 0.3;
const GSS_R: f64 = 0.618_033_99;
const TOL: f64 = 3.0e-8;
const MAX_MODULE: u64 = 10_000_000;

/// AdaptSize (Berger, Sitaraman and Harchol-Balter, NSDI 2017): admits an
/// object of size `s` with probability `e^(-s/c)`, and every `interval`
/// requests retunes `c` to the value a Markov model of the cache predicts
/// gives the best object hit ratio (a coarse scan of `log2 c`, then a
/// golden-section search), over request counts kept with an exponential
/// moving average across intervals.
///
/// Suits byte caches of CDN and web traces whose object sizes span orders
/// of magnitude: large objects are admitted rarely unless popular. It
/// tunes nothing in a block cache (every object size 1).
///
/// Follows libCacheSim's `adaptsize` admissioner line by line, with its
/// generator ([`Lehmer64`] from `0xdeadbeef`), so its draws are
/// libCacheSim's. One departure: the model sums over objects in the order
/// of its own (fixed-seed) hash table, where libCacheSim sums in its
/// `unordered_map`'s; floating-point sums in another order can differ in
/// the last bits and, rarely, tune `c` differently (the golden tests
/// record the gap).
#[derive(Clone, Debug)]
pub struct AdaptSize<K> {
    cache_size: u64,
    max_iteration: u64,
    reconf_interval: u64,
    next_reconf: u64,
    stat_size: u64,
    c_param: f64,
    interval: HashMap<K, ObjInfo, foldhash::fast::FixedState>,
    longterm: HashMap<K, ObjInfo, foldhash::fast::FixedState>,
    /// The long-term table in model order, rebuilt at each reconfiguration.
    aligned: Vec<(K, ObjInfo)>,
    probs: Vec<f64>,
    rng: Lehmer64,
}

impl<K: BlockKey> AdaptSize<K> {
    /// A fresh AdaptSize with `params`, `c` at libCacheSim's initial 2^15.
    pub fn new(params: AdaptSizeParams) -> Self {
        AdaptSize {
            cache_size: 0,
            max_iteration: u64::from(params.iterations),
            reconf_interval: params.interval,
            next_reconf: params.interval,
            stat_size: 0,
            c_param: f64::from(1u32 << 15),
            interval: HashMap::default(),
            longterm: HashMap::default(),
            aligned: Vec::new(),
            probs: Vec::new(),
            rng: Lehmer64::new(params.seed),
        }
    }

    /// The current `c`: objects of size `c` are admitted with probability
    /// 1/e.
    pub fn c(&self) -> f64 {
        self.c_param
    }

    /// Every `interval` requests (while the bytes seen exceed three caches'
    /// worth), folds the interval into the long-term counts and retunes `c`.
    fn reconfigure(&mut self) {
        self.next_reconf = self.next_reconf.wrapping_sub(1);
        if self.next_reconf > 0 {
            return;
        }
        if self.stat_size <= self.cache_size.wrapping_mul(3) {
            self.next_reconf += 1000;
            return;
        }
        self.next_reconf = self.reconf_interval;
        for info in self.longterm.values_mut() {
            info.seen *= EWMA_DECAY;
        }
        for (&key, info) in &self.interval {
            match self.longterm.get_mut(&key) {
                None => {
                    self.longterm.insert(key, *info);
                }
                Some(long) => {
                    long.seen += (1.0 - EWMA_DECAY) * info.seen;
                    long.size = info.size;
                }
            }
        }
        self.interval.clear();
        let stat_size = &mut self.stat_size;
        self.longterm.retain(|_, info| {
            let keep = info.seen >= 0.1;
            if !keep {
                *stat_size = stat_size.wrapping_sub(info.size as u64);
            }
            keep
        });
        self.aligned.clear();
        self.aligned
            .extend(self.longterm.iter().map(|(&k, &i)| (k, i)));
        self.c_param = self.search().unwrap_or(self.c_param);
    }

    /// The `c` of the best modelled hit ratio, or `None` if the model gave
    /// NaN.
    fn search(&mut self) -> Option<f64> {
        let gss_v = 1.0 - GSS_R;
        let (mut x0, mut x1) = (0.0, (self.cache_size as f64).log2());
        let mut x3 = x1;
        let mut x2;
        let mut best = 0.0;
        let mut i = 2i32;
        while f64::from(i) < x3 {
            let hit_rate = self.model_hit_rate(f64::from(i));
            if hit_rate > best {
                best = hit_rate;
                x1 = f64::from(i);
            }
            i += 4;
        }
        let (mut h1, mut h2);
        if x3 - x1 > x1 - x0 {
            h1 = best;
            x2 = x1 + gss_v * (x3 - x1);
            h2 = self.model_hit_rate(x2);
        } else {
            x2 = x1;
            h2 = best;
            x1 = x0 + gss_v * (x1 - x0);
            h1 = self.model_hit_rate(x1);
        }
        let mut iteration = 0;
        while iteration < self.max_iteration && (x3 - x0).abs() > TOL * (x1.abs() + x2.abs()) {
            iteration += 1;
            if h1.is_nan() || h2.is_nan() {
                break;
            }
            if h2 > h1 {
                x0 = x1;
                x1 = x2;
                x2 = GSS_R * x1 + gss_v * x3;
                h1 = h2;
                h2 = self.model_hit_rate(x2);
            } else {
                x3 = x2;
                x2 = x1;
                x1 = GSS_R * x2 + gss_v * x0;
                h2 = h1;
                h1 = self.model_hit_rate(x1);
            }
        }
        if h1.is_nan() || h2.is_nan() {
            None
        } else if h1 > h2 {
            Some(2f64.powf(x1))
        } else {
            Some(2f64.powf(x2))
        }
    }

    /// The Markov model's object hit ratio (weighted by request rates) if
    /// `c` were `2^log2c`: a fixed point for the characteristic time, then
    /// each object's hit probability.
    fn model_hit_rate(&mut self, log2c: f64) -> f64 {
        let c = 2f64.powf(log2c);
        let cache_size = self.cache_size as f64;
        let sum: f64 = self
            .aligned
            .iter()
            .map(|(_, o)| o.seen * (-(o.size as f64) / c).exp() * o.size as f64)
            .sum();
        if sum <= 0.0 {
            return 0.0;
        }
        let mut t = cache_size / sum;
        self.probs.clear();
        self.probs.extend(
            self.aligned
                .iter()
                .map(|(_, o)| (-(o.size as f64) / c).exp()),
        );
        for _ in 0..20 {
            if t > 1e70 {
                break;
            }
            let mut the_c = 0.0;
            for ((_, o), &p) in self.aligned.iter().zip(&self.probs) {
                let req_t = o.seen * t;
                if req_t > 150.0 {
                    the_c += o.size as f64;
                } else {
                    let adm = p * (req_t.exp() - 1.0);
                    the_c += o.size as f64 * (adm / (1.0 + adm));
                }
            }
            t = cache_size * t / the_c;
        }
        let mut weighted = 0.0;
        for ((_, o), &p) in self.aligned.iter().zip(&self.probs) {
            let (a, b) = (op1(t, o.seen, p), op2(t, o.seen, p));
            let h = if a != 0.0 && b == 0.0 { 0.0 } else { a / b };
            weighted += o.seen * if h < 0.0 { 0.0 } else { h.min(1.0) };
        }
        weighted
    }
}

fn op1(t: f64, l: f64, p: f64) -> f64 {
    l * p * t * (840.0 + 60.0 * l * t + 20.0 * l * l * t * t + l * l * l * t * t * t)
}

fn op2(t: f64, l: f64, p: f64) -> f64 {
    840.0
        + 120.0 * l * (-3.0 + 7.0 * p) * t
        + 60.0 * l * l * (1.0 + p) * t * t
        + 4.0 * l * l * l * (-1.0 + 5.0 * p) * t * t * t
        + l * l * l * l * p * t * t * t * t
}

impl<K: BlockKey> Admission<K> for AdaptSize<K> {
    /// Counts the request (libCacheSim's `updateStats`), reconfiguring
    /// first when an interval ends.
    fn update(&mut self, key: K, size: u32, capacity: u64) {
        self.cache_size = capacity;
        self.reconfigure();
        let size = i64::from(size);
        let in_interval = self.interval.get(&key).map(|o| o.size);
        let in_longterm = self.longterm.get(&key).map(|o| o.size);
        if in_interval.is_none() && in_longterm.is_none() {
            self.stat_size = self.stat_size.wrapping_add(size as u64);
        }
        for old in [in_interval, in_longterm].into_iter().flatten() {
            if old != size {
                self.stat_size = self
                    .stat_size
                    .wrapping_sub(old as u64)
                    .wrapping_add(size as u64);
            }
        }
        let info = self.interval.entry(key).or_default();
        info.seen += 1.0;
        info.size = size;
    }

    /// Admits with probability `e^(-size/c)`, drawing as libCacheSim.
    fn admit(&mut self, _: K, size: u32) -> bool {
        let prob = (-(f64::from(size)) / self.c_param).exp();
        let roll = (self.rng.next_u64() % MAX_MODULE) as f64 / MAX_MODULE as f64;
        roll < prob
    }
}
