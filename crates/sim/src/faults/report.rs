//! What a run did and, if it failed, the first invariant it broke.

use coopcache_core::coop::NodeId;
use coopcache_core::protocol::{BlockId, Digest, Verdict};
use std::fmt;

/// The faults the harness injects, for counting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// A message lost.
    Drop,
    /// A message delivered twice.
    Duplicate,
    /// A message delayed past later ones on its link.
    Reorder,
    /// A node crashed (and restarted later, its memory lost).
    Crash,
    /// The cluster cut in two.
    Partition,
    /// The link between two nodes lost everything both ways for a while,
    /// so that one's failure detector may declare the other down.
    Suspect,
    /// A node slowed down.
    SlowNode,
    /// A file changed at the origin.
    Change,
    /// An origin read failed.
    OriginError,
    /// The origin slowed down.
    SlowOrigin,
    /// A lying member changed a message it sent.
    Lie,
    /// A lying member forged or replayed a message.
    Forgery,
    /// A lying member gossiped that an honest one is suspect or down.
    GossipLie,
}

impl FaultKind {
    /// Every kind, in report order.
    pub const ALL: [FaultKind; 13] = [
        FaultKind::Drop,
        FaultKind::Duplicate,
        FaultKind::Reorder,
        FaultKind::Crash,
        FaultKind::Partition,
        FaultKind::Suspect,
        FaultKind::SlowNode,
        FaultKind::Change,
        FaultKind::OriginError,
        FaultKind::SlowOrigin,
        FaultKind::Lie,
        FaultKind::Forgery,
        FaultKind::GossipLie,
    ];

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Drop => "drop",
            FaultKind::Duplicate => "duplicate",
            FaultKind::Reorder => "reorder",
            FaultKind::Crash => "crash",
            FaultKind::Partition => "partition",
            FaultKind::Suspect => "suspect",
            FaultKind::SlowNode => "slow-node",
            FaultKind::Change => "origin-change",
            FaultKind::OriginError => "origin-error",
            FaultKind::SlowOrigin => "slow-origin",
            FaultKind::Lie => "lie",
            FaultKind::Forgery => "forgery",
            FaultKind::GossipLie => "gossip-lie",
        }
    }
}

/// Counters of one run (or of many, added up).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Workload operations (reads started).
    pub ops: u64,
    /// Steps: inputs handed to a node.
    pub steps: u64,
    /// Reads finished with the origin's bytes.
    pub reads_ok: u64,
    /// Reads finished with an error (the origin failed, or overload).
    pub reads_failed: u64,
    /// Reads lost with a node that crashed under them.
    pub reads_lost: u64,
    /// Reads of honest nodes that returned wrong bytes the trust model
    /// allows: the block's manager or its granted first reader lied
    /// (docs/PROTOCOL.md, security model).
    pub wrong_tolerated: u64,
    /// Messages delivered.
    pub messages: u64,
    /// Messages refused by a node for their sender's role.
    pub refused: u64,
    /// Blocks hosts kept once for several private owners (unified).
    pub unified: u64,
    /// `exclusive` opens answered by a manager (a version), and by none
    /// (the opener read the origin's current version).
    pub opens_answered: u64,
    /// `exclusive` opens the manager did not answer.
    pub opens_unanswered: u64,
    /// `exclusive` opens whose first block the manager served with its
    /// answer.
    pub first_served: u64,
    /// Writes committed at a manager (`Committed` with a `Tcommit`).
    pub commits: u64,
    /// `exclusive` listings a directory's manager answered, and those it
    /// did not (the lister listed the origin).
    pub listings_answered: u64,
    /// See `listings_answered`.
    pub listings_unanswered: u64,
    /// Changes of a node's live members, as its membership (SWIM and its
    /// links) decided them.
    pub member_changes: u64,
    /// Gossip updates about other members that SWIM's screen dropped.
    pub screened: u64,
    /// Faults injected, by [`FaultKind::ALL`] index.
    pub faults: [u64; 13],
}

impl Counts {
    /// Adds `other` into these.
    pub fn add(&mut self, other: &Counts) {
        self.ops += other.ops;
        self.steps += other.steps;
        self.reads_ok += other.reads_ok;
        self.reads_failed += other.reads_failed;
        self.reads_lost += other.reads_lost;
        self.wrong_tolerated += other.wrong_tolerated;
        self.messages += other.messages;
        self.refused += other.refused;
        self.unified += other.unified;
        self.opens_answered += other.opens_answered;
        self.opens_unanswered += other.opens_unanswered;
        self.first_served += other.first_served;
        self.commits += other.commits;
        self.listings_answered += other.listings_answered;
        self.listings_unanswered += other.listings_unanswered;
        self.member_changes += other.member_changes;
        self.screened += other.screened;
        for (a, b) in self.faults.iter_mut().zip(other.faults) {
            *a += b;
        }
    }

    /// Counts one fault of `kind`.
    pub(super) fn fault(&mut self, kind: FaultKind) {
        self.faults[kind as usize] += 1;
    }
}

/// An invariant broken.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    /// An honest node finished a read with bytes that are not the
    /// origin's for the version it opened.
    #[error(
        "node {node} read {block:?} as {got:?} from {level}, but the origin's bytes are {want:?}"
    )]
    WrongBytes {
        /// The reader.
        node: NodeId,
        /// The block.
        block: BlockId,
        /// What it returned.
        got: Digest,
        /// What the origin holds.
        want: Digest,
        /// Where the node said they came from.
        level: String,
    },
    /// A read failed with an origin error though the origin never failed
    /// it.
    #[error("node {node}'s read of {block:?} failed as an origin error the origin never gave")]
    FalseOriginError {
        /// The reader.
        node: NodeId,
        /// The block.
        block: BlockId,
    },
    /// A node finished a read nobody started.
    #[error("node {node} finished a read of {block:?} that was not in flight")]
    UnstartedCompletion {
        /// The node.
        node: NodeId,
        /// The block.
        block: BlockId,
    },
    /// A read took longer than the mode allows.
    #[error("node {node}'s read of {block:?} has waited {waited_us} µs (bound {bound_us} µs)")]
    SlowRead {
        /// The reader.
        node: NodeId,
        /// The block.
        block: BlockId,
        /// How long it waited.
        waited_us: u64,
        /// The bound.
        bound_us: u64,
    },
    /// An `exclusive` open or a commit took longer than the mode allows:
    /// every request must be answered, at worst after its timeout.
    #[error("node {node}'s {what} of {path} has waited {waited_us} µs (bound {bound_us} µs)")]
    SlowRequest {
        /// The node.
        node: NodeId,
        /// An open, a write's open or a commit.
        what: &'static str,
        /// The file.
        path: String,
        /// How long it waited.
        waited_us: u64,
        /// The bound.
        bound_us: u64,
    },
    /// An honest node's open was answered with a version its file never
    /// had, though an honest member manages the file: it took a forged
    /// answer.
    #[error(
        "node {node}'s open of {path} was answered with file {file:016x}, never a version of it"
    )]
    ForgedVersion {
        /// The opener.
        node: NodeId,
        /// The file.
        path: String,
        /// The version's file id.
        file: u64,
    },
    /// An honest node's integrity report blamed only honest nodes for a
    /// block no liar vouched for: the verdict convicted the innocent.
    #[error(
        "node {node} blamed honest nodes ({verdict:?}: sender {sender}, manager {manager}, recorder {recorder}) for {block:?}"
    )]
    FalseBlame {
        /// The reporter.
        node: NodeId,
        /// The block.
        block: BlockId,
        /// Whom the verdict blamed.
        verdict: Verdict,
        /// The contents' sender.
        sender: NodeId,
        /// The manager that gave the digest.
        manager: NodeId,
        /// The recorder it named.
        recorder: NodeId,
    },
    /// A table outgrew its bound.
    #[error("node {node}'s {table} holds {len}, over its bound of {bound}")]
    OverBound {
        /// The node.
        node: NodeId,
        /// The table.
        table: &'static str,
        /// Entries.
        len: usize,
        /// The bound.
        bound: usize,
    },
    /// A manager's directory names a node outside its live members.
    #[error(
        "node {node}'s directory says {holder} holds {block:?}, but its members are {members:?}"
    )]
    DeadHolder {
        /// The manager.
        node: NodeId,
        /// The block.
        block: BlockId,
        /// The holder it names.
        holder: NodeId,
        /// Its live members.
        members: Vec<NodeId>,
    },
    /// The cluster never went quiet once the faults stopped.
    #[error("the cluster did not settle within {waited_us} µs after the faults stopped: {what}")]
    NeverQuiet {
        /// How long it was given.
        waited_us: u64,
        /// What still waited.
        what: String,
    },
    /// A node counted one of its own bugs: handling an input that ran
    /// away, or a message its machine sent with no live form.
    #[error("node {node} counted {count} {what}")]
    Internal {
        /// The node.
        node: NodeId,
        /// What it counted.
        what: &'static str,
        /// How many.
        count: u64,
    },
    /// The code panicked.
    #[error("panic: {0}")]
    Panic(String),
}

/// A failed run: the first violation, when, and how to replay it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The step it happened at.
    pub step: u64,
    /// Virtual time, microseconds.
    pub time_us: u64,
    /// What broke.
    pub violation: Violation,
}

/// What one seed did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The seed.
    pub seed: u64,
    /// Its plan, described.
    pub plan: String,
    /// A hash of every event in order: equal for equal replays.
    pub fingerprint: u64,
    /// What it did.
    pub counts: Counts,
    /// The first invariant broken, if any.
    pub failure: Option<Failure>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "at step {} (t = {} µs): {}",
            self.step, self.time_us, self.violation
        )
    }
}
