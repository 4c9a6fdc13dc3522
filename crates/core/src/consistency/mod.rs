//! A close-to-open history checker (issue 13): a test tool that records
//! what clients did to files and checks every read against C2Cfs's
//! close-to-open semantics (c2cfs-collective-caching-close-to-open.txt,
//! sections 2 and 3), in the style of CacheLib's consistency checker.
//!
//! A harness records operations through a [`HistoryRecorder`], gets a
//! [`History`], and calls [`check`] (or [`check_with`]), which returns the
//! first read that broke a rule as a [`Violation`]. The history is kept
//! whole in memory, unbounded: this is a test tool, not part of a node.
//!
//! # Order
//!
//! "Before" means earlier in the order of the recorder calls. The `at`
//! stamps (the harness's virtual clock) must not decrease and serve only
//! the report; two events with the same stamp are still ordered. For that
//! order to be sound, record a start before the system starts the
//! operation and an end after the system returned it:
//!
//! - [`open`](HistoryRecorder::open) before the open is issued. The rules
//!   depend only on when an open began, so there is no open-end event.
//! - [`read`](HistoryRecorder::read) after the read returned, with what it
//!   returned (one [`ContentId`] per block, a read call may span blocks).
//! - [`write`](HistoryRecorder::write) any time before the open's close:
//!   writes are the open's own until its close publishes them.
//! - [`close_start`](HistoryRecorder::close_start) before the close is
//!   issued; [`close_end`](HistoryRecorder::close_end) after it returned,
//!   with the version it committed, or `None` if it committed nothing. A
//!   harness whose writer crashed mid-close records the close's end when it
//!   learns the outcome (from the manager or the origin).
//!
//! # Versions and contents
//!
//! Version 0 of a file is the origin's content, declared block by block
//! with [`HistoryRecorder::origin`]. Each committing close makes the next
//! version, numbered by the harness in commit order (1, 2, 3 ... per file:
//! C2Cfs's `Tcommit`); close ends may arrive out of that order. Block `b`
//! of version `v` holds the last write to `b` in `v`'s open, or, if that
//! open did not write `b`, block `b` of version `v - 1`.
//!
//! A [`ContentId`] names the bytes of one block and must be unique per
//! (file, block) over the origin and all writes: the harness writes bytes
//! that carry a unique tag and maps bytes read back to their id (bytes it
//! cannot map get an id of their own, which matches no version). So the
//! versions whose block `b` holds the bytes a read returned form one range
//! `lo..=hi`, and version `lo`, the one whose open wrote them, is their
//! *producer* (0 for the origin's bytes).
//!
//! # Rules
//!
//! Let `L(o)` be the newest version of the file whose close *returned*
//! before open `o` began (0 if none). Each block of each read in open `o`
//! is checked against these rules in this order; the first block that
//! breaks one is reported:
//!
//! 1. **Own writes** ([`Rule::OwnWrite`]): if `o` wrote the block before
//!    the read, the read returns `o`'s last write to it. A writer sees its own writes; no
//!    other open does before the close (another open on the same client
//!    counts as another client).
//! 2. **Bytes of a version** ([`Rule::NoVersion`]): the bytes are the
//!    block's bytes in some version committed anywhere in the history
//!    (never a write that was not committed, never another block's bytes;
//!    rule 3 judges when).
//! 3. **No reads from the future** ([`Rule::Future`]): the producer's close
//!    began before the read. A close in flight may already be visible; a
//!    write still in its open is not.
//! 4. **Freshness** ([`Rule::Stale`]): some version `>= L(o)` holds the
//!    bytes: a read in an open that began after a writer's close returned
//!    sees that version or a newer one.
//! 5. **One version** ([`Rule::Torn`]): some one version `>= L(o)` holds
//!    these bytes and those of every earlier block read in the same
//!    [`Snapshot`] scope (the open, or the read call), own writes aside.
//!
//! # One version per open or per read call
//!
//! Without concurrent writers rule 5 adds nothing: if every close of the
//! file that began before a read had returned before the open began, a
//! block that passes rules 3 and 4 holds `L(o)`'s bytes (its producer is
//! at most `L(o)` and its range reaches `L(o)`), so the open reads a
//! snapshot of `L(o)` and rule 5 cannot fire. Rule 5 only decides what happens when a
//! writer commits *during* the open, which is where C2Cfs and NFS differ.
//! C2Cfs revalidates and fetches whole files at open, so an open sees one
//! version ([`Snapshot::PerOpen`], the default of [`check`]); NFS only
//! promises fresh data at open and makes no promise under concurrent write
//! sharing ([`Snapshot::PerRead`]: each read call, or each block if the
//! harness records one block per read, is one version). A node that reads
//! blocks lazily, some from peers holding the version found at open and
//! some from an origin that has moved on, can tear an open: a bug under
//! the first promise, not under the second. Either way, the returned bytes are what is judged: blocks read from `v1`
//! that `v2` did not change count as `v2`'s, as no reader could tell.
//!
//! # Cost
//!
//! [`check`] makes two passes: one over the writes, sorting each block's
//! committed writes by version, and one over the events with hash-map
//! lookups, so O(n log n) for n events, linear in practice.

#[cfg(test)]
mod brute;
mod checker;
mod history;
#[cfg(test)]
mod play;
#[cfg(test)]
mod tests;
mod violation;

pub use checker::{check, check_with};
pub use history::{History, HistoryRecorder};
pub use violation::{Commit, Rule, Versions, Violation};

use crate::coop::NodeId;
use std::fmt;

/// A version of a file: 0 is the origin's content, `n > 0` the `n`th commit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version(pub u64);

/// The bytes of one block, as a harness names them (a tag it wrote into the
/// block, or a hash); unique per (file, block).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ContentId(pub u64);

/// One open of one file by one client, numbered by the recorder from 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OpenId(pub usize);

/// The scope within which every block read must come from one version
/// (rule 5 of the module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Snapshot {
    /// One version for the whole open (C2Cfs's whole-file validity).
    #[default]
    PerOpen,
    /// One version per read call (NFS under concurrent write sharing).
    PerRead,
}

/// One recorded operation on one open, stamped with the harness's clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The open it concerns.
    pub open: OpenId,
    /// The harness's clock when it was recorded.
    pub at: u64,
    /// What happened.
    pub op: Op,
}

/// What happened to an open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// `client` began opening `file`.
    Open {
        /// The client (node).
        client: NodeId,
        /// The file.
        file: u64,
    },
    /// A read returned `contents[i]` for block `first + i`.
    Read {
        /// The first block read.
        first: u64,
        /// What each block read returned.
        contents: Vec<ContentId>,
    },
    /// A write of `content` to `block`, the open's own until its close.
    Write {
        /// The block.
        block: u64,
        /// The bytes written.
        content: ContentId,
    },
    /// The close began.
    CloseStart,
    /// The close returned, having committed this version, or none.
    CloseEnd(Option<Version>),
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}", self.0)
    }
}

impl fmt::Display for ContentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "content {:#x}", self.0)
    }
}

impl fmt::Display for OpenId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "open #{}", self.0)
    }
}

impl fmt::Display for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Snapshot::PerOpen => "open",
            Snapshot::PerRead => "read call",
        })
    }
}
