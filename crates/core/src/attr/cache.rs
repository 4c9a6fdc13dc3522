//! The attribute cache as one replacement policy over its sub-caches.

use super::{FileRequest, Resolved, block_key, key_subcache};
use crate::error::CapacityError;
use crate::policy::{Lookup, Lru, Policy};

/// An attribute cache: one LRU sub-cache per category of a resolved
/// configuration, each counting blocks of its own size. Keys carry their
/// sub-cache ([`block_key`]), so the cache is a [`Policy`] over `u64` and
/// can be any node's local cache; a miss makes room only in the key's own
/// sub-cache, so large files never push out inodes.
///
/// `len` and `capacity` count blocks over all sub-caches (blocks of
/// different sizes); each sub-cache stays within its own capacity.
#[derive(Clone, Debug)]
pub struct AttributeCache {
    subcaches: Vec<Lru<u64>>,
    resolved: Resolved,
}

impl AttributeCache {
    /// An empty cache of the resolved configuration.
    pub fn new(resolved: Resolved) -> Result<Self, CapacityError> {
        let subcaches = resolved
            .subcaches
            .iter()
            .map(|&(_, blocks, _)| Lru::new(blocks))
            .collect::<Result<_, _>>()?;
        Ok(AttributeCache {
            subcaches,
            resolved,
        })
    }

    /// The configuration.
    pub fn resolved(&self) -> &Resolved {
        &self.resolved
    }

    /// Blocks cached in sub-cache `i`.
    pub fn subcache_len(&self, i: usize) -> usize {
        self.subcaches.get(i).map_or(0, |c| c.len())
    }

    /// The sub-cache and the block index range `first..end` of request `r`.
    pub fn span(&self, r: &FileRequest) -> (usize, u64, u64) {
        span(&self.resolved, r)
    }
}

/// The sub-cache taking request `r` under `resolved`, and the range of
/// block indexes (in that sub-cache's block size) it touches. The end
/// saturates at `u64::MAX` (a byte range reaching the last byte at 1-byte
/// blocks), beyond any block a key can name.
pub fn span(resolved: &Resolved, r: &FileRequest) -> (usize, u64, u64) {
    let subcache = resolved.route(r.kind, r.file_size);
    let block = resolved.block_size(subcache);
    let (offset, len) = r.range();
    let last = offset.saturating_add(len - 1);
    (subcache, offset / block, (last / block).saturating_add(1))
}

/// The cache keys of request `r`'s blocks under `resolved`, or `None` if
/// its file id or block numbers do not fit a key.
pub fn request_keys(resolved: &Resolved, r: &FileRequest) -> Option<impl Iterator<Item = u64>> {
    let (subcache, first, end) = span(resolved, r);
    block_key(subcache, r.file, end.saturating_sub(1))?;
    Some((first..end).filter_map(move |i| block_key(subcache, r.file, i)))
}

impl Policy<u64> for AttributeCache {
    /// The sub-cache of the key that missed.
    type Miss = usize;

    fn name(&self) -> &'static str {
        "attribute"
    }

    fn capacity(&self) -> usize {
        self.subcaches.iter().map(Lru::capacity).sum()
    }

    fn len(&self) -> usize {
        self.subcaches.iter().map(Lru::len).sum()
    }

    fn used(&self) -> usize {
        self.subcaches.iter().map(Lru::used).sum()
    }

    fn contains(&self, key: u64) -> bool {
        self.subcaches
            .get(key_subcache(key))
            .is_some_and(|c| c.contains(key))
    }

    #[inline]
    fn lookup(&mut self, key: u64) -> Lookup<usize> {
        let i = key_subcache(key);
        match self.subcaches.get_mut(i).map(|c| c.lookup(key)) {
            Some(Lookup::Hit) => Lookup::Hit,
            _ => Lookup::Miss(i),
        }
    }

    /// Blocks of every sub-cache have size 1 in their own sub-cache.
    fn needs_room(&self, miss: &usize, size: u32) -> bool {
        self.subcaches
            .get(*miss)
            .is_some_and(|c| c.needs_room(&(), size))
    }

    fn victim(&self, miss: &usize, size: u32) -> Option<u64> {
        self.subcaches.get(*miss)?.victim(&(), size)
    }

    fn evict(&mut self, miss: &usize, size: u32) -> Option<u64> {
        self.subcaches.get_mut(*miss)?.evict(&(), size)
    }

    fn insert(&mut self, key: u64, size: u32, miss: usize) {
        if let Some(c) = self.subcaches.get_mut(miss) {
            c.insert(key, size, ());
        }
    }

    fn remove(&mut self, key: u64) -> bool {
        self.subcaches
            .get_mut(key_subcache(key))
            .is_some_and(|c| c.remove(key))
    }

    fn metadata_bytes(&self) -> usize {
        self.subcaches.iter().map(Lru::metadata_bytes).sum()
    }

    fn iter_oldest_first(&self) -> impl Iterator<Item = u64> + '_ {
        self.subcaches.iter().flat_map(|c| c.iter_oldest_first())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::{Access, AttrConfig, FileType};
    use crate::policy::{BLOCK, access};

    fn request(kind: FileType, file: u64, file_size: u64, offset: u64, len: u64) -> FileRequest {
        FileRequest {
            client: 0,
            file,
            kind,
            file_size,
            offset,
            len,
            access: Access::Read,
        }
    }

    /// Found by the fuzz target `trace_file_requests`: a request reaching
    /// the last byte at 1-byte blocks overflowed the end block; it now
    /// saturates and names no key.
    #[test]
    fn a_range_to_the_last_byte_at_one_byte_blocks_has_no_keys() {
        let config: AttrConfig = "x/1 Unix, 64K/128 ID".parse().unwrap();
        let resolved = config.resolve(1 << 20).unwrap();
        let r = request(FileType::Datafile, 1, 10, u64::MAX, 5);
        let (_, first, end) = span(&resolved, &r);
        assert_eq!((first, end), (u64::MAX, u64::MAX));
        assert!(request_keys(&resolved, &r).is_none());
    }

    #[test]
    fn requests_split_into_their_subcaches_blocks() {
        let config: AttrConfig = "64K/128 ID, x/4K Temporal, 2M/128K Sequential"
            .parse()
            .unwrap();
        let cache = AttributeCache::new(config.resolve(4 << 20).unwrap()).unwrap();
        assert_eq!(
            cache.span(&request(FileType::Directory, 1, 512, 0, 512)),
            (0, 0, 4)
        );
        assert_eq!(
            cache.span(&request(FileType::Datafile, 2, 20_000, 4000, 200)),
            (1, 0, 2)
        );
        assert_eq!(
            cache.span(&request(FileType::Datafile, 3, 1 << 20, 0, 8192)),
            (2, 0, 1)
        );
        // Executables are read whole.
        assert_eq!(
            cache.span(&request(FileType::Executable, 4, 40_000, 0, 1)),
            (1, 0, 10)
        );
    }

    proptest::proptest! {
        /// Random requests of every type and size through random
        /// configurations: every sub-cache stays within its own capacity,
        /// and every key lands in the sub-cache its request routes to.
        #[test]
        fn no_subcache_ever_exceeds_its_capacity(
            id in 1u64..64,
            temporal in 1u64..64,
            sequential in 0u64..4,
            requests in proptest::collection::vec(
                (0usize..4, 0u64..40, 1u64..(3 << 20), 0u64..(1 << 20), 1u64..(256 << 10), proptest::bool::ANY),
                1..300,
            ),
        ) {
            let notation = if sequential == 0 {
                format!("{}K/128 ID, x/4K Temporal", id)
            } else {
                format!("{}K/128 ID, x/4K Temporal, {}K/64K Sequential", id, sequential * 64)
            };
            let config: AttrConfig = notation.parse().unwrap();
            let total = (id + temporal * 4 + sequential * 64) << 10;
            let mut cache = AttributeCache::new(config.resolve(total).unwrap()).unwrap();
            let resolved = cache.resolved().clone();
            for (kind, file, size, offset, len, remove) in requests {
                let r = FileRequest {
                    client: 0,
                    file,
                    kind: FileType::ALL[kind],
                    file_size: size,
                    offset: offset.min(size - 1),
                    len,
                    access: Access::Read,
                };
                let route = resolved.route(r.kind, r.file_size);
                for k in request_keys(&resolved, &r).unwrap() {
                    proptest::prop_assert_eq!(key_subcache(k), route);
                    if remove {
                        cache.remove(k);
                    } else {
                        access(&mut cache, k, BLOCK, |_| {});
                    }
                }
                for (i, &(_, blocks, _)) in resolved.subcaches.iter().enumerate() {
                    proptest::prop_assert!(cache.subcache_len(i) <= blocks, "sub-cache {} over {}", i, blocks);
                }
            }
        }
    }

    #[test]
    fn a_flood_of_large_files_leaves_inodes_alone() {
        let config: AttrConfig = "1K/128 ID, x/4K Temporal, 256K/128K Sequential"
            .parse()
            .unwrap();
        let mut cache = AttributeCache::new(config.resolve(300 << 10).unwrap()).unwrap();
        let resolved = cache.resolved().clone();
        let inode = request(FileType::Inode, 7, 128, 0, 128);
        let keys: Vec<u64> = request_keys(&resolved, &inode).unwrap().collect();
        for &k in &keys {
            access(&mut cache, k, BLOCK, |_| {});
        }
        for file in 100..200 {
            let big = request(FileType::Datafile, file, 4 << 20, 0, 4 << 20);
            for k in request_keys(&resolved, &big).unwrap() {
                access(&mut cache, k, BLOCK, |_| {});
            }
        }
        assert!(
            keys.iter().all(|&k| cache.contains(k)),
            "the inode was pushed out"
        );
        assert_eq!(
            cache.subcache_len(2),
            2,
            "the sequential sub-cache holds its two blocks"
        );
        assert!(cache.len() <= cache.capacity());
    }
}
