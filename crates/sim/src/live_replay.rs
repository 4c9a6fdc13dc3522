//! A cluster replay through the live protocol: reads replayed one at a
//! time through a [`LiveCluster`] (the core's `NodeProtocol`, the code
//! every `coopcache node` runs, over an in-order network) and, beside it,
//! through the simulator's model of the same algorithm, read by read.
//! Each read must come back with the origin's contents, from the level
//! the model served it at, and leave every node caching as many blocks
//! as the model's; no node may report a violation, an integrity failure,
//! a timeout or a read refused as not live. `coopcache sim live` runs it
//! at any cluster size (issue 44: 64 and 1,000 nodes).
//!
//! Members can be set to lend: they never read, and before the replay
//! every member hears on its pings who is idle, as Netcache's members do
//! (Direct parks its evictions on them, N-Chance forwards its singlets to
//! them); the model's nodes are told the same lenders.

use crate::coop::stepwise::{StepwiseError, stepwise};
use crate::protocol::{LiveCluster, NeverQuiet, Order, Tamper, content_of};
use crate::trace::{Op, Request};
use coopcache_core::coop::{
    AlgorithmKind, ClassPolicies, ClusterConfig, ConfigError, Level, LiveShape, NodeId,
    SimulatorOnly,
};
use coopcache_core::policy::PolicyKind;
use coopcache_core::protocol::{IDLE_AFTER_US, MAX_PINGS_PER_ROUND};
use std::collections::HashSet;

/// Bytes of a replayed block: only digests travel, so the size only
/// names the contents.
const BLOCK_SIZE: u32 = 4096;

/// The cluster a replay runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveReplayConfig {
    /// The live algorithm.
    pub algorithm: AlgorithmKind,
    /// Nodes (the requests' clients are `0..nodes`).
    pub nodes: u32,
    /// Blocks each node caches.
    pub capacity: usize,
    /// N-Chance's recirculation count.
    pub chances: u8,
    /// Seed of the algorithms' random choices.
    pub seed: u64,
    /// Size-class policies (N-Chance's; a block's class is its id's top
    /// three bits, [`coopcache_core::coop::class_key`]).
    pub classes: ClassPolicies,
    /// Members that lend their memory: they never read, and are idle
    /// (Netcache's lenders). Empty: every member reads, none lends, and
    /// Direct parks nothing.
    pub lenders: Vec<NodeId>,
}

/// Where the live protocol and the model first parted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// The read (0-based, among the requests).
    pub read: usize,
    /// What differed, both ways.
    pub what: String,
}

/// What a replay found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LiveReplay {
    /// Reads replayed.
    pub reads: u64,
    /// Reads per level served, live (indexed by [`Level::index`]).
    pub levels: [u64; Level::ALL.len()],
    /// Reads whose level and caches matched the model's.
    pub agreed: u64,
    /// The first read that did not, if any.
    pub first_difference: Option<Difference>,
    /// Reads that returned other contents than the origin's.
    pub wrong_contents: u64,
    /// Messages between nodes.
    pub messages: u64,
    /// Origin reads.
    pub origin_reads: u64,
    /// Violations, integrity failures, timeouts and reads refused as not
    /// live, every node's together: none in an honest cluster.
    pub faults: u64,
}

impl LiveReplay {
    /// Whether every invariant held.
    pub fn holds(&self) -> bool {
        self.first_difference.is_none() && self.wrong_contents == 0 && self.faults == 0
    }
}

/// Why a replay could not run.
#[derive(Debug, thiserror::Error)]
pub enum LiveReplayError {
    /// The algorithm runs in the simulator only.
    #[error(transparent)]
    NotLive(#[from] SimulatorOnly),
    /// The cluster cannot be built.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The model could not replay the requests.
    #[error(transparent)]
    Model(#[from] StepwiseError),
    /// A request is a write: the live replay reads only.
    #[error("request {0} (0-based) is a write: the live replay replays reads only")]
    Write(usize),
    /// A request names a client the cluster does not have.
    #[error("request {read} (0-based) is from client {client}, but the cluster has {nodes} nodes")]
    Client {
        /// The request.
        read: usize,
        /// Its client.
        client: u32,
        /// Nodes.
        nodes: u32,
    },
    /// A request is from a lender, which reads nothing (it lends because
    /// its own reads have stopped).
    #[error(
        "request {read} (0-based) is from client {client}, a lender: lenders are idle and read nothing"
    )]
    LenderReads {
        /// The request.
        read: usize,
        /// Its client.
        client: u32,
    },
    /// So many reads that members would ping each other during the
    /// replay (each read takes a microsecond of virtual time), and hear
    /// of lenders whose memory filled: the model's lenders never change.
    #[error("{reads} reads with lenders: at most {most} fit between two rounds of pings")]
    TooLong {
        /// Reads asked for.
        reads: usize,
        /// Reads that fit.
        most: u64,
    },
    /// Before the replay, the live members did not hear the lenders the
    /// model was given (a bug).
    #[error("before the replay, node {node} heard {heard:?} lend, the model has {model:?}")]
    Lenders {
        /// The member.
        node: NodeId,
        /// The members it heard lend.
        heard: Vec<NodeId>,
        /// The lenders.
        model: Vec<NodeId>,
    },
    /// A read before the replay, that makes a member busy, failed (a bug).
    #[error("node {node}'s first read (block {block}), before the replay, failed: {what}")]
    Priming {
        /// The member.
        node: NodeId,
        /// The block.
        block: u64,
        /// How.
        what: String,
    },
    /// The live cluster never went quiet after a read (a bug).
    #[error("read {0} (0-based): {1}")]
    NeverQuiet(usize, NeverQuiet),
}

/// Replays `requests` (reads, from clients `0..cfg.nodes`) through the
/// live protocol and the model of `cfg.algorithm`, and compares them read
/// by read.
pub fn live_replay(
    cfg: &LiveReplayConfig,
    requests: &[Request],
) -> Result<LiveReplay, LiveReplayError> {
    compare(cfg, cfg.algorithm, requests, None)
}

/// [`live_replay`] against the model of `model`, with `tamper` altering
/// messages between nodes (the tests' way to see a difference reported:
/// another algorithm's model, a host altering what it returns).
fn compare(
    cfg: &LiveReplayConfig,
    model: AlgorithmKind,
    requests: &[Request],
    tamper: Option<Tamper<u64>>,
) -> Result<LiveReplay, LiveReplayError> {
    let mut lenders = cfg.lenders.clone();
    lenders.sort_unstable();
    lenders.dedup();
    for (read, r) in requests.iter().enumerate() {
        if r.op != Op::Read {
            return Err(LiveReplayError::Write(read));
        }
        if r.client >= cfg.nodes {
            return Err(LiveReplayError::Client {
                read,
                client: r.client,
                nodes: cfg.nodes,
            });
        }
        if lenders.contains(&r.client) {
            return Err(LiveReplayError::LenderReads {
                read,
                client: r.client,
            });
        }
    }
    cfg.algorithm.live()?;
    let config = ClusterConfig {
        nodes: cfg.nodes,
        node_capacity: cfg.capacity,
        chances: cfg.chances,
        seed: cfg.seed,
        classes: cfg.classes.clone(),
        lenders: Some(lenders.clone()),
        ..ClusterConfig::paper(cfg.nodes)
    };
    let model_config = model.live_config(&config)?;
    let shape = LiveShape {
        capacity: cfg.capacity,
        policy: PolicyKind::Lru,
        chances: cfg.chances,
        seed: cfg.seed,
        classes: cfg.classes.clone(),
    };
    // The simulator's order: every message, a node's messages to itself
    // included, through one queue (N-Chance's ripple rule depends on it).
    let (mut live, primers) = match lenders.is_empty() {
        true => {
            let live = LiveCluster::<u64>::with_order(
                cfg.algorithm,
                cfg.nodes,
                &shape,
                BLOCK_SIZE,
                Order::Fifo,
            )?;
            (live, Vec::new())
        }
        false => hear_lenders(cfg, &shape, &lenders, requests)?,
    };
    let model_requests: Vec<Request> = primers.iter().chain(requests).cloned().collect();
    let steps = stepwise(model, &model_config, &model_requests, false)?;
    let steps = &steps[primers.len()..];
    if let Some(tamper) = tamper {
        live.set_tamper(tamper);
    }
    let mut out = LiveReplay::default();
    for (read, (r, step)) in requests.iter().zip(steps).enumerate() {
        out.reads += 1;
        let served = match live.read(r.client, r.id) {
            Ok(Some(Ok(served))) => served,
            Ok(Some(Err(failure))) => {
                out.faults += 1;
                note(&mut out, read, || format!("the read failed: {failure}"));
                continue;
            }
            Ok(None) => {
                out.faults += 1;
                note(&mut out, read, || "the read never completed".to_string());
                continue;
            }
            Err(e) => return Err(LiveReplayError::NeverQuiet(read, e)),
        };
        out.levels[served.level.index()] += 1;
        if served.data != content_of(&r.id, BLOCK_SIZE) {
            out.wrong_contents += 1;
        }
        if served.level != step.level {
            note(&mut out, read, || {
                format!(
                    "block {} read by node {}: live {:?}, model {:?}",
                    r.id, r.client, served.level, step.level
                )
            });
            continue;
        }
        let cached: Vec<usize> = live.nodes().iter().map(|n| n.usage().blocks).collect();
        if cached != step.cached {
            note(&mut out, read, || {
                let at = cached.iter().zip(&step.cached).position(|(a, b)| a != b);
                let at = at.unwrap_or_default();
                format!(
                    "after block {} read by node {}: node {at} caches {} blocks live, {} in the model",
                    r.id, r.client, cached[at], step.cached[at]
                )
            });
            continue;
        }
        out.agreed += 1;
    }
    let stats = live.stats();
    out.messages = stats.messages;
    out.origin_reads = stats.origin_reads;
    out.faults += stats.violations;
    for n in live.nodes() {
        let s = n.stats();
        out.faults += s.integrity_failures + s.timeouts + s.not_live;
    }
    Ok(out)
}

/// A live cluster whose members have heard, on their own pings, which of
/// them lend: every member idle at first, then each one not in `lenders`
/// reads a block of its own (the returned primers, which the model reads
/// first too), and more rounds of pings say it is busy. The lenders
/// are checked as every reader hears them, and the replay must end before
/// the next round of pings (a lender's memory full of parked blocks would
/// then stop it lending, which the model's fixed lenders do not follow).
fn hear_lenders(
    cfg: &LiveReplayConfig,
    shape: &LiveShape,
    lenders: &[NodeId],
    requests: &[Request],
) -> Result<(LiveCluster<u64>, Vec<Request>), LiveReplayError> {
    // A member pings at most MAX_PINGS_PER_ROUND peers a round, in turn:
    // it has heard every other after `rounds` rounds (from their pings or
    // its own's answers). Pings come often enough that the rounds after a
    // reader's first read all find it busy.
    let others = cfg.nodes.saturating_sub(1) as usize;
    let rounds = others.div_ceil(MAX_PINGS_PER_ROUND).max(1) as u64;
    let every_us = (IDLE_AFTER_US / (rounds + 2)).max(1);
    let heard_all = (rounds + 1) * every_us;
    // Refused before the pings run, as closely as known yet (checked
    // exactly after them).
    if requests.len() as u64 >= every_us {
        return Err(LiveReplayError::TooLong {
            reads: requests.len(),
            most: every_us - 1,
        });
    }
    let mut live = LiveCluster::<u64>::with_order_and_pings(
        cfg.algorithm,
        cfg.nodes,
        shape,
        BLOCK_SIZE,
        Order::Fifo,
        every_us,
    )?;
    let quiet = |e| LiveReplayError::NeverQuiet(0, e);
    live.run_for(IDLE_AFTER_US + heard_all).map_err(quiet)?;
    let used: HashSet<u64> = requests.iter().map(|r| r.id).collect();
    let readers = (0..cfg.nodes).filter(|n| !lenders.contains(n));
    let fresh = (0..).filter(|id| !used.contains(id));
    let primers: Vec<Request> = readers
        .zip(fresh)
        .map(|(client, id)| Request {
            id,
            time: 0,
            size: BLOCK_SIZE,
            client,
            op: Op::Read,
        })
        .collect();
    for p in &primers {
        let failed = |what: String| LiveReplayError::Priming {
            node: p.client,
            block: p.id,
            what,
        };
        match live.read(p.client, p.id).map_err(quiet)? {
            Some(Ok(served)) if served.data == content_of(&p.id, BLOCK_SIZE) => {}
            Some(Ok(_)) => return Err(failed("other contents than the origin's".into())),
            Some(Err(e)) => return Err(failed(e.to_string())),
            None => return Err(failed("it never completed".into())),
        }
    }
    live.run_for(heard_all).map_err(quiet)?;
    for p in &primers {
        let node = &live.nodes()[p.client as usize];
        let heard: Vec<NodeId> = (0..cfg.nodes)
            .filter(|&m| node.peer_status(m).is_some_and(|s| s.lendable() > 0))
            .collect();
        if heard != lenders {
            return Err(LiveReplayError::Lenders {
                node: p.client,
                heard,
                model: lenders.to_vec(),
            });
        }
    }
    let next_ping = live.nodes().iter().filter_map(|n| n.poll_timeout()).min();
    let most = next_ping.map_or(u64::MAX, |t| t.saturating_sub(live.now()));
    if requests.len() as u64 >= most {
        return Err(LiveReplayError::TooLong {
            reads: requests.len(),
            most: most.saturating_sub(1),
        });
    }
    Ok((live, primers))
}

/// Keeps the first difference.
fn note(out: &mut LiveReplay, read: usize, what: impl FnOnce() -> String) {
    if out.first_difference.is_none() {
        out.first_difference = Some(Difference { read, what: what() });
    }
}

/// `reads` reads from `nodes` clients over `blocks` blocks: half of each
/// client's reads in a private share of the blocks, half skewed towards
/// the low ids every client shares (so blocks move between nodes and
/// recirculate). Deterministic in `seed`.
pub fn mixed_reads(nodes: u32, blocks: u64, reads: usize, seed: u64) -> Vec<Request> {
    let mut state = seed;
    let mut below = |n: u64| {
        let x = coopcache_core::policy::splitmix64(&mut state);
        ((u128::from(x) * u128::from(n)) >> 64) as u64
    };
    let share = (blocks / u64::from(nodes.max(1))).max(1);
    (0..reads)
        .map(|i| {
            let client = below(u64::from(nodes)) as u32;
            let id = if below(2) == 0 {
                u64::from(client) * share + below(share)
            } else {
                let a = below(blocks);
                below(a + 1)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(algorithm: AlgorithmKind, nodes: u32) -> LiveReplayConfig {
        LiveReplayConfig {
            algorithm,
            nodes,
            capacity: 16,
            chances: 2,
            seed: 1,
            classes: ClassPolicies::uniform(),
            lenders: Vec::new(),
        }
    }

    #[test]
    fn every_live_algorithm_follows_its_model_read_by_read() {
        let reads = mixed_reads(8, 512, 2_000, 7);
        for kind in ["base", "greedy", "nchance", "hash", "direct"] {
            let kind = AlgorithmKind::parse_live(kind).unwrap();
            let r = live_replay(&cfg(kind, 8), &reads).unwrap();
            assert!(r.holds(), "{kind}: {r:?}");
            assert_eq!(r.agreed, 2_000, "{kind}");
            assert!(r.levels[Level::Origin.index()] > 0, "{kind}: {r:?}");
            if kind != AlgorithmKind::Base && kind != AlgorithmKind::Direct {
                assert!(r.levels[Level::RemoteNode.index()] > 0, "{kind}: {r:?}");
            }
        }
    }

    #[test]
    fn size_class_policies_run_live_as_in_the_model() {
        use coopcache_core::coop::{ClassPolicy, SizeClass, class_key};
        // Class 0 never looked up in peers' memory, class 1's evictions
        // dropped, class 2 plain N-Chance.
        let class = |name: &str, below, policy| SizeClass {
            name: name.into(),
            below,
            policy,
        };
        let classes = ClassPolicies::new(vec![
            class(
                "local",
                Some(1 << 10),
                ClassPolicy {
                    cooperative: false,
                    ..ClassPolicy::default()
                },
            ),
            class(
                "dropped",
                Some(10 << 10),
                ClassPolicy {
                    forward_evictions: false,
                    ..ClassPolicy::default()
                },
            ),
            class("plain", None, ClassPolicy::default()),
        ])
        .unwrap();
        let mut reads = mixed_reads(8, 512, 3_000, 7);
        for r in &mut reads {
            r.id = class_key((r.id % 3) as usize, r.id).unwrap();
        }
        let classed = LiveReplayConfig {
            classes,
            ..cfg(AlgorithmKind::NChance, 8)
        };
        let with = live_replay(&classed, &reads).unwrap();
        assert!(with.holds(), "{with:?}");
        assert_eq!(with.agreed, 3_000);
        let without = live_replay(&cfg(AlgorithmKind::NChance, 8), &reads).unwrap();
        assert!(without.holds(), "{without:?}");
        // The policies changed where reads were served: class 0's blocks
        // come from a peer's memory only without them.
        let remote = |r: &LiveReplay| r.levels[Level::RemoteNode.index()];
        assert!(remote(&with) < remote(&without), "{with:?} {without:?}");
        // Another algorithm is refused the classes, naming N-Chance.
        let greedy = LiveReplayConfig {
            algorithm: AlgorithmKind::Greedy,
            ..classed
        };
        let e = live_replay(&greedy, &reads).unwrap_err().to_string();
        assert!(e.contains("nchance"), "{e}");
    }

    #[test]
    fn a_live_protocol_unlike_its_model_is_reported_at_the_first_read_apart() {
        let reads = mixed_reads(8, 512, 2_000, 7);
        // Greedy's live protocol against Base's model: Greedy forwards to
        // peers' caches, Base reads the origin.
        let greedy = cfg(AlgorithmKind::Greedy, 8);
        let r = compare(&greedy, AlgorithmKind::Base, &reads, None).unwrap();
        assert!(!r.holds());
        let first = r.first_difference.clone().expect("a difference");
        assert!(
            first.what.contains("live RemoteNode, model Origin"),
            "{first:?}"
        );
        assert!(r.agreed < 2_000 && r.agreed as usize >= first.read, "{r:?}");
        assert_eq!(r.faults, 0, "the live protocol itself is sound: {r:?}");
    }

    #[test]
    fn a_host_altering_the_blocks_it_serves_fails_the_replay() {
        use coopcache_core::protocol::PeerMsg;
        let reads = mixed_reads(8, 512, 2_000, 7);
        let greedy = cfg(AlgorithmKind::Greedy, 8);
        let tamper: Tamper<u64> = Box::new(|from, _, msg| {
            if let PeerMsg::Data { data, .. } = msg
                && from == 3
            {
                data.hash[0] ^= 1;
            }
        });
        let r = compare(&greedy, AlgorithmKind::Greedy, &reads, Some(tamper)).unwrap();
        assert!(!r.holds(), "{r:?}");
        // The reader checks each block against its digest: the altered
        // ones are refused and blamed, never served.
        assert!(r.faults > 0, "{r:?}");
        assert_eq!(r.wrong_contents, 0, "{r:?}");
    }

    /// 6 readers, 2 idle lenders.
    fn with_lenders(algorithm: AlgorithmKind) -> (LiveReplayConfig, Vec<Request>) {
        let reads = mixed_reads(6, 384, 2_000, 7);
        let cfg = LiveReplayConfig {
            lenders: vec![6, 7],
            ..cfg(algorithm, 8)
        };
        (cfg, reads)
    }

    #[test]
    fn direct_parking_at_lenders_follows_its_model_and_not_base() {
        let (direct, reads) = with_lenders(AlgorithmKind::Direct);
        let r = live_replay(&direct, &reads).unwrap();
        assert!(r.holds(), "{r:?}");
        assert!(r.levels[Level::RemoteNode.index()] > 0, "{r:?}");
        // Against Base's model (what the replay compared Direct with
        // before it modelled lenders), the first block parked at a lender
        // parts them.
        let base = compare(&direct, AlgorithmKind::Base, &reads, None).unwrap();
        let first = base.first_difference.clone().expect("a difference");
        let lender = first.what.contains("node 6 caches") || first.what.contains("node 7 caches");
        assert!(lender, "{first:?}");
        assert_eq!(
            base.faults, 0,
            "the live protocol itself is sound: {base:?}"
        );
    }

    #[test]
    fn a_lender_that_reads_is_refused_by_name() {
        let (direct, mut reads) = with_lenders(AlgorithmKind::Direct);
        reads[4].client = 7;
        let e = live_replay(&direct, &reads).unwrap_err();
        assert_eq!(
            e.to_string(),
            "request 4 (0-based) is from client 7, a lender: lenders are idle and read nothing"
        );
    }

    #[test]
    fn writes_and_unknown_clients_are_refused_by_name() {
        let mut reads = mixed_reads(4, 64, 10, 1);
        reads[3].client = 9;
        let e = live_replay(&cfg(AlgorithmKind::Base, 4), &reads).unwrap_err();
        assert_eq!(
            e.to_string(),
            "request 3 (0-based) is from client 9, but the cluster has 4 nodes"
        );
        reads[3].client = 0;
        reads[5].op = Op::Write;
        let e = live_replay(&cfg(AlgorithmKind::Base, 4), &reads).unwrap_err();
        assert!(
            e.to_string().contains("request 5 (0-based) is a write"),
            "{e}"
        );
        let central = AlgorithmKind::Central;
        let e = live_replay(&cfg(central, 4), &mixed_reads(4, 64, 10, 1)).unwrap_err();
        assert!(e.to_string().contains("central manager"), "{e}");
    }
}
