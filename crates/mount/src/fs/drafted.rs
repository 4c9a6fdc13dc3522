//! The attributes of a file only this node's draft has, lent to the
//! kernel.
//!
//! A file's attributes are otherwise given with no time to live: the size
//! the kernel caps a reader at must be the origin's now, so every `stat`
//! and many writes cost a `GETATTR` round trip. A file created here and
//! not yet committed is different: the origin lacks it, so no open on any
//! node can read it (an open asks the origin), and nothing but this
//! mount's writers changes it. While that holds, its attributes (and the
//! new name's entry, which the kernel's create reply times alike) are
//! given for [`DRAFT_ATTR_TTL`]; the commit that publishes the file drops
//! them from the kernel (`FUSE_NOTIFY_INVAL_INODE`, attributes only), so
//! the next `stat` on this node asks again, as before, and the name's
//! entry with them. A reply racing the drop is discarded by the kernel,
//! which versions an inode's attributes.
//! `tar xf` and `rsync -a` save the `GETATTR` after each `create`.

use super::*;

/// How long the kernel may keep a draft-only file's attributes at most;
/// its commit drops them sooner.
const DRAFT_ATTR_TTL: Duration = Duration::from_secs(1);

impl CoopFs {
    /// How long the kernel may keep the attributes of file number `ino`:
    /// [`DRAFT_ATTR_TTL`] if only this node's draft has it, else none.
    pub(super) fn file_ttl(&self, ino: u64) -> Duration {
        if self.notifier.get().is_none() {
            return Duration::ZERO;
        }
        let Some(path) = self.inodes().path(ino) else {
            return Duration::ZERO;
        };
        match self.writers.get(&path) {
            Some(p) if p.lend_attrs() => DRAFT_ATTR_TTL,
            _ => Duration::ZERO,
        }
    }

    /// After `p`'s draft was committed or dropped: the kernel forgets the
    /// attributes it was lent, if it was, and the name's entry.
    pub(super) fn take_back_attrs(&self, p: &Pending) {
        if !p.take_lent() {
            return;
        }
        let Some(notifier) = self.notifier.get() else {
            return;
        };
        let path = p.path();
        let (dir, name) = path.rsplit_once('/').unwrap_or(("", &path));
        let (ino, parent) = {
            let inodes = self.inodes();
            (inodes.number(&path), inodes.number(dir))
        };
        if let Some(ino) = ino {
            // A negative offset: attributes only, no page is touched (no
            // lock taken, so it is safe from within any request). ENOENT:
            // the kernel holds nothing of it.
            if let Err(e) = notifier.inval_inode(INodeNo(ino), -1, 0) {
                tracing::debug!(ino, error = %e, "the kernel's attributes were not dropped");
            }
        }
        // The create's reply timed the name's entry alike: it goes too, so
        // that a name another node replaces after this commit (by a
        // directory, say) is looked up again at once rather than found to
        // be of another type (`EIO`). Off this FUSE thread: the kernel
        // takes the directory's lock for it, which a process may hold
        // while it waits on another request of this mount (a `rename`
        // holds it while this very commit runs).
        if let Some(parent) = parent {
            let (notifier, name) = (notifier.clone(), name.to_owned());
            self.rt.spawn_blocking(move || {
                let _ = notifier.inval_entry(INodeNo(parent), OsStr::new(&name));
            });
        }
    }
}
