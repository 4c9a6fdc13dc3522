//! A FUSE file system that fails on demand, for the disk tier's tests: a
//! flat directory whose files live in a real one, every read and write
//! passed through with direct I/O (so none is served from the page cache
//! behind the test's back) until the test sets a [`Fault`]. Like many
//! network and FUSE file systems it cannot preallocate (EOPNOTSUPP), so a
//! store on it is sparse and meets a full disk at a write, not at start.
//! There is no dm-flakey on this machine; a FUSE layer is the kernel's own
//! path for an I/O error all the same (the store sees `pread` fail).

use fuser::{
    Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    LockOwner, MountOption, OpenFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyEmpty, ReplyEntry,
    ReplyOpen, ReplyWrite, Request, WriteFlags,
};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

/// What the file system does to I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Fault {
    /// Passes everything through.
    None = 0,
    /// Every read, write and fsync fails with EIO, as a dying disk's do.
    Eio = 1,
    /// Every write fails with ENOSPC, as a full disk's do; reads work.
    Full = 2,
    /// Every call fails with EIO, a name's lookup and a file's open
    /// included: a disk unplugged under its file system.
    Gone = 3,
}

/// A mounted fault layer, unmounted on drop.
pub(crate) struct FaultMount {
    session: Option<fuser::BackgroundSession>,
    fault: Arc<AtomicU8>,
    /// Where it is mounted.
    pub(crate) dir: PathBuf,
    _work: tempfile::TempDir,
}

impl FaultMount {
    /// Mounts one over a fresh backing directory; `None` (with a note)
    /// where FUSE is not available and `COOPCACHE_ALLOW_SKIP` is set.
    pub(crate) fn new() -> Option<FaultMount> {
        if !Path::new("/dev/fuse").exists() {
            assert!(
                std::env::var_os("COOPCACHE_ALLOW_SKIP").is_some(),
                "the disk fault tests need /dev/fuse (scripts/test-deps.sh installs fuse3), \
                 or set COOPCACHE_ALLOW_SKIP=1 to skip them"
            );
            eprintln!("SKIPPED: no /dev/fuse");
            return None;
        }
        let work = tempfile::tempdir().unwrap();
        let (backing, dir) = (work.path().join("backing"), work.path().join("mnt"));
        std::fs::create_dir_all(&backing).unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        let fault = Arc::new(AtomicU8::new(Fault::None as u8));
        let fs = FaultFs {
            backing,
            fault: fault.clone(),
            names: Mutex::default(),
            open: Mutex::default(),
            next_fh: AtomicU64::new(1),
        };
        let mut config = Config::default();
        config.mount_options = vec![MountOption::FSName("coopcache-faultfs".into())];
        let session = fuser::spawn_mount(fs, &dir, &config).expect("mount the fault layer");
        Some(FaultMount {
            session: Some(session),
            fault,
            dir,
            _work: work,
        })
    }

    /// From now on, `fault`.
    pub(crate) fn set(&self, fault: Fault) {
        self.fault.store(fault as u8, Ordering::SeqCst);
    }
}

impl Drop for FaultMount {
    fn drop(&mut self) {
        if let Some(session) = self.session.take() {
            let _ = session.umount_and_join();
        }
    }
}

struct FaultFs {
    backing: PathBuf,
    fault: Arc<AtomicU8>,
    /// File names by inode - 2 (1 is the root).
    names: Mutex<Vec<String>>,
    open: Mutex<HashMap<u64, File>>,
    next_fh: AtomicU64,
}

const TTL: Duration = Duration::from_secs(1);

impl FaultFs {
    fn fault(&self) -> u8 {
        self.fault.load(Ordering::SeqCst)
    }

    /// Whether reads, writes and syncs fail with EIO.
    fn failing(&self) -> bool {
        matches!(self.fault(), f if f == Fault::Eio as u8 || f == Fault::Gone as u8)
    }

    /// Whether every call fails with EIO.
    fn gone(&self) -> bool {
        self.fault() == Fault::Gone as u8
    }

    fn ino_of(&self, name: &str) -> INodeNo {
        let mut names = self.names.lock().unwrap();
        let i = names.iter().position(|n| n == name).unwrap_or_else(|| {
            names.push(name.to_string());
            names.len() - 1
        });
        INodeNo(i as u64 + 2)
    }

    fn path_of(&self, ino: INodeNo) -> Option<PathBuf> {
        let names = self.names.lock().unwrap();
        let name = names.get((ino.0 as usize).checked_sub(2)?)?;
        Some(self.backing.join(name))
    }

    fn attr(&self, ino: INodeNo) -> Result<FileAttr, Errno> {
        let path = match ino {
            INodeNo::ROOT => self.backing.clone(),
            _ => self.path_of(ino).ok_or(Errno::ENOENT)?,
        };
        let m = std::fs::metadata(&path).map_err(Errno::from)?;
        let kind = match m.is_dir() {
            true => FileType::Directory,
            false => FileType::RegularFile,
        };
        let time = UNIX_EPOCH + Duration::from_secs(m.mtime().max(0) as u64);
        Ok(FileAttr {
            ino,
            size: m.len(),
            blocks: m.blocks(),
            atime: time,
            mtime: time,
            ctime: time,
            crtime: time,
            kind,
            perm: (m.mode() & 0o7777) as u16,
            nlink: 1,
            uid: m.uid(),
            gid: m.gid(),
            rdev: 0,
            blksize: 4096,
            flags: 0,
        })
    }

    fn open_fh(&self, path: &Path, create: bool) -> Result<FileHandle, Errno> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .open(path)
            .map_err(Errno::from)?;
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        self.open.lock().unwrap().insert(fh, file);
        Ok(FileHandle(fh))
    }

    fn with_file<T>(&self, fh: FileHandle, f: impl FnOnce(&File) -> T) -> Result<T, Errno> {
        let open = self.open.lock().unwrap();
        open.get(&fh.0).map(f).ok_or(Errno::EBADF)
    }
}

impl Filesystem for FaultFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        if self.gone() {
            return reply.error(Errno::EIO);
        }
        let name = name.to_string_lossy();
        if parent != INodeNo::ROOT || !self.backing.join(&*name).exists() {
            return reply.error(Errno::ENOENT);
        }
        match self.attr(self.ino_of(&name)) {
            Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        if self.gone() {
            return reply.error(Errno::EIO);
        }
        match self.attr(ino) {
            Ok(attr) => reply.attr(&TTL, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<fuser::TimeOrNow>,
        _mtime: Option<fuser::TimeOrNow>,
        _ctime: Option<std::time::SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<std::time::SystemTime>,
        _chgtime: Option<std::time::SystemTime>,
        _bkuptime: Option<std::time::SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        if let Some(size) = size {
            if self.fault() != Fault::None as u8 {
                return reply.error(Errno::EIO);
            }
            let Some(path) = self.path_of(ino) else {
                return reply.error(Errno::ENOENT);
            };
            let grown = OpenOptions::new()
                .write(true)
                .open(path)
                .and_then(|f| f.set_len(size));
            if let Err(e) = grown {
                return reply.error(Errno::from(e));
            }
        }
        match self.attr(ino) {
            Ok(attr) => reply.attr(&TTL, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if self.gone() {
            return reply.error(Errno::EIO);
        }
        let Some(path) = self.path_of(ino) else {
            return reply.error(Errno::ENOENT);
        };
        match self.open_fh(&path, false) {
            Ok(fh) => reply.opened(fh, FopenFlags::FOPEN_DIRECT_IO),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        _mode: u32,
        _umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        if self.gone() {
            return reply.error(Errno::EIO);
        }
        let name = name.to_string_lossy();
        if parent != INodeNo::ROOT {
            return reply.error(Errno::ENOENT);
        }
        let created = self
            .open_fh(&self.backing.join(&*name), true)
            .and_then(|fh| Ok((fh, self.attr(self.ino_of(&name))?)));
        match created {
            Ok((fh, attr)) => {
                reply.created(&TTL, &attr, Generation(0), fh, FopenFlags::FOPEN_DIRECT_IO)
            }
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
        if self.failing() {
            return reply.error(Errno::EIO);
        }
        let mut buf = vec![0; size as usize];
        let read = self.with_file(fh, |f| {
            let mut n = 0;
            while n < buf.len() {
                match f.read_at(&mut buf[n..], offset + n as u64)? {
                    0 => break,
                    k => n += k,
                }
            }
            Ok::<_, std::io::Error>(n)
        });
        match read {
            Ok(Ok(n)) => reply.data(&buf[..n]),
            Ok(Err(e)) => reply.error(Errno::from(e)),
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
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        if self.failing() {
            return reply.error(Errno::EIO);
        }
        if self.fault() == Fault::Full as u8 {
            return reply.error(Errno::ENOSPC);
        }
        match self.with_file(fh, |f| f.write_all_at(data, offset)) {
            Ok(Ok(())) => reply.written(data.len() as u32),
            Ok(Err(e)) => reply.error(Errno::from(e)),
            Err(e) => reply.error(e),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
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
        self.open.lock().unwrap().remove(&fh.0);
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        match self.failing() {
            true => reply.error(Errno::EIO),
            false => reply.ok(),
        }
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: u64,
        _length: u64,
        _mode: i32,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::EOPNOTSUPP);
    }
}
