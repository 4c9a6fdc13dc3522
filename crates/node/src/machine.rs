//! The core state machines a live node runs: its node machine and its
//! slice of the manager, built from the same types the simulator builds.

use crate::block::BlockId;
use crate::store::SharedStore;
use bytes::Bytes;
use coopcache_core::coop::{
    Addr, DirectoryManager, GreedyNode, ManagerMode, Msg, NChanceNode, NodeId, NodeMachine, Outbox,
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
}

impl LiveAlgorithm {
    /// Every algorithm the daemon runs.
    pub const ALL: [LiveAlgorithm; 3] = [
        LiveAlgorithm::Base,
        LiveAlgorithm::Greedy,
        LiveAlgorithm::NChance,
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            LiveAlgorithm::Base => "base",
            LiveAlgorithm::Greedy => "greedy",
            LiveAlgorithm::NChance => "nchance",
        }
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
            "direct" | "hash" | "central" | "wlru" | "best" => Err(format!(
                "algorithm `{s}` runs in the simulator only so far; the daemon runs base, greedy and nchance"
            )),
            _ => Err(format!(
                "unknown algorithm `{s}`: expected base, greedy or nchance"
            )),
        }
    }
}

type Greedy = GreedyNode<BlockId, Lru<BlockId>, SharedStore>;
type NChance = NChanceNode<BlockId, Lru<BlockId>, SharedStore>;

/// A node's own state machine.
pub enum LiveNode {
    /// Base and Greedy.
    Greedy(Greedy),
    /// N-Chance.
    NChance(Box<NChance>),
}

/// A manager's state machine for the files this node manages: a directory
/// and nothing in memory.
pub type LiveManager = DirectoryManager<BlockId, Lru<BlockId>, SharedStore>;

/// Builds node `id`'s machines: its node caching `capacity` blocks in
/// `store`, and its manager slice.
pub fn build(
    algorithm: LiveAlgorithm,
    id: NodeId,
    capacity: usize,
    chances: u8,
    seed: u64,
    store: SharedStore,
) -> Result<(LiveNode, LiveManager), coopcache_core::CapacityError> {
    let policy = Lru::new(capacity)?;
    let node = match algorithm {
        // Netcache's rule: blocks parked here by peers go before this
        // node's own working set when its users need room.
        LiveAlgorithm::NChance => LiveNode::NChance(Box::new(
            NChanceNode::new(id, 1, chances, policy, store, seed)?.with_foreign_first(true),
        )),
        _ => LiveNode::Greedy(GreedyNode::new(id, policy, store)),
    };
    let mode = ManagerMode {
        forward: algorithm != LiveAlgorithm::Base,
        ..ManagerMode::default()
    };
    let manager =
        DirectoryManager::new(1, Lru::new(1)?, SharedStore::default(), mode).without_memory();
    Ok((node, manager))
}

impl LiveNode {
    fn machine(&mut self) -> &mut dyn NodeMachine<BlockId, Bytes> {
        match self {
            LiveNode::Greedy(n) => n,
            LiveNode::NChance(n) => n.as_mut(),
        }
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

    /// The live peers changed.
    pub fn set_peers(&mut self, peers: &[NodeId]) {
        if let LiveNode::NChance(n) = self {
            n.set_peers(peers);
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
