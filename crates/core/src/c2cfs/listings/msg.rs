//! What the listing machine exchanges with its peers and its driver.

use crate::coop::NodeId;
use std::sync::Arc;

/// A message between two nodes' listing machines. None names its sender:
/// that is the authenticated link, passed to
/// [`ListProtocol::handle_message`](super::ListProtocol::handle_message).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListMsg<L> {
    /// Lister to the directory's manager: its listing, please.
    List {
        /// The lister's id for this request.
        nonce: u64,
        /// The directory (`""` is the origin's root).
        dir: Arc<str>,
    },
    /// Manager to lister; `None` when the manager cannot answer (the
    /// lister lists the origin itself).
    Listed {
        /// The request's nonce.
        nonce: u64,
        /// The directory's listing as the origin gave it.
        listing: Option<L>,
    },
    /// Writer to the directory's manager, after an entry of `dir` changed
    /// at the origin through the writer (a file written, created, removed
    /// or renamed; a directory made or removed): drop its listing.
    Changed {
        /// The writer's id for this request.
        nonce: u64,
        /// The directory.
        dir: Arc<str>,
        /// The directory itself was made, removed or moved (with what is
        /// below it): every listing at or below it is dropped. Told to
        /// every member, since the directories below it have other
        /// managers.
        subtree: bool,
    },
    /// The answer to a `Changed`: whether the member manages `dir` in its
    /// settled view (if not, the writer tells every member).
    Noted {
        /// The request's nonce.
        nonce: u64,
        /// The member is the directory's manager and its view is settled.
        managed: bool,
    },
}

/// What the node must do, in the order the machine decided it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListAction<L> {
    /// Send `msg` to member `to` (never this node itself).
    Send {
        /// The member.
        to: NodeId,
        /// The message.
        msg: ListMsg<L>,
    },
    /// List `dir` at the origin and report it with
    /// [`ListProtocol::handle_listed`](super::ListProtocol::handle_listed).
    List {
        /// The directory.
        dir: Arc<str>,
    },
    /// This node's listing `req` is answered; `None`: list the origin.
    Listed {
        /// The caller's id.
        req: u64,
        /// The directory's listing.
        listing: Option<L>,
    },
    /// This node's change `req` is noted: a listing of the directory begun
    /// after this reflects the change, if `assured` (else a member that
    /// did not answer in time may still answer from an older listing).
    Noted {
        /// The caller's id.
        req: u64,
        /// Every member that could hold a listing of it dropped it.
        assured: bool,
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
pub struct ListCounters {
    /// Listings the manager answered from its table, with no origin list.
    pub from_table: u64,
    /// Origin listings the manager issued.
    pub origin_lists: u64,
    /// Listings the manager answered `None`.
    pub answered_none: u64,
    /// `Changed` this node's writers sent.
    pub changes: u64,
    /// Changes told to every member (the manager did not answer, or did
    /// not manage the directory).
    pub spread: u64,
    /// Answers that came after their request timed out (dropped).
    pub late_answers: u64,
    /// Messages refused as violations.
    pub violations: u64,
    /// This node's requests that timed out.
    pub timeouts: u64,
}
