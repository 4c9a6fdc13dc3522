//! CLOCK-Pro against a brute-force reference: the same algorithm on a `Vec`
//! ring with linear scans, hands held as keys and every count and size
//! recomputed by a scan, compared hit for hit, victim for victim and cold
//! target for cold target on many small seeded traces: in blocks with the
//! default and other knobs, and in bytes with random sizes.

use coopcache_core::policy::{
    Capacity, ClockPro, ClockProParams, Policy, Unit, access, splitmix64,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Hot,
    Cold,
    ColdTest,
    NonRes,
}

impl St {
    fn in_test(self) -> bool {
        matches!(self, St::ColdTest | St::NonRes)
    }
    fn res_cold(self) -> bool {
        matches!(self, St::Cold | St::ColdTest)
    }
    fn resident(self) -> bool {
        self != St::NonRes
    }
}

/// The ring, oldest first: index 0 is the tail, the last entry the head;
/// hands move towards higher indices and wrap to 0. Entries are (key,
/// status, reference bit, size); sizes, the capacity and every budget are
/// in the cache's unit (1 per page in blocks).
struct Reference {
    ring: Vec<(u64, St, bool, usize)>,
    hot: Option<u64>,
    cold: Option<u64>,
    test: Option<u64>,
    cap: usize,
    max_nonres: usize,
    target: usize,
    min: usize,
    max: usize,
}

impl Reference {
    fn new(cap: usize) -> Self {
        // The defaults: 1% (at least 2) to 99% (leaving the minimum), m
        // non-resident pages.
        let min = (cap / 100).max(2);
        let max = (cap * 99 / 100).min(cap - min);
        Reference {
            ring: Vec::new(),
            hot: None,
            cold: None,
            test: None,
            cap,
            max_nonres: cap,
            target: min,
            min,
            max,
        }
    }

    /// The knobs' definition: `mc` between `min_cold` and `max_cold`
    /// shares of the cache (the floor applying to the minimum, the maximum
    /// leaving the minimum's room), `non_resident` times the cache of
    /// non-resident sizes.
    fn with_params(cap: usize, p: ClockProParams) -> Self {
        let min = ((cap as f64 * p.min_cold_ratio) as usize).max(p.min_cold_blocks);
        let max = ((cap as f64 * p.max_cold_ratio) as usize).min(cap - min);
        Reference {
            max_nonres: (cap as f64 * p.non_resident_ratio) as usize,
            target: min,
            min,
            max,
            ..Reference::new(cap)
        }
    }

    fn pos(&self, k: u64) -> Option<usize> {
        self.ring.iter().position(|e| e.0 == k)
    }
    fn st(&self, k: u64) -> St {
        self.ring[self.pos(k).unwrap()].1
    }
    fn count(&self, f: impl Fn(St) -> bool) -> usize {
        self.ring.iter().filter(|e| f(e.1)).count()
    }
    fn size(&self, f: impl Fn(St) -> bool) -> usize {
        self.ring.iter().filter(|e| f(e.1)).map(|e| e.3).sum()
    }
    fn resident(&self) -> usize {
        self.count(St::resident)
    }
    fn next(&self, k: u64) -> u64 {
        let p = self.pos(k).unwrap();
        self.ring[(p + 1) % self.ring.len()].0
    }
    fn step_off(&mut self, k: u64) {
        let n = self.next(k);
        let n = (n != k).then_some(n);
        for hand in [&mut self.hot, &mut self.cold, &mut self.test] {
            if *hand == Some(k) {
                *hand = n;
            }
        }
    }
    fn move_to_head(&mut self, k: u64, st: St) {
        self.step_off(k);
        let p = self.pos(k).unwrap();
        let size = self.ring.remove(p).3;
        self.ring.push((k, st, false, size));
    }
    fn drop_page(&mut self, k: u64) {
        self.step_off(k);
        let p = self.pos(k).unwrap();
        self.ring.remove(p);
    }
    /// `mc` moves by the size of the page whose test period decided it.
    fn adjust(&mut self, up: bool, step: usize) {
        let t = if up {
            self.target + step
        } else {
            self.target.saturating_sub(step)
        };
        self.target = t.clamp(self.min, self.max);
    }
    fn end_test(&mut self, k: u64) {
        let p = self.pos(k).unwrap();
        let (_, st, referenced, size) = self.ring[p];
        match st {
            St::ColdTest => {
                self.ring[p].1 = St::Cold;
                self.adjust(referenced, size);
            }
            St::NonRes => {
                self.drop_page(k);
                self.adjust(false, size);
            }
            _ => {}
        }
    }
    fn tail(&self) -> u64 {
        self.ring[0].0
    }
    fn seek_cold(&mut self) {
        if self.count(St::res_cold) == 0 {
            self.cold = None;
            return;
        }
        let mut h = self.cold.unwrap_or_else(|| self.tail());
        while !self.st(h).res_cold() {
            h = self.next(h);
        }
        self.cold = Some(h);
    }
    fn seek_hot(&mut self) {
        if self.count(|s| s == St::Hot) == 0 {
            self.hot = None;
            return;
        }
        let mut h = self.hot.unwrap_or_else(|| self.tail());
        while self.st(h) != St::Hot {
            let passed = h;
            h = self.next(passed);
            self.hot = Some(h);
            self.end_test(passed);
        }
        self.hot = Some(h);
        self.seek_test();
    }
    fn seek_test(&mut self) {
        if self.count(St::in_test) == 0 {
            self.test = None;
            return;
        }
        let mut h = self.test.or(self.hot).unwrap_or_else(|| self.tail());
        while !self.st(h).in_test() {
            h = self.next(h);
        }
        self.test = Some(h);
    }
    fn seek_all(&mut self) {
        self.seek_cold();
        self.seek_hot();
        self.seek_test();
    }
    fn run_hot(&mut self, trigger: u64) -> bool {
        let mut demoted = false;
        while let Some(h) = self.hot.filter(|&h| h != trigger) {
            let p = self.pos(h).unwrap();
            let (_, st, referenced, _) = self.ring[p];
            if st == St::Hot {
                if referenced {
                    self.move_to_head(h, St::Hot);
                } else {
                    self.move_to_head(h, St::Cold);
                    demoted = true;
                    break;
                }
            } else {
                self.hot = Some(self.next(h));
                self.end_test(h);
            }
        }
        self.seek_hot();
        demoted
    }
    /// Whether `k`, in test, turns hot at `size`: the hot pages must fit
    /// `m - mc` with it.
    fn promotes(&mut self, k: u64, size: usize) -> bool {
        let testing = |r: &Self| r.pos(k).is_some_and(|p| r.ring[p].1.in_test());
        if !testing(self) {
            return false;
        }
        self.adjust(true, size);
        if size > self.cap - self.target {
            return false;
        }
        while self.size(|s| s == St::Hot) + size > self.cap - self.target {
            if !testing(self) || !self.run_hot(k) {
                return false;
            }
        }
        true
    }
    fn run_cold(&mut self) -> Option<u64> {
        let h = self.cold.unwrap();
        let p = self.pos(h).unwrap();
        let (_, st, referenced, size) = self.ring[p];
        if referenced {
            let hot = st.in_test() && self.promotes(h, size);
            self.move_to_head(h, if hot { St::Hot } else { St::ColdTest });
            self.seek_cold();
            return None;
        }
        if st.in_test() {
            self.ring[p].1 = St::NonRes;
            self.cold = Some(self.next(h));
        } else {
            self.drop_page(h);
        }
        while self.size(|s| s == St::NonRes) > self.max_nonres {
            self.seek_test();
            let t = self.test.unwrap();
            self.end_test(t);
            self.seek_test();
        }
        self.seek_cold();
        Some(h)
    }
    /// One request of a block: whether it hit, and the page it replaced.
    fn access(&mut self, k: u64) -> (bool, Option<u64>) {
        let (hit, victims) = self.access_sized(k, 1);
        assert!(victims.len() <= 1);
        (hit, victims.first().copied())
    }
    /// One request of `size`: whether it hit, and the pages replaced to
    /// make room. A miss that fits the free space is a warm-up page (hot
    /// while the minimum cold target stays free); one that does not makes
    /// room and enters as a cold page or a promoted test page.
    fn access_sized(&mut self, k: u64, size: usize) -> (bool, Vec<u64>) {
        if let Some(p) = self.pos(k).filter(|&p| self.ring[p].1.resident()) {
            self.ring[p].2 = true;
            return (true, Vec::new());
        }
        if size > self.cap {
            return (false, Vec::new());
        }
        let free = |r: &Self| r.cap - r.size(St::resident);
        let mut victims = Vec::new();
        let st = if free(self) >= size {
            if free(self) >= self.min + size {
                St::Hot
            } else {
                St::ColdTest
            }
        } else {
            while free(self) < size {
                if self.cold.is_none() {
                    self.demote_oldest_hot();
                } else if let Some(v) = self.run_cold() {
                    victims.push(v);
                }
            }
            if self.promotes(k, size) {
                St::Hot
            } else {
                St::ColdTest
            }
        };
        if let Some(p) = self.pos(k) {
            self.step_off(k);
            self.ring.remove(p);
        }
        self.ring.push((k, st, false, size));
        self.seek_all();
        (false, victims)
    }
    /// With no resident cold page left, the oldest hot page turns cold.
    fn demote_oldest_hot(&mut self) {
        let p = self.ring.iter().position(|e| e.1 == St::Hot).unwrap();
        self.ring[p].1 = St::Cold;
        self.seek_all();
    }
    fn remove(&mut self, k: u64) -> bool {
        match self.pos(k) {
            Some(p) if self.ring[p].1.resident() => {
                self.drop_page(k);
                self.seek_all();
                true
            }
            _ => false,
        }
    }
}

/// The next key of a trace mixing uniform picks, a loop larger than the
/// cache, a hot set with scans, and occasional removals (`None` key means
/// remove the returned one).
fn next_op(state: &mut u64, step: u64, keys: u64, pattern: u64) -> (u64, bool) {
    let r = splitmix64(state);
    let key = match pattern {
        0 => r % keys,
        1 => step % keys,
        2 if r.is_multiple_of(3) => keys + step,
        2 => r % (keys / 4 + 1),
        _ if (step / 200).is_multiple_of(2) => step % keys,
        _ => r % keys,
    };
    (key, r.is_multiple_of(37))
}

#[test]
fn clockpro_matches_its_brute_force_reference() {
    let mut compared = 0u64;
    for seed in 0..64u64 {
        for cap in [4usize, 5, 7, 10, 16, 31] {
            for keys in [
                cap as u64 / 2 + 1,
                cap as u64 * 3 / 2,
                cap as u64 * 2,
                cap as u64 * 4,
            ] {
                let pattern = seed % 4;
                let mut state = seed.wrapping_mul(0x9e37_79b9) ^ (cap as u64) << 32 ^ keys;
                let mut real: ClockPro<u64> = ClockPro::new(cap).unwrap();
                let mut model = Reference::new(cap);
                for step in 0..600u64 {
                    let (key, remove) = next_op(&mut state, step, keys, pattern);
                    let ctx = format!("seed {seed} cap {cap} keys {keys} step {step} key {key}");
                    if remove {
                        assert_eq!(real.remove(key), model.remove(key), "remove: {ctx}");
                        continue;
                    }
                    let mut evicted = Vec::new();
                    let predicted = if real.contains(key) {
                        None
                    } else if real.len() == cap {
                        // What victim() says before the miss is seen.
                        Some(real.victim(&true, 1))
                    } else {
                        None
                    };
                    let hit = access(&mut real, key, 1, |v| evicted.push(v));
                    let (model_hit, model_victim) = model.access(key);
                    assert_eq!(hit, model_hit, "hit: {ctx}");
                    assert_eq!(evicted.first().copied(), model_victim, "victim: {ctx}");
                    assert!(evicted.len() <= 1, "one eviction per miss: {ctx}");
                    if let Some(p) = predicted {
                        assert_eq!(p, model_victim, "victim(): {ctx}");
                    }
                    assert_eq!(real.cold_target(), model.target, "mc: {ctx}");
                    assert_eq!(
                        real.non_resident(),
                        model.count(|s| s == St::NonRes),
                        "non-resident: {ctx}"
                    );
                    assert!(real.non_resident() <= cap, "{ctx}");
                    assert_eq!(real.len(), model.resident(), "resident: {ctx}");
                    compared += 1;
                }
                for k in 0..keys * 2 {
                    let resident = model.pos(k).is_some_and(|p| model.ring[p].1.resident());
                    assert_eq!(
                        real.contains(k),
                        resident,
                        "contains {k}: seed {seed} cap {cap}"
                    );
                }
            }
        }
    }
    assert!(compared > 500_000, "{compared} requests compared");
}

/// Knobs off their defaults: a wide or narrow cold target, a higher floor,
/// more or no non-resident pages.
const OTHER_PARAMS: [ClockProParams; 3] = [
    ClockProParams {
        min_cold_ratio: 0.1,
        max_cold_ratio: 0.5,
        min_cold_blocks: 3,
        non_resident_ratio: 2.0,
    },
    ClockProParams {
        min_cold_ratio: 0.25,
        max_cold_ratio: 0.3,
        min_cold_blocks: 1,
        non_resident_ratio: 0.5,
    },
    ClockProParams {
        min_cold_ratio: 0.0,
        max_cold_ratio: 1.0,
        min_cold_blocks: 1,
        non_resident_ratio: 0.0,
    },
];

/// One seeded trace through `real` and `model`, checked request by
/// request; `size_of` gives each request's size (`None`: a removal).
/// Returns the requests compared.
fn replay<W: coopcache_core::policy::Weight>(
    real: &mut ClockPro<u64, W>,
    model: &mut Reference,
    keys: u64,
    pattern: u64,
    mut state: u64,
    ctx: &str,
    mut size_of: impl FnMut(u64, u64, &mut u64) -> usize,
) -> u64 {
    let cap = model.cap;
    let mut compared = 0;
    for step in 0..600u64 {
        let (key, remove) = next_op(&mut state, step, keys, pattern);
        let size = size_of(key, step, &mut state);
        let ctx = format!("{ctx} step {step} key {key} size {size}");
        if remove {
            assert_eq!(real.remove(key), model.remove(key), "remove: {ctx}");
            continue;
        }
        let fits = real.used() + size <= cap;
        let predicted = (!real.contains(key) && size <= cap && !fits)
            .then(|| real.victim(&(real.used() == cap), size as u32));
        let mut evicted = Vec::new();
        let hit = access(real, key, size as u32, |v| evicted.push(v));
        let (model_hit, model_victims) = model.access_sized(key, size);
        assert_eq!(hit, model_hit, "hit: {ctx}");
        assert_eq!(evicted, model_victims, "victims: {ctx}");
        if let Some(p) = predicted {
            assert_eq!(p, model_victims.first().copied(), "victim(): {ctx}");
        }
        assert_eq!(real.cold_target(), model.target, "mc: {ctx}");
        let non_resident = |s| s == St::NonRes;
        assert_eq!(real.non_resident(), model.count(non_resident), "{ctx}");
        assert_eq!(
            real.non_resident_size(),
            model.size(non_resident),
            "non-resident size: {ctx}"
        );
        assert!(real.non_resident_size() <= model.max_nonres, "{ctx}");
        assert_eq!(real.len(), model.resident(), "resident: {ctx}");
        assert_eq!(real.used(), model.size(St::resident), "used: {ctx}");
        assert!(real.used() <= cap, "over capacity: {ctx}");
        compared += 1;
    }
    for k in 0..keys * 2 {
        let resident = model.pos(k).is_some_and(|p| model.ring[p].1.resident());
        assert_eq!(real.contains(k), resident, "contains {k}: {ctx}");
    }
    compared
}

#[test]
fn clockpro_matches_its_reference_with_other_knobs() {
    let mut compared = 0u64;
    for (i, params) in OTHER_PARAMS.into_iter().enumerate() {
        for seed in 0..24u64 {
            for cap in [4usize, 7, 16, 31] {
                let Ok(real) = ClockPro::<u64, Unit>::with_params(Capacity::Blocks(cap), params)
                else {
                    continue;
                };
                for keys in [cap as u64 * 3 / 2, cap as u64 * 4] {
                    let mut real = real.clone();
                    let mut model = Reference::with_params(cap, params);
                    let state = seed.wrapping_mul(0x9e37_79b9) ^ (cap as u64) << 32 ^ keys;
                    let ctx = format!("params {i} seed {seed} cap {cap} keys {keys}");
                    compared += replay(
                        &mut real,
                        &mut model,
                        keys,
                        seed % 4,
                        state,
                        &ctx,
                        |_, _, _| 1,
                    );
                }
            }
        }
    }
    assert!(compared > 100_000, "{compared} requests compared");
}

/// Byte caches: each key has a size of its own (1 to a quarter of the
/// cache), changed now and then and once in a while larger than the cache
/// (not admitted); several pages may be replaced for one.
#[test]
fn clockpro_matches_its_reference_in_bytes() {
    let mut compared = 0u64;
    let defaults = [ClockProParams::default()];
    for (i, params) in defaults.into_iter().chain(OTHER_PARAMS).enumerate() {
        for seed in 0..32u64 {
            for cap in [16usize, 40, 100, 250] {
                for keys in [8u64, 24, 64] {
                    let mut real =
                        ClockPro::<u64>::with_params(Capacity::Bytes(cap as u64), params)
                            .expect("every byte capacity here fits the knobs");
                    let mut model = Reference::with_params(cap, params);
                    let state = seed.wrapping_mul(0x9e37_79b9) ^ (cap as u64) << 32 ^ keys;
                    let ctx = format!("bytes, params {i} seed {seed} cap {cap} keys {keys}");
                    let size_of = |key: u64, step: u64, state: &mut u64| {
                        let r = splitmix64(state);
                        let mut own = key ^ seed << 20;
                        let own = 1 + splitmix64(&mut own) as usize % (cap / 4);
                        match r % 64 {
                            0 => cap + 1 + step as usize % 3,
                            1..=3 => 1 + r as usize % (cap / 2),
                            _ => own,
                        }
                    };
                    compared += replay(&mut real, &mut model, keys, seed % 4, state, &ctx, size_of);
                }
            }
        }
    }
    assert!(compared > 200_000, "{compared} requests compared");
}
