//! Frames of directory listings kept by their managers
//! ([`ListMsg`]): a listing asked, answered, a change told, and its answer.
//! No frame names its sender (the link does). Every length is checked
//! before anything is allocated: paths against `MAX_PATH`, names against
//! `NAME_MAX`, a listing's count against the bytes left in the frame (an
//! entry takes at least [`MIN_ENTRY`] bytes), which the frame's own limit
//! bounds.

use bytes::{BufMut, BytesMut};
use coopcache_core::c2cfs::exclusive::MAX_PATH;
use coopcache_core::c2cfs::listings::ListMsg;

use super::commit::{put_file_version, put_long};
use super::{FrameError, Reader};
use crate::listing::DirListing;
use crate::origin::{DirEntry, EntryKind};

pub(super) const K_LIST: u8 = 82;
pub(super) const K_LISTED: u8 = 83;
pub(super) const K_CHANGED: u8 = 84;
pub(super) const K_NOTED: u8 = 85;

/// Longest entry name (a path part), as POSIX's `NAME_MAX`.
pub const NAME_MAX: usize = 255;

/// Fewest bytes an entry takes: a name's length (2), one byte of name, a
/// kind (1), a version flag (1).
const MIN_ENTRY: usize = 5;

/// The name of a listing frame kind, for errors.
pub(super) fn kind_name(kind: u8) -> Option<&'static str> {
    Some(match kind {
        K_LIST => "list",
        K_LISTED => "listed",
        K_CHANGED => "changed",
        K_NOTED => "noted",
        _ => return None,
    })
}

/// Writes `msg`: its kind and fields.
pub(super) fn put(buf: &mut BytesMut, msg: &ListMsg<DirListing>) {
    match msg {
        ListMsg::List { nonce, dir } => {
            buf.put_u8(K_LIST);
            buf.put_u64(*nonce);
            put_long(buf, dir);
        }
        ListMsg::Listed { nonce, listing } => {
            buf.put_u8(K_LISTED);
            buf.put_u64(*nonce);
            buf.put_u8(u8::from(listing.is_some()));
            if let Some(l) = listing {
                put_listing(buf, l);
            }
        }
        ListMsg::Changed {
            nonce,
            dir,
            subtree,
        } => {
            buf.put_u8(K_CHANGED);
            buf.put_u64(*nonce);
            put_long(buf, dir);
            buf.put_u8(u8::from(*subtree));
        }
        ListMsg::Noted { nonce, managed } => {
            buf.put_u8(K_NOTED);
            buf.put_u64(*nonce);
            buf.put_u8(u8::from(*managed));
        }
    }
}

/// Writes a listing: its directory, its count, then each entry's name,
/// kind and version if it has one.
pub(crate) fn put_listing(buf: &mut BytesMut, l: &DirListing) {
    put_long(buf, l.dir());
    buf.put_u32(l.entries().len() as u32);
    for e in l.entries() {
        put_long(buf, &e.name);
        buf.put_u8(match e.kind {
            EntryKind::File => 0,
            EntryKind::Dir => 1,
            EntryKind::Symlink => 2,
        });
        buf.put_u8(u8::from(e.version.is_some()));
        if let Some(v) = &e.version {
            put_file_version(buf, v);
        }
    }
}

impl Reader {
    /// A listing message of frame kind `kind`.
    pub(super) fn list(&mut self, kind: u8) -> Result<ListMsg<DirListing>, FrameError> {
        let nonce = self.u64()?;
        Ok(match kind {
            K_LIST => ListMsg::List {
                nonce,
                dir: self.long_str(MAX_PATH, "directory")?,
            },
            K_LISTED => ListMsg::Listed {
                nonce,
                listing: match self.flag("listing")? {
                    true => Some(self.listing()?),
                    false => None,
                },
            },
            K_CHANGED => ListMsg::Changed {
                nonce,
                dir: self.long_str(MAX_PATH, "directory")?,
                subtree: self.flag("subtree")?,
            },
            _ => ListMsg::Noted {
                nonce,
                managed: self.flag("managed")?,
            },
        })
    }

    fn listing(&mut self) -> Result<DirListing, FrameError> {
        let dir = self.long_str(MAX_PATH, "directory")?;
        let n = self.u32()? as usize;
        let room = self.remaining() / MIN_ENTRY;
        if n > room {
            return Err(self.bad(format!("{n} entries in {room} entries' bytes")));
        }
        let mut entries = Vec::with_capacity(n);
        for _ in 0..n {
            let name = self.long_str(NAME_MAX, "name")?;
            if name.is_empty() || name.contains('/') || *name == *"." || *name == *".." {
                return Err(self.bad(format!("an entry named {name:?}")));
            }
            let kind = match self.u8()? {
                0 => EntryKind::File,
                1 => EntryKind::Dir,
                2 => EntryKind::Symlink,
                other => return Err(self.bad(format!("an entry of kind {other}"))),
            };
            let version = match self.flag("version")? {
                true => Some(self.file_version()?),
                false => None,
            };
            entries.push(DirEntry {
                name: name.to_string(),
                kind,
                version,
            });
        }
        Ok(DirListing::new(dir, entries))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::origin::FileVersion;

    /// One of each listing message.
    pub(crate) fn every_list_msg() -> Vec<ListMsg<DirListing>> {
        let version = FileVersion {
            size: 17,
            version: "etag-1".into(),
            modified: None,
            perm: 0o644,
            owner: None,
        };
        let entries = vec![
            DirEntry {
                name: "a.bin".into(),
                kind: EntryKind::File,
                version: Some(version),
            },
            DirEntry {
                name: "sub".into(),
                kind: EntryKind::Dir,
                version: None,
            },
            DirEntry {
                name: "link".into(),
                kind: EntryKind::Symlink,
                version: None,
            },
        ];
        vec![
            ListMsg::List {
                nonce: 1,
                dir: "set/train".into(),
            },
            ListMsg::Listed {
                nonce: 2,
                listing: Some(DirListing::new("set/train".into(), entries)),
            },
            ListMsg::Listed {
                nonce: 3,
                listing: Some(DirListing::new("".into(), Vec::new())),
            },
            ListMsg::Listed {
                nonce: 4,
                listing: None,
            },
            ListMsg::Changed {
                nonce: 5,
                dir: "set".into(),
                subtree: true,
            },
            ListMsg::Noted {
                nonce: 6,
                managed: false,
            },
        ]
    }
}
