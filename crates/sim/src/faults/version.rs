//! Files as C2Cfs `exclusive` mode sees them: paths with names, their
//! versions as the origin's stat returns them, and a version's first block,
//! named as the daemon names it (one route per path, so a file's commit
//! state and its blocks' directory share one manager).

use coopcache_core::c2cfs::exclusive::{Version as CommitVersion, manager_key};
use coopcache_core::c2cfs::listings::Listing;
use coopcache_core::protocol::BlockId;
use std::sync::Arc;

/// A version of a path: the origin's file id for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Version {
    /// The path's number.
    pub(super) path: u32,
    /// The file id of this version (its blocks' `file`).
    pub(super) file: u64,
}

impl CommitVersion for Version {
    fn has_first_block(&self) -> bool {
        // The origin's files have at least one block.
        true
    }

    fn is_of(&self, path: &str) -> bool {
        *path == *name(self.path)
    }
}

/// The name of path number `path`.
pub(super) fn name(path: u32) -> Arc<str> {
    format!("/data/f{path}").into()
}

/// The number of the path named `name`, if it is one of [`name`]'s.
pub(super) fn number(name: &str) -> Option<u32> {
    name.strip_prefix("/data/f")?.parse().ok()
}

/// The route of every block of path number `path`: its manager key, as
/// the daemon routes a path's blocks.
pub(super) fn route(path: u32) -> u32 {
    manager_key(&name(path)) as u32
}

/// The first block of `version` of `path` (the commit machine's
/// [`FirstBlockOf`](coopcache_core::node::FirstBlockOf)).
pub(super) fn first_block(path: &str, version: &Version) -> BlockId {
    BlockId {
        file: version.file,
        index: 0,
        route: manager_key(path) as u32,
    }
}

/// A directory's listing as the harness's origin gives one: `/data` holds
/// every path, any other directory is empty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Listed {
    /// The directory.
    pub(super) dir: Arc<str>,
    /// Files in it.
    pub(super) files: u32,
}

/// The directory every path is in.
pub(super) const DIR: &str = "/data";

impl Listing for Listed {
    fn bytes(&self) -> usize {
        // A name and a version a file, about as the daemon sends them.
        32 * self.files as usize
    }

    fn dir(&self) -> &str {
        &self.dir
    }
}
