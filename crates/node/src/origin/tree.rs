//! The origin's namespace, for the mount: what a path is (file,
//! directory, symbolic link), what a directory holds, where a link points.
//!
//! Paths are checked as for reads ([`check_path`]),
//! except that the empty path names the origin's root. Entries that are
//! neither files, directories nor links (FIFOs, devices, sockets), and
//! names no checked path can spell (control characters, backslashes,
//! percent-escapes of `.`/`..`/`/`, names that are not UTF-8), are left out
//! of listings and are not found by name.

use std::time::SystemTime;

use futures::StreamExt;
use object_store::path::Path;

use super::{Origin, OriginError, Store, backend::Backend, check_path, prefixed};

/// Entries a listing may hold; a larger directory is refused rather than
/// held in memory whole.
pub const MAX_LIST: usize = 100_000;

/// What a path in the origin is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory (for S3, a key prefix with something under it).
    Dir,
    /// A symbolic link (local directories only).
    Symlink,
}

/// A path's attributes, as the origin gives them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// File, directory or link.
    pub kind: EntryKind,
    /// Bytes (a link: its target's length; a directory: as the origin says).
    pub size: u64,
    /// Permission bits (`0o644`); S3 and HTTP report `0o644` and `0o755`.
    pub perm: u16,
    /// Last modification, when the origin says.
    pub modified: Option<SystemTime>,
    /// What a local directory also says (its `statx`); `None` for S3 and
    /// HTTP, which keep no access or change time and no link count.
    pub posix: Option<PosixAttrs>,
}

/// The attributes only a local file system keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PosixAttrs {
    /// Last access.
    pub accessed: Option<SystemTime>,
    /// Last change of the data or the attributes (`ctime`).
    pub changed: Option<SystemTime>,
    /// Hard links (a directory: 2 plus its subdirectories).
    pub nlink: u32,
    /// Who owns it.
    pub owner: Owner,
}

/// A file's owner and group, as numbers (a directory origin keeps them;
/// S3 and HTTP keep none, and a mount reports its own user for them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Owner {
    /// The owning user.
    pub uid: u32,
    /// The owning group.
    pub gid: u32,
}

/// One name in a directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    /// The name (one path part).
    pub name: String,
    /// What it is.
    pub kind: EntryKind,
    /// A file's version as the listing gave it, where it gives one: an
    /// object store lists each object's size, ETag and time, the answer a
    /// stat (a HEAD) would give, so a caller listing many files need not
    /// stat each. The time is the listing's, to the millisecond where a
    /// HEAD's is to the second (as S3's listings and HEADs differ). `None`
    /// for an object without an ETag (its version would be made of the
    /// time, which the two give differently), for a local directory (a
    /// stat there is a system call) and for directories.
    pub version: Option<super::FileVersion>,
}

/// The origin's path for `dir/name`, `name` alone at the root.
pub fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// Whether `name` is a part a checked path may hold (and not the marker
/// object that keeps an empty S3 directory).
fn listable(name: &str) -> bool {
    check_path(name).is_ok() && name != super::object_write::DIR_MARKER
}

impl Origin {
    /// What `path` is (`""` is the root). A symbolic link is reported as
    /// itself, not followed.
    pub async fn entry(&self, path: &str) -> Result<Entry, OriginError> {
        if !path.is_empty() {
            check_path(path)?;
        }
        self.metadata_request().await;
        match &self.store {
            Store::Local(dir) => {
                let (dir, p) = (dir.clone(), path.to_owned());
                super::blocking(path.to_owned(), move || dir.entry(&p)).await
            }
            Store::Object {
                store,
                prefix,
                backend,
            } => {
                if path.is_empty() {
                    return Ok(dir_entry());
                }
                if path.rsplit('/').next() == Some(super::object_write::DIR_MARKER) {
                    return Err(OriginError::NotFound { path: path.into() });
                }
                let key = prefixed(prefix, check_path(path)?);
                match store.head(&key).await {
                    Ok(meta) => {
                        // The same rule as reads: a file whose changes
                        // cannot be seen is refused unless immutable.
                        super::FileVersion::from_meta(&meta, self.immutable).ok_or_else(|| {
                            OriginError::NoValidator {
                                path: path.to_owned(),
                            }
                        })?;
                        Ok(Entry {
                            kind: EntryKind::File,
                            size: meta.size,
                            perm: 0o644,
                            modified: Some(meta.last_modified.into()),
                            posix: None,
                        })
                    }
                    Err(object_store::Error::NotFound { .. }) if *backend == Backend::S3 => {
                        // A prefix with anything under it is a directory.
                        let mut under = store.list(Some(&key));
                        match under.next().await {
                            Some(Ok(_)) => Ok(dir_entry()),
                            Some(Err(e)) => Err(OriginError::from_store(path, e)),
                            None => Err(OriginError::NotFound { path: path.into() }),
                        }
                    }
                    Err(e) => Err(OriginError::from_store(path, e)),
                }
            }
        }
    }

    /// The names in directory `path` (`""` is the root), sorted, at most
    /// [`MAX_LIST`]. An HTTP origin cannot be listed: it reports its root
    /// empty, and its files are found by name.
    pub async fn list(&self, path: &str) -> Result<Vec<DirEntry>, OriginError> {
        if !path.is_empty() {
            check_path(path)?;
        }
        self.metadata_request().await;
        let mut out = match &self.store {
            Store::Local(dir) => {
                let (dir, p) = (dir.clone(), path.to_owned());
                super::blocking(path.to_owned(), move || dir.list(&p)).await?
            }
            Store::Object { backend, .. } if *backend == Backend::Http => Vec::new(),
            Store::Object { store, prefix, .. } => {
                let key = if path.is_empty() {
                    prefix.clone()
                } else {
                    prefixed(prefix, check_path(path)?)
                };
                let key = (!key.as_ref().is_empty()).then_some(key);
                let listing = store
                    .list_with_delimiter(key.as_ref())
                    .await
                    .map_err(|e| OriginError::from_store(path, e))?;
                let name = |p: &Path| p.filename().map(str::to_owned);
                let dirs = listing
                    .common_prefixes
                    .iter()
                    .filter_map(name)
                    .map(|name| DirEntry {
                        name,
                        kind: EntryKind::Dir,
                        version: None,
                    });
                let files = listing
                    .objects
                    .iter()
                    .filter_map(|o| Some((name(&o.location)?, o)))
                    .map(|(name, o)| DirEntry {
                        name,
                        kind: EntryKind::File,
                        version: o
                            .e_tag
                            .is_some()
                            .then(|| super::FileVersion::from_meta(o, self.immutable))
                            .flatten(),
                    });
                let all: Vec<DirEntry> = dirs.chain(files).filter(|e| listable(&e.name)).collect();
                if all.len() > MAX_LIST {
                    return Err(too_large(path));
                }
                all
            }
        };
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out.dedup_by(|a, b| a.name == b.name);
        Ok(out)
    }

    /// Where the symbolic link at `path` points, as written in it.
    pub async fn read_link(&self, path: &str) -> Result<String, OriginError> {
        check_path(path)?;
        match &self.store {
            Store::Local(dir) => {
                self.counts.metadata();
                let (dir, p) = (dir.clone(), path.to_owned());
                super::blocking(path.to_owned(), move || dir.read_link(&p)).await
            }
            Store::Object { .. } => Err(OriginError::NotALink { path: path.into() }),
        }
    }
}

fn dir_entry() -> Entry {
    Entry {
        kind: EntryKind::Dir,
        size: 0,
        perm: 0o755,
        modified: None,
        posix: None,
    }
}

pub(super) fn too_large(path: &str) -> OriginError {
    OriginError::TooLarge {
        path: path.into(),
        max: MAX_LIST,
    }
}
