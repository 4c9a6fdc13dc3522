//! Local replacement policies: one trait, one file per policy.
//!
//! A policy orders the blocks of one cache and decides which to drop. The
//! request loop that drives it (look up, make room, insert) is written once,
//! in [`access`], not in each policy. Choosing a victim without changing
//! anything ([`Policy::victim`]) is separate from evicting it
//! ([`Policy::evict`]) because the cooperation algorithms forward victims to
//! peers instead of dropping them.
//!
//! # Sizes
//!
//! A cache is sized in blocks or in bytes ([`Capacity`]). Every object
//! has a size in the cache's unit: 1 in a block cache, whatever its bytes
//! are; its bytes in a byte cache. After a miss, every call that admits,
//! makes room or inserts is told the size of the object that missed, and a
//! cache holds objects while the sum of their sizes stays within its
//! capacity ([`Policy::used`] against [`Policy::capacity`]). [`access`]
//! evicts until the new object fits, as libCacheSim does; an object a
//! policy does not [admit](Policy::admits) (larger than the cache, or than
//! a queue it must enter) is not cached and the request is a miss. A hit
//! keeps the size the object was cached with, as in libCacheSim.
//!
//! A block cache is the byte cache whose objects all have size 1, so one
//! implementation serves both. Each slab node keeps its object's size and
//! each list the sum of its nodes' sizes ([`List::size`](crate::list::List::size)),
//! so a policy reads its queues' occupancy off its lists. How nodes store
//! sizes is a type parameter, [`Weight`]: `u32` by default, [`Unit`] (no
//! storage, every size 1) in the block caches [`PolicyKind`] makes
//! ([`build`](PolicyKind::build) with [`Capacity::Blocks`], and
//! [`factory`](PolicyKind::factory) for a cluster's nodes), so block
//! replays and cooperative simulations pay nothing for sizes. A new policy generic over `W`
//! gets both; one that is not stores `u32` sizes everywhere. Each policy reproduces libCacheSim's
//! definition of the same name exactly, in blocks (`tests/golden.rs`) and
//! in bytes (`tests/golden_sizes.rs`), or says in its doc where it departs.

mod arc;
mod belady;
mod clock;
mod clockpro;
mod fifo;
mod gdsf;
mod hyperbolic;
mod kind;
pub mod knobs;
mod lecar;
mod lehmer;
mod lfu;
mod lfuda;
mod lhd;
mod lhd_model;
mod lirs;
mod lru;
mod mq;
mod param_error;
mod qdlp;
mod random;
mod s3fifo;
mod s3fifo_v1;
mod sieve;
mod slru;
mod spec;
mod two_q;
mod wtinylfu;

pub use arc::{Arc, ArcMiss};
pub use belady::{Belady, NEVER, next_uses};
pub use clock::{Clock, ClockParams};
pub use clockpro::{ClockPro, ClockProMiss, ClockProParams};
pub use fifo::Fifo;
pub use gdsf::{Gdsf, GdsfMiss};
pub use hyperbolic::{HYPERBOLIC_SAMPLES, Hyperbolic};
pub use kind::{PolicyFactory, PolicyKind, PolicyVisitor, UnknownPolicy};
pub use lecar::{LeCaR, LeCaRParams};
pub use lehmer::{LIBCACHESIM_SEED, Lehmer64};
pub use lfu::Lfu;
pub use lfuda::Lfuda;
pub use lhd::{Lhd, LhdParams};
pub use lirs::{Lirs, LirsMiss};
pub use lru::Lru;
pub use mq::{MQ_MAX_QUEUES, Mq, MqParams};
pub use param_error::ParamError;
pub use qdlp::{Qdlp, QdlpParams};
pub use random::{RANDOM_SEED, Random, RandomParams, splitmix64};
pub use s3fifo::{S3Fifo, S3FifoParams};
pub use s3fifo_v1::S3FifoV1;
pub use sieve::Sieve;
pub use slru::{Slru, SlruParams};
pub use spec::{PolicyParams, PolicySpec, SpecError, split_top_level};
pub use two_q::{TwoQ, TwoQParams};
pub use wtinylfu::{WTINYLFU_WINDOW, WTinyLfu, WTinyLfuParams};

pub use crate::list::{Unit, Weight};

use crate::admission::{Admission, NoAdmission};
use crate::error::CapacityError;
use std::fmt::Debug;
use std::hash::Hash;

/// What identifies a block in a cache: copyable, comparable and hashable.
///
/// The simulator uses `u64` ids; the daemon will use (file, version, index).
pub trait BlockKey: Copy + Eq + Hash + Debug + Send + Sync + 'static {}

impl<T: Copy + Eq + Hash + Debug + Send + Sync + 'static> BlockKey for T {}

/// The size of every object in a block cache ([`Capacity::Blocks`]).
pub const BLOCK: u32 = 1;

/// How much a cache holds, and in which unit its objects are sized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capacity {
    /// This many blocks: every object has size 1 (libCacheSim's object
    /// mode). Index and queues are allocated for this many up front.
    Blocks(usize),
    /// This many bytes: every object has its own size in bytes. Index and
    /// queues grow with the objects cached.
    Bytes(u64),
}

impl From<usize> for Capacity {
    fn from(blocks: usize) -> Self {
        Capacity::Blocks(blocks)
    }
}

impl std::fmt::Display for Capacity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Capacity::Blocks(n) => write!(f, "{n} blocks"),
            Capacity::Bytes(b) => write!(f, "{b} bytes"),
        }
    }
}

impl Capacity {
    /// Objects to allocate room for up front: the block count, or a guess
    /// for a byte cache (which then grows while it fills).
    pub(crate) fn objects_hint(self) -> usize {
        match self {
            Capacity::Blocks(n) => n,
            Capacity::Bytes(_) => 1 << 12,
        }
    }
}

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
/// After a [`Lookup::Miss`], the caller checks that the policy
/// [admits](Policy::admits) the object, makes room with
/// [`needs_room`](Policy::needs_room) and [`evict`](Policy::evict), then
/// calls [`insert`](Policy::insert) with the same key, size and miss, before
/// any other call that changes the policy. [`access`] is that loop. Sizes
/// are in the cache's unit (see [`Capacity`]): a block cache is always
/// told 1.
pub trait Policy<K: BlockKey> {
    /// What a miss tells the following insert: `()` for policies without
    /// history, which ghost list was hit for ARC, and so on.
    type Miss: Copy + Debug;

    /// Short lower-case name, as accepted by [`PolicyKind`]'s `FromStr`.
    fn name(&self) -> &'static str;

    /// Most the cache holds, in its unit: blocks, or bytes.
    fn capacity(&self) -> usize;

    /// Objects (blocks) cached now.
    fn len(&self) -> usize;

    /// Sum of the sizes of the objects cached now: [`len`](Policy::len) in
    /// a block cache, bytes in a byte cache.
    fn used(&self) -> usize;

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

    /// Whether an object of `size` that missed with `miss` may be cached
    /// at all (libCacheSim's `can_insert`): by default, if it is no larger
    /// than the cache. A policy whose new objects enter a queue of their own
    /// may also refuse objects larger than that queue.
    fn admits(&self, size: u32, miss: &Self::Miss) -> bool {
        let _ = miss;
        u64::from(size) <= self.capacity() as u64
    }

    /// Whether libCacheSim's `can_insert` of this policy checks its own
    /// queue limit before asking the cache's admissioner (S3-FIFO, 2Q),
    /// rather than after (the default, `cache_can_insert_default`): an
    /// object a queue refuses is then never shown to an admission policy.
    fn admits_before_admission(&self) -> bool {
        false
    }

    /// Whether the object of `miss`, of `size`, cannot be inserted before
    /// an eviction: by default, if it would take the cache over capacity.
    fn needs_room(&self, miss: &Self::Miss, size: u32) -> bool {
        let _ = miss;
        self.used() as u64 + u64::from(size) > self.capacity() as u64
    }

    /// The block the next [`evict`](Policy::evict) would drop, without
    /// changing anything. `None` if that call would only reorganise the
    /// queues without dropping a block (S3-FIFO promoting its whole small
    /// queue, LIRS demoting a LIR block into a non-full HIR queue).
    fn victim(&self, miss: &Self::Miss, size: u32) -> Option<K>;

    /// Makes room for the object of `miss`, of `size`, and returns the
    /// block dropped, if one was. Called only while
    /// [`needs_room`](Policy::needs_room) holds.
    fn evict(&mut self, miss: &Self::Miss, size: u32) -> Option<K>;

    /// Inserts the object that missed with `miss`, of `size`; the caller has
    /// made room.
    fn insert(&mut self, key: K, size: u32, miss: Self::Miss);

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

/// One request through `policy` for `key`, an object of `size` (1 in a
/// block cache): a hit, or a miss that makes room (reporting each dropped
/// block to `on_evict`) and inserts `key`. An object the policy does not
/// [admit](Policy::admits) (larger than the cache) is left out and evicts
/// nothing. Returns whether it hit.
///
/// This is the request loop of every policy, written once, and the same as
/// libCacheSim's `cache_get_base`: find, check it can be inserted, evict
/// until it fits, insert.
#[inline]
pub fn access<K: BlockKey, P: Policy<K>>(
    policy: &mut P,
    key: K,
    size: u32,
    on_evict: impl FnMut(K),
) -> bool {
    access_admitted(policy, &mut NoAdmission, key, size, on_evict)
}

/// [`access`] behind an admission policy, as libCacheSim's
/// `cache_get_base` with an admissioner: after the lookup the admission
/// policy sees the request ([`Admission::update`], hit or miss); on a miss
/// it is asked first ([`Admission::admit`]) and the policy's own
/// [`admits`](Policy::admits) only if it agrees. With [`NoAdmission`] both
/// calls compile away: this is [`access`].
#[inline]
pub fn access_admitted<K: BlockKey, P: Policy<K>, A: Admission<K>>(
    policy: &mut P,
    admission: &mut A,
    key: K,
    size: u32,
    mut on_evict: impl FnMut(K),
) -> bool {
    let lookup = policy.lookup(key);
    admission.update(key, size, policy.capacity() as u64);
    match lookup {
        Lookup::Hit => true,
        Lookup::Miss(miss) => {
            // libCacheSim asks the admissioner first, then the policy
            // (`cache_can_insert_default`), but S3-FIFO's and 2Q's
            // `can_insert` check their queue first: an object refused there
            // is not shown to the admission policy (a second-hit filter
            // does not record it).
            // Without admission (`A::ACTIVE` false) this is the policy's
            // check alone.
            let admitted = if A::ACTIVE && !policy.admits_before_admission() {
                admission.admit(key, size) && policy.admits(size, &miss)
            } else {
                policy.admits(size, &miss) && (!A::ACTIVE || admission.admit(key, size))
            };
            if admitted {
                while policy.needs_room(&miss, size) {
                    if let Some(victim) = policy.evict(&miss, size) {
                        on_evict(victim);
                    }
                }
                policy.insert(key, size, miss);
            }
            false
        }
    }
}

/// Checks a requested capacity against a policy's smallest workable one and
/// the largest the slab indices (blocks) or arithmetic (bytes) allow, and
/// returns it in the cache's unit.
pub(crate) fn check_capacity(
    policy: &'static str,
    capacity: Capacity,
    min: usize,
) -> Result<usize, CapacityError> {
    // Ghost lists hold up to another `capacity` entries and slab indices are
    // u32, so keep the total well inside u32. Byte caches keep their sums of
    // sizes (up to twice the capacity, with ghosts) far from overflow.
    const MAX_BLOCKS: u64 = 1 << 30;
    const MAX_BYTES: u64 = 1 << 60;
    let (units, max, unit) = match capacity {
        Capacity::Blocks(n) => (n as u64, MAX_BLOCKS, "blocks"),
        Capacity::Bytes(b) => (b, MAX_BYTES, "bytes"),
    };
    if units < min as u64 || units > max {
        return Err(CapacityError {
            policy,
            capacity: units,
            unit,
            min: min as u64,
            max,
        });
    }
    usize::try_from(units).map_err(|_| CapacityError {
        policy,
        capacity: units,
        unit,
        min: min as u64,
        max: usize::MAX as u64,
    })
}

/// A policy parameter outside its range, reported as a [`CapacityError`]
/// (what a policy's `with_params` returns) whose `policy` names the policy
/// and the parameter's range, and whose range is empty: no capacity makes
/// the parameter valid.
pub(crate) fn bad_param(param: &'static str, capacity: Capacity) -> CapacityError {
    let (capacity, unit) = match capacity {
        Capacity::Blocks(n) => (n as u64, "blocks"),
        Capacity::Bytes(b) => (b, "bytes"),
    };
    CapacityError {
        policy: param,
        capacity,
        unit,
        min: 0,
        max: 0,
    }
}
