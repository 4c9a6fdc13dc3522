//! Writes through the endpoint: an object's bytes go into a draft of the
//! origin's file (nothing visible until its commit, as a mount's writer),
//! the commit puts it in place, and the writer's node takes the new
//! version in (C2Cfs: a reader on any node is served from the writer).
//! Bodies are streamed in [`FLUSH`]-sized writes, never held whole.

use super::errors::{from_node, from_origin, internal};
use super::meta::ObjectMeta;
use super::names::{Target, bucket_path, target};
use super::read::{bucket_exists, no_bucket};
use crate::handle::NodeHandle;
pub(super) use crate::join::token::hex;
use crate::origin::{Draft, FileVersion, OriginError};
use bytes::{Bytes, BytesMut};
use futures::{Stream, StreamExt};
use md5::{Digest, Md5};
use s3s::{S3Result, s3_error};
use std::sync::Arc;

/// Bytes gathered from a body before one write into the draft: large
/// enough that the blocking pool's hand-off is amortised, small enough to
/// be no concern for the budget at the gateway's connection cap.
pub const FLUSH: usize = 256 << 10;

/// A committed object up to this size is taken into the node from the
/// bytes the commit read back (a directory origin's), as a mount's close
/// does; a larger one is read back block by block, so no put holds more
/// than this outside the budget.
const KEEP_WRITTEN: u64 = 1 << 20;

/// A file written by the endpoint is created with these permissions.
const FILE_MODE: u32 = 0o644;
/// So are the directories a key's path needs.
const DIR_MODE: u32 = 0o755;

/// What a commit produced.
pub(super) struct Written {
    /// The MD5 of the bytes, hex (S3's `ETag` of a single put).
    pub md5: String,
    pub version: Arc<FileVersion>,
}

/// A draft of `path` being filled, with the MD5 of what went in.
pub(super) struct Filling {
    draft: Option<Draft>,
    path: String,
    md5: Md5,
    pending: BytesMut,
    pub len: u64,
}

impl Filling {
    /// Starts a draft of `path`, making the directories its path needs.
    pub(super) async fn start(node: &NodeHandle, path: &str, exclusive: bool) -> S3Result<Filling> {
        let origin = node.origin();
        // S3 makes no bucket on a put. A directory origin's draft fails
        // without one (and `make_parents` then says so); an object store's
        // would not, so its bucket is looked for first.
        let bucket = path.split('/').next().unwrap_or_default();
        if !origin.has_directories() && !bucket_exists(node, bucket).await {
            return Err(no_bucket(bucket));
        }
        let draft = match origin.draft(path, false, FILE_MODE).await {
            Ok(d) => d,
            Err(e) if e.is_not_found() => {
                make_parents(node, path, exclusive).await?;
                origin
                    .draft(path, false, FILE_MODE)
                    .await
                    .map_err(from_origin)?
            }
            Err(e) => return Err(from_origin(e)),
        };
        Ok(Filling {
            draft: Some(draft),
            path: path.to_owned(),
            md5: Md5::new(),
            pending: BytesMut::new(),
            len: 0,
        })
    }

    /// Appends `data`, writing to the draft in [`FLUSH`]-sized pieces.
    pub(super) async fn push(&mut self, data: &[u8]) -> S3Result<()> {
        self.md5.update(data);
        self.len += data.len() as u64;
        self.pending.extend_from_slice(data);
        if self.pending.len() >= FLUSH {
            self.flush().await?;
        }
        Ok(())
    }

    /// Appends a whole body stream.
    pub(super) async fn push_stream<S, E>(&mut self, body: S) -> S3Result<()>
    where
        S: Stream<Item = Result<Bytes, E>>,
        E: std::fmt::Display,
    {
        let mut body = std::pin::pin!(body);
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| s3_error!(IncompleteBody, "reading the body: {e}"))?;
            self.push(&chunk).await?;
        }
        Ok(())
    }

    async fn flush(&mut self) -> S3Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let data = self.pending.split().freeze();
        let mut draft = self.draft.take().ok_or_else(|| internal("draft lost"))?;
        let (draft, r) = tokio::task::spawn_blocking(move || {
            let r = draft.append(&data);
            (draft, r)
        })
        .await
        .map_err(internal)?;
        self.draft = Some(draft);
        r.map(|_| ()).map_err(from_origin)
    }

    /// The MD5 of what went in, hex.
    pub(super) fn md5_hex(&self) -> String {
        hex(&self.md5.clone().finalize())
    }

    /// Commits the draft, keeps `meta` with it (its `ETag` `etag`, else
    /// the MD5 of what went in), and takes the new version into the
    /// node's memory.
    pub(super) async fn commit(
        mut self,
        node: &Arc<NodeHandle>,
        exclusive: bool,
        meta: ObjectMeta,
        etag: Option<String>,
    ) -> S3Result<Written> {
        self.flush().await?;
        let md5 = self.md5_hex();
        let draft = self.draft.take().ok_or_else(|| internal("draft lost"))?;
        let (version, bytes) = draft
            .commit_keeping(KEEP_WRITTEN)
            .await
            .map_err(from_origin)?;
        let etag = etag.unwrap_or_else(|| md5.clone());
        // Before the version goes anywhere: keeping the attributes moves
        // the file's change time, part of a directory origin's version.
        let kept = meta.keep(node, &self.path, &etag).await;
        let version = committed(node, &self.path, version, exclusive, kept).await?;
        node.keep_written(Arc::from(self.path.as_str()), version.clone(), bytes)
            .await;
        Ok(Written { md5, version })
    }
}

/// After a commit of `path`: in `exclusive` mode its manager learns the
/// new version before the put is answered (a reader on another node then
/// reads it); the node's version cache holds it either way.
async fn committed(
    node: &Arc<NodeHandle>,
    path: &str,
    version: FileVersion,
    exclusive: bool,
    changed_since: bool,
) -> S3Result<Arc<FileVersion>> {
    if exclusive {
        node.commit_exclusive(path, None).await;
    }
    match version.modified {
        Some(_) if !changed_since => Ok(node.committed(path, version)),
        // A put's answer carries no modification time, and a version
        // whose attributes were kept since has moved: asked again.
        _ => node.stat_fresh(path).await.map_err(from_node),
    }
}

/// Something `path` changed at the origin (removed): forgotten by this
/// node's version cache, and in `exclusive` mode by its manager.
pub(super) async fn changed(node: &NodeHandle, path: &str, exclusive: bool) {
    if exclusive {
        node.commit_exclusive(path, None).await;
    }
    node.forget_version(path);
}

/// `exclusive` mode: directory `dir` was made or removed at the origin
/// through this node (`NodeHandle::dir_made_or_removed`).
async fn dir_made_or_removed(node: &NodeHandle, dir: &str, exclusive: bool) {
    if exclusive {
        node.dir_made_or_removed(dir).await;
    }
}

/// Makes every missing directory above `path` (within its bucket, which
/// must exist: S3 creates no bucket on a put).
async fn make_parents(node: &NodeHandle, path: &str, exclusive: bool) -> S3Result<()> {
    let mut parts: Vec<&str> = path.split('/').collect();
    parts.pop();
    let bucket = parts.first().copied().unwrap_or_default();
    if !bucket_exists(node, bucket).await {
        return Err(no_bucket(bucket));
    }
    for i in 2..=parts.len() {
        let dir = parts[..i].join("/");
        match node.origin().mkdir(&dir, DIR_MODE, None).await {
            Ok(()) => dir_made_or_removed(node, &dir, exclusive).await,
            Err(OriginError::Exists { .. }) => {}
            Err(e) => return Err(from_origin(e)),
        }
    }
    Ok(())
}

/// `PutObject` of a key ending in `/`: the directory, made with its parents.
pub(super) async fn put_dir(
    node: &NodeHandle,
    bucket: &str,
    path: &str,
    exclusive: bool,
) -> S3Result<()> {
    if !bucket_exists(node, bucket).await {
        return Err(no_bucket(bucket));
    }
    make_parents(node, &format!("{path}/."), exclusive).await
}

/// `DeleteObject`: removes the file (or the empty directory of a key
/// ending in `/`), then the directories above it it leaves empty, so a
/// listing shows no key that was not put. A key that is not there is no
/// error (S3 answers 204 alike).
pub(super) async fn delete(
    node: &NodeHandle,
    bucket: &str,
    key: &str,
    exclusive: bool,
) -> S3Result<()> {
    let t = target(bucket, key)?;
    if !bucket_exists(node, bucket).await {
        return Err(no_bucket(bucket));
    }
    let origin = node.origin();
    let r = match &t {
        Target::File(p) => origin.unlink(p).await,
        Target::Dir(p) => origin.rmdir(p).await,
    };
    match r {
        Ok(()) => {}
        Err(e) if e.is_not_found() => return Ok(()),
        // A directory with keys under it stays (S3 deletes only the marker).
        Err(OriginError::NotEmpty { .. }) => return Ok(()),
        Err(OriginError::IsADirectory { .. }) => return Ok(()),
        Err(e) => return Err(from_origin(e)),
    }
    changed(node, t.path(), exclusive).await;
    if let Target::Dir(p) = &t {
        dir_made_or_removed(node, p, exclusive).await;
    }
    let mut dir = t.path();
    while let Some((parent, _)) = dir.rsplit_once('/') {
        if !parent.contains('/') {
            break; // the bucket stays
        }
        if origin.rmdir(parent).await.is_err() {
            break;
        }
        dir_made_or_removed(node, parent, exclusive).await;
        dir = parent;
    }
    Ok(())
}

/// `CreateBucket`: a top-level directory.
pub(super) async fn create_bucket(
    node: &NodeHandle,
    bucket: &str,
    exclusive: bool,
) -> S3Result<()> {
    let path = bucket_path(bucket)?;
    match node.origin().mkdir(path, DIR_MODE, None).await {
        Ok(()) => {
            dir_made_or_removed(node, path, exclusive).await;
            Ok(())
        }
        Err(OriginError::Exists { .. }) => Err(s3_error!(
            BucketAlreadyOwnedByYou,
            "bucket {bucket} already exists"
        )),
        Err(e) => Err(from_origin(e)),
    }
}

/// `DeleteBucket`: only an empty one, as S3.
pub(super) async fn delete_bucket(
    node: &NodeHandle,
    bucket: &str,
    exclusive: bool,
) -> S3Result<()> {
    let path = bucket_path(bucket)?;
    if !bucket_exists(node, bucket).await {
        return Err(no_bucket(bucket));
    }
    match node.origin().rmdir(path).await {
        Ok(()) => {
            dir_made_or_removed(node, path, exclusive).await;
            Ok(())
        }
        Err(OriginError::NotEmpty { .. }) => Err(s3_error!(
            BucketNotEmpty,
            "bucket {bucket} holds keys; delete them first"
        )),
        Err(e) if e.is_not_found() => Err(no_bucket(bucket)),
        Err(e) => Err(from_origin(e)),
    }
}
