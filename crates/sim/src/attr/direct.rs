//! Direct simulation of one attribute cache, request by request.

use super::AttrPoint;
use coopcache_core::attr::{Access, AttributeCache, FileRequest, Resolved, request_keys};
use coopcache_core::policy::{BLOCK, Lookup, Policy};
use std::collections::HashSet;

/// Replays `requests` through an attribute cache of `resolved`, write-back
/// (the paper's appendix A.5): writes allocate their blocks and mark them
/// dirty; evicting a dirty block is a write expulsion, one origin write.
/// A read request misses if any of its blocks misses; each missing block
/// is one origin read of its sub-cache's block size.
pub fn simulate(
    requests: &[FileRequest],
    resolved: &Resolved,
) -> Result<AttrPoint, coopcache_core::CapacityError> {
    let mut cache = AttributeCache::new(resolved.clone())?;
    let mut dirty: HashSet<u64> = HashSet::new();
    let mut p = AttrPoint {
        total: resolved.total,
        ..AttrPoint::default()
    };
    for r in requests {
        let Some(keys) = request_keys(resolved, r) else {
            continue;
        };
        let block_bytes = resolved.block_size(coopcache_core::attr::span(resolved, r).0);
        let mut missed = false;
        for key in keys {
            match cache.lookup(key) {
                Lookup::Hit => {}
                Lookup::Miss(miss) => {
                    while cache.needs_room(&miss, BLOCK) {
                        if let Some(victim) = cache.evict(&miss, BLOCK)
                            && dirty.remove(&victim)
                        {
                            p.write_expulsions += 1;
                            p.origin_write_bytes += resolved.block_size(miss);
                        }
                    }
                    cache.insert(key, BLOCK, miss);
                    if r.access == Access::Read {
                        missed = true;
                        p.origin_read_blocks += 1;
                        p.origin_read_bytes += block_bytes;
                    }
                }
            }
            if r.access == Access::Write {
                dirty.insert(key);
            }
        }
        match r.access {
            Access::Read => {
                p.read_requests += 1;
                p.read_misses += u64::from(missed);
            }
            Access::Write => p.write_requests += 1,
        }
    }
    Ok(p)
}
