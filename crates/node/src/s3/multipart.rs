//! Multipart uploads (what the AWS CLI, boto3 and rclone use for large
//! objects): parts are spooled to unlinked temporary files as they come,
//! in any order and in parallel; completing the upload writes them in
//! order into one draft of the origin's file and commits it as a put.
//!
//! Bounded: [`MAX_UPLOADS`] uploads in progress, S3's [`MAX_PARTS`] parts
//! each of at most [`MAX_PART`] bytes, [`MAX_SPOOLED`] bytes spooled by
//! all of them at once (`SlowDown` beyond: a node's temporary directory
//! is shared with everything else on it); an upload untouched for [`ABANDONED`] is dropped with its parts
//! (S3 keeps one until a lifecycle rule removes it; a cache must not keep
//! a client's leftovers on its disk for ever). Parts live on the spool's
//! disk, not in memory; an upload's state is lost with the daemon, as a
//! client that retries expects of a failed server.

use super::errors::internal;
use super::meta::ObjectMeta;
use super::write::{FLUSH, Filling, Written, hex};
use crate::handle::NodeHandle;
use bytes::Bytes;
use futures::{Stream, StreamExt};
use md5::{Digest, Md5};
use s3s::{S3Result, s3_error};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// Uploads in progress at once.
pub const MAX_UPLOADS: usize = 1024;
/// Parts of one upload (S3's limit).
pub const MAX_PARTS: i32 = 10_000;
/// Smallest part but the last (S3's limit): `EntityTooSmall` below.
pub const MIN_PART: u64 = 5 << 20;
/// Largest part (S3's limit): `EntityTooLarge` beyond.
pub const MAX_PART: u64 = 5 << 30;
/// Bytes the parts of every upload in progress may spool at once.
pub const MAX_SPOOLED: u64 = 64 << 30;
/// An upload with no call for this long is dropped.
pub const ABANDONED: Duration = Duration::from_secs(24 * 3600);

/// One part, spooled.
struct Part {
    file: Arc<std::fs::File>,
    /// Its bytes in the spool's count, given back when it is dropped.
    _share: SpoolShare,
    size: u64,
    md5: [u8; 16],
    modified: SystemTime,
}

/// An upload in progress.
struct Upload {
    bucket: String,
    key: String,
    path: String,
    /// The content type and user metadata the upload began with.
    meta: ObjectMeta,
    parts: BTreeMap<i32, Part>,
    touched: Instant,
    initiated: SystemTime,
}

/// A part as listed.
pub(super) struct PartInfo {
    pub number: i32,
    pub size: u64,
    pub etag: String,
    pub modified: SystemTime,
}

/// Bytes one part holds in the spool's count ([`Uploads::spooled`]).
struct SpoolShare {
    bytes: u64,
    total: Arc<AtomicU64>,
}

impl SpoolShare {
    /// Counts `n` more bytes, unless the spool would pass `max`.
    fn grow(&mut self, n: u64, max: u64) -> bool {
        let fits = self
            .total
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| {
                t.checked_add(n).filter(|&after| after <= max)
            })
            .is_ok();
        if fits {
            self.bytes += n;
        }
        fits
    }
}

impl Drop for SpoolShare {
    fn drop(&mut self) {
        self.total.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

/// The uploads in progress.
pub(super) struct Uploads {
    table: Mutex<HashMap<String, Upload>>,
    serial: AtomicU64,
    /// Bytes spooled by every part alive (and every part arriving).
    spooled: Arc<AtomicU64>,
    /// At most this many.
    max_spooled: u64,
}

impl Default for Uploads {
    fn default() -> Self {
        Uploads::with_max_spooled(MAX_SPOOLED)
    }
}

impl Uploads {
    fn with_max_spooled(max_spooled: u64) -> Self {
        Uploads {
            table: Mutex::default(),
            serial: AtomicU64::new(0),
            spooled: Arc::default(),
            max_spooled,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Upload>> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts an upload of `key` (origin path `path`); returns its id.
    pub(super) fn create(
        &self,
        bucket: &str,
        key: &str,
        path: &str,
        meta: ObjectMeta,
    ) -> S3Result<String> {
        let mut t = self.lock();
        let now = crate::clock::now();
        t.retain(|_, u| now.saturating_duration_since(u.touched) < ABANDONED);
        if t.len() >= MAX_UPLOADS {
            return Err(s3_error!(
                SlowDown,
                "{MAX_UPLOADS} multipart uploads are in progress on this node; complete or abort some"
            ));
        }
        // Unguessable enough that one client cannot address another's
        // upload by counting, unique within the daemon's life.
        let n = self.serial.fetch_add(1, Ordering::Relaxed);
        let now = crate::clock::wall();
        let seed = format!("{n}:{path}:{now:?}:{:p}", &self.serial);
        let id = blake3::hash(seed.as_bytes()).to_hex()[..32].to_owned();
        t.insert(
            id.clone(),
            Upload {
                bucket: bucket.to_owned(),
                key: key.to_owned(),
                path: path.to_owned(),
                meta,
                parts: BTreeMap::new(),
                touched: crate::clock::now(),
                initiated: now,
            },
        );
        Ok(id)
    }

    /// The origin path of upload `id` of `bucket`/`key`.
    fn path_of(&self, id: &str, bucket: &str, key: &str) -> S3Result<String> {
        let mut t = self.lock();
        match t.get_mut(id) {
            Some(u) if u.bucket == bucket && u.key == key => {
                u.touched = crate::clock::now();
                Ok(u.path.clone())
            }
            _ => Err(s3_error!(NoSuchUpload, "no upload {id} of {bucket}/{key}")),
        }
    }

    /// Spools part `number` of upload `id` from `body`; returns its ETag.
    pub(super) async fn put_part<S, E>(
        &self,
        id: &str,
        bucket: &str,
        key: &str,
        number: i32,
        body: S,
    ) -> S3Result<String>
    where
        S: Stream<Item = Result<Bytes, E>>,
        E: std::fmt::Display,
    {
        if !(1..=MAX_PARTS).contains(&number) {
            return Err(s3_error!(
                InvalidArgument,
                "part number {number}: expected 1 to {MAX_PARTS}"
            ));
        }
        self.path_of(id, bucket, key)?;
        let mut share = SpoolShare {
            bytes: 0,
            total: self.spooled.clone(),
        };
        let mut file = Some(tempfile::tempfile().map_err(internal)?);
        let mut md5 = Md5::new();
        let mut size = 0u64;
        let mut pending = Vec::with_capacity(FLUSH);
        let mut body = std::pin::pin!(body);
        loop {
            let chunk = body.next().await;
            if let Some(c) = &chunk {
                let c = c
                    .as_ref()
                    .map_err(|e| s3_error!(IncompleteBody, "reading the part: {e}"))?;
                md5.update(c);
                size += c.len() as u64;
                if size > MAX_PART {
                    return Err(s3_error!(
                        EntityTooLarge,
                        "part {number} is over {MAX_PART} bytes, S3's largest part"
                    ));
                }
                if !share.grow(c.len() as u64, self.max_spooled) {
                    return Err(s3_error!(
                        SlowDown,
                        "this node spools at most {} bytes of multipart uploads at once; complete or abort some",
                        self.max_spooled
                    ));
                }
                pending.extend_from_slice(c);
            }
            if pending.len() >= FLUSH || (chunk.is_none() && !pending.is_empty()) {
                let mut f = file.take().ok_or_else(|| internal("spool lost"))?;
                let data = std::mem::take(&mut pending);
                let (f, data, r) = tokio::task::spawn_blocking(move || {
                    let r = f.write_all(&data);
                    (f, data, r)
                })
                .await
                .map_err(internal)?;
                r.map_err(internal)?;
                file = Some(f);
                pending = data;
                pending.clear();
            }
            if chunk.is_none() {
                break;
            }
        }
        let md5: [u8; 16] = md5.finalize().into();
        let part = Part {
            file: Arc::new(file.ok_or_else(|| internal("spool lost"))?),
            _share: share,
            size,
            md5,
            modified: crate::clock::wall(),
        };
        let mut t = self.lock();
        let u = t
            .get_mut(id)
            .ok_or_else(|| s3_error!(NoSuchUpload, "upload {id} was aborted or completed"))?;
        u.parts.insert(number, part);
        u.touched = crate::clock::now();
        Ok(hex(&md5))
    }

    /// The parts of upload `id`, in order.
    pub(super) fn parts(&self, id: &str, bucket: &str, key: &str) -> S3Result<Vec<PartInfo>> {
        self.path_of(id, bucket, key)?;
        let t = self.lock();
        let u = t
            .get(id)
            .ok_or_else(|| s3_error!(NoSuchUpload, "no upload {id}"))?;
        Ok(u.parts
            .iter()
            .map(|(n, p)| PartInfo {
                number: *n,
                size: p.size,
                etag: hex(&p.md5),
                modified: p.modified,
            })
            .collect())
    }

    /// Uploads in progress in `bucket`: key, id, start.
    pub(super) fn in_progress(&self, bucket: &str) -> Vec<(String, String, SystemTime)> {
        let t = self.lock();
        let mut out: Vec<_> = t
            .iter()
            .filter(|(_, u)| u.bucket == bucket)
            .map(|(id, u)| (u.key.clone(), id.clone(), u.initiated))
            .collect();
        out.sort();
        out
    }

    /// Drops upload `id` and its parts.
    pub(super) fn abort(&self, id: &str, bucket: &str, key: &str) -> S3Result<()> {
        self.path_of(id, bucket, key)?;
        self.lock().remove(id);
        Ok(())
    }

    /// Completes upload `id` with `chosen` parts (number and ETag, in
    /// ascending order, as the client lists them): their bytes, in that
    /// order, become the object.
    pub(super) async fn complete(
        &self,
        node: &Arc<NodeHandle>,
        exclusive: bool,
        (id, bucket, key): (&str, &str, &str),
        chosen: &[(i32, String)],
    ) -> S3Result<(Written, String)> {
        let path = self.path_of(id, bucket, key)?;
        if chosen.is_empty() {
            return Err(s3_error!(
                MalformedXML,
                "a completion needs at least one part"
            ));
        }
        let mut files = Vec::with_capacity(chosen.len());
        let mut digests = Md5::new();
        let meta;
        {
            let t = self.lock();
            let u = t
                .get(id)
                .ok_or_else(|| s3_error!(NoSuchUpload, "no upload {id}"))?;
            meta = u.meta.clone();
            let mut last = 0;
            for (i, (number, etag)) in chosen.iter().enumerate() {
                if *number <= last {
                    return Err(s3_error!(
                        InvalidPartOrder,
                        "parts must be listed in ascending order"
                    ));
                }
                last = *number;
                let part = u
                    .parts
                    .get(number)
                    .filter(|p| etag.trim_matches('"') == hex(&p.md5))
                    .ok_or_else(|| {
                        s3_error!(
                            InvalidPart,
                            "part {number} was not uploaded with ETag {etag}"
                        )
                    })?;
                if i + 1 < chosen.len() && part.size < MIN_PART {
                    return Err(s3_error!(
                        EntityTooSmall,
                        "part {number} has {} bytes; every part but the last needs at least {MIN_PART}",
                        part.size
                    ));
                }
                digests.update(part.md5);
                files.push(part.file.clone());
            }
        }
        let mut filling = Filling::start(node, &path, exclusive).await?;
        for file in files {
            copy_spool(&file, &mut filling).await?;
        }
        let etag = format!("{}-{}", hex(&digests.finalize()), chosen.len());
        let written = filling
            .commit(node, exclusive, meta, Some(etag.clone()))
            .await?;
        self.lock().remove(id);
        Ok((written, etag))
    }
}

/// Appends a spooled part to `filling`, [`FLUSH`] bytes at a time.
async fn copy_spool(file: &Arc<std::fs::File>, filling: &mut Filling) -> S3Result<()> {
    let mut at = 0u64;
    loop {
        let f = file.clone();
        // Positioned reads: two completions of one upload at once share
        // no file offset.
        let chunk = tokio::task::spawn_blocking(move || -> std::io::Result<Vec<u8>> {
            let mut buf = vec![0; FLUSH];
            let mut got = 0;
            while got < FLUSH {
                match f.read_at(&mut buf[got..], at + got as u64)? {
                    0 => break,
                    n => got += n,
                }
            }
            buf.truncate(got);
            Ok(buf)
        })
        .await
        .map_err(internal)?
        .map_err(internal)?;
        if chunk.is_empty() {
            return Ok(());
        }
        at += chunk.len() as u64;
        filling.push(&chunk).await?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(n: usize) -> impl Stream<Item = Result<Bytes, std::io::Error>> {
        futures::stream::iter([Ok(Bytes::from(vec![7u8; n]))])
    }

    #[tokio::test]
    async fn parts_beyond_the_spools_bound_slow_down_until_parts_are_dropped() {
        let up = Uploads::with_max_spooled(1000);
        let meta = ObjectMeta::default();
        let a = up.create("b", "k", "b/k", meta.clone()).unwrap();
        up.put_part(&a, "b", "k", 1, body(600)).await.unwrap();
        let e = up.put_part(&a, "b", "k", 2, body(600)).await.unwrap_err();
        assert_eq!(e.code(), &s3s::S3ErrorCode::SlowDown);
        // The refused part's bytes were given back: 300 still fit.
        up.put_part(&a, "b", "k", 2, body(300)).await.unwrap();
        assert_eq!(up.spooled.load(Ordering::Acquire), 900);
        // A part replaced gives back its bytes; an abort gives back all.
        up.put_part(&a, "b", "k", 2, body(50)).await.unwrap();
        assert_eq!(up.spooled.load(Ordering::Acquire), 650);
        up.abort(&a, "b", "k").unwrap();
        assert_eq!(up.spooled.load(Ordering::Acquire), 0);
        let b = up.create("b", "k2", "b/k2", meta).unwrap();
        up.put_part(&b, "b", "k2", 1, body(1000)).await.unwrap();
    }
}
