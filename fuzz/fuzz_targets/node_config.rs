//! The `coopcache node --config FILE` TOML file. Its struct and its
//! `parse_duration` live in the `coopcache` binary (crates/cli/src/node.rs,
//! live.rs), which a fuzz target cannot link, so this target deserializes
//! the same shape (`NodeFile` below: keep it in step with `FileConfig`;
//! unknown keys refused) with the same `toml` version, then hands each
//! value to the library parser the node hands it to: `budget::parse_size`
//! (`memory`, `block_size`, then `Budget::blocks`),
//! `AlgorithmKind::parse_live`, `PolicyKind::from_str` and `live_policy`,
//! `OriginSpec::from_str`, `tls::check_name`. Checks that none panics.
#![no_main]

use coopcache_core::coop::{AlgorithmKind, live_policy};
use coopcache_core::policy::PolicyKind;
use coopcache_node::budget::{Budget, parse_size};
use coopcache_node::origin::OriginSpec;
use coopcache_node::tls::check_name;
use libfuzzer_sys::fuzz_target;
use std::net::{SocketAddr, SocketAddrV4};
use std::path::PathBuf;

/// The settings a node's TOML file may hold (as `FileConfig`).
#[allow(dead_code)]
#[derive(serde::Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
struct NodeFile {
    origin: Option<String>,
    memory: Option<String>,
    algorithm: Option<String>,
    policy: Option<String>,
    listen: Option<SocketAddr>,
    advertise: Option<String>,
    http: Option<SocketAddr>,
    join: Option<Vec<String>>,
    discover: Option<bool>,
    discover_group: Option<SocketAddrV4>,
    data_dir: Option<PathBuf>,
    name: Option<String>,
    id: Option<u32>,
    block_size: Option<String>,
    chances: Option<u8>,
    attr_ttl: Option<String>,
    origin_delay: Option<String>,
}

fuzz_target!(|text: &str| {
    let Ok(file) = toml::from_str::<NodeFile>(text) else {
        return;
    };
    let memory = file.memory.as_deref().map(parse_size);
    let block_size = file.block_size.as_deref().map(parse_size);
    if let (Some(Ok(total)), Some(Ok(block_size))) = (memory, block_size)
        && let Ok(block_size) = u32::try_from(block_size)
    {
        let _ = Budget { total, block_size }.blocks();
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
});
