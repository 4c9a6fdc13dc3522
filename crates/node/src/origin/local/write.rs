//! Writes to a local directory origin, for the mount.
//!
//! Every change goes through a directory opened beneath the root (as
//! reads do) and a `*at` call on a single name, so no write leaves the
//! origin either. A file is written as a [`Draft`]: a temporary file beside
//! its target (`.coopcache-<random>.tmp`), renamed over the target when the
//! writer closes it. Others see the old file or the new one whole, never a
//! torn mix, and a writer that dies before its close leaves the old file in
//! place (and its temporary file behind, which listings hide).

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;
use std::time::SystemTime;

use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags, Timespec, Timestamps};
use rustix::io::Errno;

use super::{LocalDir, io_error, statx, version_of};
use crate::origin::{FileVersion, OriginError};

/// Prefix and suffix of the temporary files drafts are written in.
pub(crate) const DRAFT_PREFIX: &str = ".coopcache-";
pub(crate) const DRAFT_SUFFIX: &str = ".tmp";

/// Whether `name` is a draft's temporary file (hidden from listings).
pub(crate) fn is_draft(name: &str) -> bool {
    name.starts_with(DRAFT_PREFIX) && name.ends_with(DRAFT_SUFFIX)
}

/// A file being written: its bytes in a temporary file in the target's
/// directory until [`Draft::commit`] renames it over the target. Dropped
/// uncommitted, the temporary file is removed.
#[derive(Debug)]
pub struct Draft {
    file: File,
    dir: OwnedFd,
    temp: String,
    name: String,
    path: String,
    committed: bool,
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
                let fd =
                    rustix::fs::openat(&self.root, ".", flags | OFlags::CLOEXEC, Mode::empty())
                        .map_err(|e| self.refusal(path, e))?;
                Ok((fd, path))
            }
        }
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
        let mode = match &existing {
            Some(f) => {
                let st = statx(path, f)?;
                version_of(path, &st)?; // refuses a directory or a FIFO
                u32::from(st.stx_mode) & 0o7777
            }
            None => mode & 0o7777,
        };
        let (file, temp) = create_temp(&dir, mode).map_err(|e| io_error(path, e))?;
        let draft = Draft {
            file,
            dir,
            temp,
            name: name.to_owned(),
            path: path.to_owned(),
            committed: false,
        };
        if keep && let Some(mut from) = existing {
            let mut to = &draft.file;
            io::copy(&mut from, &mut to).map_err(|e| io_error(path, e))?;
        }
        Ok(draft)
    }

    /// Creates directory `path`.
    pub(crate) fn mkdir(&self, path: &str, mode: u32) -> Result<(), OriginError> {
        let (dir, name) = self.parent(path)?;
        rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(mode & 0o7777))
            .map_err(|e| self.change_error(path, e))
    }

    /// Removes the file or link at `path`.
    pub(crate) fn unlink(&self, path: &str) -> Result<(), OriginError> {
        let (dir, name) = self.parent(path)?;
        rustix::fs::unlinkat(&dir, name, AtFlags::empty()).map_err(|e| self.change_error(path, e))
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

    /// Creates a symbolic link at `path` holding `target`.
    pub(crate) fn symlink(&self, target: &str, path: &str) -> Result<(), OriginError> {
        let (dir, name) = self.parent(path)?;
        rustix::fs::symlinkat(target, &dir, name).map_err(|e| self.change_error(path, e))
    }

    /// Sets the permission bits of `path` (not following a final link).
    pub(crate) fn set_mode(&self, path: &str, mode: u32) -> Result<(), OriginError> {
        let (dir, name) = self.parent(path)?;
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
        atime: Option<SystemTime>,
        mtime: Option<SystemTime>,
    ) -> Result<(), OriginError> {
        let (dir, name) = self.parent(path)?;
        let times = Timestamps {
            last_access: timespec(atime),
            last_modification: timespec(mtime),
        };
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
    /// Writes `data` at `offset`.
    pub fn write_at(&self, offset: u64, data: &[u8]) -> Result<(), OriginError> {
        self.file
            .write_all_at(data, offset)
            .map_err(|e| io_error(&self.path, e))
    }

    /// Reads up to `len` bytes at `offset` (fewer at the end).
    pub fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>, OriginError> {
        let mut buf = vec![0; len];
        let mut got = 0;
        while got < len {
            match self.file.read_at(&mut buf[got..], offset + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_error(&self.path, e)),
            }
        }
        buf.truncate(got);
        Ok(buf)
    }

    /// Sets the length (truncates or extends with zeros).
    pub fn set_len(&self, len: u64) -> Result<(), OriginError> {
        self.file.set_len(len).map_err(|e| io_error(&self.path, e))
    }

    /// Sets the permission bits the file will have.
    pub fn set_mode(&self, mode: u32) -> Result<(), OriginError> {
        rustix::fs::fchmod(&self.file, Mode::from_raw_mode(mode & 0o7777))
            .map_err(|e| io_error(&self.path, e.into()))
    }

    /// Sets the times the file will have (the rename keeps them).
    pub fn set_times(
        &self,
        atime: Option<SystemTime>,
        mtime: Option<SystemTime>,
    ) -> Result<(), OriginError> {
        let times = Timestamps {
            last_access: timespec(atime),
            last_modification: timespec(mtime),
        };
        rustix::fs::futimens(&self.file, &times).map_err(|e| io_error(&self.path, e.into()))
    }

    /// The current length.
    pub fn len(&self) -> Result<u64, OriginError> {
        Ok(self
            .file
            .metadata()
            .map_err(|e| io_error(&self.path, e))?
            .len())
    }

    /// Whether nothing is written yet.
    pub fn is_empty(&self) -> Result<bool, OriginError> {
        Ok(self.len()? == 0)
    }

    /// Makes the draft the file: flushed to disk, renamed over the target,
    /// the directory flushed. Returns the new version.
    pub fn commit(mut self) -> Result<FileVersion, OriginError> {
        self.file.sync_all().map_err(|e| io_error(&self.path, e))?;
        rustix::fs::renameat(&self.dir, self.temp.as_str(), &self.dir, self.name.as_str())
            .map_err(|e| io_error(&self.path, e.into()))?;
        self.committed = true;
        rustix::fs::fsync(&self.dir).map_err(|e| io_error(&self.path, e.into()))?;
        // After the rename, whose change time is part of the version.
        version_of(&self.path, &statx(&self.path, &self.file)?)
    }
}

impl Drop for Draft {
    fn drop(&mut self) {
        if !self.committed {
            let _ = rustix::fs::unlinkat(&self.dir, self.temp.as_str(), AtFlags::empty());
        }
    }
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
/// differ between writers).
fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

fn timespec(t: Option<SystemTime>) -> Timespec {
    match t.and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok()) {
        Some(d) => Timespec {
            tv_sec: d.as_secs() as i64,
            tv_nsec: i64::from(d.subsec_nanos()),
        },
        None => Timespec {
            tv_sec: 0,
            tv_nsec: rustix::fs::UTIME_OMIT,
        },
    }
}
