//! A directory's listing as the cluster keeps it in C2Cfs's `exclusive`
//! mode (`coopcache_core::c2cfs::listings`): its directory, its entries as
//! the origin listed them (a file's version filled in by its manager where
//! the listing gave none), and its size, which the core's bounds count:
//! the larger of its bytes on the wire (a listing sent is one frame) and
//! in memory (the manager's table holds it).

use bytes::BytesMut;
use coopcache_core::c2cfs::listings::Listing;
use std::sync::Arc;

use crate::driver::{Event, ListEvent};
use crate::handle::NodeHandle;
use crate::origin::{DirEntry, OriginError, check_path};
use tokio::sync::oneshot;

/// A directory's listing, cheap to clone (shared entries).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirListing {
    dir: Arc<str>,
    entries: Arc<[DirEntry]>,
    bytes: usize,
}

impl DirListing {
    /// The listing of `dir` (`""`: the origin's root) holding `entries`.
    pub fn new(dir: Arc<str>, entries: Vec<DirEntry>) -> DirListing {
        let mut l = DirListing {
            dir,
            entries: entries.into(),
            bytes: 0,
        };
        let mut buf = BytesMut::new();
        crate::frame::put_listing(&mut buf, &l);
        let heap: usize = (l.entries.iter())
            .map(|e| e.name.len() + e.version.as_ref().map_or(0, |v| v.version.len()))
            .sum();
        let memory = size_of::<Self>() + size_of_val(&*l.entries) + heap + l.dir.len();
        l.bytes = buf.len().max(memory);
        l
    }

    /// The directory's path at the origin.
    pub fn dir(&self) -> &str {
        &self.dir
    }

    /// Its entries, in the origin's order.
    pub fn entries(&self) -> &[DirEntry] {
        &self.entries
    }
}

impl Listing for DirListing {
    fn bytes(&self) -> usize {
        self.bytes
    }

    fn dir(&self) -> &str {
        &self.dir
    }
}

/// The directory holding `path` (`""`: the origin's root).
pub fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

impl NodeHandle {
    /// C2Cfs `exclusive` mode: `dir`'s listing as its manager keeps it
    /// (one origin listing per directory per change, for every member),
    /// or, when the manager cannot answer (a membership change, no answer
    /// in time, a listing too large to send), as the origin lists it.
    /// Files carry their versions where the manager or the origin gave
    /// them.
    pub async fn list_exclusive(&self, dir: &str) -> Result<DirListing, OriginError> {
        if !dir.is_empty() {
            check_path(dir)?;
        }
        let (reply, answer) = oneshot::channel();
        let ev = ListEvent::List {
            dir: Arc::from(dir),
            reply,
        };
        if self.events.send(Event::Lists(ev)).await.is_ok()
            && let Ok(Some(listing)) = answer.await
        {
            return Ok(listing);
        }
        let entries = self.origin().list(dir).await?;
        Ok(DirListing::new(Arc::from(dir), entries))
    }

    /// C2Cfs `exclusive` mode: an entry of `dir` changed at the origin
    /// through this node (a file written, made, removed or renamed; with
    /// `subtree`, `dir` itself was made, removed or moved, and every
    /// listing at or below it goes). Returns once every member that could
    /// keep a listing of it dropped it, so a listing begun after this
    /// shows the change: `false` if one did not answer in time.
    pub async fn dir_changed(&self, dir: &str, subtree: bool) -> bool {
        let (reply, answer) = oneshot::channel();
        let ev = ListEvent::Changed {
            dir: Arc::from(dir),
            subtree,
            reply,
        };
        if self.events.send(Event::Lists(ev)).await.is_err() {
            return false;
        }
        answer.await.unwrap_or(false)
    }

    /// C2Cfs `exclusive` mode: directory `dir` was made or removed at the
    /// origin through this node: its parent's listing changed, and every
    /// listing at or below it goes (one of an older directory of that
    /// name may be kept somewhere). Whether both were noted by every
    /// member concerned.
    pub async fn dir_made_or_removed(&self, dir: &str) -> bool {
        let (parent, below) = tokio::join!(
            self.dir_changed(parent(dir), false),
            self.dir_changed(dir, true)
        );
        parent && below
    }
}
