//! What S3 keeps with an object beside its bytes: the MD5 a put answered
//! with (its `ETag`), the content type and the user metadata
//! (`x-amz-meta-*`). Kept as the origin's note of the file
//! (`Origin::set_note`: a directory origin's extended attribute), which
//! the origin gives back only while the file is the one the put committed
//! (`origin/local/note.rs`): a file written since, by a mount or another
//! program, shows no kept attributes, so no client is told an MD5 or a
//! type of other bytes.

use crate::handle::NodeHandle;
use s3s::dto::Metadata;
use s3s::{S3Result, s3_error};
use std::collections::BTreeMap;

/// S3's limit on an object's user metadata (names and values).
pub const MAX_METADATA: usize = 2 << 10;

/// An object's S3 attributes.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) struct ObjectMeta {
    /// The `ETag` the put answered (an MD5, or a multipart `MD5-N`).
    pub etag: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
}

impl ObjectMeta {
    /// The request's attributes, refused as S3 refuses them (`MetadataTooLarge`).
    pub(super) fn from_request(
        content_type: Option<String>,
        metadata: Option<Metadata>,
    ) -> S3Result<ObjectMeta> {
        let metadata: BTreeMap<String, String> = metadata
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect();
        let size: usize = metadata.iter().map(|(k, v)| k.len() + v.len()).sum();
        if size > MAX_METADATA {
            return Err(s3_error!(
                MetadataTooLarge,
                "user metadata of {size} bytes; at most {MAX_METADATA}"
            ));
        }
        Ok(ObjectMeta {
            content_type,
            metadata,
            ..ObjectMeta::default()
        })
    }

    /// The user metadata, as `s3s` answers it.
    pub(super) fn user(&self) -> Option<Metadata> {
        (!self.metadata.is_empty()).then(|| self.metadata.clone().into_iter().collect())
    }

    /// Keeps these attributes with the file just committed at `path`
    /// (`etag` being what the put answers); whether they were kept. A
    /// failure is logged: the object is written, and it is served as a
    /// file without attributes.
    pub(super) async fn keep(mut self, node: &NodeHandle, path: &str, etag: &str) -> bool {
        self.etag = etag.to_owned();
        let Ok(note) = serde_json::to_vec(&self) else {
            return false;
        };
        match node.origin().set_note(path, note).await {
            Ok(kept) => kept,
            Err(e) => {
                tracing::warn!(error = %e, path, "an object's S3 attributes were not kept");
                false
            }
        }
    }

    /// The attributes kept with `path`, if it is still the file they
    /// were kept with.
    pub(super) async fn of(node: &NodeHandle, path: &str) -> Option<ObjectMeta> {
        let note = node.origin().note(path).await.ok()??;
        serde_json::from_slice(&note).ok()
    }
}
