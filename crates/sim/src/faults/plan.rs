//! What one seed runs: the cluster's shape and the faults' rates, drawn
//! from the seed so any run can be replayed from its number alone.

use coopcache_core::coop::AlgorithmKind;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::fmt;

/// What the run requires of the cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Every fault at its full rate: bytes must be right, tables bounded,
    /// no panic; reads must finish, but only within a loose bound.
    Safety,
    /// Faults limited to what the protocol tolerates (at most one node
    /// down, short partitions, few drops; VOPR's liveness mode): every
    /// read must also finish within [`Plan::read_bound_us`].
    Liveness,
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "safety" => Ok(Mode::Safety),
            "liveness" => Ok(Mode::Liveness),
            _ => Err(format!("unknown mode {s:?}: expected safety or liveness")),
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Safety => "safety",
            Mode::Liveness => "liveness",
        })
    }
}

/// A seed's cluster and fault rates. Probabilities are per message, per
/// origin read, or per workload operation, as named.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The mode.
    pub mode: Mode,
    /// The live algorithm every node runs.
    pub algorithm: AlgorithmKind,
    /// Nodes, ids `0..nodes`; the last `byzantine` of them lie.
    pub nodes: u32,
    /// Lying members.
    pub byzantine: u32,
    /// Files at the origin.
    pub files: u32,
    /// Most blocks in a file.
    pub max_blocks: u32,
    /// Blocks each node caches.
    pub capacity: usize,
    /// Mean virtual time between workload operations, microseconds.
    pub op_gap_us: u64,
    /// Per message: lost.
    pub drop: f64,
    /// Per message: delivered twice.
    pub duplicate: f64,
    /// Per message: delayed past later messages on its link.
    pub reorder: f64,
    /// One-way delay of a message, microseconds (least, most).
    pub delay_us: (u64, u64),
    /// Per operation: an honest node crashes (its memory is lost).
    pub crash: f64,
    /// Per operation: a partition cuts the cluster in two.
    pub partition: f64,
    /// Per operation: the link between two live nodes loses everything
    /// both ways for a spell, so each one's SWIM suspects the other.
    pub suspect: f64,
    /// Per operation: a node turns slow (its messages take ten times as
    /// long) for a while.
    pub slow: f64,
    /// Per operation: a file changes at the origin (a new version).
    pub change: f64,
    /// Per origin read: it fails.
    pub origin_error: f64,
    /// Per operation: the origin turns slow for a while.
    pub slow_origin: f64,
    /// Origin read time, microseconds (least, most).
    pub origin_us: (u64, u64),
    /// The longest SWIM, at the harness's speed (`world/members.rs`),
    /// takes to declare a silent member down, microseconds: up to
    /// (nodes - 1) probe periods of 50 ms until some member probes it, one
    /// more for the probe and its indirect probes, and the 150 ms
    /// suspicion timeout (450 ms with six nodes, taken as 500 ms; 3.35 s
    /// with 64).
    pub detect_us: u64,
    /// How long a crash, partition, suspicion or slow spell lasts,
    /// microseconds (least, most).
    pub outage_us: (u64, u64),
    /// Per message a lying member sends: it lies in it; and per
    /// operation: it sends a forged or replayed message.
    pub lie: f64,
    /// Honest nodes that never read (ids `0..idle_hosts`): Direct plans
    /// have some, so that members turn idle and lend their memory.
    pub idle_hosts: u32,
    /// Honest reading nodes whose origin is private (ids `idle_hosts..
    /// idle_hosts + private`, Direct plans only): each reads only files of
    /// its own (`PRIVATE_FILES` of them) and parks its blocks sealed.
    pub private: u32,
    /// Private nodes unify (one dedup key) and read the same files, so
    /// that their identical blocks meet on their hosts.
    pub unify: bool,
    /// How often every node pings every peer (and says what it lends).
    pub ping_us: u64,
    /// How long a node's reads must have stopped before it is idle.
    pub idle_after_us: u64,
    /// C2Cfs `exclusive` mode: half the reads of shared files start with
    /// an open answered by the file's manager (which serves the first
    /// block with its answer, but in Direct), and every change of a file
    /// is a node's write, committed at the manager.
    pub exclusive: bool,
}

/// Files each private node reads, its alone.
pub(super) const PRIVATE_FILES: u32 = 4;

/// The algorithms a live cluster runs.
const LIVE: [AlgorithmKind; 5] = [
    AlgorithmKind::Base,
    AlgorithmKind::Greedy,
    AlgorithmKind::NChance,
    AlgorithmKind::Hash,
    AlgorithmKind::Direct,
];

impl Plan {
    /// The plan of `seed` in `mode`, `algorithm` and `nodes` if given
    /// (else drawn: 3-6 nodes).
    pub fn draw(
        seed: u64,
        mode: Mode,
        algorithm: Option<AlgorithmKind>,
        nodes: Option<u32>,
    ) -> Plan {
        let mut rng = Pcg64Mcg::seed_from_u64(seed ^ 0x706c_616e);
        let algorithm = algorithm.unwrap_or(LIVE[rng.random_range(0..LIVE.len())]);
        // Drawn either way, so a seed's other draws stay what they were.
        let drawn = rng.random_range(3..=6);
        let nodes = nodes.map_or(drawn, |n| n.max(3));
        let byzantine = rng.random_range(0..=nodes.min(4) - 2).min(2);
        // Some seeds are calm, some stormy: a level scales every rate.
        let level: f64 = [0.0, 0.3, 1.0, 3.0][rng.random_range(0..4)];
        let liveness = mode == Mode::Liveness;
        let cap = |p: f64, most: f64| if liveness { p.min(most) } else { p };
        let mut plan = Plan {
            mode,
            algorithm,
            nodes,
            byzantine,
            files: rng.random_range(2..=24),
            max_blocks: rng.random_range(1..=8),
            capacity: rng.random_range(4..=24),
            op_gap_us: 500,
            drop: cap(0.01 * level, 0.01),
            duplicate: 0.01 * level,
            reorder: 0.02 * level,
            delay_us: (20, 400),
            crash: cap(0.0005 * level, 0.0005),
            partition: cap(0.0005 * level, 0.0003),
            suspect: 0.0005 * level,
            slow: 0.0005 * level,
            change: 0.002 * level.max(0.3),
            origin_error: 0.01 * level,
            slow_origin: 0.0003 * level,
            origin_us: (200, 3_000),
            detect_us: (u64::from(nodes) * 50_000 + 150_000).max(500_000),
            outage_us: if liveness {
                (10_000, 300_000)
            } else {
                (10_000, 3_000_000)
            },
            lie: if byzantine > 0 {
                0.05 * level.max(0.3)
            } else {
                0.0
            },
            idle_hosts: 0,
            private: 0,
            unify: false,
            ping_us: 1_000_000,
            idle_after_us: coopcache_core::protocol::IDLE_AFTER_US,
            exclusive: false,
        };
        // Direct parks only on idle members, and a run lasts a few virtual
        // seconds: nodes that never read, and pings and idleness on the
        // scale of the gaps between a node's reads, so members lend, turn
        // busy and lend again. (Drawn last: the fields above stay as each
        // seed drew them before.)
        if algorithm == AlgorithmKind::Direct {
            plan.idle_hosts = rng.random_range(0..=nodes - byzantine - 1);
            plan.ping_us = rng.random_range(2_000..=20_000);
            plan.idle_after_us = plan.ping_us * rng.random_range(1..=5);
            plan.private = rng.random_range(0..=nodes - byzantine - plan.idle_hosts);
            plan.unify = plan.private >= 2 && rng.random_bool(0.5);
        }
        plan.exclusive = rng.random_bool(0.5);
        plan
    }

    /// Whether node `id`'s origin is private.
    pub fn is_private(&self, id: u32) -> bool {
        (self.idle_hosts..self.idle_hosts + self.private).contains(&id)
    }

    /// The paths node `id` reads: its own if private, else the shared ones
    /// (the first `files`).
    pub fn paths_of(&self, id: Option<u32>) -> std::ops::Range<u32> {
        match id.filter(|&n| self.is_private(n)) {
            Some(n) => {
                let mine = if self.unify { 0 } else { n - self.idle_hosts };
                let first = self.files + mine * PRIVATE_FILES;
                first..first + PRIVATE_FILES
            }
            None => 0..self.files,
        }
    }

    /// Whether node `id` lies.
    pub fn is_byzantine(&self, id: u32) -> bool {
        id >= self.nodes - self.byzantine
    }

    /// The most a read waits on peers, microseconds: ten round trips of a
    /// slow link plus two slow origin reads, or the 50 ms floor. The nodes'
    /// ceiling (`max_timeout_us`): a liar that answers pings late cannot
    /// stretch it.
    pub fn peer_timeout_us(&self) -> u64 {
        let rtt = 2 * self.delay_us.1 * 10;
        (10 * rtt + 2 * self.slow_origin_us()).max(50_000)
    }

    /// The slowest an origin read takes, microseconds.
    fn slow_origin_us(&self) -> u64 {
        self.origin_us.1 * 10
    }

    /// The longest a read may take in liveness mode, microseconds: the
    /// read's own deadline, a grant or held block it may wait behind
    /// (three of those), and its own slow origin read, twice over for a
    /// crash or partition that strikes mid-read.
    pub fn read_bound_us(&self) -> u64 {
        let origin = self.slow_origin_us();
        2 * (4 * self.peer_timeout_us() + origin) + self.detect_us + self.outage_us.1
    }

    /// The longest a read may take in safety mode: it must finish, but
    /// faults may stack.
    pub fn hang_bound_us(&self) -> u64 {
        600_000_000
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}: {} nodes ({} lying), {} files of <= {} blocks, {} blocks a node; \
             drop {:.3} dup {:.3} reorder {:.3} crash {:.4} partition {:.4} \
             change {:.4} origin errors {:.3}; {} idle hosts, {} private{}, pings every {} us, idle after {} us{}",
            self.mode,
            self.algorithm.name(),
            self.nodes,
            self.byzantine,
            self.files,
            self.max_blocks,
            self.capacity,
            self.drop,
            self.duplicate,
            self.reorder,
            self.crash,
            self.partition,
            self.change,
            self.origin_error,
            self.idle_hosts,
            self.private,
            if self.unify { " unifying" } else { "" },
            self.ping_us,
            self.idle_after_us,
            if self.exclusive { "; exclusive" } else { "" },
        )
    }
}
