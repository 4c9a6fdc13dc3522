//! Files being written through the mount: one [`Pending`] per path with
//! open writers on this node, holding the origin's [`Draft`] of it.
//!
//! Write-through on close (C2Cfs section 3): every `close` of a writer
//! commits what was written so far, so once `close` returns any node's next
//! open sees it; between closes other nodes see the previous version whole.
//! Writers of one path on this node share one draft (each sees the others'
//! writes at once, as processes sharing a file on a local disk do), so a
//! `close` commits the writes of every handle of the path open here, as
//! an NFS client's close flushes the file's dirty pages. `release`, which
//! the kernel sends after `close` has returned, commits only as the last
//! handle (see [`Writers::close`]). Read-only opens read committed
//! versions only. A write after a commit starts a new draft from the
//! committed bytes.
//!
//! A path unlinked while writers here hold it open keeps its bytes for
//! them (a draft, made at the unlink if there was none) and is gone at
//! their last close, as POSIX says; nothing of it is committed. Read-only
//! handles of the file's current version join them (`fs.rs: unlink`).
//! Not yet: holders on other nodes.
//!
//! Dirty data is never held in memory: a draft is a file in the origin's
//! directory (a temporary one, renamed into place at the commit), or for
//! S3 a spool file on the local disk (`$TMPDIR`, unlinked) put at the
//! commit.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use bytes::Bytes;
use coopcache_core::c2cfs::Tcommit;
use coopcache_node::origin::{
    Draft, Entry, EntryKind, FileVersion, Origin, OriginError, Owner, PosixAttrs, SetTime,
};
use fuser::Errno;
use tokio::runtime::Handle;

use crate::errno;

/// A committed file up to this size is read back at its commit (from the
/// page cache, in microseconds) for its writer's node to take in as it
/// is ([`Committed::bytes`]); a larger one is read by the node from the
/// origin, block by block, where the per-file cost of that read is small
/// against its bytes.
const KEEP_WRITTEN: u64 = 1 << 20;

/// What a commit put at the origin.
pub(crate) struct Committed {
    /// The new version.
    pub(crate) version: FileVersion,
    /// Its bytes, if the origin handed them back (a small file in a local
    /// directory, see [`KEEP_WRITTEN`]).
    pub(crate) bytes: Option<Bytes>,
}

/// Paths with writers on this node at most; an open for writing beyond it
/// fails with `ENFILE`.
pub(crate) const MAX_PENDING: usize = 4096;

/// A path with writers on this node.
pub(crate) struct Pending {
    /// The path (it follows renames).
    path: Mutex<Arc<str>>,
    /// What a file the origin does not have yet is made with.
    new: NewFile,
    state: Mutex<State>,
    /// `exclusive` mode: the file's `Tcommit` when its writers' session
    /// began or last committed with its copy valid (C2Cfs's `Topen`);
    /// `None` if unknown, which commits as a racing close.
    topen: Mutex<Option<Tcommit>>,
    /// The version the last commit of these writers put at the origin:
    /// what their handles read until they write again (a descriptor reads
    /// back what it wrote and synced, not the version its open saw).
    committed: Mutex<Option<Arc<FileVersion>>>,
    /// The origin lacked the file when its entry was last asked for while
    /// the draft was open: only this draft has it (`fs/drafted.rs`).
    draft_only: AtomicBool,
    /// The kernel may hold this file's attributes with a time to live
    /// (`fs/drafted.rs`): they are dropped when the draft goes.
    attrs_lent: AtomicBool,
}

#[derive(Default)]
struct State {
    /// The draft, if anything was written since the last commit.
    draft: Option<Draft>,
    /// Whether the draft differs from the committed file (a truncation
    /// with no write is a change too).
    dirty: bool,
    /// Open write handles.
    handles: usize,
    /// A write or truncation since the last commit failed: the draft is
    /// not the file its writers meant, so the next commit discards it and
    /// fails with this (`close` reports it), committing nothing.
    failed: Option<Errno>,
    /// The path was unlinked while these writers held it open: they keep
    /// reading and writing the draft (POSIX: the file lives until its last
    /// close), nothing is committed, and the last close drops it.
    unlinked: bool,
    /// The draft is known to have no set-user-ID or set-group-ID bit (a
    /// write by a process without `CAP_FSETID` clears them: looked at once
    /// per draft and mode change, not at every write).
    no_set_id: bool,
}

/// What a file a writer creates is made with: the caller's permission
/// bits (its umask applied) and the caller as owner.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NewFile {
    /// Permission bits.
    pub(crate) perm: u16,
    /// The creating process's user and group.
    pub(crate) creator: Owner,
}

impl Pending {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The session's `Topen` (`exclusive` mode).
    pub(crate) fn topen(&self) -> Option<Tcommit> {
        *self.topen.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sets the session's `Topen`: at its first open, and after each
    /// commit (the new `Tcommit` if the writer's copy stayed valid).
    pub(crate) fn set_topen(&self, topen: Option<Tcommit>) {
        *self.topen.lock().unwrap_or_else(|p| p.into_inner()) = topen;
    }

    /// The version these writers last committed, if they have.
    pub(crate) fn committed(&self) -> Option<Arc<FileVersion>> {
        self.committed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Records the version a commit of these writers put at the origin.
    pub(crate) fn set_committed(&self, version: Arc<FileVersion>) {
        *self.committed.lock().unwrap_or_else(|p| p.into_inner()) = Some(version);
    }

    /// These writers read `fresh` from now on, unless they have written
    /// since their last commit (their draft is what they read then).
    pub(crate) fn refresh(&self, fresh: Arc<FileVersion>) {
        let st = self.state();
        if st.draft.is_none() && !st.unlinked {
            self.set_committed(fresh);
        }
    }

    /// Whether the kernel may keep the file's attributes for a while: only
    /// while it is a new file that only this draft has, which no other
    /// open anywhere can read and whose attributes change only through
    /// this mount. Marked lent before the draft is looked at, so that a
    /// commit taking the draft meanwhile finds the mark
    /// ([`Pending::take_lent`]) and has them dropped.
    pub(crate) fn lend_attrs(&self) -> bool {
        if !self.draft_only.load(Ordering::SeqCst) {
            return false;
        }
        self.attrs_lent.store(true, Ordering::SeqCst);
        let st = self.state();
        st.draft.is_some() && !st.unlinked && st.failed.is_none()
    }

    /// Whether the file's attributes were lent to the kernel since the
    /// last call.
    pub(crate) fn take_lent(&self) -> bool {
        self.attrs_lent.swap(false, Ordering::SeqCst)
    }

    /// The path now (it follows renames).
    pub(crate) fn path(&self) -> Arc<str> {
        self.path.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The file as its writers see it, if a draft is open.
    fn drafted(&self) -> Option<Drafted> {
        let st = self.state();
        let draft = st.draft.as_ref()?;
        Some(Drafted {
            size: draft.len().ok()?,
            modified: draft.modified().ok(),
            attrs: draft.attrs().ok().flatten(),
        })
    }
}

/// The pending paths of one mount.
pub(crate) struct Writers {
    rt: Handle,
    origin: Arc<Origin>,
    pending: Mutex<HashMap<Arc<str>, Arc<Pending>>>,
    /// Files unlinked while writers here held them, by inode number, until
    /// their last close (as many as open handles at most).
    unlinked: Mutex<HashMap<u64, Arc<Pending>>>,
}

impl Writers {
    pub(crate) fn new(rt: Handle, origin: Arc<Origin>) -> Writers {
        Writers {
            rt,
            origin,
            pending: Mutex::new(HashMap::new()),
            unlinked: Mutex::new(HashMap::new()),
        }
    }

    fn map(&self) -> MutexGuard<'_, HashMap<Arc<str>, Arc<Pending>>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A draft of `path`; a file it creates is `new`.
    fn draft(&self, path: &str, keep: bool, new: NewFile) -> Result<Draft, Errno> {
        let fail = |e: OriginError| errno::of_origin(&e);
        let draft = crate::wait(&self.rt, self.origin.draft(path, keep, u32::from(new.perm)));
        let draft = draft.map_err(fail)?;
        draft.set_creator(new.creator).map_err(fail)?;
        Ok(draft)
    }

    /// The pending state of `path`, if it has writers here.
    pub(crate) fn get(&self, path: &str) -> Option<Arc<Pending>> {
        self.map().get(path).cloned()
    }

    /// Opens `path` for writing: `create` makes it (empty, as `new` says)
    /// if the origin lacks it, `truncate` empties it.
    pub(crate) fn open(
        &self,
        path: &Arc<str>,
        create: bool,
        truncate: bool,
        new: NewFile,
    ) -> Result<Arc<Pending>, Errno> {
        let pending = {
            let mut map = self.map();
            if !map.contains_key(path) && map.len() >= MAX_PENDING {
                return Err(Errno::ENFILE);
            }
            map.entry(path.clone())
                .or_insert_with(|| {
                    Arc::new(Pending {
                        path: Mutex::new(path.clone()),
                        new,
                        state: Mutex::default(),
                        topen: Mutex::default(),
                        committed: Mutex::default(),
                        draft_only: AtomicBool::new(false),
                        attrs_lent: AtomicBool::new(false),
                    })
                })
                .clone()
        };
        let mut st = pending.state();
        st.handles += 1;
        let result = (|| {
            if truncate || create {
                if let Some(d) = &mut st.draft {
                    if truncate {
                        d.set_len(0).map_err(|e| errno::of_origin(&e))?;
                        st.dirty = true;
                    }
                } else if truncate || !self.exists(path) {
                    st.draft = Some(self.draft(path, false, new)?);
                    st.dirty = true;
                }
            }
            Ok(())
        })();
        drop(st);
        if let Err(e) = result {
            self.close(&pending)?;
            return Err(e);
        }
        Ok(pending)
    }

    fn exists(&self, path: &str) -> bool {
        crate::wait(&self.rt, self.origin.entry(path)).is_ok()
    }

    /// Changes `p`'s draft with `change`, drafting the committed file
    /// first if there is none; a failed change poisons the session.
    fn change(
        &self,
        p: &Pending,
        change: impl FnOnce(&mut Draft) -> Result<(), OriginError>,
    ) -> Result<(), Errno> {
        let mut st = p.state();
        if st.draft.is_none() {
            st.draft = Some(self.draft(&p.path(), true, p.new)?);
            st.no_set_id = false;
        }
        let draft = st.draft.as_mut().ok_or(Errno::EIO)?;
        if let Err(e) = change(draft) {
            let e = errno::of_origin(&e);
            st.failed = Some(e);
            return Err(e);
        }
        st.dirty = true;
        Ok(())
    }

    /// Writes `data` at `offset`, or with `append` (`O_APPEND`) at the
    /// file's end, at the commit the end the file has then. With
    /// `kill_set_id` (the kernel's `FUSE_WRITE_KILL_SUIDGID`: the writer
    /// lacks `CAP_FSETID`), the set-user-ID bit and an executable file's
    /// set-group-ID bit are cleared, as a local write clears them.
    pub(crate) fn write(
        &self,
        p: &Pending,
        offset: u64,
        data: &[u8],
        append: bool,
        kill_set_id: bool,
    ) -> Result<(), Errno> {
        match append {
            true => self.change(p, |d| d.append(data).map(drop))?,
            false => self.change(p, |d| d.write_at(offset, data))?,
        }
        if kill_set_id {
            self.kill_set_id(p)?;
        }
        Ok(())
    }

    /// Clears the draft's set-id bits (see [`Writers::write`]).
    fn kill_set_id(&self, p: &Pending) -> Result<(), Errno> {
        let mut st = p.state();
        if st.no_set_id {
            return Ok(());
        }
        let Some(draft) = st.draft.as_ref() else {
            return Ok(());
        };
        let fail = |e: OriginError| errno::of_origin(&e);
        if let Some((perm, _)) = draft.attrs().map_err(fail)? {
            let perm = u32::from(perm);
            let set_gid_exec = perm & 0o2010 == 0o2010;
            let killed = perm & !0o4000 & if set_gid_exec { !0o2000 } else { !0 };
            if killed != perm {
                draft.set_mode(killed).map_err(fail)?;
            }
        }
        st.no_set_id = true;
        Ok(())
    }

    /// Reads from the draft, if there is one (`None`: read the origin).
    pub(crate) fn read(
        &self,
        p: &Pending,
        offset: u64,
        len: usize,
    ) -> Option<Result<Vec<u8>, Errno>> {
        let st = p.state();
        let draft = st.draft.as_ref()?;
        Some(draft.read_at(offset, len).map_err(|e| errno::of_origin(&e)))
    }

    /// Sets the length of `p`'s file.
    pub(crate) fn truncate(&self, p: &Pending, len: u64) -> Result<(), Errno> {
        self.change(p, |d| d.set_len(len))
    }

    /// Makes `p`'s file at least `end` bytes long, the new bytes zeros
    /// (`fallocate` without `FALLOC_FL_KEEP_SIZE`, `posix_fallocate`).
    pub(crate) fn allocate(&self, p: &Pending, end: u64) -> Result<(), Errno> {
        self.change(p, |d| match d.len()? < end {
            true => d.set_len(end),
            false => Ok(()),
        })
    }

    /// Applies an owner, mode or times change to `p`'s draft, which the
    /// commit will put in place (a change made only to the origin's file
    /// would be undone by it). False if there is no draft: change the
    /// origin.
    pub(crate) fn set_attrs(&self, p: &Pending, change: &AttrChange) -> Result<bool, Errno> {
        let AttrChange {
            uid,
            gid,
            mode,
            atime,
            mtime,
        } = *change;
        let mut st = p.state();
        let Some(draft) = st.draft.as_mut() else {
            return Ok(false);
        };
        let fail = |e: OriginError| errno::of_origin(&e);
        // The owner first: a chown clears set-id bits a mode then sets.
        if uid.is_some() || gid.is_some() {
            draft.set_owner(uid, gid).map_err(fail)?;
        }
        if let Some(mode) = mode {
            draft.set_mode(mode).map_err(fail)?;
        }
        if atime.is_some() || mtime.is_some() {
            draft.set_times(atime, mtime).map_err(fail)?;
        }
        if mode.is_some() {
            st.no_set_id = false;
        }
        Ok(true)
    }

    /// Sets the length of `path`, which has no writers here: a draft
    /// committed at once.
    pub(crate) fn truncate_closed(&self, path: &str, len: u64, new: NewFile) -> Result<(), Errno> {
        let mut draft = self.draft(path, true, new)?;
        draft.set_len(len).map_err(|e| errno::of_origin(&e))?;
        crate::wait(&self.rt, draft.commit()).map_err(|e| errno::of_origin(&e))?;
        Ok(())
    }

    /// Commits what `p`'s writers wrote (a `close`, an `fsync`); the new
    /// version, if one reached the origin.
    pub(crate) fn commit(&self, p: &Pending) -> Result<Option<Committed>, Errno> {
        let mut st = p.state();
        if st.unlinked {
            return Ok(None);
        }
        if let Some(e) = st.failed.take() {
            st.draft = None;
            st.dirty = false;
            tracing::warn!(path = %p.path(), error = ?e, "a write failed: nothing committed, the file is as it was");
            return Err(e);
        }
        if !st.dirty {
            return Ok(None);
        }
        let draft = st.draft.take().ok_or(Errno::EIO)?;
        st.dirty = false;
        tracing::debug!(path = %p.path(), "commit");
        let committed = crate::wait(&self.rt, draft.commit_keeping(KEEP_WRITTEN));
        let (version, bytes) = committed.map_err(|e| {
            tracing::warn!(path = %p.path(), error = %e, "commit to the origin failed; the writes are lost");
            errno::of_origin(&e)
        })?;
        Ok(Some(Committed { version, bytes }))
    }

    /// One writer of `p` is gone (`release`). Its `close` committed its
    /// writes already (`flush`), so what is left uncommitted belongs to
    /// the handles still open: the kernel sends `release` after `close`
    /// has returned, often after the same program's next open of the file
    /// shared `p`, and committing here published that open's writes before
    /// its own close (the randomized histories caught it: a read saw the
    /// bytes of an open that had not begun to close). So only the last
    /// handle commits, what no `flush` carried, and `p` is forgotten.
    /// The new version, if one reached the origin.
    pub(crate) fn close(&self, p: &Arc<Pending>) -> Result<Option<Committed>, Errno> {
        let last = {
            let mut st = p.state();
            st.handles = st.handles.saturating_sub(1);
            st.handles == 0
        };
        if !last {
            return Ok(None);
        }
        // The last holder of an unlinked file: it goes with its draft.
        let unlinked = p.state().unlinked;
        let committed = if unlinked {
            self.unlinked_map().retain(|_, q| !Arc::ptr_eq(q, p));
            Ok(None)
        } else {
            self.commit(p)
        };
        p.state().draft = None;
        let mut map = self.map();
        let path = p.path();
        if map.get(&path).is_some_and(|q| Arc::ptr_eq(q, p)) {
            map.remove(&path);
        }
        committed
    }

    /// `path` is to be unlinked: if it has writers here, they must keep
    /// its bytes, so a draft of it is made now if there is none (a copy of
    /// the file as committed). Call [`Writers::unlinked`] once the origin
    /// removed the name. `None` if nobody here writes it.
    pub(crate) fn before_unlink(&self, path: &str) -> Result<Option<Arc<Pending>>, Errno> {
        let Some(p) = self.get(path) else {
            return Ok(None);
        };
        let mut st = p.state();
        if st.draft.is_none() {
            st.draft = Some(self.draft(path, true, p.new)?);
        }
        drop(st);
        Ok(Some(p))
    }

    fn unlinked_map(&self) -> MutexGuard<'_, HashMap<u64, Arc<Pending>>> {
        self.unlinked.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `p`'s name, of inode `ino`, is gone: its writers go on with the
    /// draft, commit nothing, and the name is free for a new file.
    pub(crate) fn unlinked(&self, p: &Arc<Pending>, ino: Option<u64>) {
        p.state().unlinked = true;
        if let Some(ino) = ino {
            self.unlinked_map().insert(ino, p.clone());
        }
        let mut map = self.map();
        let path = p.path();
        if map.get(&path).is_some_and(|q| Arc::ptr_eq(q, p)) {
            map.remove(&path);
        }
    }

    /// Commits `from`'s writes before it is renamed: a draft is renamed
    /// into its own directory entry, which is about to move.
    pub(crate) fn before_rename(&self, from: &str) -> Result<(), Errno> {
        match self.get(from) {
            Some(p) => self.commit(&p).map(drop),
            None => Ok(()),
        }
    }

    /// `from` was renamed to `to`: its writers follow, and their next
    /// write drafts the file under its new name.
    pub(crate) fn renamed(&self, from: &str, to: &str) {
        let mut map = self.map();
        if let Some(p) = map.remove(from) {
            let to: Arc<str> = Arc::from(to);
            *p.path.lock().unwrap_or_else(|e| e.into_inner()) = to.clone();
            map.insert(to, p);
        }
    }

    /// The entry of inode `ino` if its name was unlinked while writers
    /// here held it open (what `fstat` on their descriptors answers: the
    /// kernel asks by inode, with no handle), `None` otherwise.
    pub(crate) fn unlinked_entry(&self, ino: u64) -> Option<Entry> {
        let p = self.unlinked_map().get(&ino)?.clone();
        Some(drafted_entry(&p, p.drafted()?, 0))
    }

    /// The entry for `path` as its writers here see it: the origin's with
    /// the draft's size, or a new file the origin does not have yet.
    pub(crate) fn entry(&self, path: &str, origin: Result<Entry, Errno>) -> Result<Entry, Errno> {
        let Some(p) = self.get(path) else {
            return origin;
        };
        let draft_only = origin.is_err();
        p.draft_only.store(draft_only, Ordering::SeqCst);
        match (origin, p.drafted()) {
            (Ok(mut e), Some(d)) => {
                // The writes so far moved the times, as on a disk.
                e.size = d.size;
                if d.modified.is_some() {
                    e.modified = d.modified;
                    if let Some(posix) = &mut e.posix {
                        posix.changed = d.modified;
                    }
                }
                // A chmod or chown of an open file went to its draft.
                if let (Some((perm, owner)), Some(posix)) = (d.attrs, &mut e.posix) {
                    e.perm = perm;
                    posix.owner = owner;
                }
                Ok(e)
            }
            (Ok(e), None) => Ok(e),
            (Err(_), Some(d)) => Ok(drafted_entry(&p, d, 1)),
            (Err(e), None) => Err(e),
        }
    }
}

/// An open draft's attributes.
struct Drafted {
    size: u64,
    modified: Option<SystemTime>,
    /// Permission bits and owner, where the origin keeps them.
    attrs: Option<(u16, Owner)>,
}

/// An owner, mode or times change (`None`: unchanged).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AttrChange {
    pub(crate) uid: Option<u32>,
    pub(crate) gid: Option<u32>,
    pub(crate) mode: Option<u32>,
    pub(crate) atime: Option<SetTime>,
    pub(crate) mtime: Option<SetTime>,
}

/// A file only a draft has (new, or unlinked while open: `nlink` 0).
fn drafted_entry(p: &Pending, d: Drafted, nlink: u32) -> Entry {
    let (perm, owner) = d.attrs.unwrap_or((p.new.perm, p.new.creator));
    Entry {
        kind: EntryKind::File,
        size: d.size,
        perm,
        modified: d.modified,
        posix: Some(PosixAttrs {
            accessed: d.modified,
            changed: d.modified,
            nlink,
            owner,
        }),
    }
}
