//! The live cluster runs the protocol the simulator runs: replayed one
//! request at a time, a seeded trace is served from exactly the same level
//! by a 4-node loopback cluster of daemons and by the same protocol code
//! simulated (`coopcache_sim::protocol`, the daemon's delivery order), with
//! every node caching as many blocks after every request, for Base,
//! Greedy, Hash-Distributed and Direct; N-Chance up to one named race.
//! Every member reads here, so none is idle and lends: Direct parks
//! nothing and its model is Base's. (`crates/sim/tests/protocol_sim.rs`
//! checks the simulated protocol against the simulator's model, exactly,
//! for all five, and Direct's parking at idle members against its model;
//! here, a member lends until its memory fills with parked blocks, and
//! says so on its next ping, which real-time pings make a race.)
//!
//! Both sides get the same shape: 4 nodes of 16 blocks each (the smallest
//! cache the memory budget allows, far below the 120 blocks in play, so
//! caches overflow and N-Chance recirculates singlets all the time), the
//! same block ids, n = 2 and seed 1 (the live default). After each read
//! the live replay waits for quiescence: every node quiet (no read in
//! flight, no block held unverified, no question unanswered) and every
//! protocol message each node sent received by its peer.
//!
//! The trace's seed is printed; set `EQUIVALENCE_SEED` to replay another.

use crate::common;
use common::*;
use coopcache_core::coop::{AlgorithmKind, Level, LiveShape};
use coopcache_core::policy::PolicyKind;
use coopcache_node::NodeHandle;
use coopcache_node::block::{BlockId, first_block};
use coopcache_node::budget::{PER_BLOCK_OVERHEAD, RESERVE};
use coopcache_sim::protocol::LiveCluster;
use coopcache_sim::trace::{Op, Request};
use std::sync::Arc;
use std::time::Duration;

const NODES: u32 = 4;
const BLOCK_SIZE: u32 = 4096;
/// Blocks each node caches (the least the budget accepts).
const CAPACITY: usize = 16;
const FILES: u64 = 4;
const BLOCKS_PER_FILE: u64 = 30;
const READS: usize = 400;
const DEFAULT_SEED: u64 = 0x5eed_0001;

/// A small deterministic generator (the core's splitmix64), so the trace
/// replays from its seed.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        coopcache_core::policy::splitmix64(&mut self.0)
    }

    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `READS` reads by 4 clients over `FILES * BLOCKS_PER_FILE` blocks,
/// Zipf-skewed (exponent 0.9) with the popular blocks scattered over the
/// files, and each client favouring its own quarter of the blocks half the
/// time (so there is both sharing and private reuse).
fn trace(seed: u64) -> Vec<Request> {
    let mut rng = SplitMix(seed);
    let blocks = FILES * BLOCKS_PER_FILE;
    let mut rank_to_block: Vec<u64> = (0..blocks).collect();
    for i in (1..rank_to_block.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        rank_to_block.swap(i, j);
    }
    let weights: Vec<f64> = (0..blocks)
        .map(|r| 1.0 / ((r + 1) as f64).powf(0.9))
        .collect();
    let total: f64 = weights.iter().sum();
    let zipf = |rng: &mut SplitMix| {
        let mut x = rng.unit() * total;
        for (r, w) in weights.iter().enumerate() {
            if x < *w {
                return rank_to_block[r];
            }
            x -= w;
        }
        rank_to_block[blocks as usize - 1]
    };
    (0..READS)
        .map(|i| {
            let client = rng.below(u64::from(NODES)) as u32;
            let id = if rng.below(2) == 0 {
                let quarter = blocks / u64::from(NODES);
                u64::from(client) * quarter + rng.below(quarter)
            } else {
                zipf(&mut rng)
            };
            Request {
                id,
                time: i as u64,
                size: BLOCK_SIZE,
                client,
                op: Op::Read,
            }
        })
        .collect()
}

/// Trace block `id` as a live file and block index.
fn file_of(id: u64) -> (String, u32) {
    (
        format!("f{}.bin", id / BLOCKS_PER_FILE),
        (id % BLOCKS_PER_FILE) as u32,
    )
}

/// What one request did: the level that served it, and then the blocks
/// each node caches.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Outcome {
    level: Level,
    cached: Vec<u64>,
}

/// The protocol simulated: each request's outcome, with the live
/// cluster's block ids.
fn simulate(kind: AlgorithmKind, requests: &[Request], blocks: &[BlockId]) -> Vec<Outcome> {
    let shape = LiveShape {
        capacity: CAPACITY,
        policy: PolicyKind::Lru,
        chances: 2,
        seed: 1,
        classes: Default::default(),
    };
    let mut sim = LiveCluster::new(kind, NODES, &shape, BLOCK_SIZE).unwrap();
    requests
        .iter()
        .zip(blocks)
        .map(|(r, &block)| {
            let served = sim.read(r.client, block).unwrap().unwrap().unwrap();
            let cached = sim.nodes().iter().map(|n| n.usage().blocks as u64);
            Outcome {
                level: served.level,
                cached: cached.collect(),
            }
        })
        .collect()
}

/// Waits for quiescence; returns the blocks each node caches.
async fn quiescence(nodes: &[Arc<NodeHandle>]) -> Vec<u64> {
    let all = coopcache_node::quiescence::quiescence(nodes, Duration::from_secs(10))
        .await
        .unwrap();
    all.iter().map(|s| s.cached_blocks).collect()
}

async fn live_cluster(algorithm: AlgorithmKind) -> TestCluster {
    let names: Vec<String> = (0..FILES).map(|f| format!("f{f}.bin")).collect();
    let len = (BLOCKS_PER_FILE * u64::from(BLOCK_SIZE)) as usize;
    let files: Vec<(&str, usize)> = names.iter().map(|n| (n.as_str(), len)).collect();
    let shape = Shape {
        nodes: NODES,
        algorithm,
        memory: RESERVE + CAPACITY as u64 * (u64::from(BLOCK_SIZE) + PER_BLOCK_OVERHEAD),
        block_size: BLOCK_SIZE,
        origin_delay: Duration::ZERO,
    };
    // A peer is never late here: a timeout would send a read to the
    // origin, which the simulator never does.
    cluster_with(shape, &files, |o| o.min_timeout = Duration::from_secs(10)).await
}

/// How closely the live cluster must follow the simulated protocol.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Match {
    /// Every request from the same level, every node caching as many
    /// blocks, after every request.
    Exact,
    /// Request by request until the first race between links decides an
    /// outcome differently (see `nchance_...`), then most requests from
    /// the same level and the same mix of levels.
    UpToRaces,
}

async fn check(kind: AlgorithmKind, want_match: Match) {
    let seed = std::env::var("EQUIVALENCE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SEED);
    println!("{kind}: trace seed {seed} (EQUIVALENCE_SEED replays it)");
    let requests = trace(seed);
    let c = live_cluster(kind).await;
    let mut versions = Vec::new();
    for f in 0..FILES {
        versions.push(c.nodes[0].stat(&format!("f{f}.bin")).await.unwrap());
    }
    let blocks: Vec<BlockId> = requests
        .iter()
        .map(|r| {
            let (name, index) = file_of(r.id);
            let version = &versions[(r.id / BLOCKS_PER_FILE) as usize];
            BlockId {
                index,
                ..first_block(&name, &version.version)
            }
        })
        .collect();
    let sim = simulate(kind, &requests, &blocks);
    let len = (BLOCKS_PER_FILE * u64::from(BLOCK_SIZE)) as usize;
    let mut counts = [0usize; 4];
    let mut sim_counts = [0usize; 4];
    let (mut agree, mut first_difference) = (0usize, None);
    for (i, (r, want)) in requests.iter().zip(&sim).enumerate() {
        let (name, index) = file_of(r.id);
        let f = (r.id / BLOCKS_PER_FILE) as usize;
        let path: Arc<str> = Arc::from(name.as_str());
        let (data, level) = c.nodes[r.client as usize]
            .read_block(&path, &versions[f], index)
            .await
            .unwrap();
        let bytes = contents(f as u64 + 1, len);
        let start = index as usize * BLOCK_SIZE as usize;
        assert!(
            data[..] == bytes[start..start + BLOCK_SIZE as usize],
            "wrong bytes for block {index} of {name}"
        );
        let got = Outcome {
            level,
            cached: quiescence(&c.nodes).await,
        };
        if want_match == Match::Exact {
            assert_eq!(
                &got, want,
                "{kind}: request {i} ({r:?}): live (left) and simulated (right) differ"
            );
        } else {
            if got.level == want.level {
                agree += 1;
            }
            if &got != want && first_difference.is_none() {
                println!("{kind}: request {i} ({r:?}): live {got:?}, simulated {want:?}");
                first_difference = Some(i);
            }
        }
        counts[level.index()] += 1;
        sim_counts[want.level.index()] += 1;
    }
    println!("{kind}: levels local/manager/remote/origin {counts:?}, simulated {sim_counts:?}");
    if want_match == Match::UpToRaces {
        println!(
            "{kind}: {agree} of {READS} requests served from the simulated level; first difference at {first_difference:?}"
        );
        // Races reorder a few messages, not the algorithm: most requests
        // still agree, and each level's share stays within a few percent.
        assert!(agree * 100 >= READS * 85, "{agree} of {READS} agree");
        for (l, (&got, &want)) in counts.iter().zip(&sim_counts).enumerate() {
            assert!(
                got.abs_diff(want) * 100 <= READS * 4,
                "level {l}: live {got}, simulated {want}"
            );
        }
    }
    // The trace exercises cooperation, not just local hits and misses
    // (but in Base, and in Direct, whose members all read here, so none
    // lends).
    if !matches!(kind, AlgorithmKind::Base | AlgorithmKind::Direct) {
        assert!(counts[Level::RemoteNode.index()] > 20, "{counts:?}");
    }
    assert!(counts[Level::Local.index()] > 20, "{counts:?}");
    for node in &c.nodes {
        let s = node.status().await.unwrap();
        assert_eq!(s.timeouts, 0, "node {} timed out on a peer", s.id);
        assert_eq!(s.integrity_failures, 0);
        assert_eq!(s.protocol_violations, 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn base_serves_every_read_from_the_simulated_level() {
    check(AlgorithmKind::Base, Match::Exact).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn greedy_serves_every_read_from_the_simulated_level() {
    check(AlgorithmKind::Greedy, Match::Exact).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hash_serves_every_read_from_the_simulated_level() {
    check(AlgorithmKind::Hash, Match::Exact).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_serves_every_read_from_the_simulated_level() {
    check(AlgorithmKind::Direct, Match::Exact).await;
}

/// N-Chance follows the simulated protocol request by request until a
/// race between links decides an eviction differently. Within one read,
/// messages from different senders can meet at one node: a forwarded
/// singlet (`Recirculate`, from the node that evicted it) and the
/// manager's `Singlet` answer about another block, say. The simulation
/// delivers them in the order they were sent; the network in whatever
/// order the links and the scheduler give, and the ripple rule evicts a
/// different block for each order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nchance_follows_the_simulated_protocol_up_to_races_between_links() {
    check(AlgorithmKind::NChance, Match::UpToRaces).await;
}
