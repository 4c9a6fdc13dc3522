//! The FUSE operations: names and attributes from the origin, file bytes
//! through the cooperative cache.
//!
//! **Close-to-open.** `open` asks the node for the file's version (the
//! origin's, or the attribute cache's within `--attr-ttl`), and every read
//! of that open file reads that version's blocks: a program sees the file
//! as it was at its open, whole, and the next open sees every change made
//! before it. The kernel keeps its cached pages of a file across opens
//! only while the version stays the same (`FOPEN_KEEP_CACHE`). Write
//! handles bypass the kernel's page cache (`FOPEN_DIRECT_IO`), so what a
//! writer has not committed never reaches another open's reads, on this
//! node either: every open is a session of its own, as C2Cfs's model says.
//!
//! Reads run on the node's runtime and reply from there, so the FUSE
//! threads never wait on a peer or the origin for file data; metadata calls
//! (lookup, getattr, readdir, readlink) wait for the origin on the FUSE
//! thread that asked.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, UNIX_EPOCH};

use coopcache_core::c2cfs::Tcommit;
use coopcache_node::NodeHandle;
use coopcache_node::origin::tree::join;
use coopcache_node::origin::{
    DirEntry, Entry, EntryKind, FileVersion, Origin, OriginError, PosixAttrs, SetTime,
};
use fuser::{
    BsdFileFlags, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation,
    INodeNo, InitFlags, KernelConfig, LockOwner, Notifier, OpenAccMode, OpenFlags, RenameFlags,
    ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyLock,
    ReplyOpen, ReplyStatfs, ReplyWrite, ReplyXattr, Request, TimeOrNow, WriteFlags,
};
use tokio::runtime::Handle;

use crate::Consistency;
use crate::errno;
use crate::inodes::Inodes;
use crate::locks::LockOwners;
use crate::names;
use crate::write::{AttrChange, Committed, Pending, Writers};

mod commit;
mod drafted;
mod owners;
mod read;
use read::ReadAhead;

/// Open files and directories at most; an open beyond it fails with
/// `EMFILE`.
pub const MAX_HANDLES: usize = 65_536;

/// Times an open asks again for a version replaced while it was read.
const OPEN_RETRIES: usize = 4;

/// Bytes one `read` may ask for (the kernel asks for at most `max_read`,
/// 128 KiB by default; this guards the arithmetic).
pub(crate) const MAX_READ: u32 = 16 << 20;

/// What an open handle refers to.
enum Open {
    /// A file at the version its open saw.
    File {
        path: Arc<str>,
        version: Arc<FileVersion>,
        /// How far blocks are fetched ahead of a sequential reader.
        ahead: Arc<ReadAhead>,
    },
    /// A file open for writing, and the version its open saw if it may
    /// also read.
    Write {
        pending: Arc<Pending>,
        version: Option<Arc<FileVersion>>,
    },
    /// A directory's listing, taken at `opendir`.
    Dir { entries: Arc<Vec<DirEntry>> },
}

/// The mounted file system.
pub struct CoopFs {
    rt: Handle,
    node: Arc<NodeHandle>,
    inodes: Mutex<Inodes>,
    /// Shared with lock waits, which refresh a handle when granted.
    handles: Arc<Mutex<HashMap<u64, Open>>>,
    next_handle: AtomicU64,
    /// How long the kernel may trust names and attributes.
    attr_ttl: Duration,
    /// Files being written on this node.
    writers: Writers,
    /// `exclusive` mode: opens ask the file's manager, and every change
    /// through this mount commits to it.
    exclusive: bool,
    /// Which lock owners locked through which handle (`locks.rs`).
    lock_owners: Mutex<LockOwners>,
    /// Tells the kernel to drop what it caches (`fs/drafted.rs`), once
    /// the session is up.
    notifier: Arc<OnceLock<Notifier>>,
    uid: u32,
    gid: u32,
}

impl CoopFs {
    /// A file system reading through `node`, whose runtime is `rt`.
    pub fn new(
        rt: Handle,
        node: Arc<NodeHandle>,
        attr_ttl: Duration,
        consistency: Consistency,
        notifier: Arc<OnceLock<Notifier>>,
    ) -> CoopFs {
        let writers = Writers::new(rt.clone(), node.origin().clone());
        CoopFs {
            writers,
            exclusive: consistency == Consistency::Exclusive,
            rt,
            node,
            inodes: Mutex::new(Inodes::default()),
            handles: Arc::new(Mutex::new(HashMap::new())),
            lock_owners: Mutex::new(LockOwners::default()),
            next_handle: AtomicU64::new(1),
            notifier,
            attr_ttl,
            uid: rustix::process::geteuid().as_raw(),
            gid: rustix::process::getegid().as_raw(),
        }
    }

    fn inodes(&self) -> MutexGuard<'_, Inodes> {
        self.inodes.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn handles(&self) -> MutexGuard<'_, HashMap<u64, Open>> {
        self.handles.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn lock_owners(&self) -> MutexGuard<'_, LockOwners> {
        self.lock_owners.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The path locks of file number `ino` are kept under.
    pub(crate) fn lock_path(&self, ino: u64) -> Option<Arc<str>> {
        self.inodes().path(ino)
    }

    pub(crate) fn node(&self) -> &Arc<NodeHandle> {
        &self.node
    }

    pub(crate) fn runtime(&self) -> &Handle {
        &self.rt
    }

    fn path(&self, ino: INodeNo) -> Result<Arc<str>, Errno> {
        self.inodes().path(ino.0).ok_or(Errno::ESTALE)
    }

    /// What `path` is: the origin's entry, as this node's writers of it
    /// see it.
    fn entry(&self, path: &str) -> Result<Entry, Errno> {
        let found = self.origin(|o| o.entry(path));
        self.writers.entry(path, found)
    }

    /// Runs a call on the origin (a question or a change) on this FUSE
    /// thread, its error as the program's errno.
    fn origin<'a, T, F>(&'a self, call: impl FnOnce(&'a Origin) -> F) -> Result<T, Errno>
    where
        F: std::future::Future<Output = Result<T, OriginError>>,
    {
        crate::wait(&self.rt, call(self.node.origin())).map_err(|e| errno::of_origin(&e))
    }

    /// The path of `name` in directory `parent`.
    fn child(&self, parent: INodeNo, name: &OsStr) -> Result<String, Errno> {
        names::child_path(&self.path(parent)?, name, Errno::EINVAL)
    }

    /// Looks `path` up after a change made it, for the kernel's new entry.
    fn fresh_entry(&self, path: &str) -> Result<FileAttr, Errno> {
        let entry = self.entry(path)?;
        Ok(self.attr(self.looked_up(path, &entry)?, &entry))
    }

    /// The number of `path`, found to be `entry`, counting one more of the
    /// kernel's lookups.
    fn looked_up(&self, path: &str, entry: &Entry) -> Result<u64, Errno> {
        let mut inodes = self.inodes();
        let ino = inodes.lookup(path).ok_or(Errno::ENFILE)?;
        inodes.set_file(ino, entry.kind == EntryKind::File);
        Ok(ino)
    }

    /// What the file or directory `path` (number `ino`) is, for `getattr`.
    /// In `exclusive` mode a regular file's size, time and mode come from
    /// its manager, which knows the version of its last close (every
    /// change goes through the cluster): no origin round trip, which
    /// `getattr` would otherwise pay on every `stat` and open, since a
    /// file's attributes are not cached. The origin's entry if the manager
    /// cannot say, and for everything else.
    fn entry_of(&self, ino: u64, path: &str) -> Result<Entry, Errno> {
        if self.exclusive && self.inodes().is_file(ino) {
            let asked = crate::wait(&self.rt, self.node.ask_manager(path));
            if let Some((_, v)) = asked {
                let managed = Entry {
                    kind: EntryKind::File,
                    size: v.size,
                    perm: v.perm,
                    modified: v.modified,
                    // A manager keeps versions, not access or change times:
                    // both are shown as the modification time, the price
                    // of no origin round trip (the README's table says
                    // so; `shared` mode shows the origin's).
                    posix: v.owner.map(|owner| PosixAttrs {
                        accessed: v.modified,
                        changed: v.modified,
                        nlink: 1,
                        owner,
                    }),
                };
                return self.writers.entry(path, Ok(managed));
            }
        }
        self.entry(path)
    }

    fn attr(&self, ino: u64, e: &Entry) -> FileAttr {
        let modified = e.modified.unwrap_or(UNIX_EPOCH);
        // Origins that keep no access or change time (S3, HTTP, a
        // manager's answer) report the modification time for both.
        let posix = e.posix.as_ref();
        let time = |t: Option<std::time::SystemTime>| t.unwrap_or(modified);
        let nlink = if e.kind == EntryKind::Dir { 2 } else { 1 };
        // S3 and HTTP keep no owners: their files are the mount's user's.
        let owner = posix.map_or(self.owner(), |p| p.owner);
        FileAttr {
            ino: INodeNo(ino),
            size: e.size,
            blocks: e.size.div_ceil(512),
            atime: time(posix.and_then(|p| p.accessed)),
            mtime: modified,
            ctime: time(posix.and_then(|p| p.changed)),
            crtime: modified,
            kind: kind(e.kind),
            perm: e.perm,
            nlink: posix.map_or(nlink, |p| p.nlink),
            uid: owner.uid,
            gid: owner.gid,
            rdev: 0,
            blksize: self.node.block_size(),
            flags: 0,
        }
    }

    /// How long the kernel may keep `attr`: a file's not at all, so that
    /// the size it caps reads at is the one the origin has now (an open
    /// reads a new version; the kernel must not cut it at an old size),
    /// unless only this node's draft has it (`fs/drafted.rs`).
    /// Directories and links for the attribute TTL.
    fn ttl_of(&self, attr: &FileAttr) -> Duration {
        if attr.kind == FileType::RegularFile {
            self.file_ttl(attr.ino.0)
        } else {
            self.attr_ttl
        }
    }

    /// Replies with a new entry: the name for the attribute TTL, the
    /// attributes as [`CoopFs::ttl_of`] says.
    fn reply_entry(&self, reply: ReplyEntry, attr: &FileAttr) {
        reply.entry_with_ttls(&self.ttl_of(attr), &self.attr_ttl, attr, Generation(0));
    }

    /// Close-to-open: the version an open of `path` reads, asked now (of
    /// the origin, or in `exclusive` mode of the file's manager, with its
    /// `Tcommit`), and its first block fetched in the same breath, so that
    /// a small file is held whole before a writer elsewhere can replace
    /// it. A version replaced between the two is asked again (a few
    /// times); in `exclusive` mode that means a writer outside the cluster
    /// changed the file, and the manager is told to ask the origin again.
    fn open_version(&self, path: &Arc<str>) -> Result<(Option<Tcommit>, Arc<FileVersion>), Errno> {
        let node = self.node.clone();
        let mut tries = 0;
        loop {
            let got = crate::wait(&self.rt, async {
                let (topen, version) = match self.exclusive {
                    true => node.open_exclusive(path).await?,
                    false => (None, node.stat(path).await?),
                };
                if version.size > 0 {
                    node.read_block(path, &version, 0).await?;
                }
                Ok::<_, coopcache_node::NodeError>((topen, version))
            });
            match got {
                Err(e) if tries < OPEN_RETRIES && errno::of_node(&e) == Errno::ESTALE => {
                    tries += 1;
                    self.changed(path);
                }
                other => return other.map_err(|e| errno::of_node(&e)),
            }
        }
    }

    /// This node's read-only handles of `path` that read its version at
    /// the origin now: at an unlink they go on reading a copy of it (a
    /// reader of an older version keeps reading that version, from
    /// memory, or gets `ESTALE`).
    fn current_readers(&self, path: &str) -> Vec<u64> {
        let readers: Vec<(u64, Arc<FileVersion>)> = (self.handles().iter())
            .filter_map(|(&fh, o)| match o {
                Open::File {
                    path: p, version, ..
                } if **p == *path => Some((fh, version.clone())),
                _ => None,
            })
            .collect();
        if readers.is_empty() {
            return Vec::new();
        }
        let Ok(current) = crate::wait(&self.rt, self.node.stat_fresh(path)) else {
            return Vec::new();
        };
        (readers.into_iter())
            .filter(|(_, v)| **v == *current)
            .map(|(fh, _)| fh)
            .collect()
    }

    /// Why a directory's rename fails in `exclusive` mode: what POSIX's
    /// rename would say first (`ENOTEMPTY`, `ENOTDIR`, `EEXIST`,
    /// `EINVAL`), else `EXDEV`, which makes `mv` copy it file by file.
    fn directory_rename_refusal(&self, from: &str, to: &str, no_replace: bool) -> Errno {
        if to
            .strip_prefix(from)
            .is_some_and(|rest| rest.starts_with('/'))
        {
            return Errno::EINVAL;
        }
        match self.entry(to) {
            Ok(_) if no_replace => Errno::EEXIST,
            Ok(e) if e.kind != EntryKind::Dir => Errno::ENOTDIR,
            Ok(_) => match self.origin(|o| o.list(to)) {
                Ok(entries) if !entries.is_empty() => Errno::ENOTEMPTY,
                _ => Errno::EXDEV,
            },
            Err(_) => Errno::EXDEV,
        }
    }

    /// The writer behind handle `fh`, if it is one.
    fn writer(&self, fh: FileHandle) -> Option<Arc<Pending>> {
        match self.handles().get(&fh.0) {
            Some(Open::Write { pending, .. }) => Some(pending.clone()),
            _ => None,
        }
    }

    fn add_handle(&self, open: Open) -> Result<FileHandle, Errno> {
        let mut handles = self.handles();
        if handles.len() >= MAX_HANDLES {
            return Err(Errno::EMFILE);
        }
        let fh = self.next_handle.fetch_add(1, Ordering::Relaxed);
        handles.insert(fh, open);
        Ok(FileHandle(fh))
    }
}

/// Replies to a call that returns nothing.
fn done(reply: ReplyEmpty, result: Result<(), Errno>) {
    match result {
        Ok(()) => reply.ok(),
        Err(e) => reply.error(e),
    }
}

fn kind(k: EntryKind) -> FileType {
    match k {
        EntryKind::File => FileType::RegularFile,
        EntryKind::Dir => FileType::Directory,
        EntryKind::Symlink => FileType::Symlink,
    }
}

/// A number for a listed name the kernel has not looked up: stable, never
/// 0 (some programs skip entries numbered 0) and never a table number.
fn listed_ino(path: &str) -> INodeNo {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    path.hash(&mut h);
    INodeNo(h.finish() | 1 << 63)
}

impl Filesystem for CoopFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // Locks go to the cluster, not the kernel's own table (locks.rs).
        let locks = InitFlags::FUSE_POSIX_LOCKS | InitFlags::FUSE_FLOCK_LOCKS;
        if let Err(missing) = config.add_capabilities(locks) {
            tracing::warn!(
                ?missing,
                "the kernel cannot hand file locks to the mount: they stay local to this node"
            );
        }
        // Not FUSE_DIRECT_IO_ALLOW_MMAP: shared maps let sqlite's WAL run
        // with per-node shared memory, and it lost rows (README's table).
        Ok(())
    }

    fn getlk(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        lock_owner: LockOwner,
        start: u64,
        end: u64,
        typ: i32,
        _pid: u32,
        reply: ReplyLock,
    ) {
        self.get_lock(ino.0, lock_owner.0, (start, end), typ, reply);
    }

    fn setlk(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        lock_owner: LockOwner,
        start: u64,
        end: u64,
        typ: i32,
        pid: u32,
        sleep: bool,
        reply: ReplyEmpty,
    ) {
        let (owner, range) = (lock_owner.0, (start, end));
        self.set_lock(req.pid(), ino.0, fh.0, owner, range, typ, pid, sleep, reply);
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let result = (|| {
            let path = names::child_path(&self.path(parent)?, name, Errno::ENOENT)?;
            // A name the kernel asks again (its entry's second is up) of a
            // file it still holds: in `exclusive` mode, its manager says.
            let known = self.inodes().number(&path);
            let entry = match known {
                Some(ino) => self.entry_of(ino, &path)?,
                None => self.entry(&path)?,
            };
            Ok(self.attr(self.looked_up(&path, &entry)?, &entry))
        })();
        match result {
            Ok(attr) => self.reply_entry(reply, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.inodes().forget(ino.0, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        // An open file's size is that of the version its open saw.
        let opened = fh.and_then(|fh| match self.handles().get(&fh.0) {
            Some(Open::File { version, .. }) => Some(version.size),
            _ => None,
        });
        // A writer's file whose name was unlinked: the draft is all of it.
        let held = self.writers.unlinked_entry(ino.0);
        let result = self
            .path(ino)
            .and_then(|path| match held {
                Some(e) => Ok(e),
                None => self.entry_of(ino.0, &path),
            })
            .map(|mut e| {
                if let Some(size) = opened {
                    e.size = size;
                }
                self.attr(ino.0, &e)
            });
        match result {
            Ok(attr) => reply.attr(&self.ttl_of(&attr), &attr),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        let result = self
            .path(ino)
            .and_then(|path| self.origin(|o| o.read_link(&path)));
        match result {
            Ok(target) => reply.data(target.as_bytes()),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let result = (|| {
            let path = self.path(ino)?;
            if flags.acc_mode() != OpenAccMode::O_RDONLY {
                let truncate = flags.0 & libc::O_TRUNC != 0;
                // A reader-writer reads the version its open saw until it
                // writes (close-to-open, as any open).
                let (topen, version) = match flags.acc_mode() {
                    OpenAccMode::O_RDWR if !truncate => {
                        let (topen, version) = self.open_version(&path)?;
                        (topen, Some(version))
                    }
                    _ if self.exclusive => {
                        let asked = crate::wait(&self.rt, self.node.ask_manager(&path));
                        (asked.map(|(t, _)| t), None)
                    }
                    _ => (None, None),
                };
                let new = self.new_file(req, 0o644);
                let pending = self.writers.open(&path, false, truncate, new)?;
                if pending.topen().is_none() {
                    pending.set_topen(topen);
                }
                let fh = self.add_handle(Open::Write { pending, version })?;
                return Ok((fh, FopenFlags::FOPEN_DIRECT_IO));
            }
            let (_, version) = self.open_version(&path)?;
            let keep = self.inodes().opened(ino.0, &version.version);
            let ahead = Arc::new(ReadAhead::default());
            let fh = self.add_handle(Open::File {
                path,
                version,
                ahead,
            })?;
            let flags = if keep {
                FopenFlags::FOPEN_KEEP_CACHE
            } else {
                FopenFlags::empty()
            };
            Ok((fh, flags))
        })();
        match result {
            Ok((fh, flags)) => reply.opened(fh, flags),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let found = self.handles().get(&fh.0).map(|o| match o {
            Open::File {
                path,
                version,
                ahead,
            } => Ok((path.clone(), version.clone(), ahead.clone())),
            Open::Write { pending, version } => Err(Some((pending.clone(), version.clone()))),
            Open::Dir { .. } => Err(None),
        });
        let (path, version, ahead) = match found {
            Some(Ok(file)) => file,
            Some(Err(Some((pending, opened)))) => {
                return match self.read_written(&pending, opened, offset, size) {
                    Ok(data) => reply.data(&data),
                    Err(e) => reply.error(e),
                };
            }
            Some(Err(None)) => return reply.error(Errno::EISDIR),
            None => return reply.error(Errno::EBADF),
        };
        let end = offset
            .saturating_add(u64::from(size.min(MAX_READ)))
            .min(version.size);
        if offset >= end {
            return reply.data(&[]);
        }
        let node = self.node.clone();
        self.prefetch(&ahead, &path, &version, offset, end);
        self.rt.spawn(async move {
            match node.read_version(path, version, offset..end).await {
                Ok(data) => reply.data(&data),
                Err(e) => reply.error(errno::of_node(&e)),
            }
        });
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        let open = self.handles().remove(&fh.0);
        let closed = match open {
            Some(Open::Write { pending, .. }) => {
                let closed = self.writers.close(&pending);
                self.take_back_attrs(&pending);
                closed.map(|committed| {
                    if let Some(committed) = committed {
                        self.committed(&pending, committed);
                    }
                })
            }
            _ => Ok(()),
        };
        // Committed first: the next holder of a lock reads what was
        // written under it.
        self.release_handle(fh.0);
        done(reply, closed);
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        // A regular file is created empty, as `creat` then `close` would.
        // FIFOs, sockets and devices are not kept: no origin shows them
        // (a directory origin's are hidden from its namespace), so they
        // are refused as a file system without them refuses them.
        if mode & libc::S_IFMT != libc::S_IFREG {
            return reply.error(Errno::EPERM);
        }
        let result = (|| {
            let path: Arc<str> = Arc::from(self.child(parent, name)?);
            let perm = (mode & !umask & 0o7777) as u16;
            let pending = self
                .writers
                .open(&path, true, false, self.new_file(req, perm))?;
            let closed = self.writers.close(&pending);
            self.take_back_attrs(&pending);
            if let Some(committed) = closed? {
                self.committed(&pending, committed);
            }
            self.fresh_entry(&path)
        })();
        match result {
            Ok(attr) => self.reply_entry(reply, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let result = (|| {
            let path: Arc<str> = Arc::from(self.child(parent, name)?);
            let truncate = flags & libc::O_TRUNC != 0;
            let perm = (mode & !umask & 0o7777) as u16;
            let pending = self
                .writers
                .open(&path, true, truncate, self.new_file(req, perm))?;
            let fh = self.add_handle(Open::Write {
                pending,
                version: None,
            })?;
            Ok((self.fresh_entry(&path)?, fh))
        })();
        match result {
            Ok((attr, fh)) => reply.created(
                &self.ttl_of(&attr),
                &attr,
                Generation(0),
                fh,
                FopenFlags::FOPEN_DIRECT_IO,
            ),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        write_flags: WriteFlags,
        flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let Some(pending) = self.writer(fh) else {
            return reply.error(Errno::EBADF);
        };
        let append = flags.0 & libc::O_APPEND != 0;
        let kill_set_id = write_flags.contains(WriteFlags::FUSE_WRITE_KILL_SUIDGID);
        match self
            .writers
            .write(&pending, offset, data, append, kill_set_id)
        {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => reply.error(e),
        }
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        // Durable means in the origin, on its disk: commit what was
        // written, then flush the file as committed (a close's commit
        // publishes it and leaves that to the system, as a local close
        // does). A file unlinked meanwhile has nothing left to keep.
        let result = self.commit(fh).and_then(|()| {
            let path = self.path(ino)?;
            match self.origin(|o| o.sync(&path)) {
                Err(Errno::ENOENT) => Ok(()),
                synced => synced,
            }
        });
        done(reply, result);
    }

    fn setattr(
        &self,
        req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<std::time::SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<std::time::SystemTime>,
        _chgtime: Option<std::time::SystemTime>,
        _bkuptime: Option<std::time::SystemTime>,
        _flags: Option<BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let result = (|| {
            let path = self.path(ino)?;
            let (uid, gid) = self.owner_asked(uid, gid)?;
            let pending = fh
                .and_then(|fh| self.writer(fh))
                .or_else(|| self.writers.get(&path));
            if let Some(len) = size {
                match &pending {
                    Some(p) => self.writers.truncate(p, len)?,
                    None => {
                        let new = self.new_file(req, 0o644);
                        self.writers.truncate_closed(&path, len, new)?;
                        self.changed(&path);
                    }
                }
            }
            let when = |t: Option<TimeOrNow>| {
                t.map(|t| match t {
                    TimeOrNow::SpecificTime(t) => SetTime::At(t),
                    TimeOrNow::Now => SetTime::Now,
                })
            };
            let change = AttrChange {
                uid,
                gid,
                mode,
                atime: when(atime),
                mtime: when(mtime),
            };
            let drafted = match &pending {
                Some(p) => self.writers.set_attrs(p, &change)?,
                None => false,
            };
            if !drafted {
                let AttrChange { atime, mtime, .. } = change;
                let owned = uid.is_some() || gid.is_some();
                let timed = atime.is_some() || mtime.is_some();
                // The owner first: a chown clears set-id bits a mode sets.
                if owned {
                    self.origin(|o| o.set_owner(&path, uid, gid))?;
                }
                if let Some(mode) = mode {
                    self.origin(|o| o.set_mode(&path, mode))?;
                }
                if timed {
                    self.origin(|o| o.set_times(&path, atime, mtime))?;
                }
                // Only a regular file has a version its manager keeps;
                // telling it of a link's change made the manager's origin
                // stat follow the link, which moved the link's atime just
                // set (pjdfstest utimensat/05 in `exclusive` mode).
                if (owned || timed || mode.is_some()) && self.inodes().is_file(ino.0) {
                    self.changed(&path);
                }
            }
            match self.writers.unlinked_entry(ino.0) {
                Some(e) => Ok(self.attr(ino.0, &e)),
                None => self.entry(&path).map(|e| self.attr(ino.0, &e)),
            }
        })();
        match result {
            Ok(attr) => reply.attr(&self.ttl_of(&attr), &attr),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let result = self.child(parent, name).and_then(|path| {
            self.origin(|o| o.mkdir(&path, mode & !umask, self.creator(req)))?;
            self.dir_made_or_removed(&path);
            self.fresh_entry(&path)
        });
        match result {
            Ok(attr) => self.reply_entry(reply, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let result = self.child(parent, name).and_then(|path| {
            // Writers and readers here keep the file open: they go on with
            // its bytes (a draft), and it vanishes at their last close.
            let readers = self.current_readers(&path);
            let mut added = Vec::with_capacity(readers.len());
            let undo = |added: &[Arc<Pending>]| {
                for p in added {
                    let _ = self.writers.close(p);
                }
            };
            let prepared = (|| {
                let shared: Arc<str> = Arc::from(path.as_str());
                for _ in &readers {
                    let new = self.new_file(req, 0o644);
                    added.push(self.writers.open(&shared, false, false, new)?);
                }
                self.writers.before_unlink(&path)
            })();
            let held = prepared.inspect_err(|_| undo(&added))?;
            match (self.origin(|o| o.unlink(&path)), &held) {
                (Ok(()), _) => {}
                // Created here and not committed yet: only the draft has it.
                (Err(Errno::ENOENT), Some(_)) => {}
                (Err(e), _) => {
                    undo(&added);
                    return Err(e);
                }
            }
            if let Some(p) = &held {
                let mut handles = self.handles();
                for fh in readers {
                    let version = None;
                    handles.insert(
                        fh,
                        Open::Write {
                            pending: p.clone(),
                            version,
                        },
                    );
                }
                drop(handles);
                let ino = self.inodes().number(&path);
                self.writers.unlinked(p, ino);
            }
            self.inodes().unlink(&path);
            self.changed(&path);
            Ok(())
        });
        done(reply, result);
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let result = self.child(parent, name).and_then(|path| {
            self.origin(|o| o.rmdir(&path))?;
            self.inodes().unlink(&path);
            self.dir_made_or_removed(&path);
            Ok(())
        });
        done(reply, result);
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let result = (|| {
            if flags.intersects(RenameFlags::RENAME_EXCHANGE | RenameFlags::RENAME_WHITEOUT) {
                return Err(Errno::EINVAL);
            }
            let from = self.child(parent, name)?;
            let to = self.child(newparent, newname)?;
            // A manager knows files, not directories: in `exclusive` mode
            // a directory's rename would leave its files' entries under
            // the old paths, so `mv` is made to copy it file by file.
            let no_replace = flags.contains(RenameFlags::RENAME_NOREPLACE);
            if self.exclusive && self.entry(&from)?.kind == EntryKind::Dir {
                return Err(self.directory_rename_refusal(&from, &to, no_replace));
            }
            let committed = self.writers.before_rename(&from);
            if let Some(p) = self.writers.get(&from) {
                self.take_back_attrs(&p);
            }
            committed?;
            self.origin(|o| o.rename(&from, &to, no_replace))?;
            self.inodes().rename(&from, &to);
            self.writers.renamed(&from, &to);
            self.changed(&from);
            self.changed(&to);
            Ok(())
        })();
        done(reply, result);
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &std::path::Path,
        reply: ReplyEntry,
    ) {
        let result = self.child(parent, link_name).and_then(|path| {
            let target = target.to_str().ok_or(Errno::EINVAL)?;
            self.origin(|o| o.symlink(target, &path, self.creator(req)))?;
            self.entry_made(&path);
            self.fresh_entry(&path)
        });
        match result {
            Ok(attr) => self.reply_entry(reply, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn link(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _newparent: INodeNo,
        _newname: &OsStr,
        reply: ReplyEntry,
    ) {
        // A hard link would give one file two paths, and so two versions
        // and two sets of cached blocks: not supported.
        reply.error(Errno::ENOTSUP);
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        // sqlite syncs a journal's directory: the origin's own, flushed.
        let result = self
            .path(ino)
            .and_then(|path| self.origin(|o| o.sync_dir(&path)));
        done(reply, result);
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // Every close: write-through, so the next open anywhere sees it.
        let committed = self.commit(fh);
        // A close drops the closing process's POSIX locks of the file,
        // once what it wrote is committed.
        self.release_owner(fh.0, lock_owner.0);
        done(reply, committed);
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        // The modes programs use: mode 0 (`posix_fallocate`, `fallocate
        // -l`) makes the file at least that long; `KEEP_SIZE` reserves
        // space, which the origin gets at the commit or not at all, so it
        // succeeds doing nothing. Holes and moved ranges are refused, as
        // by a local file system without them (fuser answered `ENOSYS`,
        // which the kernel turns into `EOPNOTSUPP` for every mode).
        let result = (|| {
            let end = offset.checked_add(length).ok_or(Errno::EFBIG)?;
            let pending = self.writer(fh).ok_or(Errno::EBADF)?;
            match mode {
                0 => self.writers.allocate(&pending, end),
                libc::FALLOC_FL_KEEP_SIZE => Ok(()),
                _ => Err(Errno::EOPNOTSUPP),
            }
        })();
        done(reply, result);
    }

    fn getxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _size: u32,
        reply: ReplyXattr,
    ) {
        // No origin keeps extended attributes the cache could carry.
        // `ENOSYS` tells the kernel so once: it answers every later call
        // itself with `ENOTSUP`, sparing a round trip per written file
        // (the kernel asks for `security.capability` at each write).
        reply.error(Errno::ENOSYS);
    }

    fn listxattr(&self, _req: &Request, _ino: INodeNo, _size: u32, reply: ReplyXattr) {
        reply.error(Errno::ENOSYS);
    }

    fn setxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _value: &[u8],
        _flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::ENOSYS);
    }

    fn removexattr(&self, _req: &Request, _ino: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::ENOSYS);
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let result = self.path(ino).and_then(|path| {
            // `exclusive` mode: as the directory's manager keeps it, one
            // origin listing per change for the whole cluster.
            let entries = match self.exclusive {
                true => crate::wait(&self.rt, self.node.list_exclusive(&path))
                    .map_err(|e| errno::of_origin(&e))?
                    .entries()
                    .to_vec(),
                false => self.origin(|o| o.list(&path))?,
            };
            self.add_handle(Open::Dir {
                entries: Arc::new(entries),
            })
        });
        match result {
            Ok(fh) => reply.opened(fh, FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let entries = match self.handles().get(&fh.0) {
            Some(Open::Dir { entries }) => entries.clone(),
            Some(Open::File { .. } | Open::Write { .. }) => {
                return reply.error(Errno::ENOTDIR);
            }
            None => return reply.error(Errno::EBADF),
        };
        let Ok(dir) = self.path(ino) else {
            return reply.error(Errno::ESTALE);
        };
        // Offsets: 1 after ".", 2 after "..", 3 + i after entry i.
        let dots = [(".", ino), ("..", ino)];
        for (i, (name, n)) in dots.iter().enumerate().skip(offset as usize) {
            if reply.add(*n, i as u64 + 1, FileType::Directory, name) {
                return reply.ok();
            }
        }
        let skip = (offset as usize).saturating_sub(2);
        for (i, e) in entries.iter().enumerate().skip(skip) {
            let n = listed_ino(&join(&dir, &e.name));
            if reply.add(n, i as u64 + 3, kind(e.kind), &e.name) {
                break;
            }
        }
        reply.ok();
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.handles().remove(&fh.0);
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        // The origin's own (a directory's file system), or for S3, which
        // has no capacity, a pebibyte free as rclone reports.
        let s = self.node.origin().space();
        reply.statfs(
            s.blocks,
            s.free,
            s.available,
            s.files,
            s.files_free,
            s.block_size,
            s.name_max,
            s.fragment,
        );
    }
}
