//! One trace, three ways: through the paper's simulator, through the live
//! protocol simulated, and through a live loopback cluster, one request at
//! a time, each read's level recorded. The live replay follows
//! `crates/node/tests/equivalence.rs`: after each read it waits for the
//! cluster's quiescence (N-Chance's forwarded singlets and the directory
//! updates run after the read completes), because the simulators run
//! every request to quiescence.

use anyhow::{Context, Result};
use coopcache_core::coop::{AlgorithmKind, ClusterConfig, Level};
use coopcache_node::NodeHandle;
use coopcache_node::origin::FileVersion;
use coopcache_node::quiescence::quiescence;
use coopcache_sim::coop::stepwise::stepwise;
use coopcache_sim::trace::Request;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Bits of a trace id that number the block within its file (the
/// sprite-like workload's `file << 16 | block`).
pub(crate) const BLOCK_BITS: u32 = 16;

/// The live file and block index of trace block `id`.
pub(crate) fn file_of(id: u64) -> (u64, u32) {
    (id >> BLOCK_BITS, (id & ((1 << BLOCK_BITS) - 1)) as u32)
}

/// The origin file holding trace file `file`.
pub(crate) fn file_name(file: u64) -> String {
    format!("f{file}.bin")
}

/// The simulator's level for each read of `requests`.
pub(crate) fn simulate(
    algorithm: AlgorithmKind,
    config: &ClusterConfig,
    requests: &[Request],
) -> Result<Vec<Level>> {
    let steps = stepwise(algorithm, config, requests, false)
        .with_context(|| format!("simulating {algorithm} request by request"))?;
    Ok(steps.into_iter().map(|s| s.level).collect())
}

/// Replays `requests` on the live `nodes` (client `c` reads through node
/// `c`), returning each read's level.
pub(crate) async fn live(
    nodes: &[Arc<NodeHandle>],
    versions: &HashMap<u64, Arc<FileVersion>>,
    requests: &[Request],
    mut progress: impl FnMut(usize),
) -> Result<Vec<Level>> {
    let names: HashMap<u64, Arc<str>> = versions
        .keys()
        .map(|&f| (f, Arc::from(file_name(f).as_str())))
        .collect();
    let mut levels = Vec::with_capacity(requests.len());
    for (i, r) in requests.iter().enumerate() {
        let (file, index) = file_of(r.id);
        let node = nodes
            .get(r.client as usize)
            .with_context(|| format!("request {i}: client {} has no node", r.client))?;
        let (path, version) = names
            .get(&file)
            .zip(versions.get(&file))
            .with_context(|| format!("request {i}: no origin file for trace file {file}"))?;
        let (_, level) = node.read_block(path, version, index).await?;
        levels.push(level);
        // The messages a read leaves behind (forwarded singlets,
        // placements, directory updates) are delivered before the next.
        quiescence(nodes, Duration::from_secs(10)).await?;
        progress(i + 1);
    }
    Ok(levels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_ids_split_into_file_and_block() {
        assert_eq!(file_of(3 << 16 | 7), (3, 7));
        assert_eq!(file_of(5), (0, 5));
        assert_eq!(file_name(12), "f12.bin");
    }
}
