//! A short note kept with a file of a directory origin, in its extended
//! attribute `user.coopcache.note`: the S3 endpoint keeps an object's MD5,
//! content type and user metadata there. A rename of a new version over
//! the file takes the note away with the old inode; a file system without
//! user attributes keeps no note, which readers treat as none.
//!
//! The note begins with the inode, modification time and size the file
//! had when it was written, and is given back only while the file still
//! has them: bytes rewritten in place by another program (which moves the
//! modification time) leave the note unread. Not the file's whole version:
//! writing the attribute moves its change time, which the version holds.

use super::{LocalDir, io_error};
use crate::origin::OriginError;
use rustix::fs::{OFlags, XattrFlags};
use rustix::io::Errno;

/// The attribute's name.
const NAME: &str = "user.coopcache.note";

/// Largest note kept (ext4 holds about 4 KiB of attributes in an inode).
pub(crate) const MAX_NOTE: usize = 3 << 10;

/// Errors that mean "this file system keeps no such note".
fn none_kept(e: Errno) -> bool {
    matches!(
        e,
        Errno::NODATA | Errno::NOTSUP | Errno::RANGE | Errno::PERM | Errno::ACCESS
    )
}

/// What a note is valid for: the file's inode, modification time and
/// size, as the note's first line.
fn stamp(fd: &impl std::os::fd::AsFd) -> Result<String, Errno> {
    let st = rustix::fs::fstat(fd)?;
    Ok(format!(
        "{} {}.{:09} {}\n",
        st.st_ino, st.st_mtime, st.st_mtime_nsec, st.st_size
    ))
}

impl LocalDir {
    /// `path`'s note, if it has one.
    pub(crate) fn note(&self, path: &str) -> Result<Option<Vec<u8>>, OriginError> {
        let fd = self
            .resolve(path, OFlags::RDONLY | OFlags::NONBLOCK)
            .map_err(|e| self.refusal(path, e))?;
        let mut buf = vec![0u8; MAX_NOTE + 64];
        match rustix::fs::fgetxattr(&fd, NAME, &mut buf[..]) {
            Ok(n) => {
                buf.truncate(n);
                let now = stamp(&fd).map_err(|e| io_error(path, e.into()))?;
                Ok(buf.strip_prefix(now.as_bytes()).map(<[u8]>::to_vec))
            }
            Err(e) if none_kept(e) => Ok(None),
            Err(e) => Err(io_error(path, e.into())),
        }
    }

    /// Keeps `note` with `path` (at most [`MAX_NOTE`] bytes); `false` if
    /// the file system keeps no notes.
    pub(crate) fn set_note(&self, path: &str, note: &[u8]) -> Result<bool, OriginError> {
        if note.len() > MAX_NOTE {
            return Ok(false);
        }
        let fd = self
            .resolve(path, OFlags::RDONLY | OFlags::NONBLOCK)
            .map_err(|e| self.refusal(path, e))?;
        let mut value = stamp(&fd)
            .map_err(|e| io_error(path, e.into()))?
            .into_bytes();
        value.extend_from_slice(note);
        match rustix::fs::fsetxattr(&fd, NAME, &value, XattrFlags::empty()) {
            Ok(()) => Ok(true),
            Err(e) if none_kept(e) => Ok(false),
            Err(e) => Err(io_error(path, e.into())),
        }
    }
}
