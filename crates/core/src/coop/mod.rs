//! Cooperative caching algorithms as message-driven state machines
//! (Dahlin et al., "Cooperative Caching: Using Remote Client Memory to
//! Improve File System Performance", OSDI 1994; docs/ARCHITECTURE.md).
//!
//! Each algorithm is a node state machine and a manager state machine. They
//! never touch a socket, a clock or a disk: inputs arrive through
//! [`NodeMachine::read`], [`NodeMachine::write`] and the `handle` methods with
//! the current (virtual) time, and everything they want done leaves through
//! an [`Outbox`]: messages to other nodes, the manager or the origin, and
//! finished reads. The simulator delivers those messages in virtual time;
//! the daemon sends them over the network. Block data is the type of a
//! [`BlockStore`]: nothing at all in the simulator.
//!
//! | algorithm | node | manager |
//! | --- | --- | --- |
//! | Base | [`GreedyNode`] | [`DirectoryManager`] without forwarding |
//! | Direct Client Cooperation | [`DirectNode`] | [`DirectoryManager`] without forwarding |
//! | Greedy Forwarding | [`GreedyNode`] | [`DirectoryManager`] |
//! | N-Chance Forwarding | [`NChanceNode`] | [`DirectoryManager`] |
//! | Weighted LRU | [`WlruNode`] | [`DirectoryManager`] |
//! | Centrally Coordinated, Best | [`CentralNode`] | [`CentralManager`] |
//! | Hash-Distributed | [`HashNode`] | [`DirectoryManager`] placing in partitions |

mod central;
mod classes;
mod cluster;
mod direct;
mod directory;
mod greedy;
mod hash;
mod live;
mod local;
mod manager;
mod message;
mod nchance;
mod store;
mod wlru;

pub use central::{CentralManager, CentralNode};
pub use classes::{
    ClassError, ClassPolicies, ClassPolicy, MAX_CLASSES, SizeClass, SizeClassed, class_key,
};
pub use cluster::{
    AlgorithmKind, Cluster, ClusterConfig, ClusterVisitor, ConfigError, UnknownAlgorithm,
};
pub use direct::DirectNode;
pub use directory::{Directory, Holders};
pub use greedy::GreedyNode;
pub use hash::{HashNode, Owners, hash_owner};
pub use live::{
    LiveMachines, LiveManager, LiveNode, LiveShape, NotLiveAlgorithm, PARKED_SHARE,
    PARTITION_SHARE, SimulatorOnly, live_classes, live_policy,
};
pub use manager::{DirectoryManager, ManagerMode};
pub use message::{Envelope, Msg, Outbox, ReadDone, load_units};
pub use nchance::{MAX_CHANCES, NChanceNode};
pub use store::{BlockStore, NoData, StoreUsage};
pub use wlru::{Penalties, WlruNode};

/// A node of the cluster, numbered from 0.
pub type NodeId = u32;

/// Who a message is from or to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Addr {
    /// A node (client) of the cluster.
    Node(NodeId),
    /// The manager (the paper's server): directory and its own cache.
    Manager,
    /// The slow shared storage behind the cluster (the paper's disk).
    Origin,
}

/// The level of the memory hierarchy that served a read (the paper's
/// Figure 5 segments).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    /// The reader's own cache.
    Local,
    /// The manager's memory.
    ManagerMemory,
    /// Another node's memory.
    RemoteNode,
    /// The origin (disk).
    Origin,
    /// The reader's own disk tier (a live node's `--disk`; the simulator
    /// has none). Last, though nearer than the origin, so that the
    /// levels' indices, and the columns of every table indexed by them,
    /// stay what they were before there was one.
    LocalDisk,
}

impl Level {
    /// All levels, in the order of their indices: nearest first, but
    /// the disk tier (see [`Level::LocalDisk`]).
    pub const ALL: [Level; 5] = [
        Level::Local,
        Level::ManagerMemory,
        Level::RemoteNode,
        Level::Origin,
        Level::LocalDisk,
    ];

    /// Index of the level in [`Level::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// A node's state machine.
pub trait NodeMachine<K, D> {
    /// This node's user reads `block`. A local hit completes at once;
    /// otherwise messages go out and the read completes when the data comes
    /// back.
    fn read(&mut self, block: K, now: u64, out: &mut Outbox<K, D>);

    /// This node's user writes `block`: the node caches the new data and
    /// writes it through to the manager, which invalidates other copies.
    fn write(&mut self, block: K, data: D, now: u64, out: &mut Outbox<K, D>);

    /// A message from `from` arrives.
    fn handle(&mut self, from: Addr, msg: Msg<K, D>, now: u64, out: &mut Outbox<K, D>);

    /// Calls `f` with every block this node holds that the manager tracks
    /// for it (for checking the directory against the caches).
    fn for_each_tracked(&self, f: &mut dyn FnMut(K));

    /// Blocks held, in every part of the node's memory.
    fn len(&self) -> usize;

    /// Whether the node holds nothing.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Most blocks the node holds.
    fn capacity(&self) -> usize;

    /// Whether the node waits on nothing: no question to its manager
    /// unanswered, no forwarded block queued for room. A cluster whose
    /// nodes are all quiet and whose links are empty is at quiescence.
    fn is_quiet(&self) -> bool {
        true
    }

    /// Checks the machine's own invariants (for tests): `Err` says which
    /// one is broken.
    fn check_invariants(&self) -> Result<(), String> {
        if self.len() > self.capacity() {
            return Err(format!(
                "{} blocks held, capacity {}",
                self.len(),
                self.capacity()
            ));
        }
        Ok(())
    }
}

/// The manager's state machine.
pub trait ManagerMachine<K, D> {
    /// A message from `from` arrives.
    fn handle(&mut self, from: Addr, msg: Msg<K, D>, now: u64, out: &mut Outbox<K, D>);

    /// Calls `f` with every (block, node) copy the manager believes exists.
    fn for_each_tracked(&self, f: &mut dyn FnMut(K, NodeId));

    /// Bytes of directory state per tracked block.
    fn directory_bytes_per_block(&self) -> f64;
}
