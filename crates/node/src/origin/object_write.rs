//! Writes to an S3 origin, for the mount.
//!
//! **Drafts.** A file being written is spooled to an unlinked temporary
//! file on the local disk (`$TMPDIR`), never held in memory, and put to
//! the store when its writer closes it (write-through on close, C2Cfs
//! section 3): one `PUT` up to [`SINGLE_PUT_MAX`], a multipart upload of
//! [`PART_SIZE`] parts above (at most [`PARTS_IN_FLIGHT`] parts in memory).
//! Others see the old object or the new one whole, never a torn mix; a
//! writer that dies before its close leaves the old object and, its spool
//! being unlinked, nothing behind.
//!
//! **Concurrent writers merge as the local directory's do** (see
//! `local/write.rs`): a draft of an existing object records the ranges its
//! open wrote, and its commit lays them over the object *as it is then*.
//! S3 has no lock, so the commit is optimistic instead: the `PUT` carries
//! `If-Match` with the ETag it merged over (`If-None-Match: *` for an
//! object that did not exist), and a commit that lost a race merges again
//! over the winner. Multipart uploads carry no condition in `object_store`,
//! so for a merge over 8 MiB a race within the upload is won by the later
//! close, whole. A draft that truncated or created the file replaces it
//! whole, as on a disk.
//!
//! **Directories** are prefixes. `mkdir` puts an empty marker object
//! ([`DIR_MARKER`], hidden from listings) so that an empty directory
//! exists, and removing a directory's last file leaves a marker in its
//! place, so a directory lasts until `rmdir` as on a disk. Renaming a file
//! is a copy and a delete (both names exist in between); renaming a
//! directory is refused with [`OriginError::CrossDevice`], and `mv` copies
//! it, as across file systems. S3 keeps no modes, times or links: mode and
//! time changes are accepted and not kept (as `rclone mount` does), a
//! symbolic link is refused.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, PutMode, PutOptions, PutPayload, UpdateVersion, WriteMultipart};

use super::copies::Copies;
use super::counts::Counts;
use super::written::Written;
use super::{FileVersion, OriginError};

/// Name of the empty object that keeps an empty directory in existence.
pub(crate) const DIR_MARKER: &str = ".coopcache-dir";

/// Largest draft put in one request (read into memory whole for it).
pub(crate) const SINGLE_PUT_MAX: u64 = 8 << 20;

/// Part size of a multipart upload.
const PART_SIZE: usize = 8 << 20;

/// Parts of one upload in flight at once: memory held by an upload is at
/// most this many parts.
const PARTS_IN_FLIGHT: usize = 2;

/// Merges retried when other commits keep winning the race.
const COMMIT_ATTEMPTS: usize = 16;

/// A file being written to an object store: its bytes in a spool file
/// until [`ObjectDraft::commit`] puts them.
#[derive(Debug)]
pub(crate) struct ObjectDraft {
    store: Arc<dyn ObjectStore>,
    /// The object's key (with the origin's prefix).
    key: Path,
    /// The path as the caller gave it.
    path: String,
    spool: File,
    /// ETag of the object the spool copied, if it existed.
    base: Option<String>,
    written: Written,
    /// Where the committed bytes are kept for the writer's take-in.
    copies: Arc<Copies>,
}

fn spool_error(path: &str, source: io::Error) -> OriginError {
    OriginError::Spool {
        path: path.into(),
        source,
    }
}

/// Whether anything is stored under `key/` (a directory).
async fn has_children(
    store: &dyn ObjectStore,
    key: &Path,
    path: &str,
) -> Result<bool, OriginError> {
    match store.list(Some(key)).next().await {
        Some(Ok(_)) => Ok(true),
        Some(Err(e)) => Err(OriginError::from_store(path, e)),
        None => Ok(false),
    }
}

/// Copies the object at `key` into `out` from offset 0; returns its ETag.
async fn download(
    store: &dyn ObjectStore,
    key: &Path,
    path: &str,
    out: &File,
) -> Result<Option<String>, OriginError> {
    let fail = |e| OriginError::from_store(path, e);
    let got = store.get(key).await.map_err(fail)?;
    let e_tag = got.meta.e_tag.clone();
    let mut stream = got.into_stream();
    let mut at = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(fail)?;
        out.write_all_at(&chunk, at)
            .map_err(|e| spool_error(path, e))?;
        at += chunk.len() as u64;
    }
    Ok(e_tag)
}

impl ObjectDraft {
    /// Starts writing `path` at `key`: empty if `keep` is false or the
    /// object does not exist, else a copy of its current bytes.
    pub(crate) async fn open(
        store: Arc<dyn ObjectStore>,
        key: Path,
        path: &str,
        keep: bool,
        copies: Arc<Copies>,
    ) -> Result<ObjectDraft, OriginError> {
        let exists = match store.head(&key).await {
            Ok(_) => true,
            Err(object_store::Error::NotFound { .. }) => {
                if has_children(store.as_ref(), &key, path).await? {
                    return Err(OriginError::IsADirectory { path: path.into() });
                }
                false
            }
            Err(e) => return Err(OriginError::from_store(path, e)),
        };
        let spool = tempfile::tempfile().map_err(|e| spool_error(path, e))?;
        let mut base = None;
        if keep && exists {
            base = download(store.as_ref(), &key, path, &spool).await?;
        }
        Ok(ObjectDraft {
            store,
            key,
            path: path.to_owned(),
            spool,
            base,
            written: Written::new(!keep || !exists),
            copies,
        })
    }

    /// Writes `data` at `offset`; with `append`, an `O_APPEND` write at
    /// the draft's end, laid at the file's end at the commit.
    pub(crate) fn write_at(
        &mut self,
        offset: u64,
        data: &[u8],
        append: bool,
    ) -> Result<(), OriginError> {
        self.spool
            .write_all_at(data, offset)
            .map_err(|e| spool_error(&self.path, e))?;
        self.written.record(offset, data.len(), append);
        Ok(())
    }

    /// The path as the caller gave it.
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// The spool file (reads, length and times are the same as a local
    /// draft's).
    pub(crate) fn file(&self) -> &File {
        &self.spool
    }

    /// Sets the length (truncates or extends with zeros).
    pub(crate) fn set_len(&mut self, len: u64) -> Result<(), OriginError> {
        self.spool
            .set_len(len)
            .map_err(|e| spool_error(&self.path, e))?;
        self.written.truncated(len);
        Ok(())
    }

    /// Puts the draft (see the module's doc) and returns the new version.
    pub(crate) async fn commit(self, counts: &Counts) -> Result<FileVersion, OriginError> {
        let mut base = self.base.clone();
        for _ in 0..COMMIT_ATTEMPTS {
            let (merged, mode) = if self.written.whole() {
                (None, PutMode::Overwrite)
            } else {
                self.merge(&mut base).await?
            };
            let body = merged.as_ref().unwrap_or(&self.spool);
            match self.upload(body, mode, counts).await {
                Ok(version) => {
                    // What was put is kept for the writer's take-in.
                    let body = merged.map_or_else(|| self.spool.try_clone(), Ok);
                    if let Ok(body) = body {
                        self.copies.keep(&self.path, &version.version, body);
                    }
                    return Ok(version);
                }
                // Another commit came between the merge and the put.
                Err(OriginError::Changed { .. } | OriginError::Exists { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(OriginError::Changed {
            path: self.path.clone(),
        })
    }

    /// What to put for a draft of ranges: the spool itself if the object
    /// is still the one it copied, else a new spool with the object as it
    /// is now and this open's ranges laid over it. `base` becomes the
    /// ETag merged over; the mode makes the put fail if it changes again.
    async fn merge(
        &self,
        base: &mut Option<String>,
    ) -> Result<(Option<File>, PutMode), OriginError> {
        let path = self.path.as_str();
        let current = match self.store.head(&self.key).await {
            Ok(meta) => meta.e_tag,
            Err(object_store::Error::NotFound { .. }) => {
                let out = tempfile::tempfile().map_err(|e| spool_error(path, e))?;
                self.written
                    .lay_over(&self.spool, &out)
                    .map_err(|e| spool_error(path, e))?;
                *base = None;
                return Ok((Some(out), PutMode::Create));
            }
            Err(e) => return Err(OriginError::from_store(path, e)),
        };
        let update = |e_tag: Option<String>| {
            PutMode::Update(UpdateVersion {
                e_tag,
                version: None,
            })
        };
        if current.is_some() && current == *base {
            return Ok((None, update(current)));
        }
        let out = tempfile::tempfile().map_err(|e| spool_error(path, e))?;
        let e_tag = download(self.store.as_ref(), &self.key, path, &out).await?;
        self.written
            .lay_over(&self.spool, &out)
            .map_err(|e| spool_error(path, e))?;
        *base = e_tag.clone();
        Ok((Some(out), update(e_tag)))
    }

    /// Puts `body` under the draft's key: one request up to
    /// [`SINGLE_PUT_MAX`] (with `mode`), a multipart upload above.
    async fn upload(
        &self,
        body: &File,
        mode: PutMode,
        counts: &Counts,
    ) -> Result<FileVersion, OriginError> {
        let path = self.path.as_str();
        let fail = |e| OriginError::from_store(path, e);
        let io = |e| spool_error(path, e);
        let size = body.metadata().map_err(io)?.len();
        let result = if size <= SINGLE_PUT_MAX {
            let mut all = vec![0; size as usize];
            body.read_exact_at(&mut all, 0).map_err(io)?;
            let opts = PutOptions {
                mode,
                ..PutOptions::default()
            };
            counts.write(all.len());
            let put = self.store.put_opts(&self.key, PutPayload::from(all), opts);
            put.await.map_err(fail)?
        } else {
            let upload = self.store.put_multipart(&self.key).await.map_err(fail)?;
            let mut parts = WriteMultipart::new_with_chunk_size(upload, PART_SIZE);
            let mut at = 0u64;
            while at < size {
                let n = (size - at).min(PART_SIZE as u64) as usize;
                let mut part = vec![0; n];
                let step = match body.read_exact_at(&mut part, at) {
                    Err(e) => Err(io(e)),
                    Ok(()) => parts.wait_for_capacity(PARTS_IN_FLIGHT).await.map_err(fail),
                };
                if let Err(e) = step {
                    let _ = parts.abort().await;
                    return Err(e);
                }
                counts.write(part.len());
                parts.put(Bytes::from(part));
                at += n as u64;
            }
            parts.finish().await.map_err(fail)?
        };
        let version = match result.e_tag {
            Some(e_tag) => e_tag,
            None => {
                let meta = self.store.head(&self.key).await.map_err(fail)?;
                meta.e_tag.unwrap_or_default()
            }
        };
        Ok(FileVersion {
            size,
            version,
            modified: None,
            perm: 0o644,
            owner: None,
        })
    }
}
