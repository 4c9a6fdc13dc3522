//! `shared` mode's version cache: how long a node trusts the version of a
//! file it asked the origin for before it asks again (`--attr-ttl`, named
//! after NFS's attribute cache timeout; not to be confused with Willick's
//! attribute sub-caches in [`crate::attr`]).
//!
//! With a TTL of 0 (the default) nothing is ever trusted: every open asks
//! the origin, which is close-to-open. A longer TTL trades that for fewer
//! origin round trips: a write closed elsewhere is seen within the TTL, as
//! with NFS's `actimeo`. A node's own commits are never hidden by it: the
//! writer forgets the entry ([`VersionCache::forget`]) before it asks again.
//!
//! Time comes in (microseconds, the caller's clock), so the daemon and a
//! harness decide the same way.

use std::collections::HashMap;

/// Versions of files, each with the time it was asked for, at most
/// `capacity` of them.
#[derive(Debug)]
pub struct VersionCache<V> {
    ttl_us: u64,
    capacity: usize,
    entries: HashMap<Box<str>, (V, u64)>,
}

impl<V: Clone> VersionCache<V> {
    /// A cache trusting a version for `ttl_us` microseconds, holding at
    /// most `capacity` files (at least one).
    pub fn new(ttl_us: u64, capacity: usize) -> Self {
        VersionCache {
            ttl_us,
            capacity: capacity.max(1),
            entries: HashMap::new(),
        }
    }

    /// The version of `path` if it was asked for less than the TTL ago.
    pub fn get(&self, path: &str, now: u64) -> Option<V> {
        if self.ttl_us == 0 {
            return None;
        }
        let (v, at) = self.entries.get(path)?;
        (now.saturating_sub(*at) < self.ttl_us).then(|| v.clone())
    }

    /// Records that the origin gave `version` for `path` at `now`. When
    /// full, the expired entries go first, then (all being young, which
    /// only a burst of opens of distinct files can make) every entry: a
    /// forgotten version costs one origin round trip, never a stale read.
    pub fn insert(&mut self, path: &str, version: V, now: u64) {
        if self.ttl_us == 0 {
            return;
        }
        if self.entries.len() >= self.capacity && !self.entries.contains_key(path) {
            let ttl = self.ttl_us;
            self.entries
                .retain(|_, (_, at)| now.saturating_sub(*at) < ttl);
            if self.entries.len() >= self.capacity {
                self.entries.clear();
            }
        }
        self.entries.insert(path.into(), (version, now));
    }

    /// Forgets `path`: the next [`get`](Self::get) misses.
    pub fn forget(&mut self, path: &str) {
        self.entries.remove(path);
    }

    /// Files held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no file is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zero_ttl_trusts_nothing() {
        let mut c = VersionCache::new(0, 8);
        c.insert("f", 1, 0);
        assert_eq!(c.get("f", 0), None);
        assert!(c.is_empty());
    }

    #[test]
    fn a_version_is_trusted_for_the_ttl_and_not_a_microsecond_longer() {
        let mut c = VersionCache::new(1_000, 8);
        c.insert("f", 7, 5_000);
        assert_eq!(c.get("f", 5_000), Some(7));
        assert_eq!(c.get("f", 5_999), Some(7));
        assert_eq!(c.get("f", 6_000), None);
        assert_eq!(c.get("g", 5_000), None);
    }

    #[test]
    fn forget_makes_the_next_get_ask_the_origin() {
        let mut c = VersionCache::new(1_000, 8);
        c.insert("f", 7, 0);
        c.forget("f");
        assert_eq!(c.get("f", 1), None);
    }

    #[test]
    fn a_full_cache_drops_expired_entries_first_and_never_grows_past_its_bound() {
        let mut c = VersionCache::new(100, 3);
        c.insert("old", 1, 0);
        c.insert("a", 2, 150);
        c.insert("b", 3, 160);
        // "old" expired at 100: it goes, the young ones stay.
        c.insert("c", 4, 170);
        assert_eq!(c.len(), 3);
        assert_eq!(c.get("a", 170), Some(2));
        assert_eq!(c.get("old", 170), None);
        // All young: the cache starts again rather than grow.
        c.insert("d", 5, 180);
        assert!(c.len() <= 3);
        assert_eq!(c.get("d", 180), Some(5));
        for i in 0..1_000 {
            c.insert(&format!("f{i}"), i, 200);
            assert!(c.len() <= 3);
        }
    }

    #[test]
    fn a_clock_that_goes_back_does_not_make_an_entry_immortal_or_panic() {
        let mut c = VersionCache::new(100, 3);
        c.insert("f", 1, 1_000);
        // saturating: an earlier `now` reads as age 0, trusted, and later
        // times expire it as usual.
        assert_eq!(c.get("f", 10), Some(1));
        assert_eq!(c.get("f", 1_100), None);
    }
}
