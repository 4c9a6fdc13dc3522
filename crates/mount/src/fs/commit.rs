//! What a writer's commit does beyond the origin: in `exclusive` mode it
//! tells the file's manager, and the writer's node takes the new version
//! into its memory (C2Cfs: the writer's copy is the valid one).

use super::*;

impl CoopFs {
    /// `exclusive` mode: `path` changed at the origin through this mount
    /// (removed, renamed, a file renamed over it, truncated or touched
    /// while closed): its manager asks the origin again before this
    /// returns, so the next open anywhere reads the change.
    pub(super) fn changed(&self, path: &str) {
        if self.exclusive {
            crate::wait(&self.rt, self.node.commit_exclusive(path, None));
        }
    }

    /// `exclusive` mode: an entry was made at `path` that no commit tells
    /// of (a symbolic link): its directory's manager drops its listing
    /// before this returns.
    pub(super) fn entry_made(&self, path: &str) {
        if self.exclusive {
            let parent = coopcache_node::listing::parent(path);
            crate::wait(&self.rt, self.node.dir_changed(parent, false));
        }
    }

    /// `exclusive` mode: directory `path` was made or removed
    /// (`NodeHandle::dir_made_or_removed`).
    pub(super) fn dir_made_or_removed(&self, path: &str) {
        if self.exclusive {
            crate::wait(&self.rt, self.node.dir_made_or_removed(path));
        }
    }

    /// After the writers of `p` committed to the origin: in `exclusive`
    /// mode the commit goes to the file's manager before the close
    /// returns (C2Cfs: `Tcommit` moves on, the writer's copy is the valid
    /// one if no other close came between); then the writer's node takes
    /// the new version in.
    pub(super) fn committed(&self, p: &Pending, committed: Committed) {
        let Committed { version, bytes } = committed;
        let path = p.path();
        if self.exclusive {
            let done = crate::wait(&self.rt, self.node.commit_exclusive(&path, p.topen()));
            p.set_topen(done.filter(|c| c.valid).map(|c| c.tcommit));
        }
        // The version the commit made, as a directory origin stated it
        // after the rename: asking again would only say it twice. A put's
        // answer carries no modification time; the store is asked then.
        let version = match version.modified {
            Some(_) => self.node.committed(&path, version),
            None => match crate::wait(&self.rt, self.node.stat_fresh(&path)) {
                Ok(version) => version,
                Err(e) => {
                    tracing::debug!(error = %e, "the written file was not taken into memory");
                    return;
                }
            },
        };
        p.set_committed(version.clone());
        self.take_in(path, version, bytes);
    }

    /// Commits what the writer behind `fh` wrote, if it is one.
    pub(crate) fn commit(&self, fh: FileHandle) -> Result<(), Errno> {
        let Some(p) = self.writer(fh) else {
            return Ok(());
        };
        let committed = self.writers.commit(&p);
        self.take_back_attrs(&p);
        if let Some(committed) = committed? {
            self.committed(&p, committed);
        }
        Ok(())
    }

    /// After a commit of `path`: the writer's node takes the new version
    /// into its memory before the close returns (a large one behind it;
    /// see [`NodeHandle::keep_written`]), so the next opener on any node
    /// is forwarded to it instead of reading the origin. `bytes`, the
    /// version's as its commit read them back, are taken in as they are.
    ///
    /// [`NodeHandle::keep_written`]: coopcache_node::handle::NodeHandle::keep_written
    pub(super) fn take_in(
        &self,
        path: Arc<str>,
        version: Arc<FileVersion>,
        bytes: Option<bytes::Bytes>,
    ) {
        crate::wait(&self.rt, self.node.keep_written(path, version, bytes));
    }
}
