//! S3-FIFO v1: S3-FIFO whose new blocks fill main while the cache warms.

use super::{BlockKey, Capacity, Lookup, Policy, S3Fifo, S3FifoParams, Weight};
use crate::error::CapacityError;

/// libCacheSim's current `S3FIFO` (Yang et al., "FIFO queues are all you
/// need for cache eviction", SOSP 2023, as revised in libCacheSim in
/// December 2024), named `s3fifo-v1` here so that `s3fifo` keeps meaning
/// the original `S3FIFOv0` ([`S3Fifo`]) and no result silently changes.
///
/// The one difference: until the cache has evicted anything, a new block
/// that finds the small queue full enters main instead. Blocks inserted
/// while the cache warms then stay a little longer, and those inserted once
/// it is full leave sooner; everything else (10% small, 90% ghost,
/// move-to-main threshold 2, main a CLOCK with a 2-bit counter) is
/// [`S3Fifo`]'s, including its one departure for an object exactly as large
/// as the small queue. Suits the same workloads (web, key-value, CDN).
#[derive(Clone, Debug)]
pub struct S3FifoV1<K, W = u32> {
    inner: S3Fifo<K, W>,
    /// Whether any eviction has happened: warm-up is over.
    has_evicted: bool,
}

impl<K: BlockKey> S3FifoV1<K> {
    /// An empty S3-FIFO v1 cache of `capacity` blocks or bytes (at least 10).
    pub fn new(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_weights(capacity)
    }
}

impl<K: BlockKey, W: Weight> S3FifoV1<K, W> {
    /// An empty S3-FIFO v1 cache of `capacity` blocks or bytes (at least
    /// 10), storing sizes as `W`.
    pub fn with_weights(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_params(capacity, S3FifoParams::default())
    }

    /// An empty S3-FIFO v1 cache of `capacity` with `params` (the same
    /// knobs as [`S3Fifo`], libCacheSim's `S3FIFO` parameters).
    pub fn with_params(
        capacity: impl Into<Capacity>,
        params: S3FifoParams,
    ) -> Result<Self, CapacityError> {
        Ok(S3FifoV1 {
            inner: S3Fifo::with_params(capacity, params)?,
            has_evicted: false,
        })
    }
}

impl<K: BlockKey, W: Weight> Policy<K> for S3FifoV1<K, W> {
    /// Whether the miss hit a ghost, which sends the block straight to main.
    type Miss = bool;

    fn name(&self) -> &'static str {
        "s3fifo-v1"
    }

    fn capacity(&self) -> usize {
        self.inner.capacity()
    }

    fn len(&self) -> usize {
        self.inner.len()
    }

    fn used(&self) -> usize {
        self.inner.used()
    }

    /// libCacheSim's `can_insert` checks the small queue before the
    /// admissioner.
    fn admits_before_admission(&self) -> bool {
        true
    }

    fn admits(&self, size: u32, miss: &bool) -> bool {
        self.inner.admits(size, miss)
    }

    fn contains(&self, key: K) -> bool {
        self.inner.contains(key)
    }

    #[inline]
    fn lookup(&mut self, key: K) -> Lookup<bool> {
        self.inner.lookup(key)
    }

    fn victim(&self, miss: &bool, size: u32) -> Option<K> {
        self.inner.victim(miss, size)
    }

    fn evict(&mut self, miss: &bool, size: u32) -> Option<K> {
        self.has_evicted = true;
        self.inner.evict(miss, size)
    }

    fn insert(&mut self, key: K, size: u32, ghost_hit: bool) {
        if !ghost_hit && !self.has_evicted && self.inner.small_is_full() {
            self.inner.insert_into_main(key, size);
        } else {
            self.inner.insert(key, size, ghost_hit);
        }
    }

    fn remove(&mut self, key: K) -> bool {
        self.inner.remove(key)
    }

    fn metadata_bytes(&self) -> usize {
        self.inner.metadata_bytes()
    }

    fn iter_oldest_first(&self) -> impl Iterator<Item = K> + '_ {
        self.inner.iter_oldest_first()
    }
}
