//! The block index every policy uses: key to slab slot.

use crate::list::Idx;
use std::collections::HashMap;

/// Maps a cached (or ghost) block to its node in the policy's slab.
///
/// foldhash's fixed-seed hasher: a folded multiply per `u64` key, far cheaper
/// than SipHash, and deterministic, so runs replay identically. Keys come
/// from traces and from the cluster's own block ids, not from an adversary
/// who could aim collisions at one process's table.
pub(crate) type Index<K, V = Idx> = HashMap<K, V, foldhash::fast::FixedState>;

/// An empty index with room for `capacity` keys before it grows.
pub(crate) fn with_capacity<K, V>(capacity: usize) -> Index<K, V> {
    HashMap::with_capacity_and_hasher(capacity, foldhash::fast::FixedState::default())
}

/// Heap bytes of an index: hashbrown stores each bucket's entry and one
/// control byte, plus a group of trailing control bytes.
pub(crate) fn allocated_bytes<K, V>(index: &Index<K, V>) -> usize {
    const GROUP: usize = 16;
    let buckets = buckets(index.capacity());
    if buckets == 0 {
        0
    } else {
        buckets * (std::mem::size_of::<(K, V)>() + 1) + GROUP
    }
}

/// hashbrown's bucket count for a table that reports `capacity`: a power of
/// two with a 7/8 maximum load (capacity `buckets - 1` below 8 buckets).
fn buckets(capacity: usize) -> usize {
    if capacity == 0 {
        0
    } else if capacity < 8 {
        (capacity + 1).next_power_of_two()
    } else {
        (capacity * 8 / 7).next_power_of_two()
    }
}
