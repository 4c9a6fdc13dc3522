//! `GetObject` and `HeadObject`: the object's version from the node (its
//! version cache, as the gateway's reads), preconditions and `Range` as
//! the HTTP gateway evaluates them, bytes streamed through the
//! cooperative cache.

use super::errors::from_node;
use super::meta::ObjectMeta;
use super::names::{Target, bucket_path, target};
use crate::gateway::{Decision, RangeSpec, Validators, evaluate, parse_range};
use crate::handle::{NodeError, NodeHandle};
use crate::origin::{EntryKind, FileVersion};
use axum::http::HeaderMap;
use futures::StreamExt;
use s3s::dto::{ETag, StreamingBlob, Timestamp};
use s3s::{S3Error, S3ErrorCode, S3Result, s3_error};
use std::ops::Range;
use std::sync::Arc;

/// An object found: its origin path, version, and the S3 attributes a
/// put through the endpoint kept with that version.
pub(super) struct Found {
    pub path: Arc<str>,
    pub version: Arc<FileVersion>,
    pub meta: Option<ObjectMeta>,
}

impl Found {
    /// The `ETag`: what the put answered (an MD5) if it kept it with this
    /// version, else the origin's version tag.
    pub(super) fn etag(&self) -> ETag {
        etag(&self.version, self.meta.as_ref())
    }

    pub(super) fn last_modified(&self) -> Option<Timestamp> {
        self.version.modified.map(Timestamp::from)
    }
}

/// The `ETag` of `version` with the attributes `meta` kept with it.
pub(super) fn etag(version: &FileVersion, meta: Option<&ObjectMeta>) -> ETag {
    if let Some(m) = meta {
        return ETag::Strong(m.etag.clone());
    }
    let v = Validators::new(&version.version, version.modified);
    if v.weak {
        ETag::Weak(v.tag)
    } else {
        ETag::Strong(v.tag)
    }
}

/// Bucket `bucket`'s object `key`, or S3's answer for its absence:
/// `NoSuchBucket` when the bucket is missing too.
pub(super) async fn find(node: &NodeHandle, bucket: &str, key: &str) -> S3Result<Found> {
    let t = target(bucket, key)?;
    let found = match &t {
        Target::File(p) => match node.stat(p).await {
            Ok(version) => Ok(Found {
                meta: ObjectMeta::of(node, p).await,
                path: Arc::from(p.as_str()),
                version,
            }),
            Err(e) => Err(e),
        },
        // A key ending in `/` is a directory's (as MinIO shows them): an
        // empty object, its version the directory's modification time.
        Target::Dir(p) => match node.origin().entry(p).await {
            Ok(e) if e.kind == EntryKind::Dir => Ok(Found {
                path: Arc::from(p.as_str()),
                version: Arc::new(FileVersion {
                    size: 0,
                    version: format!("dir-{}", stamp(e.modified)),
                    modified: e.modified,
                    perm: e.perm,
                    owner: None,
                }),
                meta: None,
            }),
            Ok(_) => Err(NodeError::Origin(crate::origin::OriginError::NotFound {
                path: key.into(),
            })),
            Err(e) => Err(NodeError::Origin(e)),
        },
    };
    match found {
        Ok(f) => Ok(f),
        Err(NodeError::Origin(o)) if o.is_not_found() => Err(absent(node, bucket, key).await),
        Err(e) => Err(from_node(e)),
    }
}

/// The answer for a key that is not there.
pub(super) async fn absent(node: &NodeHandle, bucket: &str, key: &str) -> S3Error {
    if bucket_exists(node, bucket).await {
        s3_error!(NoSuchKey, "no key {key:?} in bucket {bucket}")
    } else {
        no_bucket(bucket)
    }
}

pub(super) fn no_bucket(bucket: &str) -> S3Error {
    s3_error!(NoSuchBucket, "no bucket {bucket}")
}

/// Whether bucket `bucket` (a top-level directory of the origin) exists.
pub(super) async fn bucket_exists(node: &NodeHandle, bucket: &str) -> bool {
    let Ok(path) = bucket_path(bucket) else {
        return false;
    };
    matches!(node.origin().entry(path).await, Ok(e) if e.kind == EntryKind::Dir)
}

fn stamp(t: Option<std::time::SystemTime>) -> u128 {
    t.and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos())
}

/// What a read sends: the whole object or one range of it.
pub(super) struct Extent {
    pub range: Range<u64>,
    /// `Content-Range` when a range was asked.
    pub content_range: Option<String>,
}

/// Evaluates the preconditions (`If-Match`, `If-None-Match`,
/// `If-Modified-Since`, `If-Unmodified-Since`, `If-Range`) and `Range` of
/// a read of `found`: S3 answers 412 `PreconditionFailed`, 304 and 416
/// `InvalidRange` as HTTP does (RFC 9110).
pub(super) fn extent(headers: &HeaderMap, found: &Found) -> S3Result<Extent> {
    let size = found.version.size;
    let validators = match &found.meta {
        Some(m) => Validators::new(&m.etag, found.version.modified),
        None => Validators::new(&found.version.version, found.version.modified),
    };
    let honour_range = match evaluate(headers, &validators) {
        Decision::Serve { honour_range } => honour_range,
        Decision::NotModified => {
            let mut e = S3Error::new(S3ErrorCode::NotModified);
            e.set_status_code(axum::http::StatusCode::NOT_MODIFIED);
            return Err(e);
        }
        Decision::Failed => {
            return Err(s3_error!(
                PreconditionFailed,
                "the object is at version {}, which the request's preconditions refuse",
                validators.etag()
            ));
        }
    };
    let range = headers
        .get(axum::http::header::RANGE)
        .filter(|_| honour_range)
        .and_then(|v| v.to_str().ok())
        .map_or(RangeSpec::Whole, |v| parse_range(v, size));
    match range {
        RangeSpec::Whole => Ok(Extent {
            range: 0..size,
            content_range: None,
        }),
        RangeSpec::Part(s, e) => Ok(Extent {
            range: s..e,
            content_range: Some(format!("bytes {s}-{}/{size}", e - 1)),
        }),
        RangeSpec::Unsatisfiable => Err(s3_error!(
            InvalidRange,
            "the range is outside the object ({size} bytes)"
        )),
    }
}

/// The bytes of `extent` of `found`, streamed through the node.
pub(super) fn body(node: &Arc<NodeHandle>, found: &Found, extent: &Extent) -> StreamingBlob {
    let stream = node
        .stream(
            found.path.clone(),
            found.version.clone(),
            extent.range.clone(),
        )
        .map(|r| r.map_err(std::io::Error::other));
    // `s3s` wants a body it may share between threads; the stream is
    // only ever polled by one, which `SyncStream` vouches for.
    StreamingBlob::wrap(sync_wrapper::SyncStream::new(stream))
}
