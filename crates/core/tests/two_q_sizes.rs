//! 2Q in a byte cache with knobs that make `A1out` smaller than `A1in` or
//! `Am` smaller than `A1in`: the cases libCacheSim's sub-caches decide by
//! refusing an object, checked step by step.

use coopcache_core::policy::{Capacity, Policy, TwoQ, TwoQParams, access};

fn two_q(capacity: u64, ain: f64, aout: f64) -> TwoQ<u64> {
    TwoQ::with_params(Capacity::Bytes(capacity), TwoQParams { ain, aout }).unwrap()
}

fn run(cache: &mut TwoQ<u64>, requests: &[(u64, u32)]) {
    for &(key, size) in requests {
        access(cache, key, size, |_| {});
    }
}

fn order(cache: &TwoQ<u64>) -> Vec<u64> {
    cache.iter_oldest_first().collect()
}

/// A1in 40 bytes, A1out 25: an object of 30 leaving A1in is not
/// remembered and does not flush the smaller ghosts already there, so a
/// later request for one of those is a ghost hit (it goes to `Am`) and one
/// for the big object is a plain miss (back to A1in).
#[test]
fn an_object_larger_than_a1out_is_not_remembered_and_drops_no_ghost() {
    let mut cache = two_q(100, 0.4, 0.25);
    // a and b leave A1in into A1out (20 bytes of ghosts); x (30) leaves
    // A1in when g comes.
    run(
        &mut cache,
        &[
            (1, 10),
            (2, 10),
            (9, 30),
            (3, 30),
            (4, 30),
            (5, 10),
            (6, 30),
        ],
    );
    assert_eq!(order(&cache), [3, 4, 5, 6]);
    // a is a ghost hit: into Am, the end of the order.
    run(&mut cache, &[(1, 10)]);
    assert_eq!(order(&cache), [4, 5, 6, 1]);
    // x was not remembered: a plain miss, newest in A1in, before Am.
    run(&mut cache, &[(9, 30)]);
    assert_eq!(order(&cache), [5, 6, 9, 1]);
}

/// A1in 90 bytes, Am 10: a ghost hit of 50 bytes fits the cache but not
/// `Am`. It is not cached, and making room for it ends (a loop that only
/// looked at the empty `Am` would never find a victim).
#[test]
fn a_ghost_hit_larger_than_am_is_not_cached_and_does_not_hang() {
    let mut cache = two_q(100, 0.9, 1.0);
    run(&mut cache, &[(1, 50), (2, 50), (3, 10)]);
    assert_eq!(order(&cache), [2, 3]);
    assert!(!access(&mut cache, 1, 50, |_| {}));
    assert!(!cache.contains(1));
    assert!(cache.used() <= 100);
}
