//! One client's cache in the consistency replay.

use std::collections::HashMap;

use coopcache_core::c2cfs::Tcommit;
use coopcache_core::policy::{Lru, access};
use coopcache_core::{Capacity, CapacityError, Policy};

/// A cached object: the origin version it holds, and its `Tlocal` if the
/// manager confirmed it as the latest.
#[derive(Clone, Copy, Debug)]
pub(super) struct Copy {
    pub(super) version: u64,
    pub(super) tlocal: Option<Tcommit>,
}

/// A client: its LRU cache and what each cached object holds.
pub(super) struct Node {
    lru: Lru<u64>,
    copies: HashMap<u64, Copy>,
}

impl Node {
    pub(super) fn new(bytes: u64) -> Result<Node, CapacityError> {
        Ok(Node {
            lru: Lru::with_weights(Capacity::Bytes(bytes))?,
            copies: HashMap::new(),
        })
    }

    /// The copy of `id`, if cached.
    pub(super) fn copy(&self, id: u64) -> Option<Copy> {
        self.copies.get(&id).copied()
    }

    /// A read served from the cached copy: it becomes the most recent.
    pub(super) fn touch(&mut self, id: u64) {
        self.lru.lookup(id);
    }

    /// Caches `copy` of `id`, of `size` bytes, calling `dropped` for each
    /// object evicted to make room. False if it is larger than the cache
    /// (then not cached, and any older copy is gone).
    pub(super) fn keep(
        &mut self,
        id: u64,
        size: u32,
        copy: Copy,
        mut dropped: impl FnMut(u64),
    ) -> bool {
        let copies = &mut self.copies;
        access(&mut self.lru, id, size.max(1), |victim| {
            copies.remove(&victim);
            dropped(victim);
        });
        if self.lru.contains(id) {
            copies.insert(id, copy);
            true
        } else {
            copies.remove(&id);
            false
        }
    }

    /// Sets the `Tlocal` of the cached copy of `id`.
    pub(super) fn confirm(&mut self, id: u64, tlocal: Option<Tcommit>) {
        if let Some(c) = self.copies.get_mut(&id) {
            c.tlocal = tlocal;
        }
    }
}
