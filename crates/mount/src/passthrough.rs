//! A plain FUSE passthrough of one local directory's files, read-only: the
//! baseline `coopcache bench mount` compares the mount's read throughput
//! with (issue 14: "the same file from the local page cache through a
//! plain FUSE passthrough"). It pays what every FUSE file system pays (a
//! request per kernel read, a copy through `/dev/fuse`) and nothing else:
//! each read is one `pread` of the backing file, served from the page
//! cache once the file was read.
//!
//! It mounts with the same `fuser` configuration as [`crate::mount`]
//! (threads, options, no `FOPEN_KEEP_CACHE` on a first open), so the
//! difference between the two is what coopcache does per read. Flat: only
//! the directory's own regular files are shown.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner,
    MountOption, OpenFlags, ReplyAttr, ReplyData, ReplyEmpty, ReplyEntry, ReplyOpen, Request,
};

use crate::fs::MAX_READ;
use crate::{MountError, Mounted};

/// The root directory's inode.
const ROOT: u64 = 1;

/// Open files at most.
const MAX_OPEN: usize = 4096;

struct Passthrough {
    dir: PathBuf,
    /// Inode `ROOT + 1 + i` is `names[i]`, a file of `dir`.
    names: Mutex<Vec<String>>,
    open: Mutex<HashMap<u64, Arc<File>>>,
    next: AtomicU64,
}

impl Passthrough {
    fn path(&self, ino: INodeNo) -> Option<PathBuf> {
        if ino.0 == ROOT {
            return Some(self.dir.clone());
        }
        let i = usize::try_from(ino.0.checked_sub(ROOT + 1)?).ok()?;
        let names = self.names.lock().unwrap_or_else(|p| p.into_inner());
        names.get(i).map(|n| self.dir.join(n))
    }

    fn ino(&self, name: &str) -> u64 {
        let mut names = self.names.lock().unwrap_or_else(|p| p.into_inner());
        let i = match names.iter().position(|n| n == name) {
            Some(i) => i,
            None => {
                names.push(name.to_owned());
                names.len() - 1
            }
        };
        ROOT + 1 + i as u64
    }

    fn attr(ino: u64, path: &Path) -> Result<FileAttr, Errno> {
        let m = std::fs::metadata(path).map_err(Errno::from)?;
        let (kind, perm) = if m.is_dir() {
            (FileType::Directory, 0o555)
        } else if m.is_file() {
            (FileType::RegularFile, 0o444)
        } else {
            return Err(Errno::ENOENT);
        };
        let modified = m.modified().unwrap_or(UNIX_EPOCH);
        Ok(FileAttr {
            ino: INodeNo(ino),
            size: m.len(),
            blocks: m.blocks(),
            atime: modified,
            mtime: modified,
            ctime: modified,
            crtime: modified,
            kind,
            perm,
            nlink: 1,
            uid: m.uid(),
            gid: m.gid(),
            rdev: 0,
            blksize: 4096,
            flags: 0,
        })
    }
}

impl Filesystem for Passthrough {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let Some(name) = name.to_str().filter(|_| parent.0 == ROOT) else {
            return reply.error(Errno::ENOENT);
        };
        let ino = self.ino(name);
        match Self::attr(ino, &self.dir.join(name)) {
            // Attributes for no time, as coopcache gives a file's.
            Ok(a) => {
                reply.entry_with_ttls(&Duration::ZERO, &Duration::from_secs(1), &a, Generation(0))
            }
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let Some(path) = self.path(ino) else {
            return reply.error(Errno::ESTALE);
        };
        match Self::attr(ino.0, &path) {
            Ok(a) => reply.attr(&Duration::ZERO, &a),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let Some(path) = self.path(ino) else {
            return reply.error(Errno::ESTALE);
        };
        let file = match File::open(&path) {
            Ok(f) => Arc::new(f),
            Err(e) => return reply.error(Errno::from(e)),
        };
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if open.len() >= MAX_OPEN {
            return reply.error(Errno::EMFILE);
        }
        let fh = self.next.fetch_add(1, Ordering::Relaxed);
        open.insert(fh, file);
        reply.opened(FileHandle(fh), FopenFlags::empty());
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
        let file = self
            .open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&fh.0)
            .cloned();
        let Some(file) = file else {
            return reply.error(Errno::EBADF);
        };
        let mut buf = vec![0; size.min(MAX_READ) as usize];
        let mut got = 0;
        while got < buf.len() {
            match file.read_at(&mut buf[got..], offset + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) => return reply.error(Errno::from(e)),
            }
        }
        reply.data(&buf[..got]);
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
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&fh.0);
        reply.ok();
    }
}

/// Mounts a read-only passthrough of `backing`'s files on `dir`.
pub fn mount_passthrough(dir: &Path, backing: &Path) -> Result<Mounted, MountError> {
    let mut config = crate::fuse_config("passthrough");
    config.mount_options.push(MountOption::RO);
    let fs = Passthrough {
        dir: backing.into(),
        names: Mutex::default(),
        open: Mutex::default(),
        next: AtomicU64::new(1),
    };
    crate::spawn(fs, dir, &config)
}
