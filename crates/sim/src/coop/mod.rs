//! Simulating cooperative caching: clusters of the core's state machines
//! driven by a multi-client trace, with the paper's cost model and figures.

pub mod driver;
pub mod hardware;
pub mod profile;
pub mod report;
pub mod rows;
pub mod setup;
pub mod stepwise;

pub use driver::{ClientOutOfRange, ClientStats, Load, Simulation, Stats};
pub use hardware::{Busy, Hardware};
pub use profile::CostProfile;

use crate::chunks::{CHUNK, for_each_chunk};
use crate::error::TraceError;
use crate::trace::{Request, Requests};
use coopcache_core::attr::{AttrConfig, AttributeCache};
use coopcache_core::coop::{
    AlgorithmKind, Cluster, ClusterConfig, ClusterVisitor, ConfigError, ManagerMachine, NodeMachine,
};
use rayon::prelude::*;
use std::time::{Duration, Instant};

/// One cluster to simulate.
#[derive(Clone, Debug, PartialEq)]
pub struct CoopSpec {
    /// The algorithm.
    pub algorithm: AlgorithmKind,
    /// The cluster's shape.
    pub config: ClusterConfig,
    /// Access times.
    pub profile: CostProfile,
    /// Requests excluded from every figure at the start.
    pub warmup: u64,
    /// Disks and links to account for throughput, and the block size they
    /// move; `None` for the latency study alone.
    pub hardware: Option<(Hardware, u64)>,
    /// Attribute caches as the nodes' locally managed caches instead of
    /// `config.policy`; `None` for the policy.
    pub attribute: Option<AttributeNodes>,
}

/// Nodes whose locally managed cache is an attribute cache: its
/// configuration, resolved at each cache's size in bytes (capacity in
/// blocks times `block_bytes`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttributeNodes {
    /// The configuration (fixed: resolve a variable scheme first).
    pub config: AttrConfig,
    /// Bytes per block of the cluster's capacities.
    pub block_bytes: u64,
}

/// Builds the cluster of `spec` (with attribute node caches if it asks)
/// and hands it to `visitor`.
pub fn build<V: ClusterVisitor<u64>>(
    spec: &CoopSpec,
    visitor: V,
) -> Result<V::Output, ConfigError> {
    match &spec.attribute {
        None => spec.algorithm.build(&spec.config, visitor),
        Some(a) => {
            let new = |blocks: usize| {
                let resolved = a
                    .config
                    .resolve(blocks as u64 * a.block_bytes)
                    .map_err(|e| ConfigError::NodeCache(e.to_string()))?;
                Ok(AttributeCache::new(resolved)?)
            };
            spec.algorithm.build_with(&spec.config, new, visitor)
        }
    }
}

/// What one simulated cluster measured.
#[derive(Clone, Debug, PartialEq)]
pub struct CoopResult {
    /// The cluster simulated.
    pub spec: CoopSpec,
    /// Its figures.
    pub stats: Stats,
    /// Directory bytes per tracked block at the end.
    pub directory_bytes_per_block: f64,
    /// Time spent simulating (trace reading excluded).
    pub elapsed: Duration,
}

impl CoopResult {
    /// Requests simulated per second of simulation time.
    pub fn requests_per_s(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.stats.requests as f64 / secs
        } else {
            0.0
        }
    }
}

/// Why a cooperative simulation stopped.
#[derive(Debug, thiserror::Error)]
pub enum CoopError {
    /// The trace could not be read.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A cluster could not be built; nothing was simulated.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The trace does not fit the cluster.
    #[error(transparent)]
    Client(#[from] ClientOutOfRange),
}

/// A simulation being fed chunks, whatever its algorithm and policy: boxed
/// so one list holds them all, with dynamic dispatch once per chunk.
trait Run: Send {
    fn feed(&mut self, requests: &[Request]) -> Result<(), ClientOutOfRange>;
    fn finish(self: Box<Self>) -> CoopResult;
}

struct ClusterRun<N, M> {
    sim: Simulation<N, M>,
    spec: CoopSpec,
    elapsed: Duration,
}

impl<N, M> Run for ClusterRun<N, M>
where
    N: NodeMachine<u64, ()> + Send,
    M: ManagerMachine<u64, ()> + Send,
{
    fn feed(&mut self, requests: &[Request]) -> Result<(), ClientOutOfRange> {
        let start = Instant::now();
        for r in requests {
            self.sim.request(r)?;
        }
        self.elapsed += start.elapsed();
        Ok(())
    }

    fn finish(self: Box<Self>) -> CoopResult {
        let directory_bytes_per_block = self.sim.cluster().manager.directory_bytes_per_block();
        CoopResult {
            spec: self.spec,
            stats: self.sim.into_stats(),
            directory_bytes_per_block,
            elapsed: self.elapsed,
        }
    }
}

struct BoxRun(CoopSpec);

impl ClusterVisitor<u64> for BoxRun {
    type Output = Box<dyn Run>;

    fn visit<N, M>(self, cluster: Cluster<N, M>) -> Box<dyn Run>
    where
        N: NodeMachine<u64, ()> + Send + 'static,
        M: ManagerMachine<u64, ()> + Send + 'static,
    {
        let mut sim = Simulation::new(cluster, self.0.profile, self.0.warmup);
        if let Some((hw, block_bytes)) = self.0.hardware {
            sim = sim.with_hardware(hw, block_bytes);
        }
        Box::new(ClusterRun {
            sim,
            spec: self.0,
            elapsed: Duration::ZERO,
        })
    }
}

/// Simulates one cluster per spec on the same trace, in parallel, and
/// returns their results in the order of `specs`. `on_chunk` is called
/// with the requests simulated so far.
pub fn simulate(
    requests: Requests,
    specs: &[CoopSpec],
    mut on_chunk: impl FnMut(u64),
) -> Result<Vec<CoopResult>, CoopError> {
    let mut runs = specs
        .iter()
        .map(|spec| build(spec, BoxRun(spec.clone())))
        .collect::<Result<Vec<_>, _>>()?;
    let mut done = 0u64;
    for_each_chunk(
        requests,
        || Vec::with_capacity(CHUNK),
        |chunk: &Vec<Request>| {
            runs.par_iter_mut()
                .map(|run| run.feed(chunk))
                .collect::<Result<Vec<()>, _>>()?;
            done += chunk.len() as u64;
            on_chunk(done);
            Ok::<(), CoopError>(())
        },
    )?;
    Ok(runs.into_iter().map(|run| run.finish()).collect())
}

/// Simulates one cluster over requests already in memory, on the calling
/// thread (for sweeps, which run many clusters over one trace).
pub fn simulate_slice(requests: &[Request], spec: &CoopSpec) -> Result<CoopResult, CoopError> {
    let mut run = build(spec, BoxRun(spec.clone()))?;
    run.feed(requests)?;
    Ok(run.finish())
}
