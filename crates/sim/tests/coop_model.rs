//! Property tests of every cooperation algorithm: random reads and writes by
//! random clients over a small block space, on small clusters (so caches
//! overflow, singlets recirculate, writes invalidate), with every policy
//! that suits cooperation. After every request, run to quiescence:
//!
//! - every read completed exactly once, and its level agrees with its hops;
//! - no node holds more than its capacity, and each machine's own
//!   invariants hold (N-Chance: recirculation counts between 1 and n, no
//!   question left pending; Central: the global part within its share);
//! - the manager's view of which node caches what equals the union of the
//!   nodes' caches.
//!
//! And N-Chance with n = 0 serves every read exactly as Greedy does, and
//! every algorithm keeps its invariants with attribute caches as the
//! nodes' local caches.
//! proptest prints the failing case and keeps its seed in
//! `proptest-regressions/` for replay.

use coopcache_core::PolicyKind;
use coopcache_core::attr::{Access, FileRequest, FileType};
use coopcache_core::coop::{
    AlgorithmKind, Cluster, ClusterConfig, ClusterVisitor, Level, ManagerMachine, NodeMachine,
};
use coopcache_sim::attr::block_requests;
use coopcache_sim::coop::{AttributeNodes, CoopSpec, CostProfile, Simulation, build};
use coopcache_sim::trace::{Op, Request};
use proptest::prelude::*;

const BLOCKS: u64 = 120;

#[derive(Clone, Debug)]
struct Case {
    config: ClusterConfig,
    requests: Vec<Request>,
}

/// Policies a cooperative node may use (LIRS is simulation-only: it can
/// drop a block during a hit without saying so).
const POLICIES: [PolicyKind; 7] = [
    PolicyKind::Lru,
    PolicyKind::Fifo,
    PolicyKind::Clock,
    PolicyKind::Sieve,
    PolicyKind::Arc,
    PolicyKind::S3Fifo,
    PolicyKind::TwoQ,
];

fn case() -> impl Strategy<Value = Case> {
    // Node caches of 25-40 blocks with 20-60% global keep every part large
    // enough for every policy (S3-FIFO needs 10), yet far below the blocks
    // in play, so caches overflow all the time.
    (
        2u32..6,
        25usize..40,
        2usize..20,
        0u8..4,
        0usize..POLICIES.len(),
        1u64..1000,
        0.2f64..0.6,
    )
        .prop_flat_map(
            |(nodes, capacity, manager, chances, policy, seed, fraction)| {
                let request = (0..nodes, 0..BLOCKS, prop::bool::weighted(0.15)).prop_map(
                    |(client, id, write)| Request {
                        id,
                        client,
                        op: if write { Op::Write } else { Op::Read },
                        ..Request::default()
                    },
                );
                let config = ClusterConfig {
                    nodes,
                    node_capacity: capacity,
                    manager_capacity: manager,
                    policy: POLICIES[policy],
                    chances,
                    central_fraction: fraction,
                    direct_remote: capacity / 2,
                    seed,
                    ..ClusterConfig::paper(nodes)
                };
                prop::collection::vec(request, 1..400).prop_map(move |requests| Case {
                    config: config.clone(),
                    requests,
                })
            },
        )
}

/// Replays the requests, checking the invariants after each; returns each
/// request's outcome.
struct Check<'a>(&'a [Request]);

type Outcomes = Vec<Option<(Level, u8)>>;

impl ClusterVisitor<u64> for Check<'_> {
    type Output = Result<Outcomes, TestCaseError>;

    fn visit<N, M>(self, cluster: Cluster<N, M>) -> Self::Output
    where
        N: NodeMachine<u64, ()> + Send + 'static,
        M: ManagerMachine<u64, ()> + Send + 'static,
    {
        let mut sim = Simulation::new(cluster, CostProfile::ATM_1994, 0);
        let mut outcomes = Vec::new();
        for (i, r) in self.0.iter().enumerate() {
            let outcome = sim
                .request(r)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(
                outcome.is_some(),
                r.op == Op::Read,
                "request {}: completion of {:?}",
                i,
                r
            );
            if let Some((level, hops)) = outcome {
                let plausible = match level {
                    Level::Local => hops == 0,
                    Level::RemoteNode => hops >= 2,
                    Level::ManagerMemory | Level::Origin => hops >= 2,
                    // The paper's simulator keeps no disk tier.
                    Level::LocalDisk => false,
                };
                prop_assert!(plausible, "request {}: {:?} after {} hops", i, level, hops);
            }
            outcomes.push(outcome);
            sim.cluster()
                .check()
                .map_err(|e| TestCaseError::fail(format!("after request {i} {r:?}: {e}")))?;
        }
        Ok(outcomes)
    }
}

fn run(kind: AlgorithmKind, case: &Case) -> Result<Outcomes, TestCaseError> {
    kind.build(&case.config, Check(&case.requests))
        .map_err(|e| TestCaseError::fail(e.to_string()))?
        .map_err(|e| TestCaseError::fail(format!("{kind}: {e}")))
}

/// Clusters whose nodes have attribute caches, on random file requests.
fn attr_case() -> impl Strategy<Value = (CoopSpec, Vec<Request>)> {
    (2u32..5, 0usize..POLICIES.len(), 1u64..1000).prop_flat_map(|(nodes, _, seed)| {
        let request = (
            0..nodes,
            0usize..4,
            0u64..30,
            1u64..(1 << 20),
            0u64..(1 << 20),
            1u64..(16 << 10),
            prop::bool::weighted(0.1),
        )
            .prop_map(
                |(client, kind, file, size, offset, len, write)| FileRequest {
                    client,
                    file,
                    kind: FileType::ALL[kind],
                    // Metadata is small and executables are read whole: keep
                    // both to a few blocks so a case stays quick.
                    file_size: match FileType::ALL[kind] {
                        FileType::Inode | FileType::Directory => size % 2048 + 1,
                        FileType::Executable => size % (32 << 10) + 1,
                        FileType::Datafile => size,
                    },
                    offset: offset % size,
                    len,
                    access: if write { Access::Write } else { Access::Read },
                },
            );
        prop::collection::vec(request, 1..120).prop_map(move |file_requests| {
            let config: coopcache_core::attr::AttrConfig =
                "8K/128 ID, x/4K Temporal, 64K/64K Sequential"
                    .parse()
                    .unwrap();
            // 128 blocks of 4 KiB: 512 KiB a node, its 20% local part
            // still holds the fixed 72 KiB.
            let resolved = config.resolve(128 * 4096).unwrap();
            let spec = CoopSpec {
                algorithm: AlgorithmKind::Base,
                config: ClusterConfig {
                    nodes,
                    node_capacity: 128,
                    manager_capacity: 16,
                    central_fraction: 0.8,
                    direct_remote: 64,
                    seed,
                    ..ClusterConfig::paper(nodes)
                },
                profile: CostProfile::ATM_1994,
                warmup: 0,
                hardware: None,
                attribute: Some(AttributeNodes {
                    config,
                    block_bytes: 4096,
                }),
            };
            let requests = block_requests(file_requests.into_iter(), resolved).collect();
            (spec, requests)
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn every_algorithm_keeps_its_invariants_with_attribute_caches((spec, requests) in attr_case()) {
        for algorithm in AlgorithmKind::ALL {
            let spec = CoopSpec { algorithm, ..spec.clone() };
            build(&spec, Check(&requests))
                .map_err(|e| TestCaseError::fail(format!("{algorithm}: {e}")))??;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn every_algorithm_keeps_its_invariants(case in case()) {
        for kind in AlgorithmKind::ALL {
            run(kind, &case)?;
        }
    }

    #[test]
    fn nchance_keeps_its_invariants_evicting_foreign_blocks_first(case in case()) {
        let config = ClusterConfig { foreign_first: true, ..case.config.clone() };
        run(AlgorithmKind::NChance, &Case { config, ..case })?;
    }

    #[test]
    fn nchance_with_no_chances_is_greedy_read_by_read(case in case()) {
        let config = ClusterConfig { chances: 0, ..case.config.clone() };
        let case = Case { config, ..case };
        let greedy = run(AlgorithmKind::Greedy, &case)?;
        let nchance = run(AlgorithmKind::NChance, &case)?;
        prop_assert_eq!(greedy, nchance);
    }

    #[test]
    fn base_never_reads_from_another_node(case in case()) {
        let outcomes = run(AlgorithmKind::Base, &case)?;
        prop_assert!(outcomes.iter().flatten().all(|(level, _)| *level != Level::RemoteNode));
    }
}
