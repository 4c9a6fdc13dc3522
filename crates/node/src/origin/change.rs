//! Changing the origin, for the mount: drafts of files (written whole and
//! renamed into place at close), directories, links, removals, renames,
//! modes and times. Only a local directory can be changed so far; S3 and
//! HTTP answer [`OriginError::ReadOnly`].

use std::time::SystemTime;

use super::local::{Draft, LocalDir};
use super::{Origin, OriginError, Store, check_path};
use std::sync::Arc;

/// A time to set on a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetTime {
    /// The kernel's clock at the change (`UTIME_NOW`: `touch` with no
    /// time), so no clock is read here.
    Now,
    /// This time.
    At(SystemTime),
}

impl Origin {
    /// Whether the origin can be changed through this crate.
    pub fn writable(&self) -> bool {
        matches!(self.store, Store::Local(_))
    }

    fn local(&self, path: &str) -> Result<Arc<LocalDir>, OriginError> {
        check_path(path)?;
        match &self.store {
            Store::Local(dir) => Ok(dir.clone()),
            Store::Object { .. } => Err(OriginError::ReadOnly {
                origin: self.description.clone(),
            }),
        }
    }

    /// Runs a change of `path` on the blocking pool.
    async fn change<T: Send + 'static>(
        &self,
        path: &str,
        f: impl FnOnce(&LocalDir) -> Result<T, OriginError> + Send + 'static,
    ) -> Result<T, OriginError> {
        let dir = self.local(path)?;
        super::blocking(path.to_owned(), move || f(&dir)).await
    }

    /// Starts writing `path` (see [`Draft`]): a copy of its bytes if
    /// `keep`, else empty; `mode` for a new file.
    pub async fn draft(&self, path: &str, keep: bool, mode: u32) -> Result<Draft, OriginError> {
        let p = path.to_owned();
        self.change(path, move |d| d.draft(&p, keep, mode)).await
    }

    /// Creates directory `path`.
    pub async fn mkdir(&self, path: &str, mode: u32) -> Result<(), OriginError> {
        let p = path.to_owned();
        self.change(path, move |d| d.mkdir(&p, mode)).await
    }

    /// Removes the file or link at `path`.
    pub async fn unlink(&self, path: &str) -> Result<(), OriginError> {
        let p = path.to_owned();
        self.change(path, move |d| d.unlink(&p)).await
    }

    /// Removes the empty directory at `path`.
    pub async fn rmdir(&self, path: &str) -> Result<(), OriginError> {
        let p = path.to_owned();
        self.change(path, move |d| d.rmdir(&p)).await
    }

    /// Renames `from` to `to`, replacing `to` unless `no_replace`.
    pub async fn rename(&self, from: &str, to: &str, no_replace: bool) -> Result<(), OriginError> {
        check_path(to)?;
        let (f, t) = (from.to_owned(), to.to_owned());
        self.change(from, move |d| d.rename(&f, &t, no_replace))
            .await
    }

    /// Creates a symbolic link at `path` holding `target`.
    pub async fn symlink(&self, target: &str, path: &str) -> Result<(), OriginError> {
        let (t, p) = (target.to_owned(), path.to_owned());
        self.change(path, move |d| d.symlink(&t, &p)).await
    }

    /// Sets the permission bits of `path`.
    pub async fn set_mode(&self, path: &str, mode: u32) -> Result<(), OriginError> {
        let p = path.to_owned();
        self.change(path, move |d| d.set_mode(&p, mode)).await
    }

    /// Sets the access and modification times of `path` (`None`: unchanged).
    pub async fn set_times(
        &self,
        path: &str,
        atime: Option<SetTime>,
        mtime: Option<SetTime>,
    ) -> Result<(), OriginError> {
        let p = path.to_owned();
        self.change(path, move |d| d.set_times(&p, atime, mtime))
            .await
    }
}
