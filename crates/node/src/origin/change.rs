//! Changing the origin, for the mount: drafts of files (written whole and
//! put in place at close), directories, links, removals, renames, modes
//! and times. A local directory is changed in place (`local/write.rs`), an
//! S3 bucket through `object_store` (`object_write.rs`,
//! `object_change.rs`); HTTP answers [`OriginError::ReadOnly`].

use std::sync::Arc;
use std::time::SystemTime;

use object_store::ObjectStore;
use object_store::path::Path;

use super::backend::Backend;
use super::draft::Draft;
use super::local::LocalDir;
use super::object_write::ObjectDraft;
use super::{Origin, OriginError, Owner, Store, check_path, object_change, prefixed};

/// A time to set on a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetTime {
    /// The kernel's clock at the change (`UTIME_NOW`: `touch` with no
    /// time), so no clock is read here.
    Now,
    /// This time.
    At(SystemTime),
}

/// Where a change of one path goes.
enum Target {
    Local(Arc<LocalDir>),
    Object {
        store: Arc<dyn ObjectStore>,
        /// The origin's key prefix.
        prefix: Path,
        /// The path's key.
        key: Path,
    },
}

impl Origin {
    /// Whether the origin can be changed through this crate (a local
    /// directory or S3; not HTTP).
    pub fn writable(&self) -> bool {
        match &self.store {
            Store::Local(_) => true,
            Store::Object { backend, .. } => *backend == Backend::S3,
        }
    }

    /// Whether the origin's directories exist apart from the files in
    /// them (a local directory's), rather than as key prefixes that exist
    /// while a key is under them (S3's): a write under a missing
    /// directory fails in the first, and succeeds in the second.
    pub fn has_directories(&self) -> bool {
        matches!(self.store, Store::Local(_))
    }

    /// Whether the origin keeps files' owners (a directory does; S3 and
    /// HTTP keep none).
    pub fn keeps_owners(&self) -> bool {
        matches!(self.store, Store::Local(_))
    }

    /// Where a change of `path` goes, counted as one change asked of the
    /// origin.
    fn target(&self, path: &str) -> Result<Target, OriginError> {
        let target = self.place(path)?;
        self.counts.change();
        Ok(target)
    }

    /// Where `path` is for a change of its owner, mode or times, which
    /// the root (`""`, the mount point) takes too: `None` for an object
    /// store's root, which always exists and keeps none of them.
    fn attributes_target(&self, path: &str) -> Result<Option<Target>, OriginError> {
        if !path.is_empty() {
            return self.target(path).map(Some);
        }
        self.counts.change();
        match &self.store {
            Store::Local(dir) => Ok(Some(Target::Local(dir.clone()))),
            Store::Object {
                backend: Backend::S3,
                ..
            } => Ok(None),
            Store::Object { .. } => Err(OriginError::ReadOnly {
                origin: self.description.clone(),
            }),
        }
    }

    /// Where `path` is, for a change (not counted: a rename's second path).
    fn place(&self, path: &str) -> Result<Target, OriginError> {
        let location = check_path(path)?;
        match &self.store {
            Store::Local(dir) => Ok(Target::Local(dir.clone())),
            Store::Object {
                store,
                prefix,
                backend: Backend::S3,
            } => Ok(Target::Object {
                store: store.clone(),
                prefix: prefix.clone(),
                key: prefixed(prefix, location),
            }),
            Store::Object { .. } => Err(OriginError::ReadOnly {
                origin: self.description.clone(),
            }),
        }
    }

    /// Runs a change of `path` in a local directory on the blocking pool.
    async fn local_change<T: Send + 'static>(
        path: &str,
        dir: Arc<LocalDir>,
        f: impl FnOnce(&LocalDir) -> Result<T, OriginError> + Send + 'static,
    ) -> Result<T, OriginError> {
        super::blocking(path.to_owned(), move || f(&dir)).await
    }

    /// Starts writing `path` (see [`Draft`]): a copy of its bytes if
    /// `keep`, else empty; `mode` for a new file (a local directory's).
    pub async fn draft(&self, path: &str, keep: bool, mode: u32) -> Result<Draft, OriginError> {
        let p = path.to_owned();
        match self.target(path)? {
            Target::Local(dir) => {
                let draft = Self::local_change(path, dir, move |d| d.draft(&p, keep, mode)).await;
                draft.map(|d| Draft::local(d, self.counts.clone()))
            }
            Target::Object { store, key, .. } => {
                self.pause().await;
                let copies = self.copies.clone();
                let draft = ObjectDraft::open(store, key, path, keep, copies).await;
                draft.map(|d| Draft::object(d, self.counts.clone()))
            }
        }
    }

    /// Creates directory `path`, owned by `creator` where the origin keeps
    /// owners and this process may give files away (it is root).
    pub async fn mkdir(
        &self,
        path: &str,
        mode: u32,
        creator: Option<Owner>,
    ) -> Result<(), OriginError> {
        let p = path.to_owned();
        match self.target(path)? {
            Target::Local(dir) => {
                Self::local_change(path, dir, move |d| d.mkdir(&p, mode, creator)).await
            }
            Target::Object { store, key, .. } => {
                object_change::mkdir(store.as_ref(), &key, path).await
            }
        }
    }

    /// Removes the file or link at `path`.
    pub async fn unlink(&self, path: &str) -> Result<(), OriginError> {
        let p = path.to_owned();
        match self.target(path)? {
            Target::Local(dir) => Self::local_change(path, dir, move |d| d.unlink(&p)).await,
            Target::Object { store, prefix, key } => {
                object_change::unlink(store.as_ref(), &prefix, &key, path).await
            }
        }
    }

    /// Flushes directory `path`'s entries to stable storage (`fsyncdir`);
    /// an object store's changes are durable once made, so there is
    /// nothing to do for one.
    pub async fn sync_dir(&self, path: &str) -> Result<(), OriginError> {
        // The root's path is empty, which no checked path is.
        if !path.is_empty() {
            check_path(path)?;
        }
        let p = path.to_owned();
        match &self.store {
            Store::Local(dir) => {
                Self::local_change(path, dir.clone(), move |d| d.sync_dir(&p)).await
            }
            Store::Object { .. } => Ok(()),
        }
    }

    /// Makes what was committed to the file at `path` durable (`fsync`):
    /// a directory origin flushes it and its directory to disk; an object
    /// store's puts are durable once made, so there is nothing to do.
    pub async fn sync(&self, path: &str) -> Result<(), OriginError> {
        check_path(path)?;
        let p = path.to_owned();
        match &self.store {
            Store::Local(dir) => Self::local_change(path, dir.clone(), move |d| d.sync(&p)).await,
            Store::Object { .. } => Ok(()),
        }
    }

    /// Removes the empty directory at `path`.
    pub async fn rmdir(&self, path: &str) -> Result<(), OriginError> {
        let p = path.to_owned();
        match self.target(path)? {
            Target::Local(dir) => Self::local_change(path, dir, move |d| d.rmdir(&p)).await,
            Target::Object { store, prefix, key } => {
                object_change::rmdir(store.as_ref(), &prefix, &key, path).await
            }
        }
    }

    /// Renames `from` to `to`, replacing `to` unless `no_replace`.
    pub async fn rename(&self, from: &str, to: &str, no_replace: bool) -> Result<(), OriginError> {
        let to_target = self.place(to)?;
        let (f, t) = (from.to_owned(), to.to_owned());
        match (self.target(from)?, to_target) {
            (Target::Local(dir), _) => {
                Self::local_change(from, dir, move |d| d.rename(&f, &t, no_replace)).await
            }
            (Target::Object { store, prefix, key }, Target::Object { key: to_key, .. }) => {
                let (origin, store) = (self.description.as_str(), store.as_ref());
                let (from, to) = ((&key, from), (&to_key, to));
                object_change::rename(store, &prefix, from, to, no_replace, origin).await
            }
            (Target::Object { .. }, Target::Local(_)) => Err(OriginError::ReadOnly {
                origin: self.description.clone(),
            }),
        }
    }

    /// Creates a symbolic link at `path` holding `target`, owned by
    /// `creator` as [`Origin::mkdir`] says (S3 has none:
    /// [`OriginError::Unsupported`]).
    pub async fn symlink(
        &self,
        target: &str,
        path: &str,
        creator: Option<Owner>,
    ) -> Result<(), OriginError> {
        let (t, p) = (target.to_owned(), path.to_owned());
        match self.target(path)? {
            Target::Local(dir) => {
                Self::local_change(path, dir, move |d| d.symlink(&t, &p, creator)).await
            }
            Target::Object { .. } => Err(OriginError::Unsupported {
                origin: self.description.clone(),
                what: "symbolic links".into(),
            }),
        }
    }

    /// Sets the permission bits of `path` (S3 keeps none: accepted, not
    /// kept, as `rclone mount` does).
    pub async fn set_mode(&self, path: &str, mode: u32) -> Result<(), OriginError> {
        let p = path.to_owned();
        match self.attributes_target(path)? {
            None => Ok(()),
            Some(Target::Local(dir)) => {
                Self::local_change(path, dir, move |d| d.set_mode(&p, mode)).await
            }
            Some(Target::Object { store, key, .. }) => {
                object_change::exists(store.as_ref(), &key, path).await
            }
        }
    }

    /// Sets the owner and group of `path` (`None`: unchanged), refused
    /// unless this process may (a directory origin: `EPERM` from the
    /// system); S3 keeps none ([`OriginError::Unsupported`]).
    pub async fn set_owner(
        &self,
        path: &str,
        uid: Option<u32>,
        gid: Option<u32>,
    ) -> Result<(), OriginError> {
        let p = path.to_owned();
        match self.attributes_target(path)? {
            Some(Target::Local(dir)) => {
                Self::local_change(path, dir, move |d| d.set_owner(&p, uid, gid)).await
            }
            None | Some(Target::Object { .. }) => Err(OriginError::Unsupported {
                origin: self.description.clone(),
                what: "owners".into(),
            }),
        }
    }

    /// Sets the access and modification times of `path` (`None`:
    /// unchanged; S3 keeps its own: accepted, not kept).
    pub async fn set_times(
        &self,
        path: &str,
        atime: Option<SetTime>,
        mtime: Option<SetTime>,
    ) -> Result<(), OriginError> {
        let p = path.to_owned();
        match self.attributes_target(path)? {
            None => Ok(()),
            Some(Target::Local(dir)) => {
                Self::local_change(path, dir, move |d| d.set_times(&p, atime, mtime)).await
            }
            Some(Target::Object { store, key, .. }) => {
                object_change::exists(store.as_ref(), &key, path).await
            }
        }
    }
}
