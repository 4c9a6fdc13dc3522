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
    },
    /// Manager to opener; `None` when the manager cannot answer (the
    /// opener asks the origin itself).
    Opened {
        /// The request's nonce.
        nonce: u64,
        /// `Tcommit` (the opener's `Topen`) and the origin's version.
        answer: Option<(Tcommit, V)>,
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
}
