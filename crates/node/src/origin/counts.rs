//! What an origin was asked, by kind, beyond block reads and version stats
//! (which the driver counts): the server operations C2Cfs's Tables 1 and
//! 2 count, for the metrics, `coopcache status` and `coopcache bench mount`.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The running counts of one origin, shared by its clones.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    metadata: AtomicU64,
    changes: AtomicU64,
    writes: AtomicU64,
    written_bytes: AtomicU64,
    commits: AtomicU64,
}

/// Requests an origin has seen so far, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OriginCounts {
    /// Names, attributes and listings (a mount's lookups, `getattr`s,
    /// directory reads and link reads).
    pub metadata: u64,
    /// Changes of the namespace or of attributes: drafts begun, creates of
    /// directories and links, removals, renames, modes and times.
    pub changes: u64,
    /// Requests that carried a file's bytes into the origin: a write into
    /// a draft beside its target in a local directory; a put, or a part of
    /// a multipart upload, in S3 (whose drafts are spooled locally).
    pub writes: u64,
    /// The bytes those requests carried.
    pub written_bytes: u64,
    /// Drafts made the file (a close's write-through).
    pub commits: u64,
}

impl Counts {
    pub(crate) fn metadata(&self) {
        self.metadata.fetch_add(1, Relaxed);
    }

    pub(crate) fn change(&self) {
        self.changes.fetch_add(1, Relaxed);
    }

    pub(crate) fn write(&self, bytes: usize) {
        self.writes.fetch_add(1, Relaxed);
        self.written_bytes.fetch_add(bytes as u64, Relaxed);
    }

    pub(crate) fn commit(&self) {
        self.commits.fetch_add(1, Relaxed);
    }

    pub(crate) fn now(&self) -> OriginCounts {
        OriginCounts {
            metadata: self.metadata.load(Relaxed),
            changes: self.changes.load(Relaxed),
            writes: self.writes.load(Relaxed),
            written_bytes: self.written_bytes.load(Relaxed),
            commits: self.commits.load(Relaxed),
        }
    }
}

impl OriginCounts {
    /// The requests between `earlier` and these (counts only grow).
    pub fn since(&self, earlier: &OriginCounts) -> OriginCounts {
        OriginCounts {
            metadata: self.metadata.saturating_sub(earlier.metadata),
            changes: self.changes.saturating_sub(earlier.changes),
            writes: self.writes.saturating_sub(earlier.writes),
            written_bytes: self.written_bytes.saturating_sub(earlier.written_bytes),
            commits: self.commits.saturating_sub(earlier.commits),
        }
    }
}
