//! The `s3s` service over the node: each S3 operation the endpoint
//! serves, mapped onto [`super::read`], [`super::list`],
//! [`super::write`] and [`super::multipart`]. Operations not here answer
//! `NotImplemented` (the `s3s` default).

use super::S3Options;
use super::list::{self, MAX_KEYS, Page, Query};
use super::meta::ObjectMeta;
use super::multipart::Uploads;
use super::names::{Target, bucket_path, target};
use super::read::{self, bucket_exists, no_bucket};
use super::write::{self, Filling};
use crate::handle::NodeHandle;
use crate::origin::EntryKind;
use base64::Engine;
use s3s::access::{S3Access, S3AccessContext};
use s3s::dto::*;
use s3s::service::{S3Service, S3ServiceBuilder};
use s3s::{S3, S3Request, S3Response, S3Result, s3_error};
use std::sync::Arc;

/// The endpoint's state.
struct Endpoint {
    node: Arc<NodeHandle>,
    exclusive: bool,
    uploads: Uploads,
}

/// The `s3s` service for `opts`.
pub(super) fn build(node: Arc<NodeHandle>, opts: &S3Options) -> S3Service {
    let ops = super::ops::CacheOps { node: node.clone() };
    let endpoint = Endpoint {
        node,
        exclusive: opts.exclusive,
        uploads: Uploads::default(),
    };
    let mut b = S3ServiceBuilder::new(endpoint);
    if let Some(keys) = &opts.keys {
        b.set_auth(keys.auth());
    }
    b.set_route(ops);
    b.set_access(Access {
        anonymous_read: opts.anonymous_read,
    });
    b.build()
}

/// Who may do what: a signed request anything, an unsigned one only
/// reads, and only if anonymous reads were asked for. (`s3s` has already
/// refused a request whose signature does not verify.)
struct Access {
    anonymous_read: bool,
}

#[async_trait::async_trait]
impl S3Access for Access {
    async fn check(&self, cx: &mut S3AccessContext<'_>) -> S3Result<()> {
        if cx.credentials().is_some() {
            return Ok(());
        }
        let read = matches!(
            cx.s3_op().name(),
            "GetObject"
                | "HeadObject"
                | "ListObjects"
                | "ListObjectsV2"
                | "HeadBucket"
                | "ListBuckets"
                | "GetBucketLocation"
        );
        if self.anonymous_read && read {
            return Ok(());
        }
        Err(s3_error!(
            AccessDenied,
            "this request needs a signature (the node's --s3-keys)"
        ))
    }
}

/// A continuation token: the last key or prefix of the previous page,
/// opaque to clients as S3's are.
fn token(last: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(last)
}

fn untoken(t: &str) -> S3Result<String> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(t)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| {
            s3_error!(
                InvalidArgument,
                "the continuation token provided is incorrect"
            )
        })
}

/// `EncodingType=url` (what boto3 asks for): keys as URL-encoded text,
/// every byte but the unreserved ones and `/`.
fn encoder(kind: &Option<EncodingType>) -> impl Fn(String) -> String + use<> {
    const KEEP: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~')
        .remove(b'/');
    let url = kind
        .as_ref()
        .is_some_and(|k| k.as_str() == EncodingType::URL);
    move |s: String| {
        if url {
            percent_encoding::utf8_percent_encode(&s, KEEP).to_string()
        } else {
            s
        }
    }
}

fn max_keys(asked: Option<i32>) -> S3Result<usize> {
    match asked {
        None => Ok(MAX_KEYS),
        Some(n) if n < 0 => Err(s3_error!(
            InvalidArgument,
            "max-keys {n}: expected 0 to {MAX_KEYS}"
        )),
        Some(n) => Ok((n as usize).min(MAX_KEYS)),
    }
}

impl Endpoint {
    /// Bucket `bucket`, or `NoSuchBucket`.
    async fn bucket(&self, bucket: &str) -> S3Result<()> {
        bucket_path(bucket)?;
        match bucket_exists(&self.node, bucket).await {
            true => Ok(()),
            false => Err(no_bucket(bucket)),
        }
    }

    async fn page(
        &self,
        bucket: &str,
        prefix: &str,
        delimiter: Option<&str>,
        after: Option<&str>,
        max: usize,
    ) -> S3Result<Page> {
        self.bucket(bucket).await?;
        let q = Query {
            bucket,
            prefix,
            delimiter,
            after,
            max,
            exclusive: self.exclusive,
        };
        list::page(&self.node, &q).await
    }
}

fn contents(page: &mut Page, enc: &impl Fn(String) -> String) -> (Vec<Object>, Vec<CommonPrefix>) {
    let objects = std::mem::take(&mut page.objects)
        .into_iter()
        .map(|(key, v, meta)| Object {
            e_tag: Some(read::etag(&v, meta.as_ref())),
            last_modified: v.modified.map(Timestamp::from),
            size: Some(v.size as i64),
            storage_class: Some(ObjectStorageClass::from_static(
                ObjectStorageClass::STANDARD,
            )),
            key: Some(enc(key)),
            ..Default::default()
        })
        .collect();
    let prefixes = std::mem::take(&mut page.prefixes)
        .into_iter()
        .map(|p| CommonPrefix {
            prefix: Some(enc(p)),
        })
        .collect();
    (objects, prefixes)
}

#[async_trait::async_trait]
impl S3 for Endpoint {
    async fn list_buckets(
        &self,
        _req: S3Request<ListBucketsInput>,
    ) -> S3Result<S3Response<ListBucketsOutput>> {
        let origin = self.node.origin();
        let names = origin.list("").await.map_err(super::errors::from_origin)?;
        let mut buckets = Vec::new();
        for e in names
            .into_iter()
            .filter(|e| e.kind == EntryKind::Dir && is_bucket_name(&e.name))
        {
            let created = origin.entry(&e.name).await.ok().and_then(|x| x.modified);
            buckets.push(Bucket {
                name: Some(e.name),
                creation_date: created.map(Timestamp::from),
                bucket_region: None,
            });
        }
        Ok(S3Response::new(ListBucketsOutput {
            buckets: Some(buckets),
            owner: Some(Owner {
                display_name: Some("coopcache".into()),
                id: Some("coopcache".into()),
            }),
            ..Default::default()
        }))
    }

    async fn head_bucket(
        &self,
        req: S3Request<HeadBucketInput>,
    ) -> S3Result<S3Response<HeadBucketOutput>> {
        self.bucket(&req.input.bucket).await?;
        Ok(S3Response::new(HeadBucketOutput::default()))
    }

    async fn get_bucket_location(
        &self,
        req: S3Request<GetBucketLocationInput>,
    ) -> S3Result<S3Response<GetBucketLocationOutput>> {
        self.bucket(&req.input.bucket).await?;
        Ok(S3Response::new(GetBucketLocationOutput::default()))
    }

    async fn create_bucket(
        &self,
        req: S3Request<CreateBucketInput>,
    ) -> S3Result<S3Response<CreateBucketOutput>> {
        let bucket = &req.input.bucket;
        write::create_bucket(&self.node, bucket, self.exclusive).await?;
        Ok(S3Response::new(CreateBucketOutput {
            location: Some(format!("/{bucket}")),
        }))
    }

    async fn delete_bucket(
        &self,
        req: S3Request<DeleteBucketInput>,
    ) -> S3Result<S3Response<DeleteBucketOutput>> {
        write::delete_bucket(&self.node, &req.input.bucket, self.exclusive).await?;
        Ok(S3Response::new(DeleteBucketOutput::default()))
    }

    async fn list_objects_v2(
        &self,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        let i = req.input;
        let prefix = i.prefix.clone().unwrap_or_default();
        let max = max_keys(i.max_keys)?;
        let after = match &i.continuation_token {
            Some(t) => Some(untoken(t)?),
            None => i.start_after.clone(),
        };
        let mut page = self
            .page(
                &i.bucket,
                &prefix,
                i.delimiter.as_deref(),
                after.as_deref(),
                max,
            )
            .await?;
        let enc = encoder(&i.encoding_type);
        let (objects, prefixes) = contents(&mut page, &enc);
        let count = objects.len() + prefixes.len();
        Ok(S3Response::new(ListObjectsV2Output {
            name: Some(i.bucket),
            prefix: Some(enc(prefix)),
            delimiter: i.delimiter.map(&enc),
            start_after: i.start_after.map(&enc),
            max_keys: Some(max as i32),
            key_count: Some(count as i32),
            continuation_token: i.continuation_token,
            is_truncated: Some(page.truncated),
            next_continuation_token: page.last.as_deref().filter(|_| page.truncated).map(token),
            contents: Some(objects),
            common_prefixes: Some(prefixes),
            encoding_type: i.encoding_type,
            ..Default::default()
        }))
    }

    async fn list_objects(
        &self,
        req: S3Request<ListObjectsInput>,
    ) -> S3Result<S3Response<ListObjectsOutput>> {
        let i = req.input;
        let prefix = i.prefix.clone().unwrap_or_default();
        let max = max_keys(i.max_keys)?;
        let mut page = self
            .page(
                &i.bucket,
                &prefix,
                i.delimiter.as_deref(),
                i.marker.as_deref(),
                max,
            )
            .await?;
        let enc = encoder(&i.encoding_type);
        let (objects, prefixes) = contents(&mut page, &enc);
        Ok(S3Response::new(ListObjectsOutput {
            name: Some(i.bucket),
            prefix: Some(enc(prefix)),
            delimiter: i.delimiter.map(&enc),
            marker: Some(i.marker.map(&enc).unwrap_or_default()),
            max_keys: Some(max as i32),
            is_truncated: Some(page.truncated),
            next_marker: page.last.filter(|_| page.truncated).map(&enc),
            contents: Some(objects),
            common_prefixes: Some(prefixes),
            encoding_type: i.encoding_type,
            ..Default::default()
        }))
    }

    async fn get_object(
        &self,
        req: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        let found = read::find(&self.node, &req.input.bucket, &req.input.key).await?;
        let extent = read::extent(&req.headers, &found)?;
        Ok(S3Response::new(GetObjectOutput {
            body: Some(read::body(&self.node, &found, &extent)),
            content_length: Some((extent.range.end - extent.range.start) as i64),
            content_range: extent.content_range,
            accept_ranges: Some("bytes".into()),
            content_type: Some(content_type(&found)),
            metadata: found.meta.as_ref().and_then(ObjectMeta::user),
            e_tag: Some(found.etag()),
            last_modified: found.last_modified(),
            ..Default::default()
        }))
    }

    async fn head_object(
        &self,
        req: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        let found = read::find(&self.node, &req.input.bucket, &req.input.key).await?;
        let extent = read::extent(&req.headers, &found)?;
        let mut resp = S3Response::new(HeadObjectOutput {
            content_length: Some((extent.range.end - extent.range.start) as i64),
            content_range: extent.content_range.clone(),
            accept_ranges: Some("bytes".into()),
            content_type: Some(content_type(&found)),
            metadata: found.meta.as_ref().and_then(ObjectMeta::user),
            e_tag: Some(found.etag()),
            last_modified: found.last_modified(),
            ..Default::default()
        });
        if extent.content_range.is_some() {
            resp.status = Some(axum::http::StatusCode::PARTIAL_CONTENT);
        }
        Ok(resp)
    }

    async fn put_object(
        &self,
        req: S3Request<PutObjectInput>,
    ) -> S3Result<S3Response<PutObjectOutput>> {
        let i = req.input;
        let t = target(&i.bucket, &i.key)?;
        let path = match t {
            Target::Dir(p) => {
                write::put_dir(&self.node, &i.bucket, &p, self.exclusive).await?;
                return Ok(S3Response::new(PutObjectOutput {
                    e_tag: Some(ETag::Strong(write::hex(&md5_of(b"")))),
                    ..Default::default()
                }));
            }
            Target::File(p) => p,
        };
        let meta = ObjectMeta::from_request(i.content_type, i.metadata)?;
        let mut filling = Filling::start(&self.node, &path, self.exclusive).await?;
        if let Some(body) = i.body {
            filling.push_stream(body).await?;
        }
        check_md5(i.content_md5.as_deref(), &filling.md5_hex())?;
        let written = filling
            .commit(&self.node, self.exclusive, meta, None)
            .await?;
        Ok(S3Response::new(PutObjectOutput {
            e_tag: Some(ETag::Strong(written.md5)),
            size: Some(written.version.size as i64),
            ..Default::default()
        }))
    }

    async fn delete_object(
        &self,
        req: S3Request<DeleteObjectInput>,
    ) -> S3Result<S3Response<DeleteObjectOutput>> {
        write::delete(
            &self.node,
            &req.input.bucket,
            &req.input.key,
            self.exclusive,
        )
        .await?;
        Ok(S3Response::new(DeleteObjectOutput::default()))
    }

    async fn delete_objects(
        &self,
        req: S3Request<DeleteObjectsInput>,
    ) -> S3Result<S3Response<DeleteObjectsOutput>> {
        let i = req.input;
        if i.delete.objects.len() > MAX_KEYS {
            return Err(s3_error!(
                MalformedXML,
                "at most {MAX_KEYS} keys per DeleteObjects"
            ));
        }
        let quiet = i.delete.quiet.unwrap_or(false);
        let (mut deleted, mut errors) = (Vec::new(), Vec::new());
        for o in i.delete.objects {
            match write::delete(&self.node, &i.bucket, &o.key, self.exclusive).await {
                Ok(()) if quiet => {}
                Ok(()) => deleted.push(DeletedObject {
                    key: Some(o.key),
                    ..Default::default()
                }),
                Err(e) => errors.push(Error {
                    code: Some(e.code().as_str().to_owned()),
                    message: e.message().map(str::to_owned),
                    key: Some(o.key),
                    version_id: None,
                }),
            }
        }
        Ok(S3Response::new(DeleteObjectsOutput {
            deleted: Some(deleted),
            errors: Some(errors),
            ..Default::default()
        }))
    }

    async fn copy_object(
        &self,
        req: S3Request<CopyObjectInput>,
    ) -> S3Result<S3Response<CopyObjectOutput>> {
        let i = req.input;
        let CopySource::Bucket { bucket, key, .. } = &i.copy_source else {
            return Err(s3_error!(
                NotImplemented,
                "copies from access points are not served"
            ));
        };
        let source = read::find(&self.node, bucket, key).await?;
        let Target::File(path) = target(&i.bucket, &i.key)? else {
            return Err(s3_error!(
                InvalidArgument,
                "cannot copy onto a directory key"
            ));
        };
        let replace = i
            .metadata_directive
            .as_ref()
            .is_some_and(|d| d.as_str() == MetadataDirective::REPLACE);
        let meta = match (replace, &source.meta) {
            (true, _) => ObjectMeta::from_request(i.content_type, i.metadata)?,
            (false, Some(m)) => ObjectMeta {
                content_type: m.content_type.clone(),
                metadata: m.metadata.clone(),
                ..ObjectMeta::default()
            },
            (false, None) => ObjectMeta::default(),
        };
        let mut filling = Filling::start(&self.node, &path, self.exclusive).await?;
        let whole = read::Extent {
            range: 0..source.version.size,
            content_range: None,
        };
        filling
            .push_stream(read::body(&self.node, &source, &whole))
            .await?;
        let written = filling
            .commit(&self.node, self.exclusive, meta, None)
            .await?;
        Ok(S3Response::new(CopyObjectOutput {
            copy_object_result: Some(CopyObjectResult {
                e_tag: Some(ETag::Strong(written.md5)),
                last_modified: written.version.modified.map(Timestamp::from),
                ..Default::default()
            }),
            ..Default::default()
        }))
    }

    async fn create_multipart_upload(
        &self,
        req: S3Request<CreateMultipartUploadInput>,
    ) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
        let i = req.input;
        let Target::File(path) = target(&i.bucket, &i.key)? else {
            return Err(s3_error!(
                InvalidArgument,
                "a directory key takes no upload"
            ));
        };
        if !bucket_exists(&self.node, &i.bucket).await {
            return Err(no_bucket(&i.bucket));
        }
        let meta = ObjectMeta::from_request(i.content_type, i.metadata)?;
        let id = self.uploads.create(&i.bucket, &i.key, &path, meta)?;
        Ok(S3Response::new(CreateMultipartUploadOutput {
            bucket: Some(i.bucket),
            key: Some(i.key),
            upload_id: Some(id),
            ..Default::default()
        }))
    }

    async fn upload_part(
        &self,
        req: S3Request<UploadPartInput>,
    ) -> S3Result<S3Response<UploadPartOutput>> {
        let i = req.input;
        let body = i.body.unwrap_or_else(|| {
            StreamingBlob::wrap(futures::stream::empty::<Result<bytes::Bytes, std::io::Error>>())
        });
        let etag: String = self
            .uploads
            .put_part(&i.upload_id, &i.bucket, &i.key, i.part_number, body)
            .await?;
        check_md5(i.content_md5.as_deref(), &etag)?;
        Ok(S3Response::new(UploadPartOutput {
            e_tag: Some(ETag::Strong(etag)),
            ..Default::default()
        }))
    }

    async fn complete_multipart_upload(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        let i = req.input;
        let parts = i.multipart_upload.and_then(|m| m.parts).unwrap_or_default();
        let mut chosen = Vec::with_capacity(parts.len());
        for p in parts {
            let (Some(n), Some(tag)) = (p.part_number, p.e_tag) else {
                return Err(s3_error!(
                    MalformedXML,
                    "each part needs its PartNumber and ETag"
                ));
            };
            chosen.push((n, tag.value().to_owned()));
        }
        let (_, etag) = self
            .uploads
            .complete(
                &self.node,
                self.exclusive,
                (&i.upload_id, &i.bucket, &i.key),
                &chosen,
            )
            .await?;
        Ok(S3Response::new(CompleteMultipartUploadOutput {
            location: Some(format!("/{}/{}", i.bucket, i.key)),
            bucket: Some(i.bucket),
            key: Some(i.key),
            e_tag: Some(ETag::Strong(etag)),
            ..Default::default()
        }))
    }

    async fn abort_multipart_upload(
        &self,
        req: S3Request<AbortMultipartUploadInput>,
    ) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
        let i = req.input;
        self.uploads.abort(&i.upload_id, &i.bucket, &i.key)?;
        Ok(S3Response::new(AbortMultipartUploadOutput::default()))
    }

    async fn list_parts(
        &self,
        req: S3Request<ListPartsInput>,
    ) -> S3Result<S3Response<ListPartsOutput>> {
        let i = req.input;
        let after = i.part_number_marker.unwrap_or(0);
        let max = i.max_parts.unwrap_or(1000).clamp(0, 1000) as usize;
        let all = self.uploads.parts(&i.upload_id, &i.bucket, &i.key)?;
        let rest: Vec<_> = all.into_iter().filter(|p| p.number > after).collect();
        let truncated = rest.len() > max;
        let parts: Vec<Part> = rest
            .into_iter()
            .take(max)
            .map(|p| Part {
                e_tag: Some(ETag::Strong(p.etag)),
                last_modified: Some(Timestamp::from(p.modified)),
                part_number: Some(p.number),
                size: Some(p.size as i64),
                ..Default::default()
            })
            .collect();
        let next = parts
            .last()
            .and_then(|p| p.part_number)
            .filter(|_| truncated);
        Ok(S3Response::new(ListPartsOutput {
            bucket: Some(i.bucket),
            key: Some(i.key),
            upload_id: Some(i.upload_id),
            part_number_marker: Some(after),
            next_part_number_marker: next,
            max_parts: Some(max as i32),
            is_truncated: Some(truncated),
            parts: Some(parts),
            ..Default::default()
        }))
    }

    async fn list_multipart_uploads(
        &self,
        req: S3Request<ListMultipartUploadsInput>,
    ) -> S3Result<S3Response<ListMultipartUploadsOutput>> {
        let i = req.input;
        let prefix = i.prefix.clone().unwrap_or_default();
        let uploads = self
            .uploads
            .in_progress(&i.bucket)
            .into_iter()
            .filter(|(key, _, _)| key.starts_with(&prefix))
            .map(|(key, id, initiated)| MultipartUpload {
                key: Some(key),
                upload_id: Some(id),
                initiated: Some(Timestamp::from(initiated)),
                ..Default::default()
            })
            .collect();
        Ok(S3Response::new(ListMultipartUploadsOutput {
            bucket: Some(i.bucket),
            prefix: i.prefix,
            is_truncated: Some(false),
            uploads: Some(uploads),
            ..Default::default()
        }))
    }
}

/// The content type a put kept, else S3's default for bytes.
fn content_type(found: &read::Found) -> String {
    found
        .meta
        .as_ref()
        .and_then(|m| m.content_type.clone())
        .unwrap_or_else(|| "binary/octet-stream".into())
}

/// A `Content-MD5` header (base64 of the digest) against the body's.
fn check_md5(header: Option<&str>, got_hex: &str) -> S3Result<()> {
    let Some(h) = header else { return Ok(()) };
    let want = base64::engine::general_purpose::STANDARD
        .decode(h.trim())
        .map_err(|_| s3_error!(InvalidDigest, "Content-MD5 is not base64"))?;
    if write::hex(&want) != got_hex {
        return Err(s3_error!(
            BadDigest,
            "the body's MD5 is not the Content-MD5 sent"
        ));
    }
    Ok(())
}

fn md5_of(data: &[u8]) -> [u8; 16] {
    use md5::{Digest, Md5};
    Md5::digest(data).into()
}

/// S3's bucket naming rules (3-63 of lowercase letters, digits, `-` and
/// `.`, starting and ending with a letter or digit): a top-level directory
/// that breaks them is no bucket clients could address.
fn is_bucket_name(n: &str) -> bool {
    let edge = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    (3..=63).contains(&n.len())
        && n.chars().all(|c| edge(c) || c == '-' || c == '.')
        && n.starts_with(edge)
        && n.ends_with(edge)
        && !n.contains("..")
}
