//! Micro-benchmarks of the policy operations: a hit, a miss that evicts
//! and inserts, and peeking at the victim, on a full cache of 10,000 blocks.
//!
//! ```sh
//! cargo bench -p coopcache-core --bench policies
//! ```

#![allow(missing_docs)] // criterion_group! defines an undocumented `pub fn benches`

use coopcache_core::Lookup;
use coopcache_core::policy::{BLOCK, Policy, PolicyKind, PolicyVisitor, access};
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

const CAPACITY: usize = 10_000;

/// A fixed pseudo-random permutation of the cached keys, so hits do not
/// walk the lists in order.
fn shuffled_keys() -> Vec<u64> {
    let mut keys: Vec<u64> = (0..CAPACITY as u64).collect();
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    for i in (1..keys.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        keys.swap(i, (state % (i as u64 + 1)) as usize);
    }
    keys
}

/// Registers the three benchmarks of one policy.
struct Bench<'a> {
    c: &'a mut Criterion,
    kind: PolicyKind,
    keys: &'a [u64],
}

impl PolicyVisitor<u64> for Bench<'_> {
    type Output = ();

    fn visit<P: Policy<u64> + Send + 'static>(self, mut policy: P) {
        for &k in self.keys {
            access(&mut policy, k, BLOCK, |_| {});
        }
        let mut group = self.c.benchmark_group(self.kind.name());
        let keys = self.keys;
        let mut i = 0;
        group.bench_function("hit", |b| {
            b.iter(|| {
                i = (i + 1) % keys.len();
                black_box(access(&mut policy, keys[i], BLOCK, |_| {}))
            })
        });
        let mut next = CAPACITY as u64;
        group.bench_function("miss_evict_insert", |b| {
            b.iter(|| {
                next += 1;
                black_box(access(&mut policy, next, BLOCK, |v| {
                    black_box(v);
                }))
            })
        });
        // A key never inserted, so the lookup misses.
        if let Lookup::Miss(miss) = policy.lookup(u64::MAX) {
            group.bench_function("victim", |b| {
                b.iter(|| black_box(policy.victim(&miss, BLOCK)))
            });
        }
        group.finish();
    }
}

fn policies(c: &mut Criterion) {
    let keys = shuffled_keys();
    // Belady needs the trace's future, which only a replay gives it.
    for kind in PolicyKind::ALL.into_iter().filter(|k| !k.needs_future()) {
        kind.build(
            CAPACITY,
            Bench {
                c,
                kind,
                keys: &keys,
            },
        )
        .expect("valid capacity");
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(std::time::Duration::from_millis(300))
        .measurement_time(std::time::Duration::from_secs(1));
    targets = policies
}
criterion_main!(benches);
