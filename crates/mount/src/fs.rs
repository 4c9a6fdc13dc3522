//! The FUSE operations: names and attributes from the origin, file bytes
//! through the cooperative cache.
//!
//! **Close-to-open.** `open` asks the node for the file's version (the
//! origin's, or the attribute cache's within `--attr-ttl`), and every read
//! of that open file reads that version's blocks: a program sees the file
//! as it was at its open, whole, and the next open sees every change made
//! before it. The kernel keeps its cached pages of a file across opens
//! only while the version stays the same (`FOPEN_KEEP_CACHE`).
//!
//! Reads run on the node's runtime and reply from there, so the FUSE
//! threads never wait on a peer or the origin for file data; metadata calls
//! (lookup, getattr, readdir, readlink) wait for the origin on the FUSE
//! thread that asked.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, UNIX_EPOCH};

use coopcache_node::NodeHandle;
use coopcache_node::origin::tree::join;
use coopcache_node::origin::{DirEntry, Entry, EntryKind, FileVersion};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner,
    OpenAccMode, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry,
    ReplyOpen, ReplyStatfs, ReplyXattr, Request,
};
use futures::StreamExt;
use tokio::runtime::Handle;

use crate::errno;
use crate::inodes::Inodes;

/// Open files and directories at most; an open beyond it fails with
/// `EMFILE`.
pub const MAX_HANDLES: usize = 65_536;

/// Bytes one `read` may ask for (the kernel asks for at most `max_read`,
/// 128 KiB by default; this guards the arithmetic).
const MAX_READ: u32 = 16 << 20;

/// What an open handle refers to.
enum Open {
    /// A file at the version its open saw.
    File {
        path: Arc<str>,
        version: Arc<FileVersion>,
    },
    /// A directory's listing, taken at `opendir`.
    Dir { entries: Arc<Vec<DirEntry>> },
}

/// The mounted file system.
pub struct CoopFs {
    rt: Handle,
    node: Arc<NodeHandle>,
    inodes: Mutex<Inodes>,
    handles: Mutex<HashMap<u64, Open>>,
    next_handle: AtomicU64,
    /// How long the kernel may trust names and attributes.
    attr_ttl: Duration,
    uid: u32,
    gid: u32,
}

impl CoopFs {
    /// A file system reading through `node`, whose runtime is `rt`.
    pub fn new(rt: Handle, node: Arc<NodeHandle>, attr_ttl: Duration) -> CoopFs {
        CoopFs {
            rt,
            node,
            inodes: Mutex::new(Inodes::default()),
            handles: Mutex::new(HashMap::new()),
            next_handle: AtomicU64::new(1),
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

    fn path(&self, ino: INodeNo) -> Result<Arc<str>, Errno> {
        self.inodes().path(ino.0).ok_or(Errno::ESTALE)
    }

    /// What `path` is, from the origin.
    fn entry(&self, path: &str) -> Result<Entry, Errno> {
        let origin = self.node.origin().clone();
        self.rt
            .block_on(origin.entry(path))
            .map_err(|e| errno::of_origin(&e))
    }

    fn attr(&self, ino: u64, e: &Entry) -> FileAttr {
        let modified = e.modified.unwrap_or(UNIX_EPOCH);
        FileAttr {
            ino: INodeNo(ino),
            size: e.size,
            blocks: e.size.div_ceil(512),
            atime: modified,
            mtime: modified,
            ctime: modified,
            crtime: modified,
            kind: kind(e.kind),
            perm: e.perm,
            nlink: if e.kind == EntryKind::Dir { 2 } else { 1 },
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            blksize: self.node.block_size(),
            flags: 0,
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
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let result = (|| {
            let dir = self.path(parent)?;
            let name = name.to_str().ok_or(Errno::ENOENT)?;
            let path = join(&dir, name);
            let entry = self.entry(&path)?;
            let ino = self.inodes().lookup(&path).ok_or(Errno::ENFILE)?;
            Ok(self.attr(ino, &entry))
        })();
        match result {
            Ok(attr) => reply.entry(&self.attr_ttl, &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.inodes().forget(ino.0, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let result = self
            .path(ino)
            .and_then(|path| self.entry(&path))
            .map(|e| self.attr(ino.0, &e));
        match result {
            Ok(attr) => reply.attr(&self.attr_ttl, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        let result = self.path(ino).and_then(|path| {
            let origin = self.node.origin().clone();
            self.rt
                .block_on(origin.read_link(&path))
                .map_err(|e| errno::of_origin(&e))
        });
        match result {
            Ok(target) => reply.data(target.as_bytes()),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let result = (|| {
            if flags.acc_mode() != OpenAccMode::O_RDONLY {
                return Err(Errno::EROFS);
            }
            let path = self.path(ino)?;
            // Close-to-open: the version this open reads, asked now.
            let version = self
                .rt
                .block_on(self.node.stat(&path))
                .map_err(|e| errno::of_node(&e))?;
            let keep = self.inodes().opened(ino.0, &version.version);
            let fh = self.add_handle(Open::File { path, version })?;
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
        let (path, version) = match self.handles().get(&fh.0) {
            Some(Open::File { path, version }) => (path.clone(), version.clone()),
            Some(Open::Dir { .. }) => return reply.error(Errno::EISDIR),
            None => return reply.error(Errno::EBADF),
        };
        let end = offset
            .saturating_add(u64::from(size.min(MAX_READ)))
            .min(version.size);
        if offset >= end {
            return reply.data(&[]);
        }
        let node = self.node.clone();
        self.rt.spawn(async move {
            let mut out = Vec::with_capacity((end - offset) as usize);
            let mut parts = std::pin::pin!(node.stream(path, version, offset..end));
            while let Some(part) = parts.next().await {
                match part {
                    Ok(bytes) => out.extend_from_slice(&bytes),
                    Err(e) => return reply.error(errno::of_node(&e)),
                }
            }
            reply.data(&out);
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
        self.handles().remove(&fh.0);
        reply.ok();
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // Nothing is buffered for writing on a read-only mount.
        reply.ok();
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
        reply.error(Errno::ENOTSUP);
    }

    fn listxattr(&self, _req: &Request, _ino: INodeNo, _size: u32, reply: ReplyXattr) {
        reply.error(Errno::ENOTSUP);
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let result = self.path(ino).and_then(|path| {
            let origin = self.node.origin().clone();
            let entries = self
                .rt
                .block_on(origin.list(&path))
                .map_err(|e| errno::of_origin(&e))?;
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
            Some(Open::File { .. }) => return reply.error(Errno::ENOTDIR),
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
        // The origin's capacity is unknown (S3 has none); report an empty
        // file system of the node's block size, as s3fs and rclone do.
        let bs = self.node.block_size();
        reply.statfs(0, 0, 0, 0, 0, bs, 255, bs);
    }
}
