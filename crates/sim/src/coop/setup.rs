//! Setting up the cooperative study as `coopcache sim --algorithms` and
//! the Python package's `simulate_cluster` do: the workload's settings,
//! the cluster's shape from the options given (the paper's defaults for
//! the rest), and one spec per algorithm with Base first.

use super::{AttributeNodes, CoopSpec, CostProfile};
use crate::error::{OptionError, TraceError};
use crate::size::CacheSize;
use crate::trace::Requests;
use crate::workload::Workload;
use coopcache_core::PolicyKind;
use coopcache_core::coop::{AlgorithmKind, ClassPolicies, ClusterConfig};

/// The cluster's options beyond its input; `None` takes the default each
/// field names.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterOptions {
    /// Cache per node (16 MiB; 200 MiB for the web workload, the paper's
    /// nodes).
    pub client_cache: Option<CacheSize>,
    /// The manager's own cache (128 MiB; 200 MiB for the web workload's
    /// storage node; 0 for a manager that keeps no blocks).
    pub manager_cache: Option<CacheSize>,
    /// N-Chance: how many times an unreferenced singlet is passed on (2).
    pub chances: Option<u8>,
    /// N-Chance: evict forwarded blocks before a node's own.
    pub foreign_first: bool,
    /// Centrally Coordinated and Hash-Distributed: fraction of each node's
    /// cache managed globally (0.8).
    pub central_fraction: Option<f64>,
    /// Direct Client Cooperation: each node's private remote cache (as
    /// large as its own).
    pub direct_remote: Option<CacheSize>,
    /// Access times (the paper's ATM network of 1994).
    pub profile: Option<CostProfile>,
    /// Scale the profile's network block fetch to this many microseconds.
    pub network_us: Option<f64>,
    /// Seed of the workload and of the algorithms' random choices (1).
    pub seed: Option<u64>,
}

impl ClusterOptions {
    /// The cache sizes of a node and of the manager, the workload's
    /// defaults (`web` for the web workload) unless given.
    pub fn cache_sizes(&self, web: bool) -> (CacheSize, CacheSize) {
        // The paper's web cluster: 256 MB machines, about 200 MB of cache.
        let (client, manager) = if web {
            (CacheSize::Bytes(200 << 20), CacheSize::Bytes(200 << 20))
        } else {
            (CacheSize::Bytes(16 << 20), CacheSize::Bytes(128 << 20))
        };
        (
            self.client_cache.unwrap_or(client),
            self.manager_cache.unwrap_or(manager),
        )
    }

    /// The cluster of `nodes` nodes in blocks of `block_size` bytes, each
    /// node's local cache under `policy`.
    pub fn config(
        &self,
        nodes: u32,
        block_size: u64,
        web: bool,
        policy: PolicyKind,
    ) -> Result<ClusterConfig, OptionError> {
        let (client_cache, manager_cache) = self.cache_sizes(web);
        let node_capacity = client_cache.blocks(block_size)?;
        Ok(ClusterConfig {
            nodes,
            node_capacity,
            // 0: a manager that keeps no blocks, as a live node's slice.
            manager_capacity: match manager_cache {
                CacheSize::Blocks(0) | CacheSize::Bytes(0) => 0,
                size => size.blocks(block_size)?,
            },
            policy,
            chances: self.chances.unwrap_or(2),
            central_fraction: self.central_fraction.unwrap_or(0.8),
            direct_remote: match self.direct_remote {
                Some(size) => size.blocks(block_size)?,
                None => node_capacity,
            },
            // The paper's model: a private remote cache per node.
            lenders: None,
            penalties: self.profile().penalties(),
            seed: self.seed(),
            classes: ClassPolicies::uniform(),
            foreign_first: self.foreign_first,
        })
    }

    /// The cost profile, with the network scaled if asked.
    pub fn profile(&self) -> CostProfile {
        let profile = self.profile.unwrap_or(CostProfile::ATM_1994);
        match self.network_us {
            Some(us) => profile.with_network_us(us),
            None => profile,
        }
    }

    /// The seed, or 1.
    pub fn seed(&self) -> u64 {
        self.seed.unwrap_or(1)
    }
}

/// `workload` with the seed, then `clients` if given, then the
/// `key=value,...` settings of `params`; refused without clients.
pub fn configure_workload(
    workload: &Workload,
    seed: u64,
    clients: Option<u32>,
    params: Option<&str>,
) -> Result<Workload, OptionError> {
    let mut w = workload.clone();
    w.set("seed", &seed.to_string())?;
    if let Some(clients) = clients {
        w.set("clients", &clients.to_string())?;
    }
    if let Some(params) = params {
        w.set_all(params)?;
    }
    if w.clients() == 0 {
        return Err(OptionError {
            what: "workload",
            value: w.name().to_string(),
            expected: "at least one client: set clients=N".into(),
        });
    }
    Ok(w)
}

/// The clients of a trace: one more than the highest client id (a first
/// pass over it).
pub fn count_clients(requests: Requests) -> Result<u32, TraceError> {
    let mut most = 0u32;
    for r in requests {
        most = most.max(r?.client);
    }
    Ok(most + 1)
}

/// One spec per algorithm of `wanted`, Base first whether wanted or not:
/// every comparison is against it.
pub fn specs(
    wanted: &[AlgorithmKind],
    config: &ClusterConfig,
    profile: CostProfile,
    warmup: u64,
    attribute: Option<&AttributeNodes>,
) -> Vec<CoopSpec> {
    let mut algorithms = vec![AlgorithmKind::Base];
    algorithms.extend(wanted.iter().copied().filter(|&a| a != AlgorithmKind::Base));
    algorithms
        .into_iter()
        .map(|algorithm| CoopSpec {
            algorithm,
            config: config.clone(),
            profile,
            warmup,
            hardware: None,
            attribute: attribute.cloned(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_papers_and_given_sizes_win() {
        let config = ClusterOptions::default()
            .config(42, 8192, false, PolicyKind::Lru)
            .unwrap();
        assert_eq!(
            (config.node_capacity, config.manager_capacity),
            (2048, 16384)
        );
        assert_eq!((config.chances, config.seed), (2, 1));
        assert_eq!(config.direct_remote, 2048);
        let options = ClusterOptions {
            client_cache: Some(CacheSize::Blocks(100)),
            manager_cache: Some(CacheSize::Bytes(0)),
            ..ClusterOptions::default()
        };
        let config = options.config(4, 8192, true, PolicyKind::Lru).unwrap();
        assert_eq!((config.node_capacity, config.manager_capacity), (100, 0));
    }

    #[test]
    fn base_is_simulated_first_and_once() {
        let config = ClusterConfig::paper(2);
        let wanted = [AlgorithmKind::NChance, AlgorithmKind::Base];
        let specs = specs(&wanted, &config, CostProfile::ATM_1994, 0, None);
        let algorithms: Vec<AlgorithmKind> = specs.iter().map(|s| s.algorithm).collect();
        assert_eq!(algorithms, [AlgorithmKind::Base, AlgorithmKind::NChance]);
    }

    #[test]
    fn a_workload_without_clients_is_refused() {
        let w: Workload = "sprite-like".parse().unwrap();
        let err = configure_workload(&w, 1, Some(0), None).unwrap_err();
        assert!(err.to_string().contains("set clients=N"), "{err}");
        let w = configure_workload(&w, 7, Some(3), Some("requests=100")).unwrap();
        assert_eq!((w.clients(), w.requests()), (3, 100));
    }
}
