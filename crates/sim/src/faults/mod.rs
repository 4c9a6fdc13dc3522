//! Deterministic fault simulation of the live protocol (issue 13): a
//! cluster of the core's [`Node`](coopcache_core::node::Node)s, the
//! machine every `coopcache node` runs (block reads, C2Cfs `exclusive`
//! opens and commits, locks), on a virtual clock over a seeded network,
//! with faults of every kind a cluster meets and members that lie, and
//! invariants checked after every step.
//!
//! Everything random comes from the seed, and events at one time are
//! delivered in the order they were scheduled, so a seed replays the same
//! events in the same order ([`Outcome::fingerprint`]) and a failure is
//! reproduced by its seed alone ([`replay_command`]).
//!
//! Faults: messages dropped, delayed, reordered and duplicated; partitions
//! that cut the cluster in two and heal in any order; crashes (memory
//! lost) and restarts; links between two live nodes that lose everything
//! for a spell, so each one's SWIM suspects the other; slow nodes; origin
//! errors, a slow origin, and files changing at the origin between opens. Lying members ([`Plan::byzantine`]) run the
//! real protocol and lie in what they send (flipped, truncated, stale and
//! other blocks' contents; forged digests; versions that never existed in
//! their answers to opens), forge messages of every kind in every role
//! (answers to opens sprayed at the nonces a member will use next, commit
//! and lock messages too), replay what they were sent, and gossip that
//! honest members are suspect or down. Every node's membership is the
//! core's real [`Membership`](coopcache_core::members::Membership) (view
//! and SWIM) over simulated links, so who is up is what SWIM decides. A
//! message's sender is the node that sent it, as a link authenticates it: claiming
//! another member's id is refused at the link, tested against real daemons
//! (`crates/node/tests/attacker/identity.rs`).
//!
//! In `exclusive` seeds ([`Plan::exclusive`]) half the reads of shared
//! files start with an open answered by the file's manager, which serves
//! the first block with its answer, and files change only by writes
//! committed at their manager.
//!
//! Invariants ([`Violation`]): an honest node never completes a read with
//! bytes other than the origin's for the version it opened (except where
//! the trust model allows it: the block's manager or its granted first
//! reader lied, docs/PROTOCOL.md); a read fails with an origin error only
//! if the origin failed it; every read finishes within the mode's bound
//! ([`Mode::Liveness`] limits the faults so the bound is tight), and so
//! does every open and commit; an honest node's open is answered only with
//! a version its file has had, unless a liar manages the file; every
//! table stays within its bound; a manager's directory names only its
//! live members; after the faults stop the cluster settles; no panic.

mod byzantine;
mod check;
mod net;
mod origin;
mod plan;
mod report;
mod version;
mod world;

pub use plan::{Mode, Plan};
pub use report::{Counts, Failure, FaultKind, Outcome, Violation};

use coopcache_core::coop::AlgorithmKind;
use rayon::prelude::*;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Block size of the simulated cluster (contents are digests, so it only
/// sets the digests' lengths).
pub(crate) const BLOCK_SIZE: u32 = 4096;

/// One seed's run.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// The seed: the plan, the workload and every fault come from it.
    pub seed: u64,
    /// Workload operations (reads) before the faults stop.
    pub ops: u64,
    /// The mode.
    pub mode: Mode,
    /// The algorithm, if not the one the seed draws.
    pub algorithm: Option<AlgorithmKind>,
    /// The cluster's size, if not the one the seed draws (3-6): the
    /// same protocol and invariants at 64 or 1,000 nodes (issue 44).
    pub nodes: Option<u32>,
    /// Whether to keep a line per event.
    pub trace: bool,
}

/// Runs one seed; a panic in the protocol is reported as a violation.
/// Returns the outcome and, if asked, the trace of events.
pub fn run_seed(cfg: &RunConfig) -> (Outcome, Option<Vec<String>>) {
    let run = catch_unwind(AssertUnwindSafe(|| world::World::new(cfg).run(cfg.ops)));
    run.unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(no message)".into());
        let plan = Plan::draw(cfg.seed, cfg.mode, cfg.algorithm, cfg.nodes);
        let outcome = Outcome {
            seed: cfg.seed,
            plan: plan.to_string(),
            fingerprint: 0,
            counts: Counts::default(),
            failure: Some(Failure {
                step: 0,
                time_us: 0,
                violation: Violation::Panic(message),
            }),
        };
        (outcome, None)
    })
}

/// The command that replays `cfg`'s seed.
pub fn replay_command(cfg: &RunConfig) -> String {
    let algorithm = cfg
        .algorithm
        .map_or(String::new(), |a| format!(" --algorithm {}", a.name()));
    let nodes = cfg.nodes.map_or(String::new(), |n| format!(" --nodes {n}"));
    format!(
        "coopcache sim faults --seed {} --ops {} --mode {}{algorithm}{nodes} --trace",
        cfg.seed, cfg.ops, cfg.mode
    )
}

/// What many seeds did.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Seeds run.
    pub seeds: u64,
    /// Counters, added up.
    pub counts: Counts,
    /// Seeds that failed, lowest first, with their failure.
    pub failures: Vec<(u64, Failure)>,
}

/// Runs seeds `first..first + seeds` in parallel, calling `progress` after
/// each with the seeds done so far.
pub fn run_seeds(
    first: u64,
    seeds: u64,
    base: &RunConfig,
    progress: impl Fn(u64) + Sync,
) -> Summary {
    let done = std::sync::atomic::AtomicU64::new(0);
    let outcomes: Vec<Outcome> = (first..first + seeds)
        .into_par_iter()
        .map(|seed| {
            let cfg = RunConfig {
                seed,
                trace: false,
                ..base.clone()
            };
            let (outcome, _) = run_seed(&cfg);
            progress(done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1);
            outcome
        })
        .collect();
    let mut summary = Summary {
        seeds,
        ..Summary::default()
    };
    for o in outcomes {
        summary.counts.add(&o.counts);
        if let Some(f) = o.failure {
            summary.failures.push((o.seed, f));
        }
    }
    summary
}
