//! LeCaR against a brute-force reference drawing the same numbers.
//!
//! The reference keeps the cached blocks in a `Vec` (least recently used
//! first) with their counts and the request each reached its count at, and
//! each ghost list as a `Vec` (oldest first); it draws from the same
//! generator ([`Lehmer64`] from [`LIBCACHESIM_SEED`]) and applies
//! libCacheSim's weight update in the same order. Every access must hit or
//! miss alike, in block and byte caches (key `k` has `1 + k % 7` bytes).
//! proptest prints the failing case for replay.

use coopcache_core::policy::{
    Capacity, LIBCACHESIM_SEED, LeCaR, LeCaRParams, Lehmer64, Policy, access,
};
use proptest::prelude::*;

#[derive(Clone, Copy, Debug)]
enum Op {
    Access(u64),
    Remove(u64),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        12 => (0..40u64).prop_map(Op::Access),
        1 => (0..40u64).prop_map(Op::Remove),
    ];
    prop::collection::vec(op, 1..600)
}

/// A cached block: key, size, references, and the request at which it
/// last changed count (the oldest at a count is LFU's victim).
#[derive(Clone, Copy, Debug)]
struct Cached {
    key: u64,
    size: u64,
    freq: u64,
    reached: u64,
}

struct Reference {
    /// Least recently used first.
    cached: Vec<Cached>,
    /// (key, size, request evicted at), oldest first.
    ghosts: [Vec<(u64, u64, u64)>; 2],
    w: [f64; 2],
    rng: Lehmer64,
    requests: u64,
    /// Orders equal counts where a request both hits and inserts.
    tick: u64,
    capacity: u64,
    discount: f64,
}

impl Reference {
    fn new(capacity: u64) -> Self {
        Reference {
            cached: Vec::new(),
            ghosts: [Vec::new(), Vec::new()],
            w: [0.5, 0.5],
            rng: Lehmer64::new(LIBCACHESIM_SEED),
            requests: 0,
            tick: 0,
            capacity,
            discount: 0.005f64.powf(1.0 / capacity as f64),
        }
    }

    fn regret(&mut self, expert: usize, evicted_at: u64) {
        let r = self.discount.powf((self.requests - evicted_at) as f64);
        let (mut up, mut other) = (self.w[expert], self.w[1 - expert]);
        up = up * (-0.45 * r).exp() + 1e-10;
        let s = up + other + 2e-10;
        up /= s;
        other = (other + 1e-10) / s;
        self.w[expert] = up;
        self.w[1 - expert] = other;
    }

    fn access(&mut self, key: u64, size: u64) -> bool {
        self.requests += 1;
        self.tick += 1;
        if let Some(i) = self.cached.iter().position(|c| c.key == key) {
            let mut c = self.cached.remove(i);
            c.freq += 1;
            c.reached = self.tick;
            self.cached.push(c);
            return true;
        }
        for expert in 0..2 {
            if let Some(g) = self.ghosts[expert].iter().position(|g| g.0 == key) {
                let (_, _, at) = self.ghosts[expert].remove(g);
                self.regret(expert, at);
            }
        }
        if size > self.capacity {
            return false;
        }
        while self.cached.iter().map(|c| c.size).sum::<u64>() + size > self.capacity {
            self.evict();
        }
        self.tick += 1;
        self.cached.push(Cached {
            key,
            size,
            freq: 1,
            reached: self.tick,
        });
        false
    }

    fn evict(&mut self) {
        let lru = 0;
        let lfu = (0..self.cached.len())
            .min_by_key(|&i| (self.cached[i].freq, self.cached[i].reached))
            .unwrap();
        let (victim, expert) = if lru == lfu {
            (lru, None)
        } else {
            let r = (self.rng.next_u64() % 100) as f64 / 100.0;
            if r < self.w[0] {
                (lru, Some(0))
            } else {
                (lfu, Some(1))
            }
        };
        let c = self.cached.remove(victim);
        if let Some(e) = expert {
            let list = &mut self.ghosts[e];
            list.push((c.key, c.size, self.requests));
            while list.iter().map(|g| g.1).sum::<u64>() > self.capacity / 2 {
                list.remove(0);
            }
        }
    }

    fn remove(&mut self, key: u64) {
        self.cached.retain(|c| c.key != key);
    }
}

fn check(capacity: Capacity, ops: &[Op]) -> Result<(), TestCaseError> {
    let (units, sized) = match capacity {
        Capacity::Blocks(n) => (n as u64, false),
        Capacity::Bytes(b) => (b, true),
    };
    let mut policy = LeCaR::<u64>::with_params(capacity, LeCaRParams::default()).unwrap();
    let mut reference = Reference::new(units);
    for (step, &op) in ops.iter().enumerate() {
        match op {
            Op::Access(key) => {
                let size = if sized { 1 + key % 7 } else { 1 };
                let got = access(&mut policy, key, size as u32, |_| {});
                let want = reference.access(key, size);
                prop_assert_eq!(got, want, "access {} of {} at step {}", key, size, step);
            }
            Op::Remove(key) => {
                policy.remove(key);
                reference.remove(key);
            }
        }
        prop_assert_eq!(policy.weights(), (reference.w[0], reference.w[1]));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn lecar_matches_its_reference(ops in ops(), capacity in 1usize..24) {
        check(Capacity::Blocks(capacity), &ops)?;
    }

    #[test]
    fn lecar_matches_its_reference_in_bytes(ops in ops(), capacity in 1u64..80) {
        check(Capacity::Bytes(capacity), &ops)?;
    }
}
