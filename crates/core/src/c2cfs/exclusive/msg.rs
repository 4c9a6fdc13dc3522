//! What the machine exchanges with its peers and its driver.

use crate::c2cfs::{Committed, Tcommit};
use crate::coop::NodeId;
use std::sync::Arc;

/// A message between two nodes' machines. None names its sender: that is
/// the authenticated link, passed to [`CommitProtocol::handle_message`](super::CommitProtocol::handle_message).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommitMsg<V> {
    /// Opener to manager: the file's `Tcommit` and version, please.
    Open {
        /// The opener's id for this request.
        nonce: u64,
        /// The file.
        path: Arc<str>,
        /// Whether the manager is to serve the file's first block with its
        /// answer, and what the opener holds.
        first: Option<FirstBlock>,
    },
    /// Manager to opener; `None` when the manager cannot answer (the
    /// opener asks the origin itself).
    Opened {
        /// The request's nonce.
        nonce: u64,
        /// `Tcommit` (the opener's `Topen`) and the origin's version.
        answer: Option<(Tcommit, V)>,
        /// Whether the manager is serving the version's first block to the
        /// opener, as if the opener had sent it a `Read` (its `Expect` or
        /// `FetchOrigin` follows this answer on the same link).
        served: bool,
    },
    /// Writer to manager, after the writer wrote the file through to the
    /// origin; `topen: None` for a path removed or renamed over.
    Commit {
        /// The writer's id for this request.
        nonce: u64,
        /// The file.
        path: Arc<str>,
        /// The `Tcommit` the writer's open found.
        topen: Option<Tcommit>,
    },
    /// Manager to writer; `None` when the commit was not recorded.
    Committed {
        /// The request's nonce.
        nonce: u64,
        /// The new `Tcommit` and whether the writer's copy is valid.
        answer: Option<Committed>,
    },
    /// Writer to every live member, after a commit answered `None` or
    /// timed out: drop any entry for the path.
    Forget {
        /// The writer's id for this request.
        nonce: u64,
        /// The file.
        path: Arc<str>,
    },
    /// The answer to a `Forget`.
    Forgot {
        /// The request's nonce.
        nonce: u64,
    },
}

/// An opener's request that the manager serve the file's first block in
/// the open's own round trip (C2Cfs section 3: the open reads `Tcommit` and
/// where the valid copies are in one request to the manager, which here
/// also keeps the directory of the file's blocks and forwards the read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FirstBlock {
    /// The `Tcommit` of the version whose blocks the opener holds (the
    /// paper's `Tlocal`), if any: a copy that is the latest needs nothing
    /// served. A hint the opener gives about itself: a wrong one costs it a
    /// round trip or a block it did not need, no one else anything.
    pub tlocal: Option<Tcommit>,
}

/// What the node must do, in the order the machine decided it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action<V> {
    /// Send `msg` to member `to` (never this node itself).
    Send {
        /// The member.
        to: NodeId,
        /// The message.
        msg: CommitMsg<V>,
    },
    /// Ask the origin for `path`'s current version and report it with
    /// [`CommitProtocol::handle_stat`](super::CommitProtocol::handle_stat).
    Stat {
        /// The file.
        path: Arc<str>,
    },
    /// As `reader`'s file manager: serve its read of the first block of
    /// `version` of `path`, as if `reader` had sent a `Read` for it
    /// (`NodeProtocol::handle_read_for`). The `Opened` saying so is sent
    /// already, so this block's answers follow it on the link.
    ServeFirst {
        /// The opener, as its link authenticated it.
        reader: NodeId,
        /// The file.
        path: Arc<str>,
        /// The version the open reads.
        version: V,
    },
    /// This node asks for the first block of the file whose blocks are
    /// routed by `route` with its open: tell the block protocol that its
    /// contents may come before the answer
    /// (`NodeProtocol::expect_carried`). Comes before the `Open` leaves.
    AwaitFirst {
        /// The file's manager key, its blocks' route.
        route: u64,
    },
    /// This node's open of `path` is being served the first block of
    /// `version` by `manager` (the file's manager, which answered it):
    /// start that read without asking again
    /// (`NodeProtocol::handle_read_asked`). Comes before the open's
    /// [`Action::Opened`], so the caller's read of the block joins it.
    ReadFirst {
        /// The file asked for.
        path: Arc<str>,
        /// The version the manager answered.
        version: V,
        /// The manager serving it.
        manager: NodeId,
    },
    /// This node's open `req` is answered; `None`: ask the origin.
    Opened {
        /// The caller's id.
        req: u64,
        /// `Tcommit` (the open's `Topen`) and the version to read.
        answer: Option<(Tcommit, V)>,
    },
    /// This node's commit `req` is done; `None`: not recorded (every
    /// member was told to forget the file, or timed out).
    Committed {
        /// The caller's id.
        req: u64,
        /// The new `Tcommit` and whether the writer's copy is valid.
        answer: Option<Committed>,
    },
    /// `from` sent a message its role does not allow; nothing else
    /// happened.
    Violation {
        /// The sender, as its link authenticated it.
        from: NodeId,
        /// The rule it broke.
        why: &'static str,
    },
}

/// Counters for metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommitCounters {
    /// Opens the manager answered from its table, with no stat.
    pub opens_from_table: u64,
    /// Stats issued.
    pub stats: u64,
    /// Commits the manager recorded.
    pub commits: u64,
    /// Opens and commits the manager answered `None`.
    pub answered_none: u64,
    /// Answers that came after their request timed out (dropped).
    pub late_answers: u64,
    /// Messages refused as violations.
    pub violations: u64,
    /// This node's requests that timed out.
    pub timeouts: u64,
    /// `Forget` broadcasts this node started.
    pub forgets: u64,
    /// Opens whose first block the manager served with its answer.
    pub first_served: u64,
}
