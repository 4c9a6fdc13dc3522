//! Frames of the C2Cfs `exclusive`-mode messages ([`CommitMsg`]): opens
//! and commits asked of a file's manager, and their answers. Paths and
//! version strings carry their own length limits, checked before anything
//! is allocated.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::{BufMut, BytesMut};
use coopcache_core::c2cfs::exclusive::{CommitMsg, FirstBlock, MAX_PATH};
use coopcache_core::c2cfs::{Committed, Tcommit};

use super::{FrameError, Reader};
use crate::origin::{FileVersion, Owner, PathVersion};

/// Longest version string a frame carries (ETags are tens of bytes).
pub(super) const MAX_VERSION: usize = 1024;

pub(super) const K_OPEN: u8 = 64;
pub(super) const K_OPENED: u8 = 65;
pub(super) const K_COMMIT: u8 = 66;
pub(super) const K_COMMITTED: u8 = 67;
pub(super) const K_FORGET: u8 = 68;
pub(super) const K_FORGOT: u8 = 69;

/// The name of a commit frame kind, for errors.
pub(super) fn kind_name(kind: u8) -> Option<&'static str> {
    Some(match kind {
        K_OPEN => "open",
        K_OPENED => "opened",
        K_COMMIT => "commit",
        K_COMMITTED => "committed",
        K_FORGET => "forget",
        K_FORGOT => "forgot",
        _ => return None,
    })
}

/// Writes `msg`: its kind and fields. A path or version longer than its
/// limit is never sent by this node (the core refuses such paths, origins
/// give short versions); it is written whole and the receiver refuses it.
pub(super) fn put(buf: &mut BytesMut, msg: &CommitMsg<PathVersion>) {
    match msg {
        CommitMsg::Open { nonce, path, first } => {
            buf.put_u8(K_OPEN);
            buf.put_u64(*nonce);
            put_long(buf, path);
            buf.put_u8(u8::from(first.is_some()));
            if let Some(FirstBlock { tlocal }) = first {
                put_optional_tcommit(buf, tlocal);
            }
        }
        CommitMsg::Opened {
            nonce,
            answer,
            served,
        } => {
            buf.put_u8(K_OPENED);
            buf.put_u64(*nonce);
            buf.put_u8(u8::from(answer.is_some()));
            if let Some((tcommit, version)) = answer {
                put_tcommit(buf, tcommit);
                put_version(buf, version);
            }
            buf.put_u8(u8::from(*served));
        }
        CommitMsg::Commit { nonce, path, topen } => {
            buf.put_u8(K_COMMIT);
            buf.put_u64(*nonce);
            put_long(buf, path);
            put_optional_tcommit(buf, topen);
        }
        CommitMsg::Committed { nonce, answer } => {
            buf.put_u8(K_COMMITTED);
            buf.put_u64(*nonce);
            buf.put_u8(u8::from(answer.is_some()));
            if let Some(c) = answer {
                put_tcommit(buf, &c.tcommit);
                buf.put_u8(u8::from(c.valid));
            }
        }
        CommitMsg::Forget { nonce, path } => {
            buf.put_u8(K_FORGET);
            buf.put_u64(*nonce);
            put_long(buf, path);
        }
        CommitMsg::Forgot { nonce } => {
            buf.put_u8(K_FORGOT);
            buf.put_u64(*nonce);
        }
    }
}

/// A string with a `u16` length (paths and versions, longer than names).
pub(super) fn put_long(buf: &mut BytesMut, s: &str) {
    let s = &s.as_bytes()[..s.len().min(usize::from(u16::MAX))];
    buf.put_u16(s.len() as u16);
    buf.put_slice(s);
}

fn put_tcommit(buf: &mut BytesMut, t: &Tcommit) {
    buf.put_u64(t.epoch);
    buf.put_u64(t.serial);
}

/// A flag, then the value if there is one.
fn put_optional_tcommit(buf: &mut BytesMut, t: &Option<Tcommit>) {
    buf.put_u8(u8::from(t.is_some()));
    if let Some(t) = t {
        put_tcommit(buf, t);
    }
}

fn put_version(buf: &mut BytesMut, v: &PathVersion) {
    put_long(buf, &v.path);
    put_file_version(buf, &v.version);
}

/// A version without its path: size, version string, time, permission
/// bits, owner.
pub(super) fn put_file_version(buf: &mut BytesMut, v: &FileVersion) {
    buf.put_u64(v.size);
    put_long(buf, &v.version);
    match v.modified.and_then(|m| m.duration_since(UNIX_EPOCH).ok()) {
        Some(d) => {
            buf.put_u8(1);
            buf.put_u64(d.as_secs());
            buf.put_u32(d.subsec_nanos());
        }
        None => buf.put_u8(0),
    }
    buf.put_u16(v.perm);
    match v.owner {
        Some(o) => {
            buf.put_u8(1);
            buf.put_u32(o.uid);
            buf.put_u32(o.gid);
        }
        None => buf.put_u8(0),
    }
}

impl Reader {
    /// A commit message of frame kind `kind`.
    pub(super) fn commit(&mut self, kind: u8) -> Result<CommitMsg<PathVersion>, FrameError> {
        let nonce = self.u64()?;
        Ok(match kind {
            K_OPEN => CommitMsg::Open {
                nonce,
                path: self.long_str(MAX_PATH, "path")?,
                first: if self.flag("first")? {
                    Some(FirstBlock {
                        tlocal: self.optional_tcommit("tlocal")?,
                    })
                } else {
                    None
                },
            },
            K_OPENED => CommitMsg::Opened {
                nonce,
                answer: if self.flag("answer")? {
                    Some((self.tcommit()?, self.version()?))
                } else {
                    None
                },
                served: self.flag("served")?,
            },
            K_COMMIT => CommitMsg::Commit {
                nonce,
                path: self.long_str(MAX_PATH, "path")?,
                topen: self.optional_tcommit("topen")?,
            },
            K_COMMITTED => CommitMsg::Committed {
                nonce,
                answer: if self.flag("answer")? {
                    Some(Committed {
                        tcommit: self.tcommit()?,
                        valid: self.flag("valid")?,
                    })
                } else {
                    None
                },
            },
            K_FORGET => CommitMsg::Forget {
                nonce,
                path: self.long_str(MAX_PATH, "path")?,
            },
            K_FORGOT => CommitMsg::Forgot { nonce },
            _ => return Err(FrameError::UnknownKind(kind)),
        })
    }

    /// A string of at most `max` bytes behind a `u16` length.
    pub(super) fn long_str(&mut self, max: usize, what: &str) -> Result<Arc<str>, FrameError> {
        let n = usize::from(self.u16()?);
        if n > max {
            return Err(self.bad(format!("a {what} of {n} bytes, at most {max}")));
        }
        let b = self.take(n)?;
        std::str::from_utf8(&b)
            .map(Arc::from)
            .map_err(|_| self.bad(format!("a {what} that is not UTF-8")))
    }

    fn tcommit(&mut self) -> Result<Tcommit, FrameError> {
        Ok(Tcommit {
            epoch: self.u64()?,
            serial: self.u64()?,
        })
    }

    /// A flag named `what`, then a `Tcommit` if it is set.
    fn optional_tcommit(&mut self, what: &str) -> Result<Option<Tcommit>, FrameError> {
        match self.flag(what)? {
            true => Ok(Some(self.tcommit()?)),
            false => Ok(None),
        }
    }

    fn version(&mut self) -> Result<PathVersion, FrameError> {
        let path = self.long_str(MAX_PATH, "path")?;
        let version = self.file_version()?;
        Ok(PathVersion { path, version })
    }

    /// A version written by [`put_file_version`].
    pub(super) fn file_version(&mut self) -> Result<FileVersion, FrameError> {
        let size = self.u64()?;
        let version = self.long_str(MAX_VERSION, "version")?.to_string();
        let modified = if self.flag("modified")? {
            let secs = self.u64()?;
            let nanos = self.u32()?;
            if nanos >= 1_000_000_000 {
                return Err(self.bad(format!("{nanos} nanoseconds")));
            }
            // A time the system cannot hold is refused, not dropped: a
            // frame decodes to one value, which encodes to the same bytes.
            let at = UNIX_EPOCH.checked_add(Duration::new(secs, nanos));
            Some(at.ok_or_else(|| self.bad(format!("a time {secs} s after 1970")))?)
        } else {
            None::<SystemTime>
        };
        let perm = self.u16()?;
        if perm > 0o7777 {
            return Err(self.bad(format!("permission bits {perm:o}")));
        }
        let owner = if self.flag("owner")? {
            let (uid, gid) = (self.u32()?, self.u32()?);
            Some(Owner { uid, gid })
        } else {
            None
        };
        Ok(FileVersion {
            size,
            version,
            modified,
            perm,
            owner,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// One of every commit message.
    pub(crate) fn every_commit_msg() -> Vec<CommitMsg<PathVersion>> {
        let t = Tcommit {
            epoch: 0xfeed,
            serial: 42,
        };
        let path: Arc<str> = "dir/ä file".into();
        let file = FileVersion {
            size: 1 << 40,
            version: "\"9b2cf535f27731c974343645a3985328\"".into(),
            modified: Some(UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789)),
            perm: 0o4755,
            owner: Some(Owner {
                uid: 1000,
                gid: 100,
            }),
        };
        let version = PathVersion {
            path: path.clone(),
            version: file.clone(),
        };
        vec![
            CommitMsg::Open {
                nonce: 1,
                path: path.clone(),
                first: None,
            },
            CommitMsg::Open {
                nonce: 11,
                path: path.clone(),
                first: Some(FirstBlock { tlocal: None }),
            },
            CommitMsg::Open {
                nonce: 12,
                path: path.clone(),
                first: Some(FirstBlock { tlocal: Some(t) }),
            },
            CommitMsg::Opened {
                nonce: 2,
                answer: Some((t, version.clone())),
                served: true,
            },
            CommitMsg::Opened {
                nonce: 3,
                answer: Some((
                    t,
                    PathVersion {
                        path: path.clone(),
                        version: FileVersion {
                            modified: None,
                            ..file
                        },
                    },
                )),
                served: false,
            },
            CommitMsg::Opened {
                nonce: 4,
                answer: None,
                served: false,
            },
            CommitMsg::Commit {
                nonce: 5,
                path: path.clone(),
                topen: Some(t),
            },
            CommitMsg::Commit {
                nonce: 6,
                path: path.clone(),
                topen: None,
            },
            CommitMsg::Committed {
                nonce: 7,
                answer: Some(Committed {
                    tcommit: t,
                    valid: true,
                }),
            },
            CommitMsg::Committed {
                nonce: 8,
                answer: None,
            },
            CommitMsg::Forget { nonce: 9, path },
            CommitMsg::Forgot { nonce: 10 },
        ]
    }
}
