//! The core state machines a live node runs: its node machine and its
//! slice of the manager, built from the same types the simulator builds.

use crate::block::BlockId;
use crate::store::{SharedStore, Stores};
use bytes::Bytes;
use coopcache_core::coop::{
    Addr, AlgorithmKind, ClusterConfig, ConfigError, DirectNode, DirectoryManager, GreedyNode,
    HashNode, ManagerMode, Msg, NChanceNode, NodeId, NodeMachine, Outbox,
};
use coopcache_core::policy::Lru;
use std::fmt;
use std::str::FromStr;

/// The algorithms the daemon runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LiveAlgorithm {
    /// No cooperation: each node reads the origin for its own misses.
    Base,
    /// Greedy Forwarding: misses are served from a peer's memory.
    Greedy,
    /// N-Chance Forwarding: Greedy, and the last copy of an evicted block
    /// is forwarded to a random peer instead of dropped.
    NChance,
    /// Hash-Distributed Caching: most of each node's memory is a partition
    /// of the cluster's cache holding the blocks whose ids hash to it.
    Hash,
    /// Direct Client Cooperation: a node parks its evictions in a private
    /// remote cache at one peer (its successor among the live members).
    Direct,
}

impl LiveAlgorithm {
    /// Every algorithm the daemon runs.
    pub const ALL: [LiveAlgorithm; 5] = [
        LiveAlgorithm::Base,
        LiveAlgorithm::Greedy,
        LiveAlgorithm::NChance,
        LiveAlgorithm::Hash,
        LiveAlgorithm::Direct,
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            LiveAlgorithm::Base => "base",
            LiveAlgorithm::Greedy => "greedy",
            LiveAlgorithm::NChance => "nchance",
            LiveAlgorithm::Hash => "hash",
            LiveAlgorithm::Direct => "direct",
        }
    }
}

/// Share of a Hash-Distributed node's blocks that are its partition (the
/// simulator's default `central_fraction`).
const PARTITION_SHARE: f64 = 0.8;

/// Share of a Direct node's blocks it lends to the peer that parks there.
const LENT_SHARE: f64 = 0.5;

impl LiveAlgorithm {
    /// The same algorithm in the simulator.
    pub fn kind(self) -> AlgorithmKind {
        match self {
            LiveAlgorithm::Base => AlgorithmKind::Base,
            LiveAlgorithm::Greedy => AlgorithmKind::Greedy,
            LiveAlgorithm::NChance => AlgorithmKind::NChance,
            LiveAlgorithm::Hash => AlgorithmKind::Hash,
            LiveAlgorithm::Direct => AlgorithmKind::Direct,
        }
    }

    /// The simulator's cluster that runs as the daemon does with nodes of
    /// `config.node_capacity` blocks: managers without memory, N-Chance
    /// evicting forwarded blocks first, the daemon's partition share, and
    /// a Direct node's blocks split between its own and its remote cache.
    pub fn simulated(self, config: &ClusterConfig) -> Result<ClusterConfig, ConfigError> {
        let live = ClusterConfig {
            manager_capacity: 0,
            foreign_first: true,
            central_fraction: PARTITION_SHARE,
            ..config.clone()
        };
        if self != LiveAlgorithm::Direct {
            return Ok(live);
        }
        let (local, lent) = ClusterConfig::split(config.node_capacity, LENT_SHARE)?;
        Ok(ClusterConfig {
            node_capacity: local,
            direct_remote: lent,
            ..live
        })
    }

    fn names() -> String {
        let names: Vec<_> = Self::ALL.iter().map(|a| a.name()).collect();
        names.join(", ")
    }
}

impl fmt::Display for LiveAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LiveAlgorithm {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let a = s.trim().to_ascii_lowercase();
        match a.as_str() {
            "base" | "none" => Ok(LiveAlgorithm::Base),
            "greedy" => Ok(LiveAlgorithm::Greedy),
            "nchance" | "n-chance" => Ok(LiveAlgorithm::NChance),
            "hash" | "hash-distributed" => Ok(LiveAlgorithm::Hash),
            "direct" | "victim" => Ok(LiveAlgorithm::Direct),
            // Both need one manager for the whole cluster (its memory, its
            // global LRU or its cluster-wide weights); a live cluster's
            // managers are slices of the directory.
            "central" | "wlru" | "best" => Err(format!(
                "algorithm `{s}` runs in the simulator only: it needs one central manager; the daemon runs {}",
                Self::names()
            )),
            _ => Err(format!(
                "unknown algorithm `{s}`: expected {}",
                Self::names()
            )),
        }
    }
}

type Greedy = GreedyNode<BlockId, Lru<BlockId>, SharedStore>;
type NChance = NChanceNode<BlockId, Lru<BlockId>, SharedStore>;
type Hash = HashNode<BlockId, Lru<BlockId>, SharedStore>;
type Direct = DirectNode<BlockId, Lru<BlockId>, SharedStore>;

/// A node's own state machine.
pub enum LiveNode {
    /// Base and Greedy.
    Greedy(Greedy),
    /// N-Chance.
    NChance(Box<NChance>),
    /// Hash-Distributed.
    Hash(Box<Hash>),
    /// Direct Client Cooperation.
    Direct(Box<Direct>),
}

/// A manager's state machine for the files this node manages: a directory
/// and nothing in memory.
pub type LiveManager = DirectoryManager<BlockId, Lru<BlockId>, SharedStore>;

/// A node's machines and the stores of its cache parts.
pub struct Machines {
    /// Its node machine.
    pub node: LiveNode,
    /// Its manager slice.
    pub manager: LiveManager,
    /// The bytes of its cache parts.
    pub stores: Stores,
}

/// Why a node's machines cannot be built for its budget.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A cache of no blocks.
    #[error(transparent)]
    Capacity(#[from] coopcache_core::CapacityError),
    /// Too few blocks to split into the algorithm's parts.
    #[error(transparent)]
    Split(#[from] ConfigError),
}

/// Builds node `id`'s machines: its node caching `capacity` blocks in all,
/// and its manager slice.
pub fn build(
    algorithm: LiveAlgorithm,
    id: NodeId,
    capacity: usize,
    chances: u8,
    seed: u64,
) -> Result<Machines, BuildError> {
    let store = SharedStore::default();
    let (mut serving, mut kept) = (vec![store.clone()], Vec::new());
    let node = match algorithm {
        // Netcache's rule: blocks parked here by peers go before this
        // node's own working set when its users need room.
        LiveAlgorithm::NChance => LiveNode::NChance(Box::new(
            NChanceNode::new(id, 1, chances, Lru::new(capacity)?, store, seed)?
                .with_foreign_first(true),
        )),
        LiveAlgorithm::Base | LiveAlgorithm::Greedy => {
            LiveNode::Greedy(GreedyNode::new(id, Lru::new(capacity)?, store))
        }
        // Most of the node's memory is its partition.
        LiveAlgorithm::Hash => {
            let (local, global) = ClusterConfig::split(capacity, PARTITION_SHARE)?;
            let partition = SharedStore::default();
            serving.push(partition.clone());
            let node = HashNode::new(id, 1, Lru::new(local)?, store, Lru::new(global)?, partition);
            LiveNode::Hash(Box::new(node.placing_fetches()))
        }
        // Half of the memory for the node's own blocks, half for the peer
        // it hosts; its own remote cache, at its host, is as large.
        LiveAlgorithm::Direct => {
            let (local, hosted) = ClusterConfig::split(capacity, LENT_SHARE)?;
            let region = SharedStore::default();
            kept.push(region.clone());
            let remote = Lru::new(hosted)?;
            let node = DirectNode::new(id, Lru::new(local)?, store, remote, SharedStore::default())
                .hosted_by_peers(Lru::new(hosted)?, region);
            LiveNode::Direct(Box::new(node))
        }
    };
    let mode = ManagerMode {
        forward: matches!(algorithm, LiveAlgorithm::Greedy | LiveAlgorithm::NChance),
        hash_partitions: algorithm == LiveAlgorithm::Hash,
        ..ManagerMode::default()
    };
    let manager =
        DirectoryManager::new(1, Lru::new(1)?, SharedStore::default(), mode).without_memory();
    Ok(Machines {
        node,
        manager,
        stores: Stores::new(serving, kept),
    })
}

/// The member after `me` in the sorted live members (wrapping), which
/// hosts `me`'s Direct remote cache; none when `me` is alone.
fn successor(live: &[NodeId], me: NodeId) -> Option<NodeId> {
    let others = live.iter().copied().filter(|&n| n != me);
    others
        .clone()
        .filter(|&n| n > me)
        .min()
        .or_else(|| others.min())
}

impl LiveNode {
    fn machine(&mut self) -> &mut dyn NodeMachine<BlockId, Bytes> {
        match self {
            LiveNode::Greedy(n) => n,
            LiveNode::NChance(n) => n.as_mut(),
            LiveNode::Hash(n) => n.as_mut(),
            LiveNode::Direct(n) => n.as_mut(),
        }
    }

    /// Whether blocks peers `Place` here may serve this node's own reads
    /// (a Hash-Distributed partition), so their bytes are verified first.
    /// A Direct host's region only goes back to the peer that parked it.
    pub fn serves_placed_blocks(&self) -> bool {
        matches!(self, LiveNode::Hash(_))
    }

    /// The node's user reads `block`.
    pub fn read(&mut self, block: BlockId, now: u64, out: &mut Outbox<BlockId, Bytes>) {
        self.machine().read(block, now, out)
    }

    /// A message arrives.
    pub fn handle(
        &mut self,
        from: Addr,
        msg: Msg<BlockId, Bytes>,
        now: u64,
        out: &mut Outbox<BlockId, Bytes>,
    ) {
        self.machine().handle(from, msg, now, out)
    }

    /// The live members (this node among them) changed.
    pub fn set_peers(&mut self, peers: &[NodeId]) {
        match self {
            LiveNode::NChance(n) => n.set_peers(peers),
            LiveNode::Hash(n) => n.set_peers(peers),
            LiveNode::Direct(n) => {
                let me = n.id();
                n.set_host(successor(peers, me));
            }
            LiveNode::Greedy(_) => {}
        }
    }

    /// Blocks cached.
    pub fn len(&mut self) -> usize {
        self.machine().len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&mut self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_algorithm_builds_and_parses_back_from_its_name() {
        for a in LiveAlgorithm::ALL {
            assert_eq!(a.name().parse::<LiveAlgorithm>(), Ok(a));
            let m = build(a, 0, 64, 2, 1).unwrap();
            assert_eq!(m.stores.bytes(), 0);
        }
        let err = "wlru".parse::<LiveAlgorithm>().unwrap_err();
        assert!(
            err.contains("simulator only") && err.contains("direct"),
            "{err}"
        );
        assert!(
            "lfu"
                .parse::<LiveAlgorithm>()
                .unwrap_err()
                .contains("unknown")
        );
    }

    #[test]
    fn the_simulated_cluster_has_the_daemons_shape() {
        let c = ClusterConfig {
            node_capacity: 64,
            ..ClusterConfig::paper(4)
        };
        let direct = LiveAlgorithm::Direct.simulated(&c).unwrap();
        assert_eq!((direct.node_capacity, direct.direct_remote), (32, 32));
        let nchance = LiveAlgorithm::NChance.simulated(&c).unwrap();
        assert_eq!(nchance.node_capacity, 64);
        for s in [direct, nchance] {
            assert_eq!(s.manager_capacity, 0);
            assert!(s.foreign_first);
        }
    }

    #[test]
    fn a_direct_host_is_the_next_live_member_around_the_ring() {
        assert_eq!(successor(&[1, 4, 7], 4), Some(7));
        assert_eq!(successor(&[1, 4, 7], 7), Some(1));
        assert_eq!(successor(&[4], 4), None);
        assert_eq!(successor(&[], 4), None);
    }
}
