//! Model-based property tests of every replacement policy.
//!
//! Random sequences of accesses and removals over a small key space (so
//! hits, misses, ghost hits and evictions all happen) are applied to the
//! real policy and to a shadow set of what must be cached. After every step:
//! the capacity holds, every eviction was predicted by `victim`, nothing
//! leaves the cache without an eviction or removal, and `contains` and `len`
//! agree with the shadow. LRU, FIFO, CLOCK, SIEVE, LFU, LFUDA, Random and
//! Hyperbolic (their seeded draws) are also compared, hit for hit, with a
//! plain reference implementation. Every check runs twice:
//! in a block cache (every object has size 1) and in a byte cache, where
//! each key has its own size (`1 + key % 7`), the sizes cached never exceed
//! the capacity and `used` is the sum of the shadow's sizes. proptest prints
//! the failing case (and its seed in `proptest-regressions/`) for replay.

use coopcache_core::policy::{
    Capacity, HYPERBOLIC_SAMPLES, Lookup, Policy, PolicyKind, PolicyVisitor, RANDOM_SEED,
    splitmix64,
};
use proptest::prelude::*;
use std::collections::BTreeSet;

#[derive(Clone, Copy, Debug)]
enum Op {
    Access(u64),
    Remove(u64),
}

const KEYS: u64 = 48;

/// A key's size in a byte cache.
fn byte_size(key: u64) -> u32 {
    1 + (key % 7) as u32
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        8 => (0..KEYS).prop_map(Op::Access),
        1 => (0..KEYS).prop_map(Op::Remove),
    ];
    prop::collection::vec(op, 1..400)
}

/// Applies `ops`, checking the invariants; returns whether each access hit.
struct Check<'a> {
    ops: &'a [Op],
    /// LIRS as libCacheSim defines it can evict on a hit without reporting
    /// it (see its doc), and so can SLRU, so only the capacity bound is
    /// checked for them.
    exact_accounting: bool,
    /// Whether objects have their own sizes (a byte cache).
    sized: bool,
}

impl Check<'_> {
    fn size(&self, key: u64) -> u32 {
        if self.sized { byte_size(key) } else { 1 }
    }
}

impl PolicyVisitor<u64> for Check<'_> {
    type Output = Result<Vec<bool>, TestCaseError>;

    fn visit<P: Policy<u64> + Send + 'static>(self, mut policy: P) -> Self::Output {
        let mut shadow = BTreeSet::new();
        let mut hits = Vec::new();
        for &op in self.ops {
            match op {
                Op::Access(key) => {
                    let was_cached = shadow.contains(&key);
                    let size = self.size(key);
                    match policy.lookup(key) {
                        Lookup::Hit => hits.push(true),
                        Lookup::Miss(miss) if !policy.admits(size, &miss) => hits.push(false),
                        Lookup::Miss(miss) => {
                            hits.push(false);
                            while policy.needs_room(&miss, size) {
                                let predicted = policy.victim(&miss, size);
                                let evicted = policy.evict(&miss, size);
                                prop_assert_eq!(
                                    predicted,
                                    evicted,
                                    "victim() mispredicted evict()"
                                );
                                if let Some(v) = evicted {
                                    prop_assert!(
                                        shadow.remove(&v) || !self.exact_accounting,
                                        "evicted {} was not cached",
                                        v
                                    );
                                }
                            }
                            policy.insert(key, size, miss);
                            shadow.insert(key);
                        }
                    }
                    if self.exact_accounting {
                        prop_assert_eq!(
                            *hits.last().unwrap(),
                            was_cached,
                            "hit/miss of {} disagrees with the shadow",
                            key
                        );
                    }
                }
                Op::Remove(key) => {
                    let removed = policy.remove(key);
                    let expected = shadow.remove(&key);
                    if self.exact_accounting {
                        prop_assert_eq!(
                            removed,
                            expected,
                            "remove({}) disagrees with the shadow",
                            key
                        );
                    }
                }
            }
            prop_assert!(
                policy.used() <= policy.capacity(),
                "{} cached in a cache of {}",
                policy.used(),
                policy.capacity()
            );
            if self.exact_accounting {
                prop_assert_eq!(policy.len(), shadow.len());
                let sizes: usize = shadow.iter().map(|&k| self.size(k) as usize).sum();
                prop_assert_eq!(policy.used(), sizes, "used() is not the sum of the sizes");
                for k in 0..KEYS {
                    prop_assert_eq!(
                        policy.contains(k),
                        shadow.contains(&k),
                        "contains({}) disagrees with the shadow",
                        k
                    );
                }
            }
        }
        Ok(hits)
    }
}

fn run(kind: PolicyKind, capacity: Capacity, ops: &[Op]) -> Result<Vec<bool>, TestCaseError> {
    let check = Check {
        ops,
        exact_accounting: !kind.drops_on_hit(),
        sized: matches!(capacity, Capacity::Bytes(_)),
    };
    kind.build(capacity, check).expect("valid capacity")
}

/// Reference policies written the obvious way, over a `Vec` ordered from
/// the oldest (index 0) to the newest block, with a flag per block.
struct Reference {
    kind: PolicyKind,
    blocks: Vec<(u64, bool)>,
    /// SIEVE's hand, as an index; `None` means the oldest block.
    hand: Option<usize>,
    /// LFU's reference count of each cached block; a hit also moves the
    /// block to the newest end, so among equal counts the oldest reached
    /// its count first.
    counts: std::collections::BTreeMap<u64, u64>,
    /// Random's and Hyperbolic's generator: the blocks are then kept in the
    /// policy's dense order (a victim or removed block's place taken by the
    /// last).
    rng: u64,
    /// Requests so far, and the request that cached each block
    /// (Hyperbolic's age).
    requests: u64,
    entered: std::collections::BTreeMap<u64, u64>,
    /// LFUDA's age and largest key, and when each block took its key (the
    /// oldest at the smallest key goes first).
    min_freq: u64,
    max_freq: u64,
    placed: std::collections::BTreeMap<u64, u64>,
    capacity: usize,
    sized: bool,
}

impl Reference {
    fn size(&self, key: u64) -> usize {
        if self.sized {
            byte_size(key) as usize
        } else {
            1
        }
    }

    fn used(&self) -> usize {
        self.blocks.iter().map(|b| self.size(b.0)).sum()
    }

    /// LFUDA's `update_min_freq`: the age becomes the smallest key above it
    /// held by a block other than `except` (up to the largest key given).
    fn lfuda_update_min(&mut self, except: Option<u64>) {
        let next = self
            .blocks
            .iter()
            .filter(|b| Some(b.0) != except)
            .map(|b| self.counts[&b.0])
            .filter(|&f| f > self.min_freq && f <= self.max_freq)
            .min();
        if let Some(f) = next {
            self.min_freq = f;
        }
    }

    fn access(&mut self, key: u64) -> bool {
        self.requests += 1;
        if let Some(i) = self.blocks.iter().position(|b| b.0 == key) {
            match self.kind {
                PolicyKind::Lru => {
                    let b = self.blocks.remove(i);
                    self.blocks.push(b);
                }
                PolicyKind::Clock | PolicyKind::Sieve => self.blocks[i].1 = true,
                PolicyKind::Lfu => {
                    *self.counts.get_mut(&key).unwrap() += 1;
                    let b = self.blocks.remove(i);
                    self.blocks.push(b);
                }
                PolicyKind::Hyperbolic => *self.counts.get_mut(&key).unwrap() += 1,
                PolicyKind::Lfuda => {
                    let old = self.counts[&key];
                    let new = old + self.min_freq;
                    self.max_freq = self.max_freq.max(new);
                    let alone = self
                        .blocks
                        .iter()
                        .all(|b| b.0 == key || self.counts[&b.0] != old);
                    if self.min_freq == old && alone {
                        self.lfuda_update_min(Some(key));
                    }
                    self.counts.insert(key, new);
                    self.placed.insert(key, self.requests);
                }
                _ => {}
            }
            return true;
        }
        let size = self.size(key);
        if size > self.capacity {
            return false;
        }
        while self.used() + size > self.capacity {
            self.evict();
        }
        self.blocks.push((key, false));
        self.counts.insert(key, 1);
        self.entered.insert(key, self.requests);
        if self.kind == PolicyKind::Lfuda {
            let freq = self.min_freq + 1;
            self.max_freq = self.max_freq.max(freq);
            self.counts.insert(key, freq);
            self.placed.insert(key, self.requests);
        }
        false
    }

    fn evict(&mut self) {
        match self.kind {
            PolicyKind::Clock => {
                while self.blocks[0].1 {
                    let (k, _) = self.blocks.remove(0);
                    self.blocks.push((k, false));
                }
                self.blocks.remove(0);
            }
            PolicyKind::Sieve => {
                let mut i = self.hand.unwrap_or(0);
                while self.blocks[i].1 {
                    self.blocks[i].1 = false;
                    i = (i + 1) % self.blocks.len();
                }
                self.blocks.remove(i);
                self.hand = (i < self.blocks.len()).then_some(i);
            }
            PolicyKind::Random => {
                let i = splitmix64(&mut self.rng) % self.blocks.len() as u64;
                self.blocks.swap_remove(i as usize);
            }
            PolicyKind::Hyperbolic => {
                let mut best: Option<(usize, f64)> = None;
                for _ in 0..HYPERBOLIC_SAMPLES {
                    let i = (splitmix64(&mut self.rng) % self.blocks.len() as u64) as usize;
                    let k = self.blocks[i].0;
                    let age = (self.requests - self.entered[&k]) as f64;
                    let score = 1.0e8 * self.counts[&k] as f64 / age;
                    if best.is_none_or(|(_, s)| score < s) {
                        best = Some((i, score));
                    }
                }
                self.blocks.swap_remove(best.unwrap().0);
            }
            PolicyKind::Lfuda => {
                // The age's key (1 before the first eviction), or the
                // smallest key held where that one is empty.
                let wanted = self.min_freq.max(1);
                let freq = if self.blocks.iter().any(|b| self.counts[&b.0] == wanted) {
                    wanted
                } else {
                    self.blocks.iter().map(|b| self.counts[&b.0]).min().unwrap()
                };
                let i = (0..self.blocks.len())
                    .filter(|&i| self.counts[&self.blocks[i].0] == freq)
                    .min_by_key(|&i| self.placed[&self.blocks[i].0])
                    .unwrap();
                self.blocks.remove(i);
                self.min_freq = freq;
                if self.blocks.iter().all(|b| self.counts[&b.0] != freq) {
                    self.lfuda_update_min(None);
                }
            }
            PolicyKind::Lfu => {
                let least = self.blocks.iter().map(|b| self.counts[&b.0]).min().unwrap();
                let i = self
                    .blocks
                    .iter()
                    .position(|b| self.counts[&b.0] == least)
                    .unwrap();
                let (k, _) = self.blocks.remove(i);
                self.counts.remove(&k);
            }
            _ => {
                self.blocks.remove(0);
            }
        }
    }

    fn remove(&mut self, key: u64) {
        if let Some(i) = self.blocks.iter().position(|b| b.0 == key) {
            if matches!(self.kind, PolicyKind::Random | PolicyKind::Hyperbolic) {
                self.blocks.swap_remove(i);
                return;
            }
            if self.kind == PolicyKind::Lfuda {
                let freq = self.counts[&key];
                self.blocks.remove(i);
                if freq == self.min_freq && self.blocks.iter().all(|b| self.counts[&b.0] != freq) {
                    self.lfuda_update_min(None);
                }
                return;
            }
            self.blocks.remove(i);
            self.counts.remove(&key);
            self.hand = match self.hand {
                Some(h) if h > i => Some(h - 1),
                Some(h) if h == i && h == self.blocks.len() => None,
                other => other,
            };
        }
    }
}

fn reference_hits(kind: PolicyKind, capacity: Capacity, ops: &[Op]) -> Vec<bool> {
    let (capacity, sized) = match capacity {
        Capacity::Blocks(n) => (n, false),
        Capacity::Bytes(b) => (b as usize, true),
    };
    let mut r = Reference {
        kind,
        blocks: Vec::new(),
        hand: None,
        counts: Default::default(),
        rng: RANDOM_SEED,
        requests: 0,
        entered: Default::default(),
        min_freq: 0,
        max_freq: 0,
        placed: Default::default(),
        capacity,
        sized,
    };
    let mut hits = Vec::new();
    for &op in ops {
        match op {
            Op::Access(k) => hits.push(r.access(k)),
            Op::Remove(k) => r.remove(k),
        }
    }
    hits
}

/// The policies compared with a reference.
const SIMPLE: [PolicyKind; 8] = [
    PolicyKind::Lru,
    PolicyKind::Fifo,
    PolicyKind::Clock,
    PolicyKind::Sieve,
    PolicyKind::Lfu,
    PolicyKind::Random,
    PolicyKind::Hyperbolic,
    PolicyKind::Lfuda,
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_policy_keeps_its_invariants(ops in ops(), capacity in 10usize..24) {
        for kind in PolicyKind::ALL {
            run(kind, Capacity::Blocks(capacity), &ops)
                .map_err(|e| TestCaseError::fail(format!("{kind}: {e}")))?;
        }
    }

    #[test]
    fn every_policy_keeps_its_invariants_in_bytes(ops in ops(), capacity in 10u64..120) {
        for kind in PolicyKind::ALL {
            run(kind, Capacity::Bytes(capacity), &ops)
                .map_err(|e| TestCaseError::fail(format!("{kind} in bytes: {e}")))?;
        }
    }

    #[test]
    fn simple_policies_match_their_reference(ops in ops(), capacity in 1usize..24) {
        for kind in SIMPLE {
            let capacity = Capacity::Blocks(capacity);
            let got = run(kind, capacity, &ops)?;
            prop_assert_eq!(got, reference_hits(kind, capacity, &ops), "{} differs from its reference", kind);
        }
    }

    #[test]
    fn simple_policies_match_their_reference_in_bytes(ops in ops(), capacity in 1u64..60) {
        for kind in SIMPLE {
            let capacity = Capacity::Bytes(capacity);
            let got = run(kind, capacity, &ops)?;
            prop_assert_eq!(got, reference_hits(kind, capacity, &ops), "{} in bytes differs from its reference", kind);
        }
    }
}

#[test]
fn zero_capacity_is_refused_by_every_policy() {
    for kind in PolicyKind::ALL {
        let err = kind
            .build(
                0,
                Check {
                    ops: &[],
                    exact_accounting: true,
                    sized: false,
                },
            )
            .unwrap_err();
        assert!(err.to_string().contains("cache size 0"), "{kind}: {err}");
    }
}
