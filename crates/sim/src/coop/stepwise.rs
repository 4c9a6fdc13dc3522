//! A trace replayed through the simulator one request at a time, each run
//! to quiescence, with what each request did: what a live cluster replaying
//! the same trace request by request is compared with (`coopcache bench
//! algorithms`, the node crate's equivalence test).

use super::{CostProfile, Simulation};
use crate::trace::Request;
use coopcache_core::coop::{
    AlgorithmKind, Cluster, ClusterConfig, ClusterVisitor, ConfigError, Level, ManagerMachine,
    NodeMachine,
};

/// What one request did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The level that served it.
    pub level: Level,
    /// Then, blocks each node caches.
    pub cached: Vec<usize>,
    /// Then, the blocks each node's directory entries name, sorted (only
    /// if asked for: it walks every cache).
    pub held: Option<Vec<Vec<u64>>>,
}

/// Why a stepwise replay could not run.
#[derive(Debug, thiserror::Error)]
pub enum StepwiseError {
    /// The cluster could not be built.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A request names a client the cluster does not have.
    #[error(transparent)]
    Client(#[from] super::ClientOutOfRange),
    /// A read did not complete once its messages ran out (a bug in an
    /// algorithm's state machines).
    #[error("read {0} (0-based) did not complete at quiescence")]
    Incomplete(usize),
}

/// Replays `requests` through the `kind` cluster built from `config`, one
/// request at a time, recording each read's [`Step`] (with `held` if
/// `holdings`).
pub fn stepwise(
    kind: AlgorithmKind,
    config: &ClusterConfig,
    requests: &[Request],
    holdings: bool,
) -> Result<Vec<Step>, StepwiseError> {
    kind.build(config, Steps { requests, holdings })?
}

struct Steps<'a> {
    requests: &'a [Request],
    holdings: bool,
}

impl ClusterVisitor<u64> for Steps<'_> {
    type Output = Result<Vec<Step>, StepwiseError>;

    fn visit<N, M>(self, cluster: Cluster<N, M>) -> Self::Output
    where
        N: NodeMachine<u64, ()> + Send + 'static,
        M: ManagerMachine<u64, ()> + Send + 'static,
    {
        let mut sim = Simulation::new(cluster, CostProfile::ATM_1994, 0);
        let mut steps = Vec::with_capacity(self.requests.len());
        for (i, r) in self.requests.iter().enumerate() {
            let (level, _hops) = sim.request(r)?.ok_or(StepwiseError::Incomplete(i))?;
            let nodes = &sim.cluster().nodes;
            let held = self.holdings.then(|| {
                nodes
                    .iter()
                    .map(|n| {
                        let mut blocks = Vec::new();
                        n.for_each_tracked(&mut |b| blocks.push(b));
                        blocks.sort_unstable();
                        blocks
                    })
                    .collect()
            });
            steps.push(Step {
                level,
                cached: nodes.iter().map(|n| n.len()).collect(),
                held,
            });
        }
        Ok(steps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Op;

    fn read(client: u32, id: u64) -> Request {
        Request {
            id,
            time: 0,
            size: 0,
            client,
            op: Op::Read,
        }
    }

    #[test]
    fn each_read_reports_its_level_and_the_caches_after_it() {
        let config = ClusterConfig {
            manager_capacity: 0,
            ..ClusterConfig::paper(2)
        };
        let trace = [read(0, 7), read(0, 7), read(1, 7)];
        let steps = stepwise(AlgorithmKind::Greedy, &config, &trace, true).unwrap();
        let levels: Vec<Level> = steps.iter().map(|s| s.level).collect();
        assert_eq!(levels, [Level::Origin, Level::Local, Level::RemoteNode]);
        assert_eq!(steps[0].cached, [1, 0]);
        assert_eq!(steps[2].cached, [1, 1]);
        assert_eq!(steps[2].held, Some(vec![vec![7], vec![7]]));
        let no_client = stepwise(AlgorithmKind::Greedy, &config, &[read(5, 1)], false);
        assert!(matches!(no_client, Err(StepwiseError::Client(_))));
    }
}
