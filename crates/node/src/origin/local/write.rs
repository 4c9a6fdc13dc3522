//! Writes to a local directory origin, for the mount.
//!
//! Every change goes through a directory opened beneath the root (as
//! reads do) and a `*at` call on a single name, so no write leaves the
//! origin either. A file is written as a [`Draft`]: a temporary file beside
//! its target (`.coopcache-<random>.tmp`), renamed over the target when the
//! writer closes it. Others see the old file or the new one whole, never a
//! torn mix, and a writer that dies before its close leaves the old file in
//! place (and its temporary file behind, which listings hide).
//!
//! **Concurrent writers merge as NFS's do.** A draft of an existing file
//! records the byte ranges its open wrote. Its commit, under an exclusive
//! `flock` of the directory (commits in one directory take turns, across
//! processes and nodes sharing the directory), copies the file *as it is
//! now* (what other writers committed meanwhile), lays the recorded ranges
//! over it, and renames that into place: the new version is the previous
//! one plus this open's writes, as C2Cfs's section 2 defines it, where a
//! rename of the draft alone would drop what another node committed to
//! other blocks since this open's first write. A draft that truncated or
//! created the file (`O_TRUNC`, a new file) replaces it whole.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, IntoRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::time::SystemTime;

use bytes::Bytes;
use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags, Timespec, Timestamps};
use rustix::io::Errno;

use super::{LocalDir, io_error, statx, statx_at, version_of};
use crate::origin::written::Written;
use crate::origin::{FileVersion, OriginError, Owner, SetTime};
use std::collections::hash_map::RandomState;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Closes a duplicate of `file`'s descriptor and returns that close's
/// error, which dropping a `File` ignores. A close is when a network file
/// system writes a file's bytes to its server (NFS's close-to-open), so
/// other hosts reading the origin see them once the draft is renamed; on
/// a local disk it costs nothing.
fn flush(file: &File) -> io::Result<()> {
    let fd = file.try_clone()?.into_raw_fd();
    // SAFETY: `fd` was just taken out of the `File` that owned it, so it is
    // open and nothing else will close it.
    unsafe { rustix::io::try_close(fd) }.map_err(io::Error::from)
}

/// Prefix and suffix of the temporary files drafts are written in.
pub(crate) const DRAFT_PREFIX: &str = ".coopcache-";
pub(crate) const DRAFT_SUFFIX: &str = ".tmp";

/// Whether `name` is a draft's temporary file (hidden from listings).
pub(crate) fn is_draft(name: &str) -> bool {
    name.starts_with(DRAFT_PREFIX) && name.ends_with(DRAFT_SUFFIX)
}

/// A file being written: its bytes in a temporary file in the target's
/// directory until [`Draft::commit_keeping`] renames it over the target. Dropped
/// uncommitted, the temporary file is removed.
#[derive(Debug)]
pub(crate) struct Draft {
    file: File,
    dir: OwnedFd,
    temp: String,
    name: String,
    path: String,
    committed: bool,
    /// Whether the origin had no such file when the draft began: its
    /// creator owns it ([`Draft::set_creator`]).
    created: bool,
    /// The temporary file a rebase wrote, while it is not yet renamed.
    rebased_temp: Option<String>,
    /// What this open wrote (or that it replaces the file whole).
    written: Written,
    /// Times the open set, to carry over at the commit.
    times: Option<(Option<SetTime>, Option<SetTime>)>,
    /// The target's version when its bytes were copied into the draft (if
    /// it stayed that version through the copy): while the target is still
    /// that version, the draft is exactly its bytes with this open's
    /// writes laid over, and the commit renames it as it is instead of
    /// rebasing (which would write the whole file a second time).
    base: Option<String>,
}

/// An exclusive `flock` of a directory, released when dropped.
struct DirLock<'a>(&'a OwnedFd);

impl<'a> DirLock<'a> {
    fn exclusive(dir: &'a OwnedFd) -> io::Result<DirLock<'a>> {
        rustix::fs::flock(dir, rustix::fs::FlockOperation::LockExclusive)?;
        Ok(DirLock(dir))
    }
}

impl Drop for DirLock<'_> {
    fn drop(&mut self) {
        let _ = rustix::fs::flock(self.0, rustix::fs::FlockOperation::Unlock);
    }
}

impl LocalDir {
    /// The directory holding `path`, opened beneath the root, and the
    /// last part of `path`.
    fn parent<'p>(&self, path: &'p str) -> Result<(OwnedFd, &'p str), OriginError> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY;
        match path.rsplit_once('/') {
            Some((dir, name)) => {
                let fd = self
                    .resolve(dir, flags)
                    .map_err(|e| self.refusal(path, e))?;
                Ok((fd, name))
            }
            None => {
                let fd = self
                    .open_root(flags | OFlags::CLOEXEC)
                    .map_err(|e| self.refusal(path, e))?;
                Ok((fd, path))
            }
        }
    }

    /// Like [`Self::parent`], but the origin's root (`""`) is named as
    /// itself (`.` in the root), so its owner, mode and times can be set
    /// (`tar` sets the extracted directory's, `touch` of a mount point).
    fn target<'p>(&self, path: &'p str) -> Result<(OwnedFd, &'p str), OriginError> {
        if !path.is_empty() {
            return self.parent(path);
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = self.open_root(flags).map_err(|e| self.refusal(path, e))?;
        Ok((fd, "."))
    }

    /// Starts writing `path`: empty if `keep` is false or the file does
    /// not exist, else a copy of its current bytes. A new file gets `mode`.
    pub(crate) fn draft(&self, path: &str, keep: bool, mode: u32) -> Result<Draft, OriginError> {
        let (dir, name) = self.parent(path)?;
        let existing = match rustix::fs::openat(
            &dir,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => Some(File::from(fd)),
            Err(Errno::NOENT) => None,
            Err(e) => return Err(self.refusal(path, e)),
        };
        let (mode, before, owner) = match &existing {
            Some(f) => {
                let st = statx(path, f)?;
                // Refuses a directory or a FIFO.
                let version = version_of(path, &st)?.version;
                let owner = Owner {
                    uid: st.stx_uid,
                    gid: st.stx_gid,
                };
                (u32::from(st.stx_mode) & 0o7777, Some(version), Some(owner))
            }
            None => (mode & 0o7777, None, None),
        };
        let (file, temp) = create_temp(&dir, mode).map_err(|e| io_error(path, e))?;
        if let Some(owner) = owner {
            // The commit renames the draft over the file: it keeps the
            // file's owner (where this process may give it; see
            // `chown_if_allowed`), and its set-id bits, which the chown
            // cleared.
            chown_if_allowed(&file, Some(owner.uid), Some(owner.gid))
                .and_then(|()| rustix::fs::fchmod(&file, Mode::from_raw_mode(mode)))
                .map_err(|e| io_error(path, e.into()))?;
        }
        let mut draft = Draft {
            file,
            dir,
            temp,
            name: name.to_owned(),
            path: path.to_owned(),
            committed: false,
            created: existing.is_none(),
            rebased_temp: None,
            written: Written::new(!keep || existing.is_none()),
            times: None,
            base: None,
        };
        if keep && let Some(mut from) = existing {
            let mut to = &draft.file;
            io::copy(&mut from, &mut to).map_err(|e| io_error(path, e))?;
            let after = version_of(path, &statx(path, &from)?)?.version;
            draft.base = before.filter(|b| *b == after);
        }
        Ok(draft)
    }

    /// Creates directory `path`, owned by `creator` if given (and this
    /// process may give it).
    pub(crate) fn mkdir(
        &self,
        path: &str,
        mode: u32,
        creator: Option<Owner>,
    ) -> Result<(), OriginError> {
        let (dir, name) = self.parent(path)?;
        let inherits = set_gid(&dir).map_err(|e| self.change_error(path, e))?;
        rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(mode & 0o7777))
            .map_err(|e| self.change_error(path, e))?;
        // This process's umask cleared bits the caller's mode kept (the
        // caller's own umask is applied already): set them, as a local
        // mkdir would have.
        let made = rustix::fs::openat(
            &dir,
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| self.change_error(path, e))?;
        if let Some(owner) = creator {
            give_to_creator(&made, owner, inherits).map_err(|e| self.change_error(path, e))?;
        }
        // A set-group-ID directory's subdirectory inherits the bit.
        let inherited = if inherits { 0o2000 } else { 0 };
        let mode = Mode::from_raw_mode((mode & 0o7777) | inherited);
        rustix::fs::fchmod(&made, mode).map_err(|e| self.change_error(path, e))
    }

    /// Removes the file or link at `path`.
    pub(crate) fn unlink(&self, path: &str) -> Result<(), OriginError> {
        let (dir, name) = self.parent(path)?;
        rustix::fs::unlinkat(&dir, name, AtFlags::empty()).map_err(|e| self.change_error(path, e))
    }

    /// Flushes directory `path`'s entries to disk (`fsyncdir`): the names
    /// made, removed and renamed in it survive a crash of the origin's
    /// machine.
    pub(crate) fn sync_dir(&self, path: &str) -> Result<(), OriginError> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let dir = match path.is_empty() {
            true => self.open_root(flags),
            false => self.resolve(path, flags),
        }
        .map_err(|e| self.refusal(path, e))?;
        rustix::fs::fsync(&dir).map_err(|e| self.change_error(path, e))
    }

    /// Flushes the file at `path` and its directory's entries to disk
    /// (`fsync`): what was committed to it survives a crash of the
    /// origin's machine.
    pub(crate) fn sync(&self, path: &str) -> Result<(), OriginError> {
        let (dir, name) = self.target(path)?;
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let file = rustix::fs::openat(&dir, name, flags, Mode::empty())
            .map_err(|e| self.refusal(path, e))?;
        rustix::fs::fsync(&file).map_err(|e| self.change_error(path, e))?;
        rustix::fs::fsync(&dir).map_err(|e| self.change_error(path, e))
    }

    /// Removes the empty directory at `path`.
    pub(crate) fn rmdir(&self, path: &str) -> Result<(), OriginError> {
        let (dir, name) = self.parent(path)?;
        rustix::fs::unlinkat(&dir, name, AtFlags::REMOVEDIR).map_err(|e| self.change_error(path, e))
    }

    /// Renames `from` to `to` (replacing `to` unless `no_replace`).
    pub(crate) fn rename(&self, from: &str, to: &str, no_replace: bool) -> Result<(), OriginError> {
        let (from_dir, from_name) = self.parent(from)?;
        let (to_dir, to_name) = self.parent(to)?;
        let flags = if no_replace {
            RenameFlags::NOREPLACE
        } else {
            RenameFlags::empty()
        };
        rustix::fs::renameat_with(&from_dir, from_name, &to_dir, to_name, flags)
            .map_err(|e| self.change_error(from, e))
    }

    /// Creates a symbolic link at `path` holding `target`, owned by
    /// `creator` if given (and this process may give it).
    pub(crate) fn symlink(
        &self,
        target: &str,
        path: &str,
        creator: Option<Owner>,
    ) -> Result<(), OriginError> {
        let (dir, name) = self.parent(path)?;
        rustix::fs::symlinkat(target, &dir, name).map_err(|e| self.change_error(path, e))?;
        let Some(owner) = creator else {
            return Ok(());
        };
        let inherits = set_gid(&dir).map_err(|e| self.change_error(path, e))?;
        let gid = (!inherits).then_some(owner.gid);
        let (uid, gid) = (Some(uid_of(owner.uid)), gid.map(gid_of));
        match rustix::fs::chownat(&dir, name, uid, gid, AtFlags::SYMLINK_NOFOLLOW) {
            Err(Errno::PERM) | Ok(()) => Ok(()),
            Err(e) => Err(self.change_error(path, e)),
        }
    }

    /// Sets the owner and group of `path` (`None`: unchanged), not
    /// following a final link: refused (`EPERM`) unless this process may
    /// (`CAP_CHOWN`, or its own file given to a group it is in). The
    /// system clears a regular file's set-id bits, as a local chown does.
    pub(crate) fn set_owner(
        &self,
        path: &str,
        uid: Option<u32>,
        gid: Option<u32>,
    ) -> Result<(), OriginError> {
        let (dir, name) = self.target(path)?;
        let (uid, gid) = (uid.map(uid_of), gid.map(gid_of));
        rustix::fs::chownat(&dir, name, uid, gid, AtFlags::SYMLINK_NOFOLLOW).map_err(|e| match e {
            // chown's own answer, not a refused read's `EACCES`.
            Errno::PERM => io_error(path, e.into()),
            e => self.change_error(path, e),
        })
    }

    /// Sets the permission bits of `path` (not following a final link).
    pub(crate) fn set_mode(&self, path: &str, mode: u32) -> Result<(), OriginError> {
        let (dir, name) = self.target(path)?;
        let fd = rustix::fs::openat(
            &dir,
            name,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| self.change_error(path, e))?;
        // fchmod does not take an O_PATH descriptor: go through /proc's
        // view of it, which names exactly the file opened.
        let proc = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd));
        rustix::fs::chmod(proc.as_str(), Mode::from_raw_mode(mode & 0o7777))
            .map_err(|e| self.change_error(path, e))
    }

    /// Sets the access and modification times of `path`.
    pub(crate) fn set_times(
        &self,
        path: &str,
        atime: Option<SetTime>,
        mtime: Option<SetTime>,
    ) -> Result<(), OriginError> {
        let (dir, name) = self.target(path)?;
        let times = timestamps(atime, mtime);
        rustix::fs::utimensat(&dir, name, &times, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| self.change_error(path, e))
    }

    /// Refusals of a change, as a program expects them.
    fn change_error(&self, path: &str, e: Errno) -> OriginError {
        match e {
            Errno::EXIST => OriginError::Exists { path: path.into() },
            Errno::NOTEMPTY => OriginError::NotEmpty { path: path.into() },
            Errno::ISDIR => OriginError::IsADirectory { path: path.into() },
            Errno::NOTDIR => OriginError::NotADirectory { path: path.into() },
            e => self.refusal(path, e),
        }
    }
}

impl Draft {
    /// Writes `data` at `offset`; with `append`, an `O_APPEND` write at
    /// the draft's end, laid at the file's end at the commit.
    pub(crate) fn write_at(
        &mut self,
        offset: u64,
        data: &[u8],
        append: bool,
    ) -> Result<(), OriginError> {
        self.file
            .write_all_at(data, offset)
            .map_err(|e| io_error(&self.path, e))?;
        self.written.record(offset, data.len(), append);
        Ok(())
    }

    /// The temporary file holding the draft's bytes.
    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    /// The path as the caller gave it.
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// Sets the length (truncates or extends with zeros).
    pub(crate) fn set_len(&mut self, len: u64) -> Result<(), OriginError> {
        self.file
            .set_len(len)
            .map_err(|e| io_error(&self.path, e))?;
        self.written.truncated(len);
        Ok(())
    }

    /// Sets the permission bits the file will have.
    pub(crate) fn set_mode(&self, mode: u32) -> Result<(), OriginError> {
        rustix::fs::fchmod(&self.file, Mode::from_raw_mode(mode & 0o7777))
            .map_err(|e| io_error(&self.path, e.into()))
    }

    /// Gives a new file to its creator (a file the origin had keeps its
    /// owner): the group too unless the directory is set-group-ID, whose
    /// group new files take. Where this process may not give files away
    /// (it is not root), the file stays its own, as the files it made
    /// before the owners were kept.
    pub(crate) fn set_creator(&self, owner: Owner) -> Result<(), OriginError> {
        if !self.created {
            return Ok(());
        }
        let inherits = set_gid(&self.dir).map_err(|e| io_error(&self.path, e.into()))?;
        give_to_creator(&self.file, owner, inherits).map_err(|e| io_error(&self.path, e.into()))
    }

    /// Sets the owner and group the file will have (`None`: unchanged);
    /// refused (`EPERM`) unless this process may.
    pub(crate) fn set_owner(&self, uid: Option<u32>, gid: Option<u32>) -> Result<(), OriginError> {
        let (uid, gid) = (uid.map(uid_of), gid.map(gid_of));
        // `EPERM` as it is (chown's answer), not as a refused read.
        rustix::fs::fchown(&self.file, uid, gid).map_err(|e| io_error(&self.path, e.into()))
    }

    /// The permission bits and the owner the file will have.
    pub(crate) fn attrs(&self) -> Result<(u16, Owner), OriginError> {
        let st = rustix::fs::fstat(&self.file).map_err(|e| io_error(&self.path, e.into()))?;
        let owner = Owner {
            uid: st.st_uid,
            gid: st.st_gid,
        };
        Ok(((st.st_mode & 0o7777) as u16, owner))
    }

    /// Sets the times the file will have (the rename keeps them).
    pub(crate) fn set_times(
        &mut self,
        atime: Option<SetTime>,
        mtime: Option<SetTime>,
    ) -> Result<(), OriginError> {
        let times = timestamps(atime, mtime);
        rustix::fs::futimens(&self.file, &times).map_err(|e| io_error(&self.path, e.into()))?;
        self.times = Some((atime, mtime));
        Ok(())
    }

    /// Makes the draft the file (see the module's doc): its bytes handed
    /// to the origin's file system ([`flush`]), renamed over the target.
    /// Returns the new version. Published, not yet durable, as a local
    /// `close` is: an `fsync` makes it durable ([`LocalDir::sync`]). Two
    /// flushes to disk at every close cost 0.5 ms a file, more than the
    /// rest of a small file's write through the mount.
    ///
    /// With the new version comes its bytes if it is at most `up_to`
    /// bytes long: read back from the very file renamed into
    /// place (in the page cache still), then checked to be that version
    /// yet (a program writing the origin directory in place could have
    /// changed it meanwhile; `None` then). A writer's node takes them in
    /// as they are, with no read of the origin (`NodeHandle::take_in_bytes`).
    pub(crate) fn commit_keeping(
        mut self,
        up_to: u64,
    ) -> Result<(FileVersion, Option<Bytes>), OriginError> {
        let path = self.path.clone();
        let fail = |e: io::Error| io_error(&path, e);
        let dir = self.dir.try_clone().map_err(fail)?;
        let lock = DirLock::exclusive(&dir).map_err(fail)?;
        let whole = self.written.whole() || self.base_is_current();
        let (file, temp) = if whole {
            (self.file.try_clone().map_err(fail)?, self.temp.clone())
        } else {
            let file = self.rebase().map_err(fail)?;
            (file, self.rebased_temp.clone().unwrap_or_default())
        };
        flush(&file).map_err(fail)?;
        rustix::fs::renameat(&dir, temp.as_str(), &dir, self.name.as_str())
            .map_err(|e| fail(e.into()))?;
        if whole {
            self.committed = true;
        } else {
            self.rebased_temp = None;
        }
        drop(lock);
        // After the rename, whose change time is part of the version.
        let version = version_of(&path, &statx(&path, &file)?)?;
        if version.size > up_to {
            return Ok((version, None));
        }
        let mut bytes = vec![0; version.size as usize];
        file.read_exact_at(&mut bytes, 0).map_err(fail)?;
        let after = version_of(&path, &statx(&path, &file)?)?;
        let kept = (after == version).then(|| Bytes::from(bytes));
        Ok((version, kept))
    }

    /// Whether the target is still the version the draft was copied from
    /// (checked under the directory's lock, so no other commit is between).
    fn base_is_current(&self) -> bool {
        let Some(base) = &self.base else {
            return false;
        };
        statx_at(&self.path, &self.dir, &self.name)
            .and_then(|st| version_of(&self.path, &st))
            .ok()
            .is_some_and(|v| v.version == *base)
    }

    /// A new temporary file holding the target as it is now with this
    /// open's writes laid over it (`rebased_temp` names it).
    fn rebase(&mut self) -> io::Result<File> {
        let st = rustix::fs::fstat(&self.file)?;
        let mode = st.st_mode & 0o7777;
        let (out, temp) = create_temp(&self.dir, mode)?;
        self.rebased_temp = Some(temp);
        chown_if_allowed(&out, Some(st.st_uid), Some(st.st_gid))?;
        rustix::fs::fchmod(&out, Mode::from_raw_mode(mode))?;
        match rustix::fs::openat(
            &self.dir,
            self.name.as_str(),
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(current) => {
                io::copy(&mut File::from(current), &mut &out)?;
            }
            // Removed meanwhile: this open's writes over nothing.
            Err(Errno::NOENT) => {}
            Err(e) => return Err(e.into()),
        }
        self.written.lay_over(&self.file, &out)?;
        if let Some((atime, mtime)) = self.times {
            let times = timestamps(atime, mtime);
            rustix::fs::futimens(&out, &times)?;
        }
        Ok(out)
    }
}

impl Drop for Draft {
    fn drop(&mut self) {
        if !self.committed {
            let _ = rustix::fs::unlinkat(&self.dir, self.temp.as_str(), AtFlags::empty());
        }
        // A rebase that failed before its rename.
        if let Some(temp) = self.rebased_temp.take() {
            let _ = rustix::fs::unlinkat(&self.dir, temp.as_str(), AtFlags::empty());
        }
    }
}

/// Whether directory `dir` is set-group-ID (what is made in it takes its
/// group).
fn set_gid(dir: &OwnedFd) -> Result<bool, Errno> {
    Ok(rustix::fs::fstat(dir)?.st_mode & 0o2000 != 0)
}

/// Gives `fd` to `owner` (its group unless `inherits`, the directory's
/// group having been taken), where this process may.
fn give_to_creator(fd: &impl AsFd, owner: Owner, inherits: bool) -> Result<(), Errno> {
    let gid = (!inherits).then_some(owner.gid);
    chown_if_allowed(fd, Some(owner.uid), gid)
}

/// `fchown`, a refusal for lack of the right (`EPERM`: this process is not
/// root) taken as the answer: the file stays this process's.
fn chown_if_allowed(fd: &impl AsFd, uid: Option<u32>, gid: Option<u32>) -> Result<(), Errno> {
    match rustix::fs::fchown(fd, uid.map(uid_of), gid.map(gid_of)) {
        Err(Errno::PERM) | Ok(()) => Ok(()),
        Err(e) => Err(e),
    }
}

/// A user number as the system calls take it (`u32::MAX` would mean "no
/// change" there: it is refused before it gets here).
fn uid_of(raw: u32) -> rustix::fs::Uid {
    rustix::fs::Uid::from_raw_unchecked(raw)
}

/// A group number as the system calls take it.
fn gid_of(raw: u32) -> rustix::fs::Gid {
    rustix::fs::Gid::from_raw_unchecked(raw)
}

/// Creates a new temporary file in `dir` with `mode`.
fn create_temp(dir: &OwnedFd, mode: u32) -> io::Result<(File, String)> {
    for _ in 0..16 {
        let name = format!("{DRAFT_PREFIX}{:016x}{DRAFT_SUFFIX}", rand_u64());
        match rustix::fs::openat(
            dir,
            name.as_str(),
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        ) {
            Ok(fd) => {
                // The umask may have cleared bits the file had: set them.
                rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode))?;
                return Ok((File::from(fd), name));
            }
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(io::Error::other(
        "no free temporary file name after 16 tries",
    ))
}

/// A random number for temporary names (not a secret: names only need to
/// differ between writers): a process-wide count hashed under this
/// process's random keys.
fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static COUNT: AtomicU64 = AtomicU64::new(0);
    static KEYS: OnceLock<RandomState> = OnceLock::new();
    let mut h = KEYS.get_or_init(RandomState::new).build_hasher();
    h.write_u64(COUNT.fetch_add(1, Ordering::Relaxed));
    h.finish()
}

/// Times for `utimensat`: given, "now" (the kernel reads its clock), or
/// left as they are.
fn timestamps(atime: Option<SetTime>, mtime: Option<SetTime>) -> Timestamps {
    Timestamps {
        last_access: timespec(atime),
        last_modification: timespec(mtime),
    }
}

fn timespec(t: Option<SetTime>) -> Timespec {
    let omit = |nsec| Timespec {
        tv_sec: 0,
        tv_nsec: nsec,
    };
    match t {
        None => omit(rustix::fs::UTIME_OMIT),
        Some(SetTime::Now) => omit(rustix::fs::UTIME_NOW),
        Some(SetTime::At(t)) => match t.duration_since(SystemTime::UNIX_EPOCH) {
            Ok(d) => Timespec {
                tv_sec: d.as_secs() as i64,
                tv_nsec: i64::from(d.subsec_nanos()),
            },
            // Before 1970: not settable here; left as it is.
            Err(_) => omit(rustix::fs::UTIME_OMIT),
        },
    }
}
