//! CLOCK-Pro against a brute-force reference: the same algorithm on a `Vec`
//! ring with linear scans, hands held as keys and every count recomputed by
//! a scan, compared hit for hit, victim for victim and cold target for
//! cold target on many small seeded traces.

use coopcache_core::policy::{ClockPro, Policy, access, splitmix64};

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
/// hands move towards higher indices and wrap to 0.
struct Reference {
    ring: Vec<(u64, St, bool)>,
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

    fn pos(&self, k: u64) -> Option<usize> {
        self.ring.iter().position(|e| e.0 == k)
    }
    fn st(&self, k: u64) -> St {
        self.ring[self.pos(k).unwrap()].1
    }
    fn count(&self, f: impl Fn(St) -> bool) -> usize {
        self.ring.iter().filter(|e| f(e.1)).count()
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
        self.ring.remove(p);
        self.ring.push((k, st, false));
    }
    fn drop_page(&mut self, k: u64) {
        self.step_off(k);
        let p = self.pos(k).unwrap();
        self.ring.remove(p);
    }
    fn adjust(&mut self, up: bool) {
        let t = if up {
            self.target + 1
        } else {
            self.target.saturating_sub(1)
        };
        self.target = t.clamp(self.min, self.max);
    }
    fn end_test(&mut self, k: u64) {
        let p = self.pos(k).unwrap();
        let (_, st, referenced) = self.ring[p];
        match st {
            St::ColdTest => {
                self.ring[p].1 = St::Cold;
                self.adjust(referenced);
            }
            St::NonRes => {
                self.drop_page(k);
                self.adjust(false);
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
            let (_, st, referenced) = self.ring[p];
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
    fn promotes(&mut self, k: u64) -> bool {
        let testing = |r: &Self| r.pos(k).is_some_and(|p| r.ring[p].1.in_test());
        if !testing(self) {
            return false;
        }
        self.adjust(true);
        while self.count(|s| s == St::Hot) >= self.cap - self.target {
            if !testing(self) || !self.run_hot(k) {
                return false;
            }
        }
        true
    }
    fn run_cold(&mut self) -> Option<u64> {
        let h = self.cold.unwrap();
        let p = self.pos(h).unwrap();
        let (_, st, referenced) = self.ring[p];
        if referenced {
            let hot = st.in_test() && self.promotes(h);
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
        while self.count(|s| s == St::NonRes) > self.max_nonres {
            self.seek_test();
            let t = self.test.unwrap();
            self.end_test(t);
            self.seek_test();
        }
        self.seek_cold();
        Some(h)
    }
    /// One request: whether it hit, and the page it replaced.
    fn access(&mut self, k: u64) -> (bool, Option<u64>) {
        if let Some(p) = self.pos(k).filter(|&p| self.ring[p].1.resident()) {
            self.ring[p].2 = true;
            return (true, None);
        }
        let full = self.resident() == self.cap;
        let mut victim = None;
        let st = if !full {
            if self.cap - self.resident() > self.min {
                St::Hot
            } else {
                St::ColdTest
            }
        } else {
            while victim.is_none() {
                victim = self.run_cold();
            }
            if self.promotes(k) {
                St::Hot
            } else {
                St::ColdTest
            }
        };
        if self.pos(k).is_some() {
            self.move_to_head(k, st);
        } else {
            self.ring.push((k, st, false));
        }
        self.seek_all();
        (false, victim)
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
