//! The `coopcache node --config FILE` TOML file, parsed by
//! `config::FileConfig::parse` (unknown keys refused), each value then
//! handed to the library parser the node hands it to: `budget::parse_size`
//! (`memory`, `block_size`, then `Budget::blocks`),
//! `AlgorithmKind::parse_live`, `PolicyKind::from_str` and `live_policy`,
//! `OriginSpec::from_str`, `tls::check_name`. Checks that none panics.

use coopcache_core::coop::{AlgorithmKind, live_policy};
use coopcache_core::policy::PolicyKind;
use coopcache_node::budget::{Budget, parse_size};
use coopcache_node::config::FileConfig;
use coopcache_node::origin::OriginSpec;
use coopcache_node::tls::check_name;

/// One input (the target's whole contract is in the module doc).
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(file) = FileConfig::parse(text) else {
        return;
    };
    let memory = file.memory.as_deref().map(parse_size);
    let block_size = file.block_size.as_deref().map(parse_size);
    if let (Some(Ok(total)), Some(Ok(block_size))) = (memory, block_size)
        && let Ok(block_size) = u32::try_from(block_size)
    {
        let private = file.private.unwrap_or(false);
        let _ = Budget {
            total,
            block_size,
            private,
        }
        .blocks();
    }
    if let Some(a) = &file.algorithm {
        let _ = AlgorithmKind::parse_live(a);
    }
    if let Some(Ok(p)) = file.policy.as_deref().map(str::parse::<PolicyKind>) {
        let _ = live_policy(p);
    }
    if let Some(o) = &file.origin {
        let _ = o.parse::<OriginSpec>();
    }
    if let Some(n) = &file.name {
        let _ = check_name(n);
    }
}
