//! Choosing an algorithm by name and building a whole cluster of its state
//! machines, as the simulator runs it.

use super::wlru::Penalties;
use super::{
    CentralManager, CentralNode, ClassPolicies, DirectNode, DirectoryManager, GreedyNode, HashNode,
    LiveNode, ManagerMachine, ManagerMode, NChanceNode, NoData, NodeId, NodeMachine, SizeClassed,
    WlruNode,
};
use crate::error::CapacityError;
use crate::policy::{BlockKey, Capacity, Lru, Policy, PolicyFactory, PolicyKind};
use std::fmt;
use std::str::FromStr;

/// The cooperation algorithms of the paper (section 2), and its bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AlgorithmKind {
    /// No cooperation: local cache, manager memory, origin.
    Base,
    /// Direct Client Cooperation: a private remote cache per node.
    Direct,
    /// Greedy Forwarding: the manager forwards misses to nodes caching the
    /// block.
    Greedy,
    /// Centrally Coordinated Caching: most of each node's memory is one
    /// global LRU run by the manager.
    Central,
    /// N-Chance Forwarding: Greedy, keeping singlets alive by forwarding.
    NChance,
    /// Hash-Distributed Caching: the global part partitioned by block hash.
    Hash,
    /// Weighted LRU: evict the globally cheapest block.
    Wlru,
    /// The paper's unrealisable best case: doubled memory, half of it
    /// centrally coordinated.
    Best,
}

impl AlgorithmKind {
    /// Every algorithm, in the paper's order.
    pub const ALL: [AlgorithmKind; 8] = [
        AlgorithmKind::Base,
        AlgorithmKind::Direct,
        AlgorithmKind::Greedy,
        AlgorithmKind::Central,
        AlgorithmKind::NChance,
        AlgorithmKind::Hash,
        AlgorithmKind::Wlru,
        AlgorithmKind::Best,
    ];

    /// The name `FromStr` accepts.
    pub fn name(self) -> &'static str {
        match self {
            AlgorithmKind::Base => "base",
            AlgorithmKind::Direct => "direct",
            AlgorithmKind::Greedy => "greedy",
            AlgorithmKind::Central => "central",
            AlgorithmKind::NChance => "nchance",
            AlgorithmKind::Hash => "hash",
            AlgorithmKind::Wlru => "wlru",
            AlgorithmKind::Best => "best",
        }
    }

    /// Builds a cluster of this algorithm's state machines, with no block
    /// data (the simulator's), and hands it to `visitor`.
    pub fn build<K: BlockKey + SizeClassed, V: ClusterVisitor<K>>(
        self,
        config: &ClusterConfig,
        visitor: V,
    ) -> Result<V::Output, ConfigError> {
        self.check(config)?;
        let builder = Builder {
            kind: self,
            config,
            visitor,
        };
        config.policy.factory(builder)
    }

    /// Like [`AlgorithmKind::build`], with the nodes' locally managed
    /// caches made by `new` from a capacity in blocks instead of by
    /// `config.policy`: an [`AttributeCache`](crate::attr::AttributeCache),
    /// say. Global parts, remote caches and the manager stay LRU.
    pub fn build_with<K, P, V>(
        self,
        config: &ClusterConfig,
        new: impl Fn(usize) -> Result<P, ConfigError>,
        visitor: V,
    ) -> Result<V::Output, ConfigError>
    where
        K: BlockKey + SizeClassed,
        P: Policy<K> + Send + 'static,
        V: ClusterVisitor<K>,
    {
        self.check(config)?;
        Builder {
            kind: self,
            config,
            visitor,
        }
        .assemble(new)
    }

    fn check(self, config: &ClusterConfig) -> Result<(), ConfigError> {
        config.validate()?;
        if self != AlgorithmKind::NChance && !config.classes.is_default() {
            return Err(ConfigError::new(
                "size-class policies with algorithm",
                self.name(),
                "nchance, the algorithm that applies them",
            ));
        }
        Ok(())
    }
}

impl fmt::Display for AlgorithmKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An algorithm name that is not one of [`AlgorithmKind::ALL`].
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "unknown algorithm `{0}`: expected one of base, direct, greedy, central, nchance, hash, wlru, best"
)]
pub struct UnknownAlgorithm(pub String);

impl FromStr for AlgorithmKind {
    type Err = UnknownAlgorithm;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_lowercase();
        let alias = match wanted.as_str() {
            "none" => "base",
            "victim" => "direct",
            "n-chance" => "nchance",
            "centrally-coordinated" | "coord" => "central",
            "weighted-lru" => "wlru",
            "hash-distributed" => "hash",
            other => other,
        };
        AlgorithmKind::ALL
            .into_iter()
            .find(|a| a.name() == alias)
            .ok_or_else(|| UnknownAlgorithm(s.to_string()))
    }
}

/// The shape of a simulated cluster. Sizes are in blocks.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterConfig {
    /// Nodes (the paper's clients).
    pub nodes: u32,
    /// Cache per node.
    pub node_capacity: usize,
    /// The manager's own cache; 0 for none (the directory-based
    /// algorithms only), as a live node managing a slice of the files.
    pub manager_capacity: usize,
    /// The replacement policy of the nodes' locally managed caches.
    pub policy: PolicyKind,
    /// N-Chance's recirculation count `n`.
    pub chances: u8,
    /// Centrally Coordinated and Hash-Distributed: the fraction of each
    /// node's cache managed globally.
    pub central_fraction: f64,
    /// Direct Client Cooperation: each node's private remote cache.
    pub direct_remote: usize,
    /// The members that lend their memory, as a live cluster hears it on
    /// its pings (Netcache: idle members, whose own reads have stopped).
    /// Direct then runs as Netcache does live
    /// ([`DirectNode::hosted_by_peers`]): each node parks up to
    /// `direct_remote` evicted blocks at lenders drawn at random, and
    /// they keep them in their own memory (empty: no one lends and Direct
    /// is Base); N-Chance forwards its singlets to lenders. `None`: the
    /// paper's model, with a private remote cache per node, permanent and
    /// never disturbed by its host.
    pub lenders: Option<Vec<NodeId>>,
    /// Weighted LRU: what losing a block costs.
    pub penalties: Penalties,
    /// Seed of every random choice (N-Chance's peers).
    pub seed: u64,
    /// Size-class policies (N-Chance only); uniform changes nothing.
    pub classes: ClassPolicies,
    /// N-Chance: evict forwarded blocks before a node's own (Netcache's
    /// foreign blocks); off in the paper.
    pub foreign_first: bool,
}

impl ClusterConfig {
    /// The paper's defaults (section 4.1) for `nodes` nodes: 16 MiB per
    /// node and 128 MiB at the manager in 8 KiB blocks, LRU, n = 2, 80%
    /// centrally coordinated, a remote cache as large as the local one, and
    /// the ATM profile's penalties.
    pub fn paper(nodes: u32) -> Self {
        ClusterConfig {
            nodes,
            node_capacity: 2048,
            manager_capacity: 16384,
            policy: PolicyKind::Lru,
            chances: 2,
            central_fraction: 0.8,
            direct_remote: 2048,
            lenders: None,
            penalties: Penalties {
                duplicate_us: 1_000,
                singlet_us: 15_600,
            },
            seed: 1,
            classes: ClassPolicies::uniform(),
            foreign_first: false,
        }
    }

    fn validate(&self) -> Result<(), ConfigError> {
        if self.nodes == 0 {
            return Err(ConfigError::new("nodes", "0", "at least 1"));
        }
        if self.policy.needs_future() {
            return Err(ConfigError::new(
                "node policy",
                self.policy.name(),
                "a policy that needs no knowledge of future requests (belady is simulation-only, for single caches)",
            ));
        }
        if self.policy.drops_on_hit() {
            // LIRS (libCacheSim's) can drop a block during a hit without an
            // eviction anyone sees, so the manager could not track it.
            return Err(ConfigError::new(
                "node policy",
                self.policy.name(),
                "a policy that reports every block it drops: lru, fifo, clock, sieve, arc, s3fifo, s3fifo-v1, 2q, lfu or random",
            ));
        }
        if self.chances > super::nchance::MAX_CHANCES {
            return Err(ConfigError::new(
                "chances",
                self.chances.to_string(),
                "at most 8 recirculations",
            ));
        }
        if let Some(&l) = self.lenders.iter().flatten().find(|&&l| l >= self.nodes) {
            return Err(ConfigError::new(
                "lender",
                l.to_string(),
                "a node of the cluster (ids from 0 to nodes - 1)",
            ));
        }
        if !(self.central_fraction > 0.0 && self.central_fraction < 1.0) {
            return Err(ConfigError::new(
                "central fraction",
                self.central_fraction.to_string(),
                "a fraction strictly between 0 and 1",
            ));
        }
        Ok(())
    }

    /// Local and global parts of a node of `capacity` blocks with
    /// `fraction` globally managed, each at least one block.
    pub fn split(capacity: usize, fraction: f64) -> Result<(usize, usize), ConfigError> {
        let global = (capacity as f64 * fraction).round() as usize;
        let local = capacity.saturating_sub(global);
        if local == 0 || global == 0 {
            return Err(ConfigError::new(
                "node cache",
                format!("{capacity} blocks with {fraction} central"),
                "room for at least one locally and one globally managed block",
            ));
        }
        Ok((local, global))
    }
}

/// A cluster configuration that cannot be built: which setting, its value,
/// and what would do.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// A setting out of range.
    #[error("{setting} `{value}`: expected {expected}")]
    Setting {
        /// The setting.
        setting: &'static str,
        /// Its value.
        value: String,
        /// The accepted range.
        expected: &'static str,
    },
    /// A cache size the policy cannot take.
    #[error(transparent)]
    Capacity(#[from] CapacityError),
    /// A node cache that cannot be built at its size (an attribute cache
    /// whose fixed sub-caches do not fit, say).
    #[error("node cache: {0}")]
    NodeCache(String),
}

impl ConfigError {
    pub(crate) fn new(
        setting: &'static str,
        value: impl Into<String>,
        expected: &'static str,
    ) -> Self {
        ConfigError::Setting {
            setting,
            value: value.into(),
            expected,
        }
    }
}

/// The state machines of one cluster.
#[derive(Clone, Debug)]
pub struct Cluster<N, M> {
    /// The nodes, indexed by [`NodeId`](super::NodeId).
    pub nodes: Vec<N>,
    /// The manager.
    pub manager: M,
}

impl<N, M> Cluster<N, M> {
    /// Checks every machine's own invariants, and that the manager's
    /// directory equals the union of the nodes' caches (for tests): `Err`
    /// says what is broken.
    pub fn check<K: Ord + fmt::Debug, D>(&self) -> Result<(), String>
    where
        N: NodeMachine<K, D>,
        M: ManagerMachine<K, D>,
    {
        let mut held = Vec::new();
        for (n, node) in self.nodes.iter().enumerate() {
            node.check_invariants()
                .map_err(|e| format!("node {n}: {e}"))?;
            node.for_each_tracked(&mut |b| held.push((b, n as super::NodeId)));
        }
        let mut tracked = Vec::new();
        self.manager
            .for_each_tracked(&mut |b, n| tracked.push((b, n)));
        held.sort_unstable();
        tracked.sort_unstable();
        if held != tracked {
            let missing: Vec<_> = held.iter().filter(|p| !tracked.contains(p)).collect();
            let stale: Vec<_> = tracked.iter().filter(|p| !held.contains(p)).collect();
            return Err(format!(
                "directory differs from the caches: untracked {missing:?}, stale {stale:?}"
            ));
        }
        Ok(())
    }
}

/// Something to do with a freshly built cluster, whatever its types
/// ([`AlgorithmKind::build`] monomorphises the caller per algorithm and
/// policy, so a simulation pays no dynamic dispatch per message).
pub trait ClusterVisitor<K> {
    /// What the visit returns.
    type Output;
    /// Runs with the cluster.
    fn visit<N, M>(self, cluster: Cluster<N, M>) -> Self::Output
    where
        N: NodeMachine<K, ()> + Send + 'static,
        M: ManagerMachine<K, ()> + Send + 'static;
}

struct Builder<'a, V> {
    kind: AlgorithmKind,
    config: &'a ClusterConfig,
    visitor: V,
}

impl<K: BlockKey + SizeClassed, V: ClusterVisitor<K>> PolicyFactory<K> for Builder<'_, V> {
    type Output = Result<V::Output, ConfigError>;

    fn make<P: Policy<K> + Send + 'static>(
        self,
        new: fn(Capacity) -> Result<P, CapacityError>,
    ) -> Self::Output {
        self.assemble(|capacity| Ok(new(capacity.into())?))
    }
}

impl<V> Builder<'_, V> {
    /// Builds the cluster with node caches made by `new` from a capacity in
    /// blocks.
    fn assemble<K, P>(
        self,
        new: impl Fn(usize) -> Result<P, ConfigError>,
    ) -> Result<V::Output, ConfigError>
    where
        K: BlockKey + SizeClassed,
        P: Policy<K> + Send + 'static,
        V: ClusterVisitor<K>,
    {
        let c = self.config;
        let n = c.nodes;
        let manager = |mode| -> Result<_, ConfigError> {
            let m = DirectoryManager::new(n, Lru::new(c.manager_capacity.max(1))?, NoData, mode);
            Ok(match c.manager_capacity {
                0 => m.without_memory(),
                _ => m,
            })
        };
        // In id order, as a live node lists them and draws from them.
        let mut lenders = c.lenders.clone().unwrap_or_default();
        lenders.sort_unstable();
        lenders.dedup();
        let forwarding = ManagerMode {
            forward: true,
            ..ManagerMode::default()
        };
        Ok(match self.kind {
            AlgorithmKind::Base | AlgorithmKind::Greedy => {
                let mode = ManagerMode {
                    forward: self.kind == AlgorithmKind::Greedy,
                    ..ManagerMode::default()
                };
                let nodes =
                    build_nodes(n, |i| Ok(GreedyNode::new(i, new(c.node_capacity)?, NoData)))?;
                self.visitor.visit(Cluster {
                    nodes,
                    manager: manager(mode)?,
                })
            }
            AlgorithmKind::NChance => {
                let nodes = build_nodes(n, |i| {
                    let mut node =
                        NChanceNode::new(i, n, c.chances, new(c.node_capacity)?, NoData, c.seed)?
                            .with_classes(c.classes.clone())
                            .with_foreign_first(c.foreign_first);
                    node.set_lenders(&lenders);
                    Ok(node)
                })?;
                self.visitor.visit(Cluster {
                    nodes,
                    manager: manager(forwarding)?.with_classes(c.classes.clone()),
                })
            }
            AlgorithmKind::Direct => {
                let members: Vec<NodeId> = (0..n).collect();
                let nodes = build_nodes(n, |i| {
                    let node = DirectNode::new(
                        i,
                        new(c.node_capacity)?,
                        NoData,
                        Lru::new(c.direct_remote)?,
                        NoData,
                    );
                    if c.lenders.is_none() {
                        return Ok(node);
                    }
                    // What a live node learns from its members' pings: who
                    // lends, and whether it is idle itself.
                    let mut node = node.hosted_by_peers(NoData, c.seed)?.keeping_parkers();
                    node.set_peers(&members);
                    node.set_lenders(&lenders);
                    node.set_idle(lenders.contains(&i));
                    Ok(node)
                })?;
                self.visitor.visit(Cluster {
                    nodes,
                    manager: manager(ManagerMode::default())?,
                })
            }
            AlgorithmKind::Wlru => {
                let mode = ManagerMode {
                    singlet_notices: true,
                    ..forwarding
                };
                let nodes = build_nodes(n, |i| {
                    Ok(WlruNode::new(i, new(c.node_capacity)?, NoData, c.penalties))
                })?;
                self.visitor.visit(Cluster {
                    nodes,
                    manager: manager(mode)?,
                })
            }
            AlgorithmKind::Hash => {
                let (local, global) = ClusterConfig::split(c.node_capacity, c.central_fraction)?;
                let mode = ManagerMode {
                    hash_partitions: true,
                    ..ManagerMode::default()
                };
                let nodes = build_nodes(n, |i| {
                    let node = HashNode::new(i, n, new(local)?, NoData, Lru::new(global)?, NoData);
                    // With no manager memory to evict from, readers fill
                    // the partitions (as a live cluster does).
                    Ok(match c.manager_capacity {
                        0 => node.placing_fetches(),
                        _ => node,
                    })
                })?;
                self.visitor.visit(Cluster {
                    nodes,
                    manager: manager(mode)?,
                })
            }
            AlgorithmKind::Central | AlgorithmKind::Best if c.manager_capacity == 0 => {
                return Err(ConfigError::new(
                    "manager cache",
                    "0".to_string(),
                    "at least one block for central and best, whose manager caches blocks",
                ));
            }
            AlgorithmKind::Central | AlgorithmKind::Best => {
                let (capacity, fraction) = match self.kind {
                    AlgorithmKind::Best => (2 * c.node_capacity, 0.5),
                    _ => (c.node_capacity, c.central_fraction),
                };
                let (local, global) = ClusterConfig::split(capacity, fraction)?;
                let nodes =
                    build_nodes(n, |i| Ok(CentralNode::new(i, new(local)?, NoData, global)))?;
                let manager =
                    CentralManager::new(Lru::new(c.manager_capacity)?, NoData, n, global)?;
                self.visitor.visit(Cluster { nodes, manager })
            }
        })
    }
}

/// Builds nodes `0..n` with `f`.
fn build_nodes<N>(
    n: u32,
    f: impl Fn(u32) -> Result<N, ConfigError>,
) -> Result<Vec<N>, ConfigError> {
    (0..n).map(f).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Belady needs the future, which no node of a cluster has: refused
    /// with a message, in the simulated and the live cluster alike.
    #[test]
    fn belady_is_refused_as_a_node_policy() {
        let config = ClusterConfig {
            policy: PolicyKind::Belady,
            ..ClusterConfig::paper(2)
        };
        let err = config.validate().unwrap_err().to_string();
        assert!(err.contains("belady") && err.contains("future"), "{err}");
        let err = crate::coop::live::live_policy(PolicyKind::Belady)
            .unwrap_err()
            .to_string();
        assert!(err.contains("belady") && err.contains("future"), "{err}");
    }

    /// SLRU, like LIRS, can drop a block during a hit: refused too.
    #[test]
    fn slru_is_refused_as_a_node_policy() {
        let config = ClusterConfig {
            policy: PolicyKind::Slru,
            ..ClusterConfig::paper(2)
        };
        let err = config.validate().unwrap_err().to_string();
        assert!(
            err.contains("slru") && err.contains("reports every block"),
            "{err}"
        );
        assert!(crate::coop::live::live_policy(PolicyKind::Slru).is_err());
    }
}
