//! What a writer's node does with the version it just committed: takes
//! it into its memory (C2Cfs: the writer's copy is the valid one, and the
//! next reader anywhere is forwarded to it rather than to the origin).
//! The mount's close and the S3 endpoint's puts both come here.

use crate::handle::NodeHandle;
use crate::origin::FileVersion;
use bytes::Bytes;
use std::sync::Arc;

/// A written file is taken into the writer's memory if it is at most
/// 1/this of the node's memory: a larger one would flush the cache.
pub const TAKE_IN_SHARE: u64 = 4;

/// A written file up to this size is in the writer's memory when
/// [`NodeHandle::keep_written`] returns; a larger one is taken in behind
/// it (a close or a put would otherwise wait seconds for it).
pub const TAKE_IN_BEFORE_CLOSE: u64 = 64 << 20;

impl NodeHandle {
    /// Takes `version` of `path`, just committed by this node's writer,
    /// into memory: from `bytes` if the commit read them back, else
    /// through the protocol (on S3 from the writer's spool copy, not the
    /// store). A failure costs the next readers an origin read, nothing
    /// else, and is only logged.
    pub async fn keep_written(
        self: &Arc<Self>,
        path: Arc<str>,
        version: Arc<FileVersion>,
        bytes: Option<Bytes>,
    ) {
        if version.size > self.cache_bytes() / TAKE_IN_SHARE {
            self.origin().forget_copy(&path, &version);
            return;
        }
        let node = self.clone();
        let behind = version.size > TAKE_IN_BEFORE_CLOSE;
        let work = async move {
            let taken = match bytes {
                Some(b) => node.take_in_bytes(path.clone(), version.clone(), b).await,
                None => node.take_in(path.clone(), version.clone()).await,
            };
            if let Err(e) = taken {
                tracing::debug!(error = %e, "the written file was not taken into memory");
            }
            // Read from the writer's copy of an S3 put, if the origin kept
            // one (`crate::origin`); now in memory, it can go.
            node.origin().forget_copy(&path, &version);
        };
        if behind {
            tokio::spawn(work);
        } else {
            work.await;
        }
    }
}
