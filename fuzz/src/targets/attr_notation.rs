//! The attribute-cache notation (`--attr`, e.g. `64K/128 ID, x/4K
//! Temporal, 2M/128K Sequential`) parsed by `AttrConfig::from_str`, then
//! resolved for a total size. Input: 8 bytes of total (big-endian), then
//! the notation. Beyond not panicking: an accepted notation prints back
//! (`Display`) to a string that parses to the same configuration, routes
//! every file type somewhere, and resolves (if it does) to sub-caches of at
//! least one block each with routes inside the list.

use coopcache_core::attr::{AttrConfig, FileType};

/// One input (the target's whole contract is in the module doc).
pub fn run(data: &[u8]) {
    let Some((total, text)) = data.split_first_chunk::<8>() else {
        return;
    };
    let total = u64::from_be_bytes(*total);
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    let Ok(config) = text.parse::<AttrConfig>() else {
        return;
    };
    let printed = config.to_string();
    assert_eq!(
        printed.parse::<AttrConfig>().as_ref(),
        Ok(&config),
        "{printed}"
    );
    for kind in FileType::ALL {
        for large in [false, true] {
            assert!(config.route_index(kind, large).is_some());
        }
    }
    let Ok(resolved) = config.resolve(total) else {
        return;
    };
    assert!(resolved.subcaches.iter().all(|&(_, blocks, _)| blocks > 0));
    for kind in FileType::ALL {
        for size in [0, 1, resolved.cutoff - 1, resolved.cutoff, u64::MAX] {
            let i = resolved.route(kind, size);
            assert!(i < resolved.subcaches.len());
            assert!(resolved.block_size(i) > 0);
        }
    }
}
