//! Local replacement policies: one trait, one file per policy.
//!
//! A policy orders the blocks of one cache and decides which to drop. The
//! request loop that drives it (look up, make room, insert) is written once,
//! in [`access`], not in each policy. Choosing a victim without changing
//! anything ([`Policy::victim`]) is separate from evicting it
//! ([`Policy::evict`]) because the cooperation algorithms forward victims to
//! peers instead of dropping them.
//!
//! Every policy counts blocks, not bytes: a cache of capacity `c` holds at
//! most `c` blocks. Each policy reproduces libCacheSim's definition of the
//! same name exactly (miss for miss, see `tests/golden.rs`), or says in its
//! doc where it departs.

mod arc;
mod clock;
mod fifo;
mod kind;
mod lirs;
mod lru;
mod s3fifo;
mod sieve;
mod two_q;

pub use arc::{Arc, ArcMiss};
pub use clock::Clock;
pub use fifo::Fifo;
pub use kind::{PolicyFactory, PolicyKind, PolicyVisitor, UnknownPolicy};
pub use lirs::{Lirs, LirsMiss};
pub use lru::Lru;
pub use s3fifo::S3Fifo;
pub use sieve::Sieve;
pub use two_q::TwoQ;

use crate::error::CapacityError;
use std::fmt::Debug;
use std::hash::Hash;

/// What identifies a block in a cache: copyable, comparable and hashable.
///
/// The simulator uses `u64` ids; the daemon will use (file, version, index).
pub trait BlockKey: Copy + Eq + Hash + Debug + Send + Sync + 'static {}

impl<T: Copy + Eq + Hash + Debug + Send + Sync + 'static> BlockKey for T {}

/// Outcome of [`Policy::lookup`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup<M> {
    /// The block is cached; the policy has recorded the reference.
    Hit,
    /// The block is not cached. `M` carries what the policy learnt from the
    /// miss (a ghost hit, say) to the [`Policy::insert`] that follows.
    Miss(M),
}

/// A local replacement policy over blocks identified by `K`.
///
/// After a [`Lookup::Miss`], the caller makes room with
/// [`needs_room`](Policy::needs_room) and [`evict`](Policy::evict), then
/// calls [`insert`](Policy::insert) with the same key and miss, before any
/// other call that changes the policy. [`access`] is that loop.
pub trait Policy<K: BlockKey> {
    /// What a miss tells the following insert: `()` for policies without
    /// history, which ghost list was hit for ARC, and so on.
    type Miss: Copy + Debug;

    /// Short lower-case name, as accepted by [`PolicyKind`]'s `FromStr`.
    fn name(&self) -> &'static str;

    /// Most blocks the cache holds.
    fn capacity(&self) -> usize;

    /// Blocks cached now.
    fn len(&self) -> usize;

    /// Whether no block is cached.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `key` is cached, without counting it as a reference.
    fn contains(&self, key: K) -> bool;

    /// A reference to `key`: on a hit the policy updates its order and
    /// returns [`Lookup::Hit`]; on a miss it records what it learns (ghost
    /// hits, recency of non-resident blocks) and returns [`Lookup::Miss`].
    fn lookup(&mut self, key: K) -> Lookup<Self::Miss>;

    /// Whether the block of `miss` cannot be inserted before an eviction.
    fn needs_room(&self, miss: &Self::Miss) -> bool {
        let _ = miss;
        self.len() >= self.capacity()
    }

    /// The block the next [`evict`](Policy::evict) would drop, without
    /// changing anything. `None` if that call would only reorganise the
    /// queues without dropping a block (S3-FIFO promoting its whole small
    /// queue, LIRS demoting a LIR block into a non-full HIR queue).
    fn victim(&self, miss: &Self::Miss) -> Option<K>;

    /// Makes room for the block of `miss` and returns the block dropped, if
    /// one was. Called only while [`needs_room`](Policy::needs_room) holds.
    fn evict(&mut self, miss: &Self::Miss) -> Option<K>;

    /// Inserts the block that missed with `miss`; the caller has made room.
    fn insert(&mut self, key: K, miss: Self::Miss);

    /// Drops `key` if it is cached (an invalidation, or a block handed to a
    /// peer) and returns whether it was.
    fn remove(&mut self, key: K) -> bool;

    /// Bytes of heap the policy's metadata occupies now (index and queues).
    fn metadata_bytes(&self) -> usize;

    /// Every cached block (no ghosts), roughly in the order the policy would
    /// evict them: the least valuable first. The cooperation algorithms scan
    /// it to choose a victim of their own (N-Chance's oldest duplicate).
    fn iter_oldest_first(&self) -> impl Iterator<Item = K> + '_;
}

/// One request through `policy`: a hit, or a miss that makes room (reporting
/// each dropped block to `on_evict`) and inserts `key`. Returns whether it hit.
///
/// This is the request loop of every policy, written once.
#[inline]
pub fn access<K: BlockKey, P: Policy<K>>(
    policy: &mut P,
    key: K,
    mut on_evict: impl FnMut(K),
) -> bool {
    match policy.lookup(key) {
        Lookup::Hit => true,
        Lookup::Miss(miss) => {
            while policy.needs_room(&miss) {
                if let Some(victim) = policy.evict(&miss) {
                    on_evict(victim);
                }
            }
            policy.insert(key, miss);
            false
        }
    }
}

/// Checks a requested capacity against a policy's smallest workable one and
/// the largest the slab indices allow.
pub(crate) fn check_capacity(
    policy: &'static str,
    capacity: usize,
    min: usize,
) -> Result<(), CapacityError> {
    // Ghost lists hold up to another `capacity` entries and slab indices are
    // u32, so keep the total well inside u32.
    const MAX: usize = 1 << 30;
    if capacity < min || capacity > MAX {
        return Err(CapacityError {
            policy,
            capacity,
            min,
            max: MAX,
        });
    }
    Ok(())
}
