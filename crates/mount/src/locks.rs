//! File locks across the cluster: the kernel hands every `fcntl` record
//! lock, OFD lock and `flock` to the mount (`FUSE_POSIX_LOCKS`,
//! `FUSE_FLOCK_LOCKS`), and the mount carries each to the file's manager
//! through the node (`coopcache_core::c2cfs::locks`), so a lock held on
//! one node is seen on every other.
//!
//! - **Owners.** The kernel names a lock's owner (`lock_owner`): the
//!   process's file table for POSIX locks, the open file description for
//!   `flock` and OFD locks. The mount remembers which owners locked
//!   through each handle, so that a close (`flush`, with the closing
//!   process's owner) releases that process's POSIX locks as POSIX says,
//!   and the last close of a description (`release`) everything still
//!   held through it (`flock`, OFD). A close of a file never locked costs
//!   nothing.
//! - **One namespace.** fuser 0.18 does not pass FUSE's `FUSE_LK_FLOCK`
//!   flag (fuser issue 155), so a `flock` cannot be told from a
//!   whole-file `fcntl` lock: both are kept as POSIX locks. Locks of one
//!   kind behave as Linux's; a `flock` and an `fcntl` lock of one file
//!   taken by different owners conflict (Linux keeps them apart), and a
//!   `flock` conversion that must wait keeps the old lock while it waits.
//! - **Lock-to-unlock consistency**, as NFS clients keep it: an unlock
//!   (and a close that drops locks) first commits what the handle wrote,
//!   and a granted lock makes its handle read the file's version at the
//!   origin now, so what one node wrote under a lock is what the next
//!   node to take it reads (sqlite on two nodes relies on it). A
//!   read-only handle's pages the kernel cached at an earlier open of the
//!   same version are not dropped: such a reader sees the new bytes at
//!   its next open, as close-to-open says.
//! - **Waits.** `F_SETLKW` and a blocking `flock` wait on the node's
//!   runtime, never on a FUSE thread. fuser 0.18 answers the kernel's
//!   interrupts `ENOSYS`, so the mount looks at the waiting thread itself:
//!   a signal pending that it neither blocks nor ignores (`flock -w`'s
//!   alarm, a `kill`, Ctrl-C) ends the wait with `EINTR`, within
//!   [`INTERRUPT_POLL`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use coopcache_core::c2cfs::locks::{
    LockCall, LockConflict, LockError, LockKind, LockRange, LockResult, LockSpace,
};
use fuser::{Errno, ReplyEmpty, ReplyLock};

use crate::fs::CoopFs;

/// How often a waiting lock looks for a signal to its thread.
pub(crate) const INTERRUPT_POLL: Duration = Duration::from_millis(100);

/// Lock owners remembered per open handle; past it a lock is refused
/// (`ENOLCK`).
const MAX_OWNERS_PER_HANDLE: usize = 1024;

/// The kernel's "to the end of the file" (`OFFSET_MAX`).
const OFFSET_MAX: u64 = i64::MAX as u64;

/// Which lock owners locked through which handle (file), and on which
/// path.
#[derive(Default)]
pub(crate) struct LockOwners {
    by_handle: HashMap<u64, (Arc<str>, Vec<u64>)>,
}

impl LockOwners {
    /// Remembers that `owner` locked `path` through `fh`; false if the
    /// handle has as many owners as it may.
    fn note(&mut self, fh: u64, path: &Arc<str>, owner: u64) -> bool {
        let (_, owners) = self
            .by_handle
            .entry(fh)
            .or_insert_with(|| (path.clone(), Vec::new()));
        if owners.contains(&owner) {
            return true;
        }
        if owners.len() >= MAX_OWNERS_PER_HANDLE {
            return false;
        }
        owners.push(owner);
        true
    }

    /// The path `owner` locked through `fh`, forgotten, if it did.
    fn take(&mut self, fh: u64, owner: u64) -> Option<Arc<str>> {
        let (path, owners) = self.by_handle.get_mut(&fh)?;
        let at = owners.iter().position(|&o| o == owner)?;
        owners.swap_remove(at);
        let path = path.clone();
        if owners.is_empty() {
            self.by_handle.remove(&fh);
        }
        Some(path)
    }

    /// Everything locked through `fh`, forgotten.
    fn take_all(&mut self, fh: u64) -> Option<(Arc<str>, Vec<u64>)> {
        self.by_handle.remove(&fh)
    }
}

/// The range `start..=end` as the kernel gives it.
fn range(start: u64, end: u64) -> Result<LockRange, Errno> {
    let end = if end >= OFFSET_MAX { u64::MAX } else { end };
    LockRange::new(start, end).ok_or(Errno::EINVAL)
}

fn kind(typ: i32) -> Option<LockKind> {
    match typ {
        libc::F_RDLCK => Some(LockKind::Shared),
        libc::F_WRLCK => Some(LockKind::Exclusive),
        _ => None,
    }
}

/// The errno of a refused lock call.
fn errno(e: LockError) -> Errno {
    match e {
        LockError::Deadlock => Errno::EDEADLK,
        LockError::Cancelled => Errno::EINTR,
        LockError::TooManyLocks | LockError::TooManyWaiters | LockError::Unanswered => {
            Errno::ENOLCK
        }
        LockError::DuplicateNonce | LockError::PathTooLong => Errno::EIO,
    }
}

/// Whether thread `tid` has a signal pending that it neither blocks nor
/// ignores: its `F_SETLKW` would have been interrupted.
fn interrupted(tid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{tid}/status")) else {
        // The thread is gone: nobody waits any more.
        return true;
    };
    let mask = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .unwrap_or(0)
    };
    let pending = mask("SigPnd:") | mask("ShdPnd:");
    pending & !mask("SigBlk:") & !mask("SigIgn:") != 0
}

impl CoopFs {
    /// `setlk`: take, wait for or drop a lock of `ino` for `owner`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn set_lock(
        &self,
        tid: u32,
        ino: u64,
        fh: u64,
        owner: u64,
        (start, end): (u64, u64),
        typ: i32,
        pid: u32,
        sleep: bool,
        reply: ReplyEmpty,
    ) {
        let Some(path) = self.lock_path(ino) else {
            return reply.error(Errno::ESTALE);
        };
        let range = match range(start, end) {
            Ok(r) => r,
            Err(e) => return reply.error(e),
        };
        let space = LockSpace::Posix;
        let call = match kind(typ) {
            Some(kind) => {
                if !self.lock_owners().note(fh, &path, owner) {
                    return reply.error(Errno::ENOLCK);
                }
                LockCall::Lock {
                    path,
                    space,
                    owner,
                    kind,
                    range,
                    wait: sleep,
                    pid,
                }
            }
            None if typ == libc::F_UNLCK => {
                // What was written under the lock is committed before it
                // goes, so its next holder reads it.
                if let Err(e) = self.commit(fuser::FileHandle(fh)) {
                    return reply.error(e);
                }
                LockCall::Unlock {
                    path,
                    space,
                    owner,
                    range,
                }
            }
            None => return reply.error(Errno::EINVAL),
        };
        let node = self.node().clone();
        let locking = matches!(call, LockCall::Lock { .. });
        let refresh = self.refresh_after_lock(fh);
        self.runtime().spawn(async move {
            let call = node.lock(call);
            tokio::pin!(call);
            let result: LockResult = loop {
                tokio::select! {
                    result = &mut call => break result,
                    _ = tokio::time::sleep(INTERRUPT_POLL), if sleep => {
                        if interrupted(tid) {
                            // Dropping the call cancels the wait.
                            break Err(LockError::Cancelled);
                        }
                    }
                }
            };
            match result {
                Ok(None) => {
                    if locking {
                        refresh.await;
                    }
                    reply.ok()
                }
                Ok(Some(_)) => reply.error(Errno::EAGAIN),
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    /// `getlk`: the first lock in the way of `owner` taking `typ`.
    pub(crate) fn get_lock(
        &self,
        ino: u64,
        owner: u64,
        (start, end): (u64, u64),
        typ: i32,
        reply: ReplyLock,
    ) {
        let Some(path) = self.lock_path(ino) else {
            return reply.error(Errno::ESTALE);
        };
        let (range, kind) = match (range(start, end), kind(typ)) {
            (Ok(r), Some(k)) => (r, k),
            _ => return reply.error(Errno::EINVAL),
        };
        let call = LockCall::Test {
            path,
            space: LockSpace::Posix,
            owner,
            kind,
            range,
        };
        let node = self.node().clone();
        self.runtime().spawn(async move {
            match node.lock(call).await {
                Ok(None) => reply.locked(start, end, libc::F_UNLCK, 0),
                Ok(Some(LockConflict {
                    kind, range, pid, ..
                })) => {
                    let typ = match kind {
                        LockKind::Shared => libc::F_RDLCK,
                        LockKind::Exclusive => libc::F_WRLCK,
                    };
                    reply.locked(range.start(), range.end().min(OFFSET_MAX), typ, pid);
                }
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    /// A close by `owner` (`flush`): its POSIX locks taken through `fh` go.
    /// Waits for the manager, so that a lock the closer held is free
    /// once `close` returns.
    pub(crate) fn release_owner(&self, fh: u64, owner: u64) {
        let path = self.lock_owners().take(fh, owner);
        if let Some(path) = path {
            self.release_all(path, vec![owner]);
        }
    }

    /// The last close of `fh` (`release`): everything locked through it
    /// goes (`flock` and OFD locks, owned by the description).
    pub(crate) fn release_handle(&self, fh: u64) {
        let taken = self.lock_owners().take_all(fh);
        if let Some((path, owners)) = taken {
            self.release_all(path, owners);
        }
    }

    fn release_all(&self, path: Arc<str>, owners: Vec<u64>) {
        let node = self.node().clone();
        crate::wait(self.runtime(), async move {
            for owner in owners {
                let call = LockCall::Release {
                    path: path.clone(),
                    space: LockSpace::Posix,
                    owner,
                };
                if let Err(e) = node.lock(call).await {
                    tracing::warn!(
                        %path,
                        error = %e,
                        "a closed file's locks were not released at its manager: it keeps them until this node's lease there lapses"
                    );
                }
            }
        });
    }
}
