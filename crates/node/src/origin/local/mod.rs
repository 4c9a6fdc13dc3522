//! A local directory origin, read with the kernel's help so that no path
//! leaves the directory and no rewrite goes unnoticed.
//!
//! **Confinement.** Every open is one `openat2(root, path,
//! RESOLVE_BENEATH | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS)`: the kernel
//! resolves the whole path, symbolic links included, and refuses any step
//! that would leave the root (`..` above it, an absolute or escaping link,
//! a mount point). Links that stay inside work. Being one system call, it
//! leaves no window between a check and the open for a directory swapped
//! for a link to exploit. Kernels without `openat2` (before 5.6, or where a
//! seccomp filter hides it) get a walk instead: one `openat(O_NOFOLLOW)` per
//! component from the root, each checked to be on the root's device, which
//! refuses every symbolic link (safe, less convenient; said in the error).
//!
//! **Versions.** `ino-ctime-mtime-size` in hex, times with nanoseconds from
//! `statx`. The kernel sets the change time on every write, truncate,
//! rename or attribute change, and no user can set it (unlike the mtime:
//! `touch -d`, `cp -p`), so a rewrite at the same size and mtime, or a
//! replacement that reuses the inode number, still gives a new version.
//! A read checks the version of the file it opened before and after
//! reading, so bytes of a file rewritten mid-read are refused as
//! [`OriginError::Changed`], never served torn.
//!
//! The limit left: the change time has the file system's timestamp
//! granularity. Since Linux 6.13 (multigrain timestamps) a change after a
//! stat always moves it; on older kernels two writes within one timer tick
//! (1-4 ms), with a stat between them, share a change time.
//!
//! Everything here blocks; [`super::Origin`] calls it on tokio's blocking
//! pool.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileExt;

use bytes::Bytes;
use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags, Statx, StatxFlags};
use rustix::io::Errno;

use super::{DirEntry, Entry, EntryKind, FileVersion, OriginError, Owner, PosixAttrs};

mod note;
mod write;
pub(crate) use write::Draft;

/// How paths are resolved beneath the root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resolver {
    /// `openat2` with `RESOLVE_BENEATH`: links inside the root are followed.
    Openat2,
    /// One `openat(O_NOFOLLOW)` per component: links are refused.
    Walk,
}

/// A directory origin.
///
/// Its root is its path, opened anew by every call ([`LocalDir::root`]),
/// not a descriptor opened at start: a directory removed and made again,
/// or swapped for another with `mv` (as a deploy switches releases), is
/// what the next request reads. A descriptor kept from the start pinned
/// the directory found then, and the node served 404s or the old tree
/// until restarted (issue 42, item 4). The cost is one `open` of the path
/// per call, a microsecond beside the `openat2` and `statx` each call
/// makes anyway; the path is the operator's, so following it (links
/// included) trusts no one new, and confinement begins at the directory
/// it names.
#[derive(Debug)]
pub(crate) struct LocalDir {
    /// Absolute, so that a change of working directory cannot move it.
    path: std::path::PathBuf,
    resolver: Resolver,
}

impl LocalDir {
    /// The space of the file system the directory is on (`None` if it
    /// cannot say).
    pub(crate) fn space(&self) -> Option<super::Space> {
        let st = rustix::fs::statvfs(&self.path).ok()?;
        Some(super::Space {
            block_size: u32::try_from(st.f_bsize).unwrap_or(4096),
            fragment: u32::try_from(st.f_frsize).unwrap_or(4096),
            blocks: st.f_blocks,
            free: st.f_bfree,
            available: st.f_bavail,
            files: st.f_files,
            files_free: st.f_ffree,
            name_max: u32::try_from(st.f_namemax).unwrap_or(255),
        })
    }
}

/// How many times an open is retried when `openat2` reports a rename race
/// (`EAGAIN`: it could not prove a `..` stayed inside while the tree moved).
const RACE_RETRIES: usize = 16;

impl LocalDir {
    /// Opens `dir`, choosing `openat2` when the kernel has it.
    pub(crate) fn open(dir: &std::path::Path) -> io::Result<LocalDir> {
        let mut local = LocalDir::open_with(dir, Resolver::Openat2)?;
        match local.resolve(".", OFlags::PATH | OFlags::DIRECTORY) {
            Ok(_) => {}
            Err(Errno::NOSYS | Errno::PERM) => local.resolver = Resolver::Walk,
            Err(e) => return Err(e.into()),
        }
        Ok(local)
    }

    /// Opens `dir` with the given resolver (tests use the walk directly);
    /// it must be a directory now, whatever it is later.
    pub(crate) fn open_with(dir: &std::path::Path, resolver: Resolver) -> io::Result<LocalDir> {
        let local = LocalDir {
            path: std::path::absolute(dir)?,
            resolver,
        };
        local.root()?;
        Ok(local)
    }

    /// The directory its path names now.
    fn root(&self) -> Result<OwnedFd, Errno> {
        self.open_root(OFlags::PATH | OFlags::DIRECTORY)
    }

    /// The directory its path names now, opened with `flags`.
    fn open_root(&self, flags: OFlags) -> Result<OwnedFd, Errno> {
        rustix::fs::open(&self.path, flags | OFlags::CLOEXEC, Mode::empty())
    }

    /// Which resolver this directory uses.
    pub(crate) fn resolver(&self) -> Resolver {
        self.resolver
    }

    /// The size and version of the regular file at `path`.
    pub(crate) fn stat(&self, path: &str) -> Result<FileVersion, OriginError> {
        let file = self.open_file(path)?;
        version_of(path, &statx(path, &file)?)
    }

    /// Reads `range` (already clamped to `version.size` and non-empty) of
    /// `path`, which must be at `version` before and after the read.
    pub(crate) fn read(
        &self,
        path: &str,
        version: &FileVersion,
        range: std::ops::Range<u64>,
    ) -> Result<Bytes, OriginError> {
        let fd = self.open_file(path)?;
        let changed = || OriginError::Changed { path: path.into() };
        if version_of(path, &statx(path, &fd)?)? != *version {
            return Err(changed());
        }
        let file = File::from(fd);
        let len = usize::try_from(range.end - range.start).map_err(|_| OriginError::Short {
            path: path.into(),
            expected: range.end - range.start,
            got: 0,
        })?;
        let mut buf = vec![0; len];
        match file.read_exact_at(&mut buf, range.start) {
            Ok(()) => {}
            // Shorter than its version says: it was truncated under us.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Err(changed()),
            Err(e) => return Err(io_error(path, e)),
        }
        if version_of(path, &statx(path, &file)?)? != *version {
            return Err(changed());
        }
        Ok(Bytes::from(buf))
    }

    /// What `path` is (`""`: the root), a final symbolic link not followed.
    pub(crate) fn entry(&self, path: &str) -> Result<Entry, OriginError> {
        let st = if path.is_empty() {
            let root = self.root().map_err(|e| self.refusal(path, e))?;
            statx(path, &root)?
        } else {
            let fd = self
                .resolve(path, OFlags::PATH | OFlags::NOFOLLOW)
                .map_err(|e| self.refusal(path, e))?;
            statx(path, &fd)?
        };
        let kind =
            entry_kind(FileType::from_raw_mode(u32::from(st.stx_mode))).ok_or_else(|| {
                OriginError::NotAFile {
                    path: path.into(),
                    kind: describe(FileType::from_raw_mode(u32::from(st.stx_mode))),
                }
            })?;
        Ok(Entry {
            kind,
            size: st.stx_size,
            perm: st.stx_mode & 0o7777,
            modified: system_time(st.stx_mtime),
            posix: Some(PosixAttrs {
                accessed: system_time(st.stx_atime),
                changed: system_time(st.stx_ctime),
                nlink: st.stx_nlink,
                owner: Owner {
                    uid: st.stx_uid,
                    gid: st.stx_gid,
                },
            }),
        })
    }

    /// The files, directories and links in directory `path` (`""`: the
    /// root), unsorted.
    pub(crate) fn list(&self, path: &str) -> Result<Vec<DirEntry>, OriginError> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY;
        let fd = if path.is_empty() {
            self.open_root(flags | OFlags::CLOEXEC)
        } else {
            self.resolve(path, flags)
        }
        .map_err(|e| self.refusal(path, e))?;
        let mut out = Vec::new();
        let dir = rustix::fs::Dir::read_from(&fd).map_err(|e| io_error(path, e.into()))?;
        for item in dir {
            let item = item.map_err(|e| io_error(path, e.into()))?;
            let Ok(name) = item.file_name().to_str() else {
                continue; // not UTF-8: no path can name it
            };
            if name == "."
                || name == ".."
                || write::is_draft(name)
                || super::check_path(name).is_err()
            {
                continue;
            }
            let kind = match item.file_type() {
                FileType::Unknown => match rustix::fs::statat(&fd, name, AtFlags::SYMLINK_NOFOLLOW)
                {
                    Ok(st) => FileType::from_raw_mode(st.st_mode),
                    Err(_) => continue, // gone since the listing
                },
                kind => kind,
            };
            let Some(kind) = entry_kind(kind) else {
                continue;
            };
            if out.len() == super::tree::MAX_LIST {
                return Err(super::tree::too_large(path));
            }
            out.push(DirEntry {
                name: name.to_owned(),
                kind,
                version: None,
            });
        }
        Ok(out)
    }

    /// The target written in the symbolic link at `path`.
    pub(crate) fn read_link(&self, path: &str) -> Result<String, OriginError> {
        let fd = self
            .resolve(path, OFlags::PATH | OFlags::NOFOLLOW)
            .map_err(|e| self.refusal(path, e))?;
        match rustix::fs::readlinkat(&fd, "", Vec::new()) {
            Ok(target) => Ok(target.to_string_lossy().into_owned()),
            Err(Errno::NOENT | Errno::INVAL) => Err(OriginError::NotALink { path: path.into() }),
            Err(e) => Err(io_error(path, e.into())),
        }
    }

    /// Whether the root can still be listed (the startup probe).
    pub(crate) fn probe(&self) -> io::Result<()> {
        let dir = self.open_root(OFlags::RDONLY | OFlags::DIRECTORY)?;
        rustix::fs::Dir::read_from(&dir)?;
        Ok(())
    }

    /// Opens `path` for reading, confined to the root. `O_NONBLOCK` keeps a
    /// FIFO placed in the origin from blocking the open; the caller then
    /// refuses anything but a regular file.
    fn open_file(&self, path: &str) -> Result<OwnedFd, OriginError> {
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY;
        match self.resolve(path, flags) {
            Ok(fd) => Ok(fd),
            // A UNIX socket cannot be opened at all (`ENXIO`), nor can a
            // device with nothing behind it: say what it is, so that it
            // is not found as a file, as a FIFO or a directory is, rather
            // than reported as the origin failing (a 502).
            Err(e @ (Errno::NXIO | Errno::NODEV | Errno::OPNOTSUPP)) => {
                let kind = self
                    .resolve(path, OFlags::PATH)
                    .ok()
                    .and_then(|fd| statx(path, &fd).ok())
                    .map(|st| FileType::from_raw_mode(u32::from(st.stx_mode)))
                    .filter(|kind| *kind != FileType::RegularFile);
                Err(match kind {
                    Some(kind) => OriginError::NotAFile {
                        path: path.into(),
                        kind: describe(kind),
                    },
                    None => self.refusal(path, e),
                })
            }
            Err(e) => Err(self.refusal(path, e)),
        }
    }

    fn resolve(&self, path: &str, flags: OFlags) -> Result<OwnedFd, Errno> {
        let flags = flags | OFlags::CLOEXEC;
        match self.resolver {
            Resolver::Openat2 => {
                let how =
                    ResolveFlags::BENEATH | ResolveFlags::NO_XDEV | ResolveFlags::NO_MAGICLINKS;
                let root = self.root()?;
                let mut tries = 0;
                loop {
                    match rustix::fs::openat2(&root, path, flags, Mode::empty(), how) {
                        Err(Errno::AGAIN) if tries < RACE_RETRIES => tries += 1,
                        other => return other,
                    }
                }
            }
            Resolver::Walk => self.walk(path, flags),
        }
    }

    /// The walk: every component opened with `O_NOFOLLOW` from its parent,
    /// each on the root's device. `check_path` has already refused `.`,
    /// `..` and empty components.
    fn walk(&self, path: &str, flags: OFlags) -> Result<OwnedFd, Errno> {
        let root = self.root()?;
        // The root's device: components on another one are refused.
        let dev = rustix::fs::fstat(&root)?.st_dev;
        let mut parts = path.split('/').peekable();
        let mut dir: Option<OwnedFd> = None;
        while let Some(part) = parts.next() {
            let at = dir.as_ref().map_or(root.as_fd(), |d| d.as_fd());
            let last = parts.peek().is_none();
            let how = if last {
                flags | OFlags::NOFOLLOW
            } else {
                OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
            };
            let fd = match rustix::fs::openat(at, part, how, Mode::empty()) {
                Ok(fd) => fd,
                // `O_DIRECTORY | O_NOFOLLOW` on a link says "not a
                // directory"; say "a link" so the error can explain.
                Err(Errno::NOTDIR) if !last && is_link(at, part) => return Err(Errno::LOOP),
                Err(e) => return Err(e),
            };
            if rustix::fs::fstat(&fd)?.st_dev != dev {
                return Err(Errno::XDEV);
            }
            dir = Some(fd);
        }
        dir.ok_or(Errno::NOENT)
    }

    /// Turns a failed open into what the user is told.
    fn refusal(&self, path: &str, e: Errno) -> OriginError {
        let bad = |why: &str| OriginError::BadPath {
            path: path.into(),
            why: why.into(),
            too_long: e == Errno::NAMETOOLONG,
        };
        match e {
            Errno::NOENT | Errno::NOTDIR => OriginError::NotFound { path: path.into() },
            Errno::XDEV => {
                bad("it leads out of the origin (through a symbolic link or a mount point)")
            }
            Errno::LOOP if self.resolver == Resolver::Walk => bad(
                "it goes through a symbolic link, and this kernel has no openat2 to follow links safely",
            ),
            Errno::LOOP => bad("it goes through too many symbolic links"),
            Errno::NAMETOOLONG => bad("a name in it is too long"),
            Errno::ACCESS | Errno::PERM => OriginError::PermissionDenied { path: path.into() },
            e => io_error(path, e.into()),
        }
    }
}

fn is_link(at: std::os::fd::BorrowedFd<'_>, name: &str) -> bool {
    rustix::fs::statat(at, name, AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink)
}

fn io_error(path: &str, source: io::Error) -> OriginError {
    OriginError::Local {
        path: path.into(),
        source,
    }
}

fn statx(path: &str, fd: impl AsFd) -> Result<Statx, OriginError> {
    rustix::fs::statx(fd, "", AtFlags::EMPTY_PATH, STATX_MASK).map_err(|e| io_error(path, e.into()))
}

/// What a version is made of ([`version_of`]), and what an entry also
/// reports (links, access time).
const STATX_MASK: StatxFlags = StatxFlags::TYPE
    .union(StatxFlags::MODE)
    .union(StatxFlags::NLINK)
    .union(StatxFlags::UID)
    .union(StatxFlags::GID)
    .union(StatxFlags::ATIME)
    .union(StatxFlags::INO)
    .union(StatxFlags::SIZE)
    .union(StatxFlags::MTIME)
    .union(StatxFlags::CTIME);

/// The `statx` of `name` in `dir`, not following a final link.
fn statx_at(path: &str, dir: impl AsFd, name: &str) -> Result<Statx, OriginError> {
    rustix::fs::statx(dir, name, AtFlags::SYMLINK_NOFOLLOW, STATX_MASK)
        .map_err(|e| io_error(path, e.into()))
}

/// The version of a file from its `statx`; anything but a regular file is
/// refused (a directory, a FIFO, a device).
fn version_of(path: &str, st: &Statx) -> Result<FileVersion, OriginError> {
    let kind = FileType::from_raw_mode(u32::from(st.stx_mode));
    if kind != FileType::RegularFile {
        return Err(OriginError::NotAFile {
            path: path.into(),
            kind: describe(kind),
        });
    }
    let (c, m) = (st.stx_ctime, st.stx_mtime);
    Ok(FileVersion {
        size: st.stx_size,
        version: format!(
            "{:x}-{:x}.{:08x}-{:x}.{:08x}-{:x}",
            st.stx_ino, c.tv_sec, c.tv_nsec, m.tv_sec, m.tv_nsec, st.stx_size
        ),
        modified: system_time(m),
        perm: st.stx_mode & 0o7777,
        owner: Some(Owner {
            uid: st.stx_uid,
            gid: st.stx_gid,
        }),
    })
}

/// A statx timestamp as a `SystemTime` (`None` if out of its range).
fn system_time(t: rustix::fs::StatxTimestamp) -> Option<std::time::SystemTime> {
    let nanos = std::time::Duration::new(0, t.tv_nsec);
    match u64::try_from(t.tv_sec) {
        Ok(secs) => std::time::UNIX_EPOCH.checked_add(std::time::Duration::from_secs(secs) + nanos),
        Err(_) => std::time::UNIX_EPOCH
            .checked_sub(std::time::Duration::from_secs(t.tv_sec.unsigned_abs()))
            .and_then(|t| t.checked_add(nanos)),
    }
}

/// The kinds the namespace shows; `None` for FIFOs, devices and sockets.
fn entry_kind(kind: FileType) -> Option<EntryKind> {
    match kind {
        FileType::RegularFile => Some(EntryKind::File),
        FileType::Directory => Some(EntryKind::Dir),
        FileType::Symlink => Some(EntryKind::Symlink),
        _ => None,
    }
}

fn describe(kind: FileType) -> &'static str {
    match kind {
        FileType::Directory => "a directory",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice | FileType::BlockDevice => "a device",
        FileType::Symlink => "a symbolic link",
        _ => "not a regular file",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk, used where the kernel has no `openat2`, follows no link
    /// at all (inside or out) and still reads plain paths.
    #[test]
    fn the_walk_refuses_every_link_and_reads_plain_paths() {
        let root = tempfile::tempdir().expect("tempdir");
        let o = root.path().join("origin");
        std::fs::create_dir_all(o.join("a/b")).expect("mkdir");
        std::fs::write(o.join("a/b/f"), b"plain").expect("write");
        std::fs::write(root.path().join("secret"), b"SECRET").expect("write");
        std::os::unix::fs::symlink("a/b/f", o.join("inside")).expect("link");
        std::os::unix::fs::symlink("a", o.join("dir_inside")).expect("link");
        std::os::unix::fs::symlink("../secret", o.join("out")).expect("link");
        let dir = LocalDir::open_with(&o, Resolver::Walk).expect("open");
        let v = dir.stat("a/b/f").expect("plain path");
        assert_eq!(&dir.read("a/b/f", &v, 0..5).expect("read")[..], b"plain");
        for link in ["inside", "dir_inside/b/f", "out"] {
            match dir.stat(link) {
                Err(OriginError::BadPath { why, .. }) => {
                    assert!(why.contains("symbolic link"), "{link}: {why}")
                }
                other => panic!("{link}: the walk followed a link: {other:?}"),
            }
        }
        assert!(dir.stat("a/missing").expect_err("missing").is_not_found());
        assert!(dir.stat("a/b/f/x").expect_err("ENOTDIR").is_not_found());
    }

    /// This kernel has `openat2` (5.6+), so the default resolver is it.
    #[test]
    fn openat2_is_chosen_where_the_kernel_has_it() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = LocalDir::open(root.path()).expect("open");
        assert_eq!(dir.resolver(), Resolver::Openat2);
    }
}
