//! The machines a live node runs, and which algorithms can run live: one
//! catalogue ([`AlgorithmKind`]) for the simulator and the daemon.

use super::{
    AlgorithmKind, ClassPolicies, ClusterConfig, ConfigError, DirectNode, DirectoryManager,
    GreedyNode, HashNode, ManagerMode, NChanceNode, NodeId, NodeMachine, SizeClassed,
};
use crate::error::CapacityError;
use crate::policy::{BlockKey, Capacity, Lru, Policy, PolicyFactory, PolicyKind};
use crate::protocol::{Content, MemStore};
use std::fmt;

/// A node machine a live protocol can drive: it follows the live members
/// and hands out the contents a local hit returns.
pub trait LiveNode<K, D>: NodeMachine<K, D> + Send {
    /// The live members (this node among them, sorted) changed: N-Chance
    /// forwards singlets only to them, Hash-Distributed partitions move to
    /// them, a Direct node parks nothing at a member that left.
    fn set_peers(&mut self, live: &[NodeId]);

    /// The contents of `block` for this node's own read (what a local hit
    /// returns), if it holds them in a part that serves its reads.
    fn data(&self, block: K) -> Option<D>;

    /// The contents of `block` this node keeps for the peers that parked
    /// it (a Direct host's foreign block), if it keeps them.
    fn hosted(&self, _block: K) -> Option<D> {
        None
    }

    /// Blocks and bytes held in all of the node's cache parts.
    fn usage(&self) -> super::StoreUsage;

    /// Of the blocks held, those kept for peers (Netcache's foreign
    /// blocks), which this node advertises so that peers park elsewhere
    /// once its memory is lent.
    fn foreign(&self) -> usize {
        0
    }

    /// The peers that advertise memory to lend ([`Status::lendable`]),
    /// sorted: where evicted blocks are parked. Called when the set changes;
    /// empty until a peer advertises (a cluster without pings has none).
    ///
    /// [`Status::lendable`]: crate::protocol::Status::lendable
    fn set_lenders(&mut self, _lenders: &[NodeId]) {}

    /// Whether this node is idle (its own reads stopped a while ago), as
    /// it advertises: an idle node's own blocks give way to its peers'.
    fn set_idle(&mut self, _idle: bool) {}
}

/// A member of `from` drawn uniformly with `rng` (one draw, the same
/// arithmetic as N-Chance's choice over all nodes), if any.
pub(crate) fn draw<R: rand_core::RngCore>(rng: &mut R, from: &[NodeId]) -> Option<NodeId> {
    if from.is_empty() {
        return None;
    }
    let pick = (u128::from(rng.next_u64()) * from.len() as u128) >> 64;
    Some(from[pick as usize])
}

/// Share of a Hash-Distributed live node's blocks that are its partition
/// (the simulator's default `central_fraction`).
pub const PARTITION_SHARE: f64 = 0.8;

/// How many times its own memory a Direct live node parks on its peers at
/// most: the bound of its table of parked blocks (a block id and a host
/// each). Four idle peers' worth of memory, the most the Netcache paper's
/// experiment gained from.
pub const PARKED_SHARE: usize = 4;

/// An algorithm that runs in the simulator only, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("algorithm `{algorithm}` runs in the simulator only: {reason}; the daemon runs {live}")]
pub struct SimulatorOnly {
    /// The algorithm.
    pub algorithm: AlgorithmKind,
    /// Why it cannot run live.
    pub reason: &'static str,
    /// The algorithms that can, by name.
    pub live: &'static str,
}

/// A name that is not an algorithm a live cluster runs.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotLiveAlgorithm {
    /// Not an algorithm at all.
    #[error("unknown algorithm `{0}`: expected one of {LIVE_NAMES}")]
    Unknown(String),
    /// One the simulator runs, not a live cluster.
    #[error(transparent)]
    SimulatorOnly(#[from] SimulatorOnly),
}

/// The manager slice of a live node: a directory of the files rendezvous
/// hashing gives it, with no block in memory.
pub type LiveManager<K, D> = DirectoryManager<K, Lru<K>, MemStore<K, D>>;

/// The machines of one live node.
pub struct LiveMachines<K, D> {
    /// Its node machine.
    pub node: Box<dyn LiveNode<K, D>>,
    /// Its manager slice.
    pub manager: LiveManager<K, D>,
    /// The size classes both apply ([`LiveShape::classes`]), by which the
    /// node names a file's blocks ([`crate::protocol::classed`]).
    pub classes: ClassPolicies,
}

impl<K, D> fmt::Debug for LiveMachines<K, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LiveMachines").finish_non_exhaustive()
    }
}

/// The shape of one live node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveShape {
    /// Blocks the node caches in all of its parts.
    pub capacity: usize,
    /// The replacement policy of its locally managed cache.
    pub policy: PolicyKind,
    /// N-Chance's recirculation count `n`.
    pub chances: u8,
    /// Seed of N-Chance's random peer choices.
    pub seed: u64,
    /// Size-class policies (N-Chance's, [`live_classes`]); one class, the
    /// default policy: none.
    pub classes: ClassPolicies,
}

/// `classes`, if a live node of `kind` can apply them: N-Chance applies
/// them (as in the simulator), and of a class's options only those that
/// need no memory at a storage node. A live manager keeps no blocks (every
/// class is exclusive already), so a discard cache has nowhere to go; and
/// a node has no disk replica of the origin to read instead of asking.
pub fn live_classes(kind: AlgorithmKind, classes: &ClassPolicies) -> Result<(), ConfigError> {
    if classes.is_default() {
        return Ok(());
    }
    if kind != AlgorithmKind::NChance {
        return Err(ConfigError::new(
            "size-class policies with algorithm",
            kind.name(),
            "nchance, the algorithm that applies them",
        ));
    }
    for class in classes.classes() {
        let refused = match class.policy {
            p if p.discard_cache => Some((
                "discard_cache",
                "a live manager keeps no blocks, so nothing can take discarded ones: set it false",
            )),
            p if p.replica => Some((
                "replica",
                "a live node has no local replica of the origin to read instead of asking: set it false",
            )),
            _ => None,
        };
        if let Some((option, expected)) = refused {
            return Err(ConfigError::Setting {
                setting: "size class option",
                value: format!("{} = true in class `{}`", option, class.name),
                expected,
            });
        }
    }
    Ok(())
}

/// The algorithms that run live, by name, for messages.
const LIVE_NAMES: &str = "base, greedy, nchance, hash, direct";

impl AlgorithmKind {
    /// The algorithm named `s` (as [`str::parse`] takes it), if a live
    /// cluster runs it.
    pub fn parse_live(s: &str) -> Result<AlgorithmKind, NotLiveAlgorithm> {
        let kind: AlgorithmKind = s
            .parse()
            .map_err(|_| NotLiveAlgorithm::Unknown(s.to_string()))?;
        kind.live()?;
        Ok(kind)
    }

    /// Whether a live cluster can run this algorithm; if not, why.
    pub fn live(self) -> Result<(), SimulatorOnly> {
        let reason = match self {
            AlgorithmKind::Base
            | AlgorithmKind::Greedy
            | AlgorithmKind::NChance
            | AlgorithmKind::Hash
            | AlgorithmKind::Direct => return Ok(()),
            AlgorithmKind::Central => {
                "it needs one central manager running a global LRU over every node's memory"
            }
            AlgorithmKind::Wlru => {
                "it needs one central manager knowing every node's block weights"
            }
            AlgorithmKind::Best => {
                "it is the paper's unrealisable bound (doubled memory, one central manager)"
            }
        };
        Err(SimulatorOnly {
            algorithm: self,
            reason,
            live: LIVE_NAMES,
        })
    }

    /// The simulator's cluster that runs as the daemon does with nodes of
    /// `config.node_capacity` blocks: managers without memory, N-Chance
    /// evicting forwarded blocks first, the daemon's partition share, and
    /// Direct as Netcache runs it, parking up to [`PARKED_SHARE`] times a
    /// node's memory at `config.lenders` (none if unset: with no
    /// member idle, as in a cluster whose members all read, or that has
    /// not heard a ping yet, a live Direct node parks nothing and is Base).
    pub fn live_config(self, config: &ClusterConfig) -> Result<ClusterConfig, ConfigError> {
        Ok(ClusterConfig {
            manager_capacity: 0,
            foreign_first: true,
            central_fraction: PARTITION_SHARE,
            direct_remote: config.node_capacity.saturating_mul(PARKED_SHARE),
            lenders: Some(config.lenders.clone().unwrap_or_default()),
            ..config.clone()
        })
    }

    /// Builds live node `id`'s machines for `shape`: its node machine
    /// (boxed behind [`LiveNode`]) and its manager slice.
    pub fn build_live<K, D>(
        self,
        id: NodeId,
        shape: &LiveShape,
    ) -> Result<LiveMachines<K, D>, ConfigError>
    where
        K: BlockKey + SizeClassed,
        D: Content + Send + 'static,
    {
        self.live()
            .map_err(|e| ConfigError::NodeCache(e.to_string()))?;
        live_policy(shape.policy)?;
        live_classes(self, &shape.classes)?;
        let node = shape.policy.factory(LiveBuilder {
            kind: self,
            id,
            shape,
            data: std::marker::PhantomData,
        })?;
        let mode = ManagerMode {
            forward: matches!(self, AlgorithmKind::Greedy | AlgorithmKind::NChance),
            hash_partitions: self == AlgorithmKind::Hash,
            singlet_notices: false,
        };
        let manager = DirectoryManager::new(1, Lru::new(1)?, MemStore::default(), mode)
            .without_memory()
            .with_classes(shape.classes.clone());
        Ok(LiveMachines {
            node,
            manager,
            classes: shape.classes.clone(),
        })
    }
}

/// `policy`, if a live node can cache with it: every policy but LIRS
/// (libCacheSim's LIRS can drop a block during a hit without an eviction
/// anyone sees, so its manager could not track it) and Belady (it needs
/// the future requests, which a live node cannot know).
pub fn live_policy(policy: PolicyKind) -> Result<PolicyKind, ConfigError> {
    if policy.needs_future() {
        return Err(ConfigError::Setting {
            setting: "node policy",
            value: policy.name().into(),
            expected: "a policy that needs no knowledge of future requests (belady is simulation-only)",
        });
    }
    if policy.drops_on_hit() {
        return Err(ConfigError::Setting {
            setting: "node policy",
            value: policy.name().into(),
            expected: "a policy that reports every block it drops: lru, fifo, clock, sieve, arc, s3fifo, s3fifo-v1, 2q, lfu or random",
        });
    }
    Ok(policy)
}

/// Builds one live node machine of the chosen policy.
struct LiveBuilder<'a, D> {
    kind: AlgorithmKind,
    id: NodeId,
    shape: &'a LiveShape,
    data: std::marker::PhantomData<fn() -> D>,
}

impl<K, D> PolicyFactory<K> for LiveBuilder<'_, D>
where
    K: BlockKey + SizeClassed,
    D: Content + Send + 'static,
{
    type Output = Result<Box<dyn LiveNode<K, D>>, ConfigError>;

    fn make<P: Policy<K> + Send + 'static>(
        self,
        new: fn(Capacity) -> Result<P, CapacityError>,
    ) -> Self::Output {
        let (id, s) = (self.id, self.shape);
        let store = MemStore::<K, D>::default;
        Ok(match self.kind {
            AlgorithmKind::Base | AlgorithmKind::Greedy => {
                Box::new(GreedyNode::new(id, new(s.capacity.into())?, store()))
            }
            // Netcache's rule: blocks parked here by peers go before this
            // node's own working set when its users need room.
            AlgorithmKind::NChance => Box::new(
                NChanceNode::new(id, 1, s.chances, new(s.capacity.into())?, store(), s.seed)?
                    .with_foreign_first(true)
                    .with_classes(s.classes.clone()),
            ),
            // Most of the node's memory is its partition; with managers
            // that keep no blocks, readers fill the partitions.
            AlgorithmKind::Hash => {
                let (local, global) = ClusterConfig::split(s.capacity, PARTITION_SHARE)?;
                let node = HashNode::new(
                    id,
                    1,
                    new(local.into())?,
                    store(),
                    Lru::new(global)?,
                    store(),
                );
                Box::new(node.placing_fetches())
            }
            // All of the memory for the node's own blocks and its peers'
            // (its own first); its evictions parked on idle peers, up to
            // PARKED_SHARE times its memory (only their order and hosts
            // are kept here).
            AlgorithmKind::Direct => {
                let parked = Lru::new(s.capacity.saturating_mul(PARKED_SHARE))?;
                let node = DirectNode::new(id, new(s.capacity.into())?, store(), parked, store())
                    .hosted_by_peers(store(), s.seed)?;
                Box::new(node)
            }
            other => {
                let e = other
                    .live()
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default();
                return Err(ConfigError::NodeCache(e));
            }
        })
    }
}
