//! What the checker reports: the first block read that broke a rule.

use super::{ContentId, OpenId, Snapshot, Version};
use crate::coop::NodeId;
use std::fmt;
use thiserror::Error;

/// The first block read that broke a rule, where and by whom.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("event {event} (t={at}): client {client}, {open} of file {file}, block {block}: {rule}")]
pub struct Violation {
    /// The read's index in [`History::events`](super::History::events).
    pub event: usize,
    /// The read's stamp.
    pub at: u64,
    /// The reader.
    pub client: NodeId,
    /// The file read.
    pub file: u64,
    /// The open read in.
    pub open: OpenId,
    /// The block whose bytes broke the rule.
    pub block: u64,
    /// The rule broken and what was seen.
    pub rule: Rule,
}

/// A rule of the module doc, broken, with what the read saw.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum Rule {
    /// Rule 1: a writer did not see its own write.
    #[error("read {seen}, but this open last wrote {wrote} there")]
    OwnWrite {
        /// What the read returned.
        seen: ContentId,
        /// What the open had written.
        wrote: ContentId,
    },
    /// Rule 2: the bytes are in no committed version of this block.
    #[error("read {seen}, the bytes of no committed version of this block")]
    NoVersion {
        /// What the read returned.
        seen: ContentId,
    },
    /// Rule 3: the read returned bytes whose writer had not begun to close.
    #[error("read the bytes {} wrote (held by {seen}) before client {writer}'s {by} began to close", seen.lo)]
    Future {
        /// The versions holding the bytes read; `seen.lo` wrote them.
        seen: Versions,
        /// The client that wrote them.
        writer: NodeId,
        /// Its open.
        by: OpenId,
    },
    /// Rule 4: the bytes are older than a version whose close returned
    /// before the open began.
    #[error(
        "read {seen}, but needs {} or newer: client {}'s close committed it and returned at t={} \
         (event {}), before this open began",
        required.version, required.client, required.at, required.event
    )]
    Stale {
        /// The versions holding the bytes read.
        seen: Versions,
        /// The close that made a newer version required.
        required: Commit,
    },
    /// Rule 5: no one version holds this block's bytes and the earlier
    /// blocks of the same scope.
    #[error("read {seen}, but the earlier blocks of this {scope} allow only {allowed}")]
    Torn {
        /// The versions holding this block's bytes.
        seen: Versions,
        /// The versions, at least the open's floor, that hold every earlier
        /// block of the scope.
        allowed: Versions,
        /// The scope.
        scope: Snapshot,
    },
}

/// A close that returned, having committed a version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Commit {
    /// The version committed.
    pub version: Version,
    /// The client that closed.
    pub client: NodeId,
    /// When the close returned.
    pub at: u64,
    /// The close's end in [`History::events`](super::History::events).
    pub event: usize,
}

/// The versions `lo..=hi` of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Versions {
    /// The oldest.
    pub lo: Version,
    /// The newest.
    pub hi: Version,
}

impl Versions {
    /// The versions in both, if any.
    pub fn meet(self, other: Versions) -> Option<Versions> {
        let (lo, hi) = (self.lo.max(other.lo), self.hi.min(other.hi));
        (lo <= hi).then_some(Versions { lo, hi })
    }
}

impl fmt::Display for Versions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.lo == self.hi {
            true => write!(f, "{}", self.lo),
            false => write!(f, "{}..={}", self.lo, self.hi),
        }
    }
}
